"""Batchify functions (MXNet's ``gluon.data.batchify``): turn a list of samples into a batch."""
from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from ...base import dtype_name
from ...np_semantics import is_np_array
from ... import ndarray as _nd
from ...ndarray import NDArray
from ...ndarray import array as _nd_array

__all__ = ["Stack", "Pad", "Append", "Group", "Tuple", "AsList", "stack_arrays"]


def np_mode_batch(batch: Any) -> Any:
    """A batch as MXNet's batchify functions give it under ``npx.set_np()``: every dense NDArray
    (also inside lists, tuples and dicts) as an ``mx.np.ndarray`` over the same memory; the batch
    unchanged otherwise."""
    if not is_np_array():
        return batch
    return _to_np(batch)


def _to_np(x: Any) -> Any:
    if isinstance(x, NDArray):
        return x.as_np_ndarray() if x.stype == "default" else x
    if isinstance(x, (list, tuple)):
        return x.__class__(_to_np(v) for v in x)
    if isinstance(x, dict):
        return {k: _to_np(v) for k, v in x.items()}
    return x


def stack_arrays(arrays: Sequence[NDArray]) -> NDArray:
    """Stack NDArrays of equal shape along a new axis 0 (``nd.stack(*arrays)``)."""
    first = arrays[0]
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            raise TypeError(f"batchify: sample {i} is a {type(a).__name__} while sample 0 is an "
                            f"NDArray; samples of one field must have one type")
        if a.shape != first.shape:
            raise ValueError(f"batchify: cannot stack samples of different shapes: sample 0 has "
                             f"shape {first.shape}, sample {i} has {a.shape}; resize them in a "
                             f"transform, or use batchify.Pad / batchify.Append")
    return np_mode_batch(_nd.stack(*arrays))


def _np_batch(data: Sequence) -> NDArray:
    arr = np.asarray(data)
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise TypeError(f"batchify: cannot make an array from samples of type "
                        f"{type(data[0]).__name__} (ragged or non-numeric; NumPy gives dtype "
                        f"{arr.dtype}); use batchify.Pad, batchify.AsList or a custom batchify_fn")
    if arr.dtype.name not in ("float32", "float64", "float16", "uint8", "int32", "int8", "int64",
                              "bool", "int16"):
        arr = arr.astype(np.int64 if arr.dtype.kind in "iu" else np.float32)
    return np_mode_batch(_nd_array(arr, dtype=arr.dtype))


def _is_record(sample: Any) -> bool:
    """A sample made of fields batched separately: a tuple, or a list holding NDArrays/tuples
    (a plain list of numbers is one array-like field, as in MXNet)."""
    if isinstance(sample, tuple):
        return True
    return isinstance(sample, list) and any(isinstance(x, (NDArray, tuple)) for x in sample)


class Stack:
    """Stack samples of equal shape: NDArrays with ``nd.stack``, NumPy arrays/lists/numbers
    through ``np.asarray`` (keeping their dtype); tuples/lists of fields are stacked per field."""

    def __init__(self, use_shared_mem: bool = False):
        self._use_shared_mem = use_shared_mem

    def __call__(self, data: Sequence) -> Any:
        first = data[0]
        if isinstance(first, NDArray):
            return stack_arrays(data)
        if _is_record(first):
            return [self(list(field)) for field in zip(*data)]
        return _np_batch(data)


class Pad:
    """Pad samples to the largest shape in the batch with ``pad_val``, then stack.

    ``axis`` is the (variable-length) axis reported by ``ret_length=True`` and rounded up to a
    multiple of ``round_to``; other axes are padded to their maximum too. ``dtype`` defaults
    to the samples' dtype. ``val`` is MXNet 2's spelling of ``pad_val``.
    """

    def __init__(self, axis: int = 0, pad_val: Optional[float] = None, ret_length: bool = False,
                 dtype: Any = None, round_to: Optional[int] = None, use_shared_mem: bool = False,
                 val: Optional[float] = None):
        if not isinstance(axis, int):
            raise TypeError(f"Pad: axis must be an integer, got {axis!r} ({type(axis).__name__})")
        self._axis = axis
        self._pad_val = pad_val if pad_val is not None else (val if val is not None else 0)
        self._ret_length = ret_length
        self._dtype = dtype
        self._round_to = round_to
        self._use_shared_mem = use_shared_mem

    def __call__(self, data: Sequence) -> Any:
        first = data[0]
        if isinstance(first, NDArray):
            arrs = [a.asnumpy() for a in data]
            dtype = first.dtype
        elif isinstance(first, np.ndarray):
            arrs = list(data)
            dtype = first.dtype
        elif isinstance(first, (list, tuple)) and not any(isinstance(x, (NDArray, np.ndarray, list, tuple))
                                                          for x in first):
            arrs = [np.asarray(a) for a in data]
            dtype = arrs[0].dtype
        else:
            raise NotImplementedError("Pad() does not support multiple items, use "
                                      "Group(Pad(), Pad(), ...) instead")
        if self._dtype is not None:
            dtype = np.dtype(dtype_name(self._dtype))
        ndim = arrs[0].ndim
        for i, a in enumerate(arrs):
            if a.ndim != ndim:
                raise ValueError(f"Pad: all samples need the same number of dimensions; sample 0 "
                                 f"has {ndim}, sample {i} has {a.ndim}")
        if ndim == 0:
            raise ValueError("Pad: samples are scalars; there is nothing to pad (use Stack)")
        axis = self._axis if self._axis >= 0 else self._axis + ndim
        if not 0 <= axis < ndim:
            raise ValueError(f"Pad: axis {self._axis} is out of range for {ndim}-d samples")
        shape = [max(a.shape[d] for a in arrs) for d in range(ndim)]
        if self._round_to:
            shape[axis] = int(self._round_to * math.ceil(shape[axis] / self._round_to))
        out = np.full([len(arrs)] + shape, self._pad_val, dtype=dtype)
        for i, a in enumerate(arrs):
            out[(i,) + tuple(slice(0, s) for s in a.shape)] = a
        padded = np_mode_batch(_nd_array(out, dtype=out.dtype))
        if self._ret_length:
            lengths = np.array([a.shape[axis] for a in arrs], dtype=np.int32)
            return padded, np_mode_batch(_nd_array(lengths, dtype="int32"))
        return padded


class Append:
    """A list of the samples as NDArrays (shapes may differ), each with a batch axis of size 1
    inserted at ``batch_axis`` when ``expand``."""

    def __init__(self, expand: bool = True, batch_axis: int = 0, use_shared_mem: bool = False):
        self._expand = expand
        self._batch_axis = batch_axis
        self._use_shared_mem = use_shared_mem

    def __call__(self, data: Sequence) -> List[NDArray]:
        out = [x if isinstance(x, NDArray) else _nd_array(np.asarray(x), dtype=np.asarray(x).dtype)
               for x in data]
        if self._expand:
            out = [NDArray(x._t.unsqueeze(self._batch_axis)) for x in out]
        return np_mode_batch(out)  # type: ignore[no-any-return]


class Group:
    """Apply the i-th batchify function to the i-th field of every sample; returns a tuple.
    ``Group(f, g)`` or ``Group([f, g])``. ``Tuple`` is GluonNLP's/GluonCV's name for it."""

    def __init__(self, fn: Any, *args: Callable):
        if isinstance(fn, (list, tuple)):
            if args:
                raise ValueError(f"Input pattern not understood. The input of Group can be "
                                 f"Group(A, B, C) or Group([A, B, C]) or Group((A, B, C)). "
                                 f"Received fn={fn}, args={args}")
            self._fn = tuple(fn)
        else:
            self._fn = (fn,) + args
        for i, f in enumerate(self._fn):
            if not callable(f):
                raise TypeError(f"Batchify functions must be callable! type(fn[{i}]) = {type(f)}")

    def __call__(self, data: Sequence) -> tuple:
        if len(data[0]) != len(self._fn):
            raise ValueError(f"The number of attributes in each data sample should contain "
                             f"{len(self._fn)} elements (one per batchify function), got "
                             f"{len(data[0])}")
        return tuple(f([sample[i] for sample in data]) for i, f in enumerate(self._fn))


Tuple = Group


class AsList:
    """Return the samples unchanged, as a list (for strings and other non-array fields)."""

    def __call__(self, data: Sequence) -> list:
        return list(data)
