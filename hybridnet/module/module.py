"""Module: a Symbol bound to executors on one or more contexts, with parameters, an optimizer
and MXNet's checkpoint files (MXNet 1.9.1's ``mx.mod.Module``)."""
from __future__ import annotations

import logging
import os
import warnings
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .. import context as _context
from .. import optimizer as opt
from ..base import MXNetError
from ..formats.atomic import write_atomic
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..model import (_create_kvstore, _initialize_kvstore, _update_params, _update_params_on_kvstore,
                     load_checkpoint)
from ..ndarray.ndarray import NDArray
from ..ndarray.sparse import store_into, wrap
from ..ops import storage as _storage
from ..ndarray.write_guard import new_guard, set_guard
from ..optimizer._states_check import check_against_params, clone_state
from ..optimizer.optimizer import decode_states
from .base_module import BaseModule, check_input_names, parse_data_desc
from .executor_group import DataParallelExecutorGroup

__all__ = ["Module"]


def _name_list(names: Any) -> List[str]:
    if names is None:
        return []
    if isinstance(names, str):
        return [names]
    return list(names)


def _zeros_like_cpu(a: NDArray) -> NDArray:
    """A zero CPU array of ``a``'s shape, dtype and storage type (a row_sparse weight's
    ``arg_params`` entry is row_sparse, as in MXNet)."""
    return wrap(_storage.zeros(a.stype, a.shape, a._t.dtype, "cpu"))


class Module(BaseModule):
    """Wraps a Symbol: ``data_names`` and ``label_names`` are its inputs fed from batches,
    ``state_names`` inputs set with ``set_states``, every other argument a parameter
    (``fixed_param_names`` are not updated). ``context`` may be a list: each batch is then
    split over the contexts (data parallelism, ``work_load_list`` weights the split)."""

    def __init__(self, symbol: Any, data_names: Any = ("data",), label_names: Any = ("softmax_label",),
                 logger: Any = logging, context: Any = None, work_load_list: Optional[List[float]] = None,
                 fixed_param_names: Any = None, state_names: Any = None, group2ctxs: Any = None,
                 compression_params: Optional[dict] = None):
        super().__init__(logger=logger)
        if context is None:
            context = _context.cpu()
        if isinstance(context, _context.Context):
            context = [context]
        self._context = list(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ValueError(f"work_load_list has {len(work_load_list)} entries for "
                             f"{len(self._context)} contexts")
        self._work_load_list = list(work_load_list)
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        data_names = _name_list(data_names)
        label_names = _name_list(label_names)
        state_names = _name_list(state_names)
        fixed_param_names = _name_list(fixed_param_names)
        check_input_names(symbol, data_names, "data", True)
        check_input_names(symbol, label_names, "label", False)
        check_input_names(symbol, state_names, "state", True)
        check_input_names(symbol, fixed_param_names, "fixed_param", True)
        input_names = data_names + label_names + state_names
        self._param_names = [x for x in symbol.list_arguments() if x not in input_names]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()
        self._arg_params: Optional[Dict[str, NDArray]] = None
        self._aux_params: Optional[Dict[str, NDArray]] = None
        self._params_dirty = False
        self._params_file: Optional[str] = None  # Module.load's .params file, named in bind's errors
        self._write_guard = new_guard()  # update() vs reads of the weights in other threads
        if compression_params:
            raise MXNetError(f"Module: gradient compression ({compression_params!r}) is not supported "
                             f"by hybridnet; drop compression_params")
        self._compression_params = compression_params
        self._optimizer: Any = None
        self._kvstore: Any = None
        self._update_on_kvstore: Optional[bool] = None
        self._updater: Any = None
        self._preload_opt_states: Optional[str] = None
        self._grad_req: Any = None
        self._exec_group: Optional[DataParallelExecutorGroup] = None
        self._data_shapes: Optional[List[DataDesc]] = None
        self._label_shapes: Optional[List[DataDesc]] = None

    # -- checkpoints ------------------------------------------------------------------------------
    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False, **kwargs: Any) -> "Module":
        """A Module from ``prefix-symbol.json`` and ``prefix-%04d.params`` (and, with
        ``load_optimizer_states``, ``prefix-%04d.states``, applied by ``init_optimizer``);
        ``kwargs`` go to the constructor."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod._params_file = "%s-%04d.params" % (prefix, epoch)
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False,
                        remove_amp_cast: bool = True) -> None:
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` and, with
        ``save_optimizer_states``, ``prefix-%04d.states``."""
        self._symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
        param_name = "%s-%04d.params" % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = "%s-%04d.states" % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # -- names and shapes -------------------------------------------------------------------------
    def _reset_bind(self) -> None:
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @property
    def data_names(self) -> List[str]:
        return self._data_names

    @property
    def label_names(self) -> List[str]:
        return self._label_names

    @property
    def output_names(self) -> List[str]:
        return self._output_names

    def _bound(self, who: str) -> DataParallelExecutorGroup:
        if not self.binded or self._exec_group is None:
            raise MXNetError(f"Module.{who}: the module is not bound; call bind() first")
        return self._exec_group

    @property
    def data_shapes(self) -> List[DataDesc]:
        self._bound("data_shapes")
        return self._data_shapes

    @property
    def label_shapes(self) -> Optional[List[DataDesc]]:
        self._bound("label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self) -> List[tuple]:
        return self._bound("output_shapes").get_output_shapes()

    # -- parameters -----------------------------------------------------------------------------------
    def get_params(self) -> Tuple[Dict[str, NDArray], Dict[str, NDArray]]:
        """``(arg_params, aux_params)``: CPU copies of the current values (device average)."""
        if not self.params_initialized:
            raise MXNetError("Module.get_params: parameters are not initialized; call init_params()")
        if self._params_dirty:
            self._sync_params_from_devices()
        return (self._arg_params, self._aux_params)

    def init_params(self, initializer: Any = Uniform(0.01), arg_params: Optional[dict] = None,
                    aux_params: Optional[dict] = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Initialize parameters and aux states: values from ``arg_params``/``aux_params`` where
        given (a missing one is a RuntimeError unless ``allow_missing``, then ``initializer``
        fills it), else ``initializer`` (which honours a variable's ``init`` attribute)."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. init_params call ignored.",
                          stacklevel=2)
            return
        group = self._bound("init_params")

        def fill(name: str, arr: NDArray, cache: Optional[dict]) -> None:
            if cache is not None:
                if name in cache:
                    src = cache[name]
                    if src is not arr:
                        with torch.no_grad():
                            t = src._t if isinstance(src, NDArray) else torch.as_tensor(src)
                            if tuple(t.shape) != tuple(arr.shape):
                                raise MXNetError(f"init_params: {name!r} has shape {tuple(t.shape)}, the "
                                                 f"module expects {tuple(arr.shape)}")
                            if arr.stype != "default" or t.layout is not torch.strided:
                                store_into(arr, t.to(arr._t.dtype))
                            else:
                                arr._t.copy_(t.to(arr._t.dtype))
                    return
                if not allow_missing:
                    raise RuntimeError(f"{name} is not presented")
                if initializer is not None:
                    initializer(desc, arr)
            else:
                initializer(desc, arr)

        attrs = self._symbol.attr_dict()
        for name, arr in sorted(self._arg_params.items()):
            desc = InitDesc(name, attrs.get(name, None))
            fill(desc, arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            desc = InitDesc(name, attrs.get(name, None))
            fill(desc, arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def _assign_params(self, arg_params: dict, aux_params: dict, force_init: bool,
                       allow_extra: bool) -> None:
        self._bound("set_params").set_params(arg_params, aux_params, allow_extra=allow_extra)

    def _sync_params_from_devices(self) -> None:
        with self._write_guard:  # the weights after a whole update() of another thread
            # the CPU copies get_params returns are rewritten here: their reads wait for it too
            set_guard(self._arg_params.values(), self._write_guard)
            set_guard(self._aux_params.values(), self._write_guard)
            self._exec_group.get_params(self._arg_params, self._aux_params)
            self._params_dirty = False

    # -- binding --------------------------------------------------------------------------------------
    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Allocate executors for the given input shapes (``[(name, shape)]`` or DataDescs).
        Parameters already initialized are copied into the new executors; ``shared_module``
        (bucketing) shares its parameters."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise ValueError("bind: inputs_need_grad=True needs for_training=True")
        self._data_shapes, self._label_shapes = parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded
                    and shared_module.params_initialized):
                raise MXNetError("bind: shared_module must be a bound Module with initialized parameters")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise MXNetError("bind: shared_module has fewer contexts than this module")
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes, self._label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group, logger=self.logger,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req, group2ctxs=self._group2ctxs,
            state_names=self._state_names)
        set_guard((w for block in self._exec_group.param_arrays for w in block), self._write_guard)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            try:
                self._exec_group.set_params(self._arg_params, self._aux_params)
            except MXNetError as e:
                if self._params_file is None:
                    raise
                raise MXNetError(f"{self._params_file}: {e}") from None
        else:
            self._arg_params = {name: _zeros_like_cpu(block[0])
                                for name, block in zip(self._param_names, self._exec_group.param_arrays)}
            self._aux_params = {name: NDArray(torch.zeros_like(block[0]._t, device="cpu"))
                                for name, block in zip(self._aux_names, self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes: Any, label_shapes: Any = None) -> None:
        """Rebind for new input shapes, keeping parameters and optimizer."""
        group = self._bound("reshape")
        self._data_shapes, self._label_shapes = parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        group.reshape(self._data_shapes, self._label_shapes)
        set_guard((w for block in group.param_arrays for w in block), self._write_guard)

    # -- optimizer ------------------------------------------------------------------------------------
    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),), force_init: bool = False) -> None:
        """Install the optimizer (a name plus ``optimizer_params``, or an Optimizer). A name gets
        ``rescale_grad = 1/batch_size`` unless given. Several contexts use a kvstore to sum
        gradients (and, by default, to run the updates)."""
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context), self._arg_params)
        group = self._exec_group
        batch_size = group.batch_size
        if kvstore and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size
        idx2name = {}
        if update_on_kvstore:
            idx2name.update(enumerate(group.param_names))
        else:
            n = len(self._context)
            for k in range(n):
                idx2name.update({i * n + k: name for i, name in enumerate(group.param_names)})
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise TypeError(f"init_optimizer: optimizer must be a name or an mx.optimizer.Optimizer, "
                                f"got {type(optimizer).__name__}")
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(f"Optimizer created manually outside Module but rescale_grad is not "
                              f"normalized to 1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. "
                              f"{rescale_grad}). Is this intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            _initialize_kvstore(kvstore=kvstore, param_arrays=group.param_arrays,
                                arg_params=self._arg_params, param_names=self._param_names,
                                update_on_kvstore=update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module: "Module") -> None:
        """Use ``shared_module``'s optimizer, kvstore and updater (bucketing)."""
        if not shared_module.optimizer_initialized:
            raise MXNetError("borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        """Write the updater's states to ``fname`` (atomically; hybridnet's pickle-free format)."""
        if not self.optimizer_initialized:
            raise MXNetError("save_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            write_atomic(fname, self._updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Read states written by :meth:`save_optimizer_states`."""
        if not self.optimizer_initialized:
            raise MXNetError("load_optimizer_states: call init_optimizer() first")
        if not os.path.isfile(fname):
            raise MXNetError(f"load_optimizer_states: {fname!r} does not exist")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            return
        with open(fname, "rb") as f:
            blob = f.read()
        try:
            states, optimizer = decode_states(blob)
            slots = self._state_slots()
            # states a kvstore-updating module saved are keyed by parameter name (MXNet keeps
            # them so in the updater; the first update() files them under the updater's indices)
            by_name = {s.name: i for i, s in reversed(list(enumerate(slots)))}
            checked = {by_name.get(k, k) if isinstance(k, str) else k: v for k, v in states.items()}
            check_against_params(optimizer if optimizer is not None else self._optimizer, checked, slots)
        except MXNetError as e:
            raise MXNetError(f"Module.load_optimizer_states({fname!r}): {e}") from None
        self._updater.set_states(blob)

    def _index_named_states(self) -> None:
        """States loaded under parameter names (saved by a module that updated on a kvstore) go
        under the local updater's keys, ``i * num_device + k``, before they are used."""
        states = self._updater.states
        if not any(isinstance(k, str) for k in states):
            return
        n_dev = len(self._context)
        for i, name in enumerate(self._exec_group.param_names):
            if name in states:
                state = states.pop(name)
                for k in range(n_dev):
                    states[i * n_dev + k] = state if k == 0 else clone_state(state)
                    self._updater.states_synced[i * n_dev + k] = False

    def _state_slots(self) -> List[SimpleNamespace]:
        """What each updater state index stands for (MXNet's ``i * num_device + k``: parameter
        i on device k), in the form the optimizer-states check reads Gluon Parameters."""
        group = self._exec_group
        return [SimpleNamespace(name=name, _data=[weights[k]])
                for name, weights in zip(group.param_names, group.param_arrays)
                for k in range(len(self._context))]

    # -- computation ------------------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: Optional[bool] = None) -> None:
        """Run the executors on a batch. A batch whose shapes differ from the bound ones
        reshapes the module first (using the batch's provide_data/provide_label if any)."""
        self._check_ready("forward")
        curr = tuple(tuple(d.shape) for d in self._data_shapes)
        if isinstance(data_batch, list):
            new_shapes = []
            for i in range(len(data_batch[0].data)):
                shape = tuple(data_batch[0].data[i].shape)
                if any(tuple(db.data[i].shape) != shape for db in data_batch):
                    raise MXNetError("forward: all data batches in a list need to have the same shape")
                new_shapes.append((len(data_batch) * shape[0],) + shape[1:])
            new = tuple(new_shapes)
        else:
            new = tuple(tuple(d.shape) for d in data_batch.data)
        if curr != new:
            provide_data = getattr(data_batch, "provide_data", None)
            if provide_data:
                new_dshape = provide_data
            else:
                new_dshape = [DataDesc(d.name, s, d.dtype, d.layout) for d, s in zip(self._data_shapes, new)]
            provide_label = getattr(data_batch, "provide_label", None)
            label = getattr(data_batch, "label", None)
            if provide_label:
                new_lshape = provide_label
            elif label and self._label_shapes:
                new_lshape = [DataDesc(d.name, tuple(lb.shape), d.dtype, d.layout)
                              for d, lb in zip(self._label_shapes, label)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads: Any = None) -> None:
        """Backward pass; ``out_grads`` are needed only for outputs that are not loss heads."""
        self._check_ready("backward")
        self._exec_group.backward(out_grads=out_grads)

    def update(self) -> None:
        """Apply the optimizer to the gradients of the last backward."""
        self._check_ready("update")
        if not self.optimizer_initialized:
            raise MXNetError("Module.update: call init_optimizer() first")
        self._params_dirty = True
        group = self._exec_group
        with self._write_guard:  # other threads read the weights before or after the update
            if self._update_on_kvstore:
                _update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                          group.param_names)
            else:
                self._index_named_states()
                _update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                               num_device=len(self._context), kvstore=self._kvstore,
                               param_names=group.param_names)

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """Outputs of the last forward (merged over contexts, or ``[[out_dev1, ...], ...]``)."""
        self._check_ready("get_outputs")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._check_ready("get_input_grads")
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads: bind with inputs_need_grad=True")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context: bool = True) -> list:
        """State arrays per context (``merge_multi_context=False``)."""
        self._check_ready("get_states")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states: Any = None, value: Any = None) -> None:
        """Set the state inputs from per-context arrays or to one scalar ``value``."""
        self._check_ready("set_states")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Accumulate ``eval_metric`` on the last outputs against ``labels``."""
        self._bound("update_metric").update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        """Install a ``mx.mon.Monitor`` on every executor."""
        self._bound("install_monitor").install_monitor(mon)

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Pull the rows of row_sparse parameters the next batch needs from the kvstore
        (``sparse_row_id_fn(data_batch)`` gives name -> row ids), as MXNet's Module.prepare;
        without a kvstore that updates the parameters there is nothing to pull (a warning)."""
        self._bound("prepare")
        if sparse_row_id_fn is None:
            return
        if not self._kvstore or not self._update_on_kvstore:
            warnings.warn(UserWarning("Parameters are not updated in the KVStore. No need to call "
                                      "sparse_row_id_fn."), stacklevel=2)
            return
        row_ids = sparse_row_id_fn(data_batch)
        if not isinstance(row_ids, dict):
            raise MXNetError(f"prepare: sparse_row_id_fn must return a dict name -> row ids, got "
                             f"{type(row_ids).__name__}")
        group = self._exec_group
        for name, rows in row_ids.items():
            idx = group.param_names.index(name)
            arrays = group.param_arrays[idx]
            if arrays[0].stype != "row_sparse":
                warnings.warn(UserWarning(f"{name}.stype is not 'row_sparse'. No need to perform "
                                          f"row_sparse_pull."), stacklevel=2)
            else:
                self._kvstore.row_sparse_pull(name, arrays, row_ids=rows, priority=-idx)
