"""Dynamic loss scaling for AMP (MXNet 1.9.1's ``LossScaler``).

The loss is multiplied by ``loss_scale`` before ``backward`` so small float16 gradients do not
flush to zero; the Trainer divides it back out. A step whose gradients hold inf/NaN is skipped
and the scale halves; after 2000 good steps in a row it doubles (at most 2**24).
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

from ... import autograd
from ... import ndarray as nd

__all__ = ["LossScaler"]


class LossScaler:
    """MXNet's dynamic loss scaler: starts at 2**16, halves on overflow, doubles after
    ``scale_seq_len`` (2000) overflow-free steps, never above 2**24.

    As in MXNet, a new scale takes effect at the next ``has_overflow`` call, so the loss scaled
    for the step being checked and the factor the Trainer divides by always agree.
    """

    def __init__(self) -> None:
        self._loss_scale = 2.0 ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2.0 ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self) -> float:
        """The factor the loss is multiplied by in ``amp.scale_loss``."""
        return self._loss_scale

    def has_overflow(self, params: Sequence[Any]) -> bool:
        """True when a gradient of ``params`` is not finite (the Trainer then skips the update);
        also advances the scale schedule."""
        grads = [g for p in params if p.grad_req != "null" and p._data is not None
                 for g in p.list_grad()]
        finite = True
        if grads:
            with autograd.pause():
                flag = nd.ones((1,), ctx=grads[0].context)
                for start in range(0, len(grads), 200):  # MXNet checks 200 arrays per call
                    chunk = grads[start:start + 200]
                    nd.multi_all_finite(*chunk, num_arrays=len(chunk), init_output=False, out=flag)
                finite = bool(flag.asscalar())
        self._loss_scale = self._next_loss_scale
        if not finite:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return not finite
