"""``mx.metric``: evaluation metrics with MXNet 1.9.1 semantics.

Labels and predictions are lists of NDArrays (a single NDArray is wrapped into a list). Every
metric keeps local statistics (``sum_metric``/``num_inst``, cleared by ``reset_local``) and
global ones (``global_sum_metric``/``global_num_inst``, cleared only by ``reset``).
"""
from __future__ import annotations

import math
from collections import OrderedDict  # noqa: F401  (MXNet's metric module exports it)
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy
import torch

from . import registry as _registry
from .base import numeric_types, string_types
from .ndarray.ndarray import NDArray

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC",
           "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "PearsonCorrelation", "PCC", "Loss", "Torch", "Caffe", "CustomMetric", "np", "create",
           "register", "alias", "check_label_shapes"]


def create(metric: Any, *args: Any, **kwargs: Any) -> "EvalMetric":
    """Create a metric from a name ('acc', 'ce', ...), an instance, a config dict/JSON string,
    a callable ``feval(label, pred)`` (-> CustomMetric) or a list of those (-> composite)."""
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if callable(metric) and not isinstance(metric, EvalMetric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


def _shape_of(x: Any) -> Any:
    return x.shape if hasattr(x, "shape") else len(x)


def check_label_shapes(labels: Any, preds: Any, wrap: bool = False, shape: bool = False) -> Tuple[Any, Any]:
    """Check that labels and predictions agree in length (``shape=False``) or shape
    (``shape=True``); with ``wrap`` single NDArrays become one-element lists."""
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of "
                         f"predictions {pred_shape}")
    if wrap:
        if isinstance(labels, (NDArray, numpy.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
    return labels, preds


def _np(x: Any) -> numpy.ndarray:
    if isinstance(x, NDArray):
        return x.asnumpy()
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return numpy.asarray(x)


class EvalMetric:
    """Base class of all metrics (MXNet's ``EvalMetric``): ``update(labels, preds)``,
    ``get() -> (name, value)``, ``reset()``, local/global statistics."""

    def __init__(self, name: str, output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None, **kwargs: Any):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> Dict[str, Any]:
        """A dict from which ``mx.metric.create(**config)`` rebuilds this metric."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label: Dict[str, Any], pred: Dict[str, Any]) -> None:
        """Update from dicts name -> array, selecting ``output_names``/``label_names``."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels: Any, preds: Any) -> None:
        """Accumulate statistics from a batch of labels and predictions."""
        raise NotImplementedError()

    def reset(self) -> None:
        """Clear local and global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear local statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self) -> Tuple[Any, Any]:
        """``(name, value)`` over the local statistics (nan before any update)."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self) -> Tuple[Any, Any]:
        """``(name, value)`` over the global statistics."""
        if self._has_global_stats:
            if self.global_num_inst == 0:
                return (self.name, float("nan"))
            return (self.name, self.global_sum_metric / self.global_num_inst)
        return self.get()

    def get_name_value(self) -> List[Tuple[str, Any]]:
        """``[(name, value), ...]`` (one pair per sub-metric for composites)."""
        name, value = self.get()
        if not isinstance(name, list):
            name = [name]
        if not isinstance(value, list):
            value = [value]
        return list(zip(name, value))

    def get_global_name_value(self) -> List[Tuple[str, Any]]:
        """``get_name_value`` over the global statistics."""
        if self._has_global_stats:
            name, value = self.get_global()
            if not isinstance(name, list):
                name = [name]
            if not isinstance(value, list):
                value = [value]
            return list(zip(name, value))
        return self.get_name_value()


# MXNet builds these on mx.registry (names are case-insensitive; re-registering a name warns)
register = _registry.get_register_func(EvalMetric, "metric")
alias = _registry.get_alias_func(EvalMetric, "metric")
_create = _registry.get_create_func(EvalMetric, "metric")


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values."""

    def __init__(self, metrics: Optional[list] = None, name: str = "composite",
                 output_names: Optional[List[str]] = None, label_names: Optional[List[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        if metrics is None:
            metrics = []
        self.metrics = [create(i) for i in metrics]

    def add(self, metric: Any) -> None:
        """Add a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> Any:
        """The child metric at ``index``."""
        try:
            return self.metrics[index]
        except IndexError:
            return ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")

    def update_dict(self, labels: Dict[str, Any], preds: Dict[str, Any]) -> None:
        if self.label_names is not None:
            labels = OrderedDict([i for i in labels.items() if i[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([i for i in preds.items() if i[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self) -> None:
        for metric in getattr(self, "metrics", []):
            metric.reset_local()

    def _collect(self, getter: str) -> Tuple[List[Any], List[Any]]:
        names: List[Any] = []
        values: List[Any] = []
        for metric in self.metrics:
            name, value = getattr(metric, getter)()
            if isinstance(name, string_types):
                name = [name]
            if isinstance(value, numeric_types):
                value = [value]
            names.extend(name)
            values.extend(value)
        return (names, values)

    def get(self) -> Tuple[List[Any], List[Any]]:
        return self._collect("get")

    def get_global(self) -> Tuple[List[Any], List[Any]]:
        return self._collect("get_global")

    def get_config(self) -> Dict[str, Any]:
        config = super().get_config()
        config.update({"metrics": [i.get_config() for i in self.metrics]})
        return config


# -- classification ---------------------------------------------------------------------------
@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of correct predictions; predictions with a class axis are argmax-ed along
    ``axis`` first."""

    def __init__(self, axis: int = 1, name: str = "accuracy",
                 output_names: Optional[List[str]] = None, label_names: Optional[List[str]] = None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred_label in zip(labels, preds):
            pred_np = _np(pred_label)
            label_np = _np(label)
            if pred_np.shape != label_np.shape:
                pred_np = numpy.argmax(pred_np, axis=self.axis)
            pred_np = pred_np.astype("int32").ravel()
            label_np = label_np.astype("int32").ravel()
            check_label_shapes(label_np, pred_np)
            num_correct = int((pred_np == label_np).sum())
            self.sum_metric += num_correct
            self.global_sum_metric += num_correct
            self.num_inst += len(pred_np)
            self.global_num_inst += len(pred_np)


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest-scored classes."""

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy",
                 output_names: Optional[List[str]] = None, label_names: Optional[List[str]] = None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError(f"TopKAccuracy: top_k must be > 1 (got {top_k}); use Accuracy for top-1")
        self.name += f"_{self.top_k}"

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred_label in zip(labels, preds):
            p = _np(pred_label).astype("float32")
            if p.ndim > 2:
                raise ValueError(f"TopKAccuracy: predictions should have at most 2 dims, got shape {p.shape}")
            lab = _np(label).astype("int32")
            check_label_shapes(lab, p)
            num_samples = p.shape[0]
            if p.ndim == 1:
                # MXNet compares the argpartition order of a 1-D prediction with the labels
                order = numpy.argpartition(p, -self.top_k)
                num_correct = int((order.ravel() == lab.ravel()).sum())
                self.sum_metric += num_correct
                self.global_sum_metric += num_correct
            else:
                num_classes = p.shape[1]
                top_k = min(num_classes, self.top_k)
                top = numpy.argpartition(p, -top_k, axis=1)[:, num_classes - top_k:]
                num_correct = int((top == lab.ravel()[:, None]).any(axis=1).sum())
                self.sum_metric += num_correct
                self.global_sum_metric += num_correct
            self.num_inst += num_samples
            self.global_num_inst += num_samples


class _BinaryClassificationMetrics:
    """Confusion counts for binary classification (local and global), shared by F1 and MCC."""

    def __init__(self) -> None:
        self.reset_stats()

    def update_binary_stats(self, label: Any, pred: Any) -> None:
        pred = _np(pred)
        label = _np(label).astype("int32")
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError(f"{self.__class__.__name__} currently only supports binary "
                             f"classification; labels hold {sorted(numpy.unique(label))}")
        pred_true = (pred_label == 1)
        pred_false = ~pred_true
        label_true = (label == 1)
        label_false = ~label_true
        tp = int((pred_true & label_true).sum())
        fp = int((pred_true & label_false).sum())
        fn = int((pred_false & label_true).sum())
        tn = int((pred_false & label_false).sum())
        self.true_positives += tp
        self.global_true_positives += tp
        self.false_positives += fp
        self.global_false_positives += fp
        self.false_negatives += fn
        self.global_false_negatives += fn
        self.true_negatives += tn
        self.global_true_negatives += tn

    @staticmethod
    def _prec(tp: int, fp: int) -> float:
        return float(tp) / (tp + fp) if tp + fp > 0 else 0.

    @staticmethod
    def _rec(tp: int, fn: int) -> float:
        return float(tp) / (tp + fn) if tp + fn > 0 else 0.

    @property
    def precision(self) -> float:
        return self._prec(self.true_positives, self.false_positives)

    @property
    def global_precision(self) -> float:
        return self._prec(self.global_true_positives, self.global_false_positives)

    @property
    def recall(self) -> float:
        return self._rec(self.true_positives, self.false_negatives)

    @property
    def global_recall(self) -> float:
        return self._rec(self.global_true_positives, self.global_false_negatives)

    @property
    def fscore(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.

    @property
    def global_fscore(self) -> float:
        p, r = self.global_precision, self.global_recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.

    def matthewscc(self, use_global: bool = False) -> float:
        """Matthews correlation coefficient (0 when there are no examples; zero factors in the
        denominator are skipped, as MXNet does)."""
        if use_global:
            if not self.global_total_examples:
                return 0.
            tp, fp = float(self.global_true_positives), float(self.global_false_positives)
            fn, tn = float(self.global_false_negatives), float(self.global_true_negatives)
        else:
            if not self.total_examples:
                return 0.
            tp, fp = float(self.true_positives), float(self.false_positives)
            fn, tn = float(self.false_negatives), float(self.true_negatives)
        terms = [(tp + fp), (tp + fn), (tn + fp), (tn + fn)]
        denom = 1.
        for t in terms:
            if t != 0.:
                denom *= t
        return ((tp * tn) - (fp * fn)) / math.sqrt(denom)

    @property
    def total_examples(self) -> int:
        return self.false_negatives + self.false_positives + self.true_negatives + self.true_positives

    @property
    def global_total_examples(self) -> int:
        return self.global_false_negatives + self.global_false_positives + \
            self.global_true_negatives + self.global_true_positives

    def local_reset_stats(self) -> None:
        self.false_positives = 0
        self.false_negatives = 0
        self.true_positives = 0
        self.true_negatives = 0

    def reset_stats(self) -> None:
        self.local_reset_stats()
        self.global_false_positives = 0
        self.global_false_negatives = 0
        self.global_true_positives = 0
        self.global_true_negatives = 0


class _BinaryMetric(EvalMetric):
    """Shared F1/MCC logic: 'macro' averages the per-batch score, 'micro' scores all counts."""

    def __init__(self, name: str, output_names: Optional[List[str]], label_names: Optional[List[str]],
                 average: str):
        if average not in ("macro", "micro"):
            raise ValueError(f"{type(self).__name__}: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self.metrics = _BinaryClassificationMetrics()
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         average=average, has_global_stats=True)

    def _score(self, use_global: bool) -> float:
        raise NotImplementedError

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred)
        if self.average == "macro":
            self.sum_metric += self._score(False)
            self.global_sum_metric += self._score(True)
            self.num_inst += 1
            self.global_num_inst += 1
            self.metrics.reset_stats()
        else:
            self.sum_metric = self._score(False) * self.metrics.total_examples
            self.global_sum_metric = self._score(True) * self.metrics.global_total_examples
            self.num_inst = self.metrics.total_examples
            self.global_num_inst = self.metrics.global_total_examples

    def reset(self) -> None:
        self.sum_metric = 0.
        self.num_inst = 0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0
        self.metrics.reset_stats()

    def reset_local(self) -> None:
        self.sum_metric = 0.
        self.num_inst = 0
        self.metrics.local_reset_stats()


@register
class F1(_BinaryMetric):
    """F1 score of binary classification (``pred`` holds 2 class scores per sample, class 1 is
    positive); ``average='macro'`` averages per-batch F1, 'micro' scores the pooled counts."""

    def __init__(self, name: str = "f1", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None, average: str = "macro"):
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global: bool) -> float:
        return self.metrics.global_fscore if use_global else self.metrics.fscore


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of binary classification (see F1 for ``average``)."""

    def __init__(self, name: str = "mcc", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None, average: str = "macro"):
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global: bool) -> float:
        return self.metrics.matthewscc(use_global)


@register
class PCC(EvalMetric):
    """Multiclass Pearson correlation coefficient (MCC generalised) over a confusion matrix
    that grows with the largest class id seen."""

    def __init__(self, name: str = "pcc", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None, has_global_stats: bool = True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc: int) -> None:
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), "constant", constant_values=(0))
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), "constant", constant_values=(0))
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat: numpy.ndarray) -> float:
        n = cmat.sum()
        x = cmat.sum(axis=1)
        y = cmat.sum(axis=0)
        cov_xx = numpy.sum(x * (n - x))
        cov_yy = numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        i = cmat.diagonal()
        cov_xy = numpy.sum(i * n - x * y)
        return cov_xy / (cov_xx * cov_yy) ** 0.5

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            lab = _np(label).astype("int32")
            p = _np(pred)
            if p.shape != lab.shape:
                p = p.argmax(axis=1)
            else:
                p = p.astype("int32")
            lab, p = lab.ravel(), p.ravel().astype("int64")
            n = int(max(p.max(), lab.max()))
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (p, lab), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self) -> float:  # type: ignore[override]
        return self._calc_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self) -> float:  # type: ignore[override]
        return self._calc_mcc(self.gcm) * self.global_num_inst

    def reset(self) -> None:
        self.global_num_inst = 0.
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0.
        self.lcm = numpy.zeros((self.k, self.k))


# -- probabilities ----------------------------------------------------------------------------
@register
class Perplexity(EvalMetric):
    """``exp(mean(-log p[label]))`` over all labels except ``ignore_label``; probabilities are
    picked along ``axis`` and floored at 1e-10."""

    def __init__(self, ignore_label: Optional[int], axis: int = -1, name: str = "perplexity",
                 output_names: Optional[List[str]] = None, label_names: Optional[List[str]] = None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels: Any, preds: Any) -> None:
        if len(labels) != len(preds):
            raise ValueError(f"Perplexity: got {len(labels)} labels but {len(preds)} predictions")
        loss = 0.
        num = 0
        for label, pred in zip(labels, preds):
            pt = pred._t.detach() if isinstance(pred, NDArray) else torch.as_tensor(_np(pred))
            lt = label._t.detach() if isinstance(label, NDArray) else torch.as_tensor(_np(label))
            nclass = pt.shape[self.axis]
            if lt.numel() != pt.numel() // nclass:
                raise ValueError(f"Perplexity: shape mismatch: label {tuple(lt.shape)} vs. pred "
                                 f"{tuple(pt.shape)} (one label per prediction row along axis {self.axis})")
            lt = lt.to(pt.device).reshape(-1)
            p = torch.movedim(pt, self.axis, -1).reshape(-1, nclass)
            picked = p.gather(1, lt.to(torch.int64).clamp(0, nclass - 1)[:, None])[:, 0]
            if self.ignore_label is not None:
                ignore = (lt == self.ignore_label).to(picked.dtype)
                num -= float(ignore.sum())
                picked = picked * (1 - ignore) + ignore
            loss -= float(torch.log(torch.clamp(picked, min=1e-10)).sum())
            num += picked.numel()
        self.sum_metric += loss
        self.global_sum_metric += loss
        self.num_inst += num
        self.global_num_inst += num

    def get(self) -> Tuple[str, float]:
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self) -> Tuple[str, float]:
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


# -- regression -------------------------------------------------------------------------------
class _Regression(EvalMetric):
    """Per-batch mean error; ``num_inst`` counts batches (as MXNet)."""

    def __init__(self, name: str, output_names: Optional[List[str]], label_names: Optional[List[str]]):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @staticmethod
    def _err(diff: numpy.ndarray) -> float:
        raise NotImplementedError

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            lab = _np(label)
            p = _np(pred)
            if lab.ndim == 1:
                lab = lab.reshape(lab.shape[0], 1)
            if p.ndim == 1:
                p = p.reshape(p.shape[0], 1)
            err = self._err(lab - p)
            self.sum_metric += err
            self.global_sum_metric += err
            self.num_inst += 1
            self.global_num_inst += 1


@register
class MAE(_Regression):
    """Mean absolute error, averaged over batches."""

    def __init__(self, name: str = "mae", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _err(diff: numpy.ndarray) -> float:
        return numpy.abs(diff).mean()


@register
class MSE(_Regression):
    """Mean squared error, averaged over batches."""

    def __init__(self, name: str = "mse", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _err(diff: numpy.ndarray) -> float:
        return (diff ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error per batch, averaged over batches."""

    def __init__(self, name: str = "rmse", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _err(diff: numpy.ndarray) -> float:
        return numpy.sqrt((diff ** 2.0).mean())


class _PickLogLoss(EvalMetric):
    def __init__(self, eps: float, name: str, output_names: Optional[List[str]],
                 label_names: Optional[List[str]]):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            lab = _np(label).ravel()
            p = _np(pred)
            if lab.shape[0] != p.shape[0]:
                raise ValueError(f"{type(self).__name__}: {lab.shape[0]} labels for "
                                 f"{p.shape[0]} prediction rows (pred shape {p.shape})")
            prob = p[numpy.arange(lab.shape[0], dtype=numpy.int64), numpy.int64(lab)]
            val = (-numpy.log(prob + self.eps)).sum()
            self.sum_metric += val
            self.global_sum_metric += val
            self.num_inst += lab.shape[0]
            self.global_num_inst += lab.shape[0]


@register
@alias("ce")
class CrossEntropy(_PickLogLoss):
    """Mean of ``-log(p[label] + eps)`` over samples (``pred`` holds probabilities)."""

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy",
                 output_names: Optional[List[str]] = None, label_names: Optional[List[str]] = None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_PickLogLoss):
    """Mean negative log-likelihood ``-log(p[label] + eps)`` over samples."""

    def __init__(self, eps: float = 1e-12, name: str = "nll-loss",
                 output_names: Optional[List[str]] = None, label_names: Optional[List[str]] = None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: 'macro' averages the per-batch
    coefficient, 'micro' computes it over all data seen (streaming Welford sums)."""

    def __init__(self, name: str = "pearsonr", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None, average: str = "macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"PearsonCorrelation: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        if self.average == "micro":
            self.reset_micro()

    def reset_micro(self) -> None:
        self._sse_p = 0.
        self._mean_p = 0.
        self._sse_l = 0.
        self._mean_l = 0.
        self._pred_nums = 0
        self._label_nums = 0
        self._conv = 0.

    def reset(self) -> None:
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0
        if self.average == "micro":
            self.reset_micro()

    @staticmethod
    def update_variance(new_values: numpy.ndarray, *aggregate: Any) -> Tuple[int, float, float]:
        """Welford's streaming update of (count, mean, sum of squared deviations)."""
        count, mean, m_2 = aggregate
        count += len(new_values)
        delta = new_values - mean
        mean += numpy.sum(delta / count)
        delta_2 = new_values - mean
        m_2 += numpy.sum(delta * delta_2)
        return count, mean, m_2

    def update_cov(self, label: numpy.ndarray, pred: numpy.ndarray) -> None:
        self._conv = self._conv + numpy.sum((label - self._mean_l) * (pred - self._mean_p))

    def update(self, labels: Any, preds: Any) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            lab = _np(label).ravel().astype(numpy.float64)
            p = _np(pred).ravel().astype(numpy.float64)
            if self.average == "macro":
                corr = numpy.corrcoef(p, lab)[0, 1]
                self.sum_metric += corr
                self.global_sum_metric += corr
                self.num_inst += 1
                self.global_num_inst += 1
            else:
                self.global_num_inst += 1
                self.num_inst += 1
                self._label_nums, self._mean_l, self._sse_l = \
                    self.update_variance(lab, self._label_nums, self._mean_l, self._sse_l)
                self.update_cov(lab, p)
                self._pred_nums, self._mean_p, self._sse_p = \
                    self.update_variance(p, self._pred_nums, self._mean_p, self._sse_p)

    def get(self) -> Tuple[str, float]:
        if self.num_inst == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return (self.name, self.sum_metric / self.num_inst)
        n = self._label_nums
        r = self._conv / ((n - 1) * numpy.sqrt(self._sse_p / (n - 1)) * numpy.sqrt(self._sse_l / (n - 1)))
        return (self.name, r)

    def get_global(self) -> Tuple[str, float]:
        if self.average == "micro":
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)


# -- losses -----------------------------------------------------------------------------------
@register
class Loss(EvalMetric):
    """Mean of the values of ``preds`` (the labels are ignored): feed it loss outputs."""

    def __init__(self, name: str = "loss", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _: Any, preds: Any) -> None:
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        for pred in preds:
            if isinstance(pred, NDArray):
                loss = float(pred._t.detach().sum())
                size = pred.size
            else:
                arr = _np(pred)
                loss = float(arr.sum())
                size = arr.size
            self.sum_metric += loss
            self.global_sum_metric += loss
            self.num_inst += size
            self.global_num_inst += size


@register
class Torch(Loss):
    """Dummy metric for torch criterions (same as Loss)."""

    def __init__(self, name: str = "torch", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions (same as Loss)."""

    def __init__(self, name: str = "caffe", output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred) -> value`` or ``-> (sum_metric, num_inst)`` on NumPy
    arrays; the value is averaged over calls (or over ``num_inst``)."""

    def __init__(self, feval: Callable[[numpy.ndarray, numpy.ndarray], Any], name: Optional[str] = None,
                 allow_extra_outputs: bool = False, output_names: Optional[List[str]] = None,
                 label_names: Optional[List[str]] = None):
        if name is None:
            name = feval.__name__
            if name.find("<") != -1:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names, has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels: Any, preds: Any) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        elif isinstance(labels, (NDArray, numpy.ndarray)) or isinstance(preds, (NDArray, numpy.ndarray)):
            labels = [labels] if isinstance(labels, (NDArray, numpy.ndarray)) else labels
            preds = [preds] if isinstance(preds, (NDArray, numpy.ndarray)) else preds
        for pred, label in zip(preds, labels):
            reval = self._feval(_np(label), _np(pred))
            if isinstance(reval, tuple):
                (sum_metric, num_inst) = reval
                self.sum_metric += sum_metric
                self.global_sum_metric += sum_metric
                self.num_inst += num_inst
                self.global_num_inst += num_inst
            else:
                self.sum_metric += reval
                self.global_sum_metric += reval
                self.num_inst += 1
                self.global_num_inst += 1

    def get_config(self) -> Dict[str, Any]:
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval: Callable[[numpy.ndarray, numpy.ndarray], Any], name: Optional[str] = None,
       allow_extra_outputs: bool = False) -> CustomMetric:
    """A CustomMetric from a NumPy function ``numpy_feval(label, pred)``."""
    def feval(label: numpy.ndarray, pred: numpy.ndarray) -> Any:
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
