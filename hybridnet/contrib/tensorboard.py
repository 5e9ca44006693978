"""``mx.contrib.tensorboard``: :class:`LogMetricsCallback`, metrics written as TensorBoard
scalars after each batch or evaluation (MXNet 1.9.1's, which used ``mxboard``).

The event-file writer is the first of ``torch.utils.tensorboard`` (needs the ``tensorboard``
package), ``tensorboardX`` and ``mxboard`` that imports; with none installed the callback
raises when made, saying what to install.
"""
from __future__ import annotations

import importlib
from typing import Any, Optional

from ..base import MXNetError

__all__ = ["LogMetricsCallback"]

_WRITERS = ("torch.utils.tensorboard", "tensorboardX", "mxboard")


def _summary_writer(logging_dir: str) -> Any:
    for module in _WRITERS:
        try:
            writer_cls = importlib.import_module(module).SummaryWriter
        except (ImportError, AttributeError):
            continue
        return writer_cls(logging_dir)
    raise MXNetError("mx.contrib.tensorboard.LogMetricsCallback needs a TensorBoard event "
                     "writer and none is installed (tried torch.utils.tensorboard, which needs "
                     "the 'tensorboard' package, tensorboardX and mxboard); "
                     "pip install tensorboard")


class LogMetricsCallback:
    """``batch_end_callback``/``eval_end_callback`` writing ``eval_metric``'s values as scalars
    (step: the epoch), named ``<prefix>-<metric>`` when ``prefix`` is given."""

    def __init__(self, logging_dir: str, prefix: Optional[str] = None):
        self.prefix = prefix
        self.summary_writer = _summary_writer(logging_dir)

    def __call__(self, param: Any) -> None:
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            if self.prefix is not None:
                name = f"{self.prefix}-{name}"
            self.summary_writer.add_scalar(name, value, global_step=param.epoch)
