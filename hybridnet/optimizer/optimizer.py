"""Optimizers with MXNet 1.9.1's update rules, run as in-place torch ops on ``NDArray._t``.

Every update mirrors the MXNet operator (or Python code) it replaces, including where
``rescale_grad``, ``clip_gradient`` and ``wd`` enter the formula; each class docstring gives the
rule. Kernel-backed MXNet optimizers (SGD, NAG, Adam, RMSProp, Ftrl, FTML, Signum, LAMB, LARS)
clip only when ``clip_gradient`` is truthy (MXNet passes it to the kernel only then); the ones
MXNet writes in Python (AdaGrad, AdaDelta, Adamax, Nadam, DCASGD, SGLD) clip whenever it is not
None. Updates run under ``torch.no_grad()`` and touch whole tensors (no per-element loops).
"""
from __future__ import annotations

import logging
import math
import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy
import torch

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .. import ndarray as _nd
from . import _codec

NDabs = _nd.abs  # MXNet's optimizer module re-exports nd.abs under this name

__all__ = [
    "AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LARS", "LBSGD",
    "NAG", "NDabs", "Nadam", "Optimizer", "RMSProp", "SGD", "SGLD", "Signum", "LAMB",
    "Test", "Updater", "ccSGD", "create", "get_updater", "register",
]

Index = Union[int, str]


# -- small tensor helpers ---------------------------------------------------------------------
def _zeros_like(weight: NDArray, dtype: Optional[torch.dtype] = None) -> NDArray:
    """A zero state for ``weight``, of its storage type (MXNet: ``zeros(..., stype=weight.stype)``)."""
    t = weight._t
    if t.layout is not torch.strided:
        from ..ndarray import sparse as _sparse
        return _sparse.wrap(_sparse.zeros_tensor(weight.stype, t.shape, dtype or t.dtype, t.device))
    return NDArray(torch.zeros(t.shape, dtype=dtype or t.dtype, device=t.device))


def _is_sparse(*arrays: Any) -> bool:
    """Whether any array has sparse storage: the update then runs MXNet's registered update
    operator (lazy row_sparse updates, storage fallback) instead of the dense tensor code."""
    return any(a is not None and a._t.layout is not torch.strided for a in arrays)


def _op_clip(clip_gradient: Optional[float]) -> float:
    clip = _kernel_clip(clip_gradient)
    return -1.0 if clip is None else clip


def _kernel_clip(clip_gradient: Optional[float]) -> Optional[float]:
    """MXNet passes clip_gradient to its kernels only when truthy; kernels clip iff it is >= 0."""
    if clip_gradient and clip_gradient >= 0:
        return float(clip_gradient)
    return None


def _scaled(grad: torch.Tensor, rescale: float, clip: Optional[float],
            dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """A new tensor ``clip(rescale * grad, clip)`` (clip skipped when ``clip`` is None)."""
    g = grad.detach()
    if dtype is not None and g.dtype != dtype:
        g = g.to(dtype)
    g = g * rescale
    if clip is not None:
        g.clamp_(-clip, clip)
    return g


def _norm(t: torch.Tensor) -> float:
    """L2 norm as a Python float, accumulated in float32 (float64 for float64 tensors)."""
    t = t.detach()
    return float(torch.linalg.vector_norm(t if t.dtype == torch.float64 else t.float()))


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
            if _is_sparse(weight, weight_master_copy):
                _nd.sparse.store_into(weight, weight_master_copy._t.to(weight._t.dtype))
            else:
                with torch.no_grad():
                    weight._t.copy_(weight_master_copy._t)
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
def _sgd_step(w: torch.Tensor, g: torch.Tensor, mom: Optional[torch.Tensor], lr: float, wd: float,
              rescale: float, clip: Optional[float], momentum: float) -> None:
    """MXNet sgd_update / sgd_mom_update (and their mp_/multi_ forms) on the tensor ``w``:
    ``mom = momentum*mom - lr*wd*w - lr*clip(rescale*g); w += mom`` (no momentum:
    ``w = (1 - lr*wd)*w - lr*clip(rescale*g)``)."""
    gs = _scaled(g, rescale, clip, w.dtype)
    if mom is not None:
        mom.mul_(momentum).add_(w, alpha=-lr * wd).add_(gs, alpha=-lr)
        w.add_(mom)
    else:
        w.mul_(1.0 - lr * wd).add_(gs, alpha=-lr)


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
             wds: List[float], momentum: float, multi_precision: bool) -> None:
    clip = _kernel_clip(self.clip_gradient)
    if not multi_precision and clip is None and len(weights) > 1:
        _run_sgd_foreach(weights, grads, states, lrs, wds, momentum, self.rescale_grad)
        return
    with torch.no_grad():
        for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
            if multi_precision:
                mom, w32 = s
                _sgd_step(w32._t, g._t, mom._t if mom is not None else None, lr, wd,
                          self.rescale_grad, clip, momentum)
                w._t.copy_(w32._t)
            else:
                _sgd_step(w._t, g._t, s._t if s is not None else None, lr, wd,
                          self.rescale_grad, clip, momentum)


def _run_sgd_foreach(weights: list, grads: list, states: list, lrs: List[float], wds: List[float],
                     momentum: float, rescale: float) -> None:
    """The same update as ``_sgd_step`` for many weights at once (torch's multi-tensor ops),
    grouped by (lr, wd, dtype, device): MXNet's multi_sgd_update / multi_sgd_mom_update."""
    groups: dict = {}
    for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
        key = (lr, wd, w._t.dtype, w._t.device)
        ws, gs, ms = groups.setdefault(key, ([], [], []))
        ws.append(w._t)
        gs.append(g._t.detach() if g._t.dtype == w._t.dtype else g._t.detach().to(w._t.dtype))
        if s is not None:
            ms.append(s._t)
    with torch.no_grad():
        for (lr, wd, _, _), (ws, gs, ms) in groups.items():
            if momentum != 0.0 and len(ms) == len(ws):
                torch._foreach_mul_(ms, momentum)
                if wd:
                    torch._foreach_add_(ms, ws, alpha=-lr * wd)
                torch._foreach_add_(ms, gs, alpha=-lr * rescale)
                torch._foreach_add_(ws, ms)
            else:
                if wd:
                    torch._foreach_mul_(ws, 1.0 - lr * wd)
                torch._foreach_add_(ws, gs, alpha=-lr * rescale)


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
        if not multi_precision and _is_sparse(*weights, *grads):
            for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
                kw = dict(lr=lr, wd=wd, rescale_grad=self.rescale_grad,
                          clip_gradient=_op_clip(self.clip_gradient), lazy_update=self.lazy_update)
                if s is None:
                    _nd.sgd_update(w, g, out=w, **kw)
                else:
                    _nd.sgd_mom_update(w, g, s, out=w, momentum=momentum, **kw)
            return
        _run_sgd(self, weights, grads, states, lrs, wds, momentum, multi_precision)


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
        mu = self.momentum if self.momentum > 0 else 0.0
        clip = _kernel_clip(self.clip_gradient)
        with torch.no_grad():
            for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
                if multi_precision:
                    mom, target = s[0], s[1]._t
                else:
                    mom, target = s, w._t
                if mom is None:
                    _sgd_step(target, g._t, None, lr, wd, self.rescale_grad, clip, 0.0)
                else:
                    m = mom._t
                    gg = _scaled(g._t, self.rescale_grad, clip, target.dtype).add_(target, alpha=wd)
                    m.mul_(mu)
                    target.add_(m, alpha=mu).add_(gg, alpha=-(1.0 + mu) * lr)
                    m.add_(gg, alpha=-lr)
                if multi_precision:
                    w._t.copy_(target)


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
        lrs = [self._get_lars(i, w, g, lr, wd)
               for i, w, g, lr, wd in zip(indices, weights, grads, lrs, wds)]
        momentum = 0.0
        if self.momentum > 0:
            momentum = self.momentum
            if self.momentum_correction and self.last_lr != 0:
                momentum = self.momentum * (self.cur_lr / self.last_lr)
        _run_sgd(self, weights, grads, states, lrs, wds, momentum, multi_precision)

    def _get_lars(self, i: Index, weight: NDArray, g: NDArray, lr: float, wd: float) -> float:
        """The layer learning rate (``lr`` itself for gamma/beta/bias parameters)."""
        name = self.idx2name[i] if i in self.idx2name else str(i)
        if name.endswith("gamma") or name.endswith("beta") or name.endswith("bias"):
            return lr
        with torch.no_grad():
            w_norm = _norm(weight._t)
            g_norm = _norm(g._t) * self.rescale_grad
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return lr


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
            momentum = _zeros_like(weight, torch.float32) if self.momentum != 0.0 else None
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
        w2 = float((weight._t.detach().double() ** 2).sum())
        g2 = float((g._t.detach().double() ** 2).sum())
        lars = math.sqrt(w2 / (g2 + wd * w2 + 1e-18))
        return min(max(lars, 0.01), 100.0)

    def _cumulate_gradient(self, grad: NDArray, index: Index) -> Dict[str, Any]:
        cgrad = self.cumgrads.get(index, {})
        if cgrad and cgrad["num_cums"] > 0:
            prev = cgrad["cum_grad"]
            cum_grad = NDArray(prev._t.to(grad._t.device) + grad._t.detach()) \
                if isinstance(prev, NDArray) else NDArray(grad._t.detach().clone())
            num_cums = cgrad["num_cums"] + 1
        else:
            cum_grad = NDArray(grad._t.detach().clone())
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
        g = NDArray(cgrad["cum_grad"]._t / self.batch_scale)
        if self.warmup_strategy == "lars":
            lbmult = self._get_lars(weight, g, wd)
        else:
            lbmult = self._get_lbmult(cgrad["num_cums"])
        lr = lr * lbmult
        momentum = self.momentum if self.momentum > 0 else 0.0
        clip = _kernel_clip(self.clip_gradient)
        with torch.no_grad():
            if isinstance(state, (list, tuple)):
                mom, w32 = state
                _sgd_step(w32._t, g._t, mom._t if mom is not None else None, lr, wd,
                          self.rescale_grad, clip, momentum)
                weight._t.copy_(w32._t)
            else:
                _sgd_step(weight._t, g._t, state._t if state is not None else None, lr, wd,
                          self.rescale_grad, clip, momentum)
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
        w = weight._t
        with torch.no_grad():
            if state is not None:
                mu = self.momentum if self.momentum > 0 else 0.0
                wd_lh = self.wd_lh if self.wd_lh else 0.0
                m = state._t
                gs = _scaled(grad._t, self.rescale_grad, _kernel_clip(self.clip_gradient), w.dtype)
                m.mul_(mu).add_(w, alpha=-(1 - mu) * wd).add_(gs, alpha=-(1 - mu))
                w.mul_(1.0 - lr * wd_lh).add_(torch.sign(m), alpha=lr)
            else:
                w.mul_(1.0 - lr * wd).add_(torch.sign(grad._t.detach()).to(w.dtype), alpha=-lr)


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
        d, v, z = (s._t for s in state)
        w = weight._t
        b1, b2 = self.beta1, self.beta2
        with torch.no_grad():
            g = grad._t.detach().to(w.dtype) * self.rescale_grad + wd * w
            clip = _kernel_clip(self.clip_gradient)
            if clip is not None:
                g.clamp_(-clip, clip)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            d_t = (v / (1 - b2 ** t)).sqrt_().add_(self.epsilon).mul_((1 - b1 ** t) / lr)
            z.mul_(b1).add_(g, alpha=1 - b1).sub_((d_t - b1 * d) * w)
            d.copy_(d_t)
            w.copy_(-z / d_t)


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

    def _step(self, index: Index, w: torch.Tensor, grad: NDArray, mean: torch.Tensor,
              var: torch.Tensor, lr: float, wd: float) -> None:
        t = self._index_update_count[index]
        b1, b2 = self.beta1, self.beta2
        g = _scaled(grad._t, self.rescale_grad, _kernel_clip(self.clip_gradient), w.dtype)
        mean.mul_(b1).add_(g, alpha=1 - b1)
        var.mul_(b2).addcmul_(g, g, value=1 - b2)
        if self.bias_correction:
            r = (mean / (1.0 - b1 ** t)) / ((var / (1 - b2 ** t)).sqrt_().add_(self.epsilon))
        else:
            r = mean / var.sqrt().add_(self.epsilon)
        r.add_(w, alpha=wd)
        r1 = _norm(w)
        if self.lower_bound:
            r1 = max(r1, self.lower_bound)
        if self.upper_bound:
            r1 = min(r1, self.upper_bound)
        r2 = _norm(r)
        lr_t = lr if (r1 == 0.0 or r2 == 0.0) else lr * r1 / r2
        w.add_(r, alpha=-lr_t)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        indices, weights, grads, states, _ = _as_list(index, weight, grad, state)
        for w, g in zip(weights, grads):
            _check_nd(w, g, "LAMB")
        for i, w, g, s in zip(indices, weights, grads, states):
            self._update_count(i)
            lr, wd = self._get_lr(i), self._get_wd(i)
            with torch.no_grad():
                self._step(i, w._t, g, s[0]._t, s[1]._t, lr, wd)


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
        mom, prev = state
        w = weight._t
        with torch.no_grad():
            g = _scaled(grad._t, self.rescale_grad, self.clip_gradient, w.dtype)
            step = g + wd * w + self.lamda * g * g * (w - prev._t)
            if mom is not None:
                m = mom._t
                m.mul_(self.momentum).add_(step, alpha=-lr)
            else:
                m = step.mul_(-lr)
            prev._t.copy_(w)
            w.add_(m)


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
        w = weight._t
        with torch.no_grad():
            g = _scaled(grad._t, self.rescale_grad, self.clip_gradient, w.dtype)
            w.add_(g.add_(w, alpha=wd), alpha=-lr / 2)
            noise = torch.randn(w.shape, dtype=w.dtype, device=w.device)
            w.add_(noise, alpha=math.sqrt(lr))


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
        if _is_sparse(weight, grad):
            _nd.adam_update(weight, grad, state[0], state[1], out=weight, lr=lr, beta1=self.beta1,
                            beta2=self.beta2, epsilon=self.epsilon, wd=wd, rescale_grad=self.rescale_grad,
                            clip_gradient=_op_clip(self.clip_gradient), lazy_update=self.lazy_update)
            return
        mean, var = state[0]._t, state[1]._t
        w = weight._t
        with torch.no_grad():
            g = grad._t.detach().to(w.dtype) * self.rescale_grad + wd * w
            clip = _kernel_clip(self.clip_gradient)
            if clip is not None:
                g.clamp_(-clip, clip)
            mean.mul_(self.beta1).add_(g, alpha=1 - self.beta1)
            var.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
            w.addcdiv_(mean, var.sqrt().add_(self.epsilon), value=-lr)


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
                                      clip_gradient=_op_clip(self.clip_gradient))
            return
        w, h = weight._t, state._t
        with torch.no_grad():
            g = _scaled(grad._t, self.rescale_grad, self.clip_gradient, w.dtype)
            h.addcmul_(g, g)
            div = g / (h + self.float_stable_eps).sqrt_()
            w.add_(div.add_(w, alpha=wd), alpha=-lr)


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
        w = weight._t
        g1 = self.gamma1
        with torch.no_grad():
            g = grad._t.detach().to(w.dtype) * self.rescale_grad + wd * w
            clip = _kernel_clip(self.clip_gradient)
            if clip is not None:
                g.clamp_(-clip, clip)
            n = state[0]._t
            n.mul_(g1).addcmul_(g, g, value=1 - g1)
            if not self.centered:
                w.addcdiv_(g, (n + self.epsilon).sqrt_(), value=-lr)
            else:
                gm, delta = state[1]._t, state[2]._t
                gm.mul_(g1).add_(g, alpha=1 - g1)
                delta.mul_(self.gamma2).addcdiv_(g, (n - gm * gm + self.epsilon).sqrt_(), value=-lr)
                w.add_(delta)
            cw = _kernel_clip(self.clip_weights)
            if cw is not None:
                w.clamp_(-cw, cw)


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
        w = weight._t
        acc_g, acc_delta = state[0]._t, state[1]._t
        rho = self.rho
        with torch.no_grad():
            g = _scaled(grad._t, self.rescale_grad, self.clip_gradient, w.dtype)
            acc_g.mul_(rho).addcmul_(g, g, value=1. - rho)
            cur = (acc_delta + self.epsilon).sqrt_().div_((acc_g + self.epsilon).sqrt_()).mul_(g)
            acc_delta.mul_(rho).addcmul_(cur, cur, value=1. - rho)
            w.sub_(cur.add_(w, alpha=wd))


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
        if _is_sparse(weight, grad):
            _nd.ftrl_update(weight, grad, state[0], state[1], out=weight, lr=lr, lamda1=self.lamda1,
                            beta=self.beta, wd=wd, rescale_grad=self.rescale_grad,
                            clip_gradient=_op_clip(self.clip_gradient))
            return
        w = weight._t
        z, n = state[0]._t, state[1]._t
        with torch.no_grad():
            g = _scaled(grad._t, self.rescale_grad, _kernel_clip(self.clip_gradient), w.dtype)
            g2 = g * g
            z.add_(g).sub_(((n + g2).sqrt_() - n.sqrt()).mul_(w).div_(lr))
            n.add_(g2)
            num = torch.sign(z).mul_(self.lamda1).sub_(z)
            den = (n.sqrt() + self.beta).div_(lr).add_(wd)
            w.copy_(num.div_(den).mul_((z.abs() > self.lamda1).to(w.dtype)))


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
        w = weight._t
        m, u = state[0]._t, state[1]._t
        with torch.no_grad():
            g = grad._t.detach().to(w.dtype) * self.rescale_grad + wd * w
            if self.clip_gradient is not None:
                g.clamp_(-self.clip_gradient, self.clip_gradient)
            m.mul_(self.beta1).add_(g, alpha=1. - self.beta1)
            torch.maximum(u * self.beta2, g.abs(), out=u)
            w.addcdiv_(m, u, value=-lr)


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
        w = weight._t
        m, v = state[0]._t, state[1]._t
        momentum_t = self.beta1 * (1. - 0.5 * (pow(0.96, t * self.schedule_decay)))
        momentum_t_1 = self.beta1 * (1. - 0.5 * (pow(0.96, (t + 1) * self.schedule_decay)))
        self.m_schedule = self.m_schedule * momentum_t
        m_schedule_next = self.m_schedule * momentum_t_1
        with torch.no_grad():
            g = grad._t.detach().to(w.dtype) * self.rescale_grad + wd * w
            if self.clip_gradient is not None:
                g.clamp_(-self.clip_gradient, self.clip_gradient)
            m.mul_(self.beta1).add_(g, alpha=1. - self.beta1)
            v.mul_(self.beta2).addcmul_(g, g, value=1. - self.beta2)
            m_bar = g.mul_((1. - momentum_t) / (1. - self.m_schedule)).add_(
                m, alpha=momentum_t_1 / (1. - m_schedule_next))
            denom = (v / (1. - pow(self.beta2, t))).sqrt_().add_(self.epsilon)
            w.addcdiv_(m_bar, denom, value=-lr)


@register
class Test(Optimizer):
    """The Test optimizer: ``weight += rescale_grad * grad``; the state mirrors the weight."""

    def create_state(self, index: Index, weight: NDArray) -> NDArray:
        return _zeros_like(weight)

    def update(self, index: Index, weight: NDArray, grad: NDArray, state: Any) -> None:
        with torch.no_grad():
            weight._t.add_(grad._t.detach().to(weight._t.dtype), alpha=self.rescale_grad)
            state._t.copy_(weight._t)


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


class _ObjectEncoder(_codec._Encoder):
    """Encoder that also writes optimizers and LR schedulers as (class name, attributes)."""

    def __init__(self) -> None:
        super().__init__(self._hook)

    def _hook(self, obj: Any, path: str) -> Optional[dict]:
        from .. import lr_scheduler as _lrs
        if isinstance(obj, Optimizer):
            return {"t": "optimizer", "cls": type(obj).__name__,
                    "v": self.encode(_codec.plain_state(obj, ("param_dict",)), f"{path}<optimizer>")}
        if isinstance(obj, _lrs.LRScheduler):
            return {"t": "lr_scheduler", "cls": type(obj).__name__,
                    "v": self.encode(_codec.plain_state(obj), f"{path}<lr_scheduler>")}
        return None


def _decode_object(node: dict, dec: "_codec._Decoder") -> Any:
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
    obj = _codec.loads(blob, _decode_object)
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
