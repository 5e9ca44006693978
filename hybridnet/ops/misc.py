"""Miscellaneous MXNet 1.9.1 operators: legacy loss heads and layers, sliding-block transforms.

MakeLoss and SVMOutput are loss heads with MXNet's own backward (independent of the head
gradient), written as ``torch.autograd.Function``; IdentityAttachKLSparseReg adds its sparsity
penalty in backward and updates its ``moving_avg`` auxiliary state there, as MXNet does. Crop,
Pooling_v1 and Convolution_v1 are the legacy (v1) layers; im2col/col2im, SpatialTransformer,
Correlation, histogram, cast_storage (dense only) and fill_element_0index complete the set.
"""
from __future__ import annotations

import builtins
import itertools
import math
from typing import Any, Literal, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..base import MXNetError
from . import registry
from .attrs import AnyValue, OptInt, Shape
from ._helpers import ints as _ints, per_dim as _per_dim
from . import storage as _storage
from .registry import Sample, register

__all__: list = []  # operators are reached through the registry / nd.* / sym.*

_rng = np.random.RandomState(11)


def _flat2d(x: Tensor) -> Tensor:
    """mshadow's FlatTo2D: (prod(shape[:-1]), shape[-1])."""
    if x.dim() == 0:
        return x.reshape(1, 1)
    return x.reshape(-1, x.shape[-1])


# ==== MakeLoss ==================================================================================
def make_loss_grad(data: Tensor, *, grad_scale: float, valid_thresh: float, normalization: str) -> Tensor:
    """MXNet's MakeLoss input gradient: grad_scale, divided by the flattened batch size
    (mshadow's FlatTo2D first dimension, prod(shape[:-1])) for 'batch', or by the number of
    elements > valid_thresh (at least 1) for 'valid'. The head gradient is ignored."""
    if normalization == "valid":
        cnt = torch.clamp((data > valid_thresh).sum().to(data.dtype), min=1.0)
        return torch.full_like(data, grad_scale) / cnt
    if normalization == "batch":
        rows = _flat2d(data).shape[0]
        return torch.full_like(data, grad_scale / rows)
    return torch.full_like(data, grad_scale)


class _MakeLossFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, data: Tensor, cfg: dict) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(data)
        ctx.cfg = cfg
        return data.clone()

    @staticmethod
    def backward(ctx: Any, head: Tensor) -> Any:  # type: ignore[override]
        (data,) = ctx.saved_tensors
        return make_loss_grad(data, **ctx.cfg), None


@register("MakeLoss", returns_view=True, predict_identity=True, samples=lambda: [
    Sample((_rng.randn(3, 4),), {}, ref=lambda x, **_: x, grad=False),
    Sample((_rng.randn(5),), {"grad_scale": 2.0, "normalization": "valid", "valid_thresh": 0.1},
           ref=lambda x, **_: x, grad=False)])
def MakeLoss(data: Tensor, *, grad_scale: float = 1.0, valid_thresh: float = 0.0,
             normalization: Literal["batch", "null", "valid"] = "null") -> Tensor:
    """Identity forward marking a loss; backward is ``make_loss_grad`` (MXNet's legacy MakeLoss)."""
    if not (torch.is_grad_enabled() and data.requires_grad):
        return data
    cfg = {"grad_scale": float(grad_scale), "valid_thresh": float(valid_thresh),
           "normalization": normalization}
    return _MakeLossFn.apply(data, cfg)


# ==== SVMOutput =================================================================================
def svm_output_grad(out: Tensor, label: Tensor, *, margin: float, regularization_coefficient: float,
                    use_linear: bool) -> Tensor:
    """MXNet's SVMOutput input gradient (rows of FlatTo2D(out) against integer labels):
    L1 (use_linear): -c*[margin > o_k] on the label column, c*[margin > -o_j] elsewhere;
    L2: -2c*max(margin - o_k, 0) on the label column, 2c*max(margin + o_j, 0) elsewhere."""
    o = _flat2d(out)
    lab = label.reshape(-1).to(torch.int64)
    if lab.shape[0] != o.shape[0]:
        raise MXNetError(f"SVMOutput: label has {lab.shape[0]} values but data has {o.shape[0]} rows "
                         f"(data shape {tuple(out.shape)}); label must have data.shape[:-1]")
    is_k = F.one_hot(lab.clamp(0, o.shape[1] - 1), o.shape[1]).to(torch.bool)
    c = float(regularization_coefficient)
    if use_linear:
        g = torch.where(is_k, -c * (margin > o).to(o.dtype), c * (margin > -o).to(o.dtype))
    else:
        g = torch.where(is_k, -2.0 * c * torch.clamp(margin - o, min=0.0),
                        2.0 * c * torch.clamp(margin + o, min=0.0))
    return g.reshape(out.shape)


class _SVMOutputFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, data: Tensor, label: Tensor, cfg: dict) -> Tensor:  # type: ignore[override]
        out = data.clone()
        ctx.save_for_backward(out, label)
        ctx.cfg = cfg
        return out

    @staticmethod
    def backward(ctx: Any, head: Tensor) -> Any:  # type: ignore[override]
        out, label = ctx.saved_tensors
        return svm_output_grad(out, label, **ctx.cfg), None, None


def _svm_params(attrs: dict, shapes: list) -> list:
    out = list(shapes)
    d = shapes[0]
    if d is not None and len(d) > 0 and len(out) > 1 and out[1] is None:
        out[1] = tuple(d[:-1])
    return out


@register("SVMOutput", returns_view=True, param_shapes=_svm_params, samples=lambda: [
    Sample((_rng.randn(4, 3), np.array([0., 2., 1., 2.])), {}, ref=lambda x, label, **_: x, grad=False),
    Sample((_rng.randn(2, 3, 4), _rng.randint(0, 4, (2, 3)).astype(float)),
           {"margin": 0.5, "use_linear": True}, ref=lambda x, label, **_: x, grad=False)])
def SVMOutput(data: Tensor, label: Tensor, *, margin: float = 1.0, regularization_coefficient: float = 1.0,
              use_linear: bool = False) -> Tensor:
    """SVM loss head: identity forward; backward is the L2-SVM (or L1 with use_linear) hinge
    gradient of ``svm_output_grad``, independent of the head gradient (MXNet's SVMOutput)."""
    if not (torch.is_grad_enabled() and data.requires_grad):
        return data
    cfg = {"margin": float(margin), "regularization_coefficient": float(regularization_coefficient),
           "use_linear": bool(use_linear)}
    return _SVMOutputFn.apply(data, label, cfg)


# ==== IdentityAttachKLSparseReg =================================================================
class _KLSparseFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, data: Tensor, moving_avg: Tensor, cfg: dict) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(data)
        ctx.moving_avg = moving_avg
        ctx.cfg = cfg
        return data.clone()

    @staticmethod
    def backward(ctx: Any, head: Tensor) -> Any:  # type: ignore[override]
        (data,) = ctx.saved_tensors
        return kl_sparse_grad(data, ctx.moving_avg, head, **ctx.cfg), None, None


def kl_sparse_grad(data: Tensor, moving_avg: Tensor, head: Tensor, *, sparseness_target: float,
                   penalty: float, momentum: float) -> Tensor:
    """MXNet's IdentityAttachKLSparseReg backward: updates moving_avg in place with the column
    means of FlatTo2D(data), then returns head + penalty*(-t/avg + (1-t)/(1-avg))."""
    x = _flat2d(data)
    with torch.no_grad():
        avg = x.sum(0) / x.shape[0]
        moving_avg.mul_(momentum).add_((1 - momentum) * avg.to(moving_avg.dtype))
        ma = moving_avg.to(head.dtype)
        extra = penalty * (-sparseness_target / ma + (1 - sparseness_target) / (1 - ma))
    return head + extra.expand(x.shape).reshape(head.shape)


def _kl_params(attrs: dict, shapes: list) -> list:
    out = list(shapes)
    d = shapes[0]
    if d is not None and len(d) > 1 and out[1] is None:
        out[1] = (d[1],)
    return out


@register("IdentityAttachKLSparseReg", returns_view=True,
          aux=("moving_avg",), param_shapes=_kl_params, samples=lambda: [
    Sample((_rng.uniform(0.1, 0.9, (4, 3)), np.full(3, 0.5)), {}, ref=lambda x, m, **_: x, grad=False)])
def IdentityAttachKLSparseReg(data: Tensor, moving_avg: Tensor, *, sparseness_target: float = 0.1,
                              penalty: float = 0.001, momentum: float = 0.9) -> Tensor:
    """Identity forward; backward adds the KL sparseness penalty on the (in-place updated)
    running mean activation ``moving_avg`` (pair it with a sigmoid, as MXNet advises)."""
    if not (torch.is_grad_enabled() and data.requires_grad):
        return data
    cfg = {"sparseness_target": float(sparseness_target), "penalty": float(penalty),
           "momentum": float(momentum)}
    return _KLSparseFn.apply(data, moving_avg, cfg)


# ==== Crop (legacy) =============================================================================
def _np_crop(*data, offset=(0, 0), h_w=(0, 0), center_crop=False, num_args=None):  # type: ignore[no-untyped-def]
    x = data[0]
    h, w = (data[1].shape[2], data[1].shape[3]) if len(data) > 1 else tuple(h_w)
    if center_crop:
        oy, ox = (x.shape[2] - h) // 2, (x.shape[3] - w) // 2
    else:
        oy, ox = offset
    return x[:, :, oy:oy + h, ox:ox + w]


@register("Crop", returns_view=True, samples=lambda: [
    Sample((_rng.randn(2, 3, 6, 7),), {"h_w": (3, 4), "offset": (1, 2)}, ref=_np_crop),
    Sample((_rng.randn(1, 2, 5, 6),), {"h_w": (2, 3), "center_crop": True}, ref=_np_crop),
    Sample((_rng.randn(1, 2, 5, 6), _rng.randn(1, 1, 3, 3)), {"center_crop": True}, ref=_np_crop,
           grad_inputs=(0,)),
    Sample((_rng.randn(2, 1, 4, 5), _rng.randn(2, 7, 2, 4)), {"offset": (2, 1)}, ref=_np_crop,
           grad_inputs=(0,))])
def Crop(*data: Tensor, offset: Shape = (0, 0), h_w: Shape = (0, 0), center_crop: bool = False) -> Tensor:
    """Crop the H, W axes of data[0] (NCHW) to h_w, or to data[1]'s H, W when a second input is
    given (its values are unused and get no gradient); at ``offset`` or centred."""
    if len(data) not in (1, 2):
        raise MXNetError(f"Crop: takes 1 or 2 inputs (data[, crop_like]), got {len(data)}")
    x = data[0]
    if x.dim() != 4:
        raise MXNetError(f"Crop: data must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if len(data) == 2:
        like = data[1]
        if like.dim() != 4:
            raise MXNetError(f"Crop: crop_like must be 4-D (N, C, H, W), got shape {tuple(like.shape)}")
        h, w = int(like.shape[2]), int(like.shape[3])
    else:
        hw = _per_dim(h_w, 2, 0, "h_w", "Crop")
        h, w = hw
        if not (1 <= h <= x.shape[2] and 1 <= w <= x.shape[3]):
            raise MXNetError(f"Crop: h_w={tuple(hw)} must be within 1..{tuple(x.shape[2:])} (the data's "
                             f"height and width)")
    H, W = int(x.shape[2]), int(x.shape[3])
    if h > H or w > W:
        raise MXNetError(f"Crop: crop size ({h}, {w}) is larger than the data's ({H}, {W})")
    if center_crop:
        oy, ox = (H - h) // 2, (W - w) // 2
    else:
        oy, ox = _per_dim(offset, 2, 0, "offset", "Crop")
        if not (0 <= oy <= H - h and 0 <= ox <= W - w):
            raise MXNetError(f"Crop: offset=({oy}, {ox}) leaves no room for a ({h}, {w}) crop of a "
                             f"({H}, {W}) input; offsets must be in 0..({H - h}, {W - w})")
    return x[:, :, oy:oy + h, ox:ox + w]


# ==== im2col / col2im ===========================================================================
def _geometry(op: str, n_sp: int, kernel: Any, stride: Any, dilate: Any, pad: Any) -> tuple:
    k = _ints(kernel)
    if len(k) != n_sp or not 1 <= n_sp <= 3:
        raise MXNetError(f"{op}: kernel={tuple(k)} must have one value per spatial axis (1, 2 or 3 of "
                         f"them); the data has {n_sp} spatial axes")
    s = _per_dim(stride, n_sp, 1, "stride", op)
    d = _per_dim(dilate, n_sp, 1, "dilate", op)
    p = _per_dim(pad, n_sp, 0, "pad", op)
    return k, s, d, p


def _out_sizes(op: str, sp: Sequence[int], k: tuple, s: tuple, d: tuple, p: tuple) -> list:
    outs = [(sp[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(len(k))]
    if any(o < 1 for o in outs):
        raise MXNetError(f"{op}: kernel {k} (dilate {d}) does not fit spatial shape {tuple(sp)} padded "
                         f"by {p}")
    return outs


def _block_slices(off: tuple, d: tuple, s: tuple, outs: list) -> tuple:
    return tuple(slice(off[i] * d[i], off[i] * d[i] + (outs[i] - 1) * s[i] + 1, s[i]) for i in range(len(off)))


def _np_im2col(x, kernel, stride=(), dilate=(), pad=()):  # type: ignore[no-untyped-def]
    n_sp = x.ndim - 2
    k = tuple(kernel)
    s = tuple(stride) or (1,) * n_sp
    d = tuple(dilate) or (1,) * n_sp
    p = tuple(pad) or (0,) * n_sp
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p])
    outs = [(x.shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(n_sp)]
    N, C = x.shape[:2]
    cols = np.zeros((N, C, int(np.prod(k)), int(np.prod(outs))), dtype=x.dtype)
    for ki, off in enumerate(itertools.product(*[range(v) for v in k])):
        for oi, pos in enumerate(itertools.product(*[range(v) for v in outs])):
            idx = tuple(pos[i] * s[i] + off[i] * d[i] for i in range(n_sp))
            cols[:, :, ki, oi] = xp[(slice(None), slice(None)) + idx]
    return cols.reshape(N, C * int(np.prod(k)), -1)


def _np_col2im(cols, output_size, kernel, stride=(), dilate=(), pad=()):  # type: ignore[no-untyped-def]
    osz = tuple(output_size)
    n_sp = len(osz)
    k = tuple(kernel)
    s = tuple(stride) or (1,) * n_sp
    d = tuple(dilate) or (1,) * n_sp
    p = tuple(pad) or (0,) * n_sp
    outs = [(osz[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(n_sp)]
    N = cols.shape[0]
    K = int(np.prod(k))
    C = cols.shape[1] // K
    c4 = cols.reshape(N, C, K, -1)
    img = np.zeros((N, C) + tuple(osz[i] + 2 * p[i] for i in range(n_sp)), dtype=cols.dtype)
    for ki, off in enumerate(itertools.product(*[range(v) for v in k])):
        for oi, pos in enumerate(itertools.product(*[range(v) for v in outs])):
            idx = tuple(pos[i] * s[i] + off[i] * d[i] for i in range(n_sp))
            img[(slice(None), slice(None)) + idx] += c4[:, :, ki, oi]
    crop = tuple(slice(p[i], p[i] + osz[i]) for i in range(n_sp))
    return img[(slice(None), slice(None)) + crop]


@register("im2col", samples=lambda: [
    Sample((_rng.randn(2, 3, 5, 6),), {"kernel": (3, 2), "stride": (2, 1), "pad": (1, 0), "dilate": (1, 2)},
           ref=_np_im2col),
    Sample((_rng.randn(1, 2, 4, 4),), {"kernel": (2, 2)}, ref=_np_im2col),
    Sample((_rng.randn(2, 2, 7),), {"kernel": (3,), "stride": (2,), "pad": (1,)}, ref=_np_im2col),
    Sample((_rng.randn(1, 2, 3, 4, 3),), {"kernel": (2, 2, 2), "stride": (1, 2, 1), "pad": (0, 1, 0)},
           ref=_np_im2col)])
def im2col(data: Tensor, *, kernel: Shape, stride: Shape = (), dilate: Shape = (), pad: Shape = ()) -> Tensor:
    """Sliding blocks of data (N, C, *spatial; 1-3 spatial axes) as columns:
    (N, C*prod(kernel), number of blocks), channel-major like Convolution's weight layout."""
    n_sp = data.dim() - 2
    k, s, d, p = _geometry("im2col", n_sp, kernel, stride, dilate, pad)
    outs = _out_sizes("im2col", data.shape[2:], k, s, d, p)
    pads: list = []
    for q in reversed(p):
        pads += [q, q]
    xp = F.pad(data, pads) if any(p) else data
    blocks = [xp[(slice(None), slice(None)) + _block_slices(off, d, s, outs)]
              for off in itertools.product(*[range(v) for v in k])]
    cols = torch.stack(blocks, 2)  # (N, C, K, *outs)
    N, C = data.shape[0], data.shape[1]
    return cols.reshape(N, C * len(blocks), -1)


@register("col2im", samples=lambda: [
    Sample((_rng.randn(2, 6, 12),), {"output_size": (5, 6), "kernel": (3, 2), "stride": (2, 1), "pad": (1, 0),
                                      "dilate": (1, 2)}, ref=_np_col2im),
    Sample((_rng.randn(1, 8, 9),), {"output_size": (4, 4), "kernel": (2, 2)}, ref=_np_col2im),
    Sample((_rng.randn(2, 6, 4),), {"output_size": (7,), "kernel": (3,), "stride": (2,), "pad": (1,)},
           ref=_np_col2im)])
def col2im(data: Tensor, *, output_size: Shape, kernel: Shape, stride: Shape = (), dilate: Shape = (),
           pad: Shape = ()) -> Tensor:
    """Inverse layout of im2col: sums the columns (N, C*prod(kernel), L) back into an image
    (N, C, *output_size); overlapping blocks add up."""
    osz = _ints(output_size)
    n_sp = len(osz)
    k, s, d, p = _geometry("col2im", n_sp, kernel, stride, dilate, pad)
    outs = _out_sizes("col2im", osz, k, s, d, p)
    K = int(np.prod(k))
    L = int(np.prod(outs))
    if data.dim() != 3 or data.shape[1] % K or data.shape[2] != L:
        raise MXNetError(f"col2im: data must be (N, C*{K}, {L}) for kernel {k} and output_size {osz}, "
                         f"got shape {tuple(data.shape)}")
    N, C = data.shape[0], data.shape[1] // K
    cols = data.reshape((N, C, K) + tuple(outs))
    img = data.new_zeros((N, C) + tuple(osz[i] + 2 * p[i] for i in range(n_sp)))
    for ki, off in enumerate(itertools.product(*[range(v) for v in k])):
        idx = (slice(None), slice(None)) + _block_slices(off, d, s, outs)
        img[idx] = img[idx] + cols[:, :, ki]
    crop = tuple(slice(p[i], p[i] + osz[i]) for i in range(n_sp))
    return img[(slice(None), slice(None)) + crop]


# ==== SpatialTransformer ========================================================================
def _np_st(data, loc, target_shape=(0, 0), **_):  # type: ignore[no-untyped-def]
    N, C, H, W = data.shape
    Ho, Wo = target_shape
    xs, ys = np.linspace(-1, 1, Wo), np.linspace(-1, 1, Ho)
    gx, gy = np.meshgrid(xs, ys)
    src = np.stack([gx.ravel(), gy.ravel(), np.ones(Ho * Wo)])
    out = np.zeros((N, C, Ho, Wo))
    for n in range(N):
        g = loc[n].reshape(2, 3) @ src  # (2, Ho*Wo)
        for q in range(Ho * Wo):
            x = (g[0, q] + 1) * (W - 1) / 2
            y = (g[1, q] + 1) * (H - 1) / 2
            x0, y0 = int(np.floor(x)), int(np.floor(y))
            for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                    if 0 <= yy < H and 0 <= xx < W:
                        out[n, :, q // Wo, q % Wo] += wy * wx * data[n, :, yy, xx]
    return out


def _st_loc() -> np.ndarray:
    base = np.array([[0.9, 0.1, 0.05, -0.1, 1.1, -0.05], [1.2, -0.2, 0.1, 0.15, 0.8, 0.2]])
    return base + _rng.uniform(-0.05, 0.05, base.shape)


@register("SpatialTransformer", samples=lambda: [
    Sample((_rng.randn(2, 3, 5, 6), _st_loc()), {"target_shape": (4, 5), "transform_type": "affine",
                                                "sampler_type": "bilinear"}, ref=_np_st, rtol=1e-5, atol=1e-6)])
def SpatialTransformer(data: Tensor, loc: Tensor, *, target_shape: Shape = (0, 0),
                       transform_type: Literal["affine"], sampler_type: Literal["bilinear"],
                       cudnn_off: AnyValue = None) -> Tensor:
    """Affine spatial transformer: loc (N, 6) maps the target grid (in [-1, 1], corners aligned)
    to source coordinates; data is sampled bilinearly there (zero outside)."""
    if data.dim() != 4:
        raise MXNetError(f"SpatialTransformer: data must be 4-D (N, C, H, W), got shape {tuple(data.shape)}")
    H, W = _per_dim(target_shape, 2, 0, "target_shape", "SpatialTransformer")
    if H <= 0 or W <= 0:
        raise MXNetError(f"SpatialTransformer: target_shape={tuple(_ints(target_shape))} must give a "
                         f"positive (height, width)")
    N = data.shape[0]
    if loc.numel() != N * 6:
        raise MXNetError(f"SpatialTransformer: loc must hold 6 affine parameters per sample, i.e. shape "
                         f"({N}, 6), got shape {tuple(loc.shape)}")
    theta = loc.reshape(N, 2, 3).to(data.dtype)
    grid = F.affine_grid(theta, [N, int(data.shape[1]), H, W], align_corners=True)
    return F.grid_sample(data, grid, mode="bilinear", padding_mode="zeros", align_corners=True)


# ==== Correlation ===============================================================================
def _corr_geometry(shape: Sequence[int], kernel_size: int, max_displacement: int, stride1: int,
                   stride2: int, pad_size: int) -> tuple:
    ph, pw = shape[2] + 2 * pad_size, shape[3] + 2 * pad_size
    kr = (kernel_size - 1) // 2
    border = max_displacement + kr
    th = math.ceil((ph - 2 * border) / stride1)
    tw = math.ceil((pw - 2 * border) / stride1)
    r = max_displacement // stride2
    gw = 2 * r + 1
    if th < 1 or tw < 1:
        raise MXNetError(f"Correlation: max_displacement={max_displacement} and kernel_size={kernel_size} do "
                         f"not fit the input's spatial shape {tuple(shape[2:])} padded by {pad_size}")
    return th, tw, r, gw


def _np_correlation(d1, d2, kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=0,  # type: ignore[no-untyped-def]
                    is_multiply=True):
    th, tw, r, gw = _corr_geometry(d1.shape, kernel_size, max_displacement, stride1, stride2, pad_size)
    pads = [(0, 0), (0, 0), (pad_size, pad_size), (pad_size, pad_size)]
    p1, p2 = np.pad(d1, pads), np.pad(d2, pads)
    N, C = d1.shape[:2]
    out = np.zeros((N, gw * gw, th, tw))
    for i in range(th):
        for j in range(tw):
            x1, y1 = j * stride1 + max_displacement, i * stride1 + max_displacement
            for tc in range(gw * gw):
                x2 = x1 + (tc % gw - r) * stride2
                y2 = y1 + (tc // gw - r) * stride2
                a = p1[:, :, y1:y1 + kernel_size, x1:x1 + kernel_size]
                b = p2[:, :, y2:y2 + kernel_size, x2:x2 + kernel_size]
                v = a * b if is_multiply else np.abs(a - b)
                out[:, tc, i, j] = v.reshape(N, -1).sum(1) / (kernel_size * kernel_size * C)
    return out


@register("Correlation", total_outputs=3, output_names=("output", "tmp1", "tmp2"), samples=lambda: [
    Sample((_rng.randn(2, 3, 5, 6), _rng.randn(2, 3, 5, 6)), {}, ref=_np_correlation),
    Sample((_rng.randn(1, 2, 7, 7), _rng.randn(1, 2, 7, 7)),
           {"kernel_size": 3, "max_displacement": 2, "stride1": 2, "stride2": 2, "pad_size": 2},
           ref=_np_correlation),
    Sample((_rng.randn(1, 2, 6, 5), _rng.randn(1, 2, 6, 5) + 3.0),
           {"max_displacement": 1, "pad_size": 1, "is_multiply": False}, ref=_np_correlation)])
def Correlation(data1: Tensor, data2: Tensor, *, kernel_size: int = 1, max_displacement: int = 1,
                stride1: int = 1, stride2: int = 1, pad_size: int = 0, is_multiply: bool = True) -> Tensor:
    """FlowNet correlation of two NCHW maps: for each displacement (dy, dx) on the stride2 grid
    within max_displacement (channel (dy/stride2 + r)*(2r+1) + dx/stride2 + r), the mean over a
    kernel_size^2 patch and all channels of data1*data2 (or |data1 - data2|), every stride1."""
    if data1.dim() != 4 or tuple(data1.shape) != tuple(data2.shape):
        raise MXNetError(f"Correlation: data1 and data2 must be 4-D (N, C, H, W) of the same shape, got "
                         f"{tuple(data1.shape)} and {tuple(data2.shape)}")
    th, tw, r, gw = _corr_geometry(data1.shape, kernel_size, max_displacement, stride1, stride2, pad_size)
    pads = [pad_size] * 4
    p1 = F.pad(data1, pads) if pad_size else data1
    p2 = F.pad(data2, pads) if pad_size else data2
    C = int(data1.shape[1])
    hs = (th - 1) * stride1 + kernel_size
    ws = (tw - 1) * stride1 + kernel_size
    md = max_displacement
    a = p1[:, :, md:md + hs, md:md + ws]
    maps = []
    for tc in range(gw * gw):
        dy = (tc // gw - r) * stride2
        dx = (tc % gw - r) * stride2
        b = p2[:, :, md + dy:md + dy + hs, md + dx:md + dx + ws]
        if is_multiply:
            v = a * b
        else:  # |a - b| whose gradient at a == b is +1 for a (MXNet's sign rule), not 0
            d = a - b
            v = torch.where(d >= 0, d, -d)
        maps.append(v.sum(1))
    m = torch.stack(maps, 1)  # (N, gw*gw, hs, ws)
    return F.avg_pool2d(m, kernel_size, stride1) / C


# ==== legacy v1 layers ==========================================================================
def _np_pool_v1(x, kernel=(), pool_type="max", global_pool=False, pooling_convention="valid",  # type: ignore[no-untyped-def]
                stride=(), pad=()):
    N, C, H, W = x.shape
    if global_pool:
        if pool_type == "max":
            return x.max(axis=(2, 3), keepdims=True)
        s = x.sum(axis=(2, 3), keepdims=True)
        return s / (H * W) if pool_type == "avg" else s
    kh, kw = kernel
    sh, sw = stride or (1, 1)
    ph, pw = pad or (0, 0)
    xp = np.pad(x, [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    PH, PW = xp.shape[2:]
    if pooling_convention == "valid":
        oh, ow = (PH - kh) // sh + 1, (PW - kw) // sw + 1
    else:
        oh, ow = 1 + int(math.ceil((PH - kh) / sh)), 1 + int(math.ceil((PW - kw) / sw))
    out = np.zeros((N, C, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * sh:min(i * sh + kh, PH), j * sw:min(j * sw + kw, PW)]
            if pool_type == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                out[:, :, i, j] = win.sum(axis=(2, 3)) / (kh * kw if pool_type == "avg" else 1)
    return out


def _pool_v1_samples() -> list:
    x = _rng.randn(2, 2, 7, 6)
    neg = -np.abs(_rng.randn(1, 2, 5, 5)) - 0.5
    S = [Sample((x,), {"kernel": (3, 2), "stride": (2, 2), "pad": (1, 1), "pool_type": pt}, ref=_np_pool_v1)
         for pt in ("max", "avg", "sum")]
    S += [Sample((x,), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 0), "pool_type": pt,
                        "pooling_convention": "full"}, ref=_np_pool_v1) for pt in ("max", "avg", "sum")]
    # zero padding takes part in max pooling (MXNet's legacy Pooling_v1 pads with 0)
    S.append(Sample((neg,), {"kernel": (2, 2), "stride": (2, 2), "pad": (1, 1)}, ref=_np_pool_v1))
    S.append(Sample((x,), {"kernel": (1, 1), "global_pool": True, "pool_type": "avg"}, ref=_np_pool_v1))
    S.append(Sample((x,), {"global_pool": True}, ref=_np_pool_v1))
    return S


@register("Pooling_v1", samples=_pool_v1_samples)
def Pooling_v1(data: Tensor, *, kernel: Shape = (), pool_type: Literal["avg", "max", "sum"] = "max",
               global_pool: bool = False, pooling_convention: Literal["full", "valid"] = "valid",
               stride: Shape = (), pad: Shape = ()) -> Tensor:
    """Legacy 2-D pooling (MXNet Pooling_v1): the input is zero-padded (padding takes part in
    max pooling), 'full' windows are cut at the padded border, and avg always divides by the
    kernel area."""
    if data.dim() != 4:
        raise MXNetError(f"Pooling_v1: data must be 4-D (N, C, H, W) (legacy pooling is 2-D only), got "
                         f"shape {tuple(data.shape)}")
    H, W = int(data.shape[2]), int(data.shape[3])
    if global_pool:
        if pool_type == "max":
            return data.amax(dim=(2, 3), keepdim=True)
        total = data.sum(dim=(2, 3), keepdim=True)
        return total / (H * W) if pool_type == "avg" else total
    k = _ints(kernel)
    if len(k) != 2:
        raise MXNetError(f"Pooling_v1: kernel={k} must have 2 values (kh, kw), or set global_pool=True")
    s = _per_dim(stride, 2, 1, "stride", "Pooling_v1")
    p = _per_dim(pad, 2, 0, "pad", "Pooling_v1")
    PH, PW = H + 2 * p[0], W + 2 * p[1]
    if k[0] > PH or k[1] > PW:
        raise MXNetError(f"Pooling_v1: kernel {k} exceeds the input ({H}, {W}) padded by {p}")
    if pooling_convention == "valid":
        oh, ow = (PH - k[0]) // s[0] + 1, (PW - k[1]) // s[1] + 1
    else:
        oh, ow = 1 + math.ceil((PH - k[0]) / s[0]), 1 + math.ceil((PW - k[1]) / s[1])
    x = F.pad(data, [p[1], p[1], p[0], p[0]]) if any(p) else data
    extra_h = max((oh - 1) * s[0] + k[0] - PH, 0)
    extra_w = max((ow - 1) * s[1] + k[1] - PW, 0)
    if pool_type == "max":
        if extra_h or extra_w:
            x = F.pad(x, [0, extra_w, 0, extra_h], value=float("-inf"))
        return F.max_pool2d(x, k, s)
    if extra_h or extra_w:
        x = F.pad(x, [0, extra_w, 0, extra_h])
    sums = F.avg_pool2d(x, k, s) * (k[0] * k[1])
    return sums / (k[0] * k[1]) if pool_type == "avg" else sums


def _conv_rule(what: str) -> Any:
    conv = registry.find("Convolution")
    return getattr(conv, what) if conv is not None else None


def _conv_v1_active(attrs: dict) -> tuple:
    return ("data", "weight") if attrs.get("no_bias", False) else ("data", "weight", "bias")


def _conv_v1_params(attrs: dict, shapes: list) -> list:
    rule = _conv_rule("param_shapes")
    return rule(attrs, shapes) if rule is not None else list(shapes)


def _np_conv2d(x, w, b=None, kernel=(), stride=(), dilate=(), pad=(), num_filter=0, num_group=1,  # type: ignore[no-untyped-def]
               no_bias=False, **_):
    cols = _np_im2col(x, kernel, stride, dilate, pad)  # (N, C*K, L)
    N, C = x.shape[:2]
    g = num_group
    K = int(np.prod(kernel))
    cols = cols.reshape(N, g, (C // g) * K, -1)
    wg = w.reshape(g, num_filter // g, -1)
    out = np.einsum("gfk,ngkl->ngfl", wg, cols).reshape(N, num_filter, -1)
    if b is not None and not no_bias:
        out = out + b.reshape(1, -1, 1)
    H, W = x.shape[2:]
    s = tuple(stride) or (1, 1)
    d = tuple(dilate) or (1, 1)
    p = tuple(pad) or (0, 0)
    oh = (H + 2 * p[0] - d[0] * (kernel[0] - 1) - 1) // s[0] + 1
    ow = (W + 2 * p[1] - d[1] * (kernel[1] - 1) - 1) // s[1] + 1
    return out.reshape(N, num_filter, oh, ow)


@register("Convolution_v1", active_inputs=_conv_v1_active, param_shapes=_conv_v1_params, samples=lambda: [
    Sample((_rng.randn(2, 3, 6, 5), _rng.randn(4, 3, 3, 2), _rng.randn(4)),
           {"kernel": (3, 2), "num_filter": 4, "stride": (2, 1), "pad": (1, 1), "dilate": (1, 2)},
           ref=_np_conv2d, rtol=1e-5, atol=1e-6),
    Sample((_rng.randn(1, 4, 5, 5), _rng.randn(6, 2, 3, 3)),
           {"kernel": (3, 3), "num_filter": 6, "num_group": 2, "no_bias": True}, ref=_np_conv2d,
           rtol=1e-5, atol=1e-6)])
def Convolution_v1(data: Tensor, weight: Tensor, bias: Optional[Tensor] = None, *, kernel: Shape,
                   stride: Shape = (), dilate: Shape = (), pad: Shape = (), num_filter: int,
                   num_group: int = 1, workspace: int = 1024, no_bias: bool = False,
                   cudnn_tune: Optional[Literal["fastest", "limited_workspace", "off"]] = None,
                   cudnn_off: bool = False,
                   layout: Optional[Literal["NCDHW", "NCHW", "NDHWC", "NHWC"]] = None) -> Tensor:
    """Legacy 2-D convolution (MXNet Convolution_v1): same arithmetic as ``Convolution``, whose
    kernel it calls; weight (num_filter, C/num_group, kh, kw)."""
    if len(_ints(kernel)) != 2:
        raise MXNetError(f"Convolution_v1: kernel={_ints(kernel)} must have 2 values (legacy convolution "
                         f"is 2-D only); use Convolution for 1-D/3-D")
    conv = registry.get("Convolution").kernel
    return conv(data, weight, bias, kernel=kernel, stride=stride, dilate=dilate, pad=pad,
                num_filter=num_filter, num_group=num_group, workspace=workspace, no_bias=no_bias,
                cudnn_tune=cudnn_tune, cudnn_off=cudnn_off, layout=layout)


# ==== histogram =================================================================================
def _hist_active(attrs: dict) -> tuple:
    return ("data",) if attrs.get("bin_cnt") is not None else ("data", "bins")


def _hist_shape(attrs: dict, shapes: list) -> list:
    cnt = attrs.get("bin_cnt")
    if cnt is not None:
        return [(int(cnt),), (int(cnt) + 1,)]
    b = shapes[1] if len(shapes) > 1 else None
    if b is None or len(b) != 1 or b[0] < 2:
        raise MXNetError(f"histogram: bins must be a 1-D array of at least 2 edges, got shape {b}")
    return [(b[0] - 1,), tuple(b)]


def _np_hist(a, bins=None, bin_cnt=None, range=None):  # type: ignore[no-untyped-def]  # noqa: A002
    if bin_cnt is not None:
        counts, edges = np.histogram(a, bins=bin_cnt, range=range)
        return counts.astype(np.int64), edges.astype(a.dtype)
    counts, edges = np.histogram(a, bins=bins)
    return counts.astype(np.int64), edges.astype(bins.dtype)


def _hist_type(attrs: dict, dtypes: list) -> list:
    """Counts are int64; the edges have the dtype of ``bins`` (or of the data with bin_cnt)."""
    return ["int64", dtypes[1] if attrs["bin_cnt"] is None and len(dtypes) > 1 else dtypes[0]]


@register("_histogram", aliases=("histogram",), num_outputs=2, active_inputs=_hist_active,
          infer_shape=_hist_shape, infer_type=_hist_type, differentiable=False, samples=lambda: [
              Sample((_rng.uniform(-1, 1, (4, 5)),), {"bin_cnt": 5, "range": (-0.8, 0.9)}, ref=_np_hist),
              Sample((_rng.uniform(0, 10, (30,)),), {"bin_cnt": 3, "range": (0.0, 10.0)}, ref=_np_hist),
              Sample((_rng.uniform(0, 4, (6, 3)), np.array([0.0, 0.5, 2.0, 3.5])), {}, ref=_np_hist)])
def _histogram(data: Tensor, bins: Optional[Tensor] = None, *, bin_cnt: OptInt = None,
               range: AnyValue = None) -> list:  # noqa: A002 - MXNet's attribute name
    """Histogram of all elements: (counts int64, bin edges). Either bin_cnt equal-width bins over
    ``range`` (lo, hi) or the edges given in ``bins``; values outside are ignored and the last
    bin includes its right edge (NumPy's rule)."""
    if bin_cnt is not None:
        if range is None or len(range) != 2:
            raise MXNetError(f"histogram: bin_cnt={bin_cnt} needs range=(lo, hi), got range={range!r}")
        lo, hi = float(range[0]), float(range[1])
        if lo > hi:
            raise MXNetError(f"histogram: range={tuple(range)} must have lo <= hi")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        n = int(bin_cnt)
        if n < 1:
            raise MXNetError(f"histogram: bin_cnt must be >= 1, got {bin_cnt}")
        edges = torch.tensor([(hi * i + (n - i) * lo) / n for i in builtins.range(n + 1)],
                             dtype=data.dtype, device=data.device)
    else:
        if bins is None:
            raise MXNetError("histogram: give either bins (an array of edges) or bin_cnt and range")
        if bins.dim() != 1 or bins.shape[0] < 2:
            raise MXNetError(f"histogram: bins must be a 1-D array of at least 2 edges, got shape "
                             f"{tuple(bins.shape)}")
        edges = bins
        n = int(bins.shape[0]) - 1
    x = data.reshape(-1).to(edges.dtype)
    if x.device.type == "meta":
        return [torch.empty(n, dtype=torch.int64, device="meta"), edges.clone()]
    idx = torch.bucketize(x, edges, right=True) - 1
    idx = torch.where(x == edges[-1], torch.full_like(idx, n - 1), idx)
    keep = (x >= edges[0]) & (x <= edges[-1])
    counts = torch.bincount(idx[keep], minlength=n)[:n].to(torch.int64)
    return [counts, edges.clone()]



# ==== _onehot_encode (MXNet's legacy nd.onehot_encode) ==========================================
def _np_onehot(indices, out):  # type: ignore[no-untyped-def]
    res = np.zeros(out.shape, dtype=out.dtype)
    res[np.arange(out.shape[0]), indices.astype(np.int64)] = 1
    return res


@register("_onehot_encode", differentiable=False, samples=lambda: [
    Sample((np.array([1.0, 3.0, 0.0]), _rng.uniform(-1, 1, (3, 4))), {}, ref=_np_onehot),
    Sample((np.array([2.0]), np.zeros((1, 3))), {}, ref=_np_onehot)])
def _onehot_encode(lhs: Tensor, rhs: Tensor) -> Tensor:
    """One-hot rows: an array shaped and typed like ``rhs`` (N, depth) with row i all zeros but
    a 1 at column ``int(lhs[i])`` (``rhs`` gives only the shape and dtype; MXNet's
    ``nd.onehot_encode(indices, out)`` writes the result into it)."""
    if rhs.dim() != 2 or lhs.dim() != 1 or lhs.shape[0] != rhs.shape[0]:
        raise MXNetError(f"onehot_encode: indices must be 1-D (N,) and out 2-D (N, depth), got "
                         f"{tuple(lhs.shape)} and {tuple(rhs.shape)}")
    idx = lhs.to(torch.int64)
    if rhs.device.type != "meta" and idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= rhs.shape[1]):
        raise MXNetError(f"onehot_encode: indices must lie in [0, {rhs.shape[1]}), got "
                         f"{lhs.tolist()[:10]}")
    res = torch.zeros(rhs.shape, dtype=rhs.dtype, device=rhs.device)
    if rhs.device.type != "meta":
        res[torch.arange(rhs.shape[0], device=rhs.device), idx] = 1
    return res


# ==== cast_storage / fill_element_0index ========================================================
@register("cast_storage", samples=lambda: [
    Sample((_rng.randn(3, 4),), {"stype": "default"}, ref=lambda x, stype: x)])
def cast_storage(data: Tensor, *, stype: Literal["csr", "default", "row_sparse"]) -> Tensor:
    """The array in storage ``stype`` (see ``ops.storage``: dense -> row_sparse keeps the rows
    with a non-zero, dense -> csr the non-zeros); always new memory. Graphs and recorded
    computations hold dense tensors, so this kernel gives the values densely: the storage is
    changed by the operator's sparse rule (eager calls) and a graph's storage inference
    (``compiler.storage``: a bound Symbol's output arrays)."""
    return _storage.to_dense(data).clone()


def _np_fill0(lhs, mhs, rhs):  # type: ignore[no-untyped-def]
    out = lhs.copy()
    out[np.arange(lhs.shape[0]), rhs.astype(np.int64)] = mhs
    return out


@register("fill_element_0index", samples=lambda: [
    Sample((_rng.randn(4, 5), _rng.randn(4), np.array([0., 4., 2., 2.])), {}, ref=_np_fill0,
           grad_inputs=(0, 1))])
def fill_element_0index(lhs: Tensor, mhs: Tensor, rhs: Tensor) -> Tensor:
    """Copy of lhs (N, M) with out[i, rhs[i]] = mhs[i] (0-based column indices in rhs)."""
    if lhs.dim() != 2 or mhs.numel() != lhs.shape[0] or rhs.numel() != lhs.shape[0]:
        raise MXNetError(f"fill_element_0index: lhs must be 2-D (N, M) with mhs and rhs of N values, got "
                         f"{tuple(lhs.shape)}, {tuple(mhs.shape)}, {tuple(rhs.shape)}")
    idx = rhs.reshape(-1, 1).to(torch.int64)
    return lhs.scatter(1, idx, mhs.reshape(-1, 1).to(lhs.dtype))
