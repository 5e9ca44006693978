"""How the Estimator trains and evaluates one batch (MXNet 1.9.1's ``BatchProcessor``).

Subclass and override ``fit_batch``/``evaluate_batch`` for custom steps (several losses, GAN
updates...); pass the instance as ``Estimator(batch_processor=...)``.
"""
from __future__ import annotations

from typing import Any

from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """Default batch processing: split the batch over the estimator's contexts, forward,
    loss, backward (training only). The optimizer step happens in ``GradientUpdateHandler``."""

    def _get_data_and_label(self, batch: Any, ctx: list, batch_axis: int = 0) -> tuple:
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator: Any, val_batch: Any, batch_axis: int = 0) -> tuple:
        """``(data, label, pred, loss)`` lists, one entry per context, of one validation batch."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator: Any, train_batch: Any, batch_axis: int = 0) -> tuple:
        """``(data, label, pred, loss)`` of one training batch, gradients computed."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for l in loss:
            l.backward()
        return data, label, pred, loss
