"""Reads of weights wait for an update in progress in another thread.

MXNet's engine orders every read of an array after the writes pending on it, so a thread that
reads or saves weights while another thread runs ``Trainer.step`` sees the weights before or
after the step, never half of it. hybridnet runs operators in the calling thread; the same
guarantee comes from one re-entrant lock per group of weights updated together (a Trainer's):
the updating thread holds it for the whole step, and reads of an array that carries it
(``asnumpy``, ``nd.save``, ``save_parameters``, ``export``) take it. Arrays without a guard pay
one attribute read.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, List, Optional

__all__ = ["WriteGuard", "new_guard", "guard_of", "set_guard", "ordered", "holding"]


class WriteGuard:
    """A re-entrant lock for a group of weights that one writer updates together. A copy
    (``copy.deepcopy`` of a block, pickling) gets a fresh guard: the copies are other weights."""
    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def acquire(self) -> bool:
        return self._lock.acquire()

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> "WriteGuard":
        self._lock.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()

    def __deepcopy__(self, memo: dict) -> "WriteGuard":
        return WriteGuard()

    def __reduce__(self) -> tuple:
        return (WriteGuard, ())


def new_guard() -> WriteGuard:
    """A guard for a group of weights that one writer updates together."""
    return WriteGuard()


def guard_of(array: Any) -> Optional[WriteGuard]:
    """The guard an array carries, or None."""
    return getattr(array, "_writer", None)


def set_guard(arrays: Iterable[Any], guard: WriteGuard) -> None:
    for a in arrays:
        a._writer = guard


def ordered(guards: Iterable[Optional[WriteGuard]]) -> List[WriteGuard]:
    """Distinct guards in one global order, so that threads taking several never deadlock."""
    return sorted({id(g): g for g in guards if g is not None}.values(), key=id)


@contextmanager
def holding(guards: List[WriteGuard]) -> Iterator[None]:
    """Hold ``guards`` (a list from :func:`ordered`) for the extent of the block."""
    taken: list = []
    try:
        for g in guards:
            g.acquire()
            taken.append(g)
        yield
    finally:
        for g in reversed(taken):
            g.release()
