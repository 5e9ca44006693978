"""BaseModule: the Module API's state machine and its high-level loops (MXNet 1.9.1's
``mxnet.module.base_module``).

A module is bound (memory for given input shapes), then its parameters are initialized, then an
optimizer is installed. Subclasses implement the intermediate API (``bind``, ``init_params``,
``forward``, ``backward``, ``update``, ``get_outputs``, ``update_metric``...); ``fit``,
``score``, ``predict`` and ``iter_predict`` are written once here on top of it.
"""
from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .. import metric as _metric
from .. import ndarray as nd
from ..base import MXNetError, _as_list
from ..context import cpu
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam

__all__ = ["BaseModule", "check_input_names", "parse_data_desc"]


def check_input_names(symbol: Any, names: Sequence[str], typename: str, throw: bool) -> None:
    """Every name in ``names`` must be an argument of ``symbol``: a ValueError (``throw``) or
    a warning naming the candidates otherwise (MXNet's ``_check_input_names``)."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (f"You created Module with Module(..., {typename}_names={list(names)}) but input with name "
               f"{name!r} is not found in symbol.list_arguments(). Did you mean one of: {candidates}")
        if throw:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)


def _check_names_match(names: Sequence[str], descs: Sequence[DataDesc], what: str, throw: bool) -> None:
    actual = [d[0] for d in descs]
    if sorted(names) != sorted(actual):
        msg = (f"Data provided by {what}_shapes don't match names specified by {what}_names "
               f"({[tuple(d) for d in descs]} vs. {list(names)})")
        if throw:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)


def _as_desc(x: Any, what: str) -> DataDesc:
    if isinstance(x, DataDesc):
        desc = x
    else:
        try:
            name, shape = x[0], x[1]
        except (TypeError, IndexError):
            raise TypeError(f"{what}: expected (name, shape) pairs or DataDesc, got {x!r}") from None
        desc = DataDesc(*x)
    shape = desc.shape
    if not isinstance(shape, (tuple, list)) or not all(isinstance(d, (int, np.integer)) for d in shape):
        raise TypeError(f"{what}: the shape of {desc.name!r} must be a tuple of ints, got "
                        f"{type(shape).__name__} {shape!r}")
    return desc


def parse_data_desc(data_names: Sequence[str], label_names: Sequence[str], data_shapes: Sequence,
                    label_shapes: Optional[Sequence]) -> Tuple[List[DataDesc], Optional[List[DataDesc]]]:
    """DataDescs for the data and label shapes; data names must match exactly, label names
    only warn (MXNet's ``_parse_data_desc``)."""
    data = [_as_desc(x, "data_shapes") for x in data_shapes]
    _check_names_match(data_names, data, "data", True)
    labels = None
    if label_shapes is not None:
        labels = [_as_desc(x, "label_shapes") for x in label_shapes]
        _check_names_match(label_names, labels, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data, labels


class BaseModule:
    """The Module API's common base (MXNet's ``mx.mod.BaseModule``).

    States: ``binded`` (memory for input shapes allocated), ``params_initialized``,
    ``optimizer_initialized``; ``for_training`` and ``inputs_need_grad`` record how it was
    bound.
    """

    def __init__(self, logger: Any = logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol: Any = None
        self._total_exec_bytes = 0

    # -- high-level API ------------------------------------------------------------------------
    def forward_backward(self, data_batch: Any) -> None:
        """``forward(is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _check_ready(self, who: str) -> None:
        if not self.binded:
            raise MXNetError(f"{who}: the module is not bound; call bind() first")
        if not self.params_initialized:
            raise MXNetError(f"{who}: parameters are not initialized; call init_params() first")

    def score(self, eval_data: Any, eval_metric: Any, num_batch: Optional[int] = None,
              batch_end_callback: Any = None, score_end_callback: Any = None, reset: bool = True,
              epoch: int = 0, sparse_row_id_fn: Any = None) -> list:
        """Run prediction over ``eval_data`` and return ``eval_metric.get_name_value()``."""
        self._check_ready("score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [eb.label for eb in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric,
                                   locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data: Any, num_batch: Optional[int] = None, reset: bool = True,
                     sparse_row_id_fn: Any = None) -> Iterator[Tuple[list, int, Any]]:
        """Yield ``(outputs, nbatch, batch)`` per batch, padding removed from the outputs."""
        self._check_ready("iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield (outputs, nbatch, eval_batch)

    def predict(self, eval_data: Any, num_batch: Optional[int] = None, merge_batches: bool = True,
                reset: bool = True, always_output_list: bool = False, sparse_row_id_fn: Any = None) -> Any:
        """Collect the outputs over ``eval_data`` (a DataIter, NDArray or NumPy array):
        concatenated per output when ``merge_batches`` (a single output unwrapped unless
        ``always_output_list``), else one list of outputs per batch."""
        self._check_ready("predict")
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError(f"predict: eval_data must be a DataIter, NDArray or numpy array, got "
                             f"{type(eval_data).__name__}")
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not output_list:
            return output_list
        if merge_batches:
            num_outputs = len(output_list[0])
            if any(len(out) != num_outputs for out in output_list):
                raise MXNetError("predict: cannot merge batches, the number of outputs differs between "
                                 "batches (bucketing?); pass merge_batches=False")
            merged = [nd.concatenate([out[i] for out in output_list]) for i in range(num_outputs)]
            if num_outputs == 1 and not always_output_list:
                return merged[0]
            return merged
        return output_list

    def fit(self, train_data: Any, eval_data: Any = None, eval_metric: Any = "acc",
            epoch_end_callback: Any = None, batch_end_callback: Any = None, kvstore: Any = "local",
            optimizer: Any = "sgd", optimizer_params: Any = (("learning_rate", 0.01),),
            eval_end_callback: Any = None, eval_batch_end_callback: Any = None,
            initializer: Any = Uniform(0.01), arg_params: Any = None, aux_params: Any = None,
            allow_missing: bool = False, force_rebind: bool = False, force_init: bool = False,
            begin_epoch: int = 0, num_epoch: Optional[int] = None, validation_metric: Any = None,
            monitor: Any = None, sparse_row_id_fn: Any = None) -> None:
        """Train for epochs ``[begin_epoch, num_epoch)``: bind, init_params, init_optimizer, then
        forward_backward/update per batch, metric and callbacks, scoring ``eval_data`` after
        each epoch (MXNet's ``BaseModule.fit``). Only one batch is referenced at a time."""
        if num_epoch is None:
            raise ValueError("fit: please specify num_epoch (the number of epochs to train)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            self._fit_epoch_begin(epoch, train_data)
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            eval_name_vals: list = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [db.label for db in data_batch], pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)

            # keep the devices' parameters (and aux states) in sync
            arg_params_, aux_params_ = self.get_params()
            self.set_params(arg_params_, aux_params_)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params_, aux_params_)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    def _fit_epoch_begin(self, epoch: int, train_data: Any) -> None:
        """Called by ``fit`` before each epoch's first batch (SVRGModule's full-gradient pass);
        ``train_data`` must be left reset."""

    # -- symbol and shapes (subclasses) ----------------------------------------------------------
    @property
    def data_names(self) -> List[str]:
        raise NotImplementedError()

    @property
    def output_names(self) -> List[str]:
        raise NotImplementedError()

    @property
    def data_shapes(self) -> List[DataDesc]:
        raise NotImplementedError()

    @property
    def label_shapes(self) -> Optional[List[DataDesc]]:
        raise NotImplementedError()

    @property
    def output_shapes(self) -> List[tuple]:
        raise NotImplementedError()

    @property
    def symbol(self) -> Any:
        """The symbol this module runs."""
        return self._symbol

    # -- parameters ------------------------------------------------------------------------------
    def get_params(self) -> Tuple[dict, dict]:
        raise NotImplementedError()

    def init_params(self, initializer: Any = Uniform(0.01), arg_params: Any = None, aux_params: Any = None,
                    allow_missing: bool = False, force_init: bool = False, allow_extra: bool = False) -> None:
        raise NotImplementedError()

    def set_params(self, arg_params: dict, aux_params: dict, allow_missing: bool = False,
                   force_init: bool = True, allow_extra: bool = False) -> None:
        """Assign parameter values: ``init_params`` with these values and no initializer; with
        ``allow_missing`` the values are written in place and the missing ones keep theirs."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=2)
            return
        self._assign_params(arg_params, aux_params, force_init, allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _assign_params(self, arg_params: dict, aux_params: dict, force_init: bool,
                       allow_extra: bool) -> None:
        """Write the given values into the bound parameters (``set_params(allow_missing=True)``)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=True, force_init=force_init, allow_extra=allow_extra)

    def save_params(self, fname: str) -> None:
        """Save parameters as MXNet does (``arg:``/``aux:`` prefixed names, one atomic file)."""
        arg_params, aux_params = self.get_params()
        save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({"aux:%s" % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
        nd.save(fname, save_dict)

    def load_params(self, fname: str) -> None:
        """Load parameters saved by :meth:`save_params` (or ``mx.model.save_checkpoint``)."""
        save_dict = nd.load(fname)
        if not isinstance(save_dict, dict):
            raise ValueError(f"load_params: {fname!r} holds unnamed arrays; expected names "
                             f"'arg:<name>' / 'aux:<name>'")
        arg_params, aux_params = {}, {}
        for k, value in save_dict.items():
            kind, sep, name = k.partition(":")
            if sep and kind == "arg":
                arg_params[name] = value
            elif sep and kind == "aux":
                aux_params[name] = value
            else:
                raise ValueError(f"load_params: invalid parameter name {k!r} in {fname!r}; names start "
                                 f"with 'arg:' or 'aux:'")
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context: bool = True) -> list:
        """States of the module (none for a module without state inputs)."""
        if not (self.binded and self.params_initialized):
            raise MXNetError("get_states: bind and init_params first")
        if merge_multi_context:
            return []
        return [[]]

    def set_states(self, states: Any = None, value: Any = None) -> None:
        """Set states; a module without state inputs accepts only empty states."""
        if states or value is not None:
            raise MXNetError(f"{type(self).__name__} has no states to set")

    def install_monitor(self, mon: Any) -> None:
        raise NotImplementedError()

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Prepare for the next batch (bucket switch, sparse pulls); nothing by default."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not used: parameters are dense here"))

    # -- computation (subclasses) ------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: Optional[bool] = None) -> None:
        raise NotImplementedError()

    def backward(self, out_grads: Any = None) -> None:
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        raise NotImplementedError()

    def update(self) -> None:
        raise NotImplementedError()

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        raise NotImplementedError()

    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        raise NotImplementedError()

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),), force_init: bool = False) -> None:
        raise NotImplementedError()
