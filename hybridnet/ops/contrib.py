"""Contrib operators (MXNet 1.9.1's ``_contrib_*``: ``nd.contrib.*`` / ``sym.contrib.*``).

Families here: element tests (isnan, isinf, isfinite, allclose), pooling and ROI operators
(AdaptiveAvgPooling2D, ROIAlign), bounding boxes (box_iou, box_nms, box_encode, box_decode,
bipartite_matching, MultiBoxPrior, MultiBoxDetection, MultiBoxTarget), gradient tricks
(gradientmultiplier, round_ste, sign_ste), normalization variants (SyncBatchNorm,
BatchNormWithReLU) and SparseEmbedding (dense, calling the BatchNorm / Embedding kernels),
fft / ifft, count_sketch, quadratic, div_sqrt_dim and the interleaved attention matmuls.

Operators MXNet gives zero gradients (box_iou, box_encode, box_decode, bipartite_matching, the
MultiBox* operators, the element tests) return detached results here. Operators whose output
shape depends only on input shapes run on torch's "meta" device; value-dependent ones (box_nms,
bipartite_matching, ROIAlign's adaptive grid, MultiBox*) short-cut to shape-only results there.
_contrib_BilinearResize2D, _contrib_index_copy, _contrib_boolean_mask, _contrib_index_array and
_contrib_arange_like live in ``nn`` and ``index``.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Literal, Optional, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..base import MXNetError
from .attrs import AnyValue, Dtype, OptFloat, Shape
from ._helpers import floats as _floats
from .registry import Sample, get, register

__all__: list = []

_R = np.random.RandomState(2024)
_BoxFormat = Literal["corner", "center"]


def _meta(t: Tensor) -> bool:
    return t.device.type == "meta"


def _f32(v: float) -> float:
    """The value an MXNet ``float`` parameter holds (single precision)."""
    return float(np.float32(v))


def _u(*shape: int) -> np.ndarray:
    return _R.uniform(-1.0, 1.0, shape)


# ---- element tests --------------------------------------------------------------------------
_SPECIAL = np.array([[1.5, np.nan, np.inf], [-np.inf, 0.0, -2.0]])


@register("_contrib_isnan", differentiable=False, samples=lambda: [
    Sample((_SPECIAL,), ref=lambda x: np.isnan(x).astype(x.dtype))])
def _contrib_isnan(data: Tensor) -> Tensor:
    """1 where ``data`` is NaN, else 0, in data's dtype (MXNet's ``contrib.isnan``)."""
    return torch.isnan(data).to(data.dtype)


@register("_contrib_isinf", differentiable=False, samples=lambda: [
    Sample((_SPECIAL,), ref=lambda x: np.isinf(x).astype(x.dtype))])
def _contrib_isinf(data: Tensor) -> Tensor:
    """1 where ``data`` is +inf or -inf, else 0, in data's dtype (MXNet's ``contrib.isinf``)."""
    return torch.isinf(data).to(data.dtype)


@register("_contrib_isfinite", differentiable=False, samples=lambda: [
    Sample((_SPECIAL,), ref=lambda x: np.isfinite(x).astype(x.dtype))])
def _contrib_isfinite(data: Tensor) -> Tensor:
    """1 where ``data`` is neither NaN nor infinite, else 0, in data's dtype."""
    return torch.isfinite(data).to(data.dtype)


def _np_allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True):
    na, nb = np.isnan(a), np.isnan(b)
    rtol, atol = np.float32(rtol), np.float32(atol)
    ok = np.where(na | nb, equal_nan & (na == nb), np.abs(a - b) <= atol + rtol * np.abs(b))
    return np.array(1 if ok.all() else 0, dtype=np.uint8)


def _allclose_samples() -> list:
    a = _u(3, 4)
    b = a + 1e-7
    c = a.copy()
    c[1, 2] += 1e-3
    n = a.copy()
    n[0, 0] = np.nan
    return [Sample((a, b), ref=_np_allclose), Sample((a, c), ref=_np_allclose),
            Sample((a, c), {"rtol": 1e-2, "atol": 1e-3}, ref=_np_allclose),
            Sample((n, n.copy()), ref=_np_allclose),
            Sample((n, n.copy()), {"equal_nan": False}, ref=_np_allclose)]


@register("_contrib_allclose", differentiable=False, samples=_allclose_samples)
def _contrib_allclose(a: Tensor, b: Tensor, *, rtol: float = 1e-5, atol: float = 1e-8,
                      equal_nan: bool = True) -> Tensor:
    """uint8 scalar array (shape (), as MXNet's TShape(0)): 1 if ``|a - b| <= atol + rtol * |b|`` everywhere (NaNs equal
    when ``equal_nan``), else 0 (MXNet's ``contrib.allclose``)."""
    if tuple(a.shape) != tuple(b.shape):
        raise MXNetError(f"allclose: inputs must have the same shape, got {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    if _meta(a):
        return torch.empty((), dtype=torch.uint8, device="meta")
    na, nb = torch.isnan(a), torch.isnan(b)
    close = (a - b).abs() <= _f32(atol) + _f32(rtol) * b.abs()
    ok = torch.where(na | nb, (na == nb) & bool(equal_nan), close)
    return ok.all().to(torch.uint8)


# ---- simple elementwise contribs --------------------------------------------------------------
@register("_contrib_div_sqrt_dim", samples=lambda: [
    Sample((_u(2, 3, 4),), ref=lambda x: x / np.sqrt(x.shape[-1]))])
def _contrib_div_sqrt_dim(data: Tensor) -> Tensor:
    """``data / sqrt(data.shape[-1])`` (MXNet's ``contrib.div_sqrt_dim``)."""
    return data / math.sqrt(data.shape[-1])


@register("_contrib_quadratic", samples=lambda: [
    Sample((_u(3, 4),), {"a": 2.0, "b": -1.0, "c": 0.5}, ref=lambda x, a=0., b=0., c=0.: a * x * x + b * x + c),
    Sample((_u(5,),), {"b": 3.0}, ref=lambda x, a=0., b=0., c=0.: a * x * x + b * x + c)])
def _contrib_quadratic(data: Tensor, *, a: float = 0.0, b: float = 0.0, c: float = 0.0) -> Tensor:
    """``a * data**2 + b * data + c`` elementwise (MXNet's ``contrib.quadratic``)."""
    return a * data * data + b * data + c


class _GradScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, scale: float) -> Tensor:  # type: ignore[override]
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:  # type: ignore[override]
        return g * ctx.scale, None


class _Replace(torch.autograd.Function):
    """Forward: ``value``; backward: the gradient goes to ``x`` unchanged."""
    @staticmethod
    def forward(ctx: Any, x: Tensor, value: Tensor) -> Tensor:  # type: ignore[override]
        return value.clone()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:  # type: ignore[override]
        return g, None


class _StraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, fn: Callable) -> Tensor:  # type: ignore[override]
        return fn(x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:  # type: ignore[override]
        return g, None


@register("_contrib_gradientmultiplier", samples=lambda: [
    Sample((_u(3, 4),), {"scalar": 1.0}, ref=lambda x, scalar: x)])
def _contrib_gradientmultiplier(data: Tensor, *, scalar: float) -> Tensor:
    """Identity forward; the gradient is multiplied by ``scalar`` on the way back (MXNet's
    ``contrib.gradientmultiplier``, e.g. a gradient reversal layer with scalar=-1)."""
    if _meta(data):
        return torch.empty_like(data)
    return _GradScale.apply(data, float(scalar))


def _round_away(x: Tensor) -> Tensor:
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


@register("_contrib_round_ste", samples=lambda: [
    Sample((np.array([[-2.5, -1.4, -0.5], [0.4, 0.5, 2.6]]),),
           ref=lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), grad=False)])
def _contrib_round_ste(data: Tensor) -> Tensor:
    """Round half away from zero; the gradient passes straight through (MXNet's round_ste)."""
    if _meta(data):
        return torch.empty_like(data)
    return _StraightThrough.apply(data, _round_away)


@register("_contrib_sign_ste", samples=lambda: [
    Sample((np.array([[-2.5, 0.0, 0.3]]),), ref=np.sign, grad=False)])
def _contrib_sign_ste(data: Tensor) -> Tensor:
    """Sign (-1, 0, 1); the gradient passes straight through (MXNet's sign_ste)."""
    if _meta(data):
        return torch.empty_like(data)
    return _StraightThrough.apply(data, torch.sign)


# ---- AdaptiveAvgPooling2D ---------------------------------------------------------------------
def _pool_out(output_size: Any) -> tuple:
    if output_size is None:
        return 1, 1
    if isinstance(output_size, (int, np.integer)):
        return int(output_size), int(output_size)
    s = tuple(int(v) for v in output_size)
    if len(s) == 0:
        return 1, 1
    if len(s) == 1:
        return s[0], s[0]
    if len(s) == 2:
        return s
    raise MXNetError(f"AdaptiveAvgPooling2D: output_size must be an int or (height, width), got {output_size!r}")


def _np_adaptive_avg(x, output_size=()):
    oh, ow = _pool_out(output_size)
    N, C, H, W = x.shape
    out = np.zeros((N, C, oh, ow), dtype=x.dtype)
    for i in range(oh):
        h0, h1 = (i * H) // oh, -((-(i + 1) * H) // oh)
        for j in range(ow):
            w0, w1 = (j * W) // ow, -((-(j + 1) * W) // ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


@register("_contrib_AdaptiveAvgPooling2D", samples=lambda: [
    Sample((_u(2, 3, 5, 7),), {"output_size": (2, 3)}, ref=_np_adaptive_avg),
    Sample((_u(1, 2, 6, 6),), {"output_size": 4}, ref=_np_adaptive_avg),
    Sample((_u(1, 2, 3, 4),), {}, ref=_np_adaptive_avg)])
def _contrib_AdaptiveAvgPooling2D(data: Tensor, *, output_size: Shape = ()) -> Tensor:
    """Average pooling of NCHW data to ``output_size`` (int, (h, w), or () for 1x1); bin i of
    an axis of length L covers [floor(i*L/out), ceil((i+1)*L/out))."""
    if data.dim() != 4:
        raise MXNetError(f"AdaptiveAvgPooling2D: data must be 4-D (N, C, H, W), got shape {tuple(data.shape)}")
    return F.adaptive_avg_pool2d(data, _pool_out(output_size))


# ---- ROIAlign ---------------------------------------------------------------------------------
def _interp_weights(coord: Tensor, mask: Tensor, size: int) -> Tensor:
    """Summed bilinear weights (..., size) of the sample coordinates coord (..., G) along one
    axis of length ``size``, with MXNet/Caffe2's ROIAlign border rules."""
    out_of_range = (coord < -1.0) | (coord > size)
    c = coord.clamp(min=0.0)
    low = torch.floor(c).to(torch.int64)
    edge = low >= size - 1
    low = torch.where(edge, torch.full_like(low, size - 1), low)
    high = torch.where(edge, low, low + 1)
    c = torch.where(edge, low.to(c.dtype), c)
    frac = c - low.to(c.dtype)
    keep = (mask & ~out_of_range).to(c.dtype)
    w = torch.zeros(coord.shape + (size,), dtype=c.dtype, device=c.device)
    w.scatter_add_(-1, low.unsqueeze(-1), ((1.0 - frac) * keep).unsqueeze(-1))
    w.scatter_add_(-1, high.unsqueeze(-1), (frac * keep).unsqueeze(-1))
    return w.sum(dim=-2)


def _roi_axis(start: Tensor, length: Tensor, pooled: int, grid: Tensor, gmax: int, size: int) -> Tensor:
    """(R, pooled, size) interpolation matrix of one axis for every ROI."""
    dt = start.dtype
    bin_size = length / pooled                                                # (R,)
    p = torch.arange(pooled, dtype=dt, device=start.device)
    g = torch.arange(gmax, dtype=dt, device=start.device)
    gridf = grid.to(dt).clamp(min=1.0)
    coord = (start[:, None, None] + p[None, :, None] * bin_size[:, None, None]
             + (g[None, None, :] + 0.5) * (bin_size / gridf)[:, None, None])   # (R, pooled, G)
    mask = g[None, None, :] < grid.to(dt)[:, None, None]
    return _interp_weights(coord, mask.expand_as(coord), size)


def _roi_align(data: Tensor, rois: Tensor, ph: int, pw: int, scale: float, sample_ratio: int,
               aligned: bool) -> Tensor:
    N, C, H, W = data.shape
    R = rois.shape[0]
    r = rois.detach().to(data.dtype)
    offset = 0.5 if aligned else 0.0
    x0, y0 = r[:, 1] * scale - offset, r[:, 2] * scale - offset
    x1, y1 = r[:, 3] * scale - offset, r[:, 4] * scale - offset
    rw, rh = x1 - x0, y1 - y0
    if not aligned:
        rw, rh = rw.clamp(min=1.0), rh.clamp(min=1.0)
    if sample_ratio > 0:
        gh = torch.full((R,), sample_ratio, dtype=torch.int64, device=data.device)
        gw = gh
    else:
        gh = torch.ceil(rh / ph).to(torch.int64)
        gw = torch.ceil(rw / pw).to(torch.int64)
    gh_max = max(int(gh.max()), 1) if R else 1
    gw_max = max(int(gw.max()), 1) if R else 1
    ay = _roi_axis(y0, rh, ph, gh, gh_max, H)                                  # (R, ph, H)
    ax = _roi_axis(x0, rw, pw, gw, gw_max, W)                                  # (R, pw, W)
    count = (gh * gw).clamp(min=1).to(data.dtype)
    batch = r[:, 0].to(torch.int64)
    ay = ay * (batch >= 0).to(data.dtype)[:, None, None] / count[:, None, None]
    out = data.new_zeros((R, C, ph, pw))
    pieces = []
    for n in range(N):
        sel = torch.nonzero(batch == n).flatten()
        if sel.numel() == 0:
            continue
        t = torch.einsum("rph,chw->rcpw", ay[sel], data[n])
        pieces.append((sel, torch.einsum("rcpw,rqw->rcpq", t, ax[sel])))
    if pieces:
        idx = torch.cat([p[0] for p in pieces])
        vals = torch.cat([p[1] for p in pieces])
        out = out.index_put((idx,), vals)
    return out


def _roi_out_channels(C: int, ph: int, pw: int, position_sensitive: bool) -> int:
    if not position_sensitive:
        return C
    if C % (ph * pw):
        raise MXNetError(f"ROIAlign: with position_sensitive=True the channels ({C}) must be a "
                         f"multiple of pooled_size[0]*pooled_size[1] = {ph * pw}")
    return C // (ph * pw)


@register("_contrib_ROIAlign", samples=lambda: _roi_samples())
def _contrib_ROIAlign(data: Tensor, rois: Tensor, *, pooled_size: Shape, spatial_scale: float,
                      sample_ratio: int = -1, position_sensitive: bool = False,
                      aligned: bool = False) -> Tensor:
    """ROI Align (Mask R-CNN) of NCHW data over rois (R, 5) = [batch_index, x1, y1, x2, y2]:
    output (R, C, ph, pw) averages bilinear samples on a grid of ``sample_ratio`` (or
    ceil(roi_size / pooled_size)) points per bin. ``aligned`` shifts boxes by -0.5 pixel;
    without it boxes are at least 1x1. ``position_sensitive`` (PS-ROIAlign) takes channel
    c * ph * pw + i * pw + j for bin (i, j), giving C / (ph * pw) output channels. ROIs with a
    negative batch index give zeros; rois get no gradient."""
    ps = (pooled_size, pooled_size) if isinstance(pooled_size, int) else tuple(pooled_size)
    if len(ps) != 2 or min(ps) <= 0:
        raise MXNetError(f"ROIAlign: pooled_size must be (height, width) of positive ints, got {pooled_size!r}")
    ph, pw = int(ps[0]), int(ps[1])
    if data.dim() != 4:
        raise MXNetError(f"ROIAlign: data must be 4-D (N, C, H, W), got shape {tuple(data.shape)}")
    if rois.dim() != 2 or rois.shape[1] != 5:
        raise MXNetError(f"ROIAlign: rois must have shape (num_rois, 5) = [batch_index, x1, y1, x2, y2], "
                         f"got {tuple(rois.shape)}")
    C = data.shape[1]
    co = _roi_out_channels(C, ph, pw, position_sensitive)
    if _meta(data) or _meta(rois):
        return torch.empty((rois.shape[0], co, ph, pw), dtype=data.dtype, device="meta")
    out = _roi_align(data, rois, ph, pw, _f32(spatial_scale), int(sample_ratio), bool(aligned))
    if position_sensitive:
        R = out.shape[0]
        full = out.reshape(R, co, ph, pw, ph, pw)          # (R, c, i', j', i, j): keep i'=i, j'=j
        out = torch.diagonal(full, dim1=2, dim2=4)         # (R, c, j', j, i)
        out = torch.diagonal(out, dim1=2, dim2=3)          # (R, c, i, j)
    return out


def np_roi_bilinear(img, y, x):
    """NumPy reference of ROI Align's bilinear read of ``img`` (..., H, W) at (y, x) (after
    MXNet's tests; RROIAlign reads the same way): 0 beyond [-1, H] x [-1, W], coordinates
    clamped to >= 0 and to the last row/column."""
    H, W = img.shape[-2:]
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return np.zeros(img.shape[:-2])
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yh = yl = H - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xh = xl = W - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    return (hy * hx * img[..., yl, xl] + hy * lx * img[..., yl, xh] + ly * hx * img[..., yh, xl]
            + ly * lx * img[..., yh, xh])


def _np_roi_align(data, rois, pooled_size=(1, 1), spatial_scale=1.0, sample_ratio=-1,
                  position_sensitive=False, aligned=False):
    ph, pw = pooled_size
    C = data.shape[1]
    co = C // (ph * pw) if position_sensitive else C
    spatial_scale = float(np.float32(spatial_scale))
    out = np.zeros((rois.shape[0], co, ph, pw))
    off = 0.5 if aligned else 0.0
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        if b < 0:
            continue
        sx, sy = x1 * spatial_scale - off, y1 * spatial_scale - off
        w, h = x2 * spatial_scale - off - sx, y2 * spatial_scale - off - sy
        if not aligned:
            w, h = max(w, 1.0), max(h, 1.0)
        bh, bw = h / ph, w / pw
        gy = sample_ratio if sample_ratio > 0 else int(np.ceil(h / ph))
        gx = sample_ratio if sample_ratio > 0 else int(np.ceil(w / pw))
        cnt = max(gy * gx, 1)
        img = data[int(b)]
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(C)
                for iy in range(gy):
                    yy = sy + i * bh + (iy + 0.5) * bh / gy
                    for ix in range(gx):
                        xx = sx + j * bw + (ix + 0.5) * bw / gx
                        acc += np_roi_bilinear(img, yy, xx)
                acc /= cnt
                if position_sensitive:
                    out[k, :, i, j] = acc[np.arange(co) * ph * pw + i * pw + j]
                else:
                    out[k, :, i, j] = acc
    return out.astype(data.dtype)


def _roi_samples() -> list:
    r = np.random.RandomState(5)
    data = r.randn(2, 3, 6, 7)
    rois = np.array([[0, 0.5, 1.0, 4.2, 3.7], [1, 2.0, 0.0, 6.5, 5.9], [0, -1.5, -0.5, 2.0, 1.0],
                     [1, 3.0, 3.0, 3.2, 3.1], [-1, 1.0, 1.0, 2.0, 2.0]])
    rois2 = np.array([[0, 1.0, 2.0, 9.0, 11.0], [1, 0.0, 0.0, 13.0, 11.0]])
    data_ps = r.randn(2, 8, 5, 6)
    return [
        Sample((data, rois), {"pooled_size": (2, 3), "spatial_scale": 1.0}, ref=_np_roi_align,
               grad_inputs=(0,), rtol=1e-5, atol=1e-6),
        Sample((data, rois), {"pooled_size": (2, 2), "spatial_scale": 1.0, "sample_ratio": 2,
                              "aligned": True}, ref=_np_roi_align, grad_inputs=(0,), rtol=1e-5, atol=1e-6),
        Sample((data, rois2), {"pooled_size": (3, 2), "spatial_scale": 0.5}, ref=_np_roi_align,
               grad_inputs=(0,), rtol=1e-5, atol=1e-6),
        Sample((data_ps, rois2), {"pooled_size": (2, 2), "spatial_scale": 0.5, "position_sensitive": True},
               ref=_np_roi_align, grad_inputs=(0,), rtol=1e-5, atol=1e-6),
    ]


# ---- bounding boxes ---------------------------------------------------------------------------
def _overlap_1d(a_lo: Tensor, a_hi: Tensor, b_lo: Tensor, b_hi: Tensor, center: bool) -> Tensor:
    """Overlap length of intervals; in center format (lo, hi) are (centre, extent)."""
    if center:
        a_lo, a_hi = a_lo - a_hi / 2, a_lo + a_hi / 2
        b_lo, b_hi = b_lo - b_hi / 2, b_lo + b_hi / 2
    return (torch.minimum(a_hi, b_hi) - torch.maximum(a_lo, b_lo)).clamp(min=0)


def _box_area(b: Tensor, center: bool) -> Tensor:
    w = b[..., 2] if center else b[..., 2] - b[..., 0]
    h = b[..., 3] if center else b[..., 3] - b[..., 1]
    return torch.where((w < 0) | (h < 0), torch.zeros_like(w), w * h)


def _pair_inter(a: Tensor, b: Tensor, center: bool) -> Tensor:
    """Intersection areas of boxes a (..., 4) and b (..., 4), broadcast."""
    return (_overlap_1d(a[..., 0], a[..., 2], b[..., 0], b[..., 2], center)
            * _overlap_1d(a[..., 1], a[..., 3], b[..., 1], b[..., 3], center))


def _check_boxes(t: Tensor, who: str, name: str) -> None:
    if t.dim() < 2 or t.shape[-1] != 4:
        raise MXNetError(f"{who}: {name} must have shape (..., 4), got {tuple(t.shape)}")


def _np_overlap(a0, a2, b0, b2, center):
    if center:
        a0, a2 = a0 - a2 / 2, a0 + a2 / 2
        b0, b2 = b0 - b2 / 2, b0 + b2 / 2
    return max(min(a2, b2) - max(a0, b0), 0.0)


def _np_area(b, center):
    w = b[2] if center else b[2] - b[0]
    h = b[3] if center else b[3] - b[1]
    return 0.0 if (w < 0 or h < 0) else w * h


def _np_box_iou(lhs, rhs, format="corner"):
    c = format == "center"
    L, Rr = lhs.reshape(-1, 4), rhs.reshape(-1, 4)
    out = np.zeros((L.shape[0], Rr.shape[0]))
    for i, a in enumerate(L):
        for j, b in enumerate(Rr):
            inter = _np_overlap(a[0], a[2], b[0], b[2], c) * _np_overlap(a[1], a[3], b[1], b[3], c)
            if inter > 0:
                out[i, j] = inter / (_np_area(a, c) + _np_area(b, c) - inter)
    return out.reshape(lhs.shape[:-1] + rhs.shape[:-1]).astype(lhs.dtype)


def _iou_samples() -> list:
    a = np.array([[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5], [0.2, 0.1, 0.9, 0.7]])
    b = np.array([[[0.25, 0.25, 0.75, 0.75], [0.6, 0.6, 0.4, 0.4]], [[0.0, 0.0, 1.0, 1.0], [2., 2., 3., 3.]]])
    return [Sample((a, b), ref=_np_box_iou),
            Sample((a, b.reshape(-1, 4)), {"format": "center"}, ref=_np_box_iou)]


@register("_contrib_box_iou", differentiable=False, samples=_iou_samples)
def _contrib_box_iou(lhs: Tensor, rhs: Tensor, *, format: _BoxFormat = "corner") -> Tensor:
    """Intersection over union of every box in lhs (..., 4) with every box in rhs (..., 4):
    shape lhs.shape[:-1] + rhs.shape[:-1]. ``format`` corner = [xmin, ymin, xmax, ymax],
    center = [x, y, w, h]. No gradient (MXNet back-propagates zeros)."""
    _check_boxes(lhs, "box_iou", "lhs")
    _check_boxes(rhs, "box_iou", "rhs")
    center = format == "center"
    a = lhs.detach().reshape(-1, 1, 4)
    b = rhs.detach().reshape(1, -1, 4)
    inter = _pair_inter(a, b, center)
    union = _box_area(a, center) + _box_area(b, center) - inter
    out = torch.where(inter > 0, inter / torch.where(inter > 0, union, torch.ones_like(union)),
                      torch.zeros_like(inter))
    return out.reshape(tuple(lhs.shape[:-1]) + tuple(rhs.shape[:-1]))


def _corner_center(c: Tensor, to_center: bool) -> Tensor:
    if to_center:
        return torch.stack([(c[..., 0] + c[..., 2]) / 2, (c[..., 1] + c[..., 3]) / 2,
                            c[..., 2] - c[..., 0], c[..., 3] - c[..., 1]], dim=-1)
    hw, hh = c[..., 2] / 2, c[..., 3] / 2
    return torch.stack([c[..., 0] - hw, c[..., 1] - hh, c[..., 0] + hw, c[..., 1] + hh], dim=-1)


def _greedy_nms(boxes: Tensor, iou_fn: Callable[[Tensor, Tensor], Tensor], thresh: float, inclusive: bool,
                cls: Optional[Tensor] = None, block: int = 512) -> Tensor:
    """Greedy NMS over candidates sorted by score: candidate j is dropped when a kept candidate
    i < j (of the same class, when ``cls`` is given) has IoU > thresh (>= with ``inclusive``).
    Works in blocks so memory stays O(m * block) for many candidates."""
    m = boxes.shape[0]
    keep = np.ones(m, dtype=bool)
    kept_boxes = boxes[:0]
    kept_cls = None if cls is None else cls[:0]

    def over(i: Tensor) -> Tensor:
        return i >= thresh if inclusive else i > thresh
    for start in range(0, m, block):
        stop = min(m, start + block)
        bb = boxes[start:stop]
        alive = np.ones(stop - start, dtype=bool)
        if kept_boxes.shape[0]:
            hit = over(iou_fn(kept_boxes, bb))
            if cls is not None:
                hit &= cast(Tensor, kept_cls)[:, None] == cls[None, start:stop]
            alive &= ~hit.any(dim=0).cpu().numpy()
        sup = over(iou_fn(bb, bb))
        if cls is not None:
            sup &= cls[start:stop, None] == cls[None, start:stop]
        sup_np = sup.cpu().numpy()
        for i in range(stop - start - 1):
            if alive[i]:
                alive[i + 1:] &= ~sup_np[i, i + 1:]
        keep[start:stop] = alive
        sel = torch.from_numpy(alive).to(boxes.device)
        kept_boxes = torch.cat([kept_boxes, bb[sel]])
        if cls is not None:
            kept_cls = torch.cat([cast(Tensor, kept_cls), cls[start:stop][sel]])
    return torch.from_numpy(keep).to(boxes.device)


def _nms_iou(center: bool) -> Callable[[Tensor, Tensor], Tensor]:
    """box_nms's IoU (n, m): intersection / (area_a + area_b - intersection); boxes are given
    as (edges (4,), area) packed in 5 columns by ``_nms_pack``."""
    def fn(a: Tensor, b: Tensor) -> Tensor:
        lt = torch.maximum(a[:, None, 0:2], b[None, :, 0:2])
        rb = torch.minimum(a[:, None, 2:4], b[None, :, 2:4])
        wh = (rb - lt).clamp_(min=0)
        inter = wh[..., 0] * wh[..., 1]
        return inter / (a[:, None, 4] + b[None, :, 4] - inter)
    return fn


def _nms_pack(boxes: Tensor, center: bool) -> Tensor:
    """[left, top, right, bottom, area] of boxes in MXNet's corner/center encoding."""
    if center:
        hw, hh = boxes[:, 2] / 2, boxes[:, 3] / 2
        edges = torch.stack([boxes[:, 0] - hw, boxes[:, 1] - hh, boxes[:, 0] + hw, boxes[:, 1] + hh], dim=1)
    else:
        edges = boxes
    return torch.cat([edges, _box_area(boxes, center)[:, None]], dim=1)


def _nms_checks(shape: tuple, coord_start: int, score_index: int, id_index: int) -> None:
    if len(shape) < 2:
        raise MXNetError(f"box_nms: data must have at least 2 dimensions (..., num_boxes, box_width), "
                         f"got {shape}")
    width = shape[-1]
    need = 6 if id_index >= 0 else 5
    if width < need:
        raise MXNetError(f"box_nms: the last dimension must hold at least {need} values (score, 4 "
                         f"coordinates{', class id' if id_index >= 0 else ''}), got {width}")
    if not 0 <= score_index < width or coord_start <= score_index <= coord_start + 3:
        raise MXNetError(f"box_nms: score_index={score_index} is out of range or overlaps the coordinates "
                         f"[{coord_start}, {coord_start + 3}] of boxes of width {width}")
    if coord_start < 0 or coord_start + 3 >= width:
        raise MXNetError(f"box_nms: coordinates [{coord_start}, {coord_start + 3}] do not fit boxes of width {width}")
    if id_index >= 0 and (id_index >= width or coord_start <= id_index <= coord_start + 3
                          or id_index == score_index):
        raise MXNetError(f"box_nms: id_index={id_index} is out of range or collides with the score or coordinates")


@register("_contrib_box_nms", aliases=("_contrib_box_non_maximum_suppression",), total_outputs=2,
          output_names=("output", "temp"), samples=lambda: _nms_samples())
def _contrib_box_nms(data: Tensor, *, overlap_thresh: float = 0.5, valid_thresh: float = 0.0,
                     topk: int = -1, coord_start: int = 2, score_index: int = 1, id_index: int = -1,
                     background_id: int = -1, force_suppress: bool = False,
                     in_format: _BoxFormat = "corner", out_format: _BoxFormat = "corner") -> Tensor:
    """Non-maximum suppression per batch of boxes data (..., num_boxes, width) (MXNet's box_nms).

    Boxes with score <= valid_thresh (or, with id_index >= 0, class == background_id) are
    dropped; the rest are sorted by descending score, only the first ``topk`` are kept, and a
    box is suppressed when its IoU with a higher-scored kept box exceeds overlap_thresh (only
    boxes of the same class unless force_suppress). Kept boxes fill the front of the output in
    score order, the remaining rows are -1. ``topk=0`` returns the input unchanged. Coordinates
    are converted to ``out_format`` (rows whose first coordinate is negative are left as they are,
    as MXNet does). The gradient of an output row goes to the input row it came from.
    """
    shape = tuple(data.shape)
    _nms_checks(shape, coord_start, score_index, id_index)
    if _meta(data):
        return torch.empty_like(data)
    N, K = shape[-2], shape[-1]
    B = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    k = N if topk < 0 else min(N, topk)
    if k < 1:
        return data.clone()
    x = data.reshape(B, N, K)
    center = in_format == "center"
    thresh, vthresh = _f32(overlap_thresh), _f32(valid_thresh)
    rows = []
    for b in range(B):
        d = x[b].detach()
        scores = d[:, score_index]
        valid = scores > vthresh
        if id_index >= 0:
            valid &= d[:, id_index] != background_id
        idx = torch.nonzero(valid).flatten()
        order = torch.sort(scores[idx], descending=True, stable=True).indices
        idx = idx[order][:k]
        if idx.numel() > 1:
            boxes = d[idx, coord_start:coord_start + 4]
            cls = d[idx, id_index].to(torch.int64) if id_index >= 0 and not force_suppress else None
            idx = idx[_greedy_nms(_nms_pack(boxes, center), _nms_iou(center), thresh, False, cls)]
        kept = x[b].index_select(0, idx)
        pad = torch.full((N - idx.numel(), K), -1.0, dtype=data.dtype, device=data.device)
        rows.append(torch.cat([kept, pad], dim=0))
    out = torch.stack(rows)
    if in_format != out_format:
        c = out[..., coord_start:coord_start + 4]
        conv = torch.where((c[..., :1] >= 0), _corner_center(c.detach(), out_format == "center"), c.detach())
        c = _Replace.apply(c, conv)
        out = torch.cat([out[..., :coord_start], c, out[..., coord_start + 4:]], dim=-1)
    return out.reshape(shape)


def _np_box_nms(data, overlap_thresh=0.5, valid_thresh=0.0, topk=-1, coord_start=2, score_index=1,
                id_index=-1, background_id=-1, force_suppress=False, in_format="corner", out_format="corner"):
    shape = data.shape
    N, K = shape[-2], shape[-1]
    x = data.reshape(-1, N, K)
    k = N if topk < 0 else min(N, topk)
    if k < 1:
        return data.copy()
    c = in_format == "center"
    thr, vthr = np.float32(overlap_thresh), np.float32(valid_thresh)
    out = -np.ones_like(x)
    for b in range(x.shape[0]):
        cand = [i for i in range(N) if x[b, i, score_index] > vthr
                and (id_index < 0 or x[b, i, id_index] != background_id)]
        cand = sorted(cand, key=lambda i: -x[b, i, score_index])[:k]     # Python's sort is stable
        alive = [True] * len(cand)
        for p in range(len(cand)):
            if not alive[p]:
                continue
            bp = x[b, cand[p], coord_start:coord_start + 4]
            for q in range(p + 1, len(cand)):
                if not alive[q]:
                    continue
                if id_index >= 0 and not force_suppress and \
                        int(x[b, cand[p], id_index]) != int(x[b, cand[q], id_index]):
                    continue
                bq = x[b, cand[q], coord_start:coord_start + 4]
                inter = _np_overlap(bp[0], bp[2], bq[0], bq[2], c) * _np_overlap(bp[1], bp[3], bq[1], bq[3], c)
                with np.errstate(invalid="ignore", divide="ignore"):
                    iou = inter / (_np_area(bp, c) + _np_area(bq, c) - inter)
                if iou > thr:
                    alive[q] = False
        kept = [i for i, a in zip(cand, alive) if a]
        out[b, :len(kept)] = x[b, kept]
        if in_format != out_format:
            for r in range(len(kept)):
                v = out[b, r, coord_start:coord_start + 4].copy()
                if v[0] < 0:
                    continue
                if out_format == "center":
                    out[b, r, coord_start:coord_start + 4] = [(v[0] + v[2]) / 2, (v[1] + v[3]) / 2,
                                                              v[2] - v[0], v[3] - v[1]]
                else:
                    out[b, r, coord_start:coord_start + 4] = [v[0] - v[2] / 2, v[1] - v[3] / 2,
                                                              v[0] + v[2] / 2, v[1] + v[3] / 2]
    return out.reshape(shape)


def _nms_samples() -> list:
    doc = np.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
                    [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]])
    r = np.random.RandomState(8)
    n = 12
    xy = r.uniform(0, 6, (2, 3, n, 2))
    wh = r.uniform(1, 3, (2, 3, n, 2))
    score = r.permutation(np.linspace(0.05, 0.95, 2 * 3 * n)).reshape(2, 3, n, 1)
    cls = r.randint(0, 3, (2, 3, n, 1)).astype(np.float64)
    batch = np.concatenate([cls, score, xy, xy + wh], axis=-1)
    center = np.concatenate([score, xy + wh / 2, wh], axis=-1)
    # Gradients are checked where they are smooth: class ids are compared after truncation to
    # int and MXNet's backward ignores the format conversion, so those samples skip grad checks.
    return [
        Sample((doc,), {"overlap_thresh": 0.1, "coord_start": 2, "score_index": 1, "id_index": 0,
                        "force_suppress": True}, ref=_np_box_nms, grad=False),
        Sample((batch,), {"overlap_thresh": 0.3, "id_index": 0, "valid_thresh": 0.1}, ref=_np_box_nms,
               grad=False),
        Sample((batch,), {"overlap_thresh": 0.3, "topk": 5, "id_index": 0, "background_id": 1,
                          "force_suppress": True}, ref=_np_box_nms, grad=False),
        Sample((batch[..., 1:],), {"overlap_thresh": 0.3, "coord_start": 1, "score_index": 0,
                                   "valid_thresh": 0.2}, ref=_np_box_nms),
        Sample((batch,), {"overlap_thresh": 0.4, "out_format": "center"}, ref=_np_box_nms, grad=False),
        Sample((center,), {"overlap_thresh": 0.25, "coord_start": 1, "score_index": 0,
                           "in_format": "center", "out_format": "center", "topk": 7}, ref=_np_box_nms),
        Sample((center,), {"overlap_thresh": 0.25, "coord_start": 1, "score_index": 0,
                           "in_format": "center"}, ref=_np_box_nms, grad=False),
        Sample((batch,), {"topk": 0}, ref=_np_box_nms),
    ]


def _np_box_encode(samples, matches, anchors, refs, means, stds):
    B, N = samples.shape
    t = np.zeros((B, N, 4))
    m = np.zeros((B, N, 4))
    for b in range(B):
        for i in range(N):
            if samples[b, i] <= 0.5:
                continue
            rf = refs[b, int(matches[b, i])]
            an = anchors[b, i]
            rw, rh = rf[2] - rf[0], rf[3] - rf[1]
            aw, ah = an[2] - an[0], an[3] - an[1]
            raw = [((rf[0] + rw / 2) - (an[0] + aw / 2)) / aw, ((rf[1] + rh / 2) - (an[1] + ah / 2)) / ah,
                   np.log(rw / aw), np.log(rh / ah)]
            t[b, i] = (np.array(raw) - means) / stds
            m[b, i] = 1.0
    return [t.astype(anchors.dtype), m.astype(anchors.dtype)]


def _encode_samples() -> list:
    r = np.random.RandomState(9)
    B, N, M = 2, 5, 3
    anchors = np.concatenate([r.uniform(0, 1, (B, N, 2)), r.uniform(1.2, 2, (B, N, 2))], -1)
    refs = np.concatenate([r.uniform(0, 1, (B, M, 2)), r.uniform(1.2, 2, (B, M, 2))], -1)
    samples = np.array([[1., -1., 0., 1., 1.], [0., 1., 1., -1., 1.]])
    matches = np.array([[0., 2., 1., 2., 1.], [1., 0., 2., 0., 1.]])
    return [Sample((samples, matches, anchors, refs, np.array([0., 0.1, -0.1, 0.]),
                    np.array([0.1, 0.1, 0.2, 0.2])), ref=_np_box_encode)]


@register("_contrib_box_encode", num_outputs=2, differentiable=False, samples=_encode_samples)
def _contrib_box_encode(samples: Tensor, matches: Tensor, anchors: Tensor, refs: Tensor,
                        means: Tensor, stds: Tensor) -> Any:
    """Training targets (B, N, 4) and masks (B, N, 4) for anchors (B, N, 4, corner format)
    matched (``matches``, (B, N)) to reference boxes refs (B, M, 4): normalised centre offsets
    and log size ratios, ``(t - means) / stds``, for positive samples (samples > 0.5), zeros
    elsewhere. No gradient (MXNet back-propagates zeros)."""
    if anchors.dim() != 3 or anchors.shape[-1] != 4 or refs.dim() != 3 or refs.shape[-1] != 4:
        raise MXNetError(f"box_encode: anchors must be (B, N, 4) and refs (B, M, 4), got "
                         f"{tuple(anchors.shape)} and {tuple(refs.shape)}")
    if _meta(anchors):
        return torch.empty_like(anchors), torch.empty_like(anchors)
    B, N = anchors.shape[0], anchors.shape[1]
    a, rf = anchors.detach(), refs.detach()
    m = matches.detach().reshape(B, N).to(torch.int64).clamp(0, rf.shape[1] - 1)
    ref = torch.gather(rf, 1, m[..., None].expand(B, N, 4))
    rw, rh = ref[..., 2] - ref[..., 0], ref[..., 3] - ref[..., 1]
    aw, ah = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1]
    raw = torch.stack([((ref[..., 0] + rw * 0.5) - (a[..., 0] + aw * 0.5)) / aw,
                       ((ref[..., 1] + rh * 0.5) - (a[..., 1] + ah * 0.5)) / ah,
                       torch.log(rw / aw), torch.log(rh / ah)], dim=-1)
    t = (raw - means.detach().reshape(4)) / stds.detach().reshape(4)
    valid = (samples.detach().reshape(B, N) > 0.5)[..., None].expand(B, N, 4)
    targets = torch.where(valid, t, torch.zeros_like(t))
    return targets, valid.to(a.dtype)


def _np_box_decode(data, anchors, std0=1.0, std1=1.0, std2=1.0, std3=1.0, clip=-1.0, format="center"):
    a = anchors.reshape(1, -1, 4)
    if format == "corner":
        aw, ah = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1]
        ax, ay = a[..., 0] + aw / 2, a[..., 1] + ah / 2
    else:
        ax, ay, aw, ah = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    ox = data[..., 0] * std0 * aw + ax
    oy = data[..., 1] * std1 * ah + ay
    dw, dh = data[..., 2] * std2, data[..., 3] * std3
    if clip > 0:
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
    ow, oh = np.exp(dw) * aw / 2, np.exp(dh) * ah / 2
    return np.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1)


def _decode_samples() -> list:
    r = np.random.RandomState(10)
    data = r.randn(2, 4, 4)
    corner = np.concatenate([r.uniform(0, 1, (1, 4, 2)), r.uniform(1.2, 2, (1, 4, 2))], -1)
    center = np.concatenate([r.uniform(0, 1, (1, 4, 2)), r.uniform(0.2, 1, (1, 4, 2))], -1)
    return [Sample((data, center), ref=_np_box_decode),
            Sample((data, corner), {"format": "corner", "std0": 0.1, "std1": 0.1, "std2": 0.2,
                                    "std3": 0.2}, ref=_np_box_decode),
            Sample((data * 3, center), {"clip": 1.0}, ref=_np_box_decode)]


@register("_contrib_box_decode", differentiable=False, samples=_decode_samples)
def _contrib_box_decode(data: Tensor, anchors: Tensor, *, std0: float = 1.0, std1: float = 1.0,
                        std2: float = 1.0, std3: float = 1.0, clip: float = -1.0,
                        format: _BoxFormat = "center") -> Tensor:
    """Boxes (B, N, 4, corner format) from predicted offsets data (B, N, 4) and anchors (1, N, 4)
    in ``format``: centre = anchor centre + data[:2] * std * anchor size, size = anchor size *
    exp(data[2:] * std) (the exponent capped at ``clip`` when clip > 0). No gradient."""
    if data.dim() != 3 or data.shape[-1] != 4:
        raise MXNetError(f"box_decode: data must have shape (B, N, 4), got {tuple(data.shape)}")
    if anchors.dim() < 3 or anchors.shape[-1] != 4:
        raise MXNetError(f"box_decode: anchors must have shape (1, N, 4), got {tuple(anchors.shape)}")
    x = data.detach()
    a = anchors.detach().reshape(1, -1, 4)
    if format == "corner":
        aw, ah = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1]
        ax, ay = a[..., 0] + aw * 0.5, a[..., 1] + ah * 0.5
    else:
        ax, ay, aw, ah = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    ox = x[..., 0] * _f32(std0) * aw + ax
    oy = x[..., 1] * _f32(std1) * ah + ay
    dw, dh = x[..., 2] * _f32(std2), x[..., 3] * _f32(std3)
    if clip > 0:
        dw, dh = dw.clamp(max=_f32(clip)), dh.clamp(max=_f32(clip))
    ow, oh = torch.exp(dw) * aw * 0.5, torch.exp(dh) * ah * 0.5
    return torch.stack([ox - ow, oy - oh, ox + ow, oy + oh], dim=-1)


def _np_bipartite(data, is_ascend=False, threshold=0.0, topk=-1):
    N, M = data.shape[-2:]
    flat = data.reshape(-1, N * M)
    thr = np.float32(threshold)
    rows = -np.ones((flat.shape[0], N))
    cols = -np.ones((flat.shape[0], M))
    for b, sc in enumerate(flat):
        order = np.argsort(sc if is_ascend else -sc, kind="stable")
        count = 0
        for idx in order:
            r, c = divmod(int(idx), M)
            if rows[b, r] == -1 and cols[b, c] == -1:
                if (sc[idx] > thr) if not is_ascend else (sc[idx] < thr):
                    rows[b, r], cols[b, c] = c, r
                    count += 1
                    if 0 < topk < count:
                        break
                else:
                    break
    return [rows.reshape(data.shape[:-1]).astype(data.dtype),
            cols.reshape(data.shape[:-2] + (M,)).astype(data.dtype)]


@register("_contrib_bipartite_matching", num_outputs=2, differentiable=False, samples=lambda: [
    Sample((np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]]),), {"threshold": 1e-12}, ref=_np_bipartite),
    Sample((_R.permutation(24).reshape(2, 3, 4) / 24.0,), {"threshold": 0.3}, ref=_np_bipartite),
    Sample((_R.permutation(24).reshape(2, 4, 3) / 24.0,), {"threshold": 0.6, "is_ascend": True},
           ref=_np_bipartite),
    Sample((_R.permutation(20).reshape(4, 5) / 20.0,), {"threshold": 0.0, "topk": 2}, ref=_np_bipartite)])
def _contrib_bipartite_matching(data: Tensor, *, is_ascend: bool = False, threshold: float,
                                topk: int = -1) -> Any:
    """Greedy bipartite matching on score matrices data (..., N, M): pairs are taken in order of
    descending (``is_ascend``: ascending) score while the score passes ``threshold``; returns the
    matched column of every row (..., N) and the matched row of every column (..., M), -1 where
    unmatched. As in MXNet, ``topk > 0`` stops after topk + 1 matches. No gradient."""
    if data.dim() < 2:
        raise MXNetError(f"bipartite_matching: data must have at least 2 dimensions (..., N, M), "
                         f"got {tuple(data.shape)}")
    shape = tuple(data.shape)
    N, M = shape[-2], shape[-1]
    if _meta(data):
        return (torch.empty(shape[:-1], dtype=data.dtype, device="meta"),
                torch.empty(shape[:-2] + (M,), dtype=data.dtype, device="meta"))
    flat = data.detach().reshape(-1, N * M)
    thr = _f32(threshold)
    rows_out, cols_out = [], []
    for sc in flat:
        order = torch.sort(sc, descending=not is_ascend, stable=True).indices
        vals = sc[order].tolist()
        rm, cm = [-1] * N, [-1] * M
        count = 0
        for s, idx in zip(vals, order.tolist()):
            r, c = divmod(idx, M)
            if rm[r] == -1 and cm[c] == -1:
                if (s < thr) if is_ascend else (s > thr):
                    rm[r], cm[c] = c, r
                    count += 1
                    if 0 < topk < count:
                        break
                else:
                    break
        rows_out.append(rm)
        cols_out.append(cm)
    rows = torch.tensor(rows_out, dtype=data.dtype, device=data.device).reshape(shape[:-1])
    cols = torch.tensor(cols_out, dtype=data.dtype, device=data.device).reshape(shape[:-2] + (M,))
    return rows, cols


def _np_multibox_prior(data, sizes=(1.0,), ratios=(1.0,), clip=False, steps=(-1.0, -1.0),
                       offsets=(0.5, 0.5)):
    f = np.float32
    H, W = data.shape[2], data.shape[3]
    sizes = [f(s) for s in np.atleast_1d(sizes)]
    ratios = [f(r) for r in np.atleast_1d(ratios)]
    sy, sx = (f(steps[0]), f(steps[1])) if steps[0] > 0 and steps[1] > 0 else (f(1) / f(H), f(1) / f(W))
    out = []
    for r in range(H):
        cy = (f(r) + f(offsets[0])) * sy
        for c in range(W):
            cx = (f(c) + f(offsets[1])) * sx
            shapes = [(s, np.sqrt(ratios[0])) for s in sizes] + [(sizes[0], np.sqrt(q)) for q in ratios[1:]]
            for s, q in shapes:
                w = s * f(H) / f(W) * q / f(2)
                h = s / q / f(2)
                out.append([cx - w, cy - h, cx + w, cy + h])
    out = np.array(out, dtype=np.float32)[None]
    if clip:
        out = np.clip(out, 0, 1)
    return out.astype(data.dtype)


@register("_contrib_MultiBoxPrior", differentiable=False, samples=lambda: [
    Sample((_u(1, 2, 3, 4),), {"sizes": (0.5, 0.25), "ratios": (1.0, 2.0, 0.5)}, ref=_np_multibox_prior),
    Sample((_u(2, 1, 2, 2),), {"sizes": (0.75,), "ratios": (2.0,), "clip": True, "steps": (0.4, 0.3),
                               "offsets": (0.25, 0.5)}, ref=_np_multibox_prior),
    Sample((_u(1, 1, 3, 2),), {}, ref=_np_multibox_prior)])
def _contrib_MultiBoxPrior(data: Tensor, *, sizes: AnyValue = (1.0,), ratios: AnyValue = (1.0,),
                           clip: bool = False, steps: AnyValue = (-1.0, -1.0),
                           offsets: AnyValue = (0.5, 0.5)) -> Tensor:
    """SSD anchor boxes (1, H*W*(len(sizes)+len(ratios)-1), 4), corner format in [0, 1] units,
    for the feature map data (N, C, H, W): per pixel, every size with the first ratio, then the
    first size with the other ratios (w = size*H/W*sqrt(r)/2, h = size/sqrt(r)/2 around the
    centre ((x + offsets[1]) * steps[1], (y + offsets[0]) * steps[0]); steps <= 0 mean 1/W, 1/H).
    Computed in single precision like MXNet; ``clip`` clamps to [0, 1]."""
    if data.dim() != 4:
        raise MXNetError(f"MultiBoxPrior: data must be 4-D (N, C, H, W), got shape {tuple(data.shape)}")
    sz = _floats(sizes, "MultiBoxPrior", "sizes")
    rt = _floats(ratios, "MultiBoxPrior", "ratios")
    st = _floats(steps, "MultiBoxPrior", "steps")
    of = _floats(offsets, "MultiBoxPrior", "offsets")
    if not sz or not rt or len(st) != 2 or len(of) != 2 or min(sz) <= 0 or min(rt) <= 0:
        raise MXNetError(f"MultiBoxPrior: need positive sizes and ratios, two steps and two offsets; got "
                         f"sizes={sizes!r}, ratios={ratios!r}, steps={steps!r}, offsets={offsets!r}")
    H, W = int(data.shape[2]), int(data.shape[3])
    na = len(sz) + len(rt) - 1
    if _meta(data):
        return torch.empty((1, H * W * na, 4), dtype=data.dtype, device="meta")
    f = np.float32
    if st[0] > 0 and st[1] > 0:
        sy, sx = f(st[0]), f(st[1])
    else:
        sy, sx = f(1) / f(H), f(1) / f(W)
    half = []
    for s, q in [(f(s), np.sqrt(f(rt[0]))) for s in sz] + [(f(sz[0]), np.sqrt(f(r))) for r in rt[1:]]:
        half.append((s * f(H) / f(W) * q / f(2), s / q / f(2)))
    hw = torch.tensor(np.array(half, dtype=np.float32), device=data.device)           # (na, 2)
    cy = (torch.arange(H, dtype=torch.float32, device=data.device) + float(f(of[0]))) * float(sy)
    cx = (torch.arange(W, dtype=torch.float32, device=data.device) + float(f(of[1]))) * float(sx)
    cy = cy[:, None, None].expand(H, W, na)
    cx = cx[None, :, None].expand(H, W, na)
    w, h = hw[:, 0].expand(H, W, na), hw[:, 1].expand(H, W, na)
    out = torch.stack([cx - w, cy - h, cx + w, cy + h], dim=-1).reshape(1, H * W * na, 4)
    if clip:
        out = out.clamp(0.0, 1.0)
    return out.to(data.dtype)


# ---- MultiBoxDetection / MultiBoxTarget (SSD heads) -------------------------------------------
def _variances(v: Any, who: str) -> tuple:
    t = _floats(v, who, "variances")
    if len(t) != 4:
        raise MXNetError(f"{who}: variances must hold 4 values, got {v!r}")
    return tuple(_f32(x) for x in t)


def _corner_iou_matrix(a: Tensor, b: Tensor) -> Tensor:
    """IoU (n, m) of corner boxes a (n, 4) and b (m, 4); 0 where the union is <= 0."""
    w = (torch.minimum(a[:, None, 2], b[None, :, 2]) - torch.maximum(a[:, None, 0], b[None, :, 0])).clamp(min=0)
    h = (torch.minimum(a[:, None, 3], b[None, :, 3]) - torch.maximum(a[:, None, 1], b[None, :, 1])).clamp(min=0)
    inter = w * h
    union = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]))[:, None] + \
        ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]))[None, :] - inter
    return torch.where(union > 0, inter / torch.where(union > 0, union, torch.ones_like(union)),
                       torch.zeros_like(inter))


@register("_contrib_MultiBoxDetection", differentiable=False, samples=lambda: _mbd_samples())
def _contrib_MultiBoxDetection(cls_prob: Tensor, loc_pred: Tensor, anchor: Tensor, *, clip: bool = True,
                               threshold: float = 0.01, background_id: int = 0, nms_threshold: float = 0.5,
                               force_suppress: bool = False, variances: AnyValue = (0.1, 0.1, 0.2, 0.2),
                               nms_topk: int = -1) -> Tensor:
    """SSD detections (B, N, 6) = [class_id, score, xmin, ymin, xmax, ymax] from class
    probabilities (B, num_classes, N; class 0 is background), box offsets loc_pred (B, N*4) and
    anchors (1, N, 4) (MXNet's MultiBoxDetection): each anchor takes its best non-background
    class (dropped when the score < threshold), boxes are decoded with ``variances`` (and clipped
    to [0, 1]), the kept rows are sorted by score, cut to ``nms_topk`` and NMS-ed (IoU >=
    nms_threshold, same class unless force_suppress): suppressed rows get class -1, unused rows
    are -1. As in MXNet's CPU kernel, background_id is accepted and class 0 is the background."""
    if cls_prob.dim() != 3 or loc_pred.dim() != 2 or anchor.shape[-1] != 4:
        raise MXNetError(f"MultiBoxDetection: expected cls_prob (B, classes, N), loc_pred (B, N*4) and anchor "
                         f"(1, N, 4), got {tuple(cls_prob.shape)}, {tuple(loc_pred.shape)}, {tuple(anchor.shape)}")
    B, C, N = cls_prob.shape
    if loc_pred.shape[1] != 4 * N or anchor.numel() != 4 * N:
        raise MXNetError(f"MultiBoxDetection: {N} anchors need loc_pred (B, {4 * N}) and anchor (1, {N}, 4), got "
                         f"{tuple(loc_pred.shape)} and {tuple(anchor.shape)}")
    var = _variances(variances, "MultiBoxDetection")
    if _meta(cls_prob):
        return torch.empty((B, N, 6), dtype=cls_prob.dtype, device="meta")
    dt = cls_prob.dtype
    a = anchor.detach().reshape(N, 4).to(dt)
    out = torch.full((B, N, 6), -1.0, dtype=dt, device=cls_prob.device)
    aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    ax, ay = (a[:, 0] + a[:, 2]) / 2, (a[:, 1] + a[:, 3]) / 2
    thr, nms = _f32(threshold), _f32(nms_threshold)
    for b in range(B):
        p = cls_prob[b].detach()
        if C > 1:                       # first best non-background class; scores <= -1 mean none
            idx = torch.argmax(p[1:], dim=0)
            score = p[1:].gather(0, idx[None])[0]
            idx = torch.where(score > -1, idx + 1, torch.zeros_like(idx))
            score = torch.where(score > -1, score, torch.full_like(score, -1.0))
        else:
            score = torch.full((N,), -1.0, dtype=dt, device=p.device)
            idx = torch.zeros(N, dtype=torch.int64, device=p.device)
        idx = torch.where(score < thr, torch.zeros_like(idx), idx)
        valid = torch.nonzero(idx > 0).flatten()
        if valid.numel() == 0:
            continue
        l = loc_pred[b].detach().reshape(N, 4)[valid]
        ox = l[:, 0] * var[0] * aw[valid] + ax[valid]
        oy = l[:, 1] * var[1] * ah[valid] + ay[valid]
        ow = torch.exp(l[:, 2] * var[2]) * aw[valid] / 2
        oh = torch.exp(l[:, 3] * var[3]) * ah[valid] / 2
        boxes = torch.stack([ox - ow, oy - oh, ox + ow, oy + oh], dim=-1)
        if clip:
            boxes = boxes.clamp(0.0, 1.0)
        rows = torch.cat([(idx[valid] - 1).to(dt)[:, None], score[valid][:, None], boxes], dim=1)
        nv = rows.shape[0]
        if not 0 < nms <= 1:
            out[b, :nv] = rows
            continue
        order = torch.sort(rows[:, 1], descending=True, stable=True).indices
        nkeep = nv if not 0 < nms_topk < nv else nms_topk
        res = rows.clone()                   # rows past nkeep keep their unsorted values, class -1
        res[:nkeep] = rows[order[:nkeep]]
        res[nkeep:, 0] = -1
        if nkeep > 1:
            top = res[:nkeep]
            keep = _greedy_nms(top[:, 2:], _corner_iou_matrix, nms, True, None if force_suppress else top[:, 0])
            res[:nkeep, 0] = torch.where(keep, top[:, 0], torch.full_like(top[:, 0], -1.0))
        out[b, :nv] = res
    return out


def _np_multibox_detection(cls_prob, loc_pred, anchor, clip=True, threshold=0.01, background_id=0,
                           nms_threshold=0.5, force_suppress=False, variances=(0.1, 0.1, 0.2, 0.2), nms_topk=-1):
    B, C, N = cls_prob.shape
    v = [float(np.float32(x)) for x in variances]
    thr, nthr = np.float32(threshold), np.float32(nms_threshold)
    a = anchor.reshape(N, 4)
    out = -np.ones((B, N, 6))
    for b in range(B):
        rows = []
        for i in range(N):
            score, cid = -1.0, 0
            for j in range(1, C):
                if cls_prob[b, j, i] > score:
                    score, cid = cls_prob[b, j, i], j
            if cid > 0 and score < thr:
                cid = 0
            if cid == 0:
                continue
            al, at, ar, ab = a[i]
            aw, ah = ar - al, ab - at
            px, py, pw, ph = loc_pred[b, 4 * i:4 * i + 4]
            ox, oy = px * v[0] * aw + (al + ar) / 2, py * v[1] * ah + (at + ab) / 2
            ow, oh = np.exp(pw * v[2]) * aw / 2, np.exp(ph * v[3]) * ah / 2
            box = [ox - ow, oy - oh, ox + ow, oy + oh]
            if clip:
                box = [min(max(c, 0.0), 1.0) for c in box]
            rows.append([cid - 1, score] + box)
        if not rows:
            continue
        rows = np.array(rows)
        out[b, :len(rows)] = rows
        if not 0 < nthr <= 1:
            continue
        order = sorted(range(len(rows)), key=lambda r: -rows[r, 1])
        nkeep = len(rows) if not 0 < nms_topk < len(rows) else nms_topk
        for r in range(nkeep):
            out[b, r] = rows[order[r]]
        out[b, nkeep:len(rows), 0] = -1
        for p in range(nkeep):
            if out[b, p, 0] < 0:
                continue
            for q in range(p + 1, nkeep):
                if out[b, q, 0] < 0 or not (force_suppress or out[b, p, 0] == out[b, q, 0]):
                    continue
                x, y = out[b, p, 2:], out[b, q, 2:]
                w = max(0.0, min(x[2], y[2]) - max(x[0], y[0]))
                h = max(0.0, min(x[3], y[3]) - max(x[1], y[1]))
                u = (x[2] - x[0]) * (x[3] - x[1]) + (y[2] - y[0]) * (y[3] - y[1]) - w * h
                if (0.0 if u <= 0 else w * h / u) >= nthr:
                    out[b, q, 0] = -1
    return out.astype(cls_prob.dtype)


def _mbd_samples() -> list:
    r = np.random.RandomState(12)
    B, C, N = 2, 4, 10
    logits = r.randn(B, C, N) * 2
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    loc = r.randn(B, N * 4) * 0.5
    xy = r.uniform(0.1, 0.6, (1, N, 2))
    anchor = np.concatenate([xy, xy + r.uniform(0.2, 0.4, (1, N, 2))], axis=-1)
    return [
        Sample((prob, loc, anchor), {}, ref=_np_multibox_detection),
        Sample((prob, loc, anchor), {"threshold": 0.3, "nms_threshold": 0.3, "force_suppress": True,
                                     "clip": False}, ref=_np_multibox_detection),
        Sample((prob, loc, anchor), {"nms_topk": 4, "variances": (0.2, 0.2, 0.1, 0.1)}, ref=_np_multibox_detection),
        Sample((prob, loc, anchor), {"nms_threshold": 0.0}, ref=_np_multibox_detection),
    ]


@register("_contrib_MultiBoxTarget", num_outputs=3, differentiable=False,
          output_names=("loc_target", "loc_mask", "cls_target"), samples=lambda: _mbt_samples())
def _contrib_MultiBoxTarget(anchor: Tensor, label: Tensor, cls_pred: Tensor, *, overlap_threshold: float = 0.5,
                            ignore_label: float = -1.0, negative_mining_ratio: float = -1.0,
                            negative_mining_thresh: float = 0.5, minimum_negative_samples: int = 0,
                            variances: AnyValue = (0.1, 0.1, 0.2, 0.2)) -> Any:
    """SSD training targets (MXNet's MultiBoxTarget) for anchors (1, N, 4), padded labels
    (B, L, >=5) = [class, xmin, ymin, xmax, ymax] (class -1 ends the list) and class predictions
    (B, classes, N): returns loc_target (B, N*4), loc_mask (B, N*4), cls_target (B, N).

    Every ground truth first takes its best unmatched anchor (greedily, highest IoU first), then
    every other anchor whose best IoU exceeds overlap_threshold is positive. Positives get class
    + 1 and offsets ((g - a) / a_size / variance, log(g_size / a_size) / variance). Negatives
    (class 0) are all other anchors, or with negative_mining_ratio > 0 the ratio * positives
    anchors with IoU < negative_mining_thresh and the lowest background probability. The rest
    get ignore_label. Images without ground truth are all ignore_label. No gradient."""
    if anchor.dim() != 3 or anchor.shape[0] != 1 or anchor.shape[2] != 4:
        raise MXNetError(f"MultiBoxTarget: anchor must be (1, num_anchors, 4), got {tuple(anchor.shape)}")
    if label.dim() != 3 or label.shape[2] < 5:
        raise MXNetError(f"MultiBoxTarget: label must be (batch, num_labels, >=5), got {tuple(label.shape)}")
    N = anchor.shape[1]
    if cls_pred.dim() != 3 or cls_pred.shape[2] != N:
        raise MXNetError(f"MultiBoxTarget: cls_pred must be (batch, num_classes, {N}), got {tuple(cls_pred.shape)}")
    B = label.shape[0]
    var = _variances(variances, "MultiBoxTarget")
    dt = anchor.dtype
    if _meta(anchor):
        return (torch.empty((B, N * 4), dtype=dt, device="meta"), torch.empty((B, N * 4), dtype=dt, device="meta"),
                torch.empty((B, N), dtype=dt, device="meta"))
    dev = anchor.device
    a = anchor.detach().reshape(N, 4)
    lab = label.detach().to(dt)
    loc_t = torch.zeros((B, N, 4), dtype=dt, device=dev)
    loc_m = torch.zeros((B, N, 4), dtype=dt, device=dev)
    cls_t = torch.full((B, N), float(ignore_label), dtype=dt, device=dev)
    othr = _f32(overlap_threshold)
    for b in range(B):
        cls_col = lab[b, :, 0].tolist()
        ngt = next((i for i, c in enumerate(cls_col) if c == -1.0), len(cls_col))
        if ngt == 0:
            continue
        gt = lab[b, :ngt, 1:5]
        iou = _corner_iou_matrix(a, gt)                                    # (N, ngt)
        flags = torch.full((N,), -1, dtype=torch.int64, device=dev)
        best_gt = torch.full((N,), -1, dtype=torch.int64, device=dev)
        best_iou = torch.full((N,), -1.0, dtype=dt, device=dev)
        work = iou.clone()
        for _ in range(ngt):                                               # greedy bipartite stage
            flat = int(torch.argmax(work))
            j, k = divmod(flat, ngt)
            if not float(work[j, k]) > 1e-6:
                break
            flags[j], best_gt[j], best_iou[j] = 1, k, iou[j, k]
            work[j, :] = -1.0
            work[:, k] = -1.0
        if othr > 0:
            rest = flags != 1
            arg = torch.argmax(iou, dim=1)
            mx_ = iou.gather(1, arg[:, None])[:, 0]
            best_gt = torch.where(rest, arg, best_gt)
            best_iou = torch.where(rest, mx_, best_iou)
            flags = torch.where(rest & (mx_ > othr), torch.ones_like(flags), flags)
        npos = int((flags == 1).sum())
        if negative_mining_ratio > 0:
            if not negative_mining_thresh > 0:
                raise MXNetError(f"MultiBoxTarget: negative_mining_thresh must be > 0, got {negative_mining_thresh}")
            nneg = min(int(npos * _f32(negative_mining_ratio)), N - npos)
            if nneg > 0:
                unset = best_iou < 0
                if bool(unset.any()):
                    arg = torch.argmax(iou, dim=1)
                    best_iou = torch.where(unset, iou.gather(1, arg[:, None])[:, 0], best_iou)
                cand = torch.nonzero((flags == -1) & (best_iou < _f32(negative_mining_thresh))).flatten()
                if cand.numel() < nneg:
                    raise MXNetError(f"MultiBoxTarget: negative mining needs {nneg} negative anchors but only "
                                     f"{cand.numel()} have IoU < negative_mining_thresh={negative_mining_thresh}")
                logits = cls_pred[b].detach().to(dt)[:, cand]                 # (classes, n)
                mx_ = logits.max(dim=0).values
                prob = torch.exp(logits[0] - mx_) / torch.exp(logits - mx_).sum(dim=0)
                order = torch.sort(prob, stable=True).indices[:nneg]
                flags[cand[order]] = 0
        else:
            flags = torch.where(flags != 1, torch.zeros_like(flags), flags)
        pos = torch.nonzero(flags == 1).flatten()
        neg = flags == 0
        cls_t[b] = torch.where(neg, torch.zeros_like(cls_t[b]), cls_t[b])
        if pos.numel():
            g = gt[best_gt[pos]].to(torch.float32)
            an = a[pos].to(torch.float32)
            aw, ah = an[:, 2] - an[:, 0], an[:, 3] - an[:, 1]
            ax, ay = (an[:, 0] + an[:, 2]) * 0.5, (an[:, 1] + an[:, 3]) * 0.5
            gw, gh = g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]
            gx, gy = (g[:, 0] + g[:, 2]) * 0.5, (g[:, 1] + g[:, 3]) * 0.5
            t = torch.stack([(gx - ax) / aw / var[0], (gy - ay) / ah / var[1],
                             torch.log(gw / aw) / var[2], torch.log(gh / ah) / var[3]], dim=-1)
            loc_t[b, pos] = t.to(dt)
            loc_m[b, pos] = 1.0
            cls_t[b, pos] = lab[b, best_gt[pos], 0] + 1
    return loc_t.reshape(B, N * 4), loc_m.reshape(B, N * 4), cls_t


def _np_multibox_target(anchor, label, cls_pred, overlap_threshold=0.5, ignore_label=-1.0,
                        negative_mining_ratio=-1.0, negative_mining_thresh=0.5, minimum_negative_samples=0,
                        variances=(0.1, 0.1, 0.2, 0.2)):
    N = anchor.shape[1]
    B = label.shape[0]
    a = anchor.reshape(N, 4).astype(np.float64)
    v = [float(np.float32(x)) for x in variances]
    loc = np.zeros((B, N, 4))
    mask = np.zeros((B, N, 4))
    cls = np.full((B, N), ignore_label)

    def iou(x, y):
        w = max(0.0, min(x[2], y[2]) - max(x[0], y[0]))
        h = max(0.0, min(x[3], y[3]) - max(x[1], y[1]))
        u = (x[2] - x[0]) * (x[3] - x[1]) + (y[2] - y[0]) * (y[3] - y[1]) - w * h
        return 0.0 if u == 0 else w * h / u
    for b in range(B):
        ngt = 0
        while ngt < label.shape[1] and label[b, ngt, 0] != -1:
            ngt += 1
        if ngt == 0:
            continue
        ov = np.array([[iou(a[j], label[b, k, 1:5]) for k in range(ngt)] for j in range(N)])
        flags = [-1] * N
        match = [(-1.0, -1)] * N
        gt_done = [False] * ngt
        npos = 0
        while not all(gt_done):
            best, bj, bk = 1e-6, -1, -1
            for j in range(N):
                if flags[j] == 1:
                    continue
                for k in range(ngt):
                    if not gt_done[k] and ov[j, k] > best:
                        best, bj, bk = ov[j, k], j, k
            if bj < 0:
                break
            match[bj] = (best, bk)
            flags[bj], gt_done[bk] = 1, True
            npos += 1
        if overlap_threshold > 0:
            for j in range(N):
                if flags[j] == 1:
                    continue
                k = int(np.argmax(ov[j]))
                match[j] = (ov[j, k], k)
                if ov[j, k] > np.float32(overlap_threshold):
                    flags[j] = 1
                    npos += 1
        if negative_mining_ratio > 0:
            nneg = min(int(npos * np.float32(negative_mining_ratio)), N - npos)
            if nneg > 0:
                cand = []
                for j in range(N):
                    if flags[j] == 1:
                        continue
                    if match[j][0] < 0:
                        k = int(np.argmax(ov[j]))
                        match[j] = (ov[j, k], k)
                    if match[j][0] < np.float32(negative_mining_thresh) and flags[j] == -1:
                        z = cls_pred[b, :, j] - cls_pred[b, :, j].max()
                        cand.append((np.exp(z[0]) / np.exp(z).sum(), j))
                cand.sort(key=lambda t: t[0])
                for _, j in cand[:nneg]:
                    flags[j] = 0
        else:
            flags = [1 if f == 1 else 0 for f in flags]
        for j in range(N):
            if flags[j] == 1:
                k = match[j][1]
                g = label[b, k, 1:5]
                aw, ah = a[j, 2] - a[j, 0], a[j, 3] - a[j, 1]
                gw, gh = g[2] - g[0], g[3] - g[1]
                loc[b, j] = [((g[0] + g[2]) / 2 - (a[j, 0] + a[j, 2]) / 2) / aw / v[0],
                             ((g[1] + g[3]) / 2 - (a[j, 1] + a[j, 3]) / 2) / ah / v[1],
                             np.log(gw / aw) / v[2], np.log(gh / ah) / v[3]]
                mask[b, j] = 1
                cls[b, j] = label[b, k, 0] + 1
            elif flags[j] == 0:
                cls[b, j] = 0
    dt = anchor.dtype
    return [loc.reshape(B, N * 4).astype(dt), mask.reshape(B, N * 4).astype(dt), cls.astype(dt)]


def _mbt_samples() -> list:
    r = np.random.RandomState(13)
    N = 16
    xy = r.uniform(0.0, 0.7, (1, N, 2))
    anchor = np.concatenate([xy, xy + r.uniform(0.1, 0.3, (1, N, 2))], axis=-1)
    label = -np.ones((3, 3, 5))
    label[0, 0] = [1, 0.1, 0.1, 0.4, 0.35]
    label[0, 1] = [0, 0.5, 0.45, 0.8, 0.9]
    label[1, 0] = [2, 0.3, 0.2, 0.6, 0.5]
    cls_pred = r.randn(3, 4, N)
    # positives are checked with loose tolerances: targets are computed in single precision, as MXNet
    return [
        Sample((anchor, label, cls_pred), {}, ref=_np_multibox_target, rtol=1e-5, atol=1e-5),
        Sample((anchor, label, cls_pred), {"overlap_threshold": 0.2, "negative_mining_ratio": 2.0,
                                           "negative_mining_thresh": 0.4, "ignore_label": -2.0},
               ref=_np_multibox_target, rtol=1e-5, atol=1e-5),
        Sample((anchor, label, cls_pred), {"overlap_threshold": 0.0, "negative_mining_ratio": 1.5,
                                           "variances": (0.2, 0.2, 0.3, 0.3)},
               ref=_np_multibox_target, rtol=1e-5, atol=1e-5),
    ]


# ---- normalization variants, SparseEmbedding --------------------------------------------------
def _bn_kernel() -> Callable:
    return get("BatchNorm").kernel


def _bn_params(attrs: dict, shapes: list) -> list:
    rule = get("BatchNorm").param_shapes
    return rule(attrs, shapes) if rule is not None else list(shapes)


def _bn_nout(attrs: dict) -> int:
    return 3 if attrs.get("output_mean_var", False) else 1


def _np_bn(x, g, b, mm, mv, eps=1e-3, momentum=0.9, fix_gamma=True, use_global_stats=False,
           output_mean_var=False, axis=1, train=False, relu=False, var_out=False, **_):
    ax = axis % x.ndim
    red = tuple(i for i in range(x.ndim) if i != ax)
    shp = [1] * x.ndim
    shp[ax] = -1
    if train and not use_global_stats:
        mean, var = x.mean(axis=red), x.var(axis=red)
    else:
        mean, var = mm, mv
    gg = np.ones_like(g) if fix_gamma else g
    out = (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps) * gg.reshape(shp) + b.reshape(shp)
    if relu:
        out = np.maximum(out, 0)
    return [out, mean, var if var_out else 1 / np.sqrt(var + eps)] if output_mean_var else out


def _bn_samples(relu: bool, extra: dict) -> Callable[[], list]:
    def make() -> list:
        r = np.random.RandomState(31)
        x = r.randn(4, 3, 2, 3)
        g, b = r.uniform(0.5, 1.5, 3), r.randn(3)
        mm, mv = r.randn(3) * 0.1, r.uniform(0.5, 2, 3)

        def ref(*a, **k):
            return _np_bn(*a, relu=relu, var_out="key" in k,
                          **{kk: v for kk, v in k.items() if kk not in ("key", "ndev")})

        def trained(*a, **k):
            return ref(*a, train=True, **k)
        return [
            Sample((x, g, b, mm, mv), dict(extra), ref=ref, grad_inputs=(0, 1, 2)),
            Sample((x, g, b, mm, mv), dict(extra, fix_gamma=False, eps=1e-5), ref=trained, train=True,
                   grad_inputs=(0, 1, 2), rtol=1e-5, atol=1e-6),
            Sample((x, g, b, mm, mv), dict(extra, fix_gamma=False, use_global_stats=True), ref=ref,
                   train=True, grad_inputs=(0, 1, 2)),
            Sample((x, g, b, mm, mv), dict(extra, fix_gamma=False, output_mean_var=True), ref=trained,
                   train=True, grad=False),
        ]
    return make


@register("_contrib_SyncBatchNorm", aux=("moving_mean", "moving_var"), num_outputs=_bn_nout,
          total_outputs=3, output_names=("output", "mean", "var"), param_shapes=_bn_params,
          samples=_bn_samples(False, {"key": "bn0"}))
def _contrib_SyncBatchNorm(data: Tensor, gamma: Tensor, beta: Tensor, moving_mean: Tensor,
                           moving_var: Tensor, *, eps: float = 1e-3, momentum: float = 0.9,
                           fix_gamma: bool = True, use_global_stats: bool = False,
                           output_mean_var: bool = False, ndev: int = 1, key: str,
                           is_train: bool = False) -> Any:
    """Cross-device batch normalization over axis 1 (MXNet's SyncBatchNorm). In one process
    there is one device, so it is BatchNorm (``ndev`` and ``key`` are accepted and unused),
    except that its third output is the variance, not BatchNorm's inverse std."""
    res = _bn_kernel()(data, gamma, beta, moving_mean, moving_var, eps=eps, momentum=momentum,
                       fix_gamma=fix_gamma, use_global_stats=use_global_stats,
                       output_mean_var=output_mean_var, axis=1, is_train=is_train)
    if not output_mean_var:
        return res
    out, mean, invstd = res
    return out, mean, invstd.reciprocal().square() - eps


@register("_contrib_BatchNormWithReLU", aux=("moving_mean", "moving_var"), num_outputs=_bn_nout,
          total_outputs=4, output_names=("output", "mean", "var", "workspace"), param_shapes=_bn_params,
          samples=_bn_samples(True, {}))
def _contrib_BatchNormWithReLU(data: Tensor, gamma: Tensor, beta: Tensor, moving_mean: Tensor,
                               moving_var: Tensor, *, eps: float = 1e-3, momentum: float = 0.9,
                               fix_gamma: bool = True, use_global_stats: bool = False,
                               output_mean_var: bool = False, axis: int = 1, cudnn_off: bool = False,
                               min_calib_range: OptFloat = None, max_calib_range: OptFloat = None,
                               is_train: bool = False) -> Any:
    """BatchNorm followed by ReLU (MXNet's fused BatchNormWithReLU); same attributes, moving
    statistics and optional (mean, inverse std) outputs as BatchNorm."""
    res = _bn_kernel()(data, gamma, beta, moving_mean, moving_var, eps=eps, momentum=momentum,
                       fix_gamma=fix_gamma, use_global_stats=use_global_stats,
                       output_mean_var=output_mean_var, axis=axis, cudnn_off=cudnn_off,
                       is_train=is_train)
    if output_mean_var:
        out, mean, var = res
        return torch.relu(out), mean, var
    return torch.relu(res)


def _emb_params(attrs: dict, shapes: list) -> list:
    rule = get("Embedding").param_shapes
    return rule(attrs, shapes) if rule is not None else list(shapes)


def _np_embedding(data, weight, input_dim=0, output_dim=0, **_):
    return weight[np.clip(data.astype(np.int64), 0, weight.shape[0] - 1)]


@register("_contrib_SparseEmbedding", param_shapes=_emb_params, samples=lambda: [
    Sample((np.array([[0., 2.], [4., 1.]]), _R.randn(5, 3)), {"input_dim": 5, "output_dim": 3},
           ref=_np_embedding, grad_inputs=(1,))])
def _contrib_SparseEmbedding(data: Tensor, weight: Tensor, *, input_dim: int, output_dim: int,
                             dtype: Dtype = "float32", sparse_grad: bool = False,
                             deterministic: bool = False) -> Tensor:
    """Embedding lookup whose weight gradient is row_sparse (a graph's gradient storage says
    so: ``ops.sparse``); the result is exactly Embedding's. ``deterministic`` (MXNet's choice of
    a deterministic GPU gradient kernel) changes nothing here: gradients are always
    deterministic."""
    return get("Embedding").kernel(data, weight, input_dim=input_dim, output_dim=output_dim,
                                   dtype=dtype, sparse_grad=sparse_grad)


# ---- fft / ifft / count_sketch ----------------------------------------------------------------
def _complex_work(t: Tensor) -> Tensor:
    return t if t.dtype in (torch.float32, torch.float64) else t.to(torch.float32)


@register("_contrib_fft", samples=lambda: [
    Sample((_u(3, 6),), ref=lambda x, compute_size=128: np.stack(
        [np.fft.fft(x).real, np.fft.fft(x).imag], -1).reshape(3, 12)),
    Sample((_u(2, 1, 2, 5),), ref=lambda x, compute_size=128: np.stack(
        [np.fft.fft(x).real, np.fft.fft(x).imag], -1).reshape(2, 1, 2, 10))])
def _contrib_fft(data: Tensor, *, compute_size: int = 128) -> Tensor:
    """1-D FFT over the last axis of real data (..., d): output (..., 2d) with real and imaginary
    parts interleaved [re0, im0, re1, im1, ...] (MXNet's contrib.fft; compute_size is ignored)."""
    x = _complex_work(data)
    z = torch.fft.fft(x, dim=-1)
    out = torch.view_as_real(z).reshape(tuple(data.shape[:-1]) + (2 * data.shape[-1],))
    return out.to(data.dtype)


def _np_ifft(x, compute_size=128):
    z = x[..., 0::2] + 1j * x[..., 1::2]
    return (np.fft.ifft(z) * z.shape[-1]).real


@register("_contrib_ifft", samples=lambda: [
    Sample((_u(3, 8),), ref=_np_ifft), Sample((_u(2, 2, 1, 6),), ref=_np_ifft)])
def _contrib_ifft(data: Tensor, *, compute_size: int = 128) -> Tensor:
    """Inverse 1-D FFT over the last axis of interleaved complex data (..., 2d): output (..., d),
    the real part, *not* divided by d (MXNet's contrib.ifft, so ifft(fft(x)) == d * x)."""
    if data.shape[-1] % 2:
        raise MXNetError(f"ifft: the last dimension must be even (interleaved real/imaginary parts), "
                         f"got shape {tuple(data.shape)}")
    x = _complex_work(data)
    z = torch.view_as_complex(x.reshape(tuple(x.shape[:-1]) + (x.shape[-1] // 2, 2)).contiguous())
    d = z.shape[-1]
    return (torch.fft.ifft(z, dim=-1).real * d).to(data.dtype)


def _np_count_sketch(data, h, s, out_dim=0, processing_batch_size=32):
    out = np.zeros(data.shape[:-1] + (out_dim,), dtype=data.dtype)
    hh, ss = h.reshape(-1).astype(np.int64), s.reshape(-1)
    for i in range(data.shape[-1]):
        out[..., hh[i]] += ss[i] * data[..., i]
    return out


@register("_contrib_count_sketch", samples=lambda: [
    Sample((_u(3, 7), np.array([[0., 2., 4., 2., 1., 0., 3.]]),
            np.array([[1., -1., 1., 1., -1., -1., 1.]])), {"out_dim": 5}, ref=_np_count_sketch,
           grad_inputs=(0,))])
def _contrib_count_sketch(data: Tensor, h: Tensor, s: Tensor, *, out_dim: int,
                          processing_batch_size: int = 32) -> Tensor:
    """Count sketch of data (..., in_dim): out[..., h[i]] += s[i] * data[..., i], output
    (..., out_dim); h (1, in_dim) holds indices in [0, out_dim), s (1, in_dim) signs (MXNet's
    contrib.count_sketch; processing_batch_size is ignored). Gradient flows to data."""
    if h.numel() != data.shape[-1] or s.numel() != data.shape[-1]:
        raise MXNetError(f"count_sketch: h and s must hold one value per input feature ({data.shape[-1]}), "
                         f"got shapes {tuple(h.shape)} and {tuple(s.shape)}")
    out = data.new_zeros(tuple(data.shape[:-1]) + (int(out_dim),))
    if _meta(data):
        return out
    idx = h.detach().reshape(-1).to(torch.int64)
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= out_dim):
        raise MXNetError(f"count_sketch: hash indices must lie in [0, out_dim={out_dim}), got "
                         f"[{int(idx.min())}, {int(idx.max())}]")
    return out.index_add(-1, idx, data * s.detach().reshape(-1).to(data.dtype))


# ---- interleaved multi-head attention matmuls (GluonNLP's fused attention) --------------------
def _heads_split(t: Tensor, heads: int, parts: int, who: str) -> Tensor:
    """(L, B, heads * parts * d) -> (parts, B * heads, L, d)."""
    L, B, E = t.shape
    if E % (heads * parts):
        raise MXNetError(f"{who}: the last dimension {E} is not divisible by heads*{parts} = {heads * parts}")
    d = E // (heads * parts)
    return t.reshape(L, B, heads, parts, d).permute(3, 1, 2, 0, 4).reshape(parts, B * heads, L, d)


def _check_3d(t: Tensor, who: str, name: str) -> None:
    if t.dim() != 3:
        raise MXNetError(f"{who}: {name} must be 3-D (seq_length, batch, features), got {tuple(t.shape)}")


@register("_contrib_interleaved_matmul_selfatt_qk", samples=lambda: [
    Sample((_u(4, 2, 12),), {"heads": 2}, ref=lambda qkv, heads: _np_selfatt_qk(qkv, heads))])
def _contrib_interleaved_matmul_selfatt_qk(queries_keys_values: Tensor, *, heads: int) -> Tensor:
    """Scaled attention scores (B*heads, L, L) = q / sqrt(d) @ k^T from interleaved
    projections (L, B, heads * 3 * d) laid out as (heads, [q, k, v], d)."""
    _check_3d(queries_keys_values, "interleaved_matmul_selfatt_qk", "queries_keys_values")
    p = _heads_split(queries_keys_values, heads, 3, "interleaved_matmul_selfatt_qk")
    q, k = p[0], p[1]
    return torch.matmul(q / math.sqrt(q.shape[-1]), k.transpose(1, 2))


@register("_contrib_interleaved_matmul_selfatt_valatt", samples=lambda: [
    Sample((_u(4, 2, 12), _u(4, 4, 4)), {"heads": 2}, ref=lambda qkv, att, heads: _np_selfatt_val(qkv, att, heads))])
def _contrib_interleaved_matmul_selfatt_valatt(queries_keys_values: Tensor, attention: Tensor, *,
                                               heads: int) -> Tensor:
    """Attention-weighted values (L, B, heads * d) = attention (B*heads, L, L) @ v, v taken from
    interleaved projections (L, B, heads * 3 * d)."""
    _check_3d(queries_keys_values, "interleaved_matmul_selfatt_valatt", "queries_keys_values")
    L, B, _ = queries_keys_values.shape
    v = _heads_split(queries_keys_values, heads, 3, "interleaved_matmul_selfatt_valatt")[2]
    out = torch.matmul(attention, v)                                   # (B*heads, L, d)
    d = out.shape[-1]
    return out.reshape(B, heads, L, d).permute(2, 0, 1, 3).reshape(L, B, heads * d)


@register("_contrib_interleaved_matmul_encdec_qk", samples=lambda: [
    Sample((_u(3, 2, 6), _u(5, 2, 12)), {"heads": 2}, ref=lambda q, kv, heads: _np_encdec_qk(q, kv, heads))])
def _contrib_interleaved_matmul_encdec_qk(queries: Tensor, keys_values: Tensor, *, heads: int) -> Tensor:
    """Scaled scores (B*heads, Lq, Lk) = q / sqrt(d) @ k^T, queries (Lq, B, heads * d) and
    interleaved keys_values (Lk, B, heads * 2 * d) laid out as (heads, [k, v], d)."""
    _check_3d(queries, "interleaved_matmul_encdec_qk", "queries")
    _check_3d(keys_values, "interleaved_matmul_encdec_qk", "keys_values")
    q = _heads_split(queries, heads, 1, "interleaved_matmul_encdec_qk")[0]
    k = _heads_split(keys_values, heads, 2, "interleaved_matmul_encdec_qk")[0]
    return torch.matmul(q / math.sqrt(q.shape[-1]), k.transpose(1, 2))


@register("_contrib_interleaved_matmul_encdec_valatt", samples=lambda: [
    Sample((_u(5, 2, 12), _u(4, 3, 5)), {"heads": 2}, ref=lambda kv, att, heads: _np_encdec_val(kv, att, heads))])
def _contrib_interleaved_matmul_encdec_valatt(keys_values: Tensor, attention: Tensor, *, heads: int) -> Tensor:
    """Attention-weighted values (Lq, B, heads * d) = attention (B*heads, Lq, Lk) @ v, v taken
    from interleaved keys_values (Lk, B, heads * 2 * d)."""
    _check_3d(keys_values, "interleaved_matmul_encdec_valatt", "keys_values")
    _, B, _ = keys_values.shape
    v = _heads_split(keys_values, heads, 2, "interleaved_matmul_encdec_valatt")[1]
    out = torch.matmul(attention, v)                                   # (B*heads, Lq, d)
    Lq, d = out.shape[1], out.shape[2]
    return out.reshape(B, heads, Lq, d).permute(2, 0, 1, 3).reshape(Lq, B, heads * d)


def _np_proj(t, heads, parts, which):
    L, B, E = t.shape
    d = E // (heads * parts)
    return t.reshape(L, B, heads, parts, d)[:, :, :, which, :]          # (L, B, heads, d)


def _np_selfatt_qk(qkv, heads):
    q, k = _np_proj(qkv, heads, 3, 0), _np_proj(qkv, heads, 3, 1)
    L, B, _, d = q.shape
    out = np.einsum("ibhd,jbhd->bhij", q / np.sqrt(d), k)
    return out.reshape(B * heads, L, L)


def _np_selfatt_val(qkv, att, heads):
    v = _np_proj(qkv, heads, 3, 2)
    L, B, _, d = v.shape
    out = np.einsum("bhij,jbhd->ibhd", att.reshape(B, heads, L, L), v)
    return out.reshape(L, B, heads * d)


def _np_encdec_qk(q, kv, heads):
    qq, k = _np_proj(q, heads, 1, 0), _np_proj(kv, heads, 2, 0)
    Lq, B, _, d = qq.shape
    return np.einsum("ibhd,jbhd->bhij", qq / np.sqrt(d), k).reshape(B * heads, Lq, k.shape[0])


def _np_encdec_val(kv, att, heads):
    v = _np_proj(kv, heads, 2, 1)
    Lk, B, _, d = v.shape
    Lq = att.shape[1]
    out = np.einsum("bhij,jbhd->ibhd", att.reshape(B, heads, Lq, Lk), v)
    return out.reshape(Lq, B, heads * d)


# ---- PSROIPooling (R-FCN) ---------------------------------------------------------------------
def _psroi_bins(roi: list, spatial_scale: float, pooled: int, H: int, W: int) -> list:
    """[(ph, pw, h0, h1, w0, w1)] for one roi [b, x1, y1, x2, y2] (MXNet's rounding and clipping)."""
    sw, sh = round(roi[1]) * spatial_scale, round(roi[2]) * spatial_scale
    ew, eh = (round(roi[3]) + 1.0) * spatial_scale, (round(roi[4]) + 1.0) * spatial_scale
    bh, bw = max(eh - sh, 0.1) / pooled, max(ew - sw, 0.1) / pooled
    bins = []
    for ph in range(pooled):
        for pw in range(pooled):
            h0 = min(max(math.floor(ph * bh + sh), 0), H)
            h1 = min(max(math.ceil((ph + 1) * bh + sh), 0), H)
            w0 = min(max(math.floor(pw * bw + sw), 0), W)
            w1 = min(max(math.ceil((pw + 1) * bw + sw), 0), W)
            bins.append((ph, pw, h0, h1, w0, w1))
    return bins


def _np_psroipool(data, rois, spatial_scale=1.0, output_dim=1, pooled_size=1, group_size=0):  # type: ignore[no-untyped-def]
    gs = group_size or pooled_size
    N, C, H, W = data.shape
    out = np.zeros((rois.shape[0], output_dim, pooled_size, pooled_size), dtype=data.dtype)
    for r, roi in enumerate(rois.tolist()):
        for ph, pw, h0, h1, w0, w1 in _psroi_bins(roi, spatial_scale, pooled_size, H, W):
            if h1 <= h0 or w1 <= w0:
                continue
            gh, gw = min(ph * gs // pooled_size, gs - 1), min(pw * gs // pooled_size, gs - 1)
            for c in range(output_dim):
                out[r, c, ph, pw] = data[int(roi[0]), (c * gs + gh) * gs + gw, h0:h1, w0:w1].mean()
    return out


@register("_contrib_PSROIPooling", samples=lambda: [
    Sample((np.random.RandomState(41).rand(1, 8, 6, 7), np.array([[0, 3, 5, 60, 80], [0, 0, 0, 30, 20.]])),
           {"spatial_scale": 0.0625, "output_dim": 2, "pooled_size": 2}, ref=_np_psroipool, grad_inputs=(0,)),
    Sample((np.random.RandomState(42).rand(2, 18, 5, 5), np.array([[1, 1, 1, 3, 4.]])),
           {"spatial_scale": 1.0, "output_dim": 2, "pooled_size": 3}, ref=_np_psroipool, grad_inputs=(0,))])
def _contrib_PSROIPooling(data: Tensor, rois: Tensor, *, spatial_scale: float, output_dim: int,
                          pooled_size: int, group_size: int = 0) -> Tensor:
    """Position-sensitive ROI average pooling (R-FCN): bin (i, j) of output channel c averages
    input channel (c * g + gi) * g + gj over the bin, g = group_size (default pooled_size).
    rois (R, 5) = [batch_index, x1, y1, x2, y2] in image pixels; empty bins give 0; rois get
    no gradient. Output (R, output_dim, pooled_size, pooled_size)."""
    gs = group_size or pooled_size
    N, C, H, W = data.shape
    R = rois.shape[0]
    if C != output_dim * gs * gs:
        raise MXNetError(f"PSROIPooling: data has {C} channels; expected output_dim * group_size^2 = "
                         f"{output_dim} * {gs}^2 = {output_dim * gs * gs}")
    if data.device.type == "meta":
        return torch.empty((R, output_dim, pooled_size, pooled_size), dtype=data.dtype, device="meta")
    zero = data.new_zeros((output_dim,))
    outs = []
    for roi in rois.detach().to("cpu", torch.float64).tolist():
        b = int(roi[0])
        cells = []
        for ph, pw, h0, h1, w0, w1 in _psroi_bins(roi, spatial_scale, pooled_size, H, W):
            if h1 <= h0 or w1 <= w0:
                cells.append(zero)
                continue
            gh, gw = min(ph * gs // pooled_size, gs - 1), min(pw * gs // pooled_size, gs - 1)
            channels = torch.arange(output_dim, device=data.device) * gs * gs + gh * gs + gw
            cells.append(data[b, channels, h0:h1, w0:w1].mean(dim=(1, 2)))
        outs.append(torch.stack(cells, 1).reshape(output_dim, pooled_size, pooled_size))
    return torch.stack(outs) if outs else data.new_zeros((0, output_dim, pooled_size, pooled_size))
