"""Run the loaders over mutated inputs and sort every outcome.

An input is *accepted* (the loader and the first use succeed), a *clear error* (see
:func:`is_clear`), or a failure: an *unclear* exception, a *hang* (over the per-input time
limit), or a *memory* blow-up (an allocation failing under the address-space cap that
:func:`limit_memory` sets, or resident memory growing past the cap). Inputs are reproducible:
input ``i`` of loader ``L`` under seed ``s`` always gets the same random stream.
"""
from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import tempfile
import time
import traceback
import warnings
import zlib
from typing import Any, Callable, Dict, List, Optional, Union

from hybridnet.base import MXNetError

from .targets import TARGETS, Seeds

__all__ = ["is_clear", "run", "failures", "limit_memory", "Hang"]

Target = Callable[[random.Random, Seeds, str], None]


class Hang(BaseException):
    """Raised by the timer when one input runs past its time limit (BaseException, so that
    loaders' ``except Exception`` cannot swallow it)."""


def is_clear(e: BaseException) -> bool:
    """The errors a loader may raise for a bad file: ``MXNetError`` with a message, or a plain
    ``ValueError`` with a message. Parser errors that only look like ValueErrors
    (``UnicodeError``, ``json.JSONDecodeError``) name no file or field and do not count."""
    if isinstance(e, MXNetError):
        return bool(str(e).strip())
    if isinstance(e, ValueError) and not isinstance(e, (UnicodeError, json.JSONDecodeError)):
        return bool(str(e).strip())
    return False


def _is_memory(e: BaseException) -> bool:
    text = str(e)
    return isinstance(e, MemoryError) or "can't allocate memory" in text or \
        "DefaultCPUAllocator" in text or "std::bad_alloc" in text


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def limit_memory(extra_bytes: int) -> Optional[int]:
    """Cap this process's address space at its current size plus ``extra_bytes`` (Linux);
    returns the cap, or None when it cannot be set."""
    vm = _vm_bytes()
    if not vm:
        return None
    cap = vm + extra_bytes
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return cap


def _rng(seed: int, loader: str, index: int) -> random.Random:
    return random.Random(zlib.crc32(f"{seed}/{loader}/{index}".encode()))


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang()


def _where(tb: BaseException) -> str:
    frames = traceback.extract_tb(tb.__traceback__)
    for fr in reversed(frames):
        if "/hybridnet/" in fr.filename.replace(os.sep, "/"):
            return f"{os.path.basename(fr.filename)}:{fr.lineno}"
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else "?"


def run(loaders: List[str], n: Union[int, Dict[str, int]], seed: int = 0, time_limit: float = 5.0,
        memory_bytes: Optional[int] = 1 << 30, verbose: bool = False, only: Optional[int] = None,
        targets: Optional[Dict[str, Target]] = None,
        progress: Optional[Callable[[str, Dict[str, Any]], None]] = None) -> Dict[str, Any]:
    """Fuzz each loader with ``n`` inputs (or ``n[loader]``); returns the report (counts and
    failure examples).
    ``memory_bytes`` None leaves the address space uncapped (for use inside a test process);
    ``progress(loader, report so far)`` is called after each loader."""
    targets = TARGETS if targets is None else targets
    for name in loaders:
        if name not in targets:
            raise ValueError(f"unknown loader {name!r}; known: {sorted(targets)}")
    work = tempfile.mkdtemp(prefix="hybridnet-fuzz-")
    report: Dict[str, Any] = {"seed": seed, "time_limit_s": time_limit, "loaders": {}}
    old = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        seeds = Seeds(work)
        report["address_space_cap"] = None if memory_bytes is None else limit_memory(memory_bytes)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        for name in loaders:
            count = n[name] if isinstance(n, dict) else n
            report["loaders"][name] = _run_one(name, targets[name], seeds, work, count, seed, time_limit,
                                               verbose, only)
            if progress is not None:
                progress(name, report)
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        report["max_rss_growth_bytes"] = rss1 - rss0
        if memory_bytes is not None and rss1 - rss0 > memory_bytes:
            report["memory_growth_failure"] = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        shutil.rmtree(work, ignore_errors=True)
    return report


def _run_one(name: str, target: Target, seeds: Seeds, work: str, n: int, seed: int,
             time_limit: float, verbose: bool, only: Optional[int]) -> Dict[str, Any]:
    stats = {"inputs": 0, "accepted": 0, "clear": 0, "unclear": 0, "hangs": 0, "memory": 0,
             "seconds": 0.0, "failures": {}}
    d = os.path.join(work, name.replace(".", "_"))
    os.makedirs(d, exist_ok=True)
    t0 = time.perf_counter()
    indices = range(n) if only is None else [only]
    for i in indices:
        rng = _rng(seed, name, i)
        kind, detail = "accepted", ""
        signal.setitimer(signal.ITIMER_REAL, time_limit)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                target(rng, seeds, d)
        except Hang as e:
            kind, detail = "hangs", f"Hang at {_where(e)}: over {time_limit} s"
            if verbose:
                traceback.print_exc()
        except BaseException as e:  # noqa: BLE001 - sorting every outcome is the point
            if isinstance(e, KeyboardInterrupt):
                raise
            if _is_memory(e):
                kind = "memory"
            elif is_clear(e):
                kind = "clear"
            else:
                kind = "unclear"
            detail = f"{type(e).__name__} at {_where(e)}: {str(e)[:200]}"
            if verbose and kind != "clear":
                traceback.print_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        stats["inputs"] += 1
        stats[kind] += 1
        if kind not in ("accepted", "clear"):
            key = f"{kind}: {detail.split(':')[0]}"
            entry = stats["failures"].setdefault(key, {"count": 0, "first_input": i, "message": detail})
            entry["count"] += 1
        elif verbose and only is not None:
            print(f"{name} input {i}: {kind} {detail}")
    stats["seconds"] = round(time.perf_counter() - t0, 2)
    return stats


def failures(report: Dict[str, Any]) -> List[str]:
    """One line per failure class, with the input that reproduces it."""
    out = []
    for name, st in report["loaders"].items():
        for key, e in st["failures"].items():
            out.append(f"{name}: {e['count']} x {key} (reproduce: python -m tests.fuzz --loader "
                       f"'{name}' --seed {report['seed']} --only {e['first_input']} -v): {e['message']}")
    if report.get("memory_growth_failure"):
        out.append(f"resident memory grew by {report['max_rss_growth_bytes']} bytes")
    return out
