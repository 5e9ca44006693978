"""Every loader, fed mutated files, accepts them or raises a clear error (issue 10).

The fuzzer (``tests/fuzz``) runs in a subprocess so that its address-space cap and its
per-input timer do not touch the test process. CI runs ``HYBRIDNET_FUZZ_N`` inputs per loader
(default 500; the three slow loaders, which bind and run a graph, get a share of it
(``fuzz.targets.SHARE``): eleven loaders, 4,525 inputs, about 22 s of CPU; ``HYBRIDNET_FUZZ_SEED``
picks other inputs); ``python -m tests.fuzz --long`` runs 20,000 per loader. Allowed errors: ``MXNetError`` or
``ValueError`` with a message (``tests.fuzz.runner.is_clear``); anything else, an input over the
time limit, or an allocation failing under the memory cap fails the test with the command that
reproduces it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from hybridnet.base import MXNetError

ROOT = Path(__file__).resolve().parents[1]
N_PER_LOADER = int(os.environ.get("HYBRIDNET_FUZZ_N", "500"))
SEED = int(os.environ.get("HYBRIDNET_FUZZ_SEED", "0"))
LOADERS = ["nd.load", "sym.load", "SymbolBlock.imports", "load_parameters", "Trainer.load_states",
           "recordio", "Module.load", "Module.load_optimizer_states", "rnn.load_rnn_checkpoint",
           "image.imdecode", "NDArray.__setstate__"]
if importlib.util.find_spec("PIL") is None:  # the image decoders need Pillow (optional)
    LOADERS.remove("image.imdecode")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def test_every_loader_gives_clear_errors_on_mutated_files(tmp_path):
    out = tmp_path / "report.json"
    # run as ``fuzz`` from tests/ (a regular package there), immune to other ``tests`` packages
    proc = subprocess.run([sys.executable, "-m", "fuzz", "--n", str(N_PER_LOADER), "--seed", str(SEED),
                           "--json", str(out)], cwd=ROOT / "tests", env=_env(), capture_output=True,
                          text=True, timeout=max(600, N_PER_LOADER * 2))
    assert out.exists(), f"the fuzzer died without a report (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    report = json.loads(out.read_text())
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0, "\n".join(lines[-40:])
    assert sorted(report["loaders"]) == sorted(LOADERS)
    from fuzz.targets import inputs_for
    for name, st in report["loaders"].items():
        assert st["inputs"] == inputs_for(name, N_PER_LOADER)
        assert st["unclear"] == st["hangs"] == st["memory"] == 0, (name, st["failures"])
        # the mutations must reach both sides: some inputs load, some are refused
        assert st["accepted"] > 0 and st["clear"] > 0, (name, st)


# -- the harness itself can fail ---------------------------------------------------------------
def test_runner_reports_unclear_errors_hangs_and_memory():
    from fuzz import runner  # tests/ is on sys.path, as for fixture_paths

    def unclear(rng, seeds, d):
        {}["missing"]

    def clear(rng, seeds, d):
        raise MXNetError("bad file x.params: record 0: truncated")

    def hangs(rng, seeds, d):
        while True:
            pass

    def blows_up(rng, seeds, d):
        raise MemoryError()

    def accepts(rng, seeds, d):
        assert isinstance(rng, random.Random) and os.path.isdir(d)

    targets = {"unclear": unclear, "clear": clear, "hangs": hangs, "memory": blows_up, "accepts": accepts}
    report = runner.run(list(targets), 2, time_limit=0.2, memory_bytes=None, targets=targets)
    got = {k: {c: v[c] for c in ("accepted", "clear", "unclear", "hangs", "memory")}
           for k, v in report["loaders"].items()}
    zero = dict.fromkeys(("accepted", "clear", "unclear", "hangs", "memory"), 0)
    assert got == {"unclear": {**zero, "unclear": 2}, "clear": {**zero, "clear": 2},
                   "hangs": {**zero, "hangs": 2}, "memory": {**zero, "memory": 2},
                   "accepts": {**zero, "accepted": 2}}
    lines = runner.failures(report)
    assert len(lines) == 3 and any("KeyError" in line and "--only 0" in line for line in lines)


@pytest.mark.parametrize("exc, clear", [
    (MXNetError("x.params: record 3: truncated"), True), (ValueError("bad shape (2, 3)"), True),
    (MXNetError(""), False), (ValueError(""), False), (KeyError("k"), False), (TypeError("t"), False),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), False),
    (json.JSONDecodeError("Expecting value", "x", 0), False), (RuntimeError("torch"), False),
    (OSError(22, "Invalid argument"), False)])
def test_clear_error_classes(exc, clear):
    from fuzz.runner import is_clear
    assert is_clear(exc) is clear


def test_mutations_are_reproducible():
    from fuzz.mutate import mutate_bytes, mutate_json_bytes
    data = bytes(range(200))
    doc = b'{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[0, 0, 0]]}'
    a = [mutate_bytes(random.Random(7), data) for _ in range(3)]
    assert a[0] == a[1] == a[2] and a[0] != data
    b = [mutate_json_bytes(random.Random(9), doc) for _ in range(2)]
    assert b[0] == b[1] and b[0] != doc
