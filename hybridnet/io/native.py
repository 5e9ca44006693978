"""MXNet's "native" data iterators (C++ in MXNet 1.9.1, Python here): MXDataIter, CSVIter and
MNISTIter reading local files, LibSVMIter giving CSR batches. ImageRecordIter and its relatives are not implemented.

Behaviour mirrored from MXNet:
* keyword arguments only; values may be given as MXNet's strings (``shuffle=1``,
  ``data_shape='(3,)'``);
* the first batch is read at construction to fill ``provide_data``/``provide_label``;
* ``getdata()``/``getlabel()`` return one NDArray (not a list); ``batch.data`` is ``[data]``;
* a label of shape ``(batch, 1)`` is returned as ``(batch,)``;
* ``getindex()`` returns a ``numpy.uint64`` array.
"""
from __future__ import annotations

import ast
import gzip
import logging
import os
import struct
from typing import Any, Optional, Tuple

import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..ndarray.ndarray import array as _nd_array
from ..ndarray.sparse import csr_matrix
from .io import DataBatch, DataDesc, DataIter

__all__ = ["MXDataIter", "CSVIter", "MNISTIter", "ImageRecordIter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1", "ImageRecordInt8Iter",
           "ImageDetRecordIter", "LibSVMIter"]

_LOG = logging.getLogger(__name__)


# -- MXNet's string-typed parameters ------------------------------------------------------------
def _as_bool(v: Any, name: str, who: str) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return v != 0
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("1", "true"):
            return True
        if s in ("0", "false"):
            return False
    raise ValueError(f"{who}: {name} must be a bool (or 0/1, 'True'/'False'), got {v!r}")


def _as_int(v: Any, name: str, who: str, low: Optional[int] = None) -> int:
    try:
        if isinstance(v, (bool, float)) or (isinstance(v, str) and not v.strip().lstrip("-").isdigit()):
            raise ValueError
        r = int(v)
    except (TypeError, ValueError):
        raise ValueError(f"{who}: {name} must be an int, got {v!r}") from None
    if low is not None and r < low:
        raise ValueError(f"{who}: {name} must be >= {low}, got {r}")
    return r


def _as_shape(v: Any, name: str, who: str) -> Tuple[int, ...]:
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            raise ValueError(f"{who}: {name} must be a shape such as (3,) or (1, 28, 28), got {v!r}") from None
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (v,)
    if not isinstance(v, (tuple, list)) or not v or \
            not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in v):
        raise ValueError(f"{who}: {name} must be a non-empty shape of positive ints such as (3,), got {v!r}")
    return tuple(int(d) for d in v)


def _as_dtype(v: Any, allowed: Tuple[str, ...], who: str) -> Optional[str]:
    if v is None or (isinstance(v, str) and v.strip().lower() == "none"):
        return None
    name = np.dtype(v).name if not isinstance(v, str) else v.strip()
    if name not in allowed:
        raise ValueError(f"{who}: dtype must be None or one of {allowed}, got {v!r}")
    return name


# -- the Python side of MXNet's MXDataIter --------------------------------------------------------
class MXDataIter(DataIter):
    """Base class of the native iterators (MXNet wraps its C++ iterators in this class).

    Subclasses implement ``_before_first()`` (start an epoch) and ``_advance()`` (read the next
    batch into ``self._raw = (data, label, pad, index)`` as NumPy arrays, or return False).
    """

    _who = "MXDataIter"

    def __init__(self, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: Optional[str] = None):
        super().__init__()
        self._out_dtype = dtype
        self._debug_skip_load = False
        self._debug_at_begin = True
        self._cur: Optional[Tuple[NDArray, NDArray, int, np.ndarray]] = None
        self.first_batch: Optional[DataBatch] = None
        try:
            self.first_batch = self.next()
        except StopIteration:
            raise MXNetError(f"{self._who}: the input holds no complete batch (batch size "
                             f"{getattr(self, '_batch_size', '?')}); use a smaller batch_size") from None
        data = self.first_batch.data[0]
        label = self.first_batch.label[0]
        self.provide_data = [DataDesc(data_name, data.shape, data.dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, label.dtype)]
        self.batch_size = data.shape[0]

    # subclass hooks
    def _before_first(self) -> None:
        raise NotImplementedError

    def _advance(self) -> bool:
        raise NotImplementedError

    def _load_current(self) -> bool:
        if not self._advance():
            return False
        data, label, pad, index = self._raw
        if self._out_dtype is not None:
            data, label = data.astype(self._out_dtype), label.astype(self._out_dtype)
        if label.ndim == 2 and label.shape[1] == 1:
            label = label.reshape(label.shape[0])  # MXNet returns (batch, 1) labels as (batch,)
        self._cur = (_nd_array(data, dtype=data.dtype), _nd_array(label, dtype=label.dtype), int(pad),
                     np.asarray(index, dtype=np.uint64).copy())
        return True

    def debug_skip_load(self) -> None:
        """Keep returning the first batch (to time a network without the input cost)."""
        self._debug_skip_load = True
        _LOG.info("Set debug_skip_load to be true, will simply return first batch")

    def reset(self) -> None:
        self._debug_at_begin = True
        self.first_batch = None
        self._before_first()

    def next(self) -> DataBatch:
        if self._debug_skip_load and not self._debug_at_begin:
            return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                             index=self.getindex())
        if self.first_batch is not None:
            batch, self.first_batch = self.first_batch, None
            return batch
        self._debug_at_begin = False
        if self._load_current():
            return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def iter_next(self) -> bool:
        if self.first_batch is not None:
            # the first batch is already the current one
            self.first_batch = None
            return True
        return self._load_current()

    def _current(self) -> Tuple[NDArray, NDArray, int, np.ndarray]:
        if self._cur is None:
            raise MXNetError(f"{self._who}: no current batch; call next() or iter_next() first")
        return self._cur

    def getdata(self) -> NDArray:
        return self._current()[0]

    def getlabel(self) -> NDArray:
        return self._current()[1]

    def getpad(self) -> int:
        return self._current()[2]

    def getindex(self) -> np.ndarray:
        return self._current()[3].copy()


# -- CSVIter --------------------------------------------------------------------------------------
def _read_csv(path: str, shape: Tuple[int, ...], what: str, who: str, dtype: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise MXNetError(f"{who}: {what} file {path!r} does not exist")
    size = int(np.prod(shape))
    is_int = dtype.startswith("int")
    rows: list = []
    with open(path, "r") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            fields = line.split(",")
            if len(fields) != size:
                raise MXNetError(f"{who}: the data size in CSV does not match the size of the shape: "
                                 f"specified {what} shape={shape} ({size} values), but row {lineno} of "
                                 f"{path!r} has {len(fields)} values")
            try:
                if is_int:  # exact for every int64, not only those a float64 holds
                    rows.append([int(x) if x.strip().lstrip("+-").isdigit() else int(float(x)) for x in fields])
                else:
                    rows.append([float(x) for x in fields])
            except (ValueError, OverflowError) as e:
                raise MXNetError(f"{who}: row {lineno} of {path!r} is not numeric: {e}") from None
    return np.asarray(rows, dtype=dtype).reshape((len(rows),) + shape)


class CSVIter(MXDataIter):
    """Batches from CSV files (MXNet's ``io.CSVIter``): each row of ``data_csv`` is one example
    reshaped to ``data_shape``; each row of ``label_csv`` one label of ``label_shape`` (all labels
    are 0 without ``label_csv``).

    ``round_batch=True`` (default) completes the last batch with examples from the start of the
    file (``pad`` says how many) and the next epoch, after ``reset()``, starts where that wrap
    stopped; with ``round_batch=False`` the last batch is padded with whatever the previous batch
    left in the buffer, as in MXNet. ``dtype``: None/'float32', 'int32' or 'int64'.
    ``prefetch_buffer`` and ``ctx`` are accepted and ignored (batches are on the CPU).
    """

    _who = "CSVIter"

    def __init__(self, *, data_csv: str, data_shape: Any, batch_size: Any, label_csv: str = "NULL",
                 label_shape: Any = (1,), round_batch: Any = True, prefetch_buffer: Any = 4,
                 ctx: str = "gpu", dtype: Any = None, data_name: str = "data",
                 label_name: str = "softmax_label"):
        who = self._who
        self._batch_size = _as_int(batch_size, "batch_size", who, low=1)
        self._round = _as_bool(round_batch, "round_batch", who)
        dshape = _as_shape(data_shape, "data_shape", who)
        lshape = _as_shape(label_shape, "label_shape", who)
        dt = _as_dtype(dtype, ("float32", "int32", "int64"), who) or "float32"
        self._data = _read_csv(os.fspath(data_csv), dshape, "data", who, dt)
        n = self._data.shape[0]
        if label_csv is None or label_csv == "NULL":
            self._label = np.zeros((n, 1), dtype=dt)
        else:
            self._label = _read_csv(os.fspath(label_csv), lshape, "label", who, dt)
            if self._label.shape[0] < n:
                raise MXNetError(f"{who}: {data_csv!r} has {n} rows but {label_csv!r} only "
                                 f"{self._label.shape[0]}; every data row needs a label row")
        # BatchLoader state: position in the file, examples wrapped around, reused buffers
        self._pos = 0
        self._overflow = 0
        bs = self._batch_size
        self._buf_data = np.zeros((bs,) + self._data.shape[1:], dtype=dt)
        self._buf_label = np.zeros((bs,) + self._label.shape[1:], dtype=dt)
        self._buf_index = np.zeros(bs, dtype=np.uint64)
        super().__init__(data_name, label_name)

    def _before_first(self) -> None:
        if not self._round or self._overflow == 0:
            self._pos = 0
        else:
            self._overflow = 0  # the wrap already started the new pass

    def _take(self, top: int) -> None:
        self._buf_data[top] = self._data[self._pos]
        self._buf_label[top] = self._label[self._pos]
        self._buf_index[top] = self._pos
        self._pos += 1

    def _advance(self) -> bool:
        if self._overflow != 0:
            return False  # the last batch wrapped around: the epoch is over until reset()
        bs, n = self._batch_size, self._data.shape[0]
        top = 0
        pad = 0
        while self._pos < n and top < bs:
            self._take(top)
            top += 1
        if top == 0:
            return False
        if top < bs:
            if self._round:
                self._pos = 0
                while top < bs:
                    if self._pos >= n:
                        raise MXNetError(f"{self._who}: batch_size {bs} is too large for {n} rows "
                                         f"with round_batch=True (number of inputs must be bigger "
                                         f"than the batch size)")
                    self._take(top)
                    top += 1
                    self._overflow += 1
                pad = self._overflow
            else:
                pad = bs - top  # rows top.. keep the previous batch's content, as in MXNet
        self._raw = (self._buf_data.copy(), self._buf_label.copy(), pad, self._buf_index.copy())
        return True


# -- MNISTIter ------------------------------------------------------------------------------------
def _read_idx_file(path: str, who: str, what: str) -> bytes:
    if not os.path.isfile(path):
        raise MXNetError(f"{who}: {what} file {path!r} not found. hybridnet cannot download MNIST "
                         f"(no network access): copy the IDX files (train-images-idx3-ubyte, "
                         f"train-labels-idx1-ubyte, ...) locally and pass image=... and label=...")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read()


def _header(raw: bytes, n: int, path: str, who: str) -> Tuple[int, ...]:
    if len(raw) < 4 * n:
        raise MXNetError(f"{who}: {path!r} is too short for an MNIST IDX header (invalid mnist format)")
    return struct.unpack(">" + "i" * n, raw[:4 * n])


class MNISTIter(MXDataIter):
    """Batches of MNIST from local IDX files (MXNet's ``io.MNISTIter``).

    Images are float32 scaled by 1/256 (as MXNet), shaped ``(batch, 1, rows, cols)`` or, with
    ``flat=True``, ``(batch, rows*cols)``; labels are float32 ``(batch,)``. An incomplete last
    batch is dropped. ``shuffle`` (default True) permutes the examples once, at construction,
    with ``seed`` (hybridnet's permutation differs from MXNet's C++ one). ``num_parts``/
    ``part_index`` read one contiguous part. ``data_shape``, ``prefetch_buffer`` and ``ctx`` are
    accepted and ignored, as in MXNet.
    """

    _who = "MNISTIter"

    def __init__(self, *, image: str = "./train-images-idx3-ubyte", label: str = "./train-labels-idx1-ubyte",
                 batch_size: Any = 128, shuffle: Any = True, flat: Any = False, seed: Any = 0,
                 silent: Any = False, num_parts: Any = 1, part_index: Any = 0, prefetch_buffer: Any = 4,
                 ctx: str = "gpu", dtype: Any = None, data_shape: Any = None, data_name: str = "data",
                 label_name: str = "softmax_label"):
        who = self._who
        self._batch_size = _as_int(batch_size, "batch_size", who, low=1)
        shuffle = _as_bool(shuffle, "shuffle", who)
        self._flat = _as_bool(flat, "flat", who)
        seed = _as_int(seed, "seed", who)
        silent = _as_bool(silent, "silent", who)
        num_parts = _as_int(num_parts, "num_parts", who, low=1)
        part_index = _as_int(part_index, "part_index", who, low=0)
        if part_index >= num_parts:
            raise ValueError(f"{who}: part_index ({part_index}) must be smaller than num_parts ({num_parts})")
        out_dtype = _as_dtype(dtype, ("float32", "float64", "float16", "uint8", "int8", "int32", "int64"), who)

        image, label = os.fspath(image), os.fspath(label)
        raw_img = _read_idx_file(image, who, "image")
        raw_lab = _read_idx_file(label, who, "label")
        _, count, rows, cols = _header(raw_img, 4, image, who)
        _, lcount = _header(raw_lab, 2, label, who)
        if count != lcount:
            raise MXNetError(f"{who}: {image!r} holds {count} images but {label!r} holds {lcount} labels")

        def part(total: int) -> Tuple[int, int]:
            return int(total / num_parts * part_index), int(total / num_parts * (part_index + 1))

        start, end = part(count)
        npix = rows * cols
        need = 16 + count * npix
        if len(raw_img) < need or len(raw_lab) < 8 + count:
            raise MXNetError(f"{who}: {image!r} or {label!r} is truncated: the headers declare {count} "
                             f"images of {rows}x{cols}")
        img = np.frombuffer(raw_img, dtype=np.uint8, count=(end - start) * npix, offset=16 + start * npix)
        lab = np.frombuffer(raw_lab, dtype=np.uint8, count=end - start, offset=8 + start)
        img = img.reshape(end - start, rows, cols).astype(np.float32) * np.float32(1.0 / 256.0)
        lab = lab.astype(np.float32)
        if shuffle:
            perm = np.random.RandomState(seed).permutation(end - start)
            img, lab = img[perm], lab[perm]
        self._img = img
        self._lab = lab
        self._loc = 0
        if not silent:
            shape = (self._batch_size, npix) if self._flat else (self._batch_size, 1, rows, cols)
            _LOG.info("MNISTIter: load %d images, shuffle=%d, shape=%s", end - start, int(shuffle), shape)
        super().__init__(data_name, label_name, out_dtype)

    def _before_first(self) -> None:
        self._loc = 0

    def _advance(self) -> bool:
        bs = self._batch_size
        if self._loc + bs > self._img.shape[0]:
            return False
        data = self._img[self._loc:self._loc + bs]
        data = data.reshape(bs, -1) if self._flat else data.reshape(bs, 1, *data.shape[1:])
        label = self._lab[self._loc:self._loc + bs].reshape(bs, 1)
        self._loc += bs
        # MXNet's MNISTIter records no example indices: its index array is all zeros
        self._raw = (data, label, 0, np.zeros(bs, dtype=np.uint64))
        return True


# -- not implemented ------------------------------------------------------------------------------
def _not_implemented(name: str, hint: str) -> type:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise MXNetError(f"mx.io.{name} is not implemented in hybridnet. {hint}")

    return type(name, (MXDataIter,), {"__init__": __init__, "__doc__": f"Not implemented: {hint}"})


_REC_HINT = ("Read the .rec file with gluon.data.vision.ImageRecordDataset (with transforms) and "
             "batch it with gluon.data.DataLoader, or decode it with mx.recordio.")
ImageRecordIter = _not_implemented("ImageRecordIter", _REC_HINT)
ImageRecordIter_v1 = _not_implemented("ImageRecordIter_v1", _REC_HINT)
ImageRecordUInt8Iter = _not_implemented("ImageRecordUInt8Iter", _REC_HINT)
ImageRecordUInt8Iter_v1 = _not_implemented("ImageRecordUInt8Iter_v1", _REC_HINT)
ImageRecordInt8Iter = _not_implemented("ImageRecordInt8Iter", _REC_HINT)
ImageDetRecordIter = _not_implemented("ImageDetRecordIter", _REC_HINT)


# -- LibSVMIter -----------------------------------------------------------------------------------
def _read_libsvm(path: str, width: int, who: str, what: str) -> Tuple[np.ndarray, list]:
    """(first column of every row, [(indices, values) per row]) of a LibSVM text file; indices
    are zero-based as MXNet reads them and must be < ``width``."""
    if not os.path.isfile(path):
        raise MXNetError(f"{who}: {what} file {path!r} does not exist")
    heads: list = []
    rows: list = []
    with open(path, "r") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            try:
                heads.append(float(fields[0]))
                idx = np.array([int(p.split(":", 1)[0]) for p in fields[1:]], dtype=np.int64)
                val = np.array([float(p.split(":", 1)[1]) for p in fields[1:]], dtype=np.float32)
            except (ValueError, IndexError):
                raise MXNetError(f"{who}: line {lineno} of {path!r} is not LibSVM text "
                                 f"('<label> <index>:<value> ...'): {line.strip()[:80]!r}") from None
            if idx.size and (idx.min() < 0 or idx.max() >= width):
                raise MXNetError(f"{who}: line {lineno} of {path!r} has feature index "
                                 f"{int(idx.max()) if idx.max() >= width else int(idx.min())}, "
                                 f"outside {what}_shape ({width},); indices are zero-based")
            order = np.argsort(idx, kind="stable")
            rows.append((idx[order], val[order]))
    return np.asarray(heads, dtype=np.float32), rows


def _csr_batch(rows: list, width: int) -> NDArray:
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([r[0].size for r in rows])
    indices = np.concatenate([r[0] for r in rows]) if rows else np.zeros(0, np.int64)
    values = np.concatenate([r[1] for r in rows]) if rows else np.zeros(0, np.float32)
    return csr_matrix((values, indices, indptr), shape=(len(rows), width), dtype="float32")


class LibSVMIter(MXDataIter):
    """Batches of CSR data from LibSVM text (MXNet's ``io.LibSVMIter``).

    Each line of ``data_libsvm`` is ``<label> <index>:<value> ...`` with zero-based feature
    indices below ``data_shape[0]``; a batch's data is a ``(batch_size, data_shape[0])``
    CSRNDArray. Without ``label_libsvm`` the labels are each line's first column, dense
    ``(batch_size,)``; with it, the label file's features form a CSRNDArray of
    ``(batch_size, label_shape[0])``. ``round_batch`` wraps the last batch around to the start
    (``pad`` says how many rows) and the next epoch starts after the wrapped rows, as in MXNet.
    ``num_parts``/``part_index`` read one contiguous share of the rows.
    """

    _who = "LibSVMIter"

    def __init__(self, *, data_libsvm: str, data_shape: Any, batch_size: Any,
                 label_libsvm: str = "NULL", label_shape: Any = (1,), num_parts: Any = 1,
                 part_index: Any = 0, round_batch: Any = True, prefetch_buffer: Any = 4,
                 ctx: str = "gpu", dtype: Any = None, data_name: str = "data",
                 label_name: str = "softmax_label"):
        who = self._who
        self._batch_size = _as_int(batch_size, "batch_size", who, low=1)
        self._round = _as_bool(round_batch, "round_batch", who)
        dshape = _as_shape(data_shape, "data_shape", who)
        lshape = _as_shape(label_shape, "label_shape", who)
        if len(dshape) != 1:
            raise ValueError(f"{who}: data_shape must be 1-D (the number of features), got {dshape}")
        parts = _as_int(num_parts, "num_parts", who, low=1)
        part = _as_int(part_index, "part_index", who, low=0)
        if part >= parts:
            raise ValueError(f"{who}: part_index {part} must be < num_parts {parts}")
        self._width, self._lwidth = dshape[0], lshape[0]
        heads, rows = _read_libsvm(os.fspath(data_libsvm), self._width, who, "data")
        if label_libsvm is None or label_libsvm == "NULL":
            self._labels: Any = heads
        else:
            _, lrows = _read_libsvm(os.fspath(label_libsvm), self._lwidth, who, "label")
            if len(lrows) < len(rows):
                raise MXNetError(f"{who}: {data_libsvm!r} has {len(rows)} rows but "
                                 f"{label_libsvm!r} only {len(lrows)}")
            self._labels = lrows
        lo, hi = len(rows) * part // parts, len(rows) * (part + 1) // parts
        self._rows = rows[lo:hi]
        self._labels = self._labels[lo:hi]
        self._pos = 0
        self._overflow = 0
        super().__init__(data_name, label_name)

    def _before_first(self) -> None:
        if not self._round or self._overflow == 0:
            self._pos = 0
        else:
            self._overflow = 0  # the wrap already started the new pass

    def _advance(self) -> bool:
        if self._overflow != 0:
            return False
        bs, n = self._batch_size, len(self._rows)
        take = list(range(self._pos, min(self._pos + bs, n)))
        self._pos += len(take)
        if not take:
            return False
        pad = 0
        if len(take) < bs:
            pad = bs - len(take)
            if self._round:
                if pad > n:
                    raise MXNetError(f"{self._who}: batch_size {bs} is too large for {n} rows "
                                     f"with round_batch=True")
                take += list(range(pad))
                self._pos, self._overflow = pad, pad
            else:  # MXNet pads with the first rows as well, without moving the next epoch
                take += [i % n for i in range(pad)]
        self._raw = (take, None, pad, np.asarray(take, dtype=np.uint64))
        return True

    def _load_current(self) -> bool:
        if not self._advance():
            return False
        take, _, pad, index = self._raw
        data = _csr_batch([self._rows[i] for i in take], self._width)
        if isinstance(self._labels, np.ndarray):
            label = _nd_array(self._labels[take], dtype="float32")
        else:
            label = _csr_batch([self._labels[i] for i in take], self._lwidth)
        self._cur = (data, label, int(pad), index)
        return True
