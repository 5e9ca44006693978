"""BucketingModule: one Module per bucket key (e.g. sequence length), all sharing the default
bucket's parameters, gradients and optimizer (MXNet 1.9.1's ``mx.mod.BucketingModule``).

``sym_gen(bucket_key) -> (symbol, data_names, label_names)`` builds each bucket's graph; it
runs under a fresh NameManager so automatic names (``embedding0_weight``...) are the same in
every bucket.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import context as _context
from .. import ndarray as nd
from .. import symbol as _sym
from ..base import MXNetError
from ..initializer import Uniform
from ..model import load_params
from ..name import NameManager
from .base_module import BaseModule, check_input_names
from .module import Module, _name_list

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """Modules for several bucket keys sharing parameters; each batch's ``bucket_key`` picks
    (and on first use binds) its bucket."""

    def __init__(self, sym_gen: Callable, default_bucket_key: Any = None, logger: Any = logging,
                 context: Any = None, work_load_list: Optional[List[float]] = None,
                 fixed_param_names: Any = None, state_names: Any = None, group2ctxs: Any = None,
                 compression_params: Optional[dict] = None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names = _name_list(data_names)
        label_names = _name_list(label_names)
        state_names = _name_list(state_names)
        fixed_param_names = _name_list(fixed_param_names)
        check_input_names(symbol, data_names, "data", True)
        check_input_names(symbol, label_names, "label", False)
        check_input_names(symbol, state_names, "state", True)
        check_input_names(symbol, fixed_param_names, "fixed_param", True)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context if context is not None else _context.cpu()
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets: Dict[Any, Module] = {}
        self._curr_module: Optional[Module] = None
        self._curr_bucket_key: Any = None
        self._params_dirty = False
        self._monitor: Any = None
        self._grad_req: Any = None

    def _reset_bind(self) -> None:
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args: Any, **kwargs: Any) -> Tuple[Any, Any, Any]:
        with NameManager():
            return self._sym_gen(*args, **kwargs)

    def _module_for(self, symbol: Any, data_names: Any, label_names: Any) -> Module:
        return Module(symbol, data_names, label_names, logger=self.logger, context=self._context,
                      work_load_list=self._work_load_list, fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names, group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)

    def _current(self, who: str) -> Module:
        if not self.binded or self._curr_module is None:
            raise MXNetError(f"BucketingModule.{who}: the module is not bound; call bind() first")
        return self._curr_module

    # -- names and shapes -----------------------------------------------------------------------------
    @property
    def data_names(self) -> List[str]:
        if self.binded:
            return self._curr_module.data_names
        return _name_list(self._call_sym_gen(self._default_bucket_key)[1])

    @property
    def output_names(self) -> List[str]:
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self) -> list:
        return self._current("data_shapes").data_shapes

    @property
    def label_shapes(self) -> Optional[list]:
        return self._current("label_shapes").label_shapes

    @property
    def output_shapes(self) -> list:
        return self._current("output_shapes").output_shapes

    @property
    def symbol(self) -> Any:
        """The current bucket's symbol."""
        return self._current("symbol").symbol

    # -- parameters -------------------------------------------------------------------------------------
    def get_params(self) -> Tuple[dict, dict]:
        if not self.params_initialized:
            raise MXNetError("BucketingModule.get_params: parameters are not initialized")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def _assign_params(self, arg_params: dict, aux_params: dict, force_init: bool,
                       allow_extra: bool) -> None:
        self._current("set_params").set_params(arg_params, aux_params, allow_missing=True,
                                               force_init=force_init, allow_extra=allow_extra)

    def init_params(self, initializer: Any = Uniform(0.01), arg_params: Any = None, aux_params: Any = None,
                    allow_missing: bool = False, force_init: bool = False, allow_extra: bool = False) -> None:
        if self.params_initialized and not force_init:
            return
        self._current("init_params").init_params(
            initializer=initializer, arg_params=arg_params, aux_params=aux_params,
            allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context: bool = True) -> list:
        self._check_ready("get_states")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states: Any = None, value: Any = None) -> None:
        self._check_ready("set_states")
        self._curr_module.set_states(states, value)

    # -- binding ------------------------------------------------------------------------------------------
    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind the default bucket (others are bound by ``switch_bucket`` on first use)."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNetError("BucketingModule.bind: shared_module is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        module = self._buckets.get(self._default_bucket_key)
        if module is None:
            module = self._module_for(symbol, data_names, label_names)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind=False,
                    shared_module=None, grad_req=grad_req)
        self.binded = True
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key: Any, data_shapes: Any, label_shapes: Any = None) -> None:
        """Make ``bucket_key`` current, building and binding its module (sharing the default
        bucket's parameters) the first time."""
        curr = self._current("switch_bucket")
        module = self._buckets.get(bucket_key)
        if module is None:
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = self._module_for(symbol, data_names, label_names)
            self._buckets[bucket_key] = module
        if not module.binded:
            module.bind(data_shapes, label_shapes, curr.for_training, curr.inputs_need_grad,
                        force_rebind=False, shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),), force_init: bool = False) -> None:
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # -- computation -----------------------------------------------------------------------------------------
    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Bind the batch's bucket ahead of time (the current bucket stays current)."""
        self._check_ready("prepare")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch: Any, is_train: Optional[bool] = None) -> None:
        self._check_ready("forward")
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads: Any = None) -> None:
        self._check_ready("backward")
        self._curr_module.backward(out_grads=out_grads)

    def update(self) -> None:
        self._check_ready("update")
        if not self.optimizer_initialized:
            raise MXNetError("BucketingModule.update: call init_optimizer() first")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        self._check_ready("get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        self._check_ready("get_input_grads")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        self._check_ready("update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        self._current("install_monitor")
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    # -- checkpoints -------------------------------------------------------------------------------------------
    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """Write ``prefix-%04d.params``, one ``prefix-<key>-symbol.json`` per bucket and
        ``prefix.buckets`` (the keys, int32)."""
        if not self._buckets:
            raise MXNetError("BucketingModule.save_checkpoint: an empty BucketingModule cannot be saved")
        self.save_params("%s-%04d.params" % (prefix, epoch))
        for bucket_key in self._buckets:
            symbol, _, _ = self._call_sym_gen(bucket_key)
            symbol.save("%s-%s-symbol.json" % (prefix, bucket_key), remove_amp_cast=remove_amp_cast)
        nd.save("%s.buckets" % prefix, nd.array(list(self._buckets.keys()), dtype=np.int32))

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen: Optional[Callable] = None, default_bucket_key: Any = None,
             **kwargs: Any) -> "BucketingModule":
        """A BucketingModule from :meth:`save_checkpoint`'s files (``sym_gen`` names each
        bucket's inputs)."""
        if sym_gen is None or default_bucket_key is None:
            raise ValueError("BucketingModule.load: sym_gen and default_bucket_key are required")
        buckets = [int(k) for k in nd.load("%s.buckets" % prefix)[0].asnumpy().astype("int32")]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for bucket_key in buckets:
            _, data_names, label_names = mod._call_sym_gen(bucket_key)
            symbol = _sym.load("%s-%s-symbol.json" % (prefix, bucket_key))
            mod._buckets[bucket_key] = Module(symbol, data_names, label_names, **kwargs)
        if default_bucket_key not in mod._buckets:
            raise MXNetError(f"BucketingModule.load: default_bucket_key {default_bucket_key!r} is not "
                             f"among the saved buckets {buckets}")
        mod._curr_module = mod._buckets[default_bucket_key]
        arg_params, aux_params = load_params(prefix, epoch)
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod

    @staticmethod
    def load_dict(sym_dict: Optional[dict] = None, sym_gen: Optional[Callable] = None,
                  default_bucket_key: Any = None, arg_params: Optional[dict] = None,
                  aux_params: Optional[dict] = None, **kwargs: Any) -> "BucketingModule":
        """A BucketingModule from ``{bucket_key: symbol}`` plus shared parameters."""
        if sym_dict is None or arg_params is None or aux_params is None or default_bucket_key is None:
            raise ValueError("BucketingModule.load_dict: sym_dict, arg_params, aux_params and "
                             "default_bucket_key are required")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        _, data_names, label_names = mod._call_sym_gen(default_bucket_key)
        for bucket_key, loaded in sym_dict.items():
            mod._buckets[bucket_key] = Module(loaded, data_names, label_names, **kwargs)
        mod._curr_module = mod._buckets[default_bucket_key]
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod
