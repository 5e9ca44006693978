"""``mx.misc``: MXNet's oldest learning-rate schedulers (``LearningRateScheduler``,
``FactorScheduler``: ``base_lr * factor ** (iteration // step)``), kept for old scripts;
``mx.lr_scheduler`` is the current API."""
from __future__ import annotations

import logging
import math

__all__ = ["LearningRateScheduler", "FactorScheduler"]


class LearningRateScheduler:
    """Base class: ``scheduler(iteration)`` returns the learning rate."""

    def __init__(self) -> None:
        self.base_lr = 0.01

    def __call__(self, iteration: int) -> float:
        raise NotImplementedError("must override this")


class FactorScheduler(LearningRateScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` iterations."""

    def __init__(self, step: int, factor: float = 0.1):
        super().__init__()
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor >= 1.0:
            raise ValueError("Factor must be less than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.old_lr = self.base_lr
        self.init = False

    def __call__(self, iteration: int) -> float:
        if not self.init:
            self.init = True
            self.old_lr = self.base_lr
        lr = self.base_lr * math.pow(self.factor, int(iteration / self.step))
        if lr != self.old_lr:
            self.old_lr = lr
            logging.info("At Iteration [%d]: Swith to new learning rate %.5f", iteration, lr)
        return lr
