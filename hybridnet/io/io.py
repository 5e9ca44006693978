"""Data iterators (MXNet 1.9.1's ``mxnet.io.io``): DataDesc, DataBatch, DataIter, ResizeIter,
PrefetchingIter and NDArrayIter.

These are the iterators of MXNet's Module-era API; Gluon code usually uses
``gluon.data.DataLoader`` instead, but scripts (and MXNet's own tests) still feed models with
``mx.io.NDArrayIter``. Batches hold hybridnet NDArrays.
"""
from __future__ import annotations

import threading
from collections import namedtuple
from typing import Any, List, Optional, Sequence

import numpy as np

from ..base import MXNetError
from . import utils as _utils

__all__ = ["DataDesc", "DataBatch", "DataIter", "ResizeIter", "PrefetchingIter", "NDArrayIter"]

# MXNet's mx_real_t
_REAL_T = np.float32


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name and shape of one input, plus ``dtype`` and ``layout`` (MXNet's ``io.DataDesc``).

    Like MXNet it is a 2-tuple ``(name, shape)``: ``name, shape = desc`` and
    ``dict(it.provide_data)`` work; ``dtype`` (default float32) and ``layout`` (default
    ``'NCHW'``) are extra attributes that equality ignores.
    """

    # defaults for instances made without __new__'s extras (namedtuple's _make/_replace)
    dtype: Any = _REAL_T
    layout: str = "NCHW"

    def __new__(cls, name: str, shape: Any, dtype: Any = _REAL_T, layout: str = "NCHW") -> "DataDesc":
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self) -> str:
        return "DataDesc[%s,%s,%s,%s]" % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout: Optional[str]) -> int:
        """Index of the batch axis ``'N'`` in ``layout`` (0 when layout is None, -1 if absent)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes: Sequence, types: Optional[Sequence]) -> List["DataDesc"]:
        """DataDescs from ``[(name, shape), ...]`` and optional ``[(name, dtype), ...]``."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch:
    """One batch: lists of data and label NDArrays, ``pad`` (how many trailing examples are
    padding), ``index``, ``bucket_key``, ``provide_data``/``provide_label`` (MXNet's DataBatch)."""

    def __init__(self, data: Optional[Sequence], label: Optional[Sequence] = None, pad: Optional[int] = None,
                 index: Any = None, bucket_key: Any = None, provide_data: Optional[list] = None,
                 provide_label: Optional[list] = None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(f"DataBatch: data must be a list of NDArrays, got {type(data).__name__}; "
                            f"wrap a single array as [array]")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f"DataBatch: label must be a list of NDArrays, got {type(label).__name__}; "
                            f"wrap a single array as [array]")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data] if self.data is not None else None
        label_shapes = [lb.shape for lb in self.label] if self.label else None
        return "{}: data shapes: {} label shapes: {}".format(type(self).__name__, data_shapes, label_shapes)


class _Declared:
    """``provide_data``/``provide_label`` on DataIter: subclasses set them (attribute or
    property); reading an unset one raises AttributeError with a hint (``hasattr`` is False)."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        raise AttributeError(f"{type(obj).__name__} does not define {self.name}: a DataIter subclass "
                             f"sets self.{self.name} = [DataDesc(name, shape), ...] (or defines a property)")


class DataIter:
    """Base class of MXNet's data iterators: ``next()`` returns a DataBatch or raises
    StopIteration; ``reset()`` starts a new epoch. Subclasses implement ``iter_next``,
    ``getdata``, ``getlabel``, ``getpad`` (and ``getindex``) or override ``next``."""

    provide_data = _Declared("provide_data")
    provide_label = _Declared("provide_label")

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size

    def __iter__(self) -> "DataIter":
        return self

    def reset(self) -> None:
        """Reset the iterator to the beginning of the data."""

    def next(self) -> DataBatch:
        """The next DataBatch; StopIteration at the end of the data."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end."""
        return False

    def getdata(self) -> Any:
        """Data of the current batch."""
        return None

    def getlabel(self) -> Any:
        """Label of the current batch."""
        return None

    def getindex(self) -> Any:
        """Indices of the current batch's examples (None when unknown)."""
        return None

    def getpad(self) -> Any:
        """Number of padding examples at the end of the current batch."""
        return None


class _CurrentBatchAccess:
    """getdata/getlabel/getindex/getpad read the batch ``next()`` stored in ``current_batch``."""
    current_batch: Any

    def getdata(self) -> Any:
        return self.current_batch.data

    def getlabel(self) -> Any:
        return self.current_batch.label

    def getindex(self) -> Any:
        return self.current_batch.index

    def getpad(self) -> Any:
        return self.current_batch.pad


class ResizeIter(_CurrentBatchAccess, DataIter):
    """Present ``data_iter`` as an iterator of exactly ``size`` batches per epoch: it restarts
    the wrapped iterator when that ends early and stops after ``size`` batches
    (MXNet's ``io.ResizeIter``). ``reset_internal`` resets the wrapped iterator on ``reset()``."""

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: Optional[DataBatch] = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            try:
                self.current_batch = self.data_iter.next()
            except StopIteration:
                raise MXNetError(f"ResizeIter: the wrapped {type(self.data_iter).__name__} yields no "
                                 f"batch even right after reset(); it cannot be resized") from None
        self.cur += 1
        return True



class _PrefetchState:
    """What PrefetchingIter's worker threads share (kept apart from the iterator so that the
    threads do not keep it alive)."""

    def __init__(self, iters: list):
        n = len(iters)
        self.iters = iters
        self.running = True
        self.ready = [threading.Event() for _ in range(n)]
        self.taken = [threading.Event() for _ in range(n)]
        self.batch: List[Optional[DataBatch]] = [None] * n
        self.error: List[Optional[BaseException]] = [None] * n
        for ev in self.taken:
            ev.set()


def _prefetch_worker(state: _PrefetchState, i: int) -> None:
    while True:
        state.taken[i].wait()
        if not state.running:
            break
        try:
            state.batch[i] = state.iters[i].next()
        except StopIteration:
            state.batch[i] = None
        except BaseException as e:  # handed to the consumer thread
            state.batch[i] = None
            state.error[i] = e
        state.taken[i].clear()
        state.ready[i].set()


class PrefetchingIter(_CurrentBatchAccess, DataIter):
    """Fetch batches from one or more iterators in background threads (MXNet's
    ``io.PrefetchingIter``). With several iterators each batch concatenates their data and label
    lists, and they must stay in step. ``rename_data``/``rename_label``: one dict per iterator
    mapping its names to new ones in ``provide_data``/``provide_label``."""

    def __init__(self, iters: Any, rename_data: Optional[list] = None, rename_label: Optional[list] = None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter: iters is empty; pass a DataIter or a list of them")
        for name, ren in (("rename_data", rename_data), ("rename_label", rename_label)):
            if ren is not None and len(ren) != len(iters):
                raise ValueError(f"PrefetchingIter: {name} needs one dict per iterator "
                                 f"({len(iters)}), got {len(ren)}")
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch: Optional[DataBatch] = None
        self._state = _PrefetchState(iters)
        self.prefetch_threads = [threading.Thread(target=_prefetch_worker, args=(self._state, i),
                                                  name=f"PrefetchingIter-{i}", daemon=True)
                                 for i in range(self.n_iter)]
        for t in self.prefetch_threads:
            t.start()

    def __del__(self) -> None:
        state = getattr(self, "_state", None)
        if state is not None:
            state.running = False
            for ev in state.taken:
                ev.set()

    @staticmethod
    def _renamed(descs: list, rename: dict) -> list:
        return [DataDesc(rename.get(d.name, d.name), d.shape, d.dtype, d.layout) if isinstance(d, DataDesc)
                else DataDesc(rename.get(d[0], d[0]), *d[1:]) for d in descs]

    @property
    def provide_data(self) -> list:
        if self.rename_data is None:
            return sum([list(i.provide_data) for i in self.iters], [])
        return sum([self._renamed(i.provide_data, r) for r, i in zip(self.rename_data, self.iters)], [])

    @property
    def provide_label(self) -> list:
        if self.rename_label is None:
            return sum([list(i.provide_label) for i in self.iters], [])
        return sum([self._renamed(i.provide_label, r) for r, i in zip(self.rename_label, self.iters)], [])

    def _wait(self) -> None:
        st = self._state
        for ev in st.ready:
            ev.wait()
        for i, err in enumerate(st.error):
            if err is not None:
                st.error[i] = None
                raise err

    def reset(self) -> None:
        st = self._state
        for ev in st.ready:
            ev.wait()
        st.error = [None] * self.n_iter
        for it in self.iters:
            it.reset()
        for ev in st.ready:
            ev.clear()
        for ev in st.taken:
            ev.set()

    def iter_next(self) -> bool:
        self._wait()
        st = self._state
        batches = st.batch
        if batches[0] is None:
            if any(b is not None for b in batches):
                raise MXNetError("PrefetchingIter: the iterators ran out of batches at different "
                                 "times (number of entries mismatch between iterators)")
            return False
        if any(b is None for b in batches) or any(b.pad != batches[0].pad for b in batches):
            raise MXNetError("PrefetchingIter: the iterators are out of step (one ended or padded "
                             f"differently: pads {[None if b is None else b.pad for b in batches]})")
        self.current_batch = DataBatch(sum([list(b.data) for b in batches], []),
                                       sum([list(b.label or []) for b in batches], []),
                                       batches[0].pad, batches[0].index,
                                       provide_data=self.provide_data, provide_label=self.provide_label)
        for ev in st.ready:
            ev.clear()
        for ev in st.taken:
            ev.set()
        return True

    def next(self) -> DataBatch:
        if self.iter_next():
            return self.current_batch
        raise StopIteration



_LAST_BATCH_MODES = ("pad", "discard", "roll_over")


class NDArrayIter(DataIter):
    """Iterate over in-memory arrays (MXNet's ``io.NDArrayIter``).

    ``data``/``label``: an array, a list of arrays (named ``_0_data``, ``_1_data``, ... when
    several) or a dict name -> array; sources are ordered by name. NumPy inputs become float32
    NDArrays. ``last_batch_handle`` decides what happens to the last, incomplete batch:

    * ``'pad'`` (default): it is filled up with examples from the start of the data and
      ``batch.pad`` says how many were added;
    * ``'discard'``: it is dropped;
    * ``'roll_over'``: it is dropped for this epoch and its examples open the first batch of
      the next epoch (after ``reset()``), whose ``pad`` is the number of rolled-over examples.

    ``shuffle=True`` draws a permutation with NumPy's global RNG at construction and at every
    ``reset()`` (``np.random.seed`` makes it reproducible, with MXNet's exact order); like MXNet,
    shuffled sources are rebuilt as float32.
    """

    def __init__(self, data: Any, label: Any = None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data", label_name: str = "softmax_label"):
        super().__init__(batch_size)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"NDArrayIter: batch_size must be a positive int, got {batch_size!r}")
        if last_batch_handle not in _LAST_BATCH_MODES:
            raise ValueError(f"NDArrayIter: last_batch_handle must be one of {_LAST_BATCH_MODES}, "
                             f"got {last_batch_handle!r}")
        self.data = _utils._init_data(data, allow_empty=False, default_name=data_name)
        self.label = _utils._init_data(label, allow_empty=True, default_name=label_name)
        from ..ndarray.sparse import CSRNDArray
        if (_utils._has_instance(self.data, CSRNDArray) or _utils._has_instance(self.label, CSRNDArray)) \
                and last_batch_handle != "discard":
            raise NotImplementedError("NDArrayIter only supports CSRNDArray (or scipy.sparse.csr_matrix) "
                                      "sources with last_batch_handle='discard'; got "
                                      f"last_batch_handle={last_batch_handle!r}")
        n = self.data[0][1].shape[0]
        for k, v in self.data + self.label:
            if v.shape[0] < n:
                raise ValueError(f"NDArrayIter: {k!r} has {v.shape[0]} examples (shape {v.shape}) but "
                                 f"{self.data[0][0]!r} has {n}; every data and label array needs the "
                                 f"same first dimension")
        self.idx = np.arange(n)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = int(batch_size)
        self.cursor = -self.batch_size
        self.num_data = n
        # examples of an incomplete last batch kept for the next epoch ('roll_over')
        self._cache_data: Optional[list] = None
        self._cache_label: Optional[list] = None
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)

    @property
    def provide_data(self) -> List[DataDesc]:
        return [DataDesc(k, tuple([self.batch_size] + list(v.shape[1:])), v.dtype) for k, v in self.data]

    @property
    def provide_label(self) -> List[DataDesc]:
        return [DataDesc(k, tuple([self.batch_size] + list(v.shape[1:])), v.dtype) for k, v in self.label]

    def hard_reset(self) -> None:
        """Start over, forgetting rolled-over examples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self) -> None:
        n, bs = self.num_data, self.batch_size
        roll = self.last_batch_handle == "roll_over" and n - bs < self.cursor < n
        if roll and self._cache_data is None:
            # the epoch was walked with iter_next()/getdata(): keep the incomplete batch now
            self._cache_data = self._slice(self.data, self.cursor, n)
            self._cache_label = self._slice(self.label, self.cursor, n)
        if self.shuffle:
            self._shuffle_data()
        if roll:
            # the last batch was incomplete: its examples open the next epoch, and the cursor
            # goes negative by their number
            self.cursor = self.cursor - n - bs
        else:
            self.cursor = -bs

    def iter_next(self) -> bool:
        self.cursor += self.batch_size
        if self.cursor >= 0:
            self._cache_data = self._cache_label = None
        return self.cursor < self.num_data

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[0] != self.batch_size:
            # incomplete last batch ('discard' / 'roll_over'): keep it for the next epoch
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    # -- batch assembly -----------------------------------------------------------------------
    @staticmethod
    def _slice(source: list, start: int, end: int) -> list:
        return [v[start:end] for _, v in source]

    @staticmethod
    def _concat(first: list, second: list) -> list:
        from ..ndarray import concat
        if not first or not second:
            return first if first else second
        return [concat(a, b, dim=0) for a, b in zip(first, second)]

    def _batchify(self, source: list, cache: Optional[list]) -> list:
        if self.cursor >= self.num_data:
            raise MXNetError("NDArrayIter: no current batch (the epoch is over); call reset()")
        n, bs, c = self.num_data, self.batch_size, self.cursor
        if self.last_batch_handle == "roll_over" and -bs < c < 0:
            if cache is None:
                raise MXNetError("NDArrayIter: the first batch of this epoch should start with the "
                                 "examples rolled over from the last one, but none were kept")
            return self._concat(cache, self._slice(source, 0, c + bs))
        if self.last_batch_handle == "pad" and c + bs > n:
            pad = c + bs - n
            first = self._slice(source, c, n)
            if pad > n:
                from ..ndarray import tile
                whole = self._slice(source, 0, n)
                second = [tile(v, reps=(pad // n,) + (1,) * (v.ndim - 1)) for v in whole]
                if pad % n:
                    second = self._concat(second, self._slice(source, 0, pad % n))
            else:
                second = self._slice(source, 0, pad)
            return self._concat(first, second)
        return self._slice(source, c, min(c + bs, n))

    def getdata(self) -> list:
        return self._batchify(self.data, self._cache_data)

    def getlabel(self) -> list:
        return self._batchify(self.label, self._cache_label)

    def getpad(self) -> int:
        n, bs, c = self.num_data, self.batch_size, self.cursor
        if self.last_batch_handle == "pad" and c + bs > n:
            return c + bs - n
        if self.last_batch_handle == "roll_over" and -bs < c < 0:
            return -c
        return 0

    def _shuffle_data(self) -> None:
        # MXNet permutes self.idx in place (so permutations compose across epochs) and then
        # re-indexes the already shuffled arrays with it; the same draws give the same batches.
        np.random.shuffle(self.idx)
        self.data = _utils._getdata_by_idx(self.data, self.idx)
        self.label = _utils._getdata_by_idx(self.label, self.idx)
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
