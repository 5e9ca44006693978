"""``gluon.Trainer``: applies an optimizer to a set of Parameters (MXNet 1.9.1 semantics)."""
from __future__ import annotations

from typing import Any, Optional


from .. import optimizer as opt
from ..base import MXNetError
from ..formats.atomic import write_atomic
from .parameter import Parameter, ParameterDict

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
            p._trainer = self
        if compression_params:
            raise MXNetError("gradient compression is not supported")
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_spec = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._kvstore: Any = None
        self._kv_initialized = False

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

    def _contexts(self) -> list:
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
        from .. import kvstore as kv
        spec = self._kvstore_spec
        ctxs = self._contexts()
        if isinstance(spec, kv.KVStore):
            self._kvstore = spec
        elif spec is None or (isinstance(spec, str) and not spec.startswith("dist") and len(ctxs) <= 1):
            self._kvstore = None  # one device: nothing to aggregate
        else:
            self._kvstore = kv.create(spec)
        if self._update_on_kvstore and self._kvstore is None:
            raise ValueError("Cannot set update_on_kvstore=True when there is no kvstore")
        self._updaters = [opt.get_updater(self._optimizer) for _ in (ctxs or [None])]
        self._kv_initialized = True

    @property
    def learning_rate(self) -> float:
        return self._optimizer.learning_rate

    @property
    def optimizer(self) -> Any:
        return self._optimizer

    def set_learning_rate(self, lr: float) -> None:
        self._optimizer.set_learning_rate(lr)

    def step(self, batch_size: float, ignore_stale_grad: bool = False) -> None:
        """Rescale gradients by 1/batch_size, aggregate across devices, and update."""
        self._optimizer.rescale_grad = self._scale / batch_size
        if not self._kv_initialized:
            self._init_kvstore()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self) -> None:
        if not self._kv_initialized:
            self._init_kvstore()
        self._allreduce_grads()

    def _allreduce_grads(self) -> None:
        if self._kvstore is None:
            return
        for i, p in enumerate(self._params):
            if p.grad_req != "null":
                grads = p.list_grad()
                self._kvstore.pushpull(i, grads, out=grads)

    def update(self, batch_size: float, ignore_stale_grad: bool = False) -> None:
        """The update half of ``step`` (after a manual ``allreduce_grads``)."""
        self._optimizer.rescale_grad = self._scale / batch_size
        if not self._kv_initialized:
            self._init_kvstore()
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad: bool = False) -> None:
        updates: list = [[] for _ in self._updaters]
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            datas = p.list_data()
            fresh = [d._fresh_grad for d in datas]
            if not ignore_stale_grad and not all(fresh):
                raise UserWarning(
                    f"Gradient of Parameter `{p.name}` on context {datas[0].context} has not been "
                    f"updated by backward since last `step`. This could mean a bug in your model that "
                    f"made it only use a subset of the Parameters (Blocks) for this iteration. If you "
                    f"are intentionally only using a subset, call step with ignore_stale_grad=True to "
                    f"suppress this warning and skip updating of Parameters with stale gradient")
            for upd, arr, grad, f in zip(updates, datas, p.list_grad(), fresh):
                if f:
                    upd.append((i, grad, arr))
                    arr._fresh_grad = False
        for updater, upd in zip(self._updaters, updates):
            if upd:
                i, g, w = zip(*upd)
                updater(list(i), list(g), list(w))

    def save_states(self, fname: str) -> None:
        """Save optimizer states in hybridnet's safe format (JSON + raw arrays, no pickle)."""
        if not self._kv_initialized:
            self._init_kvstore()
        write_atomic(fname, self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname: str) -> None:
        """Load states written by ``save_states`` (never unpickles)."""
        if not self._kv_initialized:
            self._init_kvstore()
        with open(fname, "rb") as f:
            states = f.read()
        for upd in self._updaters:
            upd.set_states(states)
            upd.optimizer = self._updaters[0].optimizer
        self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}
