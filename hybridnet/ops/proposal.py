"""MXNet's RPN region proposals: ``_contrib_Proposal`` (one image) and ``_contrib_MultiProposal``
(a batch), as Faster R-CNN's proposal layer.

Per image: anchors from ``scales`` x ``ratios`` around a ``feature_stride`` square, shifted over
the (H, W) feature map (index ``(h * W + w) * A + a``), scored by the foreground half of
``cls_prob``; moved by ``bbox_pred`` deltas (centre/size deltas, or corner offsets with
``iou_loss``); clipped to ``im_info`` (height, width); anchors of the padded part of the map
(beyond ``im_info / feature_stride``) and boxes narrower or lower than ``rpn_min_size *
im_info[2]`` get score -1 (the small ones also grow by that size); a stable descending sort
keeps ``rpn_pre_nms_top_n``; greedy NMS (IoU with MXNet's +1 pixel areas, suppress when
> ``threshold``) keeps up to ``rpn_post_nms_top_n``; when fewer survive, the kept boxes repeat
cyclically to fill the rows. Output rows are ``[image index, x1, y1, x2, y2]``; ``output_score``
also shows the (post_nms, 1) scores. Arithmetic is single precision as in MXNet. The outputs
carry no gradient: an Executor's backward writes zeros to the inputs' gradients (MXNet's
backward writes zeros and reads no output gradient, so any head gradient is accepted).

The NMS finds the pairs of boxes that can overlap by more than the threshold without comparing
all pairs (boxes are bucketed by size and swept by centre), then resolves the greedy order on
that sparse graph with vectorized passes.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..base import MXNetError
from ._helpers import fill_shape, floats
from .attrs import AnyValue
from .registry import Sample, register

_F32 = np.float32


# ---- anchors and boxes -------------------------------------------------------------------------
def base_anchors(feature_stride: int, scales: tuple, ratios: tuple) -> np.ndarray:
    """(len(ratios) * len(scales), 4) anchors around the square [0, feature_stride - 1], ratio
    major, with MXNet's rounding of the widths and heights."""
    side = _F32(feature_stride)
    ctr = _F32(0.5 * (float(side) - 1.0))
    rows = []
    for r in ratios:
        for s in scales:
            r32, s32 = _F32(r), _F32(s)
            size_ratio = np.floor(side * side / r32)
            w = np.floor(np.sqrt(size_ratio) + _F32(0.5)) * s32
            h = np.floor(w / s32 * r32 + _F32(0.5)) * s32
            rows.append([ctr - _F32(0.5) * (w - 1), ctr - _F32(0.5) * (h - 1),
                         ctr + _F32(0.5) * (w - 1), ctr + _F32(0.5) * (h - 1)])
    return np.array(rows, dtype=_F32)


def shifted_anchors(base: np.ndarray, height: int, width: int, feature_stride: int) -> np.ndarray:
    """(height * width * A, 4) anchors, index (h * width + w) * A + a."""
    sx = np.arange(width, dtype=_F32) * _F32(feature_stride)
    sy = np.arange(height, dtype=_F32) * _F32(feature_stride)
    shift = np.stack(np.broadcast_arrays(sx[None, :], sy[:, None], sx[None, :], sy[:, None]), axis=-1)
    return (base[None, None, :, :] + shift[:, :, None, :]).reshape(-1, 4)


def _half_off(centre: np.ndarray, size: np.ndarray, sign: float) -> np.ndarray:
    """centre +- 0.5 * (size - 1), evaluated in double and rounded once, as MXNet's C++ does."""
    return (centre.astype(np.float64) + sign * 0.5 * (size.astype(np.float64) - 1.0)).astype(_F32)


def decode_boxes(anchors: np.ndarray, deltas: np.ndarray, iou_loss: bool) -> np.ndarray:
    """Boxes (n, 4) from anchors (n, 4) and deltas (n, 4) in float32."""
    if iou_loss:
        return anchors + deltas
    w = (anchors[:, 2].astype(np.float64) - anchors[:, 0] + 1.0).astype(_F32)
    h = (anchors[:, 3].astype(np.float64) - anchors[:, 1] + 1.0).astype(_F32)
    cx = (anchors[:, 0] + 0.5 * (w.astype(np.float64) - 1.0)).astype(_F32)
    cy = (anchors[:, 1] + 0.5 * (h.astype(np.float64) - 1.0)).astype(_F32)
    pcx = deltas[:, 0] * w + cx
    pcy = deltas[:, 1] * h + cy
    pw = np.exp(deltas[:, 2]) * w
    ph = np.exp(deltas[:, 3]) * h
    return np.stack([_half_off(pcx, pw, -1), _half_off(pcy, ph, -1),
                     _half_off(pcx, pw, 1), _half_off(pcy, ph, 1)], axis=1)


# ---- NMS -------------------------------------------------------------------------------------
class _Boxes:
    """Columns and +1-pixel areas of boxes (n, 4) in float32, and their pairwise overlap test."""

    def __init__(self, boxes: np.ndarray, thresh: float):
        self.x1, self.y1, self.x2, self.y2 = (np.ascontiguousarray(boxes[:, i]) for i in range(4))
        self.area = (self.x2 - self.x1 + 1) * (self.y2 - self.y1 + 1)
        self.thresh = _F32(thresh)

    def over(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """IoU(i, j) > thresh for broadcastable index arrays, in MXNet's float32 formula."""
        w = np.minimum(self.x2[i], self.x2[j]) - np.maximum(self.x1[i], self.x1[j]) + 1
        h = np.minimum(self.y2[i], self.y2[j]) - np.maximum(self.y1[i], self.y1[j]) + 1
        inter = np.maximum(w, 0) * np.maximum(h, 0)
        with np.errstate(invalid="ignore", divide="ignore"):   # degenerate boxes: as MXNet's floats
            return inter / (self.area[i] + self.area[j] - inter) > self.thresh


class _AllPairs:
    """Every (query, member) pair: the candidate pairs for any threshold and box geometry."""
    block = 256

    def pairs(self, query: np.ndarray, members: np.ndarray) -> tuple:
        return np.repeat(query, members.size), np.tile(members, query.size)


class _SizeCentreBuckets:
    """Candidate pairs that include every pair with IoU > thresh (0 < thresh < 1), far fewer
    than all pairs.

    IoU > t needs width and height ratios > t, so log sizes fall in neighbouring buckets of
    width log(1/t), and centres closer than (1 - t) times the larger size. Members are sorted
    by (size bucket, centre x); each query box looks up, in each of the 9 neighbouring buckets,
    the members whose centre x is within reach (bounded by the buckets' largest width), then keeps
    those whose centre y is within the reach of the buckets' largest height.
    """
    block = 2048

    def __init__(self, boxes: np.ndarray, thresh: float):
        b = boxes.astype(np.float64)
        w, h = b[:, 2] - b[:, 0] + 1, b[:, 3] - b[:, 1] + 1
        self.cx = b[:, 0] + w / 2 - b[:, 0].min()
        self.cy = b[:, 1] + h / 2
        self.thresh = thresh
        self.step = np.log(1.0 / thresh) * (1 + 1e-6)
        self.kw = np.floor(np.log(w) / self.step).astype(np.int64)   # w in [e^(kw*step), e^((kw+1)*step))
        self.kh = np.floor(np.log(h) / self.step).astype(np.int64)
        self.rows = int(self.kh.max() - self.kh.min()) + 3
        self.bucket = (self.kw - self.kw.min() + 1) * self.rows + (self.kh - self.kh.min() + 1)
        self.stride = float(self.cx.max()) + 2 * float(self._reach(self.kw.max() + 2)) + 1.0
        self.key = self.bucket * self.stride + self.cx      # buckets never mix

    def _reach(self, k: "np.ndarray | int") -> np.ndarray:
        """Largest centre distance of an overlapping pair whose larger size is below e^(k*step)."""
        return (1 - self.thresh) * np.exp(np.asarray(k) * self.step) * (1 + 1e-5) + 1e-2

    def pairs(self, query: np.ndarray, members: np.ndarray) -> tuple:
        order = np.argsort(self.key[members], kind="stable")
        members = members[order]
        sorted_key = self.key[members]
        qs, ms = [], []
        kw, kh, cy = self.kw[query], self.kh[query], self.cy[query]
        for dw in (-1, 0, 1):
            rx = self._reach(np.maximum(kw, kw + dw) + 1)
            for dh in (-1, 0, 1):
                ry = self._reach(np.maximum(kh, kh + dh) + 1)
                centre = (self.bucket[query] + dw * self.rows + dh) * self.stride + self.cx[query]
                lo = np.searchsorted(sorted_key, centre - rx, side="left")
                counts = np.searchsorted(sorted_key, centre + rx, side="right") - lo
                total = int(counts.sum())
                if total == 0:
                    continue
                m = members[np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(total)]
                near = np.abs(self.cy[m] - np.repeat(cy, counts)) < np.repeat(ry, counts)
                qs.append(np.repeat(query, counts)[near])
                ms.append(m[near])
        if not qs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(qs), np.concatenate(ms)


def _resolve_greedy(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Greedy NMS on a suppression graph (edges src < dst): box j survives unless a surviving
    box i < j has an edge to it. Iterates ``alive[j] = no alive source`` to its fixed point;
    a pass that changes nothing before index p has settled [0, p) for good, so each pass only
    revisits the edges that end at or after the first change."""
    alive = np.ones(n, dtype=bool)
    order = np.argsort(dst, kind="stable")
    src, dst = src[order], dst[order]
    settled = 0
    while settled < n:
        first_edge = np.searchsorted(dst, settled)
        s, d = src[first_edge:], dst[first_edge:]
        hit = np.zeros(n, dtype=bool)
        hit[d[alive[s]]] = True
        new = ~hit[settled:]
        changed = np.flatnonzero(new != alive[settled:])
        alive[settled:] = new
        if changed.size == 0:
            break
        settled += int(changed[0]) + 1
    return alive


def greedy_nms(boxes: np.ndarray, thresh: float, max_keep: int) -> np.ndarray:
    """Indices kept by MXNet's proposal NMS over boxes (n, 4) float32 sorted by score: box j is
    dropped when a kept box i < j overlaps it with IoU > thresh; stops after ``max_keep``.

    Blocks of candidates are first checked against the boxes kept so far, then resolved among
    themselves; only candidate pairs (see ``_SizeCentreBuckets``) are compared."""
    n = boxes.shape[0]
    if n == 0 or max_keep <= 0:
        return np.zeros(0, dtype=np.int64)
    cols = _Boxes(boxes, thresh)
    sizes_ok = bool(np.all(boxes[:, 2] - boxes[:, 0] + 1 > 0) and np.all(boxes[:, 3] - boxes[:, 1] + 1 > 0))
    finder = (_SizeCentreBuckets(boxes, thresh) if 0 < thresh < 1 and sizes_ok and np.isfinite(boxes).all()
              else _AllPairs())
    kept = np.zeros(0, dtype=np.int64)
    for start in range(0, n, finder.block):
        cand = np.arange(start, min(n, start + finder.block))
        if kept.size:
            q, m = finder.pairs(cand, kept)
            beaten = np.zeros(cand.size, dtype=bool)
            beaten[q[cols.over(q, m)] - start] = True
            cand = cand[~beaten]
        q, m = finder.pairs(cand, cand)
        later = q > m
        q, m = q[later], m[later]
        hit = cols.over(m, q)
        src, dst = np.searchsorted(cand, m[hit]), np.searchsorted(cand, q[hit])
        kept = np.concatenate([kept, cand[_resolve_greedy(cand.size, src, dst)]])
        if kept.size >= max_keep:
            break
    return kept[:max_keep]


# ---- the operators ----------------------------------------------------------------------------
def _checks(who: str, cls_prob: Tensor, bbox_pred: Tensor, im_info: Tensor, n_anchors: int) -> None:
    if cls_prob.dim() != 4 or cls_prob.shape[1] != 2 * n_anchors:
        raise MXNetError(f"{who}: cls_prob must be (batch, 2 * num_anchors, H, W) with num_anchors = "
                         f"len(scales) * len(ratios) = {n_anchors}, got shape {tuple(cls_prob.shape)}")
    n, _, hh, ww = cls_prob.shape
    if tuple(bbox_pred.shape) != (n, 4 * n_anchors, hh, ww):
        raise MXNetError(f"{who}: bbox_pred must have shape {(n, 4 * n_anchors, hh, ww)}, got "
                         f"{tuple(bbox_pred.shape)}")
    if tuple(im_info.shape) != (n, 3):
        raise MXNetError(f"{who}: im_info must have shape {(n, 3)} (height, width, scale per image), "
                         f"got {tuple(im_info.shape)}")


def _propose_image(anchors: np.ndarray, fg_score: np.ndarray, deltas: np.ndarray, info: np.ndarray,
                   a: dict) -> tuple:
    """(rows (post, 4) boxes, (post,) scores) for one image; fg_score (A, H, W), deltas (4A, H, W)."""
    n_anchor, height, width = fg_score.shape
    stride = a["feature_stride"]
    scores = fg_score.transpose(1, 2, 0).reshape(-1).copy()
    d = deltas.reshape(n_anchor, 4, height, width).transpose(2, 3, 0, 1).reshape(-1, 4)
    boxes = decode_boxes(anchors, d, a["iou_loss"])
    im_h, im_w, im_scale = (_F32(v) for v in info)
    real_h, real_w = int(im_h / _F32(stride)), int(im_w / _F32(stride))
    if real_h > height or real_w > width:
        raise MXNetError(f"Proposal: im_info ({float(im_h)}, {float(im_w)}) / feature_stride {stride} "
                         f"is larger than the {height}x{width} feature map")
    hi = np.array([im_w, im_h, im_w, im_h], dtype=_F32) - 1
    boxes = np.maximum(np.minimum(boxes, hi), _F32(0))
    hw = np.indices((height, width)).reshape(2, height, width, 1)
    padded = ((hw[0] >= real_h) | (hw[1] >= real_w)) & np.ones((1, 1, 1, n_anchor), dtype=bool)
    scores[padded.reshape(-1)] = -1
    min_size = _F32(a["rpn_min_size"]) * im_scale
    small = ((boxes[:, 2] - boxes[:, 0] + 1 < min_size) | (boxes[:, 3] - boxes[:, 1] + 1 < min_size))
    boxes[small] += np.array([-1, -1, 1, 1], dtype=_F32) * (min_size / _F32(2))
    scores[small] = -1
    count = scores.size
    pre = min(a["rpn_pre_nms_top_n"] if a["rpn_pre_nms_top_n"] > 0 else count, count)
    post = a["rpn_post_nms_top_n"]
    order = np.argsort(-scores, kind="stable")[:pre]
    boxes, scores = boxes[order], scores[order]
    keep = greedy_nms(boxes, a["threshold"], min(post, pre))
    rows = keep[np.arange(post) % keep.size]
    return boxes[rows], scores[rows]


def _proposals(who: str, cls_prob: Tensor, bbox_pred: Tensor, im_info: Tensor, a: dict) -> tuple:
    """(rois (batch * post, 5), scores (batch * post, 1)) in cls_prob's dtype and device."""
    scales = floats(a["scales"], who, "scales")
    ratios = floats(a["ratios"], who, "ratios")
    _checks(who, cls_prob, bbox_pred, im_info, len(scales) * len(ratios))
    batch, _, height, width = cls_prob.shape
    post = a["rpn_post_nms_top_n"]
    dtype, device = cls_prob.dtype, cls_prob.device
    if device.type == "meta":
        return (torch.empty((batch * post, 5), dtype=dtype, device=device),
                torch.empty((batch * post, 1), dtype=dtype, device=device))
    if post <= 0:
        raise MXNetError(f"{who}: rpn_post_nms_top_n must be positive, got {post}")
    anchors = shifted_anchors(base_anchors(a["feature_stride"], scales, ratios), height, width,
                              a["feature_stride"])
    prob, deltas, info = (t.detach().cpu().numpy().astype(_F32) for t in (cls_prob, bbox_pred, im_info))
    rois, scores = [], []
    n_anchor = len(scales) * len(ratios)
    for b in range(batch):
        boxes, score = _propose_image(anchors, prob[b, n_anchor:], deltas[b], info[b], a)
        rois.append(np.concatenate([np.full((post, 1), b, dtype=_F32), boxes], axis=1))
        scores.append(score[:, None])
    return (torch.from_numpy(np.concatenate(rois)).to(device=device, dtype=dtype),
            torch.from_numpy(np.concatenate(scores)).to(device=device, dtype=dtype))


def _np_proposal(cls_prob, bbox_pred, im_info, rpn_pre_nms_top_n=6000, rpn_post_nms_top_n=300,  # type: ignore[no-untyped-def]
                 threshold=0.7, rpn_min_size=16, scales=(4.0, 8.0, 16.0, 32.0), ratios=(0.5, 1.0, 2.0),
                 feature_stride=16, output_score=False, iou_loss=False):
    """Box by box reference (loops, a plain greedy NMS) in float32, as MXNet's CPU code."""
    f = _F32
    batch, two_a, height, width = cls_prob.shape
    na = two_a // 2
    base = []
    side = f(feature_stride)
    for r in ratios:
        for s in scales:
            sr = np.floor(side * side / f(r))
            w = np.floor(np.sqrt(sr) + f(0.5)) * f(s)
            h = np.floor(w / f(s) * f(r) + f(0.5)) * f(s)
            c = f(0.5 * (float(side) - 1))
            base.append([c - f(0.5) * (w - 1), c - f(0.5) * (h - 1), c + f(0.5) * (w - 1), c + f(0.5) * (h - 1)])
    out_rows, out_scores = [], []
    for b in range(batch):
        im_h, im_w, im_s = (f(v) for v in im_info[b])
        rh, rw = int(im_h / f(feature_stride)), int(im_w / f(feature_stride))
        dets = []
        for y in range(height):
            for x in range(width):
                for k in range(na):
                    x1, y1, x2, y2 = (f(v) for v in base[k])
                    x1, x2 = x1 + f(x * feature_stride), x2 + f(x * feature_stride)
                    y1, y2 = y1 + f(y * feature_stride), y2 + f(y * feature_stride)
                    d = [f(v) for v in bbox_pred[b, 4 * k:4 * k + 4, y, x]]
                    if iou_loss:
                        box = [x1 + d[0], y1 + d[1], x2 + d[2], y2 + d[3]]
                    else:
                        w, h = f(float(x2) - float(x1) + 1.0), f(float(y2) - float(y1) + 1.0)
                        cx, cy = f(float(x1) + 0.5 * (float(w) - 1)), f(float(y1) + 0.5 * (float(h) - 1))
                        pcx, pcy = d[0] * w + cx, d[1] * h + cy
                        pw, ph = np.exp(d[2]) * w, np.exp(d[3]) * h
                        box = [f(float(pcx) - 0.5 * (float(pw) - 1)), f(float(pcy) - 0.5 * (float(ph) - 1)),
                               f(float(pcx) + 0.5 * (float(pw) - 1)), f(float(pcy) + 0.5 * (float(ph) - 1))]
                    box = [max(min(box[0], im_w - 1), f(0)), max(min(box[1], im_h - 1), f(0)),
                           max(min(box[2], im_w - 1), f(0)), max(min(box[3], im_h - 1), f(0))]
                    score = f(cls_prob[b, na + k, y, x])
                    if y >= rh or x >= rw:
                        score = f(-1)
                    ms = f(rpn_min_size) * im_s
                    if box[2] - box[0] + 1 < ms or box[3] - box[1] + 1 < ms:
                        box = [box[0] - ms / 2, box[1] - ms / 2, box[2] + ms / 2, box[3] + ms / 2]
                        score = f(-1)
                    dets.append(box + [score])
        pre = rpn_pre_nms_top_n if rpn_pre_nms_top_n > 0 else len(dets)
        pre = min(pre, len(dets))
        dets = sorted(dets, key=lambda r: -r[4])[:pre]
        area = [(d[2] - d[0] + 1) * (d[3] - d[1] + 1) for d in dets]
        keep, dead = [], [False] * len(dets)
        for i in range(len(dets)):
            if len(keep) >= min(rpn_post_nms_top_n, pre):
                break
            if dead[i]:
                continue
            keep.append(i)
            for j in range(i + 1, len(dets)):
                w = max(f(0), min(dets[i][2], dets[j][2]) - max(dets[i][0], dets[j][0]) + 1)
                h = max(f(0), min(dets[i][3], dets[j][3]) - max(dets[i][1], dets[j][1]) + 1)
                if w * h / (area[i] + area[j] - w * h) > f(threshold):
                    dead[j] = True
        for i in range(rpn_post_nms_top_n):
            d = dets[keep[i % len(keep)]]
            out_rows.append([b] + d[:4])
            out_scores.append([d[4]])
    rows, scores = np.array(out_rows, dtype=np.float64), np.array(out_scores, dtype=np.float64)
    return (rows, scores) if output_score else rows


def _samples(batch: int) -> list:
    r = np.random.RandomState(7 + batch)
    prob = r.rand(batch, 6, 5, 6)
    deltas = (r.rand(batch, 12, 5, 6) - 0.5) * 0.6
    info = np.array([[70, 90, 1.0], [64, 80, 0.5], [75, 96, 0.8]])[:batch]
    return [
        Sample((prob, deltas, info), {"scales": (2.0, 4.0, 8.0), "ratios": (1.0,), "rpn_min_size": 4,
                                      "rpn_pre_nms_top_n": 40, "rpn_post_nms_top_n": 12, "output_score": True},
               ref=_np_proposal, grad=False),
        Sample((prob[:, :4], np.abs(deltas[:, :8]) * 20 - 4, info),
               {"scales": (4.0,), "ratios": (0.5, 2.0), "iou_loss": True, "threshold": 0.3,
                "feature_stride": 16, "rpn_post_nms_top_n": 50, "rpn_min_size": 8},
               ref=_np_proposal, grad=False)]


def _input_shapes(attrs: dict, shapes: list) -> list:
    """bbox_pred (N, 2 * C, H, W) and im_info (N, 3) from cls_prob (N, C, H, W), as MXNet infers."""
    d = shapes[0]
    if d is None or len(d) != 4 or not all(d):
        return list(shapes)
    return [tuple(d), fill_shape(shapes[1], (d[0], d[1] * 2, d[2], d[3])), fill_shape(shapes[2], (d[0], 3))]


def _n_outputs(attrs: dict) -> int:
    return 2 if attrs.get("output_score", False) else 1


@register("_contrib_Proposal", num_outputs=_n_outputs, total_outputs=2, output_names=("output", "score"),
          param_shapes=_input_shapes, differentiable=False, samples=lambda: _samples(1))
def _contrib_Proposal(cls_prob: Tensor, bbox_pred: Tensor, im_info: Tensor, *, rpn_pre_nms_top_n: int = 6000,
                      rpn_post_nms_top_n: int = 300, threshold: float = 0.7, rpn_min_size: int = 16,
                      scales: AnyValue = (4.0, 8.0, 16.0, 32.0), ratios: AnyValue = (0.5, 1.0, 2.0),
                      feature_stride: int = 16, output_score: bool = False, iou_loss: bool = False) -> Any:
    """RPN region proposals of one image (see the module docstring): rois (post, 5) rows
    [0, x1, y1, x2, y2] and scores (post, 1). Inputs: cls_prob (1, 2A, H, W) background then
    foreground scores, bbox_pred (1, 4A, H, W), im_info (1, 3) = (height, width, scale), with
    A = len(scales) * len(ratios)."""
    if cls_prob.dim() == 4 and cls_prob.shape[0] != 1:
        raise MXNetError(f"Proposal: takes one image (batch 1), got batch {cls_prob.shape[0]}; "
                         "use MultiProposal for a batch")
    rois, score = _proposals("Proposal", cls_prob, bbox_pred, im_info, dict(
        rpn_pre_nms_top_n=rpn_pre_nms_top_n, rpn_post_nms_top_n=rpn_post_nms_top_n, threshold=threshold,
        rpn_min_size=rpn_min_size, scales=scales, ratios=ratios, feature_stride=feature_stride,
        iou_loss=iou_loss))
    return (rois, score) if output_score else rois


@register("_contrib_MultiProposal", num_outputs=_n_outputs, total_outputs=2, output_names=("output", "score"),
          param_shapes=_input_shapes, differentiable=False, samples=lambda: _samples(3))
def _contrib_MultiProposal(cls_prob: Tensor, bbox_pred: Tensor, im_info: Tensor, *,
                           rpn_pre_nms_top_n: int = 6000, rpn_post_nms_top_n: int = 300,
                           threshold: float = 0.7, rpn_min_size: int = 16,
                           scales: AnyValue = (4.0, 8.0, 16.0, 32.0), ratios: AnyValue = (0.5, 1.0, 2.0),
                           feature_stride: int = 16, output_score: bool = False,
                           iou_loss: bool = False) -> Any:
    """RPN region proposals of a batch (see the module docstring): rois (N * post, 5) rows
    [image index, x1, y1, x2, y2], image by image, and scores (N * post, 1). Inputs as
    Proposal's, for N images."""
    rois, score = _proposals("MultiProposal", cls_prob, bbox_pred, im_info, dict(
        rpn_pre_nms_top_n=rpn_pre_nms_top_n, rpn_post_nms_top_n=rpn_post_nms_top_n, threshold=threshold,
        rpn_min_size=rpn_min_size, scales=scales, ratios=ratios, feature_stride=feature_stride,
        iou_loss=iou_loss))
    return (rois, score) if output_score else rois
