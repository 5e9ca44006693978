"""``static_alloc``'s host-memory policy: freed CPU memory stays in the process for reuse.

MXNet's ``static_alloc=True`` keeps its buffers from one call to the next ("memory usage may
increase", its docs say). torch's CPU tensors come from the C allocator, and glibc serves every
block above its mmap threshold (32 MB at most) with a fresh ``mmap``: each call of a network with
big activations pays the kernel again for zeroed pages (mobilenet1.0 on 32x3x224x224: about
100,000 page faults and 45% of the CPU time of a call). Once a block is hybridized with
``static_alloc=True``, glibc is told to serve all blocks from its heap (``M_MMAP_MAX = 0``) and
to keep what is freed (``M_TRIM_THRESHOLD`` at its maximum), so later calls reuse the memory
(no page faults) and the process keeps its peak memory, as MXNet's pool does. It is process-wide
and lasts until exit. Without glibc (macOS, Windows, musl) nothing changes;
``HYBRIDNET_STATIC_ALLOC_HEAP=0`` turns it off.

:func:`release_freed_memory` is the one-off opposite: after work whose memory will not be needed
again (a lowered tier's background build: tracing, freezing, baked weight copies), glibc's
``malloc_trim(0)`` hands the freed heap back to the system. The next call of a static graph
faults its buffers in once, then keeps them again.

This is the meaning the ``static_alloc`` flag keeps; the predict plan and the lowered tier it
also switches on are ``pipeline.PredictOptions`` (``plan``, ``tier``).
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
from typing import Any

__all__ = ["keep_freed_memory", "release_freed_memory"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_INT_MAX = 2 ** 31 - 1  # mallopt takes a C int


@functools.lru_cache(maxsize=1)
def keep_freed_memory() -> bool:
    """Apply the policy (once per process; mallopt is idempotent should two threads race the
    first call); whether it is in force."""
    return _apply()


def _apply() -> bool:
    if os.environ.get("HYBRIDNET_STATIC_ALLOC_HEAP", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_TRIM_THRESHOLD, _INT_MAX)) and bool(mallopt(_M_MMAP_MAX, 0))


def release_freed_memory() -> bool:
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim(0)``); whether it
    ran (False without glibc). Safe from any thread: glibc locks its arenas."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim
