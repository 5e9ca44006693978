"""``gluon.loss``: losses as HybridBlocks with MXNet 1.9.1's definitions.

Every loss takes ``weight`` (a global scale) and ``batch_axis``, accepts an optional
``sample_weight`` broadcast against the element-wise loss, and returns one value per sample,
exactly as MXNet 1.9.1 computes them: the mean over all non-batch axes, except KLDivLoss and
TripletLoss (the sum), CTCLoss and CosineEmbeddingLoss (one value per sequence / pair) and
PoissonNLLLoss (one scalar: the mean over everything).
"""
from __future__ import annotations

from typing import Any, Optional

import math

import numpy as np

from .. import ndarray as _nd
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss",
           "HingeLoss", "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss",
           "CosineEmbeddingLoss", "SDMLLoss"]


def _apply_weighting(F: Any, loss: Any, weight: Optional[float] = None, sample_weight: Any = None) -> Any:
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, (int, float)):
            raise TypeError(f"weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _reshape_like(F: Any, x: Any, y: Any, what: str = "label", of: str = "pred") -> Any:
    """``x`` reshaped to ``y``'s shape; a size mismatch names both shapes."""
    if F is _nd:
        if x.size != y.size:
            raise ValueError(f"{what} shape {x.shape} does not match {of} shape {y.shape} (sizes "
                             f"{x.size} vs {y.size}); the loss needs one {what} value per {of} value")
        return x.reshape(y.shape)
    return F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class: ``weight`` scales the loss, ``batch_axis`` is the sample axis."""

    def __init__(self, weight: Optional[float], batch_axis: int, **kwargs: Any):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class L2Loss(Loss):
    """0.5 * weight * (label - pred)^2, averaged over non-batch axes."""

    def __init__(self, weight: float = 1.0, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L1Loss(Loss):
    """weight * |label - pred|, averaged over non-batch axes."""

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy on logits (stable form) or on probabilities (``from_sigmoid``)."""

    def __init__(self, from_sigmoid: bool = False, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None,
                       pos_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (
                    F.Activation(-F.abs(pred), act_type="softrelu") + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1.0 - pred + eps) * (1.0 - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1.0 - pred + eps) * (1.0 - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of softmax(pred) with sparse (class index) or dense labels."""

    def __init__(self, axis: int = -1, sparse_label: bool = True, from_logits: bool = False,
                 weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            if F is _nd:
                expect = tuple(d for i, d in enumerate(pred.shape) if i != self._axis % pred.ndim)
                if label.size != math.prod(expect):
                    raise ValueError(f"label shape {label.shape} does not match pred shape {pred.shape}: "
                                     f"sparse labels need one class index per sample, shape {expect}")
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """KL divergence label * (log(label) - pred), SUMMED over the non-batch axes (MXNet 1.9.1;
    not averaged); ``pred`` are log-probabilities if from_logits, else log_softmax is applied."""

    def __init__(self, from_logits: bool = True, axis: int = -1, weight: Optional[float] = None,
                 batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class CTCLoss(Loss):
    """Connectionist Temporal Classification loss (blank label is the last class)."""

    def __init__(self, layout: str = "NTC", label_layout: str = "NT", weight: Optional[float] = None,
                 **kwargs: Any):
        if layout not in ("NTC", "TNC"):
            raise ValueError(f"Only 'NTC' and 'TNC' layouts for pred are supported. Got: {layout}")
        if label_layout not in ("NT", "TN"):
            raise ValueError(f"Only 'NT' and 'TN' layouts for label are supported. Got: {label_layout}")
        self._layout = layout
        self._label_layout = label_layout
        batch_axis = label_layout.find("N")
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, pred_lengths: Any = None,
                       label_lengths: Any = None, sample_weight: Any = None) -> Any:
        if self._layout == "NTC":
            pred = F.swapaxes(pred, dim1=0, dim2=1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, dim1=0, dim2=1)
        loss = F.CTCLoss(pred, label, pred_lengths, label_lengths,
                         use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smooth L1: |d| - rho/2 where |d| > rho, else d^2 / (2 rho)."""

    def __init__(self, rho: float = 1, weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho, (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class HingeLoss(Loss):
    """max(0, margin - pred * label) for labels in {-1, 1}."""

    def __init__(self, margin: float = 1, weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class SquaredHingeLoss(Loss):
    """max(0, margin - pred * label)^2."""

    def __init__(self, margin: float = 1, weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class LogisticLoss(Loss):
    """Logistic loss relu(pred) - pred * z + log(1 + exp(-|pred|)) with z = (label + 1) / 2 for
    'signed' labels (-1/1) and z = label for 'binary' ones (0/1): MXNet's stable formula, which
    equals log(1 + exp(-pred * label)) on valid signed labels."""

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0, label_format: str = "signed",
                 **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._label_format = label_format
        if self._label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, received {label_format}.")

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:
        label = _reshape_like(F, label, pred)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class TripletLoss(Loss):
    """max(0, |pos - pred|^2 - |neg - pred|^2 + margin) summed over non-batch axes."""

    def __init__(self, margin: float = 1, weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, positive: Any, negative: Any, sample_weight: Any = None) -> Any:
        positive = _reshape_like(F, positive, pred, "positive")
        negative = _reshape_like(F, negative, pred, "negative")
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred), axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    """Poisson negative log-likelihood (mean over all elements, MXNet's definition)."""

    def __init__(self, weight: Optional[float] = None, from_logits: bool = True, batch_axis: int = 0,
                 compute_full: bool = False, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F: Any, pred: Any, target: Any, sample_weight: Any = None,
                       epsilon: float = 1e-08) -> Any:
        target = _reshape_like(F, target, pred, "target")
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * np.pi)
            loss = loss + stirling * (target > 1)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """1 - cos(x1, x2) for label 1, max(0, cos(x1, x2) - margin) for label -1."""

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0, margin: float = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, input1: Any, input2: Any, label: Any, sample_weight: Any = None) -> Any:
        input1 = _reshape_like(F, input1, input2, "input1", "input2")
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        y_1 = label == 1
        y_minus_1 = label == -1
        cos_sim_a = (1 - cos_sim) * y_1
        cos_sim_b = F.relu(y_minus_1 * (cos_sim - self._margin))
        loss = cos_sim_a + cos_sim_b
        return _apply_weighting(F, loss, self._weight, sample_weight)

    @staticmethod
    def _cosine_similarity(F: Any, x: Any, y: Any, axis: int = -1) -> Any:
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F.maximum(x_norm * y_norm, 1e-12)


class SDMLLoss(Loss):
    """Smoothed Deep Metric Learning loss over a batch of aligned pairs (x1[i], x2[i])."""

    def __init__(self, smoothing_parameter: float = 0.3, weight: float = 1.0, batch_axis: int = 0,
                 **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def _compute_distances(self, F: Any, x1: Any, x2: Any) -> Any:
        x1_ = F.expand_dims(x1, axis=1)
        x2_ = F.expand_dims(x2, axis=0)
        return F.sum(F.square(F.broadcast_sub(x1_, x2_)), axis=2)

    def _compute_labels(self, F: Any, x1: Any) -> Any:
        n = x1.shape[0]
        gold = _nd.eye(n, ctx=x1.context, dtype=x1.dtype)
        return gold * (1 - self.smoothing_parameter) + (1 - gold) * self.smoothing_parameter / (n - 1)

    def hybrid_forward(self, F: Any, x1: Any, x2: Any) -> Any:
        if F is not _nd:
            raise NotImplementedError("SDMLLoss needs the batch size (as in MXNet): call it on NDArrays, "
                                      "not inside a hybridized block")
        distances = self._compute_distances(F, x1, x2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        labels = self._compute_labels(F, x1)
        return self.kl_loss(log_probabilities, labels)
