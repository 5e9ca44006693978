"""The Estimator: MXNet 1.9.1's fit API (``gluon.contrib.estimator.Estimator``).

``Estimator(net, loss, train_metrics, val_metrics, initializer, trainer, context, val_net,
val_loss, batch_processor)``; ``fit(train_data, val_data, epochs | batches, event_handlers,
batch_axis)`` runs the event loop (train begin, then per epoch: epoch begin, per batch: batch
begin, ``batch_processor.fit_batch``, batch end; epoch end; train end) and ``evaluate`` the
validation loop. Missing default handlers are added as MXNet adds them (stopping, gradient
update, metrics, validation when ``val_data`` is given, logging).
"""
from __future__ import annotations

import copy
import logging
import sys
import warnings
from typing import Any, Optional

from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as LossMetric
from ...data import DataLoader
from ...loss import Loss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin, TrainEnd,
                            ValidationHandler, check_event_handlers)
from .utils import check_handler_metric_ref, check_metrics, suggest_metric_for_loss

__all__ = ["Estimator"]


class Estimator:
    """Trains and evaluates ``net`` with ``loss`` through event handlers.

    ``logger`` is a ``logging.Logger`` writing INFO to stdout (add handlers to also log to a
    file). Metrics are renamed 'training <name>' / 'validation <name>'; without
    ``train_metrics`` the estimator picks Accuracy for softmax cross-entropy plus the loss.
    """

    logger: Optional[logging.Logger] = None

    def __init__(self, net: Any, loss: Any, train_metrics: Any = None, val_metrics: Any = None,
                 initializer: Any = None, trainer: Any = None, context: Any = None,
                 val_net: Any = None, val_loss: Any = None, batch_processor: Any = None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = check_metrics(train_metrics)
        self._val_metrics = check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self._check_loss(val_loss) if val_loss is not None else self.loss
        self.val_net = val_net if val_net is not None else self.net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch: Optional[int] = None
        self.max_batch: Optional[int] = None
        self.batch_axis = 0

    @staticmethod
    def _check_loss(loss: Any) -> Any:
        if not isinstance(loss, Loss):
            raise ValueError(f"loss must be a Loss, refer to gluon.loss.Loss: {loss}")
        return loss

    @staticmethod
    def _check_context(context: Any) -> list:
        available_gpus = [gpu(i) for i in range(num_gpus())]
        if not context:
            if available_gpus:
                if len(available_gpus) > 1:
                    warnings.warn("You have multiple GPUs, gpu(0) will be used by default. To "
                                  "utilize all your GPUs, specify context as a list of gpus, e.g. "
                                  "context=[mx.gpu(0), mx.gpu(1)] ")
                return [gpu(0)]
            return [cpu()]
        if isinstance(context, Context):
            context = [context]
        elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise ValueError(f"context must be a Context or a list of Context, for example mx.cpu() "
                             f"or [mx.gpu(0), mx.gpu(1)], refer to mxnet.Context: {context}")
        for ctx in context:
            if not (ctx in available_gpus or str(ctx).startswith("cpu")):
                raise AssertionError(f"{ctx} is not available, please make sure your context is in "
                                     f"one of: mx.cpu(), {', '.join(str(g) for g in available_gpus)}")
        return context

    @staticmethod
    def _check_batch_processor(batch_processor: Any) -> Any:
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise ValueError("Customized Batch Processor must contain fit_batch() and "
                             "evaluate_batch() methods")
        return batch_processor

    def _initialize(self, initializer: Any) -> None:
        if not self._is_initialized():
            # partly initialized nets (fine-tuning) keep what is initialized
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You don't "
                          "need to pass initializer if you already initialized your net. You can "
                          "use net.initialize(init=your_initializer, force_reinit=True)to force "
                          "re-initialize.")

    def _check_trainer(self, trainer: Any) -> Trainer:
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate 0.001 is used.")
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError(f"Trainer must be a Gluon Trainer instance, refer to gluon.Trainer: {trainer}")
        return trainer

    def _is_initialized(self) -> bool:
        params = self.net.collect_params()
        for name in params.keys():
            try:
                params[name].list_ctx()
            except Exception:  # noqa: BLE001 - MXNet: any uninitialized parameter
                return False
        return True

    def _add_default_training_metrics(self) -> None:
        if not self._train_metrics:
            suggested = suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(LossMetric(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:
            metric.name = "training " + metric.name

    def _add_validation_metrics(self) -> None:
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
        for metric in self._val_metrics:
            if "training" in metric.name:
                metric.name = metric.name.replace("training", "validation")
            else:
                metric.name = "validation " + metric.name

    @property
    def train_metrics(self) -> list:
        return self._train_metrics

    @property
    def val_metrics(self) -> list:
        return self._val_metrics

    def evaluate(self, val_data: Any, batch_axis: int = 0, event_handlers: Any = None) -> None:
        """Run the validation loop over ``val_data`` (a DataLoader), updating ``val_metrics``
        (a MetricHandler and a LoggingHandler are added unless given)."""
        if not isinstance(val_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. Alternatively, you "
                             "can transform your DataIter or any NDArray into Gluon DataLoader. "
                             "Refer to gluon.data.DataLoader")
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data: Any, val_data: Any = None, epochs: Optional[int] = None,
            event_handlers: Any = None, batches: Optional[int] = None, batch_axis: int = 0) -> None:
        """Train on ``train_data`` (a DataLoader) for ``epochs`` epochs or ``batches`` batches
        (exactly one of them), validating on ``val_data`` after each epoch when given."""
        if not isinstance(train_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. Alternatively, you "
                             "can transform your DataIter or any NDArray into Gluon DataLoader. "
                             "Refer to gluon.data.dataloader")
        if (not epochs) == (not batches):
            raise ValueError("Fit only support exactly one type of iteration, train by number of "
                             "epochs or number of batches. Please specify one and only one of: "
                             "epochs or batches.")
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        try:
            self._epoch_batches: Optional[int] = len(train_data)
        except TypeError:
            self._epoch_batches = None
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                stop = [handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                        for handler in batch_end]
                if any(stop):
                    break
            if any([handler.epoch_end(self) for handler in epoch_end]):
                break
        for handler in train_end:
            handler.train_end(self)

    def _prepare_default_handlers(self, val_data: Any, event_handlers: Any) -> list:
        handlers = check_event_handlers(event_handlers)
        added: list = [StoppingHandler(self.max_epoch, self.max_batch)]
        if not any(isinstance(h, GradientUpdateHandler) for h in handlers):
            added.append(GradientUpdateHandler())
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.train_metrics))
        if not any(isinstance(h, ValidationHandler) for h in handlers) and val_data:
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.train_metrics))
        mixing = bool(handlers) and bool(added)
        handlers.extend(added)
        if mixing:  # user and default handlers must share the estimator's metric objects
            known = self.train_metrics + self.val_metrics
            for handler in handlers:
                check_handler_metric_ref(handler, known)
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    def _prepare_default_validation_handlers(self, event_handlers: Any) -> list:
        handlers = check_event_handlers(event_handlers)
        added: list = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        mixing = bool(handlers) and bool(added)
        handlers.extend(added)
        if mixing:
            for handler in handlers:
                check_handler_metric_ref(handler, self.val_metrics)
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    @staticmethod
    def _categorize_handlers(event_handlers: list) -> tuple:
        """Handlers per event, so only handlers implementing an event are called for it."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in kinds)
