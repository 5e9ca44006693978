"""MXNet's contrib DeformableConvolution (v1) and ModulatedDeformableConvolution (v2, DCNv2) on
NCHW data, and DeformablePSROIPooling.

Each kernel tap (i, j) of output position (y, x) reads the input at
``(y*stride - pad + i*dilate + dy, x*stride - pad + j*dilate + dx)`` with the learned offsets
(dy, dx) taken from ``offset`` (N, deformable_groups * kh * kw * 2, Ho, Wo), channel
``(group * kh * kw + i * kw + j) * 2`` for dy and ``+ 1`` for dx. Reads are bilinear, with
zeros outside the input (MXNet's deformable_im2col); then the taps are contracted with the
weights as a grouped convolution. DCNv2 multiplies each read by the learned ``mask``
(N, deformable_groups * kh * kw, Ho, Wo), channel ``group * kh * kw + i * kw + j``. Everything
is torch ops, so gradients flow to data, offsets, mask, weight and bias.
"""
from __future__ import annotations

from typing import Optional, cast

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
                    num_filter=1, num_group=1, num_deformable_group=1, no_bias=False, mask=None, **_):
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
                            cols[n, c, k, y, x] = v * (1.0 if mask is None else mask[n, g * kh * kw + k, y, x])
    G = num_group
    w = weight.reshape(G, num_filter // G, (C // G) * kh * kw)
    cols = cols.reshape(N, G, (C // G) * kh * kw, Ho * Wo)
    out = np.einsum("gfk,ngkl->ngfl", w, cols).reshape(N, num_filter, Ho, Wo)
    if bias is not None and not no_bias:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


def _np_modulated_deform_conv(data, offset, mask, weight, bias=None, **attrs):  # type: ignore[no-untyped-def]
    return _np_deform_conv(data, offset, weight, bias, mask=mask, **attrs)


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


def _deform_conv(who: str, data: Tensor, offset: Tensor, mask: Optional[Tensor], weight: Tensor,
                 bias: Optional[Tensor], kernel: Shape, num_filter: int, stride: Shape, dilate: Shape,
                 pad: Shape, num_group: int, num_deformable_group: int, no_bias: bool,
                 layout: Optional[str]) -> Tensor:
    """Deformable convolution v1 (``mask`` None) or v2 (each tap's read scaled by ``mask``
    (N, deformable_groups * kh * kw, Ho, Wo), channel group * kh * kw + i * kw + j)."""
    if data.dim() != 4:
        raise MXNetError(f"{who}: data must be NCHW, got shape {tuple(data.shape)}")
    if layout not in (None, "NCHW"):
        raise MXNetError(f"{who}: only layout='NCHW' is supported, got {layout!r}")
    kh, kw = per_dim(kernel, 2, 1, "kernel", who)
    sh, sw = per_dim(stride, 2, 1, "stride", who)
    dh, dw = per_dim(dilate, 2, 1, "dilate", who)
    ph, pw = per_dim(pad, 2, 0, "pad", who)
    N, C, H, W = data.shape
    G, dg = num_group, num_deformable_group
    Ho = (H + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    Wo = (W + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    K = kh * kw
    if C % G or C % dg or num_filter % G:
        raise MXNetError(f"{who}: channels {C} and num_filter {num_filter} must be divisible "
                         f"by num_group {G}, and channels by num_deformable_group {dg}")
    if tuple(offset.shape) != (N, dg * K * 2, Ho, Wo):
        raise MXNetError(f"{who}: offset must have shape {(N, dg * K * 2, Ho, Wo)}, got "
                         f"{tuple(offset.shape)}")
    if mask is not None and tuple(mask.shape) != (N, dg * K, Ho, Wo):
        raise MXNetError(f"{who}: mask must have shape {(N, dg * K, Ho, Wo)}, got {tuple(mask.shape)}")
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
    if mask is not None:
        cols = (cols.reshape(N, dg, C // dg, K, Ho * Wo) * mask.reshape(N, dg, 1, K, Ho * Wo))
    cols = cols.reshape(N, G, (C // G) * K, Ho * Wo)
    w = weight.reshape(G, num_filter // G, (C // G) * K)
    out = torch.einsum("gfk,ngkl->ngfl", w, cols).reshape(N, num_filter, Ho, Wo)
    if bias is not None and not no_bias:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


@register("_contrib_DeformableConvolution", active_inputs=_active, param_shapes=_params, samples=_samples)
def _contrib_DeformableConvolution(data: Tensor, offset: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                                   *, kernel: Shape, num_filter: int, stride: Shape = (), dilate: Shape = (),
                                   pad: Shape = (), num_group: int = 1, num_deformable_group: int = 1,
                                   workspace: int = 1024, no_bias: bool = False,
                                   layout: Optional[str] = None) -> Tensor:
    """2-D deformable convolution: a grouped convolution whose taps are read at learned
    fractional offsets (see the module docstring for the offset layout)."""
    return _deform_conv("DeformableConvolution", data, offset, None, weight, bias, kernel, num_filter,
                        stride, dilate, pad, num_group, num_deformable_group, no_bias, layout)


def _mactive(attrs: dict) -> tuple:
    return ("data", "offset", "mask", "weight") + (() if attrs.get("no_bias", False) else ("bias",))


def _mparams(attrs: dict, shapes: list) -> list:
    filled = _params(attrs, [shapes[0], shapes[1]] + list(shapes[3:]))
    return filled[:2] + [shapes[2]] + filled[2:]


def _msamples() -> list:
    r = np.random.RandomState(52)
    return [
        Sample((r.rand(1, 2, 4, 5), r.rand(1, 18, 4, 5) * 0.8 + 0.1, r.rand(1, 9, 4, 5), r.randn(3, 2, 3, 3),
                r.randn(3)), {"kernel": (3, 3), "num_filter": 3, "pad": (1, 1)}, ref=_np_modulated_deform_conv,
               grad_inputs=(0, 1, 2, 3, 4), rtol=1e-5, atol=1e-6),
        Sample((r.rand(2, 4, 5, 5), r.rand(2, 16, 3, 3) * 0.8 + 0.1, r.rand(2, 8, 3, 3), r.randn(4, 2, 2, 2)),
               {"kernel": (2, 2), "num_filter": 4, "pad": (1, 1), "stride": (2, 2), "dilate": (2, 2),
                "num_group": 2, "num_deformable_group": 2, "no_bias": True},
               ref=_np_modulated_deform_conv, grad_inputs=(0, 2, 3), rtol=1e-5, atol=1e-6)]


@register("_contrib_ModulatedDeformableConvolution", active_inputs=_mactive, param_shapes=_mparams,
          samples=_msamples)
def _contrib_ModulatedDeformableConvolution(data: Tensor, offset: Tensor, mask: Tensor, weight: Tensor,
                                            bias: Optional[Tensor] = None, *, kernel: Shape, num_filter: int,
                                            stride: Shape = (), dilate: Shape = (), pad: Shape = (),
                                            num_group: int = 1, num_deformable_group: int = 1,
                                            workspace: int = 1024, no_bias: bool = False,
                                            im2col_step: int = 64, layout: Optional[str] = None) -> Tensor:
    """2-D modulated deformable convolution (DCNv2): DeformableConvolution whose tap reads are
    also scaled by ``mask`` (N, num_deformable_group * kh * kw, Ho, Wo), usually a sigmoid.
    ``im2col_step`` only sizes MXNet's buffers; as in MXNet, a batch larger than it must be a
    multiple of it."""
    if data.dim() == 4 and data.shape[0] > im2col_step and data.shape[0] % im2col_step:
        raise MXNetError(f"ModulatedDeformableConvolution: batch size {data.shape[0]} must be at most "
                         f"im2col_step={im2col_step} or a multiple of it")
    return _deform_conv("ModulatedDeformableConvolution", data, offset, mask, weight, bias, kernel, num_filter,
                        stride, dilate, pad, num_group, num_deformable_group, no_bias, layout)


# ---- DeformablePSROIPooling ---------------------------------------------------------------------
def _psroi_active(attrs: dict) -> tuple:
    return ("data", "rois") if attrs.get("no_trans", False) else ("data", "rois", "trans")


def _c_round(x: Tensor) -> Tensor:
    """C's round(): halves away from zero (torch.round rounds them to even)."""
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


@register("_contrib_DeformablePSROIPooling", active_inputs=_psroi_active, total_outputs=2,
          output_names=("output", "top_count"), samples=lambda: _psroi_samples())
def _contrib_DeformablePSROIPooling(data: Tensor, rois: Tensor, trans: Optional[Tensor] = None, *,
                                    spatial_scale: float, output_dim: int, group_size: int,
                                    pooled_size: int, part_size: int = 0, sample_per_part: int = 1,
                                    trans_std: float = 0.0, no_trans: bool = False) -> Tensor:
    """Deformable position-sensitive ROI pooling (Deformable R-FCN), MXNet's operator.

    rois (R, 5) = [batch_index, x1, y1, x2, y2] in image pixels (rounded, scaled by
    ``spatial_scale``, shifted by -0.5). Bin (ph, pw) of output channel c averages
    ``sample_per_part``^2 bilinear reads of input channel (c * group_size + gh) * group_size + gw
    (gh, gw the bin's group cell), its start moved by ``trans`` (R, 2 * classes, part_size,
    part_size) times ``trans_std`` times the roi size; class = c // (output_dim / classes).
    Reads further than half a pixel outside the map are skipped; empty bins give 0. Data and
    trans get gradients, rois none."""
    if data.dim() != 4:
        raise MXNetError(f"DeformablePSROIPooling: data must be 4-D (N, C, H, W), got {tuple(data.shape)}")
    if rois.dim() != 2 or rois.shape[1] != 5:
        raise MXNetError(f"DeformablePSROIPooling: rois must be (num_rois, 5) = [batch_index, x1, y1, x2, y2], "
                         f"got shape {tuple(rois.shape)}")
    N, C, H, W = data.shape
    R, P, G, S = rois.shape[0], pooled_size, group_size, sample_per_part
    part = part_size or pooled_size
    if C != output_dim * G * G:
        raise MXNetError(f"DeformablePSROIPooling: data has {C} channels; expected output_dim * group_size^2 "
                         f"= {output_dim} * {G}^2 = {output_dim * G * G}")
    if not no_trans:
        if trans is None or trans.dim() != 4 or trans.shape[0] != R or trans.shape[1] % 2 \
                or tuple(trans.shape[2:]) != (part, part) or output_dim % (trans.shape[1] // 2):
            raise MXNetError(f"DeformablePSROIPooling: trans must be (num_rois={R}, 2 * num_classes, {part}, {part}) "
                             f"with num_classes dividing output_dim={output_dim}, got "
                             f"{None if trans is None else tuple(trans.shape)}")
    if data.device.type == "meta":
        return torch.empty((R, output_dim, P, P), dtype=data.dtype, device="meta")
    dt, dev = data.dtype, data.device
    f32 = np.float32
    bins = np.arange(P, dtype=f32)
    part_idx = torch.from_numpy(np.floor(bins / f32(P) * f32(part)).astype(np.int64)).to(dev)     # (P,)
    grp = np.clip(np.floor(bins * f32(G) / f32(P)).astype(np.int64), 0, G - 1)
    grp_t = torch.from_numpy(grp).to(dev)
    r = rois.detach().to(dt)
    scale = torch.tensor(spatial_scale, dtype=dt)
    x1 = _c_round(r[:, 1]) * scale - 0.5
    y1 = _c_round(r[:, 2]) * scale - 0.5
    rw = torch.clamp((_c_round(r[:, 3]) + 1.0) * scale - 0.5 - x1, min=0.1)                        # (R,)
    rh = torch.clamp((_c_round(r[:, 4]) + 1.0) * scale - 0.5 - y1, min=0.1)
    bin_w, bin_h = rw / P, rh / P
    sub_w, sub_h = bin_w / S, bin_h / S
    ctop = torch.arange(output_dim, device=dev)
    if no_trans:
        tx = torch.zeros((R, output_dim, P, P), dtype=dt, device=dev)
        ty = tx
    else:
        t = cast(Tensor, trans)
        classes = t.shape[1] // 2
        cls = ctop // (output_dim // classes)                                                       # (D,)
        t = t.reshape(R, classes, 2, part, part)[:, cls][:, :, :, part_idx][:, :, :, :, part_idx]   # (R, D, 2, P, P)
        tx, ty = t[:, :, 0] * trans_std, t[:, :, 1] * trans_std
    pb = torch.arange(P, dtype=dt, device=dev)
    wstart = (pb[None, None, None, :] * bin_w[:, None, None, None] + x1[:, None, None, None]) \
        + tx * rw[:, None, None, None]                                                                 # (R, D, P, P)
    hstart = (pb[None, None, :, None] * bin_h[:, None, None, None] + y1[:, None, None, None]) \
        + ty * rh[:, None, None, None]
    sb = torch.arange(S, dtype=dt, device=dev)
    w = wstart[..., None, None] + sb[None, :] * sub_w[:, None, None, None, None, None]                # (R, D, P, P, 1, S)
    h = hstart[..., None, None] + sb[:, None] * sub_h[:, None, None, None, None, None]                # (R, D, P, P, S, 1)
    w, h = torch.broadcast_tensors(w, h)
    valid = (w >= -0.5) & (w <= W - 0.5) & (h >= -0.5) & (h <= H - 0.5)
    w = w.clamp(0, W - 1)
    h = h.clamp(0, H - 1)
    xf, yf = torch.floor(w.detach()), torch.floor(h.detach())
    xc, yc = torch.ceil(w.detach()), torch.ceil(h.detach())
    dx, dy = w - xf, h - yf
    chan = (ctop[:, None, None] * G + grp_t[None, :, None]) * G + grp_t[None, None, :]               # (D, P, P)
    batch = r[:, 0].to(torch.int64)
    plane = (batch[:, None, None, None] * C + chan[None]) * (H * W)                                 # (R, D, P, P)
    flat = data.reshape(-1)
    base = plane[..., None, None]

    def at(yy: Tensor, xx: Tensor) -> Tensor:
        return flat[(base + (yy * W + xx).to(torch.int64)).reshape(-1)].reshape(yy.shape)
    val = ((1 - dx) * (1 - dy) * at(yf, xf) + (1 - dx) * dy * at(yc, xf)
           + dx * (1 - dy) * at(yf, xc) + dx * dy * at(yc, xc))
    val = torch.where(valid, val, torch.zeros((), dtype=dt, device=dev))
    count = valid.sum(dim=(-2, -1)).to(dt)
    total = val.sum(dim=(-2, -1))
    return torch.where(count > 0, total / count.clamp(min=1), torch.zeros((), dtype=dt, device=dev))


def _np_deform_psroi(data, rois, trans=None, spatial_scale=1.0, output_dim=1, group_size=1,  # type: ignore[no-untyped-def]
                     pooled_size=1, part_size=0, sample_per_part=1, trans_std=0.0, no_trans=False):
    """Loop reference after MXNet's CPU kernel."""
    N, C, H, W = data.shape
    P, G, S = pooled_size, group_size, sample_per_part
    part = part_size or P
    classes = 1 if no_trans else trans.shape[1] // 2
    each = output_dim // classes
    out = np.zeros((rois.shape[0], output_dim, P, P))

    def cround(v):  # type: ignore[no-untyped-def]
        return np.sign(v) * np.floor(abs(v) + 0.5)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1 = cround(roi[1]) * spatial_scale - 0.5, cround(roi[2]) * spatial_scale - 0.5
        rw = max((cround(roi[3]) + 1) * spatial_scale - 0.5 - x1, 0.1)
        rh = max((cround(roi[4]) + 1) * spatial_scale - 0.5 - y1, 0.1)
        for c in range(output_dim):
            for ph in range(P):
                for pw in range(P):
                    parth, partw = int(np.floor(ph / P * part)), int(np.floor(pw / P * part))
                    k = c // each
                    tx = 0.0 if no_trans else trans[n, 2 * k, parth, partw] * trans_std
                    ty = 0.0 if no_trans else trans[n, 2 * k + 1, parth, partw] * trans_std
                    ws = pw * rw / P + x1 + tx * rw
                    hs = ph * rh / P + y1 + ty * rh
                    gw = min(max(int(np.floor(pw * G / P)), 0), G - 1)
                    gh = min(max(int(np.floor(ph * G / P)), 0), G - 1)
                    chan = (c * G + gh) * G + gw
                    acc, cnt = 0.0, 0
                    for ih in range(S):
                        for iw in range(S):
                            x, y = ws + iw * rw / P / S, hs + ih * rh / P / S
                            if x < -0.5 or x > W - 0.5 or y < -0.5 or y > H - 0.5:
                                continue
                            x, y = min(max(x, 0), W - 1), min(max(y, 0), H - 1)
                            xa, ya = int(np.floor(x)), int(np.floor(y))
                            xb, yb = int(np.ceil(x)), int(np.ceil(y))
                            ax, ay = x - xa, y - ya
                            p = data[b, chan]
                            acc += ((1 - ax) * (1 - ay) * p[ya, xa] + (1 - ax) * ay * p[yb, xa]
                                    + ax * (1 - ay) * p[ya, xb] + ax * ay * p[yb, xb])
                            cnt += 1
                    out[n, c, ph, pw] = acc / cnt if cnt else 0.0
    return out


def _psroi_samples() -> list:
    r = np.random.RandomState(61)
    data = r.rand(2, 2 * 3 * 3, 6, 7)
    rois = np.array([[0, 10.3, 7.5, 80.2, 60.0], [1, 30.0, 20.0, 50.0, 90.5], [0, -10, 70, 150, 120]])
    trans = r.rand(3, 2, 3, 3) * 2 - 1
    data2 = r.rand(1, 3 * 2 * 2 * 2, 5, 5)
    rois2 = np.array([[0, 1.0, 2.0, 3.5, 4.0], [0, 0.0, 0.0, 4.0, 4.0]])
    trans2 = r.rand(2, 6, 2, 2) - 0.5
    return [
        Sample((data, rois, trans), {"spatial_scale": 0.0625, "output_dim": 2, "group_size": 3, "pooled_size": 3,
                                     "sample_per_part": 2, "trans_std": 0.1},
               ref=_np_deform_psroi, grad_inputs=(0, 2), rtol=1e-5, atol=1e-6),
        Sample((data2, rois2, trans2), {"spatial_scale": 1.0, "output_dim": 6, "group_size": 2, "pooled_size": 2,
                                        "sample_per_part": 3, "trans_std": 0.3, "part_size": 2},
               ref=_np_deform_psroi, grad_inputs=(0, 2), rtol=1e-5, atol=1e-6),
        Sample((data, rois), {"spatial_scale": 0.0625, "output_dim": 2, "group_size": 3, "pooled_size": 3,
                              "sample_per_part": 2, "no_trans": True},
               ref=_np_deform_psroi, grad_inputs=(0,))]
