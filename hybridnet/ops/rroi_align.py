"""MXNet's ``_contrib_RROIAlign``: ROI Align over rotated boxes (text detection, RRPN).

A roi is ``[batch_index, centre_x, centre_y, width, height, angle in degrees]`` in image
pixels; ``spatial_scale`` maps it onto the feature map, where width and height are at least 1.
Bin (ph, pw) of the (pooled_h, pooled_w) grid averages ``sampling_ratio`` x ``sampling_ratio``
points (or ceil(size / pooled) per axis when sampling_ratio <= 0) placed on the unrotated box
around its centre, then rotated by the angle: ``x = xx cos + yy sin + cx``,
``y = yy cos - xx sin + cy``. Points beyond one pixel outside the map read 0; the others are
clamped into it and read bilinearly. MXNet has no backward for this operator; here the data
gets the gradient of the bilinear reads (the rois get none).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from ..base import MXNetError
from ._helpers import per_dim
from .attrs import Shape
from .contrib import np_roi_bilinear
from .registry import Sample, register


def bilinear_points(plane: Tensor, y: Tensor, x: Tensor) -> Tensor:
    """Reads of ``plane`` (C, H, W) at points y, x (any shape S): (C, *S), with MXNet's ROI Align
    rule: 0 beyond [-1, H] x [-1, W], coordinates clamped to >= 0 and to the last row/column."""
    C, H, W = plane.shape
    outside = (y < -1.0) | (y > H) | (x < -1.0) | (x > W)
    y, x = y.clamp(min=0), x.clamp(min=0)
    y0, x0 = y.floor().clamp(max=H - 1), x.floor().clamp(max=W - 1)
    y = torch.where(y0 >= H - 1, y0, y)
    x = torch.where(x0 >= W - 1, x0, x)
    y1, x1 = (y0 + 1).clamp(max=H - 1), (x0 + 1).clamp(max=W - 1)
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    flat = plane.reshape(C, H * W)

    def at(yy: Tensor, xx: Tensor) -> Tensor:
        idx = (yy * W + xx).to(torch.int64).reshape(-1)
        return flat[:, idx].reshape((C,) + tuple(y.shape))
    val = hy * hx * at(y0, x0) + hy * lx * at(y0, x1) + ly * hx * at(y1, x0) + ly * lx * at(y1, x1)
    return torch.where(outside, torch.zeros((), dtype=val.dtype), val)


@register("_contrib_RROIAlign", samples=lambda: _samples())
def _contrib_RROIAlign(data: Tensor, rois: Tensor, *, pooled_size: Shape, spatial_scale: float,
                       sampling_ratio: int = -1) -> Tensor:
    """Rotated ROI Align of NCHW data over rois (R, 6) = [batch_index, cx, cy, w, h, degrees]:
    output (R, C, pooled_h, pooled_w) (see the module docstring)."""
    ph, pw = per_dim(pooled_size, 2, 1, "pooled_size", "RROIAlign")
    if data.dim() != 4:
        raise MXNetError(f"RROIAlign: data must be 4-D (N, C, H, W), got shape {tuple(data.shape)}")
    if rois.dim() != 2 or rois.shape[1] != 6:
        raise MXNetError(f"RROIAlign: rois must be (num_rois, 6) = [batch_index, cx, cy, w, h, angle], "
                         f"got shape {tuple(rois.shape)}")
    N, C, H, W = data.shape
    if data.device.type == "meta":
        return torch.empty((rois.shape[0], C, ph, pw), dtype=data.dtype, device="meta")
    dt = data.dtype
    outs = []
    for roi in rois.detach().to("cpu").tolist():
        b = int(roi[0])
        if not 0 <= b < N:
            raise MXNetError(f"RROIAlign: roi batch index {b} is outside the batch of {N}")
        cx, cy, rw, rh = (torch.tensor(v, dtype=dt) * spatial_scale for v in roi[1:5])
        theta = torch.tensor(roi[5] * math.pi / 180.0, dtype=dt)
        rw, rh = rw.clamp(min=1.0), rh.clamp(min=1.0)
        bin_h, bin_w = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else int(math.ceil(float(rh) / ph))
        gw = sampling_ratio if sampling_ratio > 0 else int(math.ceil(float(rw) / pw))
        iy = torch.arange(gh, dtype=dt) + 0.5
        ix = torch.arange(gw, dtype=dt) + 0.5
        yy = (-rh / 2) + torch.arange(ph, dtype=dt)[:, None] * bin_h + iy[None, :] * bin_h / gh   # (ph, gh)
        xx = (-rw / 2) + torch.arange(pw, dtype=dt)[:, None] * bin_w + ix[None, :] * bin_w / gw   # (pw, gw)
        yy, xx = yy[:, None, :, None], xx[None, :, None, :]                                       # (ph, pw, gh, gw)
        cos, sin = torch.cos(theta), torch.sin(theta)
        x = xx * cos + yy * sin + cx
        y = yy * cos - xx * sin + cy
        vals = bilinear_points(data[b], y.to(data.device), x.to(data.device))          # (C, ph, pw, gh, gw)
        outs.append(vals.sum(dim=(-2, -1)) / (gh * gw))
    if not outs:
        return data.new_zeros((0, C, ph, pw))
    return torch.stack(outs)


def _np_rroi_align(data, rois, pooled_size=(1, 1), spatial_scale=1.0, sampling_ratio=-1):  # type: ignore[no-untyped-def]
    """Point by point reference (after MXNet's test_op_rroi_align)."""
    N, C, H, W = data.shape
    PH, PW = pooled_size
    out = np.zeros((rois.shape[0], C, PH, PW))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        cx, cy, rw, rh = roi[1:5] * spatial_scale
        th = roi[5] * np.pi / 180
        rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / PH))
        gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / PW))
        for c in range(C):
            for i in range(PH):
                for j in range(PW):
                    acc = 0.0
                    for a in range(gh):
                        yy = -rh / 2 + i * rh / PH + (a + 0.5) * rh / PH / gh
                        for k in range(gw):
                            xx = -rw / 2 + j * rw / PW + (k + 0.5) * rw / PW / gw
                            acc += np_roi_bilinear(data[b, c], yy * np.cos(th) - xx * np.sin(th) + cy,
                                        xx * np.cos(th) + yy * np.sin(th) + cx)
                    out[r, c, i, j] = acc / (gh * gw)
    return out


def _samples() -> list:
    r = np.random.RandomState(5)
    data = r.rand(2, 3, 7, 8)
    rois = np.array([[0, 3.2, 2.9, 4.1, 3.3, 30.0], [1, 6.1, 4.4, 9.0, 2.2, 125.0],
                     [1, 0.4, 6.6, 0.5, 0.7, -40.0], [0, 7.5, 1.0, 12.0, 9.0, 270.0]])
    return [Sample((data, rois), {"pooled_size": (2, 3), "spatial_scale": 1.0}, ref=_np_rroi_align,
                   grad_inputs=(0,)),
            Sample((data, rois * np.array([1, 2, 2, 2, 2, 1])), {"pooled_size": (3, 2), "spatial_scale": 0.5,
                                                                 "sampling_ratio": 2},
                   ref=_np_rroi_align, grad_inputs=(0,))]
