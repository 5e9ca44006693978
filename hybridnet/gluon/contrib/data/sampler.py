"""``IntervalSampler`` (MXNet 1.9.1 ``gluon.contrib.data.sampler``)."""
from __future__ import annotations

from typing import Iterator

from ...data import sampler

__all__ = ["IntervalSampler"]


class IntervalSampler(sampler.Sampler):
    """Indices of ``[0, length)`` at a fixed ``interval``: 0, interval, 2*interval... and, with
    ``rollover``, then 1, 1+interval... until every index was visited once, e.g.
    ``IntervalSampler(13, 3)`` gives 0 3 6 9 12 1 4 7 10 2 5 8 11; without rollover only the
    first pass (0 3 6 9 12). ``len`` is the number of indices yielded (MXNet 1.9.1 reports
    ``length`` even without rollover)."""

    def __init__(self, length: int, interval: int, rollover: bool = True):
        if not 0 < interval <= length:
            raise ValueError(f"Interval {interval} must be positive and smaller than or equal to "
                             f"length {length}")
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self) -> Iterator[int]:
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self) -> int:
        if self._rollover:
            return self._length
        return len(range(0, self._length, self._interval))
