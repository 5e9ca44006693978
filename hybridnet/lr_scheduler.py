"""``mx.lr_scheduler``: learning-rate schedules (MXNet 1.9.1 semantics).

A scheduler is called with ``num_update`` (the largest number of updates any weight has
received so far) and returns the learning rate to use. Schedulers are stateful exactly as in
MXNet: ``FactorScheduler``/``MultiFactorScheduler`` decay ``base_lr`` in place as updates pass
their steps, ``PolyScheduler``/``CosineScheduler`` decay from the ``base_lr`` they were built with.
"""
from __future__ import annotations

import logging
from math import cos, pi
from typing import List

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


class LRScheduler:
    """Base class: holds ``base_lr`` and the warmup rule (MXNet's ``LRScheduler``).

    ``warmup_steps`` updates run at ``warmup_begin_lr`` ('constant') or ramp linearly from
    ``warmup_begin_lr`` towards ``base_lr`` ('linear') before the schedule itself starts.
    """

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int):
            raise TypeError(f"{type(self).__name__}: warmup_steps must be an int, got "
                            f"{type(warmup_steps).__name__} ({warmup_steps!r})")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError(f"{type(self).__name__}: base_lr ({base_lr}) has to be higher than "
                             f"warmup_begin_lr ({warmup_begin_lr})")
        if self.warmup_steps < 0:
            raise ValueError(f"{type(self).__name__}: warmup_steps has to be positive or 0, "
                             f"got {warmup_steps}")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError(f"{type(self).__name__}: warmup_mode must be 'linear' or 'constant', "
                             f"got {warmup_mode!r}")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """Learning rate during warmup (``num_update < warmup_steps``)."""
        assert num_update < self.warmup_steps
        if self.warmup_mode == "linear":
            increase = (self.warmup_final_lr - self.warmup_begin_lr) \
                * float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        raise ValueError(f"invalid warmup mode {self.warmup_mode!r}")

    def __call__(self, num_update: int) -> float:
        """Return the learning rate for ``num_update`` (the max update count over weights)."""
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` updates, never going below
    ``stop_factor_lr``: ``base_lr * factor ** floor((num_update - 1) / step)`` after warmup."""

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError(f"FactorScheduler: step must be >= 1, got {step}")
        if factor > 1.0:
            raise ValueError(f"FactorScheduler: factor must be <= 1 to make lr reduce, got {factor}")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # a while loop (not an if) so that resuming at a large num_update catches up
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not "
                             "change in the future", num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` each time ``num_update`` passes a value of the
    increasing list ``step``."""

    def __init__(self, step: List[int], factor: float = 1, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise TypeError(f"MultiFactorScheduler: step must be a non-empty list of ints, got {step!r}")
        for i, s in enumerate(step):
            if i != 0 and step[i] <= step[i - 1]:
                raise ValueError(f"MultiFactorScheduler: step must be an increasing list, got {step}")
            if s < 1:
                raise ValueError(f"MultiFactorScheduler: every step must be >= 1, got {step}")
        if factor > 1.0:
            raise ValueError(f"MultiFactorScheduler: factor must be <= 1 to make lr reduce, got {factor}")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay after warmup:
    ``final_lr + (base_lr - final_lr) * (1 - (n - warmup_steps) / (max_update - warmup_steps)) ** pwr``
    for ``n <= max_update``; the last value is kept afterwards."""

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError(f"PolyScheduler: max_update must be an int, got {type(max_update).__name__}")
        if max_update < 1:
            raise ValueError(f"PolyScheduler: max_update must be strictly positive, got {max_update}")
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                pow(1 - float(num_update - self.warmup_steps) / float(self.max_steps), self.power)
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay after warmup:
    ``final_lr + (base_lr - final_lr) * (1 + cos(pi * (n - warmup_steps) / (max_update - warmup_steps))) / 2``
    for ``n <= max_update``; the last value is kept afterwards."""

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError(f"CosineScheduler: max_update must be an int, got {type(max_update).__name__}")
        if max_update < 1:
            raise ValueError(f"CosineScheduler: max_update must be strictly positive, got {max_update}")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                (1 + cos(pi * (num_update - self.warmup_steps) / self.max_steps)) / 2
        return self.base_lr
