"""``mx.callback``: the training callbacks of the Module API (MXNet 1.9.1's
``mxnet.callback``). Epoch-end callbacks get ``(epoch, symbol, arg_params, aux_params)``;
batch-end callbacks get a ``BatchEndParam(epoch, nbatch, eval_metric, locals)``."""
from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable

from .model import save_checkpoint

__all__ = ["module_checkpoint", "do_checkpoint", "log_train_metric", "Speedometer", "ProgressBar",
           "LogValidationMetricsCallback"]


def _check_period(period: int) -> int:
    period = int(period)
    if period < 1:
        raise ValueError(f"period must be >= 1, got {period}")
    return period


def module_checkpoint(mod: Any, prefix: str, period: int = 1, save_optimizer_states: bool = False) -> Callable:
    """Epoch-end callback: ``mod.save_checkpoint(prefix, epoch + 1)`` every ``period`` epochs."""
    period = _check_period(period)

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """Epoch-end callback: ``mx.model.save_checkpoint(prefix, epoch + 1, ...)`` every
    ``period`` epochs."""
    period = _check_period(period)

    def _callback(iter_no: int, sym: Any, arg: Any, aux: Any) -> None:
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable:
    """Batch-end callback: log the training metric every ``period`` batches."""
    def _callback(param: Any) -> None:
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Batch-end callback logging samples/sec (and the metric, reset locally when
    ``auto_reset``) every ``frequent`` batches."""

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0

    def __call__(self, param: Any) -> None:
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            if self.auto_reset:
                param.eval_metric.reset_local()
            msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
            logging.info(msg, param.epoch, count - self.frequent, count, speed, *sum(name_value, ()))
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback drawing a text progress bar of ``nbatch / total``."""

    def __init__(self, total: int, length: int = 80):
        self.bar_len = length
        self.total = total

    def __call__(self, param: Any) -> None:
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        bar = "=" * filled + "-" * (self.bar_len - filled)
        logging.info("[%s] %s%s\r", bar, percents, "%")


class LogValidationMetricsCallback:
    """Score-end callback logging the validation metrics."""

    def __call__(self, param: Any) -> None:
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
