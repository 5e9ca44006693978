"""Shared timing helpers: medians of interleaved repeats (machines are shared and noisy)."""
from __future__ import annotations

import statistics
import time
from typing import Callable, Dict


def interleaved(fns: Dict[str, Callable[[], object]], number: int, repeats: int = 7,
                warmup: int = 3) -> Dict[str, float]:
    """Median seconds per call of each fn; rounds alternate between fns so drift hits all alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples: Dict[str, list] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - t0) / number)
    return {k: statistics.median(v) for k, v in samples.items()}


def table(title: str, rows: list, headers: list) -> str:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    out = [title, line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return "\n".join(out)
