"""Samplers: iterables of dataset indices (MXNet 1.9.1's ``gluon.data.sampler``)."""
from __future__ import annotations

from typing import Any, Callable, Iterator, List

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler", "FilterSampler",
           "IntervalSampler"]


class Sampler:
    """Base class: ``__iter__`` yields indices, ``__len__`` says how many."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start + 1, ..., start + length - 1``."""

    def __init__(self, length: int, start: int = 0):
        self._length = int(length)
        self._start = int(start)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """A random permutation of ``range(length)`` each epoch (NumPy's global RNG, as MXNet)."""

    def __init__(self, length: int):
        self._length = int(length)

    def __iter__(self) -> Iterator[int]:
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self) -> int:
        return self._length


class FilterSampler(Sampler):
    """Indices ``i`` of ``dataset`` for which ``fn(dataset[i])`` is true (evaluated once, here)."""

    def __init__(self, fn: Callable[[Any], bool], dataset: Any):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self) -> Iterator[int]:
        return iter(self._indices)

    def __len__(self) -> int:
        return len(self._indices)


class IntervalSampler(Sampler):
    """``0, k, 2k, ..., 1, 1+k, ...`` (MXNet keeps it in ``gluon.contrib.data``); with
    ``rollover=False`` only the first pass ``0, k, 2k, ...`` is produced."""

    def __init__(self, length: int, interval: int, rollover: bool = True):
        if interval >= length:
            raise ValueError(f"IntervalSampler: interval {interval} must be smaller than the "
                             f"length {length}")
        self._length = int(length)
        self._interval = int(interval)
        self._rollover = rollover

    def __iter__(self) -> Iterator[int]:
        for i in range(self._interval if self._rollover else 1):
            for j in range(i, self._length, self._interval):
                yield j

    def __len__(self) -> int:
        if self._rollover:
            return self._length
        return len(range(0, self._length, self._interval))


_LAST_BATCH = ("keep", "discard", "rollover")


class BatchSampler(Sampler):
    """Group a sampler's indices into lists of ``batch_size``.

    ``last_batch``: ``'keep'`` yields a short final batch, ``'discard'`` drops it,
    ``'rollover'`` carries the leftover indices into the next epoch's first batch.
    """

    def __init__(self, sampler: Any, batch_size: int, last_batch: str = "keep"):
        if last_batch not in _LAST_BATCH:
            raise ValueError(f"last_batch must be one of 'keep', 'discard', or 'rollover', "
                             f"but got {last_batch!r}")
        if int(batch_size) < 1:
            raise ValueError(f"BatchSampler: batch_size must be a positive integer, got {batch_size}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev: List[int] = []

    def __iter__(self) -> Iterator[List[int]]:
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self) -> int:
        n, bs = len(self._sampler), self._batch_size
        if self._last_batch == "keep":
            return (n + bs - 1) // bs
        if self._last_batch == "discard":
            return n // bs
        return (len(self._prev) + n) // bs
