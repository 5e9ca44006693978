"""``mx.contrib.svrg_optimization.svrg_module``: :class:`SVRGModule` (MXNet 1.9.1's API).

Every ``update_freq`` epochs the module takes a snapshot of its weights and computes the full
gradient over the training data at that snapshot (an auxiliary Module holds the snapshot). Each
batch then updates with the variance-reduced gradient
``g(batch, w) - g(batch, snapshot) + full_gradient`` through the chosen optimizer. With several
contexts the full gradient is averaged over them (MXNet does this through the KVStore).
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional

from ... import ndarray as nd
from ...context import cpu
from ...initializer import Uniform
from ...module.module import Module

__all__ = ["SVRGModule"]


class SVRGModule(Module):
    """A Module trained with SVRG; ``update_freq``: epochs between full-gradient passes."""

    def __init__(self, symbol: Any, data_names: Any = ("data",), label_names: Any = ("softmax_label",),
                 logger: Any = logging, context: Any = None, work_load_list: Any = None,
                 fixed_param_names: Any = None, state_names: Any = None, group2ctxs: Any = None,
                 compression_params: Any = None, update_freq: Optional[int] = None):
        context = cpu() if context is None else context
        super().__init__(symbol, data_names=data_names, label_names=label_names, logger=logger,
                         context=context, work_load_list=work_load_list,
                         fixed_param_names=fixed_param_names, state_names=state_names,
                         group2ctxs=group2ctxs, compression_params=compression_params)
        if not isinstance(update_freq, int) or isinstance(update_freq, bool):
            raise TypeError("update_freq in SVRGModule must be an integer to represent the "
                            "frequency for calculating full gradients")
        if update_freq <= 0:
            raise ValueError("update_freq in SVRGModule must be a positive integer to represent "
                             "the frequency for calculating full gradients")
        self.update_freq = update_freq
        self._mod_aux = Module(symbol, data_names, label_names, logger, context, work_load_list,
                               fixed_param_names, state_names, group2ctxs, compression_params)
        self._param_dict: Optional[List[Dict[str, Any]]] = None
        self._ctx_len = len(self._context)

    def _reset_bind(self) -> None:
        super()._reset_bind()
        self._mod_aux._reset_bind()

    def reshape(self, data_shapes: Any, label_shapes: Any = None) -> None:
        super().reshape(data_shapes, label_shapes=label_shapes)
        self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        super().bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                     shared_module, grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                               force_rebind, shared_module, grad_req)

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Install ``optimizer`` and zero full gradients (one dict per context)."""
        self._param_dict = [{k: nd.zeros(shape=v.shape, ctx=self._context[i])
                             for k, v in self.get_params()[0].items()}
                            for i in range(self._ctx_len)]
        super().init_optimizer(kvstore=kvstore, optimizer=optimizer,
                               optimizer_params=optimizer_params, force_init=force_init)

    def forward(self, data_batch: Any, is_train: Optional[bool] = None) -> None:
        super().forward(data_batch, is_train)
        if is_train:
            self._mod_aux.forward(data_batch, is_train)

    def backward(self, out_grads: Any = None) -> None:
        super().backward(out_grads)
        if self._mod_aux.binded:
            self._mod_aux.backward(out_grads)

    def update(self) -> None:
        """Replace each gradient by its variance-reduced form, then update the weights."""
        self._update_svrg_gradients()
        super().update()

    def update_full_grads(self, train_data: Any) -> None:
        """Snapshot the weights into the auxiliary module and average its gradients over one
        pass of ``train_data`` (padding of the last batch discounted)."""
        if self._param_dict is None:
            raise RuntimeError("SVRGModule.update_full_grads: call init_optimizer first")
        param_names = self._exec_group.param_names
        arg, aux = self.get_params()
        self._mod_aux.set_params(arg_params=arg, aux_params=aux)
        for ctx in range(self._ctx_len):
            for name in param_names:
                self._param_dict[ctx][name][:] = 0
        train_data.reset()
        nbatch = 0
        padding = 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            nbatch += 1
            for ctx in range(self._ctx_len):
                for index, name in enumerate(param_names):
                    grads = self._mod_aux._exec_group.grad_arrays[index][ctx]
                    self._param_dict[ctx][name] += grads.as_in_context(self._context[ctx])
            padding = batch.pad
        true_num_batch = nbatch - padding / train_data.batch_size
        for name in param_names:
            for i in range(self._ctx_len):
                self._param_dict[i][name] /= true_num_batch
            if self._ctx_len > 1:
                total = sum(d[name].as_in_context(self._context[0]) for d in self._param_dict)
                for i in range(self._ctx_len):
                    self._param_dict[i][name] = (total / self._ctx_len).as_in_context(self._context[i])

    @staticmethod
    def _svrg_grads_update_rule(g_curr_batch_curr_weight: List[Any],
                                g_curr_batch_special_weight: List[Any],
                                g_special_weight_all_batch: List[Any]) -> List[Any]:
        """``g - g_snapshot + full_grad``, in place in the first list's arrays."""
        for index, grad in enumerate(g_curr_batch_curr_weight):
            grad -= g_curr_batch_special_weight[index]
            grad += g_special_weight_all_batch[index]
        return g_curr_batch_curr_weight

    def _update_svrg_gradients(self) -> None:
        if self._param_dict is None:
            raise RuntimeError("SVRGModule.update: call init_optimizer first")
        for ctx in range(self._ctx_len):
            for index, name in enumerate(self._exec_group.param_names):
                g = self._exec_group.grad_arrays[index][ctx]
                g_snapshot = self._mod_aux._exec_group.grad_arrays[index][ctx]
                self._svrg_grads_update_rule([g], [g_snapshot], [self._param_dict[ctx][name]])

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

    def fit(self, train_data: Any, eval_data: Any = None, eval_metric: Any = "acc",
            epoch_end_callback: Any = None, batch_end_callback: Any = None, kvstore: Any = "local",
            optimizer: Any = "sgd", optimizer_params: Any = (("learning_rate", 0.01),),
            eval_end_callback: Any = None, eval_batch_end_callback: Any = None,
            initializer: Any = Uniform(0.01), arg_params: Any = None, aux_params: Any = None,
            allow_missing: bool = False, force_rebind: bool = False, force_init: bool = False,
            begin_epoch: int = 0, num_epoch: Optional[int] = None, validation_metric: Any = None,
            monitor: Any = None, sparse_row_id_fn: Any = None) -> None:
        """``BaseModule.fit`` with a full-gradient pass every ``update_freq`` epochs
        (``_fit_epoch_begin``)."""
        if num_epoch is None:
            raise ValueError("SVRGModule.fit: please specify num_epoch")
        super().fit(train_data, eval_data=eval_data, eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
                    batch_end_callback=batch_end_callback, kvstore=kvstore, optimizer=optimizer,
                    optimizer_params=optimizer_params, eval_end_callback=eval_end_callback,
                    eval_batch_end_callback=eval_batch_end_callback, initializer=initializer,
                    arg_params=arg_params, aux_params=aux_params, allow_missing=allow_missing,
                    force_rebind=force_rebind, force_init=force_init, begin_epoch=begin_epoch,
                    num_epoch=num_epoch, validation_metric=validation_metric, monitor=monitor,
                    sparse_row_id_fn=sparse_row_id_fn)

    def _fit_epoch_begin(self, epoch: int, train_data: Any) -> None:
        if epoch % self.update_freq == 0:
            self.update_full_grads(train_data)
            train_data.reset()
