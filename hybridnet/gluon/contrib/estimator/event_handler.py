"""Event handlers of the Estimator (MXNet 1.9.1's ``gluon.contrib.estimator.event_handler``).

A handler subclasses the mixins of the events it handles (``TrainBegin``, ``EpochBegin``,
``BatchBegin``, ``BatchEnd``, ``EpochEnd``, ``TrainEnd``); ``batch_end``/``epoch_end`` return
True to stop training. Handlers run in ascending ``priority`` (metrics and the optimizer step
first, logging last). Beyond MXNet: ``ProgressBarHandler`` (tqdm when installed, a plain text
line otherwise) and ``TrainingCurveHandler`` (metric history, plotted with matplotlib).
"""
from __future__ import annotations

import math
import os
import sys
import time
import warnings
from typing import Any, Callable, Optional

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as LossMetric
from .utils import check_metrics

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd",
           "StoppingHandler", "MetricHandler", "ValidationHandler", "LoggingHandler",
           "CheckpointHandler", "EarlyStoppingHandler", "GradientUpdateHandler",
           "ProgressBarHandler", "TrainingCurveHandler"]


class EventHandler:
    """Base of all handlers."""


def check_event_handlers(handlers: Any) -> list:
    """A list of EventHandlers from one handler, a list or None."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    if not all(isinstance(h, EventHandler) for h in handlers):
        raise ValueError(f"handlers must be an EventHandler or a list of EventHandler, got: {handlers}")
    return handlers


class TrainBegin(EventHandler):
    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        pass


class TrainEnd(EventHandler):
    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        pass


class EpochBegin(EventHandler):
    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        pass


class EpochEnd(EventHandler):
    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        return False


class BatchBegin(EventHandler):
    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        pass


class BatchEnd(EventHandler):
    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops after ``max_epoch`` epochs or ``max_batch`` batches (the estimator's, at train
    begin)."""

    def __init__(self, max_epoch: Optional[int] = None, max_batch: Optional[int] = None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets ``metrics`` at epoch begin and updates them at batch end (``metric.Loss`` with
    the loss values, the others with labels and predictions)."""

    def __init__(self, metrics: Any, priority: float = -1000):
        self.metrics = check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        for metric in self.metrics:
            if isinstance(metric, LossMetric):
                metric.update(0, kwargs["loss"])
            else:
                metric.update(kwargs["label"], kwargs["pred"])
        return False


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs ``eval_fn(val_data=..., batch_axis=..., event_handlers=...)`` every
    ``epoch_period`` epochs and/or every ``batch_period`` batches."""

    def __init__(self, val_data: Any, eval_fn: Callable, epoch_period: Optional[int] = 1,
                 batch_period: Optional[int] = None, priority: float = -1000,
                 event_handlers: Any = None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.current_batch = 0
        self.current_epoch = 0

    def _validate(self, estimator: Any) -> None:
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._validate(estimator)
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._validate(estimator)
        return False


def _metric_text(metrics: list) -> str:
    return ", ".join("%s: %.4f" % metric.get() for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the optimizer, the learning rate and ``metrics`` to ``estimator.logger``: every
    epoch (``log_interval='epoch'``) or every ``log_interval`` batches, in MXNet's format."""

    def __init__(self, log_interval: Any = "epoch", metrics: Any = None, priority: float = np.inf):
        if not isinstance(log_interval, int) and log_interval != "epoch":
            raise ValueError("log_interval must be either an integer or string 'epoch'")
        self.metrics = check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0.0

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning rate %.4f ",
                              trainer.optimizer.__class__.__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0.0

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        msg = "Train finished using total %ds with %d epochs. " % (time.time() - self.train_start,
                                                                   self.current_epoch)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        if isinstance(self.log_interval, int):
            self.processed_samples += kwargs["batch"][0].shape[0]
            self.log_interval_time += time.time() - self.batch_start
            if self.batch_index % self.log_interval == 0:
                msg = "[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs " % (
                    self.current_epoch, self.batch_index, self.processed_samples,
                    self.log_interval_time)
                self.log_interval_time = 0.0
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.batch_index += 1
        return False

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.epoch_start = time.time()
        # the estimator prefixes its metrics 'training ' / 'validation '
        if any("training" in metric.name for metric in self.metrics):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch, time.time() - self.epoch_start)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0
        return False


def _monitor_op(monitor: EvalMetric, mode: str, who: str) -> Callable:
    """np.less or np.greater for 'min'/'max'; 'auto' picks greater for accuracy/F1-like
    metrics and less otherwise (what MXNet's docs describe)."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who} mode {mode} is unknown, fallback to auto mode. {who} will use max "
                      f"mode for f1 and accuracy metric comparison and use min mode otherwise",
                      RuntimeWarning)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    name = monitor.get()[0].lower()
    if "acc" in name or "f1" in name:
        warnings.warn(f"`greater` operator will be used to determine if {monitor.get()[0]} has "
                      f"improved. Please specify `mode='min'` to use the `less` operator. Specify "
                      f"`mode='max' to disable this warning.`")
        return np.greater
    warnings.warn(f"`less` operator will be used to determine if {monitor.get()[0]} has improved. "
                  f"Please specify `mode='max'` to use the `greater` operator. Specify "
                  f"`mode='min' to disable this warning.`")
    return np.less


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves parameters and trainer states every ``epoch_period`` epochs or ``batch_period``
    batches as ``<prefix>-epoch<E>batch<B>.params/.states`` (keeping ``max_checkpoints``), the
    best by ``monitor`` as ``<prefix>-best.*`` (``save_best``), and the symbol of a hybridized
    net once. Files are written atomically. ``resume_from_checkpoint`` loads the newest
    checkpoint at train begin and trains only the remaining epochs/batches."""

    def __init__(self, model_dir: str, model_prefix: str = "model", monitor: Optional[EvalMetric] = None,
                 verbose: int = 0, save_best: bool = False, mode: str = "auto",
                 epoch_period: Optional[int] = 1, batch_period: Optional[int] = None,
                 max_checkpoints: int = 5, resume_from_checkpoint: bool = False):
        self.monitor = monitor
        self.verbose = verbose
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if self.save_best and not isinstance(self.monitor, EvalMetric):
            raise ValueError("To save best model only, please provide one of the metric objects "
                             "from estimator.train_metrics and estimator.val_metrics as monitor.")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints: list = []
        self.trained_epoch = -1
        self.trained_batch = -1
        if self.save_best:
            self.monitor_op = _monitor_op(monitor, mode, "CheckpointHandler")

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            msg = ("To use resume from checkpoint, you must only specify the same type of period "
                   "you used for training. For example, if you are training based on number of "
                   "epochs, you must save only based on epochs, and set batch_period to None.")
            if estimator.max_batch and (not self.batch_period or self.epoch_period):
                raise ValueError(msg)
            if estimator.max_epoch and (not self.epoch_period or self.batch_period):
                raise ValueError(msg)
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1
        return False

    def _save_checkpoint(self, estimator: Any) -> None:
        if self.resume_from_checkpoint:
            epoch = self.current_epoch + self.trained_epoch + 1
            # at epoch end the batch counter has already moved past the last batch
            batch = self.current_batch + self.trained_batch + (0 if estimator.max_epoch else 1)
        else:
            epoch, batch = self.current_epoch, self.current_batch
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, saving "
                                  "model at %s with prefix: %s", self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        if not self.save_best:
            return
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(RuntimeWarning(
                f"Skipping save best because {name} is not updated, make sure you pass one of the "
                f"metric objects estimator.train_metrics and estimator.val_metrics as monitor"))
        elif self.monitor_op(value, self.best):
            self._save_params_and_trainer(estimator, self.model_prefix + "-best")
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to "
                                      "%0.5f, updating best model at %s with prefix: %s",
                                      self.current_epoch, name, self.best, value, self.model_dir,
                                      self.model_prefix + "-best")
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, "
                                  "skipping updating best model", self.current_epoch, name, self.best)

    def _save_symbol(self, estimator: Any) -> None:
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        cached = getattr(estimator.net, "_cached_graph", None)
        if cached:
            cached[1].save(symbol_file)
        else:
            estimator.logger.info(
                "Model architecture(symbol file) is not saved, please use HybridBlock to construct "
                "your model, and call net.hybridize() before passing to Estimator in order to save "
                "model architecture as %s.", symbol_file)

    def _save_params_and_trainer(self, estimator: Any, file_prefix: str) -> None:
        estimator.net.save_parameters(os.path.join(self.model_dir, file_prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, file_prefix + ".states"))
        if "best" not in file_prefix:
            self.saved_checkpoints.append(file_prefix)
        if len(self.saved_checkpoints) > self.max_checkpoints:
            oldest = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                path = os.path.join(self.model_dir, oldest + ext)
                if os.path.exists(path):
                    os.remove(path)

    def _resume_from_checkpoint(self, estimator: Any) -> None:
        found = self._find_checkpoints()
        if not found:
            self.trained_epoch = self.trained_batch = -1
            what = ("%d batches" % estimator.max_batch if estimator.max_batch
                    else "%d epochs" % estimator.max_epoch)
            estimator.logger.info("CheckpointHandler: No checkpoint found, training from scratch for %s", what)
            return
        self.saved_checkpoints = [prefix for _, _, prefix in sorted(found)]
        self.trained_epoch, self.trained_batch, prefix = max(found)
        msg = "CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to train for " % (
            self.trained_epoch, self.trained_batch)
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError("Found checkpoint with maximum number of epoch %d reached, please "
                                 "specify resume_from_checkpoint=False (default value) if you want "
                                 "to train from scratch." % estimator.max_epoch)
            estimator.max_epoch = estimator.max_epoch - self.trained_epoch - 1
            msg += "%d epochs " % estimator.max_epoch
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError("Found checkpoint with maximum number of batch %d reached, please "
                                 "specify resume_from_checkpoint=False (default value) if you want "
                                 "to train from scratch." % self.trained_batch)
            estimator.max_batch = estimator.max_batch - self.trained_batch - 1
            msg += "%d batches " % estimator.max_batch
        param_file = os.path.join(self.model_dir, prefix + ".params")
        trainer_file = os.path.join(self.model_dir, prefix + ".states")
        for path in (param_file, trainer_file):
            if not os.path.exists(path):
                raise ValueError(f"Failed to load checkpoint, {path} does not exist")
        estimator.net.load_parameters(param_file, ctx=estimator.context)
        estimator.trainer.load_states(trainer_file)
        estimator.logger.warning(msg)

    def _find_checkpoints(self) -> list:
        """(epoch, batch, prefix) of every ``<prefix>-epoch<E>batch<B>.params`` in model_dir."""
        head = self.model_prefix + "-epoch"
        found = []
        for fname in os.listdir(self.model_dir):
            if not (fname.startswith(head) and fname.endswith(".params")):
                continue
            stem = fname[:-len(".params")]
            epoch_text, sep, batch_text = stem[len(head):].partition("batch")
            if not (sep and epoch_text.isdigit() and batch_text.isdigit()):
                raise ValueError(f"Error parsing checkpoint file {fname!r}, please check your "
                                 f"checkpoints have the format: {{model_name}}-epoch{{epoch_number}}"
                                 f"batch{{batch_number}}.params, there should also be a .states "
                                 f"file for each .params file")
            found.append((int(epoch_text), int(batch_text), stem))
        return found


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when ``monitor`` has not improved by ``min_delta`` for ``patience``
    epochs (or does not beat ``baseline``)."""

    def __init__(self, monitor: EvalMetric, min_delta: float = 0, patience: int = 0,
                 mode: str = "auto", baseline: Optional[float] = None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError("Please provide one of the metric objects from estimator.train_metrics "
                             "and estimator.val_metrics as monitor.")
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError("CompositeEvalMetric is not supported for EarlyStoppingHandler, "
                             "please specify a simple metric instead.")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op = _monitor_op(monitor, mode, "EarlyStopping")
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(RuntimeWarning(
                f"{name} is not updated, make sure you pass one of the metric objects from "
                f"estimator.train_metrics and estimator.val_metrics as monitor."))
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHanlder: early stopping due to %s not "
                                  "improving", self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Applies the gradients at batch end: ``trainer.step(total batch size of the losses)``."""

    def __init__(self, priority: float = -2000):
        self.priority = priority

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        loss = kwargs["loss"]
        losses = loss if isinstance(loss, list) else [loss]
        estimator.trainer.step(sum(l.shape[0] for l in losses))
        return False


class ProgressBarHandler(TrainBegin, EpochBegin, BatchEnd, EpochEnd, TrainEnd):
    """A per-epoch progress bar with the current ``metrics``: tqdm's when tqdm is installed
    (and ``use_tqdm`` is not False), otherwise one text line rewritten in place on ``file``.
    tqdm is optional: nothing else needs it."""

    def __init__(self, metrics: Any = None, file: Any = None, use_tqdm: Optional[bool] = None,
                 priority: float = 1000):
        self.metrics = check_metrics(metrics)
        self.file = file
        self.priority = priority
        self._tqdm = None
        if use_tqdm is not False:
            try:
                from tqdm import tqdm
                self._tqdm = tqdm
            except ImportError:
                if use_tqdm:
                    raise ImportError("ProgressBarHandler(use_tqdm=True) needs tqdm: pip install "
                                      "tqdm, or pass use_tqdm=None for a plain text progress line") from None
        self._bar: Any = None
        self.current_epoch = 0
        self.batch_index = 0

    @property
    def _out(self) -> Any:
        return self.file if self.file is not None else sys.stderr

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.current_epoch = 0

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.batch_index = 0
        self._total = getattr(estimator, "_epoch_batches", None)
        if self._tqdm is not None:
            self._bar = self._tqdm(total=self._total, desc=f"epoch {self.current_epoch}",
                                   file=self._out, leave=False)

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.batch_index += 1
        stats = _metric_text(self.metrics)
        if self._bar is not None:
            self._bar.set_postfix_str(stats, refresh=False)
            self._bar.update(1)
        else:
            of = f"/{self._total}" if self._total else ""
            self._out.write(f"\r[Epoch {self.current_epoch}] batch {self.batch_index}{of} {stats}")
            self._out.flush()
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        else:
            self._out.write("\n")
            self._out.flush()
        self.current_epoch += 1
        return False

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class TrainingCurveHandler(TrainBegin, EpochEnd, TrainEnd):
    """Records ``metrics`` (default: the estimator's training and validation metrics) at each
    epoch end in ``history`` (name -> list of values) and, with ``path``, plots them to an image
    at train end. Plotting needs matplotlib (optional): without it, a ``path`` is an ImportError
    at construction, so the run does not fail after training."""

    def __init__(self, path: Optional[str] = None, metrics: Any = None, priority: float = 500):
        self.metrics = check_metrics(metrics)
        self.path = path
        self.priority = priority
        self.history: dict = {}
        if path is not None:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise ImportError("TrainingCurveHandler(path=...) plots with matplotlib, which is not "
                                  "installed: pip install matplotlib, or leave path=None and read "
                                  "the handler's .history") from None

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if not self.metrics:
            self.metrics = list(estimator.train_metrics) + list(estimator.val_metrics)
        self.history = {m.name: [] for m in self.metrics}

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        for metric in self.metrics:
            name, value = metric.get()
            self.history.setdefault(name, []).append(float(value))
        return False

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if self.path is not None:
            self.plot(self.path)

    def plot(self, path: str) -> None:
        """Write the recorded curves (one panel per metric kind, training and validation
        together) to ``path`` (format from its extension), atomically."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        kinds: dict = {}
        for name, values in self.history.items():
            kind = name.replace("training ", "").replace("validation ", "")
            kinds.setdefault(kind, []).append((name, values))
        fig, axes = plt.subplots(1, max(len(kinds), 1), figsize=(5 * max(len(kinds), 1), 3.5),
                                 squeeze=False)
        for ax, (kind, curves) in zip(axes[0], kinds.items()):
            for name, values in curves:
                shown = [v if math.isfinite(v) else float("nan") for v in values]
                ax.plot(range(1, len(shown) + 1), shown, marker="o", label=name)
            ax.set_xlabel("epoch")
            ax.set_title(kind)
            ax.legend()
        fig.tight_layout()
        root, ext = os.path.splitext(path)
        tmp = f"{root}.tmp-{os.getpid()}{ext}"
        fig.savefig(tmp)
        plt.close(fig)
        os.replace(tmp, path)
