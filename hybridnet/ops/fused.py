"""Fused operators that graph passes substitute for common patterns in hybridized graphs.

They never appear in exported files: ``export`` writes the traced graph, the compiler runs the
optimized one. Each is checked against the NumPy reference of the pattern it replaces.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from .attrs import Shape
from .nn import _np_conv, conv_output_size, conv_taps
from .norm import batch_norm
from .shape_rules import torch_spatial
from .registry import ActivationChoice, Sample, register

__all__: list = []


def _np_softmax_ce(data: np.ndarray, label: np.ndarray, axis: int = -1, keepdims: bool = False,
                   batch_mean: bool = False) -> np.ndarray:
    z = data - data.max(axis=axis, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    idx = np.clip(label.astype(np.int64), 0, data.shape[axis] - 1)
    out = -np.take_along_axis(logp, np.expand_dims(idx, axis), axis=axis)
    if batch_mean:
        return out.reshape(out.shape[0], -1).mean(axis=1)
    return out if keepdims else np.squeeze(out, axis=axis)


_r = np.random.RandomState(5)


@register("_fused_softmax_ce", differentiable=True, samples=lambda: [
    Sample((_r.randn(4, 5), np.array([0.0, 4.0, 2.0, 1.0])), {"axis": -1, "keepdims": True},
           ref=_np_softmax_ce, grad_inputs=(0,)),
    Sample((_r.randn(3, 6), np.array([5.0, 0.0, 7.0])), {"axis": 1}, ref=_np_softmax_ce, grad_inputs=(0,)),
    Sample((_r.randn(4, 5), np.array([1.0, 3.0, 0.0, 4.0])), {"keepdims": True, "batch_mean": True},
           ref=_np_softmax_ce, grad_inputs=(0,)),
    Sample((_r.randn(2, 3, 4), _r.randint(0, 4, (2, 3)).astype(np.float64)), {"keepdims": True, "batch_mean": True},
           ref=_np_softmax_ce, grad_inputs=(0,))])
def _fused_softmax_ce(data, label, *, axis: int = -1, keepdims: bool = False, batch_mean: bool = False):
    """-pick(log_softmax(data, axis), label, axis, keepdims) (labels clipped into range, as pick's
    default mode): one cross-entropy kernel for Gluon's SoftmaxCrossEntropyLoss pattern.
    ``batch_mean`` also takes the loss's final mean over every axis but the first."""
    c = data.shape[axis]
    target = label.reshape(label.shape[0]) if label.dim() == 2 and label.shape[1] == 1 else label
    if data.dim() == 2 and axis in (-1, 1) and target.dim() == 1:
        idx = target.to(torch.long).clamp(0, c - 1)
        out = F.cross_entropy(data, idx, reduction="none")
        return out if batch_mean or not keepdims else out.unsqueeze(1)
    logp = F.log_softmax(data, axis)
    idx = label.to(torch.long).clamp(0, c - 1)
    if idx.dim() < data.dim():
        idx = idx.unsqueeze(axis)
    out = -logp.gather(axis, idx)
    if batch_mean:
        return out.reshape(out.shape[0], -1).mean(1)
    return out if keepdims else out.squeeze(axis)


# ---- predict-mode convolutions on oneDNN (compiler/passes/onednn.py substitutes them) ----------
# torch's oneDNN kernels that fuse a convolution with its bias, an activation and a residual add,
# reading a weight reordered once into oneDNN's blocked layout for one input size (the reorder is
# a parameter-only node, so the predict plan computes it once per parameter change). Activations
# stay channels-last between them; ``_contiguous`` restores the row-major layout at the region's
# exits.


def _mkldnn_op(name: str) -> Any:
    """torch's ``mkldnn::<name>`` operator, or None where this torch build lacks it."""
    if not torch.backends.mkldnn.is_available():
        return None
    try:
        return getattr(torch.ops.mkldnn, name)
    except (AttributeError, RuntimeError):
        return None


_POINTWISE = _mkldnn_op("_convolution_pointwise")
_REORDER = _mkldnn_op("_reorder_convolution_weight")
_LINEAR = _mkldnn_op("_linear_pointwise")
_REORDER_LINEAR = _mkldnn_op("_reorder_linear_weight")
#: Matrix products (FullyConnected, and convolutions in a matrix-product form) of at least this
#: many multiply-adds run on oneDNN's linear kernel with a weight packed once: it costs 40-60 us
#: per call where MKL's sgemm costs 10-25 (batch-1 MLPs lose 2-5x), and is 1.5x faster from
#: about 16M (mobilenet's and resnet's heads at batch 32); 12M: 0.9x, 2.6M: 1.13x (measured).
LINEAR_MIN_MACS = 1 << 23


def pack_linear(matrix: Tensor, rows: int) -> Tensor:
    """The (out, in) ``matrix`` packed for oneDNN's linear kernel on ``rows`` rows, where that
    pays (``LINEAR_MIN_MACS``) and oneDNN runs it (CPU float32); else ``matrix`` itself."""
    if _LINEAR is None or _REORDER_LINEAR is None or matrix.dim() != 2 or not onednn_conv_ready(matrix) \
            or rows * matrix.shape[0] * matrix.shape[1] < LINEAR_MIN_MACS:
        return matrix
    return _REORDER_LINEAR(matrix.contiguous(), rows)


_CL = torch.channels_last


def onednn_conv_ready(t: torch.Tensor) -> bool:
    """Whether oneDNN's fused convolution kernels can run on ``t`` (CPU float32, oneDNN built)."""
    return _POINTWISE is not None and _REORDER is not None and t.is_cpu and t.dtype == torch.float32


def _needs_grad(*ts: Optional[torch.Tensor]) -> bool:
    """Whether autograd would record through these tensors (oneDNN's fused kernels have no
    gradients: the composed reference serves then)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in ts)


def _geometry(op: str, stride: Any, pad: Any, dilate: Any) -> tuple:
    """(stride, pad, dilate) of a 2-D convolution as 2-tuples; ValueError naming a bad one."""
    out = []
    for name, value, default in (("stride", stride, 1), ("pad", pad, 0), ("dilate", dilate, 1)):
        t = torch_spatial(value, 2, default)
        if t is None:
            raise ValueError(f"{op}: {name}={value!r} must give 1 or 2 values for a 2-D convolution")
        out.append(t)
    return tuple(out)


#: The activations the fused predict-mode operators apply after their main computation.
FusedActivation = Literal["none", "relu", "sigmoid", "tanh", "hardtanh", "leaky_relu"]
#: A fused operator's ``act``, ``act_alpha``, ``act_beta`` without an activation, and with relu
#: (the one a residual addition absorbs after it).
NO_ACTIVATION = ActivationChoice("none")
RELU = ActivationChoice("relu")


def _over_first(attrs: dict, n_inputs: int) -> tuple:
    """``mutates_inputs`` of the in-place operators below: with ``inplace`` they may write their
    result over input 0."""
    return (0,) if attrs.get("inplace") else ()


def _conv_activation(y: torch.Tensor, act: str, alpha: float, beta: float, inplace: bool = False) -> torch.Tensor:
    """``_fused_conv``'s activation on ``y`` (in place when ``inplace``: ``y`` is a fresh result)."""
    if act == "relu":
        return torch.relu_(y) if inplace else torch.relu(y)
    if act == "sigmoid":
        return torch.sigmoid_(y) if inplace else torch.sigmoid(y)
    if act == "tanh":
        return torch.tanh_(y) if inplace else torch.tanh(y)
    if act == "hardtanh":
        return y.clamp_(alpha, beta) if inplace else torch.clamp(y, alpha, beta)
    if act == "leaky_relu":
        return F.leaky_relu(y, alpha, inplace=inplace)
    return y


def _act_scalars(act: str, alpha: float, beta: float) -> list:
    return [alpha, beta] if act == "hardtanh" else [alpha] if act == "leaky_relu" else []


def _np_fused_conv(data, weight, packed, bias=None, other=None, *, stride=(), pad=(), dilate=(),
                   num_group=1, act="none", act_alpha=0.0, act_beta=0.0, input_size=()):
    y = _np_conv(data, weight, bias, kernel=weight.shape[2:], stride=stride, pad=pad, dilate=dilate,
                 num_group=num_group, num_filter=weight.shape[0], no_bias=bias is None)
    if other is not None:
        y = y + other
    return _np_act(y, act, act_alpha, act_beta)


def _np_act(y, act, alpha, beta):
    if act == "relu":
        return np.maximum(y, 0)
    if act == "sigmoid":
        return 1 / (1 + np.exp(-y))
    if act == "tanh":
        return np.tanh(y)
    if act == "hardtanh":
        return np.clip(y, alpha, beta)
    if act == "leaky_relu":
        return np.where(y > 0, y, y * alpha)
    return y


def _fused_conv_samples() -> list:
    r = np.random.RandomState(11)
    x, w, b = r.randn(2, 4, 6, 5), r.randn(6, 4, 3, 3), r.randn(6)
    geo = {"stride": (1, 1), "pad": (1, 1), "dilate": (1, 1)}
    s = [Sample((x, w, w, b), {**geo, "act": act, "act_alpha": lo, "act_beta": hi, "input_size": (2, 4, 6, 5)},
                ref=_np_fused_conv, grad=False, rtol=1e-4, atol=1e-5)
         for act, lo, hi in (("none", 0.0, 0.0), ("relu", 0.0, 0.0), ("sigmoid", 0.0, 0.0), ("tanh", 0.0, 0.0),
                             ("hardtanh", 0.0, 0.5), ("leaky_relu", 0.1, 0.0))]
    # residual add then relu; a packed weight for another input size (the plain weight serves)
    s.append(Sample((x, w, w, b, r.randn(2, 6, 6, 5)), {**geo, "act": "relu", "input_size": (8, 4, 6, 5)},
                    ref=_np_fused_conv, grad=False, rtol=1e-4, atol=1e-5))
    # matmul forms (the packed sample is the matrix _onednn_conv_weight makes): 1x1 kernel on
    # 2x2 inputs; 3x3 pad 1 on 1x1 inputs; 3x3 stride 2 pad 1 on 2x2 inputs with a residual;
    # 3x3 pad 1 on 2x2 inputs (2x2 outputs) with a residual; dilated 3x3 on 2x3 inputs
    for xs, ws, geo2, res in (((3, 4, 2, 2), (5, 4, 1, 1), {}, None),
                              ((3, 4, 1, 1), (5, 4, 3, 3), {"pad": (1, 1)}, None),
                              ((3, 4, 2, 2), (5, 4, 3, 3), {"stride": (2, 2), "pad": (1, 1)}, (3, 5, 1, 1)),
                              ((3, 4, 2, 2), (5, 4, 3, 3), {"pad": (1, 1)}, (3, 5, 2, 2)),
                              ((2, 4, 2, 3), (5, 4, 3, 3), {"pad": (2, 1), "dilate": (2, 1)}, None)):
        wm = r.randn(*ws)
        ins = (r.randn(*xs), wm, _onednn_weight_ref(wm, input_size=xs, **geo2), r.randn(ws[0]))
        s.append(Sample(ins + ((r.randn(*res),) if res else ()), {**geo2, "act": "relu", "input_size": xs},
                        ref=_np_fused_conv, grad=False, rtol=1e-4, atol=1e-5))
    # stride, dilation, groups (depthwise), no bias
    dw = r.randn(4, 1, 3, 3)
    s.append(Sample((r.randn(1, 4, 7, 7), dw, dw),
                    {"stride": (2, 2), "pad": (2, 2), "dilate": (2, 2), "num_group": 4, "act": "relu"},
                    ref=_np_fused_conv, grad=False, rtol=1e-4, atol=1e-5))
    return s


def _conv_as_matmul(data: Tensor, matrix: Tensor, bias: Optional[Tensor], other: Optional[Tensor], act: str,
                    alpha: float, beta: float, form: Any) -> Tensor:
    """``_fused_conv`` as one matrix product with the ``matrix`` of ``matmul_form``;
    channels-last result. A matrix packed by oneDNN (``pack_linear``) runs its linear kernel
    with the bias and activation fused."""
    n, _, h, w = data.shape
    rows = data.permute(0, 2, 3, 1).reshape(n * h * w if form[0] == "pixel" else n, -1)
    if form[0] == "dense":
        h, w = form[1], form[2]
        if bias is not None and h * w > 1:
            bias = bias.repeat(h * w)  # the matrix's rows run over (position, out-channel)
    if other is None:
        y = _linear_act(rows, matrix, bias, act, alpha, beta)
    else:
        res = other.permute(0, 2, 3, 1).reshape(rows.shape[0], -1)
        if matrix.is_mkldnn:
            y = _LINEAR.binary(rows.contiguous(), res.contiguous(), matrix, bias, "add")
        else:
            y = F.linear(rows, matrix, bias)
            y += res
        y = _conv_activation(y, act, alpha, beta, inplace=True)
    return y.reshape(n, h, w, -1).permute(0, 3, 1, 2)


def _linear_act(x: Tensor, matrix: Tensor, bias: Optional[Tensor], act: str, alpha: float, beta: float) -> Tensor:
    """act(x @ matrix.T + bias) for a 2-D ``x``: one oneDNN linear kernel where ``matrix`` is
    packed by ``pack_linear``, else F.linear and the activation in place."""
    if matrix.is_mkldnn:
        return _LINEAR(x.contiguous(), matrix, bias, act, _act_scalars(act, alpha, beta), "")
    return _conv_activation(F.linear(x, matrix, bias), act, alpha, beta, inplace=True)


@register("_fused_conv", differentiable=False, samples=_fused_conv_samples)
def _fused_conv(data: Tensor, weight: Tensor, packed: Tensor, bias: Optional[Tensor] = None,
                other: Optional[Tensor] = None, *, stride: Shape = (), pad: Shape = (), dilate: Shape = (),
                num_group: int = 1, act: FusedActivation = "none",
                act_alpha: float = 0.0, act_beta: float = 0.0, input_size: Shape = ()) -> Tensor:
    """act(conv2d(data, weight) + bias [+ other]) for predict mode (NCHW data, OIHW weight).

    ``packed`` is ``_onednn_conv_weight(weight)``, reordered for inputs of shape ``input_size``:
    it serves inputs of that shape, the plain weight any other. ``hardtanh`` clips
    to [act_alpha, act_beta], ``leaky_relu`` has slope act_alpha. With ``other`` (a residual of the
    output's shape) the activation is relu or none, applied after the addition. On oneDNN the
    output is channels-last (same values; torch operators accept either layout)."""
    s, p, d = _geometry("_fused_conv", stride, pad, dilate)
    planned = data.shape == input_size  # the size ``packed`` was made for (torch.Size == tuple)
    grad = _needs_grad(data, weight, packed, bias, other)
    if planned and packed.dim() == 2 and not grad:
        return _conv_as_matmul(data, packed, bias, other, act, act_alpha, act_beta,
                               matmul_form(tuple(weight.shape), tuple(input_size), s, p, d, num_group))
    if not grad and onednn_conv_ready(data) and weight.dtype == torch.float32:
        x = data.contiguous(memory_format=_CL)
        w = packed if planned and packed.is_mkldnn else weight
        if other is None:
            return _POINTWISE(x, w, bias, p, s, d, num_group, act, _act_scalars(act, act_alpha, act_beta), None)
        if act in ("none", "relu"):
            return _POINTWISE.binary(x, other.contiguous(memory_format=_CL), w, bias, p, s, d, num_group, "add",
                                     None, None if act == "none" else act, [], None)
    y = F.conv2d(data, weight, bias, s, p, d, num_group)
    if other is not None:
        y = y + other
    return _conv_activation(y, act, act_alpha, act_beta)


#: A convolution runs as one product with its unrolled weight (the ``"dense"`` matrix form) only
#: where that matrix has at most this many times the weight's elements.
DENSE_MAX_GROWTH = 4


def matmul_form(weight_shape: tuple, input_size: tuple, stride: tuple, pad: tuple, dilate: tuple,
                groups: int) -> Optional[tuple]:
    """How a 2-D convolution of inputs ``input_size`` is one matrix product, exactly, or None.

    oneDNN's convolutions run at a fraction of the machine's speed on tiny images (the last
    stages of ImageNet networks on small inputs), where one GEMM does the same arithmetic or
    less. ``("pixel",)``: a 1x1 kernel, stride 1, no padding, on at most 4 positions:
    (N*H*W, C) @ (C, O). ``("dense", out_h, out_w)``: the convolution as the linear map it is
    from a whole image to a whole output, (N, H*W*C) @ (H*W*C, out_h*out_w*O) with the unrolled
    weight (``dense_conv_matrix``), where each image has fewer positions than the kernel has
    taps (so the product has fewer multiply-adds than the convolution: 3x3 on 2x2 measured 1.7x
    faster, 3x3 on 3x3 1.4x slower) or a single output position whose kernel (its taps that
    read real input, ``nn.conv_taps``) covers the input exactly."""
    if groups != 1 or len(input_size) != 4 or len(weight_shape) != 4:
        return None
    geometry = conv_taps(tuple(input_size[2:]), tuple(weight_shape[2:]), stride, pad, dilate)
    if geometry is None:
        return None
    _, _, positions, covers, _ = geometry
    (h, w), (kh, kw) = input_size[2:], weight_shape[2:]
    if not covers and (kh, kw) == (1, 1) and stride == (1, 1) and pad == (0, 0) and positions <= 4:
        return ("pixel",)
    if covers or (h * w < kh * kw and positions * h * w <= DENSE_MAX_GROWTH * kh * kw):
        oh = conv_output_size(h, kh, stride[0], pad[0], dilate[0])
        ow = conv_output_size(w, kw, stride[1], pad[1], dilate[1])
        return ("dense", oh, ow)
    return None


def dense_conv_matrix(weight: Tensor, spatial: tuple, out: tuple, stride: tuple, pad: tuple,
                      dilate: tuple) -> Tensor:
    """The (out_h*out_w*O, H*W*C) matrix of a 2-D convolution of (C, H, W) images with the OIHW
    ``weight`` (``matmul_form``'s ``"dense"`` form): row (output position, out-channel), column
    (input position, in-channel), each entry the kernel tap that output reads that input with,
    or zero."""
    o, c, kh, kw = weight.shape
    (h, w), (oh, ow) = spatial, out
    taps = weight.permute(2, 3, 0, 1)  # kh, kw, O, C
    m = weight.new_zeros(oh, ow, o, h, w, c)
    for oi in range(oh):
        for ki in range(kh):
            ii = oi * stride[0] - pad[0] + ki * dilate[0]
            if not 0 <= ii < h:
                continue
            for oj in range(ow):
                for kj in range(kw):
                    ij = oj * stride[1] - pad[1] + kj * dilate[1]
                    if 0 <= ij < w:
                        m[oi, oj, :, ii, ij, :] = taps[ki, kj]
    return m.reshape(oh * ow * o, h * w * c)


def _onednn_weight_ref(w, *, stride=(), pad=(), dilate=(), num_group=1, input_size=()):
    s, p, d = _geometry("_onednn_conv_weight", stride, pad, dilate)
    form = matmul_form(w.shape, tuple(input_size), s, p, d, num_group)
    if form is None:
        return w
    if form[0] == "pixel":
        return w.reshape(w.shape[0], -1)
    # the convolution of every basis image, as the columns of its matrix
    _, c, h, wd = (int(i) for i in input_size)
    basis = np.eye(h * wd * c, dtype=w.dtype).reshape(-1, h, wd, c).transpose(0, 3, 1, 2)
    y = _np_conv(basis, w, stride=s, pad=p, dilate=d)  # (H*W*C, O, oh, ow)
    return y.transpose(0, 2, 3, 1).reshape(h * wd * c, -1).T


@register("_onednn_conv_weight", returns_view=True, differentiable=False, samples=lambda: [
    Sample((_r.randn(6, 4, 3, 3),), {"stride": (1, 1), "pad": (1, 1), "input_size": (2, 4, 6, 5)},
           ref=_onednn_weight_ref, grad=False),
    Sample((_r.randn(4, 1, 3, 3),), {"stride": (2, 2), "num_group": 4, "input_size": (1, 4, 7, 7)},
           ref=_onednn_weight_ref, grad=False),
    Sample((_r.randn(5, 4, 1, 1),), {"input_size": (3, 4, 2, 2)}, ref=_onednn_weight_ref, grad=False),
    Sample((_r.randn(5, 4, 3, 3),), {"pad": (1, 1), "input_size": (3, 4, 1, 1)}, ref=_onednn_weight_ref,
           grad=False),
    Sample((_r.randn(5, 4, 3, 3),), {"stride": (2, 2), "pad": (1, 1), "input_size": (3, 4, 2, 2)},
           ref=_onednn_weight_ref, grad=False),
    Sample((_r.randn(5, 4, 3, 3),), {"pad": (1, 1), "input_size": (3, 4, 2, 2)}, ref=_onednn_weight_ref,
           grad=False),
    Sample((_r.randn(5, 4, 3, 3),), {"pad": (2, 1), "dilate": (2, 1), "input_size": (2, 4, 2, 3)},
           ref=_onednn_weight_ref, grad=False)])
def _onednn_conv_weight(weight: Tensor, *, stride: Shape = (), pad: Shape = (), dilate: Shape = (),
                        num_group: int = 1, input_size: Shape = ()) -> Tensor:
    """``weight`` prepared for convolving inputs of shape ``input_size`` by ``_fused_conv``:
    the (out-channels, taps x in-channels) matrix where the convolution is one matrix product
    (``matmul_form``; packed for oneDNN's linear kernel where it runs), else reordered into the
    blocked layout oneDNN picks (an opaque oneDNN tensor with the weight's values), or
    ``weight`` itself where oneDNN cannot run it (not CPU float32, oneDNN not built, no input
    size)."""
    size = tuple(int(i) for i in input_size)
    s, p, d = _geometry("_onednn_conv_weight", stride, pad, dilate)
    if len(size) != 4 or weight.dim() != 4 or _needs_grad(weight):
        return weight
    form = matmul_form(tuple(weight.shape), size, s, p, d, num_group)
    if form is not None:
        if form[0] == "pixel":
            return pack_linear(weight.reshape(weight.shape[0], -1).contiguous(), size[0] * size[2] * size[3])
        return pack_linear(dense_conv_matrix(weight, size[2:], form[1:], s, p, d), size[0])
    if not onednn_conv_ready(weight):
        return weight
    return _REORDER(weight.contiguous(), list(p), list(s), list(d), num_group, list(size))


@register("_contiguous", returns_view=True, samples=lambda: [Sample((_r.randn(2, 3, 4, 5),), ref=lambda x: x)])
def _contiguous(data: Tensor) -> Tensor:
    """The input's values in row-major (C-contiguous) layout: the input itself when it already is.
    Ends a channels-last region of a predict-mode graph (see ``_fused_conv``)."""
    return data.contiguous()


@register("_channels_last", returns_view=True, differentiable=True, samples=lambda: [
    Sample((_r.randn(2, 3, 4, 5),), ref=lambda x: x), Sample((_r.randn(3, 4),), ref=lambda x: x)])
def _channels_last(data: Tensor) -> Tensor:
    """The input's values, stored channels-last where oneDNN's convolutions run on them (a 4-D CPU
    float32 tensor; the input itself when it already is), else the input. Starts a channels-last
    region of a hybridized graph (see ``compiler/passes/layout.py``): torch's oneDNN convolutions
    and the operators between them keep that layout, and run faster in it than in NCHW."""
    if data.dim() == 4 and onednn_conv_ready(data):
        return data.contiguous(memory_format=_CL)
    return data


# ---- predict-mode FullyConnected on oneDNN's packed linear kernel (passes/onednn.py) ------------
def _np_fused_linear(data, weight, packed, bias=None, *, act="none", act_alpha=0.0, act_beta=0.0):
    y = data.reshape(data.shape[0], -1) @ weight.T
    return _np_act(y if bias is None else y + bias, act, act_alpha, act_beta)


def _fused_linear_samples() -> list:
    r = np.random.RandomState(12)
    w, b = r.randn(6, 20), r.randn(6)
    s = [Sample((r.randn(3, 20), w, w, b), {"act": act, "act_alpha": lo, "act_beta": hi},
                ref=_np_fused_linear, grad=False, rtol=1e-4, atol=1e-5)
         for act, lo, hi in (("none", 0.0, 0.0), ("relu", 0.0, 0.0), ("sigmoid", 0.0, 0.0), ("tanh", 0.0, 0.0),
                             ("hardtanh", -0.5, 0.5), ("leaky_relu", 0.1, 0.0))]
    # a 4-D input is flattened (a convolution net's head); no bias
    s.append(Sample((r.randn(2, 5, 2, 2), w, w), {"act": "relu"}, ref=_np_fused_linear, grad=False,
                    rtol=1e-4, atol=1e-5))
    return s


@register("_fused_linear", differentiable=False, samples=_fused_linear_samples)
def _fused_linear(data: Tensor, weight: Tensor, packed: Tensor, bias: Optional[Tensor] = None, *,
                  act: FusedActivation = "none",
                  act_alpha: float = 0.0, act_beta: float = 0.0) -> Tensor:
    """act(flatten(data) @ weight.T + bias) for predict mode: FullyConnected (flatten=True) with
    its activation (as ``_fused_conv``'s). ``packed`` is ``_onednn_linear_weight(weight)``; where
    it is a oneDNN-packed weight, oneDNN's linear kernel runs with the bias and activation fused
    (on any number of rows, fastest on the number it was packed for)."""
    x = data.flatten(1) if data.dim() > 2 else data
    packed_serves = x.dim() == 2 and x.dtype == torch.float32 and not _needs_grad(x, packed, bias)
    return _linear_act(x, packed if packed_serves else weight, bias, act, act_alpha, act_beta)


@register("_onednn_linear_weight", returns_view=True, differentiable=False, samples=lambda: [
    Sample((_r.randn(6, 20),), {"rows": 3}, ref=lambda w, rows=0: w, grad=False),
    Sample((_r.randn(300, 200),), {"rows": 256}, ref=lambda w, rows=0: w, grad=False)])
def _onednn_linear_weight(weight: Tensor, *, rows: int = 0) -> Tensor:
    """``weight`` (out, in) packed for ``_fused_linear`` on ``rows`` rows (``pack_linear``: an
    opaque oneDNN tensor with the weight's values where that pays), else ``weight`` itself."""
    return weight if _needs_grad(weight) else pack_linear(weight, int(rows))


# ---- predict-mode BatchNorm, additions, activations written over their input (passes/inference.py)
def _np_batchnorm_act(data, gamma, beta, moving_mean, moving_var, *, eps=1e-3, fix_gamma=True, axis=1,
                      act="none", act_alpha=0.0, act_beta=0.0, inplace=False):
    shape = [1] * data.ndim
    shape[axis % data.ndim] = -1
    g = np.ones_like(gamma) if fix_gamma else gamma
    y = (data - moving_mean.reshape(shape)) / np.sqrt(moving_var.reshape(shape) + eps) * g.reshape(shape) \
        + beta.reshape(shape)
    return _np_act(y, act, act_alpha, act_beta)


def _batchnorm_act_samples() -> list:
    r = np.random.RandomState(13)
    c = 4
    stats = (r.randn(c), r.randn(c), r.randn(c), r.rand(c) + 0.5)
    s = [Sample((r.randn(2, c, 3, 5),) + stats, {"fix_gamma": fix, "act": act, "inplace": inplace},
                ref=_np_batchnorm_act, grad=False, rtol=1e-4, atol=1e-5)
         for fix, act, inplace in ((True, "none", False), (False, "relu", True), (False, "sigmoid", False),
                                   (False, "tanh", True))]
    s.append(Sample((r.randn(2, c, 3, 5),) + stats, {"fix_gamma": False, "act": "hardtanh", "act_alpha": 0.0,
                                                       "act_beta": 0.5},
                    ref=_np_batchnorm_act, grad=False, rtol=1e-4, atol=1e-5))
    s.append(Sample((r.randn(3, 5, c),) + stats, {"axis": -1, "fix_gamma": False, "eps": 1e-5, "act": "relu",
                                                    "inplace": True},
                    ref=_np_batchnorm_act, grad=False, rtol=1e-4, atol=1e-5))
    return s


#: Smaller inputs get a new tensor from torch's one-call BatchNorm kernel even where
#: ``_batchnorm_act`` may write in place: their blocks come back from the heap without page
#: faults, and the in-place form's per-channel arithmetic costs more dispatches than it saves.
INPLACE_MIN_ELEMENTS = 1 << 20


@register("_batchnorm_act", returns_view=True, differentiable=False, samples=_batchnorm_act_samples,
          mutates_inputs=_over_first)
def _batchnorm_act(data: Tensor, gamma: Tensor, beta: Tensor, moving_mean: Tensor, moving_var: Tensor, *,
                   eps: float = 1e-3, fix_gamma: bool = True, axis: int = 1,
                   act: FusedActivation = "none",
                   act_alpha: float = 0.0, act_beta: float = 0.0, inplace: bool = False) -> Tensor:
    """Predict-mode BatchNorm (the moving statistics; gamma taken as 1 with ``fix_gamma``, as
    MXNet's) followed by ``act`` (``hardtanh`` clips to [act_alpha, act_beta]). With ``inplace``
    (``passes.inference.compute_in_place`` sets it where nothing else reads ``data``) an input
    of at least ``INPLACE_MIN_ELEMENTS`` gets the result written over it, as ``data * scale +
    shift`` per channel of ``axis`` (the form torch's CPU kernel computes too): no new tensor,
    whose fresh pages cost more than the arithmetic on big activations (BatchNorm + relu on
    32x64x112x112 channels-last: 120 ms as two new tensors, 15 ms in place)."""
    nd = data.dim()
    if inplace and data.numel() >= INPLACE_MIN_ELEMENTS and nd >= 2 and data.is_floating_point() \
            and data.dtype == gamma.dtype:
        scale = torch.rsqrt(moving_var + eps)
        if not fix_gamma:
            scale = scale * gamma
        shape = [1] * nd
        shape[axis % nd] = -1
        y = torch.addcmul((beta - moving_mean * scale).view(shape), data, scale.view(shape), out=data)
    else:
        y = batch_norm(data, gamma, beta, moving_mean, moving_var, eps, 0.9, fix_gamma, True, False, axis, False)
    return _conv_activation(y, act, act_alpha, act_beta, inplace=True)


def _np_add_act(lhs, rhs, *, act="none", act_alpha=0.0, act_beta=0.0, inplace=False):
    return _np_act(lhs + rhs, act, act_alpha, act_beta)


@register("_add_act", returns_view=True, differentiable=False, mutates_inputs=_over_first, samples=lambda: [
    Sample((_r.randn(2, 3, 4, 5), _r.randn(2, 3, 4, 5)), {"act": act, "inplace": inplace}, ref=_np_add_act,
           grad=False)
    for act, inplace in (("none", False), ("relu", True), ("tanh", True))] + [
    Sample((_r.randn(2, 3, 4), _r.randn(3, 1)), {"act": "hardtanh", "act_alpha": -0.5, "act_beta": 0.5,
                                                 "inplace": True}, ref=_np_add_act, grad=False)])
def _add_act(lhs: Tensor, rhs: Tensor, *, act: FusedActivation = "none",
             act_alpha: float = 0.0, act_beta: float = 0.0, inplace: bool = False) -> Tensor:
    """act(lhs + rhs) (``elemwise_add``'s sum, then ``_batchnorm_act``'s activations) for predict
    mode; with ``inplace`` (``passes.inference.compute_in_place`` sets it where nothing else
    reads ``lhs``) written over ``lhs`` when the sum has its shape and dtype."""
    if inplace and lhs.shape == rhs.shape and lhs.dtype == rhs.dtype:
        y = lhs.add_(rhs)
    else:
        y = torch.add(lhs, rhs)
    return _conv_activation(y, act, act_alpha, act_beta, inplace=True)


def _np_act_op(data, *, act="relu", act_alpha=0.0, act_beta=0.0, inplace=False):
    return _np_act(data, act, act_alpha, act_beta)


@register("_act", returns_view=True, differentiable=False, mutates_inputs=_over_first, samples=lambda: [
    Sample((_r.randn(2, 3, 4),), {"act": act, "act_alpha": lo, "act_beta": hi, "inplace": inplace},
           ref=_np_act_op, grad=False)
    for act, lo, hi, inplace in (("relu", 0.0, 0.0, True), ("sigmoid", 0.0, 0.0, False), ("tanh", 0.0, 0.0, True),
                                 ("hardtanh", 0.0, 0.6, True), ("leaky_relu", 0.1, 0.0, True))])
def _act(data: Tensor, *, act: Literal["relu", "sigmoid", "tanh", "hardtanh", "leaky_relu"] = "relu", act_alpha: float = 0.0,
         act_beta: float = 0.0, inplace: bool = False) -> Tensor:
    """``_batchnorm_act``'s activations alone, for predict mode; with ``inplace``
    (``passes.inference.compute_in_place`` sets it on a Convolution output nothing else reads)
    written over ``data``."""
    return _conv_activation(data, act, act_alpha, act_beta, inplace=inplace)
