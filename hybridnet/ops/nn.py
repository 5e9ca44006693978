"""Neural-network operators (MXNet 1.9.1 semantics on torch kernels).

FullyConnected, Convolution, Deconvolution, Pooling, Activation, LeakyReLU, the softmax
family, the loss heads with MXNet's special backward (SoftmaxOutput, *RegressionOutput),
Embedding, UpSampling, ROIPooling, Dropout, CTCLoss, softmax_cross_entropy, GridGenerator,
BilinearSampler and contrib BilinearResize2D.

Kernels are on the imperative hot path: they call one torch function where they can and
normalise attributes with as little Python as possible. Every operator registers samples with
NumPy references written independently of the kernels (bottom of this file).
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Literal, Optional, Sequence, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..base import MXNetError, dtype_torch
from .attrs import Dtype, OptFloat, OptInt, Shape, channels_last
from ._helpers import fill_shape as _fill, ints as _ints, per_dim as _per_dim
from .shape_rules import first_input_shape, same_shape_inputs, torch_spatial
from .registry import ActivationChoice, ChannelAffine, Sample, register

__all__: list = []  # operators are reached through the registry / nd.* / sym.*

_ShapeList = list


# ---- attribute and shape helpers --------------------------------------------------------------
def _prod(s: Sequence[int]) -> int:
    p = 1
    for d in s:
        p *= int(d)
    return p


# ---- FullyConnected ---------------------------------------------------------------------------
def _fc_active(attrs: dict) -> tuple:
    return ("data", "weight") if attrs.get("no_bias", False) else ("data", "weight", "bias")


def _fc_params(attrs: dict, shapes: _ShapeList) -> _ShapeList:
    out = list(shapes)
    d = shapes[0]
    nh = int(attrs["num_hidden"])
    if d is not None and len(d) > 0:
        if attrs.get("flatten", True):
            rest = d[1:]
            k = _prod(rest) if all(x > 0 for x in rest) else 0
        else:
            k = d[-1]
        out[1] = _fill(shapes[1], (nh, k))
    else:
        out[1] = _fill(shapes[1], (nh, 0))
    if len(out) > 2:
        out[2] = _fill(shapes[2], (nh,))
    return out


def _fc_samples() -> list:
    r = np.random.RandomState(1)

    def ref(x, w, b=None, num_hidden=0, no_bias=False, flatten=True):
        x2 = x.reshape(x.shape[0], -1) if flatten else x
        y = x2 @ w.T
        if b is not None and not no_bias:
            y = y + b
        return y

    return [
        Sample((r.randn(3, 5), r.randn(4, 5), r.randn(4)), {"num_hidden": 4}, ref=ref),
        Sample((r.randn(2, 3, 2), r.randn(4, 6), r.randn(4)), {"num_hidden": 4}, ref=ref),
        Sample((r.randn(2, 3, 5), r.randn(4, 5), r.randn(4)), {"num_hidden": 4, "flatten": False}, ref=ref),
        Sample((r.randn(3, 5), r.randn(2, 5)), {"num_hidden": 2, "no_bias": True}, ref=ref),
    ]


def _fc_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """FullyConnected's output: (N, num_hidden) with ``flatten``, else data[:-1] + (num_hidden,).
    A weight with other than num_hidden rows is an error here, before any kernel runs."""
    data, weight = shapes[0], shapes[1]
    nh = int(attrs["num_hidden"])
    if len(weight) == 2 and weight[0] != nh:
        raise MXNetError(f"FullyConnected: num_hidden={nh} but the weight has shape {tuple(weight)} "
                         f"({weight[0]} rows); input shapes {dict(zip(('data', 'weight', 'bias'), shapes))}; "
                         f"give a weight of shape ({nh}, {weight[1]}) or set num_hidden={weight[0]}")
    bias = shapes[2] if len(shapes) > 2 and not attrs["no_bias"] else None
    if len(weight) != 2 or (bias is not None and tuple(bias) != (nh,)):
        return None
    if attrs["flatten"] and len(data) != 2:
        x = (data[0], _prod(data[1:])) if len(data) > 2 else ((data[0] if data else 1), 1)
    else:
        x = tuple(data)
    if not x or x[-1] != weight[1]:
        return None
    return [x[:-1] + (nh,)]


def _fc_channel_affine(attrs: dict) -> ChannelAffine:
    """The output is (batch, num_hidden) when flattening; otherwise its rank is unknown to a
    pass and only the last axis is certain."""
    return ChannelAffine((1, -1) if attrs["flatten"] else (-1,), 2)


@register("FullyConnected", active_inputs=_fc_active, param_shapes=_fc_params, samples=_fc_samples,
          infer_shape=_fc_shape, absorbs_channel_affine=_fc_channel_affine)
def FullyConnected(data: Tensor, weight: Tensor, bias: Optional[Tensor] = None, *, num_hidden: int,
                   no_bias: bool = False, flatten: bool = True) -> Tensor:
    """y = x W^T + b. ``flatten`` views the input as (N, -1); otherwise it applies to the last axis."""
    if weight.shape[0] != num_hidden:
        raise ValueError(f"FullyConnected: weight has shape {tuple(weight.shape)}, but num_hidden={num_hidden} "
                         f"needs {num_hidden} rows")
    x = data
    if flatten and data.dim() != 2:
        # flatten(1), not reshape(n, -1): a batch of 0 works too
        x = data.flatten(1) if data.dim() > 2 else data.reshape(-1 if data.dim() else 1, 1)
    try:
        return F.linear(x, weight, None if no_bias else bias)
    except RuntimeError as e:
        raise _fc_input_error(data, x, weight, flatten, e) from None


def _fc_input_error(data: Tensor, x: Tensor, weight: Tensor, flatten: bool, err: Exception) -> Exception:
    """A clear error for FullyConnected inputs that do not fit the weight (failure path only)."""
    if data.dtype != weight.dtype:
        return _dtype_error("FullyConnected", data, weight)
    if x.dim() and weight.dim() == 2 and x.shape[-1] != weight.shape[1]:
        how = "all axes after the first" if flatten else "the last axis"
        shapes = {"data": tuple(data.shape), "weight": tuple(weight.shape)}
        return MXNetError(f"FullyConnected: the input has {x.shape[-1]} features ({how}) but the weight "
                          f"expects {weight.shape[1]} (in_units={weight.shape[1]}); input shapes {shapes}; "
                          f"feed inputs with {weight.shape[1]} features, or build the layer without "
                          f"in_units to infer it from the first input")
    return err


def _dtype_error(op: str, data: Tensor, weight: Tensor) -> MXNetError:
    """Input and parameter dtypes differ: name both and the two ways to make them agree."""
    d, w = str(data.dtype).replace("torch.", ""), str(weight.dtype).replace("torch.", "")
    fix = f"cast the input with x.astype('{w}')"
    if data.is_floating_point():
        fix += f", or the network's parameters with net.cast('{d}')"
    return MXNetError(f"{op}: the input is {d} but the weight is {w} (a layer computes in its "
                      f"parameters' dtype); {fix}")


# ---- Convolution / Deconvolution ------------------------------------------------------------
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _conv_active(attrs: dict) -> tuple:
    return ("data", "weight") if attrs.get("no_bias", False) else ("data", "weight", "bias")


def _deconv_active(attrs: dict) -> tuple:
    return ("data", "weight") if attrs.get("no_bias", True) else ("data", "weight", "bias")


def _conv_params(attrs: dict, shapes: _ShapeList) -> _ShapeList:
    out = list(shapes)
    d = shapes[0]
    k = _ints(attrs["kernel"])
    nf = int(attrs["num_filter"])
    g = int(attrs.get("num_group", 1))
    cl = channels_last(attrs.get("layout"))
    c = 0
    if d is not None and len(d) > 1:
        c = d[-1] if cl else d[1]
    cg = c // g if c else 0
    w = (nf,) + k + (cg,) if cl else (nf, cg) + k
    out[1] = _fill(shapes[1], w)
    if len(out) > 2:
        out[2] = _fill(shapes[2], (nf,))
    return out


def _deconv_params(attrs: dict, shapes: _ShapeList) -> _ShapeList:
    out = list(shapes)
    d = shapes[0]
    k = _ints(attrs["kernel"])
    nf = int(attrs["num_filter"])
    g = int(attrs.get("num_group", 1))
    cl = channels_last(attrs.get("layout"))
    c = 0
    if d is not None and len(d) > 1:
        c = d[-1] if cl else d[1]
    w = (c,) + k + (nf // g,) if cl else (c, nf // g) + k
    out[1] = _fill(shapes[1], w)
    if len(out) > 2:
        out[2] = _fill(shapes[2], (nf,))
    return out


def _conv_samples() -> list:
    r = np.random.RandomState(2)
    s = []
    # 2-D, stride/pad/dilate, bias
    s.append(Sample((r.randn(2, 3, 7, 6), r.randn(4, 3, 3, 2), r.randn(4)),
                    {"kernel": (3, 2), "num_filter": 4, "stride": (2, 1), "pad": (1, 1), "dilate": (1, 2)},
                    ref=_np_conv, rtol=1e-4, atol=1e-6))
    # groups, no bias
    s.append(Sample((r.randn(1, 4, 5, 5), r.randn(6, 2, 3, 3)),
                    {"kernel": (3, 3), "num_filter": 6, "num_group": 2, "no_bias": True},
                    ref=_np_conv, rtol=1e-4, atol=1e-6))
    # 1-D
    s.append(Sample((r.randn(2, 2, 9), r.randn(3, 2, 3), r.randn(3)),
                    {"kernel": (3,), "num_filter": 3, "stride": (2,), "pad": (1,)},
                    ref=_np_conv, rtol=1e-4, atol=1e-6))
    # 3-D
    s.append(Sample((r.randn(1, 2, 4, 4, 3), r.randn(2, 2, 2, 2, 2), r.randn(2)),
                    {"kernel": (2, 2, 2), "num_filter": 2, "pad": (1, 0, 1)},
                    ref=_np_conv, rtol=1e-4, atol=1e-6))
    return s


def _channels_first(shape: tuple, layout: Any) -> tuple:
    """A channels-last shape (N, *spatial, C) as (N, C, *spatial); others unchanged."""
    if channels_last(layout) and len(shape) > 1:
        return (shape[0], shape[-1]) + tuple(shape[1:-1])
    return tuple(shape)


def conv_output_size(x: int, k: int, s: int, p: int, d: int) -> Optional[int]:
    """Output size along one axis of a convolution as torch sizes it ((x + 2p - d(k-1) - 1) // s
    + 1), or None where torch rejects the geometry."""
    span = d * (k - 1) + 1
    if s < 1 or p < 0 or d < 1 or x + 2 * p < span:
        return None
    return (x + 2 * p - span) // s + 1


def _conv_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """Convolution's output, sized as torch's convolution sizes it: from the weight's spatial
    size, with stride/pad/dilate (out = (x + 2p - d(k-1) - 1) // s + 1)."""
    layout = attrs["layout"]
    data, weight = _channels_first(shapes[0], layout), _channels_first(shapes[1], layout)
    n = len(data) - 2
    bias = shapes[2] if len(shapes) > 2 and not attrs["no_bias"] else None
    g = int(attrs["num_group"])
    if n not in (1, 2, 3) or len(weight) != n + 2 or g < 1 or weight[0] % g or data[1] != weight[1] * g \
            or (bias is not None and tuple(bias) != (weight[0],)):
        return None
    s, p, d = (torch_spatial(attrs[a], n, dflt) for a, dflt in (("stride", 1), ("pad", 0), ("dilate", 1)))
    if s is None or p is None or d is None:
        return None
    out = [conv_output_size(*axis) for axis in zip(data[2:], weight[2:], s, p, d)]
    if None in out:
        return None
    res = (data[0], weight[0]) + tuple(out)
    return [(res[0],) + res[2:] + (res[1],) if channels_last(layout) else res]


def _conv_channel_affine(attrs: dict) -> ChannelAffine:
    """Axis 1, or the last axis in a channels-last layout; the weight's output channels come
    first in every layout (OIHW, OHWI)."""
    ndim = len(tuple(attrs["kernel"])) + 2
    channel = ndim - 1 if channels_last(attrs["layout"]) else 1
    return ChannelAffine((channel, channel - ndim), ndim)


@register("Convolution", active_inputs=_conv_active, param_shapes=_conv_params, samples=_conv_samples,
          infer_shape=_conv_shape, absorbs_channel_affine=_conv_channel_affine)
def Convolution(data: Tensor, weight: Tensor, bias: Optional[Tensor] = None, *, kernel: Shape,
                stride: Shape = (), dilate: Shape = (), pad: Shape = (), num_filter: int,
                num_group: int = 1, workspace: int = 1024, no_bias: bool = False,
                cudnn_tune: str = None, cudnn_off: bool = False,  # type: ignore[assignment]
                layout: str = None) -> Tensor:  # type: ignore[assignment]
    """N-d convolution (1/2/3-D by the kernel's length); weight (num_filter, C/num_group, *kernel).

    Channels-last layouts (NWC/NHWC/NDHWC) take a weight laid out (num_filter, *kernel, C/group).
    Small spatial inputs go through exact fast paths (:func:`_conv_fast`).
    """
    conv = _CONV.get(data.dim() - 2)
    if conv is None:
        raise _conv_input_error("Convolution", data, weight, kernel, num_group, layout, False, None)
    b = None if no_bias else bias
    cl = channels_last(layout)
    try:
        x, w = (data.movedim(-1, 1), weight.movedim(-1, 1)) if cl else (data, weight)
        out = _conv_fast(x, w, b, stride, pad, dilate, num_group) if FAST_PATHS else None
        if out is None:
            out = conv(x, w, b, stride or 1, pad or 0, dilate or 1, num_group)
        return out.movedim(1, -1) if cl else out
    except RuntimeError as e:
        raise _conv_input_error("Convolution", data, weight, kernel, num_group, layout, False, e) from None


# ---- Convolution fast paths: exact tap cropping, the linear form, tiny-output weight gradient ---
# torch's CPU (oneDNN) convolution is pathological on inputs of a few pixels: a 3x3 pad-1
# convolution on 1x1 input costs 3.4x a 1x1 one, and its weight gradient at <= 4 output positions
# per image is up to 15x slower than one matmul over the patches (benchmarks/conv_backward.py).
# Each path below computes the same sums as the plain convolution (only float rounding differs).

#: Switch for the fast paths (benchmarks/conv_backward.py turns it off to time the plain path).
FAST_PATHS = True
#: Output positions per image up to which the weight gradient is one matmul over the patches
#: (measured on 2 cores: wins at 4 positions by 1.2-4x, mixed at 9, loses at 16) ...
TINY_OUTPUT_POSITIONS = 4
#: ... for weights of at least this many elements (forward + backward of the layer at b32 on 2x2
#: input: 512x512x3x3 2.0x faster, 256x256x3x3 1.13x, 128x128x3x3 1.05x; at 64x64x3x3 and below
#: the split backward's extra call costs more than the matmul saves).
TINY_OUTPUT_MIN_WEIGHT = 1 << 19
#: Output positions per image up to which a 1x1 convolution (CPU) is one matrix product of the
#: pixels it reads (b32, 2 cores, channels-last; forward / forward+backward: 512->512 on 2x2
#: 0.69x / 0.45x the time of the convolution, 1024->1024 on 2x2 0.70x / 0.91x, 256->512 stride 2
#: on 2x2 0.54x / 0.62x, 128->256 stride 2 on 4x4 0.78x / 0.78x; at 16 positions even).
POINTWISE_MAX_POSITIONS = 4


def _tap_used(j: int, x: int, o: int, s: int, p: int, d: int) -> bool:
    """Whether kernel tap j reads a real input element (not padding) at some output position:
    output i reads input index i*s + j*d - p; is one of them in [0, x)?"""
    a = p - j * d  # i*s must lie in [a, a + x)
    i0 = -(-a // s) if a > 0 else 0
    return i0 < o and i0 * s < a + x


@functools.lru_cache(maxsize=1024)
def conv_taps(spatial: tuple, kernel: tuple, stride: tuple, pad: tuple, dilate: tuple) -> Optional[tuple]:
    """The exact geometry of a convolution of inputs of ``spatial`` size (per axis), or None where
    torch rejects it: ``(taps, pad, positions, covers, cropped)``. ``taps`` are the (start, stop) kernel
    taps per axis that read some real input element (the others only ever read zero padding and
    can be cropped off), ``pad`` the padding that keeps the output shape once they are, and
    ``positions`` the output positions per image. ``covers``: the cropped kernel spans the
    unpadded input exactly (one output position: the convolution is one matrix product);
    ``cropped``: some taps are cropped off. Cropping is done only where symmetric padding gives
    the same output."""
    taps, new_pad = [], []
    positions = 1
    covers = True  # every axis: no padding and the kernel spans the input exactly once
    for xi, ki, si, pi, di in zip(spatial, kernel, stride, pad, dilate):
        oi = conv_output_size(xi, ki, si, pi, di)
        if oi is None:
            return None
        positions *= oi
        lo, hi = 0, ki - 1
        if pi and ki > 1 and not (_tap_used(0, xi, oi, si, pi, di) and _tap_used(ki - 1, xi, oi, si, pi, di)):
            used = [j for j in range(ki) if _tap_used(j, xi, oi, si, pi, di)] or [0, ki - 1]
            p2 = pi - used[0] * di
            if p2 >= 0 and (xi + 2 * p2 - di * (used[-1] - used[0]) - 1) // si + 1 == oi:
                lo, hi, pi = used[0], used[-1], p2
        taps.append((lo, hi + 1))
        new_pad.append(pi)
        covers = covers and pi == 0 and hi - lo + 1 == xi
    cropped = any(lo or hi != k for (lo, hi), k in zip(taps, kernel))
    return tuple(taps), tuple(new_pad), positions, covers, cropped


def _conv_fast(x: Tensor, w: Tensor, b: Optional[Tensor], stride: Any, pad: Any, dilate: Any,
               groups: int) -> Optional[Tensor]:
    """A channels-first convolution through an exact fast path, or None for the plain one.

    1. Tap cropping: kernel taps that only ever read zero padding (a 3x3 pad-1 kernel on a 1x1
       input uses only its centre) are sliced off the weight and the padding shrunk to match, so
       the output shape and every product with a real input element are unchanged; autograd
       flows through the slice, so the cropped taps get zero gradient as before.
    2. The linear form: a kernel that then covers the whole unpadded input (one output position)
       is a matrix product of the flattened input and weight (F.linear: 2.6-4.5x faster, both ways).
    3. The pixel form: a 1x1 kernel without padding at <= POINTWISE_MAX_POSITIONS output positions
       per image (CPU) is one product of the pixels it reads with the (O, C) weight.
    4. A tiny output (<= TINY_OUTPUT_POSITIONS positions per image, a weight of at least
       TINY_OUTPUT_MIN_WEIGHT elements, CPU) while the weight needs a gradient runs
       :class:`_TinyOutputConv` (weight gradient as one matmul over the patches).
    Inputs that do not fit the weight (channels, rank, bias) take the plain path, whose error
    :func:`_conv_input_error` explains.
    """
    n = x.dim() - 2
    xs, ws = x.shape, w.shape
    if len(ws) != n + 2 or groups < 1 or xs[1] != ws[1] * groups or ws[0] % groups \
            or (b is not None and (b.dim() != 1 or b.shape[0] != ws[0])):
        return None
    st, pd, dl = torch_spatial(stride, n, 1), torch_spatial(pad, n, 0), torch_spatial(dilate, n, 1)
    if st is None or pd is None or dl is None:
        return None
    geometry = conv_taps(tuple(xs[2:]), tuple(ws[2:]), tuple(st), tuple(pd), tuple(dl))
    if geometry is None:
        return None  # torch's error
    taps, new_pad, positions, covers, crop = geometry
    if crop:
        w = w[(slice(None), slice(None)) + tuple(slice(lo, hi) for lo, hi in taps)]
    if covers and groups == 1:
        # flattened channels-last: copying the cropped weight in that order measured 2.7x faster
        out = F.linear(x.movedim(1, -1).flatten(1), w.movedim(1, -1).flatten(1).contiguous(), b)
        return out.reshape((x.shape[0], ws[0]) + (1,) * n)
    if positions <= POINTWISE_MAX_POSITIONS and groups == 1 and x.device.type == "cpu" \
            and all(k == 1 for k in w.shape[2:]) and not any(new_pad):
        return _pointwise_as_linear(x, w, b, st)
    if positions <= TINY_OUTPUT_POSITIONS and groups == 1 and w.requires_grad and torch.is_grad_enabled() \
            and x.device.type == "cpu" and w.numel() >= TINY_OUTPUT_MIN_WEIGHT:
        return _TinyOutputConv.apply(x, w, b, st, new_pad, dl)
    if not crop:
        return None
    return _CONV[n](x, w, b, st, new_pad, dl, groups)


def _pointwise_as_linear(x: Tensor, w: Tensor, b: Optional[Tensor], stride: Sequence[int]) -> Tensor:
    """A 1x1 convolution without padding as one product of the pixels it reads, (positions, C)
    @ (C, O): its output keeps the input's memory order (channels-last in, channels-last out)."""
    pixels_last = x.movedim(1, -1).is_contiguous()
    if any(s > 1 for s in stride):
        x = x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]
    pixels = x.movedim(1, -1)
    out = F.linear(pixels.reshape(-1, x.shape[1]), w.reshape(w.shape[0], -1), b)
    out = out.reshape(pixels.shape[:-1] + (w.shape[0],)).movedim(-1, 1)
    return out if pixels_last else out.contiguous()


def _patches(x: Tensor, kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int],
             dilate: Sequence[int]) -> Tensor:
    """The input patches every output position reads, (N, C, *out, *kernel) (a strided view of
    the padded input; differentiable)."""
    n = len(kernel)
    if any(pad):
        x = F.pad(x, [q for p in reversed(pad) for q in (p, p)])
    for i in range(n):
        x = x.unfold(2 + i, dilate[i] * (kernel[i] - 1) + 1, stride[i])
        if dilate[i] > 1:
            x = x[..., ::dilate[i]]
    return x


class _TinyOutputConv(torch.autograd.Function):
    """Convolution (groups=1) whose weight gradient is one matmul over the input patches:
    sum over (image, output position) of grad_out x patch. oneDNN's weight gradient is up to 15x
    slower when there are only a few output positions per image. The input gradient is torch's
    own convolution backward. Written with differentiable ops, so double backward works."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, b: Optional[Tensor], stride: tuple, pad: tuple,
                dilate: tuple) -> Tensor:
        ctx.save_for_backward(x, w)
        ctx.geometry = (stride, pad, dilate)
        return _CONV[x.dim() - 2](x, w, b, stride, pad, dilate)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        x, w = ctx.saved_tensors
        stride, pad, dilate = ctx.geometry
        n = x.dim() - 2
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = torch.ops.aten.convolution_backward(g, x, w, None, list(stride), list(pad), list(dilate), False,
                                                     [0] * n, 1, [True, False, False])[0]
        if ctx.needs_input_grad[1]:
            if n == 2:  # im2col measured 1.2x faster than the generic strided patches here
                cols = F.unfold(x, w.shape[2:], dilate, pad, stride)  # (N, C*kh*kw, L)
                co, nb = g.shape[1], g.shape[0]
                gw = (g.reshape(nb, co, -1).transpose(0, 1).reshape(co, -1)
                      @ cols.transpose(1, 2).reshape(-1, cols.shape[1])).reshape(w.shape)
            else:
                axes = [0] + list(range(2, 2 + n))
                gw = torch.tensordot(g, _patches(x, w.shape[2:], stride, pad, dilate), dims=(axes, axes))
        if ctx.needs_input_grad[2]:
            gb = g.sum([0] + list(range(2, 2 + n)))
        return gx, gw, gb, None, None, None


def _conv_input_error(op: str, data: Tensor, weight: Tensor, kernel: Any, num_group: int, layout: Any,
                      transposed: bool, err: Optional[Exception]) -> Exception:
    """A clear error for (de)convolution inputs that do not fit the layer (failure path only):
    wrong rank, wrong number of channels, or a dtype other than the weight's."""
    k = _ints(kernel)
    shape = tuple(data.shape)
    lay = layout if isinstance(layout, str) and layout != "None" else \
        {1: "NCW", 2: "NCHW", 3: "NCDHW"}.get(len(k), "NC...")
    if data.dim() != len(k) + 2:
        return MXNetError(f"{op}: a {len(k)}-D kernel {k} needs {len(k) + 2}-D input ({lay}: batch, "
                          f"channels and {len(k)} spatial axes), got {data.dim()}-D input of shape "
                          f"{shape}; reshape the input, or use the {data.dim() - 2}-D layer "
                          f"(Conv{max(data.dim() - 2, 1)}D...) for it")
    if data.dtype != weight.dtype:
        return _dtype_error(op, data, weight)
    cl = channels_last(layout)
    c_axis = data.dim() - 1 if cl else 1
    w_in = weight.shape[0] if transposed else weight.shape[-1 if cl else 1] * num_group
    if shape[c_axis] != w_in:
        return MXNetError(f"{op}: the input has {shape[c_axis]} channels (axis {c_axis} of shape {shape}, "
                          f"layout {lay}) but the weight {tuple(weight.shape)} expects {w_in} "
                          f"(in_channels={w_in}, num_group={num_group}); feed inputs with {w_in} "
                          f"channels, or build the layer with in_channels={shape[c_axis]} (or without "
                          f"in_channels, to infer it from the first input)")
    return err if err is not None else MXNetError(
        f"{op}: data must be 3-D, 4-D or 5-D ({lay}), got shape {shape}")


def _deconv_geometry(data_shape: Sequence[int], n: int, kernel: Any, stride: Any, dilate: Any,
                     pad: Any, adj: Any, target_shape: Any) -> tuple:
    """(stride, dilate, pad, adj) per MXNet, computing pad/adj from ``target_shape`` if given."""
    k = _per_dim(kernel, n, 1, "kernel", "Deconvolution")
    s = _per_dim(stride, n, 1, "stride", "Deconvolution")
    d = _per_dim(dilate, n, 1, "dilate", "Deconvolution")
    ts = _ints(target_shape)
    if ts and any(ts):
        ts = _per_dim(ts, n, 0, "target_shape", "Deconvolution")
        spatial = data_shape[-n:]
        p, a = [], []
        for i in range(n):
            total = s[i] * (spatial[i] - 1) + d[i] * (k[i] - 1) + 1 - ts[i]
            if total < 0:
                raise MXNetError(f"Deconvolution: target_shape {tuple(ts)} is too big for input "
                                 f"spatial shape {tuple(spatial)} with kernel {k} and stride {s}")
            a.append(total % 2)
            p.append((total + 1) // 2)
        return s, d, tuple(p), tuple(a)
    return s, d, _per_dim(pad, n, 0, "pad", "Deconvolution"), _per_dim(adj, n, 0, "adj", "Deconvolution")


def _deconv_samples() -> list:
    r = np.random.RandomState(3)
    return [
        Sample((r.randn(2, 3, 4, 3), r.randn(3, 2, 3, 3), r.randn(2)),
               {"kernel": (3, 3), "num_filter": 2, "stride": (2, 2), "pad": (1, 0), "adj": (1, 0),
                "no_bias": False}, ref=_np_deconv, rtol=1e-4, atol=1e-6),
        Sample((r.randn(1, 4, 5), r.randn(4, 1, 3)),
               {"kernel": (3,), "num_filter": 2, "num_group": 2, "stride": (2,), "dilate": (2,)},
               ref=_np_deconv, rtol=1e-4, atol=1e-6),
        Sample((r.randn(1, 2, 3, 3), r.randn(2, 3, 4, 4)),
               {"kernel": (4, 4), "num_filter": 3, "stride": (2, 2), "target_shape": (6, 7)},
               ref=_np_deconv, rtol=1e-4, atol=1e-6),
    ]


def _deconv_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """Deconvolution's output per axis: s(x - 1) - 2p + d(k - 1) + adj + 1 with the weight's
    spatial size k (pad and adj derived from ``target_shape`` when given, as the kernel does)."""
    layout = attrs["layout"]
    data, weight = _channels_first(shapes[0], layout), _channels_first(shapes[1], layout)
    n = len(data) - 2
    bias = shapes[2] if len(shapes) > 2 and not attrs["no_bias"] else None
    g = int(attrs["num_group"])
    if n not in (1, 2, 3) or len(weight) != n + 2 or g < 1 or weight[0] % g or data[1] != weight[0] \
            or (bias is not None and tuple(bias) != (weight[1] * g,)):
        return None
    if attrs["target_shape"] or attrs["adj"]:
        try:
            s, d, p, a = _deconv_geometry(data, n, attrs["kernel"], attrs["stride"], attrs["dilate"],
                                          attrs["pad"], attrs["adj"], attrs["target_shape"])
        except MXNetError:
            return None
    else:
        s, p, d = (torch_spatial(attrs[k], n, dflt) for k, dflt in (("stride", 1), ("pad", 0), ("dilate", 1)))
        a = (0,) * n
    if s is None or p is None or d is None:
        return None
    out = []
    for x, k, si, pi, di, ai in zip(data[2:], weight[2:], s, p, d, a):
        o = si * (x - 1) - 2 * pi + di * (k - 1) + ai + 1
        if si < 1 or di < 1 or pi < 0 or ai < 0 or ai >= max(si, di) or o < 1:
            return None
        out.append(o)
    res = (data[0], weight[1] * g) + tuple(out)
    return [(res[0],) + res[2:] + (res[1],) if channels_last(layout) else res]


@register("Deconvolution", active_inputs=_deconv_active, param_shapes=_deconv_params,
          samples=_deconv_samples, infer_shape=_deconv_shape)
def Deconvolution(data: Tensor, weight: Tensor, bias: Optional[Tensor] = None, *, kernel: Shape,
                  stride: Shape = (), dilate: Shape = (), pad: Shape = (), adj: Shape = (),
                  target_shape: Shape = (), num_filter: int, num_group: int = 1,
                  workspace: int = 512, no_bias: bool = True, cudnn_tune: str = None,  # type: ignore[assignment]
                  cudnn_off: bool = False, layout: str = None) -> Tensor:  # type: ignore[assignment]
    """Transposed convolution; weight (C, num_filter/num_group, *kernel).

    Output size per axis: stride*(in-1) + dilate*(kernel-1) + 1 - 2*pad + adj; with
    ``target_shape`` MXNet derives pad and adj so the output has exactly that size.
    """
    n = data.dim() - 2
    convt = _CONVT.get(n)
    if convt is None:
        raise _conv_input_error("Deconvolution", data, weight, kernel, num_group, layout, True, None)
    cl = channels_last(layout)
    x, w = (data.movedim(-1, 1), weight.movedim(-1, 1)) if cl else (data, weight)
    try:
        if target_shape or adj:
            s, d, p, a = _deconv_geometry(x.shape, n, kernel, stride, dilate, pad, adj, target_shape)
            out = convt(x, w, None if no_bias else bias, s, p, a, num_group, d)
        else:
            out = convt(x, w, None if no_bias else bias, stride or 1, pad or 0, 0, num_group,
                        dilate or 1)
    except RuntimeError as e:
        raise _conv_input_error("Deconvolution", data, weight, kernel, num_group, layout, True, e) from None
    return out.movedim(1, -1) if cl else out


# ---- Pooling ----------------------------------------------------------------------------------
class _MaxPool2x2(torch.autograd.Function):
    """2x2 / stride-2 max pooling as maxima of the four strided quarters, with torch's (and
    MXNet's) gradient: all of it to the first maximum of each window, in row-major order."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:  # type: ignore[override]
        out = _max_of_quarters(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:  # type: ignore[override]
        x, out = ctx.saved_tensors
        gx = torch.zeros_like(x)
        taken: Optional[Tensor] = None
        for r, c in ((0, 0), (0, 1), (1, 0)):
            q = x[..., r::2, c::2]
            hit = (q == out) | q.isnan()  # a window holding NaN has it as its maximum
            if taken is None:
                taken = hit
            else:
                hit &= ~taken
                taken |= hit
            gx[..., r::2, c::2] = g * hit
        gx[..., 1::2, 1::2] = g * ~cast(Tensor, taken)
        return gx


def _max_of_quarters(x: Tensor) -> Tensor:
    top = torch.maximum(x[..., 0::2, 0::2], x[..., 0::2, 1::2])
    return torch.maximum(top, torch.maximum(x[..., 1::2, 0::2], x[..., 1::2, 1::2]), out=top)


#: inputs with at least this many elements take the quarters form under autograd too (measured
#: crossover, one thread: LeNet's 16x6x24x24 forward + backward 149 us torch, 280 us quarters
#: (its Python Function costs); 256x16x8x8 1540 vs 928 us; 256x6x24x24 5177 vs 2881 us)
_QUARTERS_GRAD_MIN = 1 << 17
#: channels-last inputs from this size on (torch's channels-last kernel is fast on many channels
#: and small images: 16x16x8x8 10 us vs 18; 16x6x24x24 97 vs 39; 256x6x24x24 2623 vs 458)
_QUARTERS_CHANNELS_LAST_MIN = 1 << 15


def _max_pool2d(data: Tensor, k: Sequence[int], s: Sequence[int], p: Sequence[int] = (0, 0), *more: Any) -> Tensor:
    """2-D max pooling; 2x2 windows at stride 2 over contiguous NCHW data (and large enough
    channels-last data) as three elementwise maxima of strided quarters: the same values, where
    torch's max_pool2d runs 2.5-12x slower (4.8 ms vs 0.41 ms for LeNet's 256x6x24x24 on one
    thread; channels-last 2.6 ms)."""
    # symbolic sizes (torch.export with a dynamic batch): no size-dependent choice, which would
    # become a guard on the exported program's sizes
    if not more and tuple(k) == (2, 2) and tuple(s) == (2, 2) and tuple(p) == (0, 0) and data.dim() == 4 \
            and all(type(d) is int for d in data.shape) \
            and data.shape[-1] > 1 and data.shape[-2] > 1 and (data.is_contiguous() or (
                data.numel() >= _QUARTERS_CHANNELS_LAST_MIN and data.is_contiguous(memory_format=torch.channels_last))):
        h, w = data.shape[-2] // 2 * 2, data.shape[-1] // 2 * 2
        x = data if (h, w) == tuple(data.shape[-2:]) else data[..., :h, :w]  # 'valid': floor
        if not (data.requires_grad and torch.is_grad_enabled()):
            return _max_of_quarters(x)
        if data.numel() >= _QUARTERS_GRAD_MIN:
            return _MaxPool2x2.apply(x)
    return F.max_pool2d(data, k, s, p, *more)  # type: ignore[call-overload]


_MAXPOOL: "dict[int, Callable[..., Tensor]]" = {1: F.max_pool1d, 2: _max_pool2d, 3: F.max_pool3d}
_AVGPOOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _pool_total(attrs: dict) -> int:
    # spec B.2.5: MKLDNN builds add a hidden workspace output to max pooling in NC* layouts
    if attrs.get("pool_type", "max") != "max":
        return 1
    if attrs.get("layout") not in (None, "None", "NCW", "NCHW", "NCDHW"):
        return 1
    k = _ints(attrs.get("kernel", ()))
    return 2 if 1 <= len(k) <= 3 else 1


def _lp_root(x: Tensor, p: int) -> Tensor:
    if p == 1:
        return x
    if p == 2:
        return torch.sqrt(x)
    return torch.sign(x) * torch.abs(x).pow(1.0 / p)


def _global_pool(x: Tensor, pool_type: str, p_value: Any) -> Tensor:
    dims = tuple(range(2, x.dim()))
    if pool_type == "max":
        return x.amax(dim=dims, keepdim=True)
    if pool_type == "avg":
        return x.mean(dim=dims, keepdim=True)
    if pool_type == "sum":
        return x.sum(dim=dims, keepdim=True)
    p = int(p_value or 1)
    return _lp_root(x.pow(p).sum(dim=dims, keepdim=True), p)


def _window_counts(o: int, s: int, k: int, lo: int, hi: int, like: Tensor) -> Tensor:
    """Per output position: how many of its window's cells fall in [lo, hi) (padded coords)."""
    start = torch.arange(o, device=like.device, dtype=torch.int64) * s
    c = torch.clamp(torch.clamp(start + k, max=hi) - torch.clamp(start, min=lo), min=0)
    return c.to(like.dtype)


def Pooling_impl(x: Tensor, k: tuple, s: tuple, p: tuple, pool_type: str, convention: str,
                 p_value: Any, count_include_pad: bool) -> Tensor:
    """Pooling on NC* data with MXNet's output-size formulas and averaging divisors."""
    n = len(k)
    sp = x.shape[2:]
    if convention == "valid":
        outs = [(sp[i] + 2 * p[i] - k[i]) // s[i] + 1 for i in range(n)]
    elif convention == "full":
        outs = [-(-(sp[i] + 2 * p[i] - k[i]) // s[i]) + 1 for i in range(n)]
    else:  # same
        outs = [-(-(sp[i] + 2 * p[i]) // s[i]) for i in range(n)]
    for i in range(n):
        if outs[i] < 1 or k[i] > sp[i] + 2 * p[i]:
            raise MXNetError(f"Pooling: kernel {k} does not fit input spatial shape {tuple(sp)} "
                             f"padded by {p}")
    same = convention == "same"
    fits_pad = all(2 * p[i] <= k[i] for i in range(n))
    # no window reaches past the padded input
    exact = all((outs[i] - 1) * s[i] + k[i] <= sp[i] + 2 * p[i] for i in range(n))
    # torch's ceil_mode drops a last window starting in the right padding; MXNet keeps it
    ceil_ok = all((outs[i] - 1) * s[i] < sp[i] + p[i] for i in range(n))
    full = convention == "full"
    if not same and fits_pad:
        if pool_type == "max" and (exact or ceil_ok):
            return _MAXPOOL[n](x, k, s, p, 1, full and not exact)
        if pool_type == "avg" and (exact or ceil_ok):
            return _AVGPOOL[n](x, k, s, p, full and not exact, count_include_pad)
        if pool_type in ("sum", "lp") and exact:
            pv = int(p_value or 1) if pool_type == "lp" else 1
            xx = x.pow(pv) if pv != 1 else x
            out = _AVGPOOL[n](xx, k, s, p, False, True) * _prod(k)
            return _lp_root(out, pv) if pool_type == "lp" else out
    # general path: explicit padding, then 'valid' pooling
    if same:
        tot = [max((outs[i] - 1) * s[i] + k[i] - sp[i], 0) for i in range(n)]
        left = [t // 2 for t in tot]
        right_region = [tot[i] - left[i] for i in range(n)]
    else:
        left = list(p)
        right_region = list(p)
    right = [(outs[i] - 1) * s[i] + k[i] - sp[i] - left[i] for i in range(n)]
    pads: list = []
    for i in reversed(range(n)):
        pads += [left[i], right[i]]
    if pool_type == "max":
        xp = F.pad(x, pads, value=float("-inf"))
        return _MAXPOOL[n](xp, k, s)
    pv = int(p_value or 1) if pool_type == "lp" else 1
    xx = x.pow(pv) if pv != 1 else x
    sums = _AVGPOOL[n](F.pad(xx, pads), k, s, 0, False, True) * _prod(k)
    if pool_type == "sum":
        return sums
    if pool_type == "lp":
        return _lp_root(sums, pv)
    div = None
    for i in range(n):
        if count_include_pad:
            c = _window_counts(outs[i], s[i], k[i], 0, sp[i] + left[i] + right_region[i], x)
        else:
            c = _window_counts(outs[i], s[i], k[i], left[i], left[i] + sp[i], x)
        shape = [1] * (n + 2)
        shape[2 + i] = outs[i]
        c = c.reshape(shape)
        div = c if div is None else div * c
    assert div is not None
    return sums / torch.clamp(div, min=1)


def _pool_samples() -> list:
    r = np.random.RandomState(4)
    x = r.randn(2, 2, 7, 6)
    x1 = r.randn(1, 3, 9)
    x3 = r.randn(1, 1, 4, 5, 3)
    S = []
    for pt in ("max", "avg", "sum"):
        S.append(Sample((x,), {"kernel": (3, 2), "stride": (2, 2), "pad": (1, 1), "pool_type": pt},
                        ref=_np_pool, rtol=1e-5, atol=1e-6))
        S.append(Sample((x,), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": pt,
                               "pooling_convention": "full"}, ref=_np_pool, rtol=1e-5, atol=1e-6))
    S.append(Sample((x,), {"kernel": (2, 2), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg",
                           "pooling_convention": "full", "count_include_pad": False},
                    ref=_np_pool, rtol=1e-5, atol=1e-6))
    S.append(Sample((x,), {"kernel": (3, 3), "stride": (3, 3), "pad": (1, 1), "pool_type": "avg",
                           "pooling_convention": "full", "count_include_pad": True},
                    ref=_np_pool, rtol=1e-5, atol=1e-6))
    S.append(Sample((x,), {"kernel": (2, 2), "pool_type": "max"}, ref=_np_pool))
    S.append(Sample((x,), {"kernel": (2, 2), "stride": (2, 2), "pool_type": "lp", "p_value": 2},
                    ref=_np_pool, rtol=1e-5, atol=1e-6))
    S.append(Sample((np.abs(x) + 0.1,), {"kernel": (2, 3), "stride": (1, 2), "pool_type": "lp",
                                          "p_value": 3, "pooling_convention": "full"},
                    ref=_np_pool, rtol=1e-5, atol=1e-6))
    S.append(Sample((x,), {"kernel": (1, 1), "global_pool": True, "pool_type": "avg",
                           "pooling_convention": "full"}, ref=_np_pool))
    S.append(Sample((x,), {"global_pool": True, "pool_type": "max"}, ref=_np_pool))
    S.append(Sample((x1,), {"kernel": (3,), "stride": (2,), "pool_type": "max",
                            "pooling_convention": "same"}, ref=_np_pool))
    S.append(Sample((x1,), {"kernel": (4,), "stride": (3,), "pad": (2,), "pool_type": "avg"},
                    ref=_np_pool))
    S.append(Sample((x3,), {"kernel": (2, 2, 2), "stride": (1, 2, 1), "pool_type": "max"}, ref=_np_pool))
    S.append(Sample((x3,), {"kernel": (2, 3, 2), "stride": (2, 2, 2), "pad": (1, 1, 1),
                            "pool_type": "avg", "pooling_convention": "full"}, ref=_np_pool))
    S.append(Sample((np.transpose(x, (0, 2, 3, 1)).copy(),),
                    {"kernel": (3, 2), "stride": (2, 1), "pool_type": "max", "layout": "NHWC"},
                    ref=_np_pool))
    return S


def _pool_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """Pooling's output with MXNet's conventions (valid: floor((x + 2p - k) / s) + 1; full:
    ceil(...) + 1; same: ceil(x / s)); global pooling keeps size-1 spatial axes."""
    layout = attrs["layout"]
    data = _channels_first(shapes[0], layout)
    n = len(data) - 2
    if n not in (1, 2, 3):
        return None
    if attrs["global_pool"]:
        out: tuple = (1,) * n
    else:
        try:
            k, s, p, _ = _pool_geometry(attrs["kernel"], attrs["stride"], attrs["pad"], n)
        except MXNetError:
            return None
        conv = attrs["pooling_convention"]
        if (conv == "same" and any(p)) or any(v < 1 for v in k + s) or any(v < 0 for v in p) or \
                (attrs["pool_type"] == "lp" and attrs["p_value"] not in (1, 2, 3)):
            return None
        sizes = []
        for x, ki, si, pi in zip(data[2:], k, s, p):
            if conv == "valid":
                o = (x + 2 * pi - ki) // si + 1
            elif conv == "full":
                o = -(-(x + 2 * pi - ki) // si) + 1
            else:
                o = -(-(x + 2 * pi) // si)
            if o < 1 or ki > x + 2 * pi:
                return None
            sizes.append(o)
        out = tuple(sizes)
    res = tuple(data[:2]) + out
    return [(res[0],) + res[2:] + (res[1],) if channels_last(layout) else res]


@register("Pooling", total_outputs=_pool_total, output_names=("output", "workspace"),
          samples=_pool_samples, infer_shape=_pool_shape)
def Pooling(data: Tensor, *, kernel: Shape = (), pool_type: Literal["avg", "lp", "max", "sum"] = "max",
            global_pool: bool = False, cudnn_off: bool = False,
            pooling_convention: Literal["full", "same", "valid"] = "valid", stride: Shape = (),
            pad: Shape = (), p_value: OptInt = None, count_include_pad: bool = True,
            layout: str = None) -> Tensor:  # type: ignore[assignment]
    """Max / avg / sum / Lp pooling with MXNet's conventions.

    valid: out = floor((x + 2p - k) / s) + 1; full: ceil(...) + 1 (windows may overhang);
    same (1-D): ceil(x / s). Stride defaults to 1, pad to 0; ``global_pool`` pools everything.
    """
    cl = channels_last(layout)
    if cl:
        data = data.movedim(-1, 1)
    n = data.dim() - 2
    if n < 1 or n > 3:
        raise MXNetError(f"Pooling: data must be 3-D, 4-D or 5-D (N, C, *spatial), got shape "
                         f"{tuple(data.shape)}")
    if global_pool:
        out = _global_pool(data, pool_type, p_value)
    else:
        k, s, p, fits = _pool_geometry(kernel, stride, pad, n)
        if pooling_convention == "same" and any(p):
            raise MXNetError(f"Pooling: pooling_convention='same' computes its own padding; "
                             f"pad={p} must be 0 (leave it out)")
        if pooling_convention == "valid" and fits and pool_type == "max":
            out = _MAXPOOL[n](data, k, s, p)
        elif pooling_convention == "valid" and fits and pool_type == "avg":
            out = _AVGPOOL[n](data, k, s, p, False, count_include_pad)
        else:
            if pool_type == "lp" and p_value not in (1, 2, 3):
                raise MXNetError(f"Pooling: pool_type='lp' needs p_value 1, 2 or 3, got {p_value!r}")
            out = Pooling_impl(data, k, s, p, pool_type, pooling_convention, p_value, count_include_pad)
    return out.movedim(1, -1) if cl else out


_POOL_GEOM: dict = {}


def _pool_geometry(kernel: Any, stride: Any, pad: Any, n: int) -> tuple:
    """(kernel, stride, pad, pad fits torch's limit) as n-tuples; cached per attribute values."""
    key = (kernel, stride, pad, n)
    try:
        return _POOL_GEOM[key]
    except (KeyError, TypeError):
        pass
    k = _ints(kernel)
    if len(k) != n:
        raise MXNetError(f"Pooling: kernel={tuple(k)} needs {len(k) + 2}-D data, got {n + 2}-D data; "
                         f"give a kernel with one value per spatial axis or set global_pool=True")
    s = _per_dim(stride, n, 1, "stride", "Pooling")
    zeros = _ints(pad)
    # an all-zero pad of any length means no padding (MXNet reads only the first n values)
    p = (0,) * n if zeros and not any(zeros) else _per_dim(pad, n, 0, "pad", "Pooling")
    geom = (k, s, p, all(2 * p[i] <= k[i] for i in range(n)))
    try:
        if len(_POOL_GEOM) > 512:
            _POOL_GEOM.clear()
        _POOL_GEOM[key] = geom
    except TypeError:  # lists are not hashable
        pass
    return geom


# ---- Activation / LeakyReLU -------------------------------------------------------------------
_ACT = {"relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "softrelu": F.softplus,
        "softsign": F.softsign}

_NP_ACT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


def _act_samples() -> list:
    r = np.random.RandomState(5)
    x = r.uniform(-3, 3, (3, 4))
    x[np.abs(x) < 0.05] = 0.3  # keep away from relu's kink
    return [Sample((x,), {"act_type": a}, ref=lambda x, act_type: _NP_ACT[act_type](x)) for a in _NP_ACT]


def _fused_activation(attrs: dict) -> Optional[ActivationChoice]:
    act = attrs["act_type"]
    return ActivationChoice(act) if act in ("relu", "sigmoid", "tanh") else None


@register("Activation", infer_inputs=same_shape_inputs, listed_inputs=False, infer_shape=first_input_shape,
          samples=_act_samples, fused_activation=_fused_activation)
def Activation(data: Tensor, *,
               act_type: Literal["relu", "sigmoid", "softrelu", "softsign", "tanh"]
               ) -> Tensor:
    """Elementwise activation: relu, sigmoid, tanh, softrelu (log(1+e^x)), softsign (MXNet 1.9.1's set)."""
    fn = _ACT.get(act_type)
    if fn is None:
        raise MXNetError(f"Activation: unknown act_type {act_type!r}; valid names are {sorted(_ACT)} "
                         f"(LeakyReLU covers leaky, prelu, elu, selu, gelu and rrelu)")
    return fn(data)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


def _lrelu_active(attrs: dict) -> tuple:
    return ("data", "gamma") if attrs.get("act_type", "leaky") == "prelu" else ("data",)


def _lrelu_params(attrs: dict, shapes: _ShapeList) -> _ShapeList:
    out = list(shapes)
    if len(out) > 1:
        d = shapes[0]
        c = d[1] if d is not None and len(d) > 1 else (1 if d is not None and len(d) == 1 else 0)
        out[1] = _fill(shapes[1], (c,))
    return out


def _lrelu_nout(attrs: dict) -> int:
    return 2 if attrs.get("act_type", "leaky") == "rrelu" else 1


def _np_lrelu(x, gamma=None, act_type="leaky", slope=0.25, lower_bound=0.125, upper_bound=0.334):
    if act_type == "leaky":
        return np.where(x > 0, x, slope * x)
    if act_type == "prelu":
        if gamma.ndim > 1:
            g = gamma.reshape(gamma.shape + (1,) * (x.ndim - gamma.ndim))
        else:
            g = gamma.reshape((1, -1) + (1,) * (x.ndim - 2)) if gamma.size > 1 else gamma.reshape(())
        return np.where(x > 0, x, g * x)
    if act_type == "elu":
        return np.where(x > 0, x, slope * np.expm1(x))
    if act_type == "selu":
        return _SELU_LAMBDA * np.where(x > 0, x, _SELU_ALPHA * np.expm1(x))
    if act_type == "gelu":
        import math as _m
        erf = np.vectorize(_m.erf)
        return 0.5 * x * (1 + erf(x / np.sqrt(2)))
    if act_type == "rrelu":
        a = (lower_bound + upper_bound) / 2
        return [np.where(x > 0, x, a * x), np.full_like(x, a)]
    raise ValueError(act_type)


def _lrelu_samples() -> list:
    r = np.random.RandomState(6)
    x = r.uniform(-2, 2, (2, 3, 4))
    x[np.abs(x) < 0.05] = 0.5
    return [
        Sample((x,), {}, ref=_np_lrelu),
        Sample((x,), {"act_type": "leaky", "slope": 0.1}, ref=_np_lrelu),
        Sample((x, r.uniform(0.1, 0.5, (3,))), {"act_type": "prelu"}, ref=_np_lrelu),
        Sample((x, np.array([0.3])), {"act_type": "prelu"}, ref=_np_lrelu),
        Sample((x, r.uniform(0.1, 0.5, (2, 3))), {"act_type": "prelu"}, ref=_np_lrelu),
        Sample((x,), {"act_type": "elu", "slope": 0.7}, ref=_np_lrelu),
        Sample((x,), {"act_type": "selu"}, ref=_np_lrelu),
        Sample((x,), {"act_type": "gelu"}, ref=_np_lrelu),
        Sample((x,), {"act_type": "rrelu"}, ref=_np_lrelu, grad=False),
    ]


def _lrelu_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """The data's shape (twice for rrelu: output and mask); prelu's gamma must be (1,) or
    (channels,) here (other gammas go to the kernel, which broadcasts or rejects them)."""
    data = tuple(shapes[0])
    act = attrs["act_type"]
    if act == "prelu":
        gamma = shapes[1] if len(shapes) > 1 else None
        if gamma is None or len(gamma) != 1 or not (gamma[0] == 1 or (len(data) > 1 and gamma[0] == data[1])):
            return None
    if act not in ("elu", "gelu", "leaky", "prelu", "rrelu", "selu"):
        return None
    return [data, data] if act == "rrelu" else [data]


@register("LeakyReLU", num_outputs=_lrelu_nout, output_names=("output", "mask"),
          active_inputs=_lrelu_active, param_shapes=_lrelu_params, samples=_lrelu_samples,
          infer_shape=_lrelu_shape,
          input_init={"gamma": '["Constant", {"value": 0.25}]'},
          fused_activation=lambda a: ActivationChoice("leaky_relu", float(a["slope"])) if a["act_type"] == "leaky"
          else None)
def LeakyReLU(data: Tensor, gamma: Optional[Tensor] = None, *,
              act_type: Literal["elu", "gelu", "leaky", "prelu", "rrelu", "selu"] = "leaky",
              slope: float = 0.25, lower_bound: float = 0.125, upper_bound: float = 0.334,
              is_train: bool = False) -> Any:
    """Leaky ReLU family: leaky (slope), prelu (learned gamma over axis 1, or of rank > 1
    broadcast over the leading axes), elu, selu, gelu (erf),
    rrelu (random slope in [lower, upper] when training, their mean otherwise; outputs (out, mask))."""
    if act_type == "leaky":
        return F.leaky_relu(data, slope)
    if act_type == "prelu":
        if gamma is None:
            raise MXNetError("LeakyReLU: act_type='prelu' needs the gamma input (shape (C,) or (1,))")
        if gamma.dim() > 1:  # MXNet: a gamma of rank > 1 broadcasts over data's leading axes
            g = gamma.reshape(tuple(gamma.shape) + (1,) * (data.dim() - gamma.dim()))
            return torch.where(data > 0, data, g * data)
        return F.prelu(data, gamma.reshape(-1))
    if act_type == "elu":
        return F.elu(data, slope)
    if act_type == "selu":
        return F.selu(data)
    if act_type == "gelu":
        return F.gelu(data)
    if act_type != "rrelu":
        raise MXNetError(f"LeakyReLU: unknown act_type {act_type!r}; valid names are "
                         f"['elu', 'gelu', 'leaky', 'prelu', 'rrelu', 'selu']")
    if is_train:
        mask = torch.empty_like(data).uniform_(lower_bound, upper_bound)
    else:
        mask = torch.full_like(data, (lower_bound + upper_bound) / 2)
    return torch.where(data > 0, data, data * mask), mask


# ---- softmax family ---------------------------------------------------------------------------
def _softmax_active(attrs: dict) -> tuple:
    return ("data", "length") if attrs.get("use_length", False) else ("data",)


def _masked_softmax(x: Tensor, length: Tensor, axis: int, log: bool, dtype: Any) -> Tensor:
    ax = axis % x.dim()
    m = x.shape[ax]
    view = [1] * x.dim()
    view[ax] = m
    idx = torch.arange(m, device=x.device).reshape(view)
    mask = idx < length.unsqueeze(ax).to(torch.int64)
    if dtype is not None:
        x = x.to(dtype)
    xm = torch.where(mask, x, torch.tensor(torch.finfo(x.dtype).min, dtype=x.dtype, device=x.device))
    y = F.log_softmax(xm, ax) if log else F.softmax(xm, ax)
    return torch.where(mask, y, torch.zeros((), dtype=y.dtype, device=y.device))


def _np_softmax(x, axis=-1, temperature=None, log=False, length=None):
    x = x / (temperature if temperature is not None else 1.0)
    if length is not None:
        ax = axis % x.ndim
        idx = np.arange(x.shape[ax]).reshape([-1 if i == ax else 1 for i in range(x.ndim)])
        mask = idx < np.expand_dims(length, ax)
        x = np.where(mask, x, -np.inf)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    s = e.sum(axis=axis, keepdims=True)
    y = (x - np.max(x, axis=axis, keepdims=True)) - np.log(s) if log else e / s
    if length is not None:
        y = np.where(mask, y, 0.0)
    return y


def _sm_samples(log: bool, neg: bool) -> Any:
    def ref(x, length=None, axis=-1, temperature=None, use_length=False, dtype=None):
        return _np_softmax(-x if neg else x, axis, temperature, log, length if use_length else None)

    def samples() -> list:
        r = np.random.RandomState(7)
        x = r.randn(2, 3, 4)
        return [Sample((x,), {}, ref=ref),
                Sample((x,), {"axis": 1}, ref=ref),
                Sample((x,), {"axis": 0, "temperature": 2.0}, ref=ref),
                Sample((x, np.array([[1, 4, 2], [3, 2, 4]], dtype=np.float64)),
                       {"use_length": True}, ref=ref, grad_inputs=(0,))]
    return samples


def _softmax_common(data: Tensor, length: Optional[Tensor], axis: int, temperature: Any,
                    dtype: Any, use_length: bool, log: bool, neg: bool) -> Tensor:
    x = -data if neg else data
    if temperature is not None and temperature != 1.0:
        x = x / temperature
    td = dtype_torch(dtype) if dtype is not None else None
    if use_length:
        if length is None:
            raise MXNetError("softmax: use_length=True needs the length input")
        return _masked_softmax(x, length, axis, log, td)
    return F.log_softmax(x, axis, dtype=td) if log else F.softmax(x, axis, dtype=td)


def _softmax_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """softmax / log_softmax / softmin: the data's shape (``axis`` must name one of its axes;
    with ``use_length`` the kernel checks the length input)."""
    data = tuple(shapes[0])
    nd = max(len(data), 1)  # torch takes axis 0 or -1 for a scalar
    if attrs["use_length"] or not -nd <= int(attrs["axis"]) < nd:
        return None
    return [data]


@register("softmax", active_inputs=_softmax_active, samples=_sm_samples(False, False),
          infer_shape=_softmax_shape)
def softmax(data: Tensor, length: Optional[Tensor] = None, *, axis: int = -1,
            temperature: OptFloat = None, dtype: Dtype = None, use_length: bool = False) -> Tensor:
    """softmax(x / temperature) along ``axis``; with use_length, entries at or past ``length`` are 0."""
    if not use_length and temperature is None and dtype is None:
        return F.softmax(data, axis)
    return _softmax_common(data, length, axis, temperature, dtype, use_length, False, False)


@register("log_softmax", active_inputs=_softmax_active, samples=_sm_samples(True, False),
          infer_shape=_softmax_shape)
def log_softmax(data: Tensor, length: Optional[Tensor] = None, *, axis: int = -1,
                temperature: OptFloat = None, dtype: Dtype = None, use_length: bool = False) -> Tensor:
    """log(softmax(x / temperature)) along ``axis`` (masked entries are 0 with use_length)."""
    if not use_length and temperature is None and dtype is None:
        return F.log_softmax(data, axis)
    return _softmax_common(data, length, axis, temperature, dtype, use_length, True, False)


@register("softmin", active_inputs=_softmax_active, samples=_sm_samples(False, True),
          infer_shape=_softmax_shape)
def softmin(data: Tensor, length: Optional[Tensor] = None, *, axis: int = -1,
            temperature: OptFloat = None, dtype: Dtype = None, use_length: bool = False) -> Tensor:
    """softmax(-x / temperature) along ``axis``."""
    return _softmax_common(data, length, axis, temperature, dtype, use_length, False, True)


def _np_softmax_act(x, mode="instance"):
    if mode == "channel":
        return _np_softmax(x, 1)
    return _np_softmax(x.reshape(x.shape[0], -1), -1).reshape(x.shape)


def _softmax_act_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """The data's shape; mode='channel' needs an axis 1."""
    data = tuple(shapes[0])
    return None if len(data) < (2 if attrs["mode"] == "channel" else 1) else [data]


@register("SoftmaxActivation", listed_inputs=False, infer_shape=_softmax_act_shape, samples=lambda: [
    Sample((np.random.RandomState(8).randn(2, 3, 2),), {}, ref=_np_softmax_act),
    Sample((np.random.RandomState(8).randn(2, 3, 2),), {"mode": "channel"}, ref=_np_softmax_act)])
def SoftmaxActivation(data: Tensor, *, mode: Literal["channel", "instance"] = "instance") -> Tensor:
    """Softmax over all non-batch elements (instance) or over axis 1 (channel)."""
    if mode == "channel":
        return F.softmax(data, 1)
    return F.softmax(data.reshape(data.shape[0], -1), 1).reshape(data.shape)


# ---- SoftmaxOutput: MXNet's loss head with its own backward ----------------------------------
def _so_forward(data: Tensor, multi_output: bool, preserve_shape: bool) -> Tensor:
    if multi_output:
        return F.softmax(data, 1) if data.dim() > 1 else F.softmax(data, 0)
    if preserve_shape:
        return F.softmax(data, -1)
    if data.dim() == 2:
        return F.softmax(data, 1)
    return F.softmax(data.reshape(data.shape[0], -1), 1).reshape(data.shape)


def _target(lab: Tensor, k: int, smooth_alpha: float, dtype: torch.dtype) -> Tensor:
    """One-hot targets along the last axis (label smoothing: 1-a on the label, a/(k-1) elsewhere)."""
    idx = lab.to(torch.int64).clamp(0, k - 1)
    oh = F.one_hot(idx, k).to(dtype)
    if smooth_alpha > 0.0:
        oh = oh * (1.0 - smooth_alpha) + (1.0 - oh) * (smooth_alpha / max(k - 1, 1))
    return oh


def softmax_output_grad(out: Tensor, label: Tensor, head: Optional[Tensor], *, grad_scale: float,
                        ignore_label: float, multi_output: bool, use_ignore: bool,
                        preserve_shape: bool, normalization: str, out_grad: bool,
                        smooth_alpha: float) -> Tensor:
    """MXNet's SoftmaxOutput input gradient (softmax - target) * scale, ignoring the head
    gradient unless ``out_grad``."""
    if tuple(label.shape) == tuple(out.shape):  # probabilities as labels
        g = (out - label.to(out.dtype)) * grad_scale
        return g * head if out_grad and head is not None else g
    if multi_output:
        n, k = out.shape[0], out.shape[1]
        o3 = out.reshape(n, k, -1)
        rest = o3.shape[2]
        lab = label.reshape(n, rest)
        tgt = _target(lab, k, smooth_alpha, out.dtype).permute(0, 2, 1)  # (n, k, rest)
        g = o3 - tgt
        if use_ignore:
            keep = (lab.to(torch.int64) != int(ignore_label)).to(out.dtype).unsqueeze(1)
            g = g * keep
        if normalization == "batch":
            cnt = n
        elif normalization == "valid":
            cnt = max(int((lab.to(torch.int64) != int(ignore_label)).sum()), 1)
        else:
            cnt = 1
        g = g * (grad_scale / (1 if normalization == "valid" else rest) / cnt)
        g = g.reshape(out.shape)
    else:
        if preserve_shape:
            o2 = out.reshape(-1, out.shape[-1])
        else:
            o2 = out.reshape(out.shape[0], -1)
        lab = label.reshape(-1)
        k = o2.shape[1]
        g = o2 - _target(lab, k, smooth_alpha, out.dtype)
        if use_ignore:
            g = g * (lab.to(torch.int64) != int(ignore_label)).to(out.dtype).unsqueeze(1)
        if normalization == "batch":
            cnt = lab.shape[0]
        elif normalization == "valid":
            cnt = max(int((lab.to(torch.int64) != int(ignore_label)).sum()), 1)
        else:
            cnt = 1
        g = (g * (grad_scale / cnt)).reshape(out.shape)
    if out_grad and head is not None:
        g = g * head
    return g


class _SoftmaxOutputFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, data: Tensor, label: Tensor, cfg: dict) -> Tensor:  # type: ignore[override]
        out = _so_forward(data, cfg["multi_output"], cfg["preserve_shape"])
        ctx.save_for_backward(out, label)
        ctx.cfg = cfg
        return out

    @staticmethod
    def backward(ctx: Any, head: Tensor) -> Any:  # type: ignore[override]
        out, label = ctx.saved_tensors
        return softmax_output_grad(out, label, head, **ctx.cfg), None, None


def _so_params(attrs: dict, shapes: _ShapeList) -> _ShapeList:
    out = list(shapes)
    d = shapes[0]
    if d is None or len(out) < 2 or out[1] is not None:
        return out
    if attrs.get("multi_output", False):
        out[1] = (d[0],) + tuple(d[2:])
    else:
        out[1] = tuple(d[:-1]) if attrs.get("preserve_shape", False) or len(d) == 2 else (d[0],)
    return out


def _np_so(x, label, multi_output=False, preserve_shape=False, **_):
    if multi_output:
        return _np_softmax(x, 1)
    if preserve_shape:
        return _np_softmax(x, -1)
    return _np_softmax(x.reshape(x.shape[0], -1), -1).reshape(x.shape)


def _so_samples() -> list:
    r = np.random.RandomState(9)
    return [
        Sample((r.randn(3, 4), np.array([0., 3., 1.])), {}, ref=_np_so, grad=False),
        Sample((r.randn(2, 3, 2), np.array([1., 4.])), {}, ref=_np_so, grad=False),
        Sample((r.randn(2, 3, 4), r.randint(0, 3, (2, 4)).astype(float)), {"multi_output": True},
               ref=_np_so, grad=False),
        Sample((r.randn(2, 3, 4), r.randint(0, 4, (2, 3)).astype(float)), {"preserve_shape": True},
               ref=_np_so, grad=False),
    ]


def _so_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """SoftmaxOutput's forward keeps the data's shape (the label only matters in backward)."""
    data = tuple(shapes[0])
    return [data] if data else None


@register("SoftmaxOutput", aliases=("Softmax",), param_shapes=_so_params, samples=_so_samples,
          infer_shape=_so_shape)
def SoftmaxOutput(data: Tensor, label: Tensor, *, grad_scale: float = 1.0, ignore_label: float = -1.0,
                  multi_output: bool = False, use_ignore: bool = False, preserve_shape: bool = False,
                  normalization: Literal["batch", "null", "valid"] = "null", out_grad: bool = False,
                  smooth_alpha: float = 0.0) -> Tensor:
    """Softmax loss head. Forward: softmax over (N, -1) (preserve_shape: last axis; multi_output:
    axis 1). Backward: (softmax - onehot(label)) * grad_scale / normalization, independent of the
    head gradient (unless out_grad), as MXNet's SoftmaxOutput."""
    if not (torch.is_grad_enabled() and data.requires_grad):
        return _so_forward(data, multi_output, preserve_shape)
    cfg = {"grad_scale": grad_scale, "ignore_label": ignore_label, "multi_output": multi_output,
           "use_ignore": use_ignore, "preserve_shape": preserve_shape,
           "normalization": normalization, "out_grad": out_grad, "smooth_alpha": smooth_alpha}
    return _SoftmaxOutputFn.apply(data, label, cfg)


# ---- regression heads -------------------------------------------------------------------------
class _RegressionFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, data: Tensor, label: Tensor, kind: str, scale: float) -> Tensor:  # type: ignore[override]
        out = torch.sigmoid(data) if kind == "logistic" else data.view_as(data)
        ctx.save_for_backward(out, label)
        ctx.kind, ctx.grad_scale = kind, scale
        return out

    @staticmethod
    def backward(ctx: Any, head: Tensor) -> Any:  # type: ignore[override]
        out, label = ctx.saved_tensors
        return regression_grad(out, label, ctx.kind, ctx.grad_scale), None, None, None


def regression_grad(out: Tensor, label: Tensor, kind: str, grad_scale: float) -> Tensor:
    """MXNet's regression-output gradient: grad_scale / (label.size / label.shape[0]) * d(out, label)."""
    num_output = label.numel() // label.shape[0] if label.dim() > 0 and label.shape[0] else 1
    diff = out - label.reshape(out.shape).to(out.dtype)
    if kind == "mae":
        diff = torch.sign(diff)
    return diff * (grad_scale / num_output)


def _reg_params(attrs: dict, shapes: _ShapeList) -> _ShapeList:
    out = list(shapes)
    if len(out) > 1 and out[1] is None and shapes[0] is not None:
        out[1] = tuple(shapes[0])
    return out


def _make_regression(name: str, kind: str, ref: Any) -> None:
    def kernel(data, label, *, grad_scale: float = 1.0):  # type: ignore[no-untyped-def]
        if not (torch.is_grad_enabled() and data.requires_grad):
            return torch.sigmoid(data) if kind == "logistic" else data
        return _RegressionFn.apply(data, label, kind, grad_scale)
    kernel.__name__ = name
    kernel.__doc__ = (f"{name}: forward {'sigmoid(x)' if kind == 'logistic' else 'identity'}; backward "
                      f"{'sign(out - label)' if kind == 'mae' else 'out - label'} * grad_scale / "
                      f"num_output, independent of the head gradient (MXNet's loss head).")

    def samples() -> list:
        r = np.random.RandomState(10)
        return [Sample((r.randn(3, 2), r.randn(3, 2)), {}, ref=ref, grad=False),
                Sample((r.randn(4, 1), r.randn(4)), {"grad_scale": 2.0}, ref=ref, grad=False)]
    # the identity forward returns its input itself (no gradient)
    register(name, param_shapes=_reg_params, samples=samples, returns_view=kind != "logistic")(kernel)


_make_regression("LinearRegressionOutput", "linear", lambda x, label, grad_scale=1.0: x)
_make_regression("MAERegressionOutput", "mae", lambda x, label, grad_scale=1.0: x)
_make_regression("LogisticRegressionOutput", "logistic", lambda x, label, grad_scale=1.0: 1 / (1 + np.exp(-x)))


# ---- Embedding --------------------------------------------------------------------------------
def _emb_params(attrs: dict, shapes: _ShapeList) -> _ShapeList:
    out = list(shapes)
    out[1] = _fill(shapes[1], (int(attrs["input_dim"]), int(attrs["output_dim"])))
    return out


def _np_embedding(data, weight, input_dim=0, output_dim=0, **_):
    idx = np.clip(data.astype(np.int64), 0, weight.shape[0] - 1)
    return weight[idx]


def _emb_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """The indices' shape + (output_dim,) (the weight's second axis)."""
    weight = shapes[1]
    return [tuple(shapes[0]) + (weight[1],)] if len(weight) == 2 and weight[0] > 0 else None


@register("Embedding", param_shapes=_emb_params, infer_shape=_emb_shape, dtype_is_output=False, samples=lambda: [
    Sample((np.array([[0., 2.], [4., 1.]]), np.random.RandomState(11).randn(5, 3)),
           {"input_dim": 5, "output_dim": 3}, ref=_np_embedding, grad_inputs=(1,)),
    Sample((np.array([0., 7., -2., 3.]), np.random.RandomState(11).randn(5, 2)),
           {"input_dim": 5, "output_dim": 2}, ref=_np_embedding, grad_inputs=(1,))])
def Embedding(data: Tensor, weight: Tensor, *, input_dim: int, output_dim: int, dtype: Dtype = "float32",
              sparse_grad: bool = False) -> Tensor:
    """Rows of ``weight`` at the (float) indices in ``data``; indices are clipped to [0, input_dim-1].
    ``sparse_grad``: the weight's gradient is row_sparse (only the rows looked up), as in MXNet."""
    idx = data if data.dtype is torch.int64 else data.to(torch.int64)
    return F.embedding(idx.clamp(0, weight.shape[0] - 1), weight, sparse=bool(sparse_grad))


# ---- UpSampling -------------------------------------------------------------------------------
def _bilinear_geometry(scale: int) -> tuple:
    k = 2 * scale - scale % 2
    return k, scale, int(math.ceil((scale - 1) / 2.0))


def _up_params(attrs: dict, shapes: _ShapeList) -> _ShapeList:
    out = list(shapes)
    if attrs.get("sample_type") == "bilinear" and len(out) > 1:
        d = shapes[0]
        k = _bilinear_geometry(int(attrs["scale"]))[0]
        c = d[1] if d is not None and len(d) > 1 else 0
        out[1] = _fill(shapes[1], (c, 1, k, k))
    return out


def _np_upsampling(*data, scale=1, sample_type="nearest", multi_input_mode="concat", num_filter=0, **_):
    if sample_type == "bilinear":
        x, w = data
        k = 2 * scale - scale % 2
        p = int(np.ceil((scale - 1) / 2.0))
        return _np_deconv(x, w, None, kernel=(k, k), stride=(scale, scale), pad=(p, p),
                          num_filter=x.shape[1], num_group=x.shape[1])
    oh = data[0].shape[2] * scale
    outs = []
    for x in data:
        s = oh // x.shape[2]
        outs.append(np.repeat(np.repeat(x, s, axis=2), s, axis=3))
    if multi_input_mode == "sum":
        return sum(outs)
    return np.concatenate(outs, axis=1)


def _up_samples() -> list:
    r = np.random.RandomState(12)
    return [
        Sample((r.randn(1, 2, 2, 3),), {"scale": 2, "sample_type": "nearest"}, ref=_np_upsampling),
        Sample((r.randn(1, 2, 4, 4), r.randn(1, 3, 2, 2)), {"scale": 2, "sample_type": "nearest"},
               ref=_np_upsampling),
        Sample((r.randn(1, 2, 4, 4), r.randn(1, 2, 2, 2)),
               {"scale": 1, "sample_type": "nearest", "multi_input_mode": "sum"}, ref=_np_upsampling),
        Sample((r.randn(1, 2, 3, 3), r.randn(2, 1, 4, 4)),
               {"scale": 2, "sample_type": "bilinear", "num_filter": 2}, ref=_np_upsampling,
               rtol=1e-4, atol=1e-6),
        Sample((r.randn(1, 2, 2, 2), r.randn(2, 1, 5, 5)),
               {"scale": 3, "sample_type": "bilinear", "num_filter": 2}, ref=_np_upsampling,
               rtol=1e-4, atol=1e-6),
    ]


@register("UpSampling", param_shapes=_up_params, samples=_up_samples)
def UpSampling(*data: Tensor, scale: int, num_filter: int = 0,
               sample_type: Literal["bilinear", "nearest"],
               multi_input_mode: Literal["concat", "sum"] = "concat", workspace: int = 512) -> Tensor:
    """Upsample NCHW inputs by ``scale``. nearest: every input is repeated to the first input's size
    times scale, then concatenated on axis 1 (or summed). bilinear: (data, weight) through a
    grouped Deconvolution with kernel 2s - s%2, stride s, pad ceil((s-1)/2), as MXNet does."""
    if sample_type == "bilinear":
        if len(data) != 2:
            raise MXNetError(f"UpSampling: sample_type='bilinear' takes (data, weight), got {len(data)} inputs")
        x, w = data
        k, s, p = _bilinear_geometry(int(scale))
        return F.conv_transpose2d(x, w, None, s, p, 0, x.shape[1])
    if not data:
        raise MXNetError("UpSampling: needs at least one input")
    oh, ow = data[0].shape[2] * scale, data[0].shape[3] * scale
    outs = []
    for x in data:
        sh, sw = oh // x.shape[2], ow // x.shape[3]
        if sh * x.shape[2] != oh or sw * x.shape[3] != ow:
            raise MXNetError(f"UpSampling: input of spatial shape {tuple(x.shape[2:])} cannot be scaled "
                             f"to ({oh}, {ow}) by an integer factor")
        outs.append(x if sh == 1 and sw == 1 else
                    x.repeat_interleave(sh, dim=2).repeat_interleave(sw, dim=3))
    if len(outs) == 1:
        return outs[0]
    if multi_input_mode == "sum":
        res = outs[0]
        for o in outs[1:]:
            res = res + o
        return res
    return torch.cat(outs, 1)


# ---- ROIPooling -------------------------------------------------------------------------------
def _c_round(v: float) -> int:
    """C's round(): half away from zero."""
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


def _roi_bins(start: int, size: int, pooled: int, limit: int) -> list:
    b = size / pooled
    res = []
    for i in range(pooled):
        lo = min(max(int(math.floor(i * b)) + start, 0), limit)
        hi = min(max(int(math.ceil((i + 1) * b)) + start, 0), limit)
        res.append((lo, hi))
    return res


def _np_roipool(data, rois, pooled_size=(1, 1), spatial_scale=1.0):
    ph, pw = pooled_size
    R = rois.shape[0]
    N, C, H, W = data.shape
    out = np.zeros((R, C, ph, pw))
    for r in range(R):
        b = int(rois[r, 0])
        xs, ys, xe, ye = (_c_round(v * spatial_scale) for v in rois[r, 1:])
        rh, rw = max(ye - ys + 1, 1), max(xe - xs + 1, 1)
        for i, (h0, h1) in enumerate(_roi_bins(ys, rh, ph, H)):
            for j, (w0, w1) in enumerate(_roi_bins(xs, rw, pw, W)):
                if h1 > h0 and w1 > w0:
                    out[r, :, i, j] = data[b, :, h0:h1, w0:w1].reshape(C, -1).max(axis=1)
    return out


@register("ROIPooling", total_outputs=2, output_names=("output", "maxidx"), samples=lambda: [
    Sample((np.random.RandomState(13).randn(2, 3, 8, 9),
            np.array([[0, 1, 1, 6, 5], [1, 0, 2, 8, 7], [1, 3, 3, 3.4, 3], [0, 10, 12, 30, 30]], dtype=float)),
           {"pooled_size": (2, 3), "spatial_scale": 1.0}, ref=_np_roipool, grad_inputs=(0,)),
    Sample((np.random.RandomState(14).randn(1, 2, 6, 6),
            np.array([[0, 2, 2, 9, 11.]])), {"pooled_size": (3, 2), "spatial_scale": 0.5},
           ref=_np_roipool, grad_inputs=(0,))])
def ROIPooling(data: Tensor, rois: Tensor, *, pooled_size: Shape, spatial_scale: float) -> Tensor:
    """Max-pool each region [batch, x1, y1, x2, y2] (scaled by spatial_scale, rounded) into
    pooled_size bins; empty bins give 0 (MXNet's ROIPooling)."""
    ph, pw = _per_dim(pooled_size, 2, 1, "pooled_size", "ROIPooling")
    R = rois.shape[0]
    N, C, H, W = data.shape
    if data.device.type == "meta":
        return torch.empty((R, C, ph, pw), dtype=data.dtype, device="meta")
    neg = torch.tensor(float("-inf"), dtype=data.dtype, device=data.device)
    zero = torch.zeros((), dtype=data.dtype, device=data.device)
    outs = []
    for roi in rois.detach().to("cpu", torch.float64).tolist():
        b = int(roi[0])
        xs, ys, xe, ye = (_c_round(v * spatial_scale) for v in roi[1:])
        rh, rw = max(ye - ys + 1, 1), max(xe - xs + 1, 1)
        hb, wb = _roi_bins(ys, rh, ph, H), _roi_bins(xs, rw, pw, W)
        hr = torch.arange(H, device=data.device)
        wr = torch.arange(W, device=data.device)
        mh = torch.stack([(hr >= lo) & (hr < hi) for lo, hi in hb])  # (ph, H)
        mw = torch.stack([(wr >= lo) & (wr < hi) for lo, hi in wb])  # (pw, W)
        if b < 0 or b >= N:
            outs.append(torch.zeros((C, ph, pw), dtype=data.dtype, device=data.device))
            continue
        feat = data[b]  # (C, H, W)
        t = torch.where(mw[None, None], feat[:, :, None, :], neg).amax(-1)  # (C, H, pw)
        o = torch.where(mh[None, :, :, None], t[:, None, :, :], neg).amax(2)  # (C, ph, pw)
        valid = (mh.any(1)[:, None] & mw.any(1)[None, :])[None]
        outs.append(torch.where(valid, o, zero))
    if not outs:
        return torch.zeros((0, C, ph, pw), dtype=data.dtype, device=data.device)
    return torch.stack(outs)


# ---- Dropout ----------------------------------------------------------------------------------
# MXNet: mode='training' drops only while training; mode='always' drops in predict mode too
@register("Dropout", returns_view=True, random=True, total_outputs=2, output_names=("output", "mask"),
          predict_identity=lambda a: a["mode"] == "training" or float(a["p"]) <= 0.0,
          infer_shape=first_input_shape, samples=lambda: [
    Sample((np.random.RandomState(15).randn(3, 4),), {"p": 0.5}, ref=lambda x, p: x),
    Sample((np.random.RandomState(15).randn(2, 3, 4),), {"p": 0.5, "axes": (1,)}, ref=lambda x, p, axes: x),
    Sample((np.random.RandomState(15).randn(3, 4),), {"p": 0.0, "mode": "always"},
           ref=lambda x, p, mode: x)])
def Dropout(data: Tensor, *, p: float = 0.5, mode: Literal["always", "training"] = "training",
            axes: Shape = (), cudnn_off: bool = False, is_train: bool = False) -> Tensor:
    """Zero elements with probability p and scale the rest by 1/(1-p); identity unless training
    (or mode='always'). ``axes`` share one mask value along those axes (variational dropout)."""
    if not (is_train or mode == "always") or p <= 0.0:
        return data
    if p >= 1.0:
        # MXNet scales the all-zero mask by 1/(1-p) = inf: every output is NaN (0 * inf)
        return data * float("nan")
    if not axes:
        return F.dropout(data, p, True)
    shape = list(data.shape)
    for a in _ints(axes):
        shape[a] = 1
    mask = torch.empty(shape, dtype=data.dtype, device=data.device).bernoulli_(1.0 - p)
    return data * (mask / (1.0 - p))


# ---- CTCLoss ----------------------------------------------------------------------------------
def _ctc_active(attrs: dict) -> tuple:
    names = ["data", "label"]
    if attrs.get("use_data_lengths", False):
        names.append("data_lengths")
    if attrs.get("use_label_lengths", False):
        names.append("label_lengths")
    return tuple(names)


def _np_ctc(data, label, data_lengths=None, label_lengths=None, use_data_lengths=False,
            use_label_lengths=False, blank_label="first"):
    T, N, C = data.shape
    blank = 0 if blank_label == "first" else C - 1
    pad = 0 if blank_label == "first" else -1
    out = np.zeros(N)
    for n in range(N):
        x = data[:, n, :]
        lp = x - x.max(1, keepdims=True)
        lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
        t_len = int(data_lengths[n]) if use_data_lengths else T
        lab = [int(v) for v in label[n]]
        if use_label_lengths:
            lab = lab[:int(label_lengths[n])]
        elif pad in lab:
            lab = lab[:lab.index(pad)]
        ext = [blank]
        for c in lab:
            ext += [c, blank]
        S = len(ext)
        alpha = np.full(S, -np.inf)
        alpha[0] = lp[0, blank]
        if S > 1:
            alpha[1] = lp[0, ext[1]]
        for t in range(1, t_len):
            new = np.full(S, -np.inf)
            for s in range(S):
                cands = [alpha[s]]
                if s >= 1:
                    cands.append(alpha[s - 1])
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    cands.append(alpha[s - 2])
                m = max(cands)
                new[s] = (m + np.log(sum(np.exp(c - m) for c in cands)) if m > -np.inf else -np.inf) + lp[t, ext[s]]
            alpha = new
        ends = [alpha[S - 1]] + ([alpha[S - 2]] if S > 1 else [])
        m = max(ends)
        out[n] = -(m + np.log(sum(np.exp(e - m) for e in ends)))
    return out


def _ctc_samples() -> list:
    r = np.random.RandomState(16)
    d = r.randn(6, 2, 4)
    return [
        Sample((d, np.array([[1., 2., 0.], [3., 3., 1.]])), {}, ref=_np_ctc, grad_inputs=(0,),
               rtol=1e-5, atol=1e-6),
        Sample((d, np.array([[0., 1., -1.], [2., 2., 2.]])), {"blank_label": "last"}, ref=_np_ctc,
               grad_inputs=(0,), rtol=1e-5, atol=1e-6),
        Sample((d, np.array([[1., 2., 3.], [3., 1., 1.]]), np.array([5., 6.]), np.array([2., 3.])),
               {"use_data_lengths": True, "use_label_lengths": True}, ref=_np_ctc, grad_inputs=(0,),
               rtol=1e-5, atol=1e-6),
    ]


@register("CTCLoss", aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"), total_outputs=2,
          output_names=("output", "grad"), active_inputs=_ctc_active, samples=_ctc_samples)
def CTCLoss(data: Tensor, label: Tensor, data_lengths: Optional[Tensor] = None,
            label_lengths: Optional[Tensor] = None, *, use_data_lengths: bool = False,
            use_label_lengths: bool = False, blank_label: Literal["first", "last"] = "first") -> Tensor:
    """Connectionist temporal classification loss per batch item, shape (N,).

    data: (T, N, C) unnormalised activations (softmax is applied inside); label: (N, L) class
    indices padded with 0 (blank_label='first', blank is class 0) or -1 ('last', blank is C-1).
    """
    if data.dim() != 3:
        raise MXNetError(f"CTCLoss: data must be (sequence_length, batch, alphabet), got {tuple(data.shape)}")
    T, N, C = data.shape
    if data.device.type == "meta":
        return torch.empty((N,), dtype=data.dtype, device="meta")
    # inputs arrive positionally: with only use_label_lengths the third input is the label lengths
    if use_label_lengths and not use_data_lengths and label_lengths is None:
        data_lengths, label_lengths = None, data_lengths
    blank = 0 if blank_label == "first" else C - 1
    pad = 0 if blank_label == "first" else -1
    lab = label.to(torch.int64)
    if lab.dim() == 1:
        lab = lab.reshape(N, -1)
    L = lab.shape[1]
    if use_label_lengths:
        if label_lengths is None:
            raise MXNetError("CTCLoss: use_label_lengths=True needs the label_lengths input")
        ll = label_lengths.to(torch.int64).reshape(N)
    else:
        is_pad = lab == pad
        ll = torch.where(is_pad.any(1), is_pad.to(torch.int64).argmax(1), torch.full((N,), L, dtype=torch.int64))
    if use_data_lengths:
        if data_lengths is None:
            raise MXNetError("CTCLoss: use_data_lengths=True needs the data_lengths input")
        dl = data_lengths.to(torch.int64).reshape(N)
    else:
        dl = torch.full((N,), T, dtype=torch.int64)
    x = data.float() if data.dtype in (torch.float16, torch.bfloat16) else data
    if use_data_lengths:
        # steps past a sequence's length are never read: zero them so that whatever they hold
        # (MXNet allows NaN padding) cannot reach the loss or the gradient
        valid = torch.arange(T, device=x.device).reshape(T, 1, 1) < dl.to(x.device).reshape(1, N, 1)
        x = torch.where(valid, x, torch.zeros((), dtype=x.dtype, device=x.device))
    logp = F.log_softmax(x, 2)
    loss = F.ctc_loss(logp, lab.clamp(min=0), dl, ll, blank=blank, reduction="none", zero_infinity=False)
    return loss.to(data.dtype)


# ---- softmax_cross_entropy --------------------------------------------------------------------
def _np_sce(x, label):
    lp = _np_softmax(x, -1, log=True)
    return np.array([-lp[np.arange(x.shape[0]), label.astype(int)].sum()])


@register("softmax_cross_entropy", samples=lambda: [
    Sample((np.random.RandomState(17).randn(3, 5), np.array([1., 0., 4.])), {}, ref=_np_sce,
           grad_inputs=(0,))])
def softmax_cross_entropy(data: Tensor, label: Tensor) -> Tensor:
    """Sum over the batch of -log softmax(data)[label]; output shape (1,)."""
    lp = F.log_softmax(data, -1)
    return -lp.gather(1, label.to(torch.int64).reshape(-1, 1)).sum().reshape(1)


# ---- GridGenerator / BilinearSampler / BilinearResize2D --------------------------------------
def _np_grid(data, transform_type="affine", target_shape=(0, 0)):
    if transform_type == "affine":
        H, W = target_shape
        xs = np.linspace(-1, 1, W)
        ys = np.linspace(-1, 1, H)
        gx, gy = np.meshgrid(xs, ys)
        src = np.stack([gx.ravel(), gy.ravel(), np.ones(H * W)])  # (3, HW)
        th = data.reshape(-1, 2, 3)
        return (th @ src).reshape(-1, 2, H, W)
    N, _, H, W = data.shape
    gx, gy = np.meshgrid(np.arange(W), np.arange(H))
    x = (data[:, 0] + gx) / ((W - 1) / 2.0) - 1
    y = (data[:, 1] + gy) / ((H - 1) / 2.0) - 1
    return np.stack([x, y], 1)


@register("GridGenerator", samples=lambda: [
    Sample((np.random.RandomState(18).randn(2, 6),), {"transform_type": "affine", "target_shape": (3, 4)},
           ref=_np_grid),
    Sample((np.random.RandomState(18).randn(1, 2, 3, 4),), {"transform_type": "warp"}, ref=_np_grid)])
def GridGenerator(data: Tensor, *, transform_type: Literal["affine", "warp"],
                  target_shape: Shape = (0, 0)) -> Tensor:
    """Sampling grid (N, 2, H, W) in [-1, 1] (x first) from affine parameters (N, 6) or a flow
    field (N, 2, H, W)."""
    if transform_type == "affine":
        H, W = _per_dim(target_shape, 2, 0, "target_shape", "GridGenerator")
        N = data.shape[0]
        theta = data.reshape(N, 2, 3)
        grid = F.affine_grid(theta, [N, 1, H, W], align_corners=True)  # (N, H, W, 2)
        return grid.permute(0, 3, 1, 2)
    N, _, H, W = data.shape
    gy, gx = torch.meshgrid(torch.arange(H, dtype=data.dtype, device=data.device),
                            torch.arange(W, dtype=data.dtype, device=data.device), indexing="ij")
    x = (data[:, 0] + gx) / ((W - 1) / 2.0) - 1
    y = (data[:, 1] + gy) / ((H - 1) / 2.0) - 1
    return torch.stack([x, y], 1)


def _np_bilinear_sampler(data, grid, **_):
    N, C, H, W = data.shape
    Ho, Wo = grid.shape[2:]
    out = np.zeros((N, C, Ho, Wo))
    for n in range(N):
        for i in range(Ho):
            for j in range(Wo):
                x = (grid[n, 0, i, j] + 1) * (W - 1) / 2
                y = (grid[n, 1, i, j] + 1) * (H - 1) / 2
                x0, y0 = int(np.floor(x)), int(np.floor(y))
                for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                    for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                        if 0 <= yy < H and 0 <= xx < W:
                            out[n, :, i, j] += wy * wx * data[n, :, yy, xx]
    return out


@register("BilinearSampler", samples=lambda: [
    Sample((np.random.RandomState(19).randn(2, 2, 4, 5),
            np.random.RandomState(20).uniform(-1.1, 1.1, (2, 2, 3, 3))), {}, ref=_np_bilinear_sampler,
           rtol=1e-5, atol=1e-6)])
def BilinearSampler(data: Tensor, grid: Tensor, *, cudnn_off: bool = False) -> Tensor:
    """Bilinear sampling of data (N, C, H, W) at grid (N, 2, Ho, Wo) in [-1, 1]; outside is 0."""
    return F.grid_sample(data, grid.permute(0, 2, 3, 1), mode="bilinear", padding_mode="zeros",
                         align_corners=True)


def _resize_size(h: int, w: int, height: int, width: int, sh: Any, sw: Any, mode: str,
                 like: Optional[Tensor]) -> tuple:
    if mode == "like":
        if like is None:
            raise MXNetError("BilinearResize2D: mode='like' needs the like input")
        return int(like.shape[2]), int(like.shape[3])
    if mode == "size":
        oh = int(h * sh) if sh is not None else height
        ow = int(w * sw) if sw is not None else width
        return oh, ow
    if mode == "odd_scale":
        if sh is None or sw is None:
            raise MXNetError("BilinearResize2D: mode='odd_scale' needs scale_height and scale_width")
        oh = int((h - 1) * sh) + 1 if h % 2 else int(h * sh)
        ow = int((w - 1) * sw) + 1 if w % 2 else int(w * sw)
        return oh, ow
    fix = {"to_even_down": lambda v: v - v % 2, "to_even_up": lambda v: v + v % 2,
           "to_odd_down": lambda v: v if v % 2 else v - 1, "to_odd_up": lambda v: v if v % 2 else v + 1}
    f = fix[mode]
    return f(h), f(w)


def _np_resize(data, like=None, height=1, width=1, scale_height=None, scale_width=None, mode="size",
               align_corners=True):
    N, C, H, W = data.shape
    oh, ow = _resize_size(H, W, height, width, scale_height, scale_width, mode, None)
    out = np.zeros((N, C, oh, ow))
    for i in range(oh):
        y = i * (H - 1) / (oh - 1) if oh > 1 else 0.0
        y0 = min(int(np.floor(y)), H - 1)
        y1 = min(y0 + 1, H - 1)
        for j in range(ow):
            x = j * (W - 1) / (ow - 1) if ow > 1 else 0.0
            x0 = min(int(np.floor(x)), W - 1)
            x1 = min(x0 + 1, W - 1)
            dy, dx = y - y0, x - x0
            out[:, :, i, j] = ((1 - dy) * (1 - dx) * data[:, :, y0, x0] + (1 - dy) * dx * data[:, :, y0, x1]
                               + dy * (1 - dx) * data[:, :, y1, x0] + dy * dx * data[:, :, y1, x1])
    return out


def _resize_active(attrs: dict) -> tuple:
    return ("data", "like") if attrs.get("mode", "size") == "like" else ("data",)


@register("_contrib_BilinearResize2D", active_inputs=_resize_active, samples=lambda: [
    Sample((np.random.RandomState(21).randn(1, 2, 3, 4),), {"height": 5, "width": 7}, ref=_np_resize),
    Sample((np.random.RandomState(21).randn(1, 1, 4, 3),), {"scale_height": 2.0, "scale_width": 1.5},
           ref=_np_resize)])
def _contrib_BilinearResize2D(data: Tensor, like: Optional[Tensor] = None, *, height: int = 1,
                              width: int = 1, scale_height: OptFloat = None, scale_width: OptFloat = None,
                              mode: Literal["like", "odd_scale", "size", "to_even_down", "to_even_up",
                                            "to_odd_down", "to_odd_up"] = "size",
                              align_corners: bool = True) -> Tensor:
    """Bilinear resize of NCHW data to (height, width), a scale, or another array's size."""
    oh, ow = _resize_size(data.shape[2], data.shape[3], height, width, scale_height, scale_width, mode, like)
    return F.interpolate(data, size=(oh, ow), mode="bilinear", align_corners=align_corners)


# ---- NumPy references (independent of the kernels) --------------------------------------------
def _np_conv(x, w, b=None, kernel=(), stride=(), dilate=(), pad=(), num_filter=0, num_group=1,
             no_bias=False, **_):
    nd = x.ndim - 2
    stride = tuple(stride) or (1,) * nd
    dilate = tuple(dilate) or (1,) * nd
    pad = tuple(pad) or (0,) * nd
    k = w.shape[2:]
    N, C = x.shape[:2]
    O = w.shape[0]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    osz = [(xp.shape[2 + i] - (dilate[i] * (k[i] - 1) + 1)) // stride[i] + 1 for i in range(nd)]
    out = np.zeros((N, O) + tuple(osz))
    cg, og = C // num_group, O // num_group
    for off in np.ndindex(*k):
        sl = tuple(slice(off[i] * dilate[i], off[i] * dilate[i] + stride[i] * (osz[i] - 1) + 1, stride[i])
                   for i in range(nd))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(num_group):
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch[:, g * cg:(g + 1) * cg], wk)
    if b is not None and not no_bias:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def _np_deconv(x, w, b=None, kernel=(), stride=(), dilate=(), pad=(), adj=(), target_shape=(),
               num_filter=0, num_group=1, no_bias=True, **_):
    nd = x.ndim - 2
    stride = tuple(stride) or (1,) * nd
    dilate = tuple(dilate) or (1,) * nd
    pad = tuple(pad) or (0,) * nd
    adj = tuple(adj) or (0,) * nd
    k = w.shape[2:]
    ins = x.shape[2:]
    if target_shape and any(target_shape):
        pad, adj = [], []
        for i in range(nd):
            tot = stride[i] * (ins[i] - 1) + dilate[i] * (k[i] - 1) + 1 - target_shape[i]
            adj.append(tot % 2)
            pad.append((tot + 1) // 2)
    N, C = x.shape[:2]
    og = w.shape[1]
    O = og * num_group
    cg = C // num_group
    full = [stride[i] * (ins[i] - 1) + dilate[i] * (k[i] - 1) + 1 for i in range(nd)]
    osz = [full[i] - 2 * pad[i] + adj[i] for i in range(nd)]
    buf = np.zeros((N, O) + tuple(max(full[i], pad[i] + osz[i]) for i in range(nd)))
    for off in np.ndindex(*k):
        sl = tuple(slice(off[i] * dilate[i], off[i] * dilate[i] + stride[i] * (ins[i] - 1) + 1, stride[i])
                   for i in range(nd))
        for g in range(num_group):
            wk = w[(slice(g * cg, (g + 1) * cg), slice(None)) + off]
            buf[(slice(None), slice(g * og, (g + 1) * og)) + sl] += np.einsum(
                "nc...,co->no...", x[:, g * cg:(g + 1) * cg], wk)
    out = buf[(slice(None), slice(None)) + tuple(slice(pad[i], pad[i] + osz[i]) for i in range(nd))]
    if b is not None and not no_bias:
        out = out + b.reshape((1, -1) + (1,) * nd)
    return out


def _np_pool(x, kernel=(), pool_type="max", global_pool=False, pooling_convention="valid", stride=(),
             pad=(), p_value=None, count_include_pad=True, layout=None, **_):
    cl = layout is not None and layout[-1] == "C"
    if cl:
        x = np.moveaxis(x, -1, 1)
    nd = x.ndim - 2
    sp = x.shape[2:]
    if global_pool:
        kernel, stride, pad = sp, (1,) * nd, (0,) * nd
    stride = tuple(stride) or (1,) * nd
    pad = tuple(pad) or (0,) * nd
    if pooling_convention == "valid":
        osz = [(sp[i] + 2 * pad[i] - kernel[i]) // stride[i] + 1 for i in range(nd)]
    elif pooling_convention == "full":
        osz = [int(np.ceil((sp[i] + 2 * pad[i] - kernel[i]) / stride[i])) + 1 for i in range(nd)]
    else:
        osz = [int(np.ceil(sp[i] / stride[i])) for i in range(nd)]
        pad = [max((osz[i] - 1) * stride[i] + kernel[i] - sp[i], 0) // 2 for i in range(nd)]
    if global_pool:
        osz = [1] * nd
    out = np.zeros(x.shape[:2] + tuple(osz))
    for o in np.ndindex(*osz):
        lo = [o[i] * stride[i] - pad[i] for i in range(nd)]
        hi_pad = [min(lo[i] + kernel[i], sp[i] + pad[i]) for i in range(nd)]
        size_pad = np.prod([hi_pad[i] - lo[i] for i in range(nd)])
        a = [max(lo[i], 0) for i in range(nd)]
        b = [min(hi_pad[i], sp[i]) for i in range(nd)]
        win = x[(slice(None), slice(None)) + tuple(slice(a[i], b[i]) for i in range(nd))]
        win = win.reshape(x.shape[0], x.shape[1], -1)
        idx = (slice(None), slice(None)) + o
        if pool_type == "max":
            out[idx] = win.max(-1) if win.shape[-1] else -np.inf
        elif pool_type == "sum":
            out[idx] = win.sum(-1)
        elif pool_type == "lp":
            s = (win ** p_value).sum(-1)
            out[idx] = np.sign(s) * np.abs(s) ** (1.0 / p_value)
        else:
            div = size_pad if count_include_pad else win.shape[-1]
            out[idx] = win.sum(-1) / max(div, 1)
    return np.moveaxis(out, 1, -1) if cl else out
