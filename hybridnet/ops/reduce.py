"""Reductions and orderings: sum/mean/prod/max/min/nansum/nanprod, norm, argmax/argmin,
argmax_channel, topk, sort, argsort, moments.

MXNet 1.x rules mirrored here:
- ``axis`` is an int, a tuple of ints or None; None or ``()`` reduces every axis; negative
  axes count from the end; ``exclude=True`` reduces every axis *not* listed.
- reducing every axis without ``keepdims`` gives shape ``(1,)`` (legacy MXNet has no 0-d arrays).
- argmax/argmin/argmax_channel return indices in the *input* dtype (float32 in, float32 out);
  topk/argsort return indices in their ``dtype`` attribute (float32 by default).
"""
from __future__ import annotations

from typing import Any, Callable, Literal, Optional, Sequence

import numpy as np
import torch

from ..base import MXNetError, dtype_torch
from .attrs import Axis, Dtype, OptInt
from .registry import Sample, register

_rng = np.random.RandomState(1)


# ---- axis helpers (shared with the other families of this package) ---------------------------
def norm_axis(axis: int, ndim: int, op: str, allow_end: bool = False) -> int:
    """A non-negative axis for ``ndim`` dims (``allow_end``: ``ndim`` itself is valid)."""
    hi = ndim + 1 if allow_end else ndim
    a = int(axis)
    if a < 0:
        a += hi
    if not 0 <= a < hi:
        raise MXNetError(f"{op}: axis {axis} is out of range for an array with {ndim} "
                         f"dimension(s); use an axis in [{-hi}, {hi - 1}]")
    return a


def as_tuple(value: Any) -> tuple:
    """An int, list or tuple as a tuple (None -> ())."""
    if value is None:
        return ()
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    return tuple(value)


def reduce_axes(axis: Any, ndim: int, exclude: bool, op: str) -> tuple:
    """The sorted axes MXNet's reduce operators reduce over (empty tuple: none)."""
    if axis is None or (isinstance(axis, (tuple, list)) and len(axis) == 0):
        return tuple(range(ndim))
    axes = [norm_axis(a, ndim, op) for a in as_tuple(axis)]
    if len(set(axes)) != len(axes):
        raise MXNetError(f"{op}: duplicate axes in axis={axis!r}")
    if exclude:
        return tuple(i for i in range(ndim) if i not in axes)
    return tuple(sorted(axes))


def _finish(out: torch.Tensor, x: torch.Tensor, axes: tuple, keepdims: bool) -> torch.Tensor:
    """Apply keepdims and the ``(1,)`` rule after reducing ``x`` over ``axes`` (kept dims)."""
    if not keepdims:
        if axes:
            out = out.squeeze(axes) if out.dim() else out
        if out.dim() == 0:
            out = out.reshape(1)
    return out


def _reduce(fn: Any, x: torch.Tensor, axis: Any, keepdims: bool, exclude: bool, op: str) -> torch.Tensor:
    axes = reduce_axes(axis, x.dim(), exclude, op)
    if x.dim() == 0:
        out = fn(x.reshape(1), (0,))
        return out.reshape(1) if not keepdims else out.reshape(())
    out = fn(x, axes) if axes else x
    return _finish(out, x, axes, keepdims)


def _sum(x: torch.Tensor, axes: tuple) -> torch.Tensor:
    out = torch.sum(x, dim=axes, keepdim=True)
    return out.to(x.dtype) if out.dtype != x.dtype and x.dtype != torch.bool else out


def _mean(x: torch.Tensor, axes: tuple) -> torch.Tensor:
    if x.is_floating_point():
        return torch.mean(x, dim=axes, keepdim=True)
    return torch.mean(x.double(), dim=axes, keepdim=True).to(x.dtype)


def _prod(x: torch.Tensor, axes: tuple) -> torch.Tensor:
    out = x
    for a in axes:
        out = torch.prod(out, dim=a, keepdim=True)
    return out.to(x.dtype) if out.dtype != x.dtype and x.dtype != torch.bool else out


def _max(x: torch.Tensor, axes: tuple) -> torch.Tensor:
    return torch.amax(x, dim=axes, keepdim=True)


def _min(x: torch.Tensor, axes: tuple) -> torch.Tensor:
    return torch.amin(x, dim=axes, keepdim=True)


def _nansum(x: torch.Tensor, axes: tuple) -> torch.Tensor:
    if not x.is_floating_point():
        return _sum(x, axes)
    return torch.sum(torch.where(torch.isnan(x), torch.zeros_like(x), x), dim=axes, keepdim=True)


def _nanprod(x: torch.Tensor, axes: tuple) -> torch.Tensor:
    if not x.is_floating_point():
        return _prod(x, axes)
    return _prod(torch.where(torch.isnan(x), torch.ones_like(x), x), axes)


# ---- NumPy references (independent of the kernels) -------------------------------------------
def _np_axes(ndim: int, axis: Any, exclude: bool) -> tuple:
    if axis is None or axis == () or axis == []:
        return tuple(range(ndim))
    ax = (axis,) if np.isscalar(axis) else tuple(axis)
    ax = tuple(a % ndim for a in ax)
    if exclude:
        ax = tuple(i for i in range(ndim) if i not in ax)
    return ax


def _np_reduce(fn: Any) -> Any:
    def ref(x: np.ndarray, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> np.ndarray:
        ax = _np_axes(x.ndim, axis, exclude)
        out = np.asarray(fn(x, axis=ax, keepdims=keepdims)).astype(x.dtype)
        return out.reshape(1) if out.ndim == 0 else out
    return ref


def _reduce_samples(ref: Any, lo: float = -2.0, hi: float = 2.0, nan: bool = False) -> Any:
    def samples() -> list:
        def x(shape: tuple) -> np.ndarray:
            a = _rng.uniform(lo, hi, size=shape)
            if nan:
                a.flat[[1, 3]] = np.nan
            return a
        out = [Sample((x((2, 3, 4)),), {}, ref=ref),
               Sample((x((2, 3, 4)),), {"axis": 1}, ref=ref),
               Sample((x((2, 3, 4)),), {"axis": (0, 2), "keepdims": True}, ref=ref),
               Sample((x((2, 3, 4)),), {"axis": -1}, ref=ref),
               Sample((x((2, 3, 4)),), {"axis": 1, "exclude": True}, ref=ref),
               Sample((x((3, 4)),), {"axis": (), "keepdims": True}, ref=ref),
               Sample((x((5,)),), {"axis": 0}, ref=ref)]
        if nan:  # finite differences through NaN are meaningless
            for s in out:
                s.grad = False
        return out
    return samples


def _reduce_shape(name: str) -> Callable:
    """The output shape of reduce operator ``name``: reduced axes removed (kept as 1 with
    ``keepdims``); a result with no axes is ``(1,)``, as in MXNet."""
    def rule(attrs: dict, shapes: list) -> Optional[list]:
        data = tuple(shapes[0])
        try:
            axes = reduce_axes(attrs["axis"], len(data), attrs["exclude"], name)
        except MXNetError:
            return None
        if not data:
            return [() if attrs["keepdims"] else (1,)]
        if attrs["keepdims"]:
            return [tuple(1 if i in axes else d for i, d in enumerate(data))]
        return [tuple(d for i, d in enumerate(data) if i not in axes) or (1,)]
    return rule


def _bool_sums_to_int64(attrs: dict, dtypes: list) -> list:
    """sum/prod of a boolean array count in int64 (torch's rule, which the kernels keep)."""
    return ["int64" if dtypes[0] == "bool" else dtypes[0]]


def _make_reduce(name: str, fn: Any, ref: Any, aliases: tuple = (), lo: float = -2.0, hi: float = 2.0,
                 nan: bool = False, doc: str = "") -> None:
    def kernel(data, *, axis: Axis = None, keepdims: bool = False, exclude: bool = False):  # type: ignore[no-untyped-def]
        return _reduce(fn, data, axis, keepdims, exclude, name)
    kernel.__name__ = name
    kernel.__doc__ = doc
    counts = fn in (_sum, _prod, _nansum, _nanprod)
    register(name, aliases=aliases, samples=_reduce_samples(ref, lo, hi, nan), hint=name,
             infer_shape=_reduce_shape(name), infer_type=_bool_sums_to_int64 if counts else None)(kernel)


_make_reduce("sum", _sum, _np_reduce(np.sum), ("sum_axis",), doc="Sum over the given axes (MXNet sum).")
_make_reduce("mean", _mean, _np_reduce(np.mean), doc="Mean over the given axes (MXNet mean).")
_make_reduce("prod", _prod, _np_reduce(np.prod), lo=0.5, hi=1.5, doc="Product over the given axes (MXNet prod).")
_make_reduce("max", _max, _np_reduce(np.max), ("max_axis",), doc="Maximum over the given axes (MXNet max).")
_make_reduce("min", _min, _np_reduce(np.min), ("min_axis",), doc="Minimum over the given axes (MXNet min).")
_make_reduce("nansum", _nansum, _np_reduce(np.nansum), nan=True,
             doc="Sum treating NaN as zero (MXNet nansum).")
_make_reduce("nanprod", _nanprod, _np_reduce(np.nanprod), lo=0.5, hi=1.5, nan=True,
             doc="Product treating NaN as one (MXNet nanprod).")


# ---- norm ------------------------------------------------------------------------------------
def _np_norm(x: np.ndarray, ord: int = 2, axis: Any = None, keepdims: bool = False,
             out_dtype: Any = None) -> np.ndarray:
    ax = _np_axes(x.ndim, axis, False)
    if ord == 1:
        out = np.sum(np.abs(x), axis=ax, keepdims=keepdims)
    else:
        out = np.sqrt(np.sum(x * x, axis=ax, keepdims=keepdims))
    out = np.asarray(out).astype(out_dtype or x.dtype)
    return out.reshape(1) if out.ndim == 0 else out


@register("norm", samples=lambda: [
    Sample((_rng.uniform(0.5, 2, (3, 4)),), {}, ref=_np_norm),
    Sample((_rng.uniform(-2, 2, (3, 4)),), {"ord": 1, "axis": 1}, ref=_np_norm),
    Sample((_rng.uniform(-2, 2, (2, 3, 4)),), {"ord": 2, "axis": (0, 2), "keepdims": True}, ref=_np_norm),
    Sample((_rng.uniform(-2, 2, (2, 3)),), {"axis": -1, "out_dtype": "float64"}, ref=_np_norm)])
def norm(data, *, ord: int = 2, axis: Axis = None, out_dtype: Dtype = None, keepdims: bool = False):
    """L1 (``ord=1``) or L2 (``ord=2``, Frobenius over several axes) norm (MXNet norm)."""
    if ord not in (1, 2):
        raise MXNetError(f"norm: ord={ord} is not supported; MXNet supports ord=1 and ord=2")
    if ord == 1:
        out = _reduce(lambda x, a: torch.sum(x.abs(), dim=a, keepdim=True), data, axis, keepdims, False, "norm")
    else:
        out = _reduce(lambda x, a: torch.sqrt(torch.sum(x * x, dim=a, keepdim=True)), data, axis,
                      keepdims, False, "norm")
    return out.to(dtype_torch(out_dtype)) if out_dtype is not None else out


# ---- arg reductions -------------------------------------------------------------------------
def _arg(data: torch.Tensor, axis: Optional[int], keepdims: bool, largest: bool, op: str) -> torch.Tensor:
    fn = torch.argmax if largest else torch.argmin
    x = data if data.dtype != torch.bool else data.to(torch.uint8)
    if axis is None or x.dim() <= 1:
        idx = fn(x.reshape(-1))
        if axis is not None:
            norm_axis(axis, max(x.dim(), 1), op)
        shape = (1,) * x.dim() if keepdims and x.dim() else (1,)
        return idx.reshape(shape).to(data.dtype)
    a = norm_axis(axis, x.dim(), op)
    return fn(x, dim=a, keepdim=bool(keepdims)).to(data.dtype)


def _np_arg(fn: Any) -> Any:
    def ref(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        if axis is None or x.ndim == 1:
            out = np.asarray(fn(x.reshape(-1))).reshape((1,) * x.ndim if keepdims else (1,))
        else:
            out = fn(x, axis=axis)
            if keepdims:
                out = np.expand_dims(out, axis)
        return out.astype(x.dtype)
    return ref


def _arg_samples(fn: Any) -> Any:
    ref = _np_arg(fn)
    return lambda: [Sample((_rng.permutation(24).reshape(2, 3, 4).astype(np.float64),), {"axis": 1}, ref=ref),
                    Sample((_rng.permutation(24).reshape(2, 3, 4).astype(np.float64),), {}, ref=ref),
                    Sample((_rng.permutation(12).reshape(3, 4).astype(np.float64),),
                           {"axis": -1, "keepdims": True}, ref=ref),
                    Sample((_rng.permutation(12).reshape(3, 4).astype(np.float64),),
                           {"keepdims": True}, ref=ref),
                    Sample((_rng.permutation(5).astype(np.float64),), {"axis": 0}, ref=ref)]


@register("argmax", differentiable=False, samples=_arg_samples(np.argmax))
def argmax(data, *, axis: OptInt = None, keepdims: bool = False):
    """Index of the maximum along ``axis`` (None: of the flattened array), in data's dtype."""
    return _arg(data, axis, keepdims, True, "argmax")


@register("argmin", differentiable=False, samples=_arg_samples(np.argmin))
def argmin(data, *, axis: OptInt = None, keepdims: bool = False):
    """Index of the minimum along ``axis`` (None: of the flattened array), in data's dtype."""
    return _arg(data, axis, keepdims, False, "argmin")


@register("argmax_channel", differentiable=False, samples=lambda: [
    Sample((_rng.permutation(12).reshape(3, 4).astype(np.float64),),
           ref=lambda x: np.argmax(x, axis=1).astype(x.dtype)),
    Sample((_rng.permutation(24).reshape(2, 3, 4).astype(np.float64),),
           ref=lambda x: np.argmax(x, axis=1).astype(x.dtype))])
def argmax_channel(data):
    """argmax along axis 1 (MXNet's legacy argmax_channel), in data's dtype."""
    return _arg(data, 1, False, True, "argmax_channel")


# ---- topk / sort / argsort -------------------------------------------------------------------
def _flat_axis(data: torch.Tensor, axis: Optional[int], op: str) -> tuple[torch.Tensor, int]:
    if axis is None:
        return data.reshape(-1), 0
    return data, norm_axis(axis, data.dim(), op)


def _topk_outputs(attrs: dict) -> int:
    return 2 if attrs.get("ret_typ", "indices") == "both" else 1


@register("topk", num_outputs=_topk_outputs, samples=lambda: [
    Sample((_rng.permutation(24).reshape(2, 3, 4) / 7.0,), {"k": 2}, ref=_np_topk, grad=False),
    Sample((_rng.permutation(24).reshape(2, 3, 4) / 7.0,), {"k": 2, "ret_typ": "value", "axis": 1}, ref=_np_topk),
    Sample((_rng.permutation(24).reshape(2, 3, 4) / 7.0,), {"k": 3, "ret_typ": "both", "is_ascend": True},
           ref=_np_topk),
    Sample((_rng.permutation(12).reshape(3, 4) / 7.0,), {"k": 2, "ret_typ": "mask", "axis": 0}, ref=_np_topk,
           grad=False),
    Sample((_rng.permutation(12).reshape(3, 4) / 7.0,), {"k": 3, "axis": None, "ret_typ": "both",
                                                          "dtype": "int32"}, ref=_np_topk),
    Sample((_rng.permutation(12).reshape(3, 4) / 7.0,), {"k": 0, "ret_typ": "value"}, ref=_np_topk)])
def topk(data, *, axis: OptInt = -1, k: int = 1,
         ret_typ: Literal["value", "indices", "mask", "both"] = "indices", is_ascend: bool = False,
         dtype: Dtype = "float32"):
    """The k largest (``is_ascend=False``) or smallest entries along ``axis`` (None: flattened).

    ``ret_typ``: 'value', 'indices' (in ``dtype``), 'mask' (1 where selected, data's dtype) or
    'both' (values, indices). ``k < 1`` selects the whole axis (a full sort), as MXNet does."""
    x, a = _flat_axis(data, axis, "topk")
    n = x.shape[a]
    kk = n if k < 1 else k
    if kk > n:
        raise MXNetError(f"topk: k={k} is larger than the size {n} of axis {axis} of the input "
                         f"{tuple(data.shape)}; use k <= {n}")
    values, indices = torch.topk(x, kk, dim=a, largest=not is_ascend, sorted=True)
    if ret_typ == "value":
        return values
    if ret_typ == "mask":
        mask = torch.zeros_like(x).scatter(a, indices, torch.ones_like(values))
        return mask.reshape(data.shape)
    idx = indices.to(dtype_torch(dtype or "float32"))
    if ret_typ == "indices":
        return idx
    return values, idx


def _np_topk(x: np.ndarray, axis: Any = -1, k: int = 1, ret_typ: str = "indices", is_ascend: bool = False,
             dtype: Any = "float32") -> Any:
    src = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis % x.ndim
    order = np.argsort(src if is_ascend else -src, axis=ax, kind="stable")
    kk = src.shape[ax] if k < 1 else k
    idx = np.take(order, np.arange(kk), axis=ax)
    vals = np.take_along_axis(src, idx, axis=ax)
    if ret_typ == "value":
        return vals
    if ret_typ == "mask":
        m = np.zeros_like(src)
        np.put_along_axis(m, idx, 1, axis=ax)
        return m.reshape(x.shape)
    if ret_typ == "indices":
        return idx.astype(dtype or "float32")
    return vals, idx.astype(dtype or "float32")


@register("sort", samples=lambda: [
    Sample((_rng.permutation(24).reshape(2, 3, 4) / 5.0,), {}, ref=_np_sort),
    Sample((_rng.permutation(24).reshape(2, 3, 4) / 5.0,), {"axis": 1, "is_ascend": False}, ref=_np_sort),
    Sample((_rng.permutation(12).reshape(3, 4) / 5.0,), {"axis": None}, ref=_np_sort)])
def sort(data, *, axis: OptInt = -1, is_ascend: bool = True):
    """Values sorted along ``axis`` (None: the flattened array)."""
    x, a = _flat_axis(data, axis, "sort")
    return torch.sort(x, dim=a, descending=not is_ascend)[0]


def _np_sort(x: np.ndarray, axis: Any = -1, is_ascend: bool = True) -> np.ndarray:
    out = np.sort(x.reshape(-1) if axis is None else x, axis=0 if axis is None else axis)
    return out if is_ascend else np.flip(out, axis=0 if axis is None else axis)


def _np_argsort(x: np.ndarray, axis: Any = -1, is_ascend: bool = True, dtype: Any = "float32") -> np.ndarray:
    src = x.reshape(-1) if axis is None else x
    return np.argsort(src if is_ascend else -src, axis=0 if axis is None else axis).astype(dtype)


@register("argsort", differentiable=False, samples=lambda: [
    Sample((_rng.permutation(24).reshape(2, 3, 4) / 5.0,), {}, ref=_np_argsort),
    Sample((_rng.permutation(24).reshape(2, 3, 4) / 5.0,), {"axis": 0, "is_ascend": False}, ref=_np_argsort),
    Sample((_rng.permutation(12).reshape(3, 4) / 5.0,), {"axis": None, "dtype": "int64"}, ref=_np_argsort)])
def argsort(data, *, axis: OptInt = -1, is_ascend: bool = True, dtype: Dtype = "float32"):
    """Indices that sort ``data`` along ``axis`` (None: flattened), in ``dtype``."""
    x, a = _flat_axis(data, axis, "argsort")
    return torch.argsort(x, dim=a, descending=not is_ascend).to(dtype_torch(dtype or "float32"))


# ---- moments ---------------------------------------------------------------------------------
def _np_moments(x: np.ndarray, axes: Any = None, keepdims: bool = False) -> tuple:
    ax = _np_axes(x.ndim, axes, False)
    m = np.mean(x, axis=ax, keepdims=keepdims)
    v = np.var(x, axis=ax, keepdims=keepdims)
    return tuple(np.asarray(o).reshape(1) if np.ndim(o) == 0 else o for o in (m, v))


@register("moments", num_outputs=2, output_names=("mean", "var"), samples=lambda: [
    Sample((_rng.uniform(-2, 2, (2, 3, 4)),), {"axes": (0, 2)}, ref=_np_moments),
    Sample((_rng.uniform(-2, 2, (2, 3, 4)),), {"axes": 1, "keepdims": True}, ref=_np_moments),
    Sample((_rng.uniform(-2, 2, (3, 4)),), {}, ref=_np_moments)])
def moments(data, *, axes: Axis = None, keepdims: bool = False):
    """Mean and (population) variance over ``axes`` (None: all), MXNet moments."""
    ax = reduce_axes(axes, data.dim(), False, "moments")
    mean = torch.mean(data, dim=ax, keepdim=True)
    var = torch.mean((data - mean) ** 2, dim=ax, keepdim=True)
    return _finish(mean, data, ax, keepdims), _finish(var, data, ax, keepdims)


__all__: Sequence[str] = ["norm_axis", "as_tuple", "reduce_axes"]


# ---- cumsum ----------------------------------------------------------------------------------
@register("_np_cumsum", aliases=("cumsum",), samples=lambda: [
    Sample((_rng.uniform(-1, 1, (3, 4)),), {"axis": 1}, ref=lambda a, axis=None, dtype=None: np.cumsum(a, axis)),
    Sample((_rng.uniform(-1, 1, (3, 4)),), {}, ref=lambda a, axis=None, dtype=None: np.cumsum(a, axis)),
    Sample((_rng.uniform(-1, 1, (2, 3)),), {"axis": -2, "dtype": "float64"},
           ref=lambda a, axis=None, dtype=None: np.cumsum(a, axis).astype(dtype)),
    Sample((np.array([True, False, True, True]),), {}, ref=lambda a, axis=None, dtype=None: np.cumsum(a),
           grad=False)])  # bool counts in int64
def _np_cumsum(a, *, axis: OptInt = None, dtype: Dtype = None):
    """Cumulative sum along ``axis`` (None: of the flattened array), in ``dtype`` or a's dtype."""
    x = a.reshape(-1) if axis is None else a
    dim = 0 if axis is None else norm_axis(axis, a.dim(), "cumsum")
    odt = dtype_torch(dtype) if dtype is not None else (torch.int64 if x.dtype == torch.bool else x.dtype)
    if odt == torch.float16 and x.dim() and x.shape[dim] > 1:
        # MXNet (as NumPy) adds float16 one element at a time, rounding after every step;
        # torch would accumulate in float32 and round once
        parts = x.to(odt).unbind(dim)
        acc = [parts[0]]
        for p in parts[1:]:
            acc.append(acc[-1] + p)
        return torch.stack(acc, dim)
    return torch.cumsum(x, dim=dim, dtype=odt)
