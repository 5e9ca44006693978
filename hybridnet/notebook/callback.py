"""``mx.notebook.callback``: training-progress callbacks for notebooks (MXNet 1.9.1's).

:class:`PandasLogger` records the metrics of every ``frequent``-th training batch, of each
evaluation and each epoch's time as rows (``rows['train'|'eval'|'epoch']``, plain dicts) and
gives them as pandas DataFrames (``train_df``...) when pandas is installed. The live Bokeh
charts (``LiveBokehChart``, ``LiveTimeSeries``, ``LiveLearningCurve``) draw in a notebook
and need bokeh; without it they raise on construction saying so.

Two MXNet slips are not copied: ``batches_per_sec`` and ``records_per_sec`` are not swapped, and
``epoch_cb`` accepts the arguments ``fit`` passes to an epoch-end callback.
"""
from __future__ import annotations

import datetime
import importlib
import time
from collections import defaultdict
from typing import Any, Dict, List

from ..base import MXNetError

__all__ = ["PandasLogger", "LiveBokehChart", "LiveTimeSeries", "LiveLearningCurve", "args_wrapper"]


def _require(package: str, who: str) -> Any:
    try:
        return importlib.import_module(package)
    except ImportError:
        raise MXNetError(f"mx.notebook.callback.{who} needs the '{package}' package, which is "
                         f"not installed; pip install {package}") from None


class PandasLogger:
    """Training statistics as rows (and pandas DataFrames): train, eval, epoch."""

    def __init__(self, batch_size: int, frequent: int = 50):
        self.batch_size = batch_size
        self.frequent = frequent
        self.rows: Dict[str, List[Dict[str, Any]]] = {"train": [], "eval": [], "epoch": []}
        self.last_time = time.time()
        self.start_time = datetime.datetime.now()
        self.last_epoch_time = datetime.datetime.now()

    def _frame(self, name: str) -> Any:
        pd = _require("pandas", "PandasLogger")
        return pd.DataFrame(self.rows[name])

    @property
    def train_df(self) -> Any:
        """Metrics of every ``frequent``-th training batch (a pandas DataFrame)."""
        return self._frame("train")

    @property
    def eval_df(self) -> Any:
        """Metrics of each evaluation (a pandas DataFrame)."""
        return self._frame("eval")

    @property
    def epoch_df(self) -> Any:
        """Elapsed and epoch times (a pandas DataFrame)."""
        return self._frame("epoch")

    @property
    def all_dataframes(self) -> Dict[str, Any]:
        return {name: self._frame(name) for name in self.rows}

    def elapsed(self) -> datetime.timedelta:
        """Time since the logger was made."""
        return datetime.datetime.now() - self.start_time

    def append_metrics(self, metrics: Dict[str, Any], df_name: str) -> None:
        """Add one row to the ``df_name`` table."""
        self.rows[df_name].append(dict(metrics))

    def train_cb(self, param: Any) -> None:
        """``batch_end_callback``: a row every ``frequent`` batches."""
        if param.nbatch % self.frequent == 0:
            self._process_batch(param, "train")

    def eval_cb(self, param: Any) -> None:
        """``eval_end_callback``: a row per evaluation."""
        self._process_batch(param, "eval")

    def _process_batch(self, param: Any, name: str) -> None:
        now = time.time()
        metrics: Dict[str, Any] = {}
        if param.eval_metric is not None:
            metrics = dict(param.eval_metric.get_name_value())
            param.eval_metric.reset()
        try:
            speed = self.frequent / (now - self.last_time)
        except ZeroDivisionError:
            speed = float("inf")
        metrics["batches_per_sec"] = speed
        metrics["records_per_sec"] = speed * self.batch_size
        metrics["elapsed"] = self.elapsed()
        metrics["minibatch_count"] = param.nbatch
        metrics["epoch"] = param.epoch
        self.append_metrics(metrics, name)
        self.last_time = now

    def epoch_cb(self, *args: Any) -> None:
        """``epoch_end_callback``: a row with the elapsed and the epoch's time."""
        now = datetime.datetime.now()
        self.append_metrics({"elapsed": self.elapsed(), "epoch_time": now - self.last_epoch_time},
                            "epoch")
        self.last_epoch_time = now

    def callback_args(self) -> Dict[str, Any]:
        """The keyword arguments of ``fit`` that install these callbacks."""
        return {"batch_end_callback": self.train_cb, "eval_end_callback": self.eval_cb,
                "epoch_end_callback": self.epoch_cb}


class LiveBokehChart:
    """A chart redrawn in a notebook while training runs (needs bokeh)."""

    def __init__(self, pandas_logger: Any = None, metric_name: str = "", display_freq: int = 10,
                 batch_size: Any = None, frequent: int = 50):
        _require("bokeh", type(self).__name__)
        raise MXNetError(f"mx.notebook.callback.{type(self).__name__}: live notebook charts are "
                         f"not implemented in hybridnet; plot PandasLogger's tables instead")


class LiveTimeSeries(LiveBokehChart):
    """A live time series of a value (needs bokeh)."""

    def __init__(self, **fig_params: Any):
        super().__init__()


class LiveLearningCurve(LiveBokehChart):
    """Live training and evaluation curves of a metric (needs bokeh)."""

    def __init__(self, metric_name: str, display_freq: int = 10, frequent: int = 50):
        super().__init__(None, metric_name, display_freq, None, frequent)


def args_wrapper(*args: Any) -> Dict[str, list]:
    """The ``fit`` keyword arguments of several callback objects, merged into lists."""
    out: Dict[str, list] = defaultdict(list)
    for callback in args:
        for k, v in callback.callback_args().items():
            out[k].append(v)
    return dict(out)
