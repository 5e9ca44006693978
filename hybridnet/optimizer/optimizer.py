"""Optimizers with MXNet 1.9.1's update rules.

The update rules live once, in the registered update operators (``ops/optimizer_ops.py``): as
MXNet's optimizers do, the kernel-backed optimizers (SGD, NAG, LARS, LBSGD, Adam, RMSProp, Ftrl,
FTML, Signum, LAMB) call ``nd.<op>_update(weight, grad, *states, out=weight, ...)`` (many
weights at once through ``multi_*``/``preloaded_multi_*``), and pass ``clip_gradient`` only when
it is truthy. The optimizers MXNet writes in Python (AdaGrad's dense path, AdaDelta, Adamax,
Nadam, DCASGD, SGLD) stay Python over ``nd`` operators, and clip whenever ``clip_gradient`` is
not None. No update here touches torch directly; sparse gradients go through the operators'
sparse rules (lazy row_sparse updates).
"""
from __future__ import annotations

import logging
import math
import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .. import ndarray as _nd
from ..formats import optimizer_states as _codec
from ..ndarray.utils import _from_numpy_loaded, _to_numpy_for_save

NDabs = _nd.abs  # MXNet's optimizer module re-exports nd.abs under this name

__all__ = [
    "AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LARS", "LBSGD",
    "NAG", "NDabs", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum", "LAMB",
    "Test", "Updater", "ccSGD", "create", "get_updater", "register",
]

Index = Union[int, str]


# -- small helpers ----------------------------------------------------------------------------
def _zeros_like(weight: NDArray, dtype: Any = None) -> NDArray:
    """A zero state for ``weight``, of its storage type (MXNet: ``zeros(..., stype=weight.stype)``)."""
    if weight.stype != "default" or (dtype is not None and numpy.dtype(dtype) != weight.dtype):
        return _nd.zeros(weight.shape, ctx=weight.context, dtype=dtype or weight.dtype,
                         stype=weight.stype)
    return _nd.zeros_like(weight)


def _is_sparse(*arrays: Any) -> bool:
    """Whether any array has sparse storage (the update operators' sparse rules then run)."""
    return any(a is not None and a.stype != "default" for a in arrays)


def _clip_kwargs(clip_gradient: Optional[float], key: str = "clip_gradient") -> dict:
    """MXNet passes clip_gradient to its update kernels only when it is truthy."""
    return {key: float(clip_gradient)} if clip_gradient else {}


def _flatten(groups: Any) -> list:
    """MXNet's interleaved input order [w0, g0, s0, w1, g1, s1, ...]."""
    return [a for group in groups for a in group]


def _py_scaled(grad: NDArray, rescale: float, clip: Optional[float],
               decay: Optional[NDArray] = None) -> NDArray:
    """``clip(rescale * grad [+ decay], clip)`` for the optimizers MXNet writes in Python (they
    clip whenever ``clip_gradient`` is not None; some add the weight decay ``wd * weight`` first)."""
    g = grad * rescale
    if decay is not None:
        g = g + decay
    if clip is not None:
        g = _nd.clip(g, -clip, clip)
    return g


def _as_list(index: Any, weight: Any, grad: Any, state: Any) -> Tuple[list, list, list, list, bool]:
    if isinstance(index, (list, tuple)):
        return list(index), list(weight), list(grad), list(state), True
    return [index], [weight], [grad], [state], False


def _check_nd(weight: Any, grad: Any, who: str) -> None:
    if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
        raise TypeError(f"{who}.update: weight and grad must be NDArrays, got "
                        f"{type(weight).__name__} and {type(grad).__name__}")
    if weight.shape != grad.shape:
        raise MXNetError(f"{who}.update: weight shape {weight.shape} does not match gradient "
                         f"shape {grad.shape}")


# -- the base class ---------------------------------------------------------------------------
class Optimizer:
    """Base class of all optimizers (MXNet's ``mx.optimizer.Optimizer``).

    Parameters mirror MXNet 1.9.1: ``rescale_grad`` multiplies gradients (often 1/batch_size);
    ``param_idx2name`` maps indices to names (names not ending in ``_weight``/``_gamma`` then get
    wd_mult 0); ``wd`` is the L2 weight decay; ``clip_gradient`` clips to
    [-clip_gradient, clip_gradient]; ``learning_rate`` (0.01 when neither it nor a scheduler is
    given; overrides the scheduler's ``base_lr`` when both are given); ``lr_scheduler``; ``sym``
    (reads ``__lr_mult__``/``__wd_mult__`` attributes); ``begin_num_update``;
    ``multi_precision`` (float32 master copy of float16 weights); ``param_dict`` (index ->
    Parameter-like object with ``lr_mult``/``wd_mult``); ``aggregate_num`` (how many weights the
    Updater hands over in one call; hybridnet extension of the 1.9.1 signature).
    """

    opt_registry: Dict[str, type] = {}

    def __init__(self, rescale_grad: float = 1., param_idx2name: Optional[dict] = None,
                 wd: float = 0., clip_gradient: Optional[float] = None,
                 learning_rate: Optional[float] = None, lr_scheduler: Any = None, sym: Any = None,
                 begin_num_update: int = 0, multi_precision: bool = False,
                 param_dict: Optional[dict] = None, aggregate_num: Optional[int] = None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if self.lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if self.lr_scheduler is not None and learning_rate is not None:
            if self.lr_scheduler.base_lr != learning_rate:
                warnings.warn("learning rate from ``lr_scheduler`` has been "
                              "overwritten by ``learning_rate`` in optimizer.", UserWarning)
                self.lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult: Dict[Any, float] = {}
        self.wd_mult: Dict[Any, float] = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts: Dict[int, Dict[Any, int]] = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self._aggregate_num_arg = aggregate_num
        self.aggregate_num = 0 if aggregate_num is None else int(aggregate_num)

        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError(f"{type(self).__name__}: param_idx2name should be a dict of param "
                            f"indexes to names, got {type(param_idx2name).__name__}")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False

        self.set_lr_mult({})
        self.set_wd_mult({})

    def _default_aggregate(self, default: int) -> None:
        """Set ``aggregate_num`` to ``default`` unless the user passed ``aggregate_num``."""
        if self._aggregate_num_arg is None:
            self.aggregate_num = default

    # -- registry ----------------------------------------------------------------------------
    @staticmethod
    def register(klass: type) -> type:
        """Register an optimizer class under its lower-cased class name (decorator)."""
        if not isinstance(klass, type):
            raise TypeError(f"Optimizer.register expects a class, got {type(klass).__name__}")
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            old = Optimizer.opt_registry[name]
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is overriding "
                          f"existing optimizer {old.__module__}.{old.__name__}")
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> "Optimizer":
        """Instantiate a registered optimizer by (case-insensitive) name."""
        if not isinstance(name, str):
            raise TypeError(f"create_optimizer: name must be a str, got {type(name).__name__}")
        key = name.lower()
        if key in Optimizer.opt_registry:
            return Optimizer.opt_registry[key](**kwargs)
        raise ValueError(f"Cannot find optimizer {name}; registered optimizers: "
                         f"{', '.join(sorted(Optimizer.opt_registry))}")

    # -- learning rate -----------------------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """Current learning rate (the scheduler's value at ``num_update`` if there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set a new learning rate; not allowed when an ``lr_scheduler`` drives it."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been "
                              "defined. Note that set_learning_rate can mutate "
                              "the value of the learning rate of the optimizer "
                              "only when the LRScheduler of the optimizer is "
                              "undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale: Any) -> None:
        """[DEPRECATED] Use ``set_lr_mult``."""
        raise DeprecationWarning("set_lr_scale is deprecated; use set_lr_mult")

    def set_lr_mult(self, args_lr_mult: Dict[Any, float]) -> None:
        """Per-parameter learning-rate multipliers, keyed by name or index (plus ``__lr_mult__``
        attributes of ``sym``)."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: Dict[Any, float]) -> None:
        """Per-parameter weight-decay multipliers. As in MXNet 1.9.1, every name from
        ``param_idx2name`` that does not end with ``_weight`` or ``_gamma`` gets 0."""
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith("_weight") or n.endswith("_gamma")):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id: int) -> None:
        """Select the per-device update counters (one Updater per device in Trainer)."""
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index: Union[Index, Sequence[Index]]) -> None:
        """Count one more update for each index; ``num_update`` is the max over indices."""
        if not isinstance(index, (list, tuple)):
            index = [index]
        for idx in index:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _base_lr(self) -> float:
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def _get_lrs(self, indices: Sequence[Index]) -> List[float]:
        """Learning rates: global (or scheduled) lr times param_dict / lr_mult multipliers."""
        lr = self._base_lr()
        lrs = [lr for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                lrs[i] *= self.param_dict[index].lr_mult
            elif index in self.lr_mult:
                lrs[i] *= self.lr_mult[index]
            elif index in self.idx2name:
                lrs[i] *= self.lr_mult.get(self.idx2name[index], 1.0)
        return lrs

    def _get_lr(self, index: Index) -> float:
        return self._get_lrs([index])[0]

    def _get_wds(self, indices: Sequence[Index]) -> List[float]:
        """Weight decays: ``wd`` times param_dict / wd_mult multipliers."""
        wds = [self.wd for _ in indices]
        for i, index in enumerate(indices):
            if index in self.param_dict:
                wds[i] *= self.param_dict[index].wd_mult
            elif index in self.wd_mult:
                wds[i] *= self.wd_mult[index]
            elif index in self.idx2name:
                wds[i] *= self.wd_mult.get(self.idx2name[index], 1.0)
        return wds

    def _get_wd(self, index: Index) -> float:
        return self._get_wds([index])[0]

    # -- states ------------------------------------------------------------------------------
    def create_state(self, index: Index, weight: NDArray) -> Any:
        """Auxiliary state for ``weight`` (None, an NDArray or a tuple of them)."""
        return None

    def create_state_multi_precision(self, index: Index, weight: NDArray) -> Any:
        """``create_state`` plus, for float16 weights with ``multi_precision``, a float32 master
        copy: the state is then ``(weight32, state_of_weight32)``."""
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = weight.astype(numpy.float32)
            return (weight_master_copy,) + (self.create_state(index, weight_master_copy),)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to "
                          "poor accuracy or slow convergence. "
                          "Consider using multi_precision=True option of the "
                          "optimizer")
        return self.create_state(index, weight)

    # whether update() handles sparse gradients itself (else they are densified first)
    _sparse_aware = False

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """Update ``weight`` in place from ``grad`` and ``state``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement update()")

    def update_multi_precision(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """``update``, going through the float32 master copy for float16 weights when
        ``multi_precision`` is on. Lists of indices/weights/grads/states are accepted."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, s)
            return
        if not self._sparse_aware and _is_sparse(grad):
            grad = grad.tostype("default")  # no sparse update: MXNet's storage fallback
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = state[0]
            original_state = state[1]
            grad32 = grad.astype(numpy.float32)
            self.update(index, weight_master_copy, grad32, original_state)
            _nd.cast(weight_master_copy, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    # -- serialization (no pickle) -----------------------------------------------------------
    def __getstate__(self) -> dict:
        ret = self.__dict__.copy()
        ret.pop("param_dict", None)  # the Trainer sets it again
        return ret

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state
        self.param_dict = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(learning_rate={self.lr}, wd={self.wd}, " \
               f"rescale_grad={self.rescale_grad}, clip_gradient={self.clip_gradient})"


# convenience wrappers, as in MXNet
register = Optimizer.register
create = Optimizer.create_optimizer


# -- SGD family --------------------------------------------------------------------------------
def _sgd_create_state(self: Any, index: Index, weight: NDArray) -> Optional[NDArray]:
    """Momentum buffer (None without momentum), as MXNet's SGD/NAG/LARS."""
    if self.momentum != 0.0:
        return _zeros_like(weight)
    return None


def _sgd_create_state_mp(self: Any, index: Index, weight: NDArray) -> Any:
    """SGD-style multi-precision state: ``(momentum_or_None, weight32)`` for float16 weights."""
    if self.multi_precision and weight.dtype == numpy.float16:
        weight_master_copy = weight.astype(numpy.float32)
        return (self.create_state(index, weight_master_copy), weight_master_copy)
    if weight.dtype == numpy.float16 and not self.multi_precision:
        warnings.warn("Accumulating with float16 in optimizer can lead to "
                      "poor accuracy or slow convergence. "
                      "Consider using multi_precision=True option of the "
                      "SGD optimizer")
    return self.create_state(index, weight)


def _sgd_update(self: Any, index: Any, weight: Any, grad: Any, state: Any) -> None:
    self._update_impl(index, weight, grad, state, multi_precision=False)


def _sgd_update_mp(self: Any, index: Any, weight: Any, grad: Any, state: Any) -> None:
    if not self._sparse_aware:
        grad = [g.tostype("default") if _is_sparse(g) else g for g in grad] \
            if isinstance(index, (tuple, list)) else (grad.tostype("default") if _is_sparse(grad) else grad)
    first = weight[0] if isinstance(index, (tuple, list)) else weight
    use_mp = self.multi_precision and first.dtype == numpy.float16
    self._update_impl(index, weight, grad, state, multi_precision=use_mp)


def _run_sgd(self: Any, weights: list, grads: list, states: list, lrs: List[float],
             wds: List[float], momentum: float, multi_precision: bool,
             lazy_update: bool = True) -> None:
    """MXNet's SGD step through the registered operators: ``multi_[mp_]sgd[_mom]_update`` for a
    list of dense weights (one call), else ``[mp_]sgd[_mom]_update`` per weight (the sparse
    rules handle row_sparse gradients, lazily when ``lazy_update``)."""
    kw = dict(rescale_grad=self.rescale_grad, **_clip_kwargs(self.clip_gradient))
    moms = [s[0] for s in states] if multi_precision else states
    has_mom = moms[0] is not None
    if len(weights) > 1 and not _is_sparse(*weights, *grads):
        n = len(weights)
        if has_mom:
            kw["momentum"] = momentum
        if multi_precision:
            w32s = [s[1] for s in states]
            groups = zip(weights, grads, moms, w32s) if has_mom else zip(weights, grads, w32s)
            op = _nd.multi_mp_sgd_mom_update if has_mom else _nd.multi_mp_sgd_update
        else:
            groups = zip(weights, grads, moms) if has_mom else zip(weights, grads)
            op = _nd.multi_sgd_mom_update if has_mom else _nd.multi_sgd_update
        op(*_flatten(groups), out=weights, lrs=lrs, wds=wds, num_weights=n, **kw)
        return
    kw["lazy_update"] = lazy_update
    for w, g, s, mom, lr, wd in zip(weights, grads, states, moms, lrs, wds):
        if multi_precision:
            if mom is not None:
                _nd.mp_sgd_mom_update(w, g, mom, s[1], out=w, lr=lr, wd=wd, momentum=momentum, **kw)
            else:
                _nd.mp_sgd_update(w, g, s[1], out=w, lr=lr, wd=wd, **kw)
        elif mom is not None:
            _nd.sgd_mom_update(w, g, mom, out=w, lr=lr, wd=wd, momentum=momentum, **kw)
        else:
            _nd.sgd_update(w, g, out=w, lr=lr, wd=wd, **kw)


@register
class SGD(Optimizer):
    """SGD with momentum and weight decay (MXNet's ``sgd_update``/``sgd_mom_update``)::

        state = momentum * state - lr * wd * weight - lr * clip(rescale_grad * grad, clip_gradient)
        weight = weight + state

    (no momentum: ``weight = (1 - lr*wd) * weight - lr * clip(rescale_grad * grad)``).
    With a row_sparse gradient ``lazy_update=True`` updates only the rows it holds (momentum and
    weight decay included); ``lazy_update=False`` updates every row (MXNet's semantics).
    ``aggregate_num`` defaults to ``MXNET_OPTIMIZER_AGGREGATION_SIZE`` (MXNet: 4; here 64, as the
    multi-tensor update has no kernel-argument limit): the Updater then passes lists of
    indices/weights/grads/states, which ``update`` accepts. The result does not depend on it.
    """

    _sparse_aware = True

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self._default_aggregate(int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "64")))

    create_state = _sgd_create_state
    create_state_multi_precision = _sgd_create_state_mp
    update = _sgd_update
    update_multi_precision = _sgd_update_mp

    def _update_impl(self, index: Any, weight: Any, grad: Any, state: Any,
                     multi_precision: bool = False) -> None:
        indices, weights, grads, states, _ = _as_list(index, weight, grad, state)
        for w, g in zip(weights, grads):
            _check_nd(w, g, type(self).__name__)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        momentum = self.momentum if self.momentum > 0 else 0.0
        _run_sgd(self, weights, grads, states, lrs, wds, momentum, multi_precision, self.lazy_update)


@register
class ccSGD(SGD):
    """[DEPRECATED] Same as `SGD`. Left here for backward compatibility."""


@register
class NAG(Optimizer):
    """Nesterov accelerated SGD (MXNet's ``nag_mom_update``)::

        g = clip(rescale_grad * grad, clip_gradient) + wd * weight
        state = momentum * state
        weight = weight + momentum * state - (1 + momentum) * lr * g
        state = state - lr * g

    Without momentum it is plain SGD (``sgd_update``).
    """

    def __init__(self, momentum: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum = momentum

    create_state = _sgd_create_state
    create_state_multi_precision = _sgd_create_state_mp
    update = _sgd_update
    update_multi_precision = _sgd_update_mp

    def _update_impl(self, index: Any, weight: Any, grad: Any, state: Any,
                     multi_precision: bool = False) -> None:
        indices, weights, grads, states, _ = _as_list(index, weight, grad, state)
        for w, g in zip(weights, grads):
            _check_nd(w, g, "NAG")
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        kw = dict(rescale_grad=self.rescale_grad, **_clip_kwargs(self.clip_gradient))
        for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
            mom = s[0] if multi_precision else s
            if mom is None:
                _run_sgd(self, [w], [g], [s], [lr], [wd], 0.0, multi_precision)
            elif multi_precision:
                _nd.mp_nag_mom_update(w, g, mom, s[1], out=w, lr=lr, wd=wd, momentum=self.momentum, **kw)
            else:
                _nd.nag_mom_update(w, g, mom, out=w, lr=lr, wd=wd, momentum=self.momentum, **kw)


@register
class LARS(Optimizer):
    """LARS ('Large Batch Training of Convolution Networks'): SGD whose per-layer learning rate
    is scaled, for names not ending in gamma/beta/bias, by::

        w_norm = ||weight||, g_norm = rescale_grad * ||grad||
        lr_layer = lr * eta * w_norm / (g_norm + wd * w_norm + eps)   if w_norm > 0 and g_norm > 0

    then updated as SGD. ``momentum_correction`` multiplies momentum by
    ``lr_now / lr_previous`` (scheduler changes). wd_mult defaults to 0 for every named parameter
    not ending with ``_weight``.
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001,
                 eps: float = 0, momentum_correction: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self._default_aggregate(int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4")))
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr: Optional[float] = None
        self.cur_lr: Optional[float] = None

    create_state = _sgd_create_state
    create_state_multi_precision = _sgd_create_state_mp
    update = _sgd_update
    update_multi_precision = _sgd_update_mp

    def set_wd_mult(self, args_wd_mult: Dict[Any, float]) -> None:
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not n.endswith("_weight"):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _get_lrs(self, indices: Sequence[Index]) -> List[float]:
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        lr = self._base_lr()
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return super()._get_lrs(indices)

    def _update_impl(self, index: Any, weight: Any, grad: Any, state: Any,
                     multi_precision: bool = False) -> None:
        indices, weights, grads, states, _ = _as_list(index, weight, grad, state)
        for w, g in zip(weights, grads):
            _check_nd(w, g, "LARS")
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        lrs = self._lars_lrs(indices, weights, grads, lrs, wds)
        momentum = 0.0
        if self.momentum > 0:
            momentum = self.momentum
            if self.momentum_correction and self.last_lr != 0:
                momentum = self.momentum * (self.cur_lr / self.last_lr)
        _run_sgd(self, weights, grads, states, lrs, wds, momentum, multi_precision, self.lazy_update)

    def _lars_lrs(self, indices: Sequence[Index], weights: list, grads: list, lrs: List[float],
                  wds: List[float]) -> List[float]:
        """Layer learning rates from the weight and gradient norms (``nd.norm`` in the weight's
        precision, as MXNet's ``_l2norm``); gamma/beta/bias parameters keep ``lr``."""
        out = list(lrs)
        for k, (i, w, g, lr, wd) in enumerate(zip(indices, weights, grads, lrs, wds)):
            name = self.idx2name[i] if i in self.idx2name else str(i)
            if name.endswith(("gamma", "beta", "bias")):
                continue
            w_norm = float(_nd.norm(w).asscalar())
            g_norm = float(_nd.norm(g).asscalar()) * self.rescale_grad
            if w_norm > 0.0 and g_norm > 0.0:
                out[k] = lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return out


@register
class LBSGD(Optimizer):
    """Large-batch SGD (MXNet's ``LBSGD``): gradients are accumulated over ``batch_scale`` calls;
    every ``batch_scale``-th call applies SGD with ``grad = sum / batch_scale`` and
    ``lr *= mult``, where ``mult`` ramps from 1 to ``batch_scale`` over
    ``warmup_epochs * updates_per_epoch`` updates ('linear', 'power2', 'sqrt') or is the LARS
    ratio ``sqrt(|w|^2 / (|g|^2 + wd |w|^2 + 1e-18))`` clipped to [0.01, 100] ('lars').
    Other calls leave the weight unchanged.
    """

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False,
                 warmup_strategy: str = "linear", warmup_epochs: int = 5, batch_scale: int = 1,
                 updates_per_epoch: int = 32, begin_epoch: int = 0, num_epochs: int = 60,
                 **kwargs: Any):
        super().__init__(**kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, updates_per_epoch=%d)",
                     batch_scale, warmup_epochs, warmup_strategy, updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads: Dict[Any, Dict[str, Any]] = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index: Index, weight: NDArray) -> Any:
        if self.multi_precision and weight.dtype == numpy.float16:
            weight_master_copy = weight.astype(numpy.float32)
            momentum = _zeros_like(weight, numpy.float32) if self.momentum != 0.0 else None
            return (momentum, weight_master_copy)
        if weight.dtype == numpy.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to "
                          "poor accuracy or slow convergence. "
                          "Consider using multi_precision=True option of the "
                          "SGD optimizer")
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def _get_lbmult(self, nup: int) -> float:
        nwup = self.warmup_epochs * self.updates_per_epoch
        strategy = self.warmup_strategy
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        if strategy == "linear":
            return 1.0 + (maxmult - 1) * nup / nwup
        if strategy == "power2":
            return 1.0 + (maxmult - 1) * (nup * nup) / (nwup * nwup)
        if strategy == "sqrt":
            return 1.0 + (maxmult - 1) * math.sqrt(float(nup) / nwup)
        return 1.0

    def _get_lars(self, weight: NDArray, g: NDArray, wd: float) -> float:
        w2 = float(_nd.sum(_nd.square(weight.astype(numpy.float64))).asscalar())
        g2 = float(_nd.sum(_nd.square(g.astype(numpy.float64))).asscalar())
        lars = math.sqrt(w2 / (g2 + wd * w2 + 1e-18))
        return min(max(lars, 0.01), 100.0)

    def _cumulate_gradient(self, grad: NDArray, index: Index) -> Dict[str, Any]:
        cgrad = self.cumgrads.get(index, {})
        if cgrad and cgrad["num_cums"] > 0:
            prev = cgrad["cum_grad"]
            cum_grad = prev.as_in_context(grad.context) + grad if isinstance(prev, NDArray) \
                else grad.copy()
            num_cums = cgrad["num_cums"] + 1
        else:
            cum_grad = grad.copy()
            num_cums = self.init_updates + 1
        cgrad = {"cum_grad": cum_grad, "num_cums": num_cums}
        self.cumgrads[index] = cgrad
        return cgrad

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "LBSGD")
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            return  # MXNet runs sgd_update with lr=0 here: the weight is unchanged
        g = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lbmult = self._get_lars(weight, g, wd)
        else:
            lbmult = self._get_lbmult(cgrad["num_cums"])
        lr = lr * lbmult
        momentum = self.momentum if self.momentum > 0 else 0.0
        mp = isinstance(state, (list, tuple))
        _run_sgd(self, [weight], [g], [state], [lr], [wd], momentum, mp)
        self.cumgrads[index]["cum_grad"] = 0


@register
class Signum(Optimizer):
    """Signum / signSGD (MXNet's ``signum_update``/``signsgd_update``)::

        state = momentum * state - (1 - momentum) * (wd * weight + clip(rescale_grad * grad))
        weight = (1 - lr * wd_lh) * weight + lr * sign(state)

    Without momentum: ``weight = (1 - lr*wd) * weight - lr * sign(grad)``.
    """

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index: Index, weight: NDArray) -> Optional[NDArray]:
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "Signum")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        kw = dict(rescale_grad=self.rescale_grad, **_clip_kwargs(self.clip_gradient))
        if state is not None:
            if self.wd_lh:
                kw["wd_lh"] = self.wd_lh
            _nd.signum_update(weight, grad, state, out=weight, lr=lr, wd=wd,
                              momentum=self.momentum if self.momentum > 0 else 0.0, **kw)
        else:
            _nd.signsgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kw)


@register
class FTML(Optimizer):
    """FTML, Follow the Moving Leader (MXNet's ``ftml_update``), with t the update count::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        v = beta2 * v + (1 - beta2) * g**2
        d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
        z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
        d = d_t; weight = -z / d_t
    """

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index: Index, weight: NDArray) -> Tuple[NDArray, NDArray, NDArray]:
        return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))  # d, v, z

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "FTML")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        d, v, z = state
        _nd.ftml_update(weight, grad, d, v, z, out=weight, lr=lr, wd=wd, t=t, beta1=self.beta1,
                        beta2=self.beta2, epsilon=self.epsilon, rescale_grad=self.rescale_grad,
                        **_clip_kwargs(self.clip_gradient, "clip_grad"))


@register
class LAMB(Optimizer):
    """LAMB (MXNet's ``lamb_update_phase1``/``phase2``), with t the update count::

        g = clip(rescale_grad * grad, clip_gradient)
        mean = beta1 * mean + (1 - beta1) * g;  var = beta2 * var + (1 - beta2) * g**2
        r = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight   (hats: bias-corrected if
            bias_correction, else mean and var)
        r1 = clamp(||weight||, lower_bound, upper_bound);  r2 = ||r||
        weight -= (lr * r1 / r2 if r1 > 0 and r2 > 0 else lr) * r
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound: Optional[float] = None,
                 upper_bound: Optional[float] = None, bias_correction: bool = True, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        self._default_aggregate(max(1, min(45, int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "45")))))

    def create_state(self, index: Index, weight: NDArray) -> Tuple[NDArray, NDArray]:
        return (_zeros_like(weight), _zeros_like(weight))  # mean, var

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        indices, weights, grads, states, _ = _as_list(index, weight, grad, state)
        for w, g in zip(weights, grads):
            _check_nd(w, g, "LAMB")
        bounds = {}
        if self.lower_bound:
            bounds["lower_bound"] = self.lower_bound
        if self.upper_bound:
            bounds["upper_bound"] = self.upper_bound
        for i, w, g, (mean, var) in zip(indices, weights, grads, states):
            self._update_count(i)
            lr, wd = self._get_lr(i), self._get_wd(i)
            direction = _nd.lamb_update_phase1(
                w, g, mean, var, t=self._index_update_count[i], wd=wd, beta1=self.beta1,
                beta2=self.beta2, epsilon=self.epsilon, bias_correction=self.bias_correction,
                rescale_grad=self.rescale_grad, **_clip_kwargs(self.clip_gradient))
            _nd.lamb_update_phase2(w, direction, _nd.norm(w), _nd.norm(direction), out=w, lr=lr,
                                   **bounds)


@register
class DCASGD(Optimizer):
    """Delay-compensated async SGD (MXNet's Python ``DCASGD``)::

        g = clip(rescale_grad * grad, clip_gradient)
        mom = momentum * mom - lr * (g + wd * weight + lamda * g**2 * (weight - previous_weight))
        previous_weight = weight;  weight += mom
    """

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous: Dict[Any, Any] = {}
        self.lamda = lamda

    def create_state(self, index: Index, weight: NDArray) -> Tuple[Optional[NDArray], NDArray]:
        mom = _zeros_like(weight) if self.momentum != 0.0 else None
        return (mom, weight.copy())  # momentum, previous weight

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "DCASGD")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        mom, previous_weight = state
        g = _py_scaled(grad, self.rescale_grad, self.clip_gradient)
        step = g + wd * weight + self.lamda * g * g * (weight - previous_weight)
        if mom is not None:
            _nd.elemwise_sub(mom * self.momentum, lr * step, out=mom)
            delta = mom
        else:
            delta = -lr * step
        previous_weight[:] = weight
        _nd.elemwise_add(weight, delta, out=weight)


@register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics (MXNet's Python ``SGLD``)::

        g = clip(rescale_grad * grad, clip_gradient)
        weight += -lr / 2 * (g + wd * weight) + normal(0, sqrt(lr))

    The noise is drawn from torch's default generator (``mx.random.seed`` seeds it).
    """

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "SGLD")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        g = _py_scaled(grad, self.rescale_grad, self.clip_gradient)
        noise = _nd.random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                                  ctx=weight.context)
        _nd.elemwise_add(weight, -lr / 2 * (g + wd * weight) + noise, out=weight)


@register
class Adam(Optimizer):
    """Adam (MXNet's ``adam_update``), with t the update count::

        lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)
        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        mean = beta1 * mean + (1 - beta1) * g;  var = beta2 * var + (1 - beta2) * g**2
        weight -= lr_t * mean / (sqrt(var) + epsilon)

    With a row_sparse gradient ``lazy_update=True`` updates only the rows it holds;
    ``lazy_update=False`` updates every row (MXNet's semantics).
    """

    _sparse_aware = True

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index: Index, weight: NDArray) -> Tuple[NDArray, NDArray]:
        return (_zeros_like(weight), _zeros_like(weight))  # mean, variance

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "Adam")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1. - self.beta2 ** t) / (1. - self.beta1 ** t)
        mean, var = state
        _nd.adam_update(weight, grad, mean, var, out=weight, lr=lr, wd=wd, beta1=self.beta1,
                        beta2=self.beta2, epsilon=self.epsilon, rescale_grad=self.rescale_grad,
                        lazy_update=self.lazy_update, **_clip_kwargs(self.clip_gradient))


@register
class AdaGrad(Optimizer):
    """AdaGrad (MXNet's Python ``AdaGrad``, dense path)::

        g = clip(rescale_grad * grad, clip_gradient)
        history += g**2
        weight -= lr * (g / sqrt(history + eps) + wd * weight)
    """

    _sparse_aware = True

    def __init__(self, eps: float = 1e-7, **kwargs: Any):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: Index, weight: NDArray) -> NDArray:
        return _zeros_like(weight)  # history

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "AdaGrad")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        if _is_sparse(weight, grad):
            _nd.sparse.adagrad_update(weight, grad, state, out=weight, lr=lr, wd=wd,
                                      epsilon=self.float_stable_eps, rescale_grad=self.rescale_grad,
                                      **_clip_kwargs(self.clip_gradient))
            return
        if not wd:   # the same rule as the registered kernel (which refuses wd): one fused op
            clip = {} if self.clip_gradient is None else {"clip_gradient": float(self.clip_gradient)}
            _nd.sparse.adagrad_update(weight, grad, state, out=weight, lr=lr,
                                      epsilon=self.float_stable_eps, rescale_grad=self.rescale_grad,
                                      **clip)
            return
        g = _py_scaled(grad, self.rescale_grad, self.clip_gradient)
        _nd.elemwise_add(state, _nd.square(g), out=state)
        div = g / _nd.sqrt(state + self.float_stable_eps)
        _nd.elemwise_sub(weight, lr * (div + wd * weight), out=weight)


@register
class RMSProp(Optimizer):
    """RMSProp (MXNet's ``rmsprop_update``; ``centered=True``: ``rmspropalex_update``)::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        n = (1 - gamma1) * g**2 + gamma1 * n
        weight -= lr * g / sqrt(n + epsilon)                        (centered=False)
        gm = (1 - gamma1) * g + gamma1 * gm
        delta = gamma2 * delta - lr * g / sqrt(n - gm**2 + epsilon)
        weight += delta                                             (centered=True)
        weight = clip(weight, clip_weights)                         (if clip_weights)
    """

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False, clip_weights: Optional[float] = None,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index: Index, weight: NDArray) -> Tuple[NDArray, ...]:
        if self.centered:
            return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))  # n, g, delta
        return (_zeros_like(weight),)  # n

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "RMSProp")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        kw = dict(gamma1=self.gamma1, epsilon=self.epsilon, rescale_grad=self.rescale_grad,
                  **_clip_kwargs(self.clip_gradient), **_clip_kwargs(self.clip_weights, "clip_weights"))
        if self.centered:
            n, g, delta = state
            _nd.rmspropalex_update(weight, grad, n, g, delta, out=weight, lr=lr, wd=wd,
                                   gamma2=self.gamma2, **kw)
        else:
            _nd.rmsprop_update(weight, grad, state[0], out=weight, lr=lr, wd=wd, **kw)


@register
class AdaDelta(Optimizer):
    """AdaDelta (MXNet's Python ``AdaDelta``; the learning rate is not used)::

        g = clip(rescale_grad * grad, clip_gradient)
        acc_g = rho * acc_g + (1 - rho) * g**2
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        weight -= delta + wd * weight
    """

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index: Index, weight: NDArray) -> Tuple[NDArray, NDArray]:
        return (_zeros_like(weight), _zeros_like(weight))  # accumulated g, accumulated delta

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "AdaDelta")
        self._update_count(index)
        wd = self._get_wd(index)
        acc_g, acc_delta = state
        rho = self.rho
        g = _py_scaled(grad, self.rescale_grad, self.clip_gradient)
        _nd.elemwise_add(rho * acc_g, (1. - rho) * g * g, out=acc_g)
        cur_delta = _nd.sqrt(acc_delta + self.epsilon) / _nd.sqrt(acc_g + self.epsilon) * g
        _nd.elemwise_add(rho * acc_delta, (1. - rho) * cur_delta * cur_delta, out=acc_delta)
        _nd.elemwise_sub(weight, cur_delta + wd * weight, out=weight)


@register
class Ftrl(Optimizer):
    """FTRL-Proximal (MXNet's ``ftrl_update``)::

        g = clip(rescale_grad * grad, clip_gradient)
        z += g - (sqrt(n + g**2) - sqrt(n)) * weight / lr
        n += g**2
        weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)
    """

    _sparse_aware = True

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = lamda1
        self.beta = beta

    def create_state(self, index: Index, weight: NDArray) -> Tuple[NDArray, NDArray]:
        return (_zeros_like(weight), _zeros_like(weight))  # z, n

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "Ftrl")
        self._update_count(index)
        wd = self._get_wd(index)
        lr = self._get_lr(index)
        _nd.ftrl_update(weight, grad, state[0], state[1], out=weight, lr=lr, lamda1=self.lamda1,
                        beta=self.beta, wd=wd, rescale_grad=self.rescale_grad,
                        **_clip_kwargs(self.clip_gradient))


@register
class Adamax(Optimizer):
    """AdaMax (MXNet's Python ``Adamax``), with t the update count::

        lr_t = lr / (1 - beta1**t)
        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * g;  u = max(beta2 * u, |g|)
        weight -= lr_t * m / u
    """

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index: Index, weight: NDArray) -> Tuple[NDArray, NDArray]:
        return (_zeros_like(weight), _zeros_like(weight))  # mean, variance

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "Adamax")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        lr /= (1. - self.beta1 ** t)
        mean, variance = state
        g = _py_scaled(grad, self.rescale_grad, self.clip_gradient, wd * weight)
        _nd.elemwise_add(self.beta1 * mean, (1. - self.beta1) * g, out=mean)
        _nd.broadcast_maximum(self.beta2 * variance, _nd.abs(g), out=variance)
        _nd.elemwise_sub(weight, lr * mean / variance, out=weight)


@register
class Nadam(Optimizer):
    """Nesterov Adam (MXNet's Python ``Nadam``), with t the update count and a momentum
    schedule shared by all weights::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        mu_t = beta1 * (1 - 0.5 * 0.96**(t * schedule_decay)); mu_t1 likewise with t + 1
        m_schedule *= mu_t;  m_schedule_next = m_schedule * mu_t1
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2
        m_bar = (1 - mu_t) * g / (1 - m_schedule) + mu_t1 * m / (1 - m_schedule_next)
        weight -= lr * m_bar / (sqrt(v / (1 - beta2**t)) + epsilon)
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.

    def create_state(self, index: Index, weight: NDArray) -> Tuple[NDArray, NDArray]:
        return (_zeros_like(weight), _zeros_like(weight))  # mean, variance

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "Nadam")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        mean, variance = state
        momentum_t = self.beta1 * (1. - 0.5 * (pow(0.96, t * self.schedule_decay)))
        momentum_t_1 = self.beta1 * (1. - 0.5 * (pow(0.96, (t + 1) * self.schedule_decay)))
        self.m_schedule = self.m_schedule * momentum_t
        m_schedule_next = self.m_schedule * momentum_t_1
        g = _py_scaled(grad, self.rescale_grad, self.clip_gradient, wd * weight)
        _nd.elemwise_add(self.beta1 * mean, (1. - self.beta1) * g, out=mean)
        _nd.elemwise_add(self.beta2 * variance, (1. - self.beta2) * g * g, out=variance)
        grad_prime = g / (1. - self.m_schedule)
        m_t_prime = mean / (1. - m_schedule_next)
        v_t_prime = variance / (1. - pow(self.beta2, t))
        m_t_bar = (1. - momentum_t) * grad_prime + momentum_t_1 * m_t_prime
        _nd.elemwise_sub(weight, lr * m_t_bar / (_nd.sqrt(v_t_prime) + self.epsilon), out=weight)


@register
class Test(Optimizer):
    """The Test optimizer: ``weight += rescale_grad * grad``; the state mirrors the weight."""

    def create_state(self, index: Index, weight: NDArray) -> NDArray:
        return _zeros_like(weight)

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        _nd.elemwise_add(weight, grad * self.rescale_grad, out=weight)
        state[:] = weight


# -- Updater ------------------------------------------------------------------------------------
def _find_optimizer_class(name: str) -> type:
    cls = Optimizer.opt_registry.get(name.lower())
    if cls is None or cls.__name__ != name:
        for c in Optimizer.opt_registry.values():
            if c.__name__ == name:
                return c
        raise MXNetError(f"set_states: the states were saved with optimizer {name!r}, which is "
                         f"not registered here; register it with @mx.optimizer.register first")
    return cls


def _find_scheduler_class(name: str) -> type:
    from .. import lr_scheduler as _lrs

    def walk(c: type) -> list:
        out = [c]
        for s in c.__subclasses__():
            out.extend(walk(s))
        return out
    for c in walk(_lrs.LRScheduler):
        if c.__name__ == name:
            return c
    raise MXNetError(f"set_states: unknown LRScheduler class {name!r} in the saved optimizer; "
                     f"define (import) it before loading")


class _ObjectEncoder(_codec.Encoder):
    """Encoder that also writes NDArrays (sparse ones dense, with their storage type), and
    optimizers and LR schedulers as (class name, attributes)."""

    def __init__(self) -> None:
        super().__init__(self._hook)

    def _hook(self, obj: Any, path: str) -> Optional[dict]:
        from .. import lr_scheduler as _lrs
        if isinstance(obj, NDArray):
            if obj.stype == "default":
                return self.array(_to_numpy_for_save(obj), "nd")
            return self.array(_to_numpy_for_save(obj.tostype("default")), "nd", obj.stype)
        if isinstance(obj, Optimizer):
            attrs = {k: v for k, v in vars(obj).items() if k != "param_dict"}
            return {"t": "optimizer", "cls": type(obj).__name__,
                    "v": self.encode(attrs, f"{path}<optimizer>")}
        if isinstance(obj, _lrs.LRScheduler):
            return {"t": "lr_scheduler", "cls": type(obj).__name__,
                    "v": self.encode(dict(vars(obj)), f"{path}<lr_scheduler>")}
        return None


def _decode_array(a: numpy.ndarray, stype: Optional[str]) -> NDArray:
    nd = _from_numpy_loaded(a)
    return nd if stype is None else nd.tostype(stype)


def _decode_object(node: dict, dec: "_codec.Decoder") -> Any:
    t = node.get("t")
    if t not in ("optimizer", "lr_scheduler"):
        raise MXNetError(f"set_states: unknown node type {str(t)[:40]!r} in the states blob")
    name = dec.field(node, "cls", str, t)
    attrs = dec.decode(dec.field(node, "v", dict, t))
    if not isinstance(attrs, dict) or not all(isinstance(k, str) and k.isidentifier() for k in attrs):
        raise MXNetError(f"set_states: the saved {t} {name[:40]!r} must hold a dict of attribute names")
    if t == "lr_scheduler":
        cls = _find_scheduler_class(name)
        obj = cls.__new__(cls)
        obj.__dict__.update(attrs)
        return obj
    cls = _find_optimizer_class(name)
    obj = cls.__new__(cls)
    obj.__dict__.update(attrs)
    obj.param_dict = {}
    # restore the aliasing of the current device's counters (a pickle would keep it)
    counts = getattr(obj, "_all_index_update_counts", None)
    current = getattr(obj, "_index_update_count", None)
    if isinstance(counts, dict) and isinstance(current, dict):
        for d in counts.values():
            if d == current:
                obj._index_update_count = d
                break
    return obj


def decode_states(blob: bytes) -> Tuple[Dict[Any, Any], Optional["Optimizer"]]:
    """Decode and check a :meth:`Updater.get_states` blob -> ``(states, optimizer or None)``.

    Raises MXNetError for anything that is not a well-formed blob: the byte layout, the tree,
    the optimizer's attributes and scheduler, and the state entries are all checked, so that a
    caller can accept the result without further ado (see ``_states_check``)."""
    from . import _states_check
    obj = _codec.loads(blob, _decode_object, _decode_array)
    if not isinstance(obj, dict) or obj.get("kind") not in ("states", "states+optimizer") \
            or not set(obj) <= {"kind", "states", "optimizer"}:
        raise MXNetError("set_states: the blob does not hold updater states")
    if "states" not in obj:
        raise MXNetError("set_states: the blob has no 'states' entry")
    _states_check.check_states(obj["states"])
    optimizer = None
    if obj["kind"] == "states+optimizer":
        if "optimizer" not in obj:
            raise MXNetError("set_states: the blob announces an optimizer but holds none")
        optimizer = obj["optimizer"]
        _states_check.check_optimizer(optimizer)
    return obj["states"], optimizer


class Updater:
    """Applies an optimizer to (index, grad, weight) triples and keeps the per-index states
    (MXNet's ``Updater``, used by Trainer and KVStore). ``get_states``/``set_states`` use a safe
    JSON + raw-array format instead of pickle."""

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer
        self.states: Dict[Any, Any] = {}
        self.states_synced: Dict[Any, bool] = {}
        self.aggregate_updates = optimizer.aggregate_num > 0
        # The device this updater serves, when its creator knows it (Trainer: one updater per
        # context). MXNet reads it from the weights' context; hybridnet's CPU arrays all report
        # cpu(0), so the per-device update counters (and lr schedules) need the hint.
        self.device_id: Optional[int] = None

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        """Update ``weight`` (or each of a list of weights) from ``grad``."""
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = list(index), list(grad), list(weight)
        if self.device_id is not None:
            self.optimizer._set_current_context(self.device_id)
        elif weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                indices[i] = idx.decode("utf-8")
                idx = indices[i]
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], weights[i].context)
                self.states_synced[idx] = True
        if self.aggregate_updates:
            type_map: Dict[Any, list] = {}
            for i, w, g in zip(indices, weights, grads):
                type_map.setdefault(w.dtype, []).append((i, w, g))
            num = self.optimizer.aggregate_num
            for group in type_map.values():
                idxs, ws, gs = zip(*group)
                cur = 0
                while cur < len(idxs):
                    sl = slice(cur, cur + num)
                    states = [self.states[i] for i in idxs[sl]]
                    self.optimizer.update_multi_precision(list(idxs[sl]), list(ws[sl]), list(gs[sl]), states)
                    cur += num
        else:
            for i, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(i, w, g, self.states[i])

    def sync_state_context(self, state: Any, context: Any) -> Any:
        """Move a state (NDArray, or nested tuple/list of them) to ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states: bytes) -> None:
        """Restore states written by :meth:`get_states` (optionally with the optimizer). The blob
        is fully decoded and checked first; on error the updater is left as it was."""
        loaded, optimizer = decode_states(states)
        if optimizer is not None:
            self.optimizer = optimizer
            self.aggregate_updates = optimizer.aggregate_num > 0
        self.states = loaded
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """Serialize the states (and, with ``dump_optimizer``, the optimizer with its learning
        rate, counters and scheduler) to bytes."""
        if dump_optimizer:
            payload = {"kind": "states+optimizer", "states": self.states, "optimizer": self.optimizer}
        else:
            payload = {"kind": "states", "states": self.states}
        return _codec.dumps(payload, _ObjectEncoder())


def get_updater(optimizer: Optimizer) -> Updater:
    """An :class:`Updater` for ``optimizer`` (MXNet's ``mx.optimizer.get_updater``)."""
    return Updater(optimizer)
