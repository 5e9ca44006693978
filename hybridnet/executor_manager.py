"""``mx.executor_manager``: the data-parallel executor manager of MXNet's first training API
(``mx.model.FeedForward`` era), over hybridnet's Module-API executor group.

:class:`DataParallelExecutorManager` binds ``symbol`` on every context of ``ctx``, splits each
batch by ``work_load_list``, and runs forward/backward on all of them; ``copy_to`` writes the
device average of the parameters. ``_split_input_slice`` and ``_load_data``/``_load_label``
are MXNet's helpers.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence

from .base import MXNetError
from .context import Context
from .module.executor_group import DataParallelExecutorGroup, split_input_slice
from .ndarray.ndarray import NDArray

__all__ = ["DataParallelExecutorManager"]


def _split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> List[slice]:
    """One slice of the batch per device, proportional to ``work_load_list``."""
    return split_input_slice(batch_size, work_load_list)


def _load_general(data: Sequence[NDArray], targets: Sequence[Any]) -> None:
    """Copy each array into its target: one NDArray, or ``[(slice, NDArray), ...]`` parts."""
    for d_src, d_targets in zip(data, targets):
        if isinstance(d_targets, NDArray):
            d_src.copyto(d_targets)
            continue
        if d_targets[-1][0].stop != d_src.shape[0]:
            raise ValueError(f"batch size mismatch: expected {d_targets[-1][0].stop}, "
                             f"got {d_src.shape[0]}")
        for slice_idx, d_dst in d_targets:
            d_src[slice_idx].copyto(d_dst)


def _load_data(batch: Any, targets: Sequence[Any]) -> None:
    """Load ``batch.data`` into sliced arrays."""
    _load_general(batch.data, targets)


def _load_label(batch: Any, targets: Sequence[Any]) -> None:
    """Load ``batch.label`` into sliced arrays."""
    _load_general(batch.label, targets)


class DataParallelExecutorManager:
    """Executors of ``symbol`` on the contexts ``ctx``, fed by ``train_data``'s batches."""

    def __init__(self, symbol: Any, ctx: Any, train_data: Any, arg_names: List[str],
                 param_names: List[str], aux_names: List[str],
                 work_load_list: Optional[List[float]] = None, logger: Any = None,
                 sym_gen: Any = None):
        if sym_gen is not None:
            raise MXNetError("DataParallelExecutorManager: sym_gen (bucketing) is not supported "
                             "here; use mx.mod.BucketingModule")
        contexts = [ctx] if isinstance(ctx, Context) else list(ctx)
        if work_load_list is None:
            work_load_list = [1] * len(contexts)
        if len(work_load_list) != len(contexts):
            raise ValueError("DataParallelExecutorManager: work_load_list must have one entry "
                             "per context")
        self.logger = logger or logging
        self.arg_names, self.param_names, self.aux_names = arg_names, param_names, aux_names
        self.ctx = contexts
        self.symbol = symbol
        self.execgrp = DataParallelExecutorGroup(
            symbol, contexts, list(work_load_list), train_data.provide_data,
            train_data.provide_label, list(param_names), for_training=True,
            inputs_need_grad=False, logger=self.logger)
        self.slices = self.execgrp.slices
        self._batch: Any = None

    def install_monitor(self, monitor: Any) -> None:
        """Install ``monitor`` (an ``mx.mon.Monitor``) on every executor."""
        self.execgrp.install_monitor(monitor)

    def set_params(self, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray]) -> None:
        """Copy parameter values into every executor."""
        self.execgrp.set_params(arg_params, aux_params, allow_extra=True)

    def copy_to(self, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray]) -> None:
        """Write the device average of each parameter and auxiliary state into the dicts."""
        self.execgrp.get_params(arg_params, aux_params)

    @property
    def param_arrays(self) -> list:
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self) -> list:
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self) -> list:
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch: Any) -> None:
        """Take the batch the next ``forward`` runs on."""
        self._batch = data_batch

    def forward(self, is_train: bool = False) -> None:
        if self._batch is None:
            raise MXNetError("DataParallelExecutorManager.forward: call load_data_batch first")
        self.execgrp.forward(self._batch, is_train=is_train)

    def backward(self) -> None:
        self.execgrp.backward()

    def update_metric(self, metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        self.execgrp.update_metric(metric, labels, pre_sliced)
