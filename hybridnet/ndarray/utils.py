"""Hand-written ``mx.nd`` functions that MXNet implements in Python (creation, save/load...)."""
from __future__ import annotations

import os
from typing import Any, Optional, Union

import numpy as np
import torch

from ..base import MXNetError, dtype_name
from ..context import Context, current_context
from ..np_semantics import is_np_shape
from ..ops import frontend as _frontend
from ..ops import registry as _reg
from .ndarray import (NDArray, _device, placed, from_dlpack, from_numpy, invoke,
                      scalar_invoke, to_dlpack_for_read, to_dlpack_for_write)
from .write_guard import guard_of, holding, ordered

__all__ = ["zeros", "ones", "full", "empty", "arange", "eye", "linspace", "save", "load",
           "load_frombuffer", "concatenate", "moveaxis", "onehot_encode", "from_numpy",
           "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"] + list(_frontend.MIXED)


def _ctx(ctx: Optional[Context]) -> Context:
    ctx = ctx if ctx is not None else current_context()
    _device(ctx)  # clear error for a GPU context on a machine without one
    return ctx


def _dt(dtype: Any) -> str:
    return dtype_name(dtype) if dtype is not None else "float32"


def _creation_attrs(kwargs: dict) -> dict:
    """Extra keyword arguments of nd.zeros/ones: ``name``, ``attr`` and hidden ``__key__``
    attributes (``__layout__``) describe graph nodes and mean nothing for NDArrays (MXNet accepts
    and drops them); anything else goes to the operator, which rejects what it does not know."""
    return {k: v for k, v in kwargs.items()
            if k not in ("name", "attr") and not (k.startswith("__") and k.endswith("__"))}


def _known_shape(shape: Any, fn: str) -> None:
    """MXNet's legacy shape semantics (outside ``mx.np_shape()``): 0 means an unknown dimension
    and () an unknown shape, so creating such an array is an error there."""
    from ..np_semantics import is_np_shape
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not is_np_shape() and (len(dims) == 0 or any(int(d) == 0 for d in dims)):
        raise MXNetError(f"nd.{fn}(shape={tuple(dims)}): in MXNet's legacy shape semantics 0 is an "
                         "unknown dimension and () an unknown shape; create scalar or zero-size "
                         "arrays inside `with mx.np_shape(True):`")


def zeros(shape: Any, ctx: Optional[Context] = None, dtype: Any = None, stype: Optional[str] = None,
          out: Optional[NDArray] = None, **kwargs: Any) -> NDArray:
    """Array of zeros (MXNet ``nd.zeros(shape, ctx=None, dtype=None)``; float32 by default),
    written into ``out`` when given."""
    if stype not in (None, "default"):
        from . import sparse as _sparse
        return _sparse.zeros(stype, shape, ctx, dtype, out=out, **kwargs)
    _known_shape(shape, "zeros")
    attrs = {"shape": shape, "ctx": _ctx(ctx), "dtype": _dt(dtype), **_creation_attrs(kwargs)}
    if out is not None:
        return invoke(_reg.get("_zeros"), (), attrs, out=out)
    return placed(invoke(_reg.get("_zeros"), (), attrs), ctx)


def ones(shape: Any, ctx: Optional[Context] = None, dtype: Any = None, out: Optional[NDArray] = None,
         **kwargs: Any) -> NDArray:
    """Array of ones (float32 by default), written into ``out`` when given."""
    _known_shape(shape, "ones")
    attrs = {"shape": shape, "ctx": _ctx(ctx), "dtype": _dt(dtype), **_creation_attrs(kwargs)}
    if out is not None:
        return invoke(_reg.get("_ones"), (), attrs, out=out)
    return placed(invoke(_reg.get("_ones"), (), attrs), ctx)


def full(shape: Any, val: float, ctx: Optional[Context] = None, dtype: Any = None, out: Any = None) -> NDArray:
    """Array filled with ``val`` (written into ``out`` when given)."""
    if out is not None:
        out[:] = val
        return out
    return placed(invoke(_reg.get("_full"), (), {"shape": shape, "value": val, "ctx": _ctx(ctx),
                                                 "dtype": _dt(dtype)}), ctx)


def empty(shape: Any, ctx: Optional[Context] = None, dtype: Any = None, stype: Optional[str] = None) -> NDArray:
    """Uninitialised memory in MXNet; zeros here (reproducible, and as cheap on torch). A sparse
    ``stype`` gives an array with nothing stored."""
    return zeros(shape, ctx, dtype, stype=stype)


def arange(start: float, stop: Optional[float] = None, step: float = 1.0, repeat: int = 1,
           infer_range: Any = None, ctx: Optional[Context] = None, dtype: Any = "float32") -> NDArray:
    """Evenly spaced values in [start, stop) (``nd.arange(5)`` is 0..4), float32 by default."""
    return placed(invoke(_reg.get("_arange"), (), {"start": start, "stop": stop, "step": step,
                                                   "repeat": repeat, "ctx": _ctx(ctx), "dtype": _dt(dtype)}), ctx)


def eye(N: int, M: int = 0, k: int = 0, ctx: Optional[Context] = None, dtype: Any = "float32",
        **kwargs: Any) -> NDArray:
    """2-D array with ones on the k-th diagonal."""
    return invoke(_reg.get("_eye"), (), {"N": N, "M": M, "k": k, "ctx": _ctx(ctx), "dtype": _dt(dtype)})


def linspace(start: float, stop: float, num: int, endpoint: bool = True, ctx: Optional[Context] = None,
             dtype: Any = "float32") -> NDArray:
    """``num`` evenly spaced values from start to stop."""
    return invoke(_reg.get("_linspace"), (), {"start": start, "stop": stop, "num": num,
                                              "endpoint": endpoint, "ctx": _ctx(ctx), "dtype": _dt(dtype)})


def concatenate(arrays: list, axis: int = 0, always_copy: bool = True) -> NDArray:
    """Join arrays along an existing ``axis`` (MXNet's Python ``nd.concatenate``, a front-end
    over the registered ``Concat``); with ``always_copy=False`` a single array is returned
    as is."""
    arrays = list(arrays)
    if not arrays:
        raise MXNetError("concatenate: need at least one array")
    if not all(isinstance(a, NDArray) for a in arrays):
        raise TypeError(f"concatenate: expected a list of NDArrays, got "
                        f"{[type(a).__name__ for a in arrays]}")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return invoke(_reg.get("Concat"), tuple(arrays), {"dim": axis})


def _axes(value: Any, ndim: int, what: str) -> tuple:
    """``value`` (an int or a sequence of ints) as distinct axes in [0, ndim); ValueError otherwise."""
    axes = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise ValueError(f"moveaxis: {what} axis {a!r} is out of range for an array with {ndim} "
                             f"dimensions (valid: {-ndim} to {ndim - 1})")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"moveaxis: repeated axis in {what} {value!r}")
    return tuple(out)


def moveaxis(tensor: NDArray, source: Any, destination: Any) -> NDArray:
    """Move axes ``source`` to positions ``destination`` (ints or sequences; a new array): the
    registered ``transpose`` with the permutation NumPy's moveaxis would use."""
    src = _axes(source, tensor.ndim, "source")
    dst = _axes(destination, tensor.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} must have the "
                         f"same number of elements")
    order = [a for a in range(tensor.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return invoke(_reg.get("transpose"), (tensor,), {"axes": tuple(order)})


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """[Deprecated in MXNet; use one_hot] Write the one-hot rows of ``indices`` into ``out``
    (N, depth) and return it: the registered ``_onehot_encode``."""
    return invoke(_reg.get("_onehot_encode"), (indices, out), {}, out=out)


def _to_numpy_for_save(a: NDArray) -> Any:
    """The record of ``a`` for formats.params: a NumPy array, or a SparseRecord for sparse arrays."""
    from ..base import BFLOAT16_NP
    t = a._t.detach().cpu()
    if t.layout is not torch.strided:
        from ..formats.params import SparseRecord
        from ..ops import storage as _storage
        if t.layout is torch.sparse_csr:
            data, indices, indptr = _storage.csr_parts(t)
            return SparseRecord("csr", tuple(t.shape), _to_numpy_for_save(NDArray(data.contiguous())),
                                (indptr.numpy().astype(np.int64), indices.numpy().astype(np.int64)))
        data, indices = _storage.rsp_parts(_storage.to_rsp(t))
        return SparseRecord("row_sparse", tuple(t.shape), _to_numpy_for_save(NDArray(data.contiguous())),
                            (indices.numpy().astype(np.int64),))
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).view(BFLOAT16_NP)
    return t.numpy()


def _from_numpy_loaded(a: Any) -> NDArray:
    from ..base import BFLOAT16_NP
    from ..formats.params import SparseRecord
    if isinstance(a, SparseRecord):
        from . import sparse as _sparse
        from ..ops import storage as _storage
        data = _from_numpy_loaded(a.data)._t
        aux = [torch.from_numpy(np.ascontiguousarray(x, dtype=np.int64)) for x in a.aux]
        if a.stype == "csr":
            return _sparse.CSRNDArray(_storage.csr(data, aux[1], aux[0], a.shape))
        return _sparse.RowSparseNDArray(_storage.rsp(data, aux[0], a.shape))
    if a.dtype == BFLOAT16_NP:
        t = torch.from_numpy(a.view(np.uint16).astype(np.int16)).view(torch.bfloat16)
        return NDArray(t)
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one)
    return NDArray(torch.from_numpy(np.require(a, requirements="C")))


def save(fname: Union[str, os.PathLike], data: Any) -> None:
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray in MXNet's format (atomic)."""
    from ..formats import params as _params
    if isinstance(data, NDArray):
        names, arrays = None, [data]
    elif isinstance(data, dict):
        for k, v in data.items():
            if not isinstance(k, str) or not isinstance(v, NDArray):
                raise TypeError("save: a dict must map str to NDArray")
        names, arrays = list(data.keys()), list(data.values())
    elif isinstance(data, (list, tuple)):
        if not all(isinstance(v, NDArray) for v in data):
            raise TypeError("save: a list must contain only NDArrays")
        names, arrays = None, list(data)
    else:
        raise TypeError(f"save: data must be an NDArray, list or dict, got {type(data).__name__}")
    with holding(ordered(guard_of(a) for a in arrays)):  # weights: after a step in progress
        _params.save(fname, [_to_numpy_for_save(a) for a in arrays], names, np_shape=is_np_shape())


def _wrap_loaded(names: Optional[list], arrays: list, ctx: Optional[Context]) -> Any:
    nds = [_from_numpy_loaded(a) for a in arrays]
    if ctx is not None:
        nds = [a.as_in_context(ctx) for a in nds]
    if names is None:
        return nds
    return dict(zip(names, nds))


def load(fname: Union[str, os.PathLike], ctx: Optional[Context] = None) -> Any:
    """Load arrays saved by ``save`` or by MXNet: a list, or a dict when the file has names.

    As in MXNet, a file saved under ``mx.np_shape()`` loads only under it, and a file saved
    outside it with zero-size dimensions only outside it."""
    from ..formats import params as _params
    names, arrays = _params.load(fname, np_shape=is_np_shape(), sparse=True)
    return _wrap_loaded(names, arrays, ctx)


def load_frombuffer(buf: bytes, ctx: Optional[Context] = None) -> Any:
    from ..formats import params as _params
    names, arrays = _params.loads(bytes(buf), np_shape=is_np_shape(), sparse=True)
    return _wrap_loaded(names, arrays, ctx)


def _install_mixed() -> None:
    funcs = {name: _make(name) for name in {n for t in _frontend.MIXED.values() for n in t}}
    for fname in _frontend.MIXED:
        globals()[fname] = _frontend.make_mixed(fname, funcs, lambda x: isinstance(x, NDArray))


def _make(opname: str) -> Any:
    op = _reg.get(opname)
    if op.attrs.get("scalar") is not None:
        return lambda data, scalar: scalar_invoke(op, data, scalar.item() if isinstance(scalar, np.generic) else scalar)
    return lambda lhs, rhs: invoke(op, (lhs, rhs), {})


_install_mixed()
