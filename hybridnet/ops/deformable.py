"""MXNet's contrib DeformableConvolution (deformable convolution v1) on NCHW data.

Each kernel tap (i, j) of output position (y, x) reads the input at
``(y*stride - pad + i*dilate + dy, x*stride - pad + j*dilate + dx)`` with the learned offsets
(dy, dx) taken from ``offset`` (N, deformable_groups * kh * kw * 2, Ho, Wo), channel
``(group * kh * kw + i * kw + j) * 2`` for dy and ``+ 1`` for dx. Reads are bilinear, with
zeros outside the input (MXNet's deformable_im2col); then the taps are contracted with the
weights as a grouped convolution. Everything is torch ops, so gradients flow to data, offsets,
weight and bias.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from torch import Tensor

from ..base import MXNetError
from ._helpers import fill_shape, ints, per_dim
from .attrs import Shape
from .registry import Sample, register


def _active(attrs: dict) -> tuple:
    return ("data", "offset", "weight") if attrs.get("no_bias", False) else ("data", "offset", "weight", "bias")


def _params(attrs: dict, shapes: list) -> list:
    out = list(shapes)
    d = shapes[0]
    k = ints(attrs["kernel"])
    nf = int(attrs["num_filter"])
    g = int(attrs.get("num_group", 1))
    c = d[1] if d is not None and len(d) > 1 else 0
    out[2] = fill_shape(shapes[2], (nf, c // g if c else 0) + tuple(k))
    if len(out) > 3:
        out[3] = fill_shape(shapes[3], (nf,))
    return out


def _sample_taps(data: Tensor, py: Tensor, px: Tensor, dg: int) -> Tensor:
    """Bilinear reads of ``data`` (N, C, H, W) at positions (N, dg, K, L): (N, C, K, L)."""
    N, C, H, W = data.shape
    K, L = py.shape[2], py.shape[3]
    flat = data.reshape(N, dg, C // dg, H * W)
    y0, x0 = torch.floor(py), torch.floor(px)
    ly, lx = py - y0, px - x0
    out = data.new_zeros((N, dg, C // dg, K * L))
    for dy, wy in ((0, 1 - ly), (1, ly)):
        for dx, wx in ((0, 1 - lx), (1, lx)):
            yy, xx = y0 + dy, x0 + dx
            valid = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            idx = (yy.clamp(0, H - 1) * W + xx.clamp(0, W - 1)).to(torch.int64).reshape(N, dg, 1, K * L)
            vals = torch.gather(flat, 3, idx.expand(N, dg, C // dg, K * L))
            weight = (wy * wx * valid).reshape(N, dg, 1, K * L).to(data.dtype)
            out = out + vals * weight
    return out.reshape(N, C, K, L)


def _np_deform_conv(data, offset, weight, bias=None, kernel=(3, 3), stride=(), dilate=(), pad=(),  # type: ignore[no-untyped-def]
                    num_filter=1, num_group=1, num_deformable_group=1, no_bias=False, **_):
    N, C, H, W = data.shape
    kh, kw = kernel
    sh, sw = stride or (1, 1)
    dh, dw = dilate or (1, 1)
    ph, pw = pad or (0, 0)
    Ho, Wo = offset.shape[2:]
    cols = np.zeros((N, C, kh * kw, Ho, Wo))
    cg = C // num_deformable_group
    for n in range(N):
        for c in range(C):
            g = c // cg
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for y in range(Ho):
                        for x in range(Wo):
                            yy = y * sh - ph + i * dh + offset[n, (g * kh * kw + k) * 2, y, x]
                            xx = x * sw - pw + j * dw + offset[n, (g * kh * kw + k) * 2 + 1, y, x]
                            y0, x0 = int(np.floor(yy)), int(np.floor(xx))
                            v = 0.0
                            for a, wa in ((0, 1 - (yy - y0)), (1, yy - y0)):
                                for b, wb in ((0, 1 - (xx - x0)), (1, xx - x0)):
                                    if 0 <= y0 + a < H and 0 <= x0 + b < W:
                                        v += wa * wb * data[n, c, y0 + a, x0 + b]
                            cols[n, c, k, y, x] = v
    G = num_group
    w = weight.reshape(G, num_filter // G, (C // G) * kh * kw)
    cols = cols.reshape(N, G, (C // G) * kh * kw, Ho * Wo)
    out = np.einsum("gfk,ngkl->ngfl", w, cols).reshape(N, num_filter, Ho, Wo)
    if bias is not None and not no_bias:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


def _samples() -> list:
    r = np.random.RandomState(51)
    return [
        Sample((r.rand(1, 2, 4, 5), r.rand(1, 18, 4, 5) * 0.8 + 0.1, r.randn(3, 2, 3, 3), r.randn(3)),
               {"kernel": (3, 3), "num_filter": 3, "pad": (1, 1)}, ref=_np_deform_conv,
               grad_inputs=(0, 1, 2, 3), rtol=1e-5, atol=1e-6),
        Sample((r.rand(2, 4, 5, 5), r.rand(2, 36, 3, 3) * 0.8 + 0.1, r.randn(4, 2, 3, 3)),
               {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1), "dilate": (2, 2), "num_group": 2,
                "num_deformable_group": 2, "no_bias": True}, ref=_np_deform_conv,
               grad_inputs=(0, 2), rtol=1e-5, atol=1e-6)]


@register("_contrib_DeformableConvolution", active_inputs=_active, param_shapes=_params, samples=_samples)
def _contrib_DeformableConvolution(data: Tensor, offset: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                                   *, kernel: Shape, num_filter: int, stride: Shape = (), dilate: Shape = (),
                                   pad: Shape = (), num_group: int = 1, num_deformable_group: int = 1,
                                   workspace: int = 1024, no_bias: bool = False,
                                   layout: Optional[str] = None) -> Tensor:
    """2-D deformable convolution: a grouped convolution whose taps are read at learned
    fractional offsets (see the module docstring for the offset layout)."""
    if data.dim() != 4:
        raise MXNetError(f"DeformableConvolution: data must be NCHW, got shape {tuple(data.shape)}")
    if layout not in (None, "NCHW"):
        raise MXNetError(f"DeformableConvolution: only layout='NCHW' is supported, got {layout!r}")
    kh, kw = per_dim(kernel, 2, 1, "kernel", "DeformableConvolution")
    sh, sw = per_dim(stride, 2, 1, "stride", "DeformableConvolution")
    dh, dw = per_dim(dilate, 2, 1, "dilate", "DeformableConvolution")
    ph, pw = per_dim(pad, 2, 0, "pad", "DeformableConvolution")
    N, C, H, W = data.shape
    G, dg = num_group, num_deformable_group
    Ho = (H + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    Wo = (W + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    K = kh * kw
    if C % G or C % dg or num_filter % G:
        raise MXNetError(f"DeformableConvolution: channels {C} and num_filter {num_filter} must be divisible "
                         f"by num_group {G}, and channels by num_deformable_group {dg}")
    if tuple(offset.shape) != (N, dg * K * 2, Ho, Wo):
        raise MXNetError(f"DeformableConvolution: offset must have shape {(N, dg * K * 2, Ho, Wo)}, got "
                         f"{tuple(offset.shape)}")
    if data.device.type == "meta":
        return torch.empty((N, num_filter, Ho, Wo), dtype=data.dtype, device="meta")
    ki = torch.arange(kh, device=data.device, dtype=data.dtype).repeat_interleave(kw) * dh
    kj = torch.arange(kw, device=data.device, dtype=data.dtype).repeat(kh) * dw
    oy = torch.arange(Ho, device=data.device, dtype=data.dtype) * sh - ph
    ox = torch.arange(Wo, device=data.device, dtype=data.dtype) * sw - pw
    off = offset.reshape(N, dg, K, 2, Ho, Wo)
    py = (ki.reshape(K, 1, 1) + oy.reshape(1, Ho, 1)) + off[:, :, :, 0]
    px = (kj.reshape(K, 1, 1) + ox.reshape(1, 1, Wo)) + off[:, :, :, 1]
    cols = _sample_taps(data, py.reshape(N, dg, K, Ho * Wo), px.reshape(N, dg, K, Ho * Wo), dg)
    cols = cols.reshape(N, G, (C // G) * K, Ho * Wo)
    w = weight.reshape(G, num_filter // G, (C // G) * K)
    out = torch.einsum("gfk,ngkl->ngfl", w, cols).reshape(N, num_filter, Ho, Wo)
    if bias is not None and not no_bias:
        out = out + bias.reshape(1, -1, 1, 1)
    return out
