"""Array-creating operators (no array inputs): _zeros, _ones, _full, _arange, _eye, _linspace,
and the *_like forms. ``ctx`` accepts a Context or MXNet's spelling ('cpu(0)', 'gpu(1)')."""
from __future__ import annotations

import re
from typing import Any, Optional

import numpy as np
import torch

from ..base import MXNetError, dtype_torch
from ..context import Context, current_context
from .attrs import Dtype, OptFloat, Shape
from .registry import Sample, register
from .shape_rules import creation_shape, first_input_shape


def device_of(ctx: Any) -> torch.device:
    """torch device for a Context, an MXNet context string, or None (current context)."""
    if ctx is None or ctx == "":
        return current_context().torch_device
    if isinstance(ctx, Context):
        return ctx.torch_device
    m = re.fullmatch(r"\s*(cpu|gpu|cpu_pinned|cpu_shared)\((\d+)\)\s*", str(ctx))
    if not m:
        raise MXNetError(f"invalid ctx {ctx!r}; expected e.g. 'cpu(0)' or mx.gpu(0)")
    return Context(m.group(1), int(m.group(2))).torch_device


def _shape(shape: Any) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _sized(attrs: dict, shape: tuple) -> dict:
    return dict(attrs, shape=shape)


@register("_zeros", aliases=("_zeros_without_dtype",), infer_shape=creation_shape, sized_by_inference=_sized, samples=lambda: [
    Sample((), {"shape": (2, 3)}, ref=lambda shape: np.zeros(shape), grad=False)])
def _zeros(*, shape: Shape = (), ctx: str = "", dtype: Dtype = "float32"):
    """An array of zeros."""
    return torch.zeros(_shape(shape), dtype=dtype_torch(dtype or "float32"), device=device_of(ctx))


@register("_ones", infer_shape=creation_shape, sized_by_inference=_sized, samples=lambda: [Sample((), {"shape": (2, 3)}, ref=lambda shape: np.ones(shape), grad=False)])
def _ones(*, shape: Shape = (), ctx: str = "", dtype: Dtype = "float32"):
    """An array of ones."""
    return torch.ones(_shape(shape), dtype=dtype_torch(dtype or "float32"), device=device_of(ctx))


@register("_full", infer_shape=creation_shape, sized_by_inference=_sized, samples=lambda: [Sample((), {"shape": (2, 3), "value": 1.5},
                                           ref=lambda shape, value: np.full(shape, value), grad=False)])
def _full(*, shape: Shape = (), value: float, ctx: str = "", dtype: Dtype = "float32"):
    """An array filled with ``value``."""
    return torch.full(_shape(shape), value, dtype=dtype_torch(dtype or "float32"), device=device_of(ctx))


def _arange_shape(attrs: dict, shapes: list) -> list:
    """``(n * repeat,)``; with ``infer_range`` (and no ``stop``) the length is left to inference
    (0: unknown), as MXNet sizes ``arange(start, infer_range=True)`` by what it is used with."""
    if attrs.get("infer_range") and attrs.get("stop") is None:
        return [(0,)]
    n = _arange_length(attrs["start"], attrs.get("stop"), attrs.get("step", 1.0))
    return [(max(n, 0) * int(attrs.get("repeat", 1)),)]


def _arange_length(start: float, stop: Optional[float], step: float) -> int:
    """How many values [start, stop) holds at ``step`` (``stop=None``: [0, start))."""
    if stop is None:
        start, stop = 0, start
    return int(np.ceil((stop - start) / step))


def _arange_sized(attrs: dict, shape: tuple) -> dict:
    """An ``infer_range`` arange's attributes for an inferred length: MXNet's stop =
    start + (length / repeat) * step."""
    repeat = int(attrs.get("repeat", 1))
    if shape[0] % repeat:
        raise MXNetError(f"_arange: infer_range gives length {shape[0]}, which repeat={repeat} does not divide")
    start, step = float(attrs["start"]), float(attrs.get("step", 1.0))
    return dict(attrs, stop=start + (shape[0] // repeat) * step, infer_range=False)


def _np_arange(start: float, stop: Any = None, step: float = 1.0, repeat: int = 1, **_: Any) -> np.ndarray:
    return np.repeat(np.arange(start, stop, step) if stop is not None else np.arange(start), repeat)


@register("_arange", infer_shape=_arange_shape, sized_by_inference=_arange_sized, samples=lambda: [
    Sample((), {"start": 1, "stop": 7, "step": 2}, ref=_np_arange, grad=False),
    Sample((), {"start": 5}, ref=_np_arange, grad=False),
    Sample((), {"start": 0, "stop": 3, "repeat": 2}, ref=_np_arange, grad=False)])
def _arange(*, start: float, stop: OptFloat = None, step: float = 1.0, repeat: int = 1,
            infer_range: bool = False, ctx: str = "", dtype: Dtype = "float32"):
    """Evenly spaced values in [start, stop) (``stop=None`` means [0, start)); each repeated
    ``repeat`` times. ``infer_range`` (a Symbol graph's node, no ``stop``): the length comes from
    shape inference when the graph is bound."""
    if infer_range and stop is None:
        raise MXNetError("_arange: infer_range=True takes its length from the arrays it is used with in a "
                         "Symbol graph (bound, or evaluated with eval); give stop= where it runs on its own")
    n = _arange_length(start, stop, step)
    if stop is None:
        start, stop = 0, start
    if n < 0:
        raise MXNetError(f"_arange: empty or negative range start={start} stop={stop} step={step}")
    out_dtype = dtype_torch(dtype or "float32")
    if not out_dtype.is_floating_point:
        # MXNet casts start and step to the output dtype before stepping (as NumPy does)
        start, step = int(start), int(step)
    t = torch.arange(n, dtype=torch.float64, device=device_of(ctx)) * step + start
    if repeat != 1:
        t = t.repeat_interleave(repeat)
    return t.to(out_dtype)


@register("_eye", samples=lambda: [Sample((), {"N": 3, "M": 4, "k": 1},
                                          ref=lambda N, M, k: np.eye(N, M, k), grad=False)])
def _eye(*, N: int, M: int = 0, k: int = 0, ctx: str = "", dtype: Dtype = "float32"):
    """2-D array with ones on the k-th diagonal."""
    m = M or N
    out = torch.zeros((N, m), dtype=dtype_torch(dtype or "float32"), device=device_of(ctx))
    lo, hi = max(0, -k), min(N, m - k)
    if hi > lo:  # a diagonal outside the matrix leaves it all zeros
        idx = torch.arange(lo, hi, device=out.device)
        out[idx, idx + k] = 1
    return out


@register("_linspace", samples=lambda: [Sample((), {"start": 0, "stop": 1, "num": 5},
                                               ref=lambda start, stop, num: np.linspace(start, stop, num), grad=False)])
def _linspace(*, start: float, stop: float, num: int, endpoint: bool = True,
              ctx: str = "", dtype: Dtype = "float32"):
    """``num`` evenly spaced values from start to stop."""
    vals = np.linspace(start, stop, num, endpoint=endpoint)
    return torch.as_tensor(vals, device=device_of(ctx)).to(dtype_torch(dtype or "float32"))


@register("zeros_like", infer_shape=first_input_shape,
          samples=lambda: [Sample((np.ones((2, 3)),), ref=np.zeros_like, grad=False)])
def zeros_like(data):
    """Zeros with the shape and dtype of ``data``."""
    return torch.zeros_like(data)


@register("ones_like", infer_shape=first_input_shape,
          samples=lambda: [Sample((np.ones((2, 3)),), ref=np.ones_like, grad=False)])
def ones_like(data):
    """Ones with the shape and dtype of ``data``."""
    return torch.ones_like(data)


@register("_full_like", infer_shape=first_input_shape,
          samples=lambda: [Sample((np.ones((2, 3)),), {"fill_value": 2.0},
                                                ref=lambda x, fill_value: np.full_like(x, fill_value), grad=False)])
def _full_like(data, *, fill_value: float):
    """``fill_value`` with the shape and dtype of ``data``."""
    return torch.full_like(data, fill_value)
