"""mypy over the typed core (hybridnet/ir, compiler, symbol, ops) reports no errors.

ARCHITECTURE.md "Type hints, checked": the registry, the IR, the Symbol front end and the compiler are
type-checked in CI. The options live in pyproject.toml's [tool.mypy]; this test runs mypy
in-process with that configuration (a fresh run takes ~10 s, later runs use .mypy_cache).
"""
from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["hybridnet/ir", "hybridnet/compiler", "hybridnet/symbol", "hybridnet/ops"]


def _mypy_config() -> dict:
    if sys.version_info < (3, 11):
        pytest.skip("tomllib needs Python 3.11")
    import tomllib
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f).get("tool", {}).get("mypy", {})


def test_mypy_config_covers_typed_packages() -> None:
    cfg = _mypy_config()
    assert sorted(cfg.get("files", [])) == sorted(PACKAGES), \
        f"pyproject.toml [tool.mypy] files = {cfg.get('files')}, expected {PACKAGES}"
    assert cfg.get("ignore_missing_imports") is True
    assert cfg.get("follow_imports") == "silent"


def test_mypy_reports_no_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # mypy resolves the config's paths against the working directory
    # mypy tunes the garbage collector and the recursion limit for itself: restore both so the
    # rest of this test worker runs as before
    threshold, recursion = gc.get_threshold(), sys.getrecursionlimit()
    try:
        stdout, stderr, status = mypy_api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                               "--no-error-summary", *PACKAGES])
    finally:
        gc.set_threshold(*threshold)
        sys.setrecursionlimit(recursion)
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 0 and not errors, (
        f"mypy found {len(errors)} error(s) in {', '.join(PACKAGES)} (exit status {status}); fix the "
        f"annotations (Optional narrowing, casts, or `# type: ignore[code]` for dynamic code):\n"
        + "\n".join(errors or stdout.splitlines()) + (f"\nstderr:\n{stderr}" if stderr else ""))
