"""Shape manipulation: Reshape (MXNet's special codes), reshape_like, Flatten, transpose,
expand_dims, squeeze, SwapAxis, reverse/flip, tile, repeat, Concat, stack, SliceChannel/split,
_split_v2, slice/slice_axis/slice_like, broadcast_to/like/axis, Cast/amp_cast/amp_multicast,
shape_array/size_array, diag, depth_to_space/space_to_depth, Pad and the Sequence* operators.

Every kernel mirrors the MXNet 1.9.1 operator of the same name; shapes are computed from the
input shapes only, so all kernels also run on torch's "meta" device (shape inference).
"""
from __future__ import annotations

import functools

import builtins
from typing import Any, Literal, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..base import MXNetError, dtype_torch
from ..np_semantics import is_np_shape
from .attrs import Axis, Dtype, OptInt, Shape
from .reduce import as_tuple, norm_axis
from .shape_rules import (concat_inputs, concat_shape, reshape_input, same_shape_inputs,
                          unknown_along_unknown_axes)
from .registry import Sample, register

_rng = np.random.RandomState(3)


def _u(*shape: int) -> np.ndarray:
    return _rng.uniform(-1, 1, size=shape)


def _shape_str(t: torch.Tensor) -> str:
    return str(tuple(t.shape))


# ---- Reshape ---------------------------------------------------------------------------------
def reshape_shape(dshape: Sequence[int], spec: Sequence[int], reverse: bool = False) -> tuple:
    """Output shape of MXNet ``Reshape(shape=spec, reverse=reverse)`` on an input of ``dshape``.

    Codes: 0 copies the input dim; -1 infers one dim; -2 copies all remaining input dims;
    -3 merges two consecutive input dims; -4 splits one input dim into the next two entries
    (either may be -1). ``reverse`` matches the codes right to left.
    """
    src = list(dshape)[::-1] if reverse else list(dshape)
    codes = [int(c) for c in spec][::-1] if reverse else [int(c) for c in spec]
    out: list = []
    i = j = 0          # position in codes, in src
    infer = -1
    where = f"Reshape: cannot reshape {tuple(dshape)} with shape={tuple(spec)}"
    while i < len(codes):
        c = codes[i]
        if c == 0:
            if j >= len(src):
                raise MXNetError(f"{where}: 0 copies input dim {j}, but the input has only {len(src)} dims")
            out.append(src[j])
            j += 1
        elif c == -1:
            if infer >= 0:
                raise MXNetError(f"{where}: only one dim can be inferred (-1)")
            infer = len(out)
            out.append(1)
            j += 1
        elif c == -2:
            out.extend(src[j:])
            j = len(src)
        elif c == -3:
            if j + 1 >= len(src):
                raise MXNetError(f"{where}: -3 needs two input dims at position {j}")
            out.append(src[j] * src[j + 1])
            j += 2
        elif c == -4:
            if i + 2 >= len(codes) or j >= len(src):
                raise MXNetError(f"{where}: -4 must be followed by two dims and refer to an input dim")
            d0, d1, d2 = src[j], codes[i + 1], codes[i + 2]
            j += 1
            i += 2
            if d1 == -1 and d2 == -1:
                raise MXNetError(f"{where}: split dims after -4 cannot both be -1")
            if d1 == -1:
                d1 = d0 // d2 if d2 else 0
            if d2 == -1:
                d2 = d0 // d1 if d1 else 0
            if d1 * d2 != d0:
                raise MXNetError(f"{where}: split dims {d1}, {d2} do not multiply to the input dim {d0}")
            out.extend([d1, d2])
        elif c > 0:
            out.append(c)
            j += 1
        else:
            raise MXNetError(f"{where}: invalid code {c}; valid codes are 0, -1, -2, -3, -4 and positive sizes")
        i += 1
    total = int(np.prod(dshape)) if len(dshape) else 1
    if infer >= 0:
        rest = int(np.prod(out)) if out else 1
        if rest == 0 or total % rest:
            raise MXNetError(f"{where}: the size {total} is not divisible by {rest}")
        out[infer] = total // rest
    if reverse:
        out = out[::-1]
    if int(np.prod(out)) != total:
        raise MXNetError(f"{where}: the target shape {tuple(out)} has {int(np.prod(out))} elements, "
                         f"the input {total}")
    return tuple(out)


def _np_reshape(x: np.ndarray, shape: Any = (), reverse: bool = False, **_: Any) -> np.ndarray:
    return x.reshape(_NP_RESHAPE_CASES[(x.shape, tuple(shape), reverse)])


# Expected shapes of the Reshape samples, written out by hand from MXNet's documentation.
_NP_RESHAPE_CASES = {
    ((2, 3, 4), (4, 0, 2), False): (4, 3, 2),
    ((2, 3, 4), (2, 0, 0), False): (2, 3, 4),
    ((2, 3, 4), (6, 1, -1), False): (6, 1, 4),
    ((2, 3, 4), (3, -1, 8), False): (3, 1, 8),
    ((2, 3, 4), (-1,), False): (24,),
    ((2, 3, 4), (-2,), False): (2, 3, 4),
    ((2, 3, 4), (2, -2), False): (2, 3, 4),
    ((2, 3, 4), (-2, 1, 1), False): (2, 3, 4, 1, 1),
    ((2, 3, 4), (-3, 4), False): (6, 4),
    ((2, 3, 4, 5), (-3, -3), False): (6, 20),
    ((2, 3, 4), (0, -3), False): (2, 12),
    ((2, 3, 4), (-3, -2), False): (6, 4),
    ((2, 3, 4), (-4, 1, 2, -2), False): (1, 2, 3, 4),
    ((2, 3, 4), (2, -4, -1, 3, -2), False): (2, 1, 3, 4),
    ((10, 5, 4), (-1, 0), False): (40, 5),
    ((10, 5, 4), (-1, 0), True): (50, 4),
}


# the same (input shape, codes) pairs recur on every call of a graph: compute each once
_reshape_shape_cached = functools.lru_cache(maxsize=4096)(lambda d, s, r: reshape_shape(d, s, r))


def _reshape_out_shape(attrs: dict, shapes: list) -> Optional[list]:
    """Reshape with ``shape``: the codes applied to the input shape (``reshape_shape``); the
    deprecated ``target_shape`` spelling goes to the kernel."""
    spec = as_tuple(attrs["shape"])
    if not spec:
        return None
    try:
        out = _reshape_shape_cached(tuple(shapes[0]), tuple(spec), bool(attrs["reverse"]))
    except MXNetError:
        return None
    return [out] if all(d >= 0 for d in out) else None


@register("Reshape", returns_view=True,
          aliases=("reshape",), infer_inputs=reshape_input, infer_shape=_reshape_out_shape,
          samples=lambda: [
    Sample((_u(*ds),), {"shape": spec, "reverse": rev} if rev else {"shape": spec}, ref=_np_reshape)
    for (ds, spec, rev) in _NP_RESHAPE_CASES])
def Reshape(data, *, shape: Shape = (), reverse: bool = False, target_shape: Shape = (),
            keep_highest: bool = False):
    """Reshape with MXNet's special codes 0, -1, -2, -3, -4 and ``reverse`` (see reshape_shape).

    ``target_shape``/``keep_highest`` are MXNet's deprecated spelling (0 marks the inferred dim)."""
    shape = as_tuple(shape)
    if shape:
        dshape = tuple(data.shape)
        if all(d.__class__ is int for d in dshape):
            return data.reshape(_reshape_shape_cached(dshape, tuple(shape), bool(reverse)))
        # torch.export's symbolic sizes (unhashable): codes 0, -1 and sizes map onto torch's
        # reshape, which keeps a dynamic batch symbolic (reshape_shape's np.prod would fix it)
        if not reverse and all(int(c) >= -1 for c in shape):
            return data.reshape([dshape[j] if int(c) == 0 else int(c) for j, c in enumerate(shape)])
        return data.reshape(reshape_shape(dshape, shape, reverse))
    tshape = list(as_tuple(target_shape))
    if not tshape:
        raise MXNetError("Reshape: the shape attribute is required, e.g. reshape(x, shape=(-1, 0))")
    if keep_highest:
        tshape[0] = data.shape[0]
    start = 1 if keep_highest else 0
    zeros = [i for i in range(start, len(tshape)) if tshape[i] == 0]
    if len(zeros) == 1:
        tshape[zeros[0]] = 1
        tshape[zeros[0]] = data.numel() // int(np.prod(tshape))
    return data.reshape(tuple(tshape))


def _np_reshape_like(lhs: np.ndarray, rhs: np.ndarray, lhs_begin: Any = None, lhs_end: Any = None,
                     rhs_begin: Any = None, rhs_end: Any = None) -> np.ndarray:
    ls, rs = list(lhs.shape), list(rhs.shape)
    lb = 0 if lhs_begin is None else lhs_begin % len(ls)
    le = len(ls) if lhs_end is None else (lhs_end if lhs_end >= 0 else lhs_end + len(ls))
    rb = 0 if rhs_begin is None else rhs_begin % len(rs)
    re = len(rs) if rhs_end is None else (rhs_end if rhs_end >= 0 else rhs_end + len(rs))
    return lhs.reshape(ls[:lb] + rs[rb:re] + ls[le:])


@register("reshape_like", returns_view=True, samples=lambda: [
    Sample((_u(2, 3, 4), _u(6, 4)), ref=_np_reshape_like, grad_inputs=(0,)),
    Sample((_u(30, 7), _u(15, 2, 4)), {"lhs_begin": 0, "lhs_end": 1, "rhs_begin": 0, "rhs_end": 2},
           ref=_np_reshape_like, grad_inputs=(0,)),
    Sample((_u(2, 3, 4), _u(4, 6, 2)), {"lhs_begin": 1, "rhs_begin": -2}, ref=_np_reshape_like, grad_inputs=(0,)),
    Sample((_u(2, 6), _u(1, 2, 3)), {"lhs_begin": -1, "lhs_end": None, "rhs_begin": 1}, ref=_np_reshape_like,
           grad_inputs=(0,))])
def reshape_like(lhs, rhs, *, lhs_begin: OptInt = None, lhs_end: OptInt = None, rhs_begin: OptInt = None,
                 rhs_end: OptInt = None):
    """lhs with dims [lhs_begin, lhs_end) replaced by rhs's dims [rhs_begin, rhs_end)."""
    ls, rs = list(lhs.shape), list(rhs.shape)

    def rng(b: Optional[int], e: Optional[int], n: int) -> tuple[int, int]:
        bb = 0 if b is None else norm_axis(b, n, "reshape_like")
        ee = n if e is None else (e + n if e < 0 else e)
        if not bb <= ee <= n:
            raise MXNetError(f"reshape_like: invalid range [{b}, {e}) for {n} dims")
        return bb, ee
    lb, le = rng(lhs_begin, lhs_end, len(ls))
    rb, re = rng(rhs_begin, rhs_end, len(rs))
    new = ls[:lb] + rs[rb:re] + ls[le:]
    if int(np.prod(new)) != lhs.numel():
        raise MXNetError(f"reshape_like: cannot reshape lhs {tuple(ls)} to {tuple(new)} "
                         f"(from rhs {tuple(rs)} dims [{rb}, {re}))")
    return lhs.reshape(new)


def _flatten_shape(attrs: dict, shapes: list) -> list:
    """(d0, d1*...*dk); a vector of n becomes (n, 1) and a scalar (1, 1)."""
    d = tuple(shapes[0])
    if len(d) <= 1:
        return [((d[0] if d else 1), 1)]
    return [(d[0], int(np.prod(d[1:])))]


@register("Flatten", returns_view=True, aliases=("flatten",), infer_shape=_flatten_shape, samples=lambda: [
    Sample((_u(2, 3, 4),), ref=lambda x: x.reshape(x.shape[0], -1)),
    Sample((_u(5),), ref=lambda x: x.reshape(5, 1))])
def Flatten(data):
    """Collapse every axis but the first: (d0, d1, ..., dk) -> (d0, d1*...*dk)."""
    if data.dim() <= 1:
        return data.reshape(-1 if data.dim() else 1, 1)
    return data.flatten(1)  # not reshape(n, -1): a batch of 0, shape (0, 3, 4), gives (0, 12)


def _transpose_shape(attrs: dict, shapes: list) -> Optional[list]:
    """The input's axes permuted by ``axes`` (reversed when empty)."""
    d = tuple(shapes[0])
    ax = as_tuple(attrs["axes"])
    if not ax:
        return [d[::-1]]
    try:
        perm = [norm_axis(a, len(d), "transpose") for a in ax]
    except MXNetError:
        return None
    return [tuple(d[a] for a in perm)] if sorted(perm) == list(range(len(d))) else None


@register("transpose", returns_view=True, infer_shape=_transpose_shape, samples=lambda: [
    Sample((_u(2, 3, 4),), ref=lambda x, axes=(): np.transpose(x, axes or None)),
    Sample((_u(2, 3, 4),), {"axes": (1, 0, 2)}, ref=lambda x, axes=(): np.transpose(x, axes or None)),
    Sample((_u(2, 3),), {"axes": (1, 0)}, ref=lambda x, axes=(): np.transpose(x, axes or None))])
def transpose(data, *, axes: Shape = ()):
    """Permute axes (default: reverse them)."""
    ax = as_tuple(axes)
    if not ax:
        return data.permute(*reversed(range(data.dim())))
    if len(ax) != data.dim():
        raise MXNetError(f"transpose: axes={tuple(ax)} must list all {data.dim()} axes of the input {_shape_str(data)}")
    return data.permute(*[norm_axis(a, data.dim(), "transpose") for a in ax])


def _expand_dims_shape(attrs: dict, shapes: list) -> Optional[list]:
    """The input's shape with a 1 inserted at ``axis``."""
    d = tuple(shapes[0])
    try:
        a = norm_axis(attrs["axis"], len(d), "expand_dims", allow_end=True)
    except MXNetError:
        return None
    return [d[:a] + (1,) + d[a:]]


@register("expand_dims", returns_view=True, infer_shape=_expand_dims_shape, samples=lambda: [
    Sample((_u(2, 3),), {"axis": 1}, ref=lambda x, axis: np.expand_dims(x, axis)),
    Sample((_u(2, 3),), {"axis": -1}, ref=lambda x, axis: np.expand_dims(x, axis)),
    Sample((_u(2, 3),), {"axis": 0}, ref=lambda x, axis: np.expand_dims(x, axis))])
def expand_dims(data, *, axis: int):
    """Insert a size-1 axis at ``axis`` (in [-ndim-1, ndim])."""
    return data.unsqueeze(norm_axis(axis, data.dim(), "expand_dims", allow_end=True))


def _np_squeeze(x: np.ndarray, axis: Any = None) -> np.ndarray:
    ax: Any = axis if axis is None or np.isscalar(axis) else tuple(axis)
    out = np.squeeze(x, axis=ax)
    return out.reshape(1) if out.ndim == 0 else out


@register("squeeze", returns_view=True, samples=lambda: [
    Sample((_u(2, 1, 3, 1),), ref=_np_squeeze),
    Sample((_u(2, 1, 3, 1),), {"axis": 1}, ref=_np_squeeze),
    Sample((_u(2, 1, 3, 1),), {"axis": (1, -1)}, ref=_np_squeeze),
    Sample((_u(1, 1),), ref=_np_squeeze)])
def squeeze(data, *, axis: Axis = None):
    """Remove size-1 axes (all of them, or those in ``axis``); an all-ones shape gives (1,)."""
    if axis is None:
        dims = tuple(i for i, d in enumerate(data.shape) if d == 1)
    else:
        dims = tuple(norm_axis(a, data.dim(), "squeeze") for a in as_tuple(axis))
        for d in dims:
            if data.shape[d] != 1:
                raise MXNetError(f"squeeze: axis {d} of the input {_shape_str(data)} has size "
                                 f"{data.shape[d]}, not 1")
    out = data.squeeze(dims) if dims else data
    return out.reshape(1) if out.dim() == 0 else out


@register("SwapAxis", returns_view=True, aliases=("swapaxes",), samples=lambda: [
    Sample((_u(2, 3, 4),), {"dim1": 0, "dim2": 2}, ref=lambda x, dim1=0, dim2=0: np.swapaxes(x, dim1, dim2)),
    Sample((_u(2, 3, 4),), {"dim1": 1, "dim2": -1}, ref=lambda x, dim1=0, dim2=0: np.swapaxes(x, dim1, dim2))])
def SwapAxis(data, *, dim1: int = 0, dim2: int = 0):
    """Interchange two axes."""
    return data.transpose(norm_axis(dim1, data.dim(), "SwapAxis"), norm_axis(dim2, data.dim(), "SwapAxis"))


@register("reverse", aliases=("flip",), samples=lambda: [
    Sample((_u(2, 3, 4),), {"axis": 1}, ref=lambda x, axis: np.flip(x, axis)),
    Sample((_u(2, 3, 4),), {"axis": (0, 2)}, ref=lambda x, axis: np.flip(x, axis))])
def reverse(data, *, axis: Shape):
    """Reverse the order of elements along the given axes (MXNet reverse, alias flip)."""
    return torch.flip(data, [norm_axis(a, data.dim(), "reverse") for a in as_tuple(axis)])


@register("tile", samples=lambda: [
    Sample((_u(2, 3),), {"reps": (2, 2)}, ref=lambda x, reps: np.tile(x, reps)),
    Sample((_u(2, 3),), {"reps": (3,)}, ref=lambda x, reps: np.tile(x, reps)),
    Sample((_u(2, 3),), {"reps": (2, 1, 2)}, ref=lambda x, reps: np.tile(x, reps))])
def tile(data, *, reps: Shape):
    """Repeat the whole array ``reps`` times per axis (NumPy tile semantics). Negative reps
    are an error; so is 0 unless NumPy shape semantics are on (0 means unknown in MXNet 1.x)."""
    r = tuple(as_tuple(reps))
    if any(x < 0 for x in r) or (not is_np_shape() and any(x == 0 for x in r)):
        raise MXNetError(f"tile: reps={r} must be positive (0 is allowed only with mx.np_shape())")
    return data.tile(r)


@register("repeat", samples=lambda: [
    Sample((_u(2, 3),), {"repeats": 2}, ref=lambda x, repeats, axis=None: np.repeat(x, repeats, axis)),
    Sample((_u(2, 3),), {"repeats": 3, "axis": 1}, ref=lambda x, repeats, axis=None: np.repeat(x, repeats, axis)),
    Sample((_u(2, 3),), {"repeats": 2, "axis": -2}, ref=lambda x, repeats, axis=None: np.repeat(x, repeats, axis))])
def repeat(data, *, repeats: int, axis: OptInt = None):
    """Repeat each element ``repeats`` times along ``axis`` (None: of the flattened array)."""
    if axis is None:
        return data.reshape(-1).repeat_interleave(repeats)
    return data.repeat_interleave(repeats, dim=norm_axis(axis, data.dim(), "repeat"))


# ---- join / split ----------------------------------------------------------------------------
@register("Concat", aliases=("concat",), infer_inputs=concat_inputs, infer_shape=concat_shape,
          samples=lambda: [
    Sample((_u(2, 3), _u(2, 4)), ref=lambda *a, dim=1: np.concatenate(a, dim)),
    Sample((_u(2, 3), _u(1, 3), _u(3, 3)), {"dim": 0}, ref=lambda *a, dim=1: np.concatenate(a, dim)),
    Sample((_u(2, 3, 2), _u(2, 3, 1)), {"dim": -1}, ref=lambda *a, dim=1: np.concatenate(a, dim))])
def Concat(*data, dim: int = 1):
    """Join arrays along axis ``dim`` (other axes must match)."""
    if not data:
        raise MXNetError("Concat: needs at least one input")
    return torch.cat(list(data), dim=norm_axis(dim, data[0].dim(), "Concat"))


@register("stack", samples=lambda: [
    Sample((_u(2, 3), _u(2, 3)), ref=lambda *a, axis=0: np.stack(a, axis)),
    Sample((_u(2, 3), _u(2, 3), _u(2, 3)), {"axis": 2}, ref=lambda *a, axis=0: np.stack(a, axis)),
    Sample((_u(2, 3), _u(2, 3)), {"axis": -1}, ref=lambda *a, axis=0: np.stack(a, axis))])
def stack(*data, axis: int = 0):
    """Join same-shape arrays along a new axis."""
    if not data:
        raise MXNetError("stack: needs at least one input")
    return torch.stack(list(data), dim=norm_axis(axis, data[0].dim(), "stack", allow_end=True))


def _split_outputs(attrs: dict) -> int:
    return int(attrs["num_outputs"])


def _np_split(x: np.ndarray, num_outputs: int, axis: int = 1, squeeze_axis: bool = False) -> Any:
    parts = np.split(x, num_outputs, axis=axis)
    if squeeze_axis:
        parts = [np.squeeze(p, axis=axis) for p in parts]
    return parts if num_outputs > 1 else parts[0]


@register("SliceChannel", returns_view=True, aliases=("split",), num_outputs=_split_outputs,
          output_names=lambda a: [f"output{i}" for i in range(int(a["num_outputs"]))], samples=lambda: [
              Sample((_u(2, 6),), {"num_outputs": 3}, ref=_np_split),
              Sample((_u(4, 3),), {"num_outputs": 2, "axis": 0}, ref=_np_split),
              Sample((_u(2, 3, 2),), {"num_outputs": 3, "axis": 1, "squeeze_axis": True}, ref=_np_split),
              Sample((_u(2, 3),), {"num_outputs": 1, "axis": -1}, ref=_np_split)])
def SliceChannel(data, *, num_outputs: int, axis: int = 1, squeeze_axis: bool = False):
    """Split into ``num_outputs`` equal parts along ``axis`` (``squeeze_axis`` drops a size-1 axis)."""
    a = norm_axis(axis, data.dim(), "SliceChannel")
    n = data.shape[a]
    if num_outputs < 1 or n % num_outputs:
        raise MXNetError(f"SliceChannel/split: axis {axis} of the input {_shape_str(data)} (size {n}) "
                         f"cannot be split into num_outputs={num_outputs} equal parts")
    if squeeze_axis and n != num_outputs:
        raise MXNetError(f"SliceChannel/split: squeeze_axis=True needs input.shape[{axis}] == "
                         f"num_outputs, got {n} and {num_outputs}")
    parts = torch.split(data, n // num_outputs, dim=a)
    if squeeze_axis:
        parts = tuple(p.squeeze(a) for p in parts)
    return parts[0] if num_outputs == 1 else tuple(parts)


def _split_v2_outputs(attrs: dict) -> int:
    sections = int(attrs.get("sections", 0) or 0)
    return sections if sections > 0 else len(as_tuple(attrs["indices"]))


def _np_split_v2(x: np.ndarray, indices: Any = (), axis: int = 1, squeeze_axis: bool = False,
                 sections: int = 0) -> Any:
    if sections > 0:
        parts = np.split(x, sections, axis=axis)
    else:
        bounds = list(indices) + [x.shape[axis]]
        parts = [np.take(x, np.arange(bounds[i], bounds[i + 1]), axis=axis) for i in range(len(indices))]
    if squeeze_axis:
        parts = [np.squeeze(p, axis=axis) for p in parts]
    return parts if len(parts) > 1 else parts[0]


@register("_split_v2", returns_view=True, num_outputs=_split_v2_outputs, samples=lambda: [
    Sample((_u(2, 6),), {"indices": (0, 2, 5)}, ref=_np_split_v2),
    Sample((_u(6, 2),), {"indices": (), "sections": 3, "axis": 0}, ref=_np_split_v2),
    Sample((_u(2, 3, 2),), {"indices": (0, 1, 2), "axis": 1, "squeeze_axis": True}, ref=_np_split_v2)])
def _split_v2(data, *, indices: Shape, axis: int = 1, squeeze_axis: bool = False, sections: int = 0):
    """Split along ``axis`` at ``indices`` (which include the leading 0, as mx.nd.split_v2 sends
    them) or into ``sections`` equal parts."""
    a = norm_axis(axis, data.dim(), "split_v2")
    n = data.shape[a]
    if sections > 0:
        if n % sections:
            raise MXNetError(f"split_v2: axis {axis} (size {n}) of {_shape_str(data)} cannot be split "
                             f"into {sections} equal sections")
        bounds = [i * (n // sections) for i in range(sections)] + [n]
    else:
        idx = [int(i) for i in as_tuple(indices)]
        if not idx:
            raise MXNetError("split_v2: give indices or sections")
        bounds = idx + [n]
        if n == 0:  # MXNet: every part of an empty axis is empty, whatever the indices
            bounds = [0] * len(bounds)
        if any(b > e for b, e in zip(bounds, bounds[1:])) or bounds[0] < 0:
            raise MXNetError(f"split_v2: indices {tuple(idx)} must be increasing and within [0, {n}]")
    parts = [data.narrow(a, bounds[i], bounds[i + 1] - bounds[i]) for i in range(len(bounds) - 1)]
    if squeeze_axis:
        for p in parts:
            if p.shape[a] != 1:
                raise MXNetError(f"split_v2: squeeze_axis=True needs every part to have size 1 on axis "
                                 f"{axis}, got {p.shape[a]}")
        parts = [p.squeeze(a) for p in parts]
    return parts[0] if len(parts) == 1 else tuple(parts)


# ---- slicing ---------------------------------------------------------------------------------
def slice_ranges(dshape: Sequence[int], begin: Sequence, end: Sequence, step: Sequence) -> list:
    """(begin, end, step) per sliced axis with MXNet's slice rules and bounds checks."""
    begin, end, step = as_tuple(begin), as_tuple(end), as_tuple(step)
    if len(begin) != len(end):
        raise MXNetError(f"slice: begin {begin} and end {end} must have the same length")
    if len(begin) > len(dshape):
        raise MXNetError(f"slice: begin {begin} has more entries than the input has dims {tuple(dshape)}")
    if step and len(step) != len(begin):
        raise MXNetError(f"slice: step {step} must have the same length as begin {begin}")
    out = []
    for i, n in enumerate(dshape[:len(begin)]):
        s = step[i] if step and step[i] is not None else 1
        if s == 0:
            raise MXNetError(f"slice: step[{i}] cannot be 0")
        b = begin[i] if begin[i] is not None else (n - 1 if s < 0 else 0)
        e = end[i] if end[i] is not None else (-1 if s < 0 else n)
        if n > 0:
            if b < 0:
                b += n
            if end[i] is not None and e < 0:
                e += n
            # MXNet's GetIndexRange clips bounds past either end, as Python slicing does
            b = 0 if b < 0 and s > 0 else (n - 1 if b > n - 1 and s < 0 else b)
            e = min(max(e, -1), n)
            if b < 0 or b > n - 1:  # starts outside the axis: nothing selected
                if not is_np_shape():
                    raise MXNetError(f"slice: begin[{i}]={begin[i]} is out of range for dim {i} of size {n}")
                b = e = 0
            if b == e and not is_np_shape():  # NumPy shapes have zero-size arrays
                raise MXNetError(f"slice: begin[{i}] == end[{i}] == {b} gives an empty array, which "
                                 f"MXNet does not support outside NumPy shape semantics")
            if ((s > 0 and b > e) or (s < 0 and b < e)) and is_np_shape():
                e = b  # NumPy shape semantics: a range running the wrong way is empty (x[3:-1:-1])
            elif (s > 0 and b > e) or (s < 0 and b < e):
                raise MXNetError(f"slice: begin[{i}]={b}, end[{i}]={e}, step[{i}]={s} is an invalid range")
        out.append((b, e, s))
    return out


def _apply_slice(data: torch.Tensor, axis: int, b: int, e: int, s: int) -> torch.Tensor:
    if s > 0:
        length = max(0, (e - b + s - 1) // s)
        if s == 1 or length == 0:
            return data.narrow(axis, min(b, data.shape[axis]), length)
        sl = builtins.slice
        return data.narrow(axis, b, (length - 1) * s + 1)[(sl(None),) * axis + (sl(None, None, s),)]
    length = max(0, (b - e + (-s) - 1) // (-s))
    idx = b + s * torch.arange(length, device=data.device)
    return data.index_select(axis, idx)


def _slice_shape(attrs: dict, shapes: list) -> Optional[list]:
    """The number of elements each sliced axis keeps (``slice_ranges``: MXNet's bounds rules)."""
    d = tuple(shapes[0])
    try:
        ranges = slice_ranges(d, attrs["begin"], attrs["end"], attrs["step"])
    except MXNetError:
        return None
    sizes = [max(0, (e - b + s - 1) // s) if s > 0 else max(0, (b - e - s - 1) // -s) for b, e, s in ranges]
    return None if 0 in sizes else [tuple(sizes) + d[len(sizes):]]


@register("slice", returns_view=True,
          aliases=("crop",), partial_outputs=unknown_along_unknown_axes, infer_shape=_slice_shape,
          samples=lambda: [
    Sample((_u(3, 4, 5),), {"begin": (0, 1), "end": (2, 4)}, ref=_np_slice),
    Sample((_u(3, 4, 5),), {"begin": (None, None, 1), "end": (None, 3, None), "step": (None, 2, 2)}, ref=_np_slice),
    Sample((_u(3, 4),), {"begin": (-1, None), "end": (None, None), "step": (-1, -2)}, ref=_np_slice),
    Sample((_u(3, 4),), {"begin": (2, -1), "end": (0, 0), "step": (-1, -1)}, ref=_np_slice),
    Sample((_u(3, 4),), {"begin": (-2,), "end": (-1,)}, ref=_np_slice)])
def slice(data, *, begin: Shape, end: Shape, step: Shape = ()):
    """MXNet slice: per-axis [begin, end) with optional steps; None entries take the default
    (0/size for positive steps, size-1/before-the-start for negative steps)."""
    out = data
    for i, (b, e, s) in enumerate(slice_ranges(tuple(data.shape), begin, end, step)):
        out = _apply_slice(out, i, b, e, s)
    return out


def _slice_index(shape: tuple, begin: Any, end: Any, step: Any, device: torch.device) -> tuple:
    """Broadcastable (np.ix_-style) index tensors selecting MXNet slice(begin, end, step)."""
    ranges = slice_ranges(shape, begin, end, step)
    nd = len(shape)
    idx = []
    for i, n in enumerate(shape):
        if i < len(ranges):
            b, e, s = ranges[i]
            r = torch.arange(b, e, s, device=device)
        else:
            r = torch.arange(n, device=device)
        idx.append(r.reshape((-1,) + (1,) * (nd - 1 - i)))
    return tuple(idx)


@register("_slice_assign", aliases=("_crop_assign",), samples=lambda: [
    Sample((_u(3, 4), _u(2, 2)), {"begin": (0, 1), "end": (2, 3)}, ref=_np_slice_assign),
    Sample((_u(3, 4), _u(3, 2)), {"begin": (None, None), "end": (None, None), "step": (-1, 2)},
           ref=_np_slice_assign)])
def _slice_assign(lhs, rhs, *, begin: Shape, end: Shape, step: Shape = ()):
    """A copy of lhs with lhs[slice(begin, end, step)] = rhs (MXNet's x[...] = y)."""
    idx = _slice_index(tuple(lhs.shape), begin, end, step, lhs.device)
    return lhs.index_put(idx, rhs.expand(torch.broadcast_shapes(*[t.shape for t in idx])))


def _np_slice_assign(lhs: np.ndarray, rhs: np.ndarray, begin: Any, end: Any, step: Any = ()) -> np.ndarray:
    out = lhs.copy()
    idx = tuple(np.s_[begin[i]:end[i]:(step[i] if step and step[i] is not None else 1)] for i in range(len(begin)))
    out[idx] = rhs
    return out


@register("_slice_assign_scalar", aliases=("_crop_assign_scalar",), samples=lambda: [
    Sample((_u(3, 4),), {"scalar": 2.5, "begin": (1,), "end": (3,)}, ref=_np_slice_assign_scalar),
    Sample((_u(3, 4),), {"scalar": -1.0, "begin": (None, 3), "end": (None, 0), "step": (2, -2)},
           ref=_np_slice_assign_scalar)])
def _slice_assign_scalar(data, *, scalar: float = 0.0, begin: Shape, end: Shape, step: Shape = ()):
    """A copy of data with data[slice(begin, end, step)] = scalar."""
    idx = _slice_index(tuple(data.shape), begin, end, step, data.device)
    return data.index_put(idx, torch.tensor(scalar, dtype=data.dtype, device=data.device))


def _np_slice_assign_scalar(x: np.ndarray, scalar: float, begin: Any, end: Any, step: Any = ()) -> np.ndarray:
    out = x.copy()
    idx = tuple(np.s_[begin[i]:end[i]:(step[i] if step and step[i] is not None else 1)] for i in range(len(begin)))
    out[idx] = scalar
    return out


def _np_slice(x: np.ndarray, begin: Any, end: Any, step: Any = ()) -> np.ndarray:
    idx = []
    for i in range(len(begin)):
        s = step[i] if step and step[i] is not None else 1
        idx.append(np.s_[begin[i]:end[i]:s])
    return x[tuple(idx)]


def _np_slice_axis(x: np.ndarray, axis: int, begin: int, end: Any = None) -> np.ndarray:
    idx: list[Any] = [np.s_[:]] * x.ndim
    idx[axis] = np.s_[begin:end]
    return x[tuple(idx)]


def _slice_axis_shape(attrs: dict, shapes: list) -> Optional[list]:
    """The input's shape with [begin, end) kept along ``axis``."""
    d = tuple(shapes[0])
    try:
        a = norm_axis(attrs["axis"], len(d), "slice_axis")
    except MXNetError:
        return None
    n, begin, end = d[a], attrs["begin"], attrs["end"]
    b = begin + n if begin < 0 else begin
    e = n if end is None else (end + n if end < 0 else end)
    return [d[:a] + (e - b,) + d[a + 1:]] if 0 <= b < e <= n else None


@register("slice_axis", returns_view=True,
          partial_outputs=unknown_along_unknown_axes, infer_shape=_slice_axis_shape,
          samples=lambda: [
    Sample((_u(3, 4),), {"axis": 1, "begin": 1, "end": 3}, ref=_np_slice_axis),
    Sample((_u(3, 4),), {"axis": 0, "begin": -2, "end": None}, ref=_np_slice_axis),
    Sample((_u(3, 4, 2),), {"axis": -2, "begin": 0, "end": -1}, ref=_np_slice_axis)])
def slice_axis(data, *, axis: int, begin: int, end: OptInt):
    """Slice [begin, end) along one axis (negative values count from the end; end None: size)."""
    a = norm_axis(axis, data.dim(), "slice_axis")
    n = data.shape[a]
    b = begin + n if begin < 0 else begin
    e = n if end is None else (end + n if end < 0 else end)
    if not (0 <= b < e <= n):
        raise MXNetError(f"slice_axis: invalid range begin={begin}, end={end} for axis {axis} of size {n}")
    return data.narrow(a, b, e - b)


def _np_slice_like(x: np.ndarray, y: np.ndarray, axes: Any = ()) -> np.ndarray:
    axes = [a % x.ndim for a in axes] if axes else list(range(y.ndim))
    idx = [np.s_[:]] * x.ndim
    for a in axes:
        idx[a] = np.s_[:y.shape[a]]
    return x[tuple(idx)]


@register("slice_like", returns_view=True, samples=lambda: [
    Sample((_u(3, 4), _u(2, 3)), ref=_np_slice_like, grad_inputs=(0,)),
    Sample((_u(3, 4, 5), _u(2, 3, 4)), {"axes": (0, -1)}, ref=_np_slice_like, grad_inputs=(0,)),
    Sample((_u(3, 4, 5), _u(2, 3)), {"axes": (1,)}, ref=_np_slice_like, grad_inputs=(0,))])
def slice_like(data, shape_like, *, axes: Shape = ()):
    """Slice ``data`` from the start to ``shape_like``'s sizes on ``axes`` (all by default)."""
    ax = as_tuple(axes)
    if ax:
        dims = [norm_axis(a, data.dim(), "slice_like") for a in ax]
    else:
        if shape_like.dim() != data.dim():
            raise MXNetError(f"slice_like: without axes both inputs need the same number of dims, got "
                             f"{_shape_str(data)} and {_shape_str(shape_like)}")
        dims = list(range(data.dim()))
    out = data
    for d in dims:
        if d >= shape_like.dim() or shape_like.shape[d] > data.shape[d]:
            raise MXNetError(f"slice_like: cannot slice {_shape_str(data)} like {_shape_str(shape_like)} on axis {d}")
        out = out.narrow(d, 0, shape_like.shape[d])
    return out


# ---- broadcasting ----------------------------------------------------------------------------
def _broadcast_to_shape(attrs: dict, shapes: list) -> Optional[list]:
    """``shape`` with its 0s taken from the input; only size-1 input axes may change."""
    d = tuple(shapes[0])
    tgt = as_tuple(attrs["shape"])
    if len(tgt) != len(d):
        return None
    new = tuple(x if t == 0 else t for x, t in zip(d, tgt))
    return [new] if all(x == t or x == 1 for x, t in zip(d, new)) and all(t > 0 for t in new) else None


@register("broadcast_to", returns_view=True, infer_shape=_broadcast_to_shape, samples=lambda: [
    Sample((_u(1, 3),), {"shape": (2, 3)}, ref=_np_broadcast_to),
    Sample((_u(2, 1, 1),), {"shape": (0, 3, 4)}, ref=_np_broadcast_to)])
def broadcast_to(data, *, shape: Shape = ()):
    """Broadcast size-1 axes to ``shape`` (a 0 in ``shape`` keeps the input dim)."""
    tgt = as_tuple(shape)
    if len(tgt) != data.dim():
        raise MXNetError(f"broadcast_to: shape {tgt} must have as many dims as the input {_shape_str(data)}")
    new = tuple(d if t == 0 else t for d, t in zip(data.shape, tgt))
    for d, t in zip(data.shape, new):
        if d != t and d != 1:
            raise MXNetError(f"broadcast_to: cannot broadcast {_shape_str(data)} to {tgt}: only size-1 axes broadcast")
    return data.expand(new)


def _np_broadcast_to(x: np.ndarray, shape: Any) -> np.ndarray:
    return np.broadcast_to(x, tuple(d if t == 0 else t for d, t in zip(x.shape, shape))).copy()


def _np_broadcast_like(x: np.ndarray, y: np.ndarray, lhs_axes: Any = None, rhs_axes: Any = None) -> np.ndarray:
    if lhs_axes is None:
        return np.broadcast_to(x, y.shape).copy()
    shape = list(x.shape)
    for la, ra in zip(as_tuple(lhs_axes), as_tuple(rhs_axes)):
        shape[la] = y.shape[ra]
    return np.broadcast_to(x, shape).copy()


@register("broadcast_like", returns_view=True, samples=lambda: [
    Sample((_u(1, 3), _u(2, 3)), ref=_np_broadcast_like, grad_inputs=(0,)),
    Sample((_u(1, 3, 1), _u(5, 4)), {"lhs_axes": (0, 2), "rhs_axes": (-1, 0)}, ref=_np_broadcast_like,
           grad_inputs=(0,))])
def broadcast_like(lhs, rhs, *, lhs_axes: Axis = None, rhs_axes: Axis = None):
    """Broadcast lhs to rhs's shape, or only lhs_axes to the sizes of rhs_axes."""
    if lhs_axes is None and rhs_axes is None:
        if lhs.dim() != rhs.dim():
            raise MXNetError(f"broadcast_like: {_shape_str(lhs)} and {_shape_str(rhs)} need the same number of dims")
        target = list(rhs.shape)
    else:
        la, ra = as_tuple(lhs_axes), as_tuple(rhs_axes)
        if len(la) != len(ra) or not la:
            raise MXNetError(f"broadcast_like: lhs_axes {la} and rhs_axes {ra} must be non-empty and of equal length")
        target = list(lhs.shape)
        for a, b in zip(la, ra):
            target[norm_axis(a, lhs.dim(), "broadcast_like")] = rhs.shape[norm_axis(b, rhs.dim(), "broadcast_like")]
    for d, t in zip(lhs.shape, target):
        if d != t and d != 1:
            raise MXNetError(f"broadcast_like: cannot broadcast {_shape_str(lhs)} to {tuple(target)}")
    return lhs.expand(tuple(target))


@register("broadcast_axis", returns_view=True, aliases=("broadcast_axes",), samples=lambda: [
    Sample((_u(1, 3, 1),), {"axis": (0, 2), "size": (2, 4)}, ref=_np_broadcast_axis),
    Sample((_u(2, 1),), {"axis": -1, "size": 3}, ref=_np_broadcast_axis)])
def broadcast_axis(data, *, axis: Shape = (), size: Shape = ()):
    """Broadcast the size-1 axes in ``axis`` to the matching ``size``."""
    ax, sz = as_tuple(axis), as_tuple(size)
    if len(ax) != len(sz):
        raise MXNetError(f"broadcast_axis: axis {ax} and size {sz} must have the same length")
    target = list(data.shape)
    for a, s in zip(ax, sz):
        a = norm_axis(a, data.dim(), "broadcast_axis")
        if data.shape[a] != 1:
            raise MXNetError(f"broadcast_axis: axis {a} of {_shape_str(data)} has size {data.shape[a]}, not 1")
        target[a] = s
    return data.expand(tuple(target))


def _np_broadcast_axis(x: np.ndarray, axis: Any = (), size: Any = ()) -> np.ndarray:
    shape = list(x.shape)
    for a, s in zip(as_tuple(axis), as_tuple(size)):
        shape[a] = s
    return np.broadcast_to(x, shape).copy()


# ---- casts -----------------------------------------------------------------------------------
@register("Cast", returns_view=True, aliases=("cast",), infer_inputs=same_shape_inputs, samples=lambda: [
    Sample((_u(2, 3),), {"dtype": "float64"}, ref=lambda x, dtype: x.astype(dtype)),
    Sample((_u(2, 3),), {"dtype": "float32"}, ref=lambda x, dtype: x.astype(dtype), grad=False),
    Sample((_u(2, 3) * 10,), {"dtype": "int32"}, ref=lambda x, dtype: x.astype(dtype), grad=False)])
def Cast(data, *, dtype: Dtype):
    """Convert to ``dtype`` (float -> int truncates toward zero)."""
    return data.to(dtype_torch(dtype))


# AMP casts touch only the types AMP mixes (MXNet's AMPCastType): float64 and integers pass.
_AMP_FLOATS = (torch.float16, torch.bfloat16, torch.float32)
_NP_AMP_FLOATS = (np.dtype(np.float16), np.dtype(np.float32))


def _np_amp_cast(x: np.ndarray, dtype: Any) -> np.ndarray:
    return x.astype(dtype) if x.dtype in _NP_AMP_FLOATS else x


def _np_amp_multicast(*xs: np.ndarray, num_outputs: int, cast_narrow: bool = False) -> list:
    target = _np_amp_multicast_target([x.dtype for x in xs], cast_narrow)
    return [x.astype(target) if x.dtype in _NP_AMP_FLOATS else x for x in xs]


def _np_amp_multicast_target(dtypes: list, cast_narrow: bool) -> Any:
    target = np.dtype(np.float32) if cast_narrow else dtypes[0]
    for d in dtypes:
        if not cast_narrow and d == np.float32:
            target = d
        elif cast_narrow and d == np.float16:
            target = d
    return target


@register("amp_cast", returns_view=True, amp_cast=True, infer_inputs=same_shape_inputs, samples=lambda: [
    Sample((_u(2, 3),), {"dtype": "float32"}, ref=_np_amp_cast),
    Sample((_u(2, 3).astype(np.float32),), {"dtype": "float16"}, ref=_np_amp_cast, grad=False,
           rtol=1e-3, atol=1e-3),
    Sample((np.arange(6).reshape(2, 3).astype(np.int32),), {"dtype": "float16"}, ref=_np_amp_cast,
           grad=False)])
def amp_cast(data, *, dtype: Dtype):
    """AMP's cast between float16/bfloat16 and float32 (MXNet's ``amp_cast``): float16, bfloat16
    and float32 inputs become ``dtype``; float64 and integer inputs pass through unchanged."""
    if data.dtype not in _AMP_FLOATS:
        return data
    return data.to(dtype_torch(dtype))


def _amp_multicast_outputs(attrs: dict) -> int:
    return int(attrs["num_outputs"])


def _amp_multicast_inputs(attrs: dict, ins: list, outs: list) -> list:
    """Input i has output i's shape (parameter shapes inferred through the casts)."""
    return [same_shape_inputs(attrs, [i], [o])[0] for i, o in zip(ins, outs)]


@register("amp_multicast", returns_view=True, amp_cast=True,
          num_outputs=_amp_multicast_outputs, infer_inputs=_amp_multicast_inputs,
          samples=lambda: [
    Sample((_u(2, 3), _u(3)), {"num_outputs": 2}, ref=_np_amp_multicast),
    Sample((_u(2, 3).astype(np.float16), _u(3).astype(np.float32)), {"num_outputs": 2},
           ref=_np_amp_multicast, grad=False),
    Sample((_u(2, 3).astype(np.float16), _u(3).astype(np.float32)), {"num_outputs": 2, "cast_narrow": True},
           ref=_np_amp_multicast, grad=False, rtol=1e-3, atol=1e-3),
    Sample((_u(2, 3).astype(np.float16), _u(3).astype(np.float32), np.arange(3).astype(np.int32)),
           {"num_outputs": 3}, ref=_np_amp_multicast, grad=False)])
def amp_multicast(*data, num_outputs: int, cast_narrow: bool = False):
    """AMP's cast of several inputs to one type (MXNet's ``amp_multicast``): the float16/bfloat16/
    float32 inputs become float32 if any of them is float32, else the first input's type;
    ``cast_narrow`` picks float16 (or bfloat16) if any input has it, else float32. float64 and
    integer inputs pass through unchanged."""
    if len(data) != num_outputs:
        raise MXNetError(f"amp_multicast: num_outputs={num_outputs} but {len(data)} inputs were given")
    target = torch.float32 if cast_narrow else data[0].dtype
    for d in data:
        if not cast_narrow and d.dtype == torch.float32:
            target = d.dtype
        elif cast_narrow and d.dtype in (torch.float16, torch.bfloat16):
            target = d.dtype
    data = tuple(d.to(target) if d.dtype in _AMP_FLOATS else d for d in data)
    return data[0] if num_outputs == 1 else tuple(data)


@register("shape_array", differentiable=False, samples=lambda: [
    Sample((_u(2, 3, 4),), ref=lambda x: np.array(x.shape, dtype=np.int64))])
def shape_array(data):
    """The input's shape as a 1-D int64 array."""
    return torch.tensor(tuple(data.shape), dtype=torch.int64, device=data.device)


@register("size_array", differentiable=False, samples=lambda: [
    Sample((_u(2, 3, 4),), ref=lambda x: np.array([x.size], dtype=np.int64))])
def size_array(data):
    """The input's number of elements as a shape-(1,) int64 array."""
    return torch.tensor([data.numel()], dtype=torch.int64, device=data.device)


# ---- diag / space-depth / pad -----------------------------------------------------------------
def _np_diag(x: np.ndarray, k: int = 0, axis1: int = 0, axis2: int = 1) -> np.ndarray:
    if x.ndim == 1:
        return np.diag(x, k)
    return np.diagonal(x, k, axis1, axis2).copy()


@register("diag", returns_view=True, samples=lambda: [
    Sample((_u(3, 4),), ref=_np_diag),
    Sample((_u(3, 4),), {"k": 1}, ref=_np_diag),
    Sample((_u(3),), {"k": -1}, ref=_np_diag),
    Sample((_u(2, 3, 4),), {"k": -1, "axis1": 1, "axis2": 2}, ref=_np_diag),
    Sample((_u(2, 3, 4),), {"axis1": 2, "axis2": 0}, ref=_np_diag)])
def diag(data, *, k: int = 0, axis1: int = 0, axis2: int = 1):
    """1-D input: a square matrix with it on diagonal ``k``; N-D: the ``k`` diagonal over
    (axis1, axis2), appended as the last axis (NumPy diag/diagonal)."""
    if data.dim() == 1:
        return torch.diag(data, k)
    a1, a2 = norm_axis(axis1, data.dim(), "diag"), norm_axis(axis2, data.dim(), "diag")
    if a1 == a2:
        raise MXNetError(f"diag: axis1 and axis2 cannot both be {a1}")
    h, w = data.shape[a1], data.shape[a2]
    if not -h < k < w:
        raise MXNetError(f"diag: k={k} is out of range for axes of sizes {h} and {w}; "
                         f"expected {-h} < k < {w}")
    return torch.diagonal(data, k, a1, a2)


def _check4(op: str, data: torch.Tensor, block_size: int) -> None:
    if data.dim() != 4:
        raise MXNetError(f"{op}: input must be 4-D (N, C, H, W), got {_shape_str(data)}")
    if block_size <= 0:
        raise MXNetError(f"{op}: block_size must be positive, got {block_size}")
    if any(d == 0 for d in data.shape):
        raise MXNetError(f"{op}: input dimensions cannot be 0, got {_shape_str(data)}")


@register("depth_to_space", samples=lambda: [
    Sample((_u(1, 8, 2, 3),), {"block_size": 2}, ref=_np_depth_to_space),
    Sample((_u(2, 9, 1, 2),), {"block_size": 3}, ref=_np_depth_to_space)])
def depth_to_space(data, *, block_size: int):
    """(N, C*b*b, H, W) -> (N, C, H*b, W*b), moving depth blocks into space (DCR order)."""
    _check4("depth_to_space", data, block_size)
    n, c, h, w = data.shape
    b = block_size
    if c % (b * b):
        raise MXNetError(f"depth_to_space: channels {c} must be divisible by block_size^2 = {b * b}")
    x = data.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    return x.reshape(n, c // (b * b), h * b, w * b)


def _np_depth_to_space(x: np.ndarray, block_size: int) -> np.ndarray:
    n, c, h, w = x.shape
    b = block_size
    out = np.zeros((n, c // (b * b), h * b, w * b))
    for ci in range(c // (b * b)):
        for i in range(h * b):
            for j in range(w * b):
                out[:, ci, i, j] = x[:, ((i % b) * b + (j % b)) * (c // (b * b)) + ci, i // b, j // b]
    return out


@register("space_to_depth", returns_view=True, samples=lambda: [
    Sample((_u(1, 2, 4, 6),), {"block_size": 2}, ref=_np_space_to_depth),
    Sample((_u(2, 1, 3, 3),), {"block_size": 3}, ref=_np_space_to_depth)])
def space_to_depth(data, *, block_size: int):
    """(N, C, H*b, W*b) -> (N, C*b*b, H, W), the inverse of depth_to_space."""
    _check4("space_to_depth", data, block_size)
    n, c, h, w = data.shape
    b = block_size
    if h % b or w % b:
        raise MXNetError(f"space_to_depth: height {h} and width {w} must be divisible by block_size {b}")
    x = data.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return x.reshape(n, c * b * b, h // b, w // b)


def _np_space_to_depth(x: np.ndarray, block_size: int) -> np.ndarray:
    n, c, h, w = x.shape
    b = block_size
    out = np.zeros((n, c * b * b, h // b, w // b))
    for ci in range(c):
        for i in range(h):
            for j in range(w):
                out[:, ((i % b) * b + (j % b)) * c + ci, i // b, j // b] = x[:, ci, i, j]
    return out


_PAD_MODES = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}


@register("Pad", aliases=("pad",), samples=lambda: [
    Sample((_u(1, 2, 3, 4),), {"pad_width": (0, 0, 0, 0, 1, 2, 2, 1), "constant_value": 0.5}, ref=_np_pad),
    Sample((_u(1, 2, 3, 4),), {"mode": "edge", "pad_width": (0, 0, 0, 0, 2, 1, 1, 3)}, ref=_np_pad),
    Sample((_u(1, 2, 3, 4),), {"mode": "reflect", "pad_width": (0, 0, 0, 0, 2, 1, 1, 2)}, ref=_np_pad),
    Sample((_u(1, 1, 2, 3, 3),), {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 1, 0, 1, 2, 0)}, ref=_np_pad)])
def Pad(data, *, mode: Literal["constant", "edge", "reflect"] = "constant", pad_width: Shape,
        constant_value: float = 0.0):
    """Pad a 4-D/5-D array; ``pad_width`` is (before, after) per axis, zero for N and C."""
    pw = [int(p) for p in as_tuple(pad_width)]
    if len(pw) != 2 * data.dim():
        raise MXNetError(f"Pad: pad_width {tuple(pw)} must have 2*ndim = {2 * data.dim()} entries for "
                         f"the input {_shape_str(data)}")
    if data.dim() not in (4, 5) or any(pw[:4]):
        raise MXNetError(f"Pad: only 4-D/5-D inputs padded on the spatial axes are supported (MXNet "
                         f"rule); got input {_shape_str(data)} with pad_width {tuple(pw)}")
    torch_pad: list = []
    for ax in reversed(range(2, data.dim())):
        torch_pad += [pw[2 * ax], pw[2 * ax + 1]]
    if mode == "constant":
        return F.pad(data, torch_pad, mode="constant", value=constant_value)
    return F.pad(data, torch_pad, mode=_PAD_MODES[mode])


def _np_pad(x: np.ndarray, pad_width: Any, mode: str = "constant", constant_value: float = 0.0) -> np.ndarray:
    pairs = [(pad_width[2 * i], pad_width[2 * i + 1]) for i in range(x.ndim)]
    if mode == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=constant_value)
    return np.pad(x, pairs, mode={"edge": "edge", "reflect": "reflect"}[mode])  # type: ignore[call-overload]


# ---- Sequence* ---------------------------------------------------------------------------------
def _seq_inputs(attrs: dict) -> list:
    return ["data", "sequence_length"] if attrs.get("use_sequence_length", False) else ["data"]


def _seq_axis(op: str, data: torch.Tensor, axis: int) -> int:
    if axis not in (0, 1):
        raise MXNetError(f"{op}: axis must be 0 (time-major) or 1 (batch-major), got {axis}")
    if data.dim() < 2:
        raise MXNetError(f"{op}: input must have at least 2 dims (time, batch, ...), got {_shape_str(data)}")
    return axis


def _lengths(op: str, sequence_length: Any, use: bool, batch: int) -> Any:
    if not use:
        return None
    if sequence_length is None:
        raise MXNetError(f"{op}: use_sequence_length=True needs the sequence_length input")
    if tuple(sequence_length.shape) != (batch,):
        raise MXNetError(f"{op}: sequence_length must have shape ({batch},), got {_shape_str(sequence_length)}")
    return sequence_length.to(torch.int64)


def _time_index(data: torch.Tensor, axis: int) -> torch.Tensor:
    """Time positions broadcastable against a (T, B) or (B, T) layout."""
    t = torch.arange(data.shape[axis], device=data.device)
    return t.reshape(-1, 1) if axis == 0 else t.reshape(1, -1)


def _tb(x: torch.Tensor, data: torch.Tensor) -> torch.Tensor:
    """Expand a (T,B)/(B,T) tensor with trailing size-1 dims to data's rank."""
    return x.reshape(tuple(x.shape) + (1,) * (data.dim() - 2))


def _seq_len_in(n_time: int, n_batch: int, axis: int = 0) -> np.ndarray:
    return np.array([n_time, 1, max(1, n_time - 1)][:n_batch], dtype=np.float64)


@register("SequenceMask", returns_view=True, active_inputs=_seq_inputs, samples=lambda: [
    Sample((_u(4, 3, 2), _seq_len_in(4, 3)), {"use_sequence_length": True, "value": -1.0},
           ref=_np_seq_mask, grad_inputs=(0,)),
    Sample((_u(3, 4, 2), _seq_len_in(4, 3)), {"use_sequence_length": True, "axis": 1},
           ref=_np_seq_mask, grad_inputs=(0,)),
    Sample((_u(4, 3),), ref=_np_seq_mask)])
def SequenceMask(data, sequence_length=None, *, use_sequence_length: bool = False, value: float = 0.0,
                 axis: int = 0):
    """Set positions at or beyond each sequence's length to ``value`` (time axis ``axis``)."""
    ax = _seq_axis("SequenceMask", data, axis)
    lens = _lengths("SequenceMask", sequence_length, use_sequence_length, data.shape[1 - ax])
    if lens is None:
        return data
    keep = _time_index(data, ax) < (lens.reshape(1, -1) if ax == 0 else lens.reshape(-1, 1))
    return torch.where(_tb(keep, data), data, torch.full_like(data, value))


def _np_seq_mask(x: np.ndarray, L: Any = None, use_sequence_length: bool = False, value: float = 0.0,
                 axis: int = 0) -> np.ndarray:
    out = x.copy()
    if not use_sequence_length:
        return out
    for b, n in enumerate(L.astype(int)):
        if axis == 0:
            out[n:, b] = value
        else:
            out[b, n:] = value
    return out


@register("SequenceLast", returns_view=True, active_inputs=_seq_inputs, samples=lambda: [
    Sample((_u(4, 3, 2), _seq_len_in(4, 3)), {"use_sequence_length": True}, ref=_np_seq_last, grad_inputs=(0,)),
    Sample((_u(3, 4, 2), _seq_len_in(4, 3)), {"use_sequence_length": True, "axis": 1}, ref=_np_seq_last,
           grad_inputs=(0,)),
    Sample((_u(4, 3),), ref=_np_seq_last)])
def SequenceLast(data, sequence_length=None, *, use_sequence_length: bool = False, axis: int = 0):
    """The last valid element of each sequence (time axis ``axis``), dropping that axis."""
    ax = _seq_axis("SequenceLast", data, axis)
    lens = _lengths("SequenceLast", sequence_length, use_sequence_length, data.shape[1 - ax])
    if lens is None:
        return data.select(ax, data.shape[ax] - 1)
    last = (lens - 1).clamp(min=0)
    moved = data.movedim(ax, 1)                               # (B, T, ...)
    idx = last.reshape((-1, 1) + (1,) * (moved.dim() - 2)).expand((moved.shape[0], 1) + tuple(moved.shape[2:]))
    return moved.gather(1, idx).squeeze(1)


def _np_seq_last(x: np.ndarray, L: Any = None, use_sequence_length: bool = False, axis: int = 0) -> np.ndarray:
    if not use_sequence_length:
        return np.take(x, x.shape[axis] - 1, axis=axis)
    rows = []
    for b, n in enumerate(L.astype(int)):
        rows.append(x[n - 1, b] if axis == 0 else x[b, n - 1])
    return np.stack(rows)


@register("SequenceReverse", active_inputs=_seq_inputs, samples=lambda: [
    Sample((_u(4, 3, 2), _seq_len_in(4, 3)), {"use_sequence_length": True}, ref=_np_seq_reverse,
           grad_inputs=(0,)),
    Sample((_u(4, 3),), ref=_np_seq_reverse)])
def SequenceReverse(data, sequence_length=None, *, use_sequence_length: bool = False, axis: int = 0):
    """Reverse the first length[b] time steps of each sequence b; later steps stay in place."""
    if axis != 0:
        raise MXNetError(f"SequenceReverse: only axis=0 is supported (as in MXNet), got axis={axis}")
    _seq_axis("SequenceReverse", data, axis)
    T, B = data.shape[0], data.shape[1]
    lens = _lengths("SequenceReverse", sequence_length, use_sequence_length, B)
    if lens is None:
        return torch.flip(data, [0])
    t = torch.arange(T, device=data.device).reshape(-1, 1)
    src = torch.where(t < lens.reshape(1, -1), lens.reshape(1, -1) - 1 - t, t)       # (T, B)
    idx = src.reshape((T, B) + (1,) * (data.dim() - 2)).expand(data.shape)
    return data.gather(0, idx)


def _np_seq_reverse(x: np.ndarray, L: Any = None, use_sequence_length: bool = False, axis: int = 0) -> np.ndarray:
    if not use_sequence_length:
        return x[::-1].copy()
    out = x.copy()
    for b, n in enumerate(L.astype(int)):
        out[:n, b] = x[:n, b][::-1]
    return out
