"""Datasets (MXNet 1.9.1's ``gluon.data.dataset``): indexable collections of samples."""
from __future__ import annotations

import os
from typing import Any, Callable, Optional

from ...ndarray import NDArray
from . import sampler as _sampler

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Abstract dataset: subclasses implement ``__getitem__`` and ``__len__``."""

    def __getitem__(self, idx: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def filter(self, fn: Callable[[Any], bool]) -> "Dataset":
        """The samples for which ``fn(sample)`` is true (decided now, once)."""
        return _SampledDataset(self, _sampler.FilterSampler(fn, self))

    def shard(self, num_shards: int, index: int) -> "Dataset":
        """Contiguous shard ``index`` of ``num_shards``; the first ``len % num_shards`` shards
        get one extra sample."""
        if not 0 <= index < num_shards:
            raise ValueError(f"Dataset.shard: shard index {index} out of range for {num_shards} shards")
        length = len(self)
        shard_len, rest = divmod(length, num_shards)
        start = shard_len * index + min(index, rest)
        end = start + shard_len + (1 if index < rest else 0)
        return _SampledDataset(self, _sampler.SequentialSampler(end - start, start))

    def take(self, count: Optional[int]) -> "Dataset":
        """The first ``count`` samples (all of them when ``count`` is None or too large)."""
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, _sampler.SequentialSampler(count))

    def sample(self, sampler: "_sampler.Sampler") -> "Dataset":
        """The samples at the indices ``sampler`` yields."""
        if not isinstance(sampler, _sampler.Sampler):
            raise TypeError(f"Dataset.sample: expected a gluon.data.Sampler, got {type(sampler).__name__}")
        return _SampledDataset(self, sampler)

    def transform(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """Apply ``fn`` to every sample (tuple samples are unpacked: ``fn(*sample)``).

        ``lazy=False`` transforms everything now and keeps the results.
        """
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """Apply ``fn`` to the first element of each sample only (the data, not the label)."""
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any indexable object with a length (a list, an array...)."""

    def __init__(self, data: Any):
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data: Dataset, fn: Callable):
        self._data = data
        self._fn = fn

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    """Picklable ``lambda x, *rest: (fn(x),) + rest``."""

    def __init__(self, fn: Callable):
        self._fn = fn

    def __call__(self, x: Any, *args: Any) -> Any:
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    """The samples of ``dataset`` at the indices of ``sampler`` (in sampler order)."""

    def __init__(self, dataset: Dataset, sampler: "_sampler.Sampler"):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, idx: int) -> Any:
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Several arrays of equal length zipped: sample ``i`` is ``(a[i], b[i], ...)``, or ``a[i]``
    for a single array. 1-D NDArrays are kept as NumPy so samples are scalars, as in MXNet."""

    def __init__(self, *args: Any):
        if not args:
            raise ValueError("ArrayDataset needs at least 1 array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError(f"All arrays must have the same length; array[0] has length "
                                 f"{self._length} while array[{i}] has {len(data)}.")
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx: int) -> Any:
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self) -> int:
        return self._length


class RecordFileDataset(Dataset):
    """The raw records (bytes) of a RecordIO file; the index is ``<name>.idx`` next to it."""

    def __init__(self, filename: "str | os.PathLike"):
        from ... import recordio
        self.filename = os.fspath(filename)
        self.idx_file = os.path.splitext(self.filename)[0] + ".idx"
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx: int) -> bytes:
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self) -> int:
        return len(self._record.keys)
