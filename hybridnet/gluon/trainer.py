"""``gluon.Trainer``: applies an optimizer to a set of Parameters (MXNet 1.9.1 semantics)."""
from __future__ import annotations

import os
import warnings
from typing import Any, Optional

import numpy as np

from .. import optimizer as opt
from ..base import MXNetError
from ..compiler.param_guard import ParameterSnapshot
from ..formats.atomic import write_atomic
from ..ndarray.ndarray import NDArray
from ..ndarray.write_guard import holding
from .parameter import Parameter, ParameterDict, guard_parameters

__all__ = ["Trainer"]


class Trainer:
    """Updates ``params`` with ``optimizer`` after ``backward`` (``step(batch_size)``)."""

    def __init__(self, params: Any, optimizer: Any, optimizer_params: Optional[dict] = None,
                 kvstore: Any = "device", compression_params: Optional[dict] = None,
                 update_on_kvstore: Optional[bool] = None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[k] for k in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"First argument must be a list or dict of Parameters, got {type(params)}.")
        self._params: list = []
        seen: set = set()
        for p in params:
            if not isinstance(p, Parameter):
                raise ValueError(f"First argument must be a list or dict of Parameters, got list of {type(p)}.")
            if id(p) in seen:
                raise ValueError(f"Parameter {p.name!r} is given twice to the Trainer")
            seen.add(id(p))
            self._params.append(p)
            p._set_trainer(self)
        self._param2idx = {p.name: i for i, p in enumerate(self._params)}
        self._write_guards = guard_parameters(self._params)
        # MXNet 1.9.1 picks the kvstore policy from the storage types (see _init_kvstore)
        self._contains_sparse_weight = any(p._stype != "default" for p in self._params)
        self._contains_sparse_grad = any(p._grad_stype != "default" for p in self._params)
        if compression_params:
            raise MXNetError("gradient compression is not supported")
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_spec = kvstore
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kvstore: Any = None
        self._update_on_kvstore: Optional[bool] = None
        self._distributed: Optional[bool] = None
        self._kv_initialized = False
        self._params_to_init: list = list(self._params)
        self._kv_snapshots: dict = {}  # id(parameter) -> its data tensor as last pulled
        self._dist_scale_fixed = False
        if self._is_distributed_spec(kvstore):
            # hybridnet: create the distributed store now and copy rank 0's values to every
            # worker, so that all start equal before their first forward (MXNet waits for the
            # first step, so the first gradients come from each worker's own initial values).
            # The first step still puts the parameters into the store as MXNet does.
            self._init_kvstore()
            self._sync_initial_values()

    def _sync_initial_values(self) -> None:
        sync = getattr(self._kvstore, "_sync_arrays", None)
        ready = [p for p in self._params if p._data is not None]
        if sync is not None and ready:
            sync([p._check_and_get(p._data, list) for p in ready])

    @staticmethod
    def _is_distributed_spec(spec: Any) -> bool:
        from .. import kvstore as kv
        if isinstance(spec, str):
            return "dist" in spec.lower() or spec.lower() == "horovod"
        if isinstance(spec, kv.KVStoreBase):
            return "dist" in spec.type or spec.type == "horovod"
        return False

    def _init_optimizer(self, optimizer: Any, optimizer_params: dict) -> None:
        param_dict = {i: p for i, p in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError("optimizer_params must be None if optimizer is an instance of "
                                     "Optimizer instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters: list = []

    @property
    def _contexts(self) -> list:
        """The contexts the parameters live on (MXNet keeps this list as ``_contexts``)."""
        ctxs = None
        for p in self._params:
            try:
                c = p.list_ctx()
            except MXNetError:
                continue
            if ctxs is None:
                ctxs = c
            elif c != ctxs:
                raise MXNetError(f"All Parameters must be initialized on the same set of contexts, but "
                                 f"Parameter {p.name} is initialized on {c} while previous Parameters "
                                 f"are initialized on {ctxs}.")
        return ctxs or []

    def _init_kvstore(self) -> None:
        """Create the kvstore and choose update_on_kvstore as MXNet 1.9.1 does. Dense weights
        and gradients: no store for one device unless the kind is dist; updates on the store
        by default (MXNET_UPDATE_ON_KVSTORE, default 1) when it can run an optimizer; always
        for dist_async. Sparse weights: always a store that runs the optimizer. Sparse
        gradients: updates on the workers unless distributed. An explicit update_on_kvstore
        wins where it is allowed."""
        from .. import kvstore as kv
        config = self._kvstore_params
        ctxs = self._contexts
        if self._contains_sparse_weight:
            kvstore, update_on_kvstore = self._create_sparse_kvstore(config["kvstore"])
            self._distributed = "dist" in kvstore.type
            if config["update_on_kvstore"] is False:
                raise ValueError("Cannot set update_on_kvstore=False when sparse weights are present.")
        elif self._contains_sparse_grad:
            kvstore, _ = self._create_dense_kvstore(config["kvstore"], ctxs)
            self._distributed = kvstore is not None and "dist" in kvstore.type
            update_on_kvstore = self._distributed
            if config["update_on_kvstore"] is not None:
                if config["update_on_kvstore"] is False and self._distributed:
                    raise ValueError("Cannot set update_on_kvstore=False on dist kvstore when sparse "
                                     "gradients are present.")
                update_on_kvstore = config["update_on_kvstore"]
            if kvstore is not None and not isinstance(kvstore, kv.KVStore):
                raise ValueError(f"Cannot use {type(kvstore)} for multi-device training with sparse "
                                 f"gradients")
        else:
            kvstore, update_on_kvstore = self._create_dense_kvstore(config["kvstore"], ctxs)
            self._distributed = kvstore is not None and "dist" in kvstore.type
            if self._distributed and "async" in kvstore.type:
                update_on_kvstore = True
                if config["update_on_kvstore"] is False:
                    raise ValueError("Please set update_on_kvstore=True when training in async mode.")
            if config["update_on_kvstore"] is not None:
                update_on_kvstore = config["update_on_kvstore"]
        if update_on_kvstore and kvstore is None:
            raise ValueError("Cannot set update_on_kvstore=True when there is no kvstore (one "
                             "device and a non-dist kvstore); pass update_on_kvstore=None")
        if update_on_kvstore and not kvstore.is_capable(kv.KVStoreBase.OPTIMIZER):
            if config["update_on_kvstore"]:
                raise ValueError(f"Please set update_on_kvstore=False when training with "
                                 f"{type(kvstore)}")
            update_on_kvstore = False
        if kvstore is not None:
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = bool(update_on_kvstore)
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        if len(self._updaters) != max(1, len(ctxs)):
            self._updaters = [opt.get_updater(self._optimizer) for _ in (ctxs or [None])]
        for upd, ctx in zip(self._updaters, ctxs):
            upd.device_id = ctx.device_id
        self._kv_initialized = True

    def _create_dense_kvstore(self, spec: Any, ctxs: list) -> tuple:
        """(kvstore or None, default update_on_kvstore) for dense parameters (MXNet's
        model._create_kvstore)."""
        from .. import kvstore as kv
        update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
        if spec is None:
            kvstore = None
        elif isinstance(spec, kv.KVStoreBase):
            kvstore = spec
        elif isinstance(spec, str):
            if len(ctxs) <= 1 and not self._is_distributed_spec(spec):
                # one device, one machine: nothing to aggregate (MXNet also drops 'horovod'
                # here, silently training each worker alone; hybridnet keeps it)
                kvstore = None
            else:
                kvstore = kv.create(spec)
                if spec == "local" and self._largest_param() > 1024 * 1024 * 16:
                    update_on_kvstore = False
        else:
            raise TypeError(f"kvstore must be KVStore, str or None, got {type(spec).__name__}")
        if kvstore is None:
            return None, False
        return kvstore, update_on_kvstore and kvstore.is_capable(kv.KVStoreBase.OPTIMIZER)

    @staticmethod
    def _create_sparse_kvstore(spec: Any) -> tuple:
        """A store that runs the optimizer, even on one device (MXNet's _create_sparse_kvstore:
        sparse weights live on the kvstore)."""
        from .. import kvstore as kv
        if isinstance(spec, kv.KVStoreBase):
            kvstore = spec
        elif isinstance(spec, str):
            kvstore = kv.create(spec)
        else:
            raise TypeError(f"Cannot create {spec!r} KVStore with row_sparse parameters. The type "
                            f"must be KVStore or str.")
        if not kvstore.is_capable(kv.KVStoreBase.OPTIMIZER):
            raise ValueError(f"KVStore with sparse weight requires optimizer support, which "
                             f"{type(kvstore).__name__} lacks; use another kvstore (e.g. 'device')")
        return kvstore, True

    def _largest_param(self) -> int:
        sizes = [int(np.prod(p.shape)) for p in self._params
                 if p.shape is not None and all(d > 0 for d in p.shape)]
        return max(sizes, default=0)

    def _init_params(self, late: bool = False, only: Any = None) -> None:
        """Put the initialized parameters into the kvstore and copy rank 0's values to every
        device and worker (MXNet's kvstore.broadcast); deferred ones wait for the next call.
        ``late``: gradients may already have been computed from the local values."""
        from .. import kvstore as kv
        pending: list = []
        ready: list = []
        skipped = [p for p in self._params_to_init if only is not None and all(p is not q for q in only)]
        if self._kvstore is not None:
            todo = {id(p) for p in self._params_to_init if all(p is not q for q in skipped)}
            for i, p in enumerate(self._params):
                if id(p) not in todo:
                    continue
                if p._data is None:
                    pending.append(p)
                else:
                    ready.append((i, p))
        if ready:
            keys = [i for i, _ in ready]
            values = [p._check_and_get(p._data, list)[0] for _, p in ready]
            outs = [p._check_and_get(p._data, list) for _, p in ready]
            check = late and getattr(self._kvstore, "num_workers", 1) > 1
            before = [v.asnumpy() for v in values] if check else []
            if isinstance(self._kvstore, kv.KVStore):  # one coalesced collective
                self._kvstore.broadcast(keys, values, out=outs)
            else:
                for k, v, o in zip(keys, values, outs):
                    self._kvstore.broadcast(k, v, out=o, priority=-k)
            self._record_kv_snapshots(p for _, p in ready)
            changed = [p.name for (_, p), b in zip(ready, before)
                       if not np.array_equal(b, p._check_and_get(p._data, list)[0].asnumpy())]
            if changed:
                warnings.warn(f"Trainer: parameters {changed} were initialized after the Trainer was "
                              f"created, so this worker computed its first gradients from its own "
                              f"initial values before receiving rank 0's. Give the layers their input "
                              f"sizes (in_units/in_channels) or run one forward pass before creating "
                              f"the Trainer, or seed all workers identically", stacklevel=3)
        self._params_to_init = pending + skipped

    def _reset_kvstore(self) -> None:
        """Forget the kvstore (MXNet does this when parameters are loaded while they live on
        the store); a distributed store cannot be reset."""
        if self._kvstore is not None and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore: the parameters held by the "
                               "kvstore were changed outside the Trainer (set_data/load_parameters) "
                               "after training started; load them before the first step, or use "
                               "update_on_kvstore=False")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)
        self._kv_snapshots = {}

    def _record_kv_snapshots(self, params: Any) -> None:
        if not self._update_on_kvstore:
            return
        for p in params:
            if p._data is not None and p.grad_req != "null":
                self._kv_snapshots[id(p)] = ParameterSnapshot([p._data[0]._t])

    def _params_changed_outside(self) -> bool:
        """With update_on_kvstore the store holds the weights; a Parameter whose data tensor was
        replaced or written since the last pull (set_data, load_parameters, cast) makes the
        store stale (MXNet resets the kvstore from Parameter.set_data)."""
        for p in self._params:
            snapshot = self._kv_snapshots.get(id(p))
            if snapshot is not None and p._data is not None and not snapshot.matches([p._data[0]._t]):
                return True
        return False

    def _prepare_kvstore(self) -> None:
        if self._kv_initialized and self._update_on_kvstore and self._params_changed_outside():
            self._reset_kvstore()
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params(late=True)

    def _row_sparse_pull(self, parameter: Parameter, out: Any, row_id: NDArray, full_idx: bool = False) -> None:
        """Fill ``out`` (the parameter's arrays) with the rows ``row_id`` of its weight, from the
        kvstore that owns sparse weights (MXNet's Trainer._row_sparse_pull); ``full_idx``: all rows."""
        idx = next(i for i, p in enumerate(self._params) if p is parameter)
        if not self._kv_initialized:
            self._prepare_kvstore()
        elif any(p is parameter for p in self._params_to_init):
            # only this parameter: the others may be in use by a recorded forward pass
            self._init_params(late=True, only=[parameter])
        if self._kvstore is None:
            raise MXNetError(f"Parameter {parameter.name!r}: row_sparse_data needs a Trainer with a "
                             f"kvstore holding the parameter")
        if full_idx:
            self._kvstore.pull(idx, out=out, ignore_sparse=False)
        else:
            self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id)
        self._record_kv_snapshots([parameter])

    def _check_and_rescale_grad(self, scale: float) -> None:
        """MXNet: a distributed store running the optimizer keeps the first step's factor."""
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._dist_scale_fixed and self._optimizer.rescale_grad != scale:
                raise UserWarning("Possible change in the `batch_size` from previous `step` detected. "
                                  "Optimizer gradient normalizing factor will not change w.r.t new "
                                  "batch_size when update_on_kvstore=True and when distributed "
                                  "kvstore is used.")
            self._dist_scale_fixed = True
        self._optimizer.rescale_grad = scale

    @property
    def learning_rate(self) -> float:
        return self._optimizer.learning_rate

    @property
    def optimizer(self) -> Any:
        return self._optimizer

    def set_learning_rate(self, lr: float) -> None:
        self._optimizer.set_learning_rate(lr)

    def step(self, batch_size: float, ignore_stale_grad: bool = False) -> None:
        """Rescale gradients by 1/batch_size, aggregate across devices (and, for dist kvstores,
        SUM across workers: pass the global batch size to average), and update."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._prepare_kvstore()
        with holding(self._write_guards):  # other threads read the weights before or after
            self._allreduce_grads()
            self._update(ignore_stale_grad)

    def allreduce_grads(self) -> None:
        """Sum the gradients over devices (and workers) without updating."""
        self._prepare_kvstore()
        if self._kvstore is not None and self._update_on_kvstore:
            raise AssertionError("allreduce_grads() when parameters are updated on kvstore is not "
                                 "supported. Try setting `update_on_kvstore` to False when creating "
                                 "trainer.")
        self._allreduce_grads()

    def _allreduce_grads(self) -> None:
        from .. import kvstore as kv
        if self._kvstore is None:
            return
        keys, grads, outs = [], [], []
        for i, p in enumerate(self._params):
            if p.grad_req != "null":
                keys.append(i)
                grads.append(p._grads())
                outs.append(p._check_and_get(p._data, list) if self._update_on_kvstore else None)
        if not keys:
            return
        if isinstance(self._kvstore, kv.KVStore):  # one coalesced collective
            self._kvstore.pushpull(keys, grads, out=outs if self._update_on_kvstore else None)
        else:
            for k, g, o in zip(keys, grads, outs):
                self._kvstore.pushpull(k, g, out=o, priority=-k)
        if self._update_on_kvstore:
            self._record_kv_snapshots(self._params)

    def update(self, batch_size: float, ignore_stale_grad: bool = False) -> None:
        """The update half of ``step`` (after a manual ``allreduce_grads``)."""
        self._prepare_kvstore()
        if self._kvstore is not None and self._update_on_kvstore:
            raise AssertionError("update() when parameters are updated on kvstore is not supported. "
                                 "Try setting `update_on_kvstore` to False when creating trainer.")
        self._check_and_rescale_grad(self._scale / batch_size)
        with holding(self._write_guards):
            self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad: bool = False) -> None:
        loss_scaler = getattr(self, "_amp_loss_scaler", None)  # set by amp.init_trainer
        if loss_scaler is not None and loss_scaler.has_overflow(self._params):
            return  # MXNet's AMP: skip the step whose gradients overflowed
        updates: list = [[] for _ in self._updaters]
        on_kvstore = self._kvstore is not None and self._update_on_kvstore
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            datas = p._check_and_get(p._data, list)
            fresh = [d._fresh_grad for d in datas]
            if not ignore_stale_grad and not all(fresh):
                raise UserWarning(
                    f"Gradient of Parameter `{p.name}` on context {datas[0].context} has not been "
                    f"updated by backward since last `step`. This could mean a bug in your model that "
                    f"made it only use a subset of the Parameters (Blocks) for this iteration. If you "
                    f"are intentionally only using a subset, call step with ignore_stale_grad=True to "
                    f"suppress this warning and skip updating of Parameters with stale gradient")
            if on_kvstore:  # the kvstore already updated the weights during pushpull
                for d in datas:
                    d._fresh_grad = False
                continue
            for upd, arr, grad, f in zip(updates, datas, p._grads(), fresh):
                if f:
                    # the optimizers compute on mx.nd arrays: parameters stored as mx.np.ndarrays
                    # (created under npx.set_np()) are handed over as NDArrays of the same tensors
                    upd.append((i, _nd_view(grad), _nd_view(arr)))
                    arr._fresh_grad = False
        for updater, upd in zip(self._updaters, updates):
            if upd:
                i, g, w = zip(*upd)
                updater(list(i), list(g), list(w))

    def save_states(self, fname: str) -> None:
        """Save optimizer states in hybridnet's safe format (JSON + raw arrays, no pickle); from
        the kvstore's updater when it runs the optimizer."""
        self._prepare_kvstore()
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            write_atomic(fname, self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname: str) -> None:
        """Load states written by ``save_states``. Never unpickles (MXNet's own pickled
        ``.states`` files are refused with an explanation). The whole file is checked before
        anything is accepted (byte layout, optimizer attributes, each state's shape and dtype
        against this Trainer's parameters, a trial update on copies); on error the Trainer is
        left exactly as it was."""
        from ..optimizer.optimizer import decode_states
        from ..optimizer._states_check import check_against_params, clone_state
        self._prepare_kvstore()
        with open(fname, "rb") as f:
            blob = f.read()
        try:
            states, optimizer = decode_states(blob)
            if optimizer is not None:
                optimizer.param_dict = {i: p for i, p in enumerate(self._params)}
            check_against_params(optimizer if optimizer is not None else self._optimizer, states,
                                 self._params)
        except MXNetError as e:
            raise MXNetError(f"Trainer.load_states({os.fspath(fname)!r}): {e}") from None
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            for k, upd in enumerate(self._updaters):
                upd.states = states if k == 0 else {i: clone_state(s) for i, s in states.items()}
                upd.states_synced = dict.fromkeys(upd.states, False)
                if optimizer is not None:
                    upd.optimizer = optimizer
                    upd.aggregate_updates = optimizer.aggregate_num > 0
            if optimizer is not None:
                self._optimizer = optimizer
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}


def _nd_view(arr: Any) -> Any:
    """``arr`` as an ``mx.nd.NDArray`` over the same tensor (itself when it is one)."""
    return arr if arr.__class__ is NDArray else arr.as_nd_ndarray()
