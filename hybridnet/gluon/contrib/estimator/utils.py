"""Argument checks shared by the Estimator and its handlers (MXNet 1.9.1's behaviour)."""
from __future__ import annotations

from typing import Any, Iterable, Optional

from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss

__all__: list = []


def check_metrics(metrics: Any) -> list:
    """A list of EvalMetrics from one metric, a composite (flattened) or a list."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for metric in metrics.metrics for m in check_metrics(metric)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    if not all(isinstance(m, EvalMetric) for m in metrics):
        raise ValueError(f"metrics must be a Metric or a list of Metric, refer to "
                         f"mxnet.metric.EvalMetric: {metrics}")
    return metrics


def check_handler_metric_ref(handler: Any, known_metrics: Iterable[EvalMetric]) -> None:
    """Every metric a handler refers to (attributes named *metric* or *monitor*) must be one of
    the estimator's: a handler with its own metric objects would read values nobody updates."""
    known = list(known_metrics)
    for attribute in dir(handler):
        if "metric" not in attribute and "monitor" not in attribute:
            continue
        reference = getattr(handler, attribute)
        if not reference or callable(reference):
            continue
        for metric in reference if isinstance(reference, list) else [reference]:
            if not any(metric is k for k in known):
                raise ValueError(
                    f"Event handler {type(handler).__name__} refers to a metric instance {metric} "
                    f"outside of the known training and validation metrics. Please use the metrics "
                    f"from estimator.train_metrics and estimator.val_metrics instead.")


def suggest_metric_for_loss(loss: Any) -> Optional[EvalMetric]:
    """Accuracy for a softmax cross-entropy loss; no suggestion otherwise."""
    return Accuracy() if isinstance(loss, SoftmaxCrossEntropyLoss) else None
