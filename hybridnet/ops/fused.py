"""Fused operators that graph passes substitute for common patterns in hybridized graphs.

They never appear in exported files: ``export`` writes the traced graph, the compiler runs the
optimized one. Each is checked against the NumPy reference of the pattern it replaces.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .registry import Sample, register

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
