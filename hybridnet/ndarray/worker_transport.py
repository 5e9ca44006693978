"""Moving NDArrays between DataLoader worker processes and the main process.

A worker's batch travels through shared memory: its arrays are moved there and only handles
cross the pipe (torch's ``ForkingPickler`` reductions, registered by ``torch.multiprocessing``),
so full pipes cannot block a worker. Also here: pinned-memory copies (MXNet's ``cpu_pinned``)
and the per-worker seeding. ``gluon.data`` uses these and never touches torch itself.
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch
import torch.multiprocessing  # noqa: F401  (registers shared-memory reductions of tensors)

from ..context import Context
from .ndarray import NDArray, placed

__all__ = ["to_wire", "from_wire", "pin", "seed_worker", "base_seed"]


class _WireArray:
    """An NDArray in transit: its tensor, in shared memory (pickled as a handle)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor

    def __getstate__(self) -> torch.Tensor:
        return self.tensor

    def __setstate__(self, state: torch.Tensor) -> None:
        self.tensor = state


def _shared(t: torch.Tensor) -> torch.Tensor:
    """``t`` in shared memory; a view of a larger buffer is copied first (only its own bytes
    travel)."""
    t = t.detach()
    if not t.is_contiguous() or t.untyped_storage().nbytes() != t.numel() * t.element_size():
        t = t.clone(memory_format=torch.contiguous_format)
    return t.share_memory_()


def to_wire(obj: Any) -> Any:
    if isinstance(obj, NDArray):
        return _WireArray(_shared(obj._t))
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(to_wire(x) for x in obj)
    if isinstance(obj, list):
        return [to_wire(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_wire(v) for k, v in obj.items()}
    return obj


def from_wire(obj: Any) -> Any:
    if isinstance(obj, _WireArray):
        return NDArray(obj.tensor)
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(from_wire(x) for x in obj)
    if isinstance(obj, list):
        return [from_wire(x) for x in obj]
    if isinstance(obj, dict):
        return {k: from_wire(v) for k, v in obj.items()}
    return obj


def pin(obj: Any, device_id: int) -> Any:
    """Copies on MXNet's ``cpu_pinned`` context: page-locked when CUDA is present (on a CPU-only
    machine plain memory, still labelled ``cpu_pinned`` as MXNet does)."""
    if isinstance(obj, NDArray):
        if obj._t.device.type != "cpu":
            return obj
        pinned = Context("cpu_pinned", device_id)
        if not torch.cuda.is_available():
            return obj.as_in_context(pinned)
        return placed(NDArray(obj._t.pin_memory()), pinned)
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(pin(x, device_id) for x in obj)
    if isinstance(obj, dict):
        return {k: pin(v, device_id) for k, v in obj.items()}
    return obj


def seed_worker(seed: int) -> None:
    """Set up a worker process: one torch thread, and ``seed`` for NumPy, torch and random."""
    torch.set_num_threads(1)
    np.random.seed(seed)
    torch.manual_seed(seed)
    random.seed(seed)


def base_seed() -> int:
    """A seed derived from torch's initial seed (reading it does not consume RNG state)."""
    return int(torch.initial_seed()) % (2 ** 32)
