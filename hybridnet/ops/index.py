"""Indexing: one_hot, pick, take, batch_take, gather_nd, scatter_nd, where, ravel/unravel,
and the contrib index_array / index_copy / boolean_mask operators.

Index inputs arrive as float arrays (MXNet's convention) and are truncated to integers inside
the kernels; gradients flow to the data inputs only.
"""
from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch

from ..base import DeferredError, MXNetError, MXNetIndexError, dtype_torch
from .attrs import AnyValue, Axis, Dtype, OptInt, Shape
from .reduce import as_tuple, norm_axis
from .registry import Sample, register
from .shape_rules import first_input_dtype, unknown_until_inputs_known

_rng = np.random.RandomState(4)


def _u(*shape: int) -> np.ndarray:
    return _rng.uniform(-1, 1, size=shape)


def _idx(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == torch.int64 else t.to(torch.int64)


def _real(t: torch.Tensor) -> bool:
    return t.device.type != "meta"


def _fix_index(idx: torch.Tensor, n: int, mode: str, op: str) -> torch.Tensor:
    if mode == "wrap":
        return torch.remainder(idx, n)
    if mode == "raise":
        if _real(idx) and idx.numel() and (bool((idx < 0).any()) or bool((idx >= n).any())):
            raise MXNetError(f"{op}: index out of range [0, {n}) with mode='raise'; use mode='clip' or 'wrap'")
        return idx
    return idx.clamp(0, n - 1)


# ---- one_hot ---------------------------------------------------------------------------------
def _np_one_hot(i: np.ndarray, depth: int, on_value: float = 1.0, off_value: float = 0.0,
                dtype: Any = "float32") -> np.ndarray:
    ii = i.astype(np.int64)
    out = np.full(i.shape + (depth,), off_value, dtype=dtype)
    for pos in np.ndindex(*i.shape):
        if 0 <= ii[pos] < depth:
            out[pos + (ii[pos],)] = on_value
    return out


@register("one_hot", differentiable=False, samples=lambda: [
    Sample((np.array([1.0, 0.0, 2.0, 0.0]),), {"depth": 3}, ref=_np_one_hot),
    Sample((np.array([[1.0, 3.0], [0.0, 2.0]]),), {"depth": 4, "on_value": 8.0, "off_value": 1.0,
                                                   "dtype": "int32"}, ref=_np_one_hot),
    Sample((np.array([1.0, 5.0, -1.0]),), {"depth": 3}, ref=_np_one_hot)])
def one_hot(indices, *, depth: int, on_value: float = 1.0, off_value: float = 0.0, dtype: Dtype = "float32"):
    """One-hot encoding along a new last axis of size ``depth`` (out-of-range -> all off)."""
    idx = _idx(indices)
    hot = idx.unsqueeze(-1) == torch.arange(depth, device=indices.device)
    dt = dtype_torch(dtype or "float32")
    return torch.where(hot, torch.tensor(on_value, dtype=dt, device=indices.device),
                       torch.tensor(off_value, dtype=dt, device=indices.device))


# ---- pick ------------------------------------------------------------------------------------
def _np_pick(x: np.ndarray, index: np.ndarray, axis: int = -1, keepdims: bool = False,
             mode: str = "clip") -> np.ndarray:
    ax = axis % x.ndim
    n = x.shape[ax]
    i = index.astype(np.int64)
    i = np.clip(i, 0, n - 1) if mode == "clip" else np.mod(i, n)
    if i.ndim == x.ndim:
        i = np.squeeze(i, ax)
    out = np.zeros(i.shape)
    for pos in np.ndindex(*i.shape):
        full = pos[:ax] + (i[pos],) + pos[ax:]
        out[pos] = x[full]
    if keepdims:
        out = np.expand_dims(out, ax)
    return out.reshape(1) if out.ndim == 0 else out.astype(x.dtype)


@register("pick", aliases=("choose_element_0index",), samples=lambda: [
    Sample((_u(3, 4), np.array([0.0, 3.0, 1.0])), {"axis": 1}, ref=_np_pick, grad_inputs=(0,)),
    Sample((_u(3, 4), np.array([2.0, 0.0, 1.0, 1.0])), {"axis": 0, "keepdims": True}, ref=_np_pick,
           grad_inputs=(0,)),
    Sample((_u(3, 4), np.array([[5.0], [-1.0], [1.0]])), {}, ref=_np_pick, grad_inputs=(0,)),
    Sample((_u(3, 4), np.array([5.0, -1.0, -6.0])), {"mode": "wrap"}, ref=_np_pick, grad_inputs=(0,)),
    Sample((_u(2, 3, 4), np.array([[0.0, 1.0, 2.0, 1.0], [2.0, 2.0, 0.0, 1.0]])), {"axis": -2}, ref=_np_pick,
           grad_inputs=(0,))])
def pick(data, index, *, axis: OptInt = -1, keepdims: bool = False, mode: Literal["wrap", "clip"] = "clip"):
    """out[i..., k...] = data[i..., index[i..., k...], k...] along ``axis`` (index has data's shape
    without ``axis``, or with it of size 1)."""
    if axis is None:
        raise MXNetError("pick: axis=None is not supported (as in MXNet); give an axis")
    ax = norm_axis(axis, data.dim(), "pick")
    n = data.shape[ax]
    idx = _fix_index(_idx(index), n, mode, "pick")
    if idx.dim() == data.dim() - 1:
        idx = idx.unsqueeze(ax)
    if idx.dim() != data.dim():
        raise MXNetError(f"pick: index shape {tuple(index.shape)} does not fit data {tuple(data.shape)} on axis {axis}")
    out = data.gather(ax, idx)
    if not keepdims:
        out = out.squeeze(ax)
        if out.dim() == 0:
            out = out.reshape(1)
    return out


# ---- take ------------------------------------------------------------------------------------
def _np_take(a: np.ndarray, indices: np.ndarray, axis: int = 0, mode: str = "clip") -> np.ndarray:
    n = a.shape[axis]
    i = indices.astype(np.int64)
    i = np.clip(i, 0, n - 1) if mode == "clip" else (np.mod(i, n) if mode == "wrap" else i)
    return np.take(a, i, axis=axis)


@register("take", samples=lambda: [
    Sample((_u(4, 3), np.array([[0.0, 2.0], [3.0, 1.0]])), {}, ref=_np_take, grad_inputs=(0,)),
    Sample((_u(2, 4, 3), np.array([1.0, 1.0, 5.0, -2.0])), {"axis": 1}, ref=_np_take, grad_inputs=(0,)),
    Sample((_u(2, 3), np.array([4.0, -1.0])), {"axis": -1, "mode": "wrap"}, ref=_np_take, grad_inputs=(0,)),
    Sample((_u(3, 2), np.array([2.0, 0.0])), {"mode": "raise"}, ref=_np_take, grad_inputs=(0,))])
def take(a, indices, *, axis: int = 0, mode: Literal["raise", "wrap", "clip"] = "clip"):
    """Gather slices of ``a`` along ``axis``: out shape a.shape[:axis] + indices.shape + a.shape[axis+1:]."""
    ax = norm_axis(axis, a.dim(), "take")
    try:
        idx = _fix_index(_idx(indices), a.shape[ax], mode, "take")
    except MXNetError as e:
        # MXNet checks the indices while gathering, on its asynchronous engine: the error comes
        # when the result is read (base.DeferredError), which holds the clipped gather until then
        idx = _fix_index(_idx(indices), a.shape[ax], "clip", "take")
        out = a.index_select(ax, idx.reshape(-1))
        raise DeferredError(str(e), placeholder=out.reshape(
            tuple(a.shape[:ax]) + tuple(indices.shape) + tuple(a.shape[ax + 1:]))) from None
    out = a.index_select(ax, idx.reshape(-1))
    return out.reshape(tuple(a.shape[:ax]) + tuple(indices.shape) + tuple(a.shape[ax + 1:]))


@register("batch_take", no_gradient=True, samples=lambda: [
    Sample((_u(3, 4), np.array([0.0, 3.0, 1.0])), ref=lambda a, i: a[np.arange(len(i)), i.astype(int)],
           grad=False)])
def batch_take(a, indices):
    """out[i] = a[i, indices[i]] for a 2-D ``a`` (indices clipped into range)."""
    if a.dim() != 2 or indices.dim() != 1 or indices.shape[0] != a.shape[0]:
        raise MXNetError(f"batch_take: expected a of shape (N, M) and indices of shape (N,), got "
                         f"{tuple(a.shape)} and {tuple(indices.shape)}")
    idx = _idx(indices).clamp(0, a.shape[1] - 1)
    return a.gather(1, idx.unsqueeze(1)).squeeze(1)


# ---- gather_nd / scatter_nd ----------------------------------------------------------------------
def _np_gather_nd(data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    i = indices.astype(np.int64)
    m = i.shape[0]
    out = np.zeros(i.shape[1:] + data.shape[m:], dtype=data.dtype)
    for pos in np.ndindex(*i.shape[1:]):
        out[pos] = data[tuple(i[(k,) + pos] for k in range(m))]
    return out


@register("gather_nd", samples=lambda: [
    Sample((_u(3, 4), np.array([[0.0, 2.0, 1.0], [1.0, 3.0, 0.0]])), ref=_np_gather_nd, grad_inputs=(0,)),
    Sample((_u(3, 4, 2), np.array([[[2.0, 0.0]]])), ref=_np_gather_nd, grad_inputs=(0,)),
    Sample((_u(2, 3), np.array([[1.0, 1.0, 0.0]])), ref=_np_gather_nd, grad_inputs=(0,))])
def gather_nd(data, indices):
    """out[y...] = data[indices[0, y...], ..., indices[M-1, y...]] (indices shape (M, Y...))."""
    idx = _idx(indices)
    m = idx.shape[0]
    if m > data.dim():
        raise MXNetError(f"gather_nd: indices.shape[0]={m} exceeds data's {data.dim()} dims")
    if data.device.type != "meta":
        for k in range(m):
            n = data.shape[k]
            bad = (idx[k] >= n) | (idx[k] < -n)
            if bool(bad.any()):
                raise MXNetIndexError(f"gather_nd: index {int(idx[k][bad][0])} is out of bounds for "
                                      f"axis {k} with size {n}")
    return data[tuple(idx[k] for k in range(m))]


def _np_scatter_nd(data: np.ndarray, indices: np.ndarray, shape: Any) -> np.ndarray:
    i = indices.astype(np.int64)
    m = i.shape[0]
    out = np.zeros(tuple(shape), dtype=data.dtype)
    for pos in np.ndindex(*i.shape[1:]):
        out[tuple(i[(k,) + pos] for k in range(m))] = data[pos]
    return out


@register("scatter_nd", samples=lambda: [
    Sample((_u(3), np.array([[0.0, 2.0, 1.0], [1.0, 3.0, 0.0]])), {"shape": (3, 4)}, ref=_np_scatter_nd,
           grad_inputs=(0,)),
    Sample((_u(2, 2), np.array([[2.0, 0.0]])), {"shape": (3, 2)}, ref=_np_scatter_nd, grad_inputs=(0,))])
def scatter_nd(data, indices, *, shape: Shape):
    """Zeros of ``shape`` with out[indices[:, y...]] = data[y...] (inverse of gather_nd)."""
    idx = _idx(indices)
    out = data.new_zeros(tuple(as_tuple(shape)))
    return out.index_put(tuple(idx[k] for k in range(idx.shape[0])), data)


# ---- where -----------------------------------------------------------------------------------
def _np_where(c: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if c.shape != x.shape:
        c = c.reshape((-1,) + (1,) * (x.ndim - 1))
    return np.where(c != 0, x, y)


@register("where", partial_outputs=unknown_until_inputs_known, samples=lambda: [
    Sample((np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 1.0]]), _u(2, 3), _u(2, 3)), ref=_np_where,
           grad_inputs=(1, 2)),
    Sample((np.array([0.0, 1.0, 1.0]), _u(3, 2), _u(3, 2)), ref=_np_where, grad_inputs=(1, 2))])
def where(condition, x, y):
    """x where condition is non-zero, else y; condition has x's shape or is 1-D over axis 0."""
    if x.shape != y.shape:
        raise MXNetError(f"where: x {tuple(x.shape)} and y {tuple(y.shape)} must have the same shape")
    c = condition
    if tuple(c.shape) != tuple(x.shape):
        if c.dim() != 1 or c.shape[0] != x.shape[0]:
            raise MXNetError(f"where: condition {tuple(c.shape)} must have x's shape {tuple(x.shape)} or "
                             f"be 1-D of size {x.shape[0]}")
        c = c.reshape((-1,) + (1,) * (x.dim() - 1))
    return torch.where(c != 0, x, y)


# ---- ravel / unravel -------------------------------------------------------------------------
@register("_ravel_multi_index", aliases=("ravel_multi_index",), differentiable=False, samples=lambda: [
    Sample((np.array([[3.0, 6.0, 6.0], [4.0, 5.0, 1.0]]),), {"shape": (7, 6)},
           ref=lambda d, shape: np.ravel_multi_index(d.astype(np.int64), shape).astype(d.dtype))])
def _ravel_multi_index(data, *, shape: Shape):
    """Flat indices from a (ndim, N) array of multi-indices into ``shape`` (in data's dtype)."""
    shp = as_tuple(shape)
    idx = _idx(data)
    if idx.shape[0] != len(shp):
        raise MXNetError(f"ravel_multi_index: data.shape[0]={idx.shape[0]} must equal len(shape)={len(shp)}")
    flat = torch.zeros(idx.shape[1:], dtype=torch.int64, device=data.device)
    for k, d in enumerate(shp):
        flat = flat * d + idx[k]
    return flat.to(data.dtype)


@register("_unravel_index", aliases=("unravel_index",), differentiable=False, samples=lambda: [
    Sample((np.array([22.0, 41.0, 37.0]),), {"shape": (7, 6)},
           ref=lambda d, shape: np.stack(np.unravel_index(d.astype(np.int64), shape)).astype(d.dtype))])
def _unravel_index(data, *, shape: Shape):
    """Multi-indices (len(shape), N...) into ``shape`` from flat indices (in data's dtype).
    The leading dimension is not wrapped, so it may be -1 (unknown), as in MXNet."""
    shp = as_tuple(shape)
    rem = _idx(data)
    parts = []
    for d in reversed(shp[1:]):
        parts.append(torch.remainder(rem, d))
        rem = torch.div(rem, d, rounding_mode="floor")
    parts.append(rem if shp[0] < 0 else torch.remainder(rem, shp[0]))
    return torch.stack(parts[::-1]).to(data.dtype)


# ---- contrib ---------------------------------------------------------------------------------
def _np_index_array(x: np.ndarray, axes: Any = None) -> np.ndarray:
    grids = np.indices(x.shape)
    axes = range(x.ndim) if axes is None else [a % x.ndim for a in axes]
    return np.stack([grids[a] for a in axes], axis=-1).astype(np.int64)


@register("_contrib_index_array", differentiable=False, samples=lambda: [
    Sample((_u(2, 3),), ref=_np_index_array),
    Sample((_u(2, 3, 4),), {"axes": (0, -1)}, ref=_np_index_array)])
def _contrib_index_array(data, *, axes: Axis = None):
    """int64 array of shape data.shape + (len(axes),) holding each element's index (on ``axes``)."""
    axs = range(data.dim()) if axes is None else [norm_axis(a, data.dim(), "index_array") for a in as_tuple(axes)]
    if data.dim() == 0:  # a scalar has no axes: shape () + (0,)
        return torch.zeros((0,), dtype=torch.int64, device=data.device)
    grids = torch.meshgrid(*[torch.arange(n, device=data.device) for n in data.shape], indexing="ij")
    return torch.stack([grids[a] for a in axs], dim=-1).to(torch.int64)



def _np_index_copy(old: np.ndarray, idx: np.ndarray, new: np.ndarray) -> np.ndarray:
    out = old.copy()
    out[idx.astype(np.int64)] = new
    return out


@register("_contrib_index_copy", samples=lambda: [
    Sample((_u(4, 3), np.array([2.0, 0.0]), _u(2, 3)), ref=_np_index_copy, grad_inputs=(0, 2))])
def _contrib_index_copy(old_tensor, index_vector, new_tensor):
    """A copy of old_tensor with rows index_vector[i] replaced by new_tensor[i]."""
    return old_tensor.index_copy(0, _idx(index_vector), new_tensor)


def _data_dependent_shape(attrs: dict, shapes: list) -> list:
    raise MXNetError("boolean_mask: the output shape depends on the values of index, so it cannot be "
                     "inferred symbolically; run it eagerly (nd.contrib.boolean_mask) or keep it out of "
                     "hybridized blocks")


@register("_contrib_boolean_mask", infer_shape=_data_dependent_shape, infer_type=first_input_dtype,
          samples=lambda: [
    Sample((_u(4, 3), np.array([1.0, 0.0, 1.0, 1.0])), ref=lambda d, i, axis=0: d[i != 0],
           grad_inputs=(0,), check_shape=False)])
def _contrib_boolean_mask(data, index, *, axis: int = 0):
    """Rows of ``data`` (along axis 0) where ``index`` is non-zero (a data-dependent shape)."""
    if axis != 0:
        raise MXNetError(f"boolean_mask: only axis=0 is supported, got {axis}")
    if index.dim() != 1 or index.shape[0] != data.shape[0]:
        raise MXNetError(f"boolean_mask: index must be 1-D of size {data.shape[0]}, got {tuple(index.shape)}")
    return data[index != 0]


def _np_arange_like(x: np.ndarray, start: float = 0.0, step: float = 1.0, repeat: int = 1, ctx: Any = None,
                    axis: Any = None) -> np.ndarray:
    n = x.size if axis is None else x.shape[axis]
    vals = start + (np.arange(n) // repeat) * step
    return (vals.reshape(x.shape) if axis is None else vals).astype(x.dtype)


@register("_contrib_arange_like", differentiable=False, samples=lambda: [
    Sample((_u(2, 3),), ref=_np_arange_like),
    Sample((_u(2, 5),), {"start": 1.0, "step": 0.5, "axis": -1}, ref=_np_arange_like),
    Sample((_u(2, 3),), {"repeat": 2}, ref=_np_arange_like)])
def _contrib_arange_like(data, *, start: float = 0.0, step: float = 1.0, repeat: int = 1, ctx: AnyValue = None,
                         axis: OptInt = None):
    """start + k*step values with data's shape (or data.shape[axis] values), each ``repeat`` times."""
    n = data.numel() if axis is None else data.shape[norm_axis(axis, data.dim(), "arange_like")]
    k = torch.div(torch.arange(n, device=data.device), repeat, rounding_mode="floor")
    vals = (start + k.to(torch.float64) * step).to(data.dtype)
    return vals.reshape(data.shape) if axis is None else vals
