"""Fused optimizer update operators (MXNet 1.9.1 ``optimizer_op`` / ``contrib`` semantics).

Every ``*_update`` operator returns the new weight (Gluon's optimizers call them with
``out=weight``) and updates its state inputs (momentum, mean/var, master weights...) IN PLACE,
as MXNet's ``FMutateInputs`` do; for fixed-arity operators those states are declared ``aux`` so
graphs and ``-symbol.json`` treat them as mutated. Kernels run under ``torch.no_grad()`` and are
not differentiable.

Conventions taken from MXNet's kernels (they differ between operators on purpose):

- ``clip_gradient >= 0`` turns clipping on (``-1``, the default, turns it off);
- SGD-like updates (sgd, sgd_mom, nag, signum, the multi_*/preloaded_* forms) clip
  ``rescale_grad * grad`` and apply ``wd`` outside the clip;
- Adam, RMSProp(Alex) and FTML clip ``rescale_grad * grad + wd * weight``;
- LAMB phase 1 and FTRL clip ``rescale_grad * grad`` (wd enters later or elsewhere);
- ``mp_*`` operators update the float32 master copy ``weight32`` (and states in its dtype) and
  return it cast to the weight's dtype.
- row_sparse gradients (sparse rules at the end of this file): with ``lazy_update=True`` (the
  default) only the rows present in the gradient are updated, weight decay and states included
  (MXNet's lazy update); with ``lazy_update=False`` every row is updated with a zero gradient
  for the missing rows (MXNet's "standard" update). ``ftrl_update`` and
  ``_sparse_adagrad_update`` are always lazy for row_sparse gradients, as in MXNet.

Variadic operators (``multi_*``, ``preloaded_multi_*``, ``multi_sum_sq``, ``multi_all_finite``,
``reset_arrays``) interleave their arrays in MXNet's order and take MXNet's count attribute
(``num_weights`` / ``num_arrays``), which must agree with the number of inputs.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import math

import numpy as np
import torch
from torch import Tensor

from ..base import MXNetError
from .attrs import AnyValue
from . import storage as _storage
from .registry import Sample, register, sparse_rule
from .shape_rules import first_input_dtype

__all__: list = []  # operators are reached through the registry / nd.* / sym.*

_rng = np.random.RandomState(7)


# ---- helpers ----------------------------------------------------------------------------------
def _clip(g: Tensor, c: float) -> Tensor:
    """MXNet's ``clip::Map(g, c)`` when ``c >= 0`` (clipping on), else ``g``."""
    return g.clamp(-c, c) if c >= 0 else g


def _scaled(grad: Tensor, rescale_grad: float, clip_gradient: float, dtype: torch.dtype,
            wd: float = 0.0, weight: "Tensor | None" = None) -> Tensor:
    """A new tensor ``clip(rescale_grad * grad [+ wd * weight], clip_gradient)`` in ``dtype``
    (the one temporary the update kernels need; everything else runs in place on it)."""
    g = grad.to(dtype) * rescale_grad
    if wd and weight is not None:
        g.add_(weight, alpha=wd)
    if clip_gradient >= 0:
        g.clamp_(-clip_gradient, clip_gradient)
    return g


def _np_clip(g: np.ndarray, c: float) -> np.ndarray:
    return np.clip(g, -c, c) if c >= 0 else g


def _check_same_shape(op: str, ref_name: str, ref: Tensor, **others: Tensor) -> None:
    for name, t in others.items():
        if tuple(t.shape) != tuple(ref.shape):
            raise MXNetError(f"{op}: {name} has shape {tuple(t.shape)} but {ref_name} has shape "
                             f"{tuple(ref.shape)}; every state must have the weight's shape")


def _floats(v: Any, n: int, what: str, op: str) -> list:
    """A list of ``n`` floats from a tuple/list/scalar attribute (MXNet's Tuple<float>)."""
    if isinstance(v, (int, float)):
        vals = [float(v)]
    else:
        try:
            vals = [float(x) for x in v]
        except TypeError:
            raise MXNetError(f"{op}: {what} must be a tuple of numbers, got {v!r}") from None
    if len(vals) != n:
        raise MXNetError(f"{op}: {what} has {len(vals)} values but num_weights={n}; give one "
                         f"{what[:-1]} per weight")
    return vals


def _check_count(op: str, arrays: Sequence[Tensor], stride: int, count: int, extra: int = 0) -> None:
    """MXNet's interleaved inputs [w0, g0, ..., w1, g1, ...] must hold ``count`` groups."""
    if count < 1:
        raise MXNetError(f"{op}: num_weights must be >= 1, got {count}")
    want = stride * count + extra
    if len(arrays) != want:
        raise MXNetError(f"{op}: num_weights={count} needs {want} inputs ({stride} per weight"
                         f"{' plus lrs and wds' if extra else ''}), got {len(arrays)}; pass "
                         f"num_weights=len(weights)")


def _out_only(fn: Callable) -> Callable:
    """Sample reference returning only the first element (the new weight) of ``fn``'s result."""
    def ref(*a: Any, **k: Any) -> Any:
        return fn(*a, **k)[0]
    return ref


def _u(lo: float, hi: float, shape: tuple) -> np.ndarray:
    return _rng.uniform(lo, hi, size=shape)


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


# ==== SGD family ===============================================================================
def _np_sgd(w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True):  # type: ignore[no-untyped-def]
    return ((1 - lr * wd) * w - lr * _np_clip(rescale_grad * g, clip_gradient),)


def _sgd_samples() -> list:
    w, g = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))
    return [Sample((w, g), {"lr": 0.1}, ref=_out_only(_np_sgd)),
            Sample((w, g), {"lr": 0.05, "wd": 0.1, "rescale_grad": 0.5, "clip_gradient": 0.3},
                   ref=_out_only(_np_sgd)),
            Sample((_u(-1, 1, (5,)), _u(-1, 1, (5,))), {"lr": 0.2, "clip_gradient": 0.0},
                   ref=_out_only(_np_sgd))]


@register("sgd_update", differentiable=False, samples=_sgd_samples)
def sgd_update(weight: Tensor, grad: Tensor, *, lr: float, wd: float = 0.0, rescale_grad: float = 1.0,
               clip_gradient: float = -1.0, lazy_update: bool = True, out: Any = None) -> Tensor:
    """SGD: weight = (1 - lr*wd) * weight - lr * clip(rescale_grad * grad)."""
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight.dtype)
        if out is weight:   # nd.sgd_update(..., out=weight): update in place
            return weight.mul_(1 - lr * wd).add_(g, alpha=-lr)
        return torch.add(g.mul_(-lr), weight, alpha=1 - lr * wd)


def _np_sgd_mom(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,  # type: ignore[no-untyped-def]
                lazy_update=True):
    mom = momentum * mom - lr * wd * w - lr * _np_clip(rescale_grad * g, clip_gradient)
    return w + mom, mom


def _sgd_mom_samples() -> list:
    w, g, m = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4)), _u(-0.5, 0.5, (3, 4))
    return [Sample((w, g, m), {"lr": 0.1, "momentum": 0.9}, ref=_out_only(_np_sgd_mom)),
            Sample((w, g, m), {"lr": 0.05, "momentum": 0.5, "wd": 0.01, "rescale_grad": 2.0,
                               "clip_gradient": 1.0}, ref=_out_only(_np_sgd_mom)),
            Sample((w, g, m), {"lr": 0.1}, ref=_out_only(_np_sgd_mom))]


@register("sgd_mom_update", aux=("mom",), differentiable=False, samples=_sgd_mom_samples)
def sgd_mom_update(weight: Tensor, grad: Tensor, mom: Tensor, *, lr: float, momentum: float = 0.0,
                   wd: float = 0.0, rescale_grad: float = 1.0, clip_gradient: float = -1.0,
                   lazy_update: bool = True, out: Any = None) -> Tensor:
    """SGD with momentum: mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad) (in
    place); returns weight + mom."""
    _check_same_shape("sgd_mom_update", "weight", weight, mom=mom)
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight.dtype)
        mom.mul_(momentum).add_(g, alpha=-lr)
        if wd:
            mom.add_(weight, alpha=-lr * wd)
        return weight.add_(mom) if out is weight else weight + mom


def _np_mp_sgd(w, g, w32, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True):  # type: ignore[no-untyped-def]
    g32 = g.astype(w32.dtype)
    w32n = (1 - lr * wd) * w32 - lr * _np_clip(rescale_grad * g32, clip_gradient)
    return w32n.astype(w.dtype), w32n


def _mp_sgd_samples() -> list:
    w32 = _f32(_u(-1, 1, (3, 4)))
    g = _u(-2, 2, (3, 4))
    return [Sample((w32.astype(np.float64), g, w32), {"lr": 0.1, "wd": 0.01}, ref=_out_only(_np_mp_sgd)),
            Sample((w32.astype(np.float64), g, w32), {"lr": 0.1, "clip_gradient": 0.5, "rescale_grad": 0.5},
                   ref=_out_only(_np_mp_sgd))]


@register("mp_sgd_update", aux=("weight32",), differentiable=False, samples=_mp_sgd_samples)
def mp_sgd_update(weight: Tensor, grad: Tensor, weight32: Tensor, *, lr: float, wd: float = 0.0,
                  rescale_grad: float = 1.0, clip_gradient: float = -1.0,
                  lazy_update: bool = True, out: Any = None) -> Tensor:
    """Multi-precision SGD: the update of ``sgd_update`` applied to the float32 master weights
    ``weight32`` (in place); returns them cast to the weight's dtype."""
    _check_same_shape("mp_sgd_update", "weight", weight, weight32=weight32)
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight32.dtype)
        weight32.mul_(1 - lr * wd).add_(g, alpha=-lr)
        return weight.copy_(weight32) if out is weight else weight32.to(weight.dtype, copy=True)


def _np_mp_sgd_mom(w, g, mom, w32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,  # type: ignore[no-untyped-def]
                   lazy_update=True):
    g32 = g.astype(w32.dtype)
    mom = momentum * mom - lr * wd * w32 - lr * _np_clip(rescale_grad * g32, clip_gradient)
    w32n = w32 + mom
    return w32n.astype(w.dtype), mom, w32n


def _mp_sgd_mom_samples() -> list:
    w32 = _f32(_u(-1, 1, (3, 4)))
    g, m = _u(-2, 2, (3, 4)), _f32(_u(-0.5, 0.5, (3, 4)))
    return [Sample((w32.astype(np.float64), g, m, w32), {"lr": 0.1, "momentum": 0.9, "wd": 0.01},
                   ref=_out_only(_np_mp_sgd_mom)),
            Sample((w32.astype(np.float64), g, m, w32), {"lr": 0.1, "momentum": 0.5, "clip_gradient": 0.5},
                   ref=_out_only(_np_mp_sgd_mom))]


@register("mp_sgd_mom_update", returns_view=True, aux=("mom", "weight32"), differentiable=False,
          samples=_mp_sgd_mom_samples)
def mp_sgd_mom_update(weight: Tensor, grad: Tensor, mom: Tensor, weight32: Tensor, *, lr: float,
                      momentum: float = 0.0, wd: float = 0.0, rescale_grad: float = 1.0,
                      clip_gradient: float = -1.0, lazy_update: bool = True, out: Any = None) -> Tensor:
    """Multi-precision SGD with momentum on the float32 master weights (mom and weight32 are
    updated in place); returns weight32 cast to the weight's dtype."""
    _check_same_shape("mp_sgd_mom_update", "weight", weight, mom=mom, weight32=weight32)
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight32.dtype)
        mom.mul_(momentum).add_(g, alpha=-lr)
        if wd:
            mom.add_(weight32, alpha=-lr * wd)
        weight32.add_(mom)
        return weight.copy_(weight32) if out is weight else weight32.to(weight.dtype, copy=True)


# ---- NAG ---------------------------------------------------------------------------------------
def _np_nag(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):  # type: ignore[no-untyped-def]
    step = lr * (_np_clip(rescale_grad * g, clip_gradient) + wd * w)
    m = momentum * mom
    out = w - m + (momentum + 1) * (m - step)
    return out, m - step


def _nag_samples() -> list:
    w, g, m = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4)), _u(-0.5, 0.5, (3, 4))
    return [Sample((w, g, m), {"lr": 0.1, "momentum": 0.9}, ref=_out_only(_np_nag)),
            Sample((w, g, m), {"lr": 0.05, "momentum": 0.5, "wd": 0.1, "clip_gradient": 0.7,
                               "rescale_grad": 1.5}, ref=_out_only(_np_nag))]


@register("nag_mom_update", aux=("mom",), differentiable=False, samples=_nag_samples)
def nag_mom_update(weight: Tensor, grad: Tensor, mom: Tensor, *, lr: float, momentum: float = 0.0,
                   wd: float = 0.0, rescale_grad: float = 1.0, clip_gradient: float = -1.0,
                   out: Any = None) -> Tensor:
    """Nesterov momentum: with s = lr*(clip(rescale_grad*grad) + wd*weight) and m = momentum*mom,
    returns weight + momentum*m - (1+momentum)*s and sets mom = m - s (in place)."""
    _check_same_shape("nag_mom_update", "weight", weight, mom=mom)
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight.dtype)
        if wd:
            g.add_(weight, alpha=wd)
        mom.mul_(momentum)
        new = weight if out is weight else weight.clone()
        new.add_(mom, alpha=momentum).add_(g, alpha=-(1 + momentum) * lr)
        mom.add_(g, alpha=-lr)
        return new


def _np_mp_nag(w, g, mom, w32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):  # type: ignore[no-untyped-def]
    g32 = g.astype(w32.dtype)
    step = lr * (_np_clip(rescale_grad * g32, clip_gradient) + wd * w32)
    m = momentum * mom
    w32n = w32 - m + (momentum + 1) * (m - step)
    return w32n.astype(w.dtype), m - step, w32n


def _mp_nag_samples() -> list:
    w32 = _f32(_u(-1, 1, (3, 4)))
    g, m = _u(-2, 2, (3, 4)), _f32(_u(-0.5, 0.5, (3, 4)))
    return [Sample((w32.astype(np.float64), g, m, w32), {"lr": 0.1, "momentum": 0.9, "wd": 0.01},
                   ref=_out_only(_np_mp_nag)),
            Sample((w32.astype(np.float64), g, m, w32), {"lr": 0.1, "momentum": 0.5, "clip_gradient": 0.5},
                   ref=_out_only(_np_mp_nag))]


@register("mp_nag_mom_update", aux=("mom", "weight32"), differentiable=False, samples=_mp_nag_samples)
def mp_nag_mom_update(weight: Tensor, grad: Tensor, mom: Tensor, weight32: Tensor, *, lr: float,
                      momentum: float = 0.0, wd: float = 0.0, rescale_grad: float = 1.0,
                      clip_gradient: float = -1.0, out: Any = None) -> Tensor:
    """Multi-precision ``nag_mom_update`` on the float32 master weights (mom and weight32 updated
    in place); returns weight32 cast to the weight's dtype."""
    _check_same_shape("mp_nag_mom_update", "weight", weight, mom=mom, weight32=weight32)
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight32.dtype)
        if wd:
            g.add_(weight32, alpha=wd)
        mom.mul_(momentum)
        weight32.add_(mom, alpha=momentum).add_(g, alpha=-(1 + momentum) * lr)
        mom.add_(g, alpha=-lr)
        return weight.copy_(weight32) if out is weight else weight32.to(weight.dtype, copy=True)


# ==== Adam / RMSProp / FTML / FTRL ===============================================================
def _np_adam(w, g, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,  # type: ignore[no-untyped-def]
             clip_gradient=-1.0, lazy_update=True):
    gr = _np_clip(rescale_grad * g + wd * w, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * gr
    var = beta2 * var + (1 - beta2) * gr * gr
    return w - lr * mean / (np.sqrt(var) + epsilon), mean, var


def _adam_samples() -> list:
    w, g = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))
    m, v = _u(-0.5, 0.5, (3, 4)), _u(0.1, 1.0, (3, 4))
    return [Sample((w, g, m, v), {"lr": 0.01}, ref=_out_only(_np_adam)),
            Sample((w, g, m, v), {"lr": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6, "wd": 0.1,
                                  "rescale_grad": 0.5, "clip_gradient": 0.4}, ref=_out_only(_np_adam))]


@register("adam_update", aux=("mean", "var"), differentiable=False, samples=_adam_samples)
def adam_update(weight: Tensor, grad: Tensor, mean: Tensor, var: Tensor, *, lr: float,
                beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8, wd: float = 0.0,
                rescale_grad: float = 1.0, clip_gradient: float = -1.0,
                lazy_update: bool = True, out: Any = None) -> Tensor:
    """Adam (no bias correction; the optimizer folds it into lr): g = clip(rescale_grad*grad +
    wd*weight); mean, var updated in place; returns weight - lr*mean/(sqrt(var) + epsilon)."""
    _check_same_shape("adam_update", "weight", weight, mean=mean, var=var)
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight.dtype, wd, weight)
        mean.mul_(beta1).add_(g, alpha=1 - beta1)
        var.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = var.sqrt().add_(epsilon)
        if out is weight:
            return weight.addcdiv_(mean, denom, value=-lr)
        return torch.addcdiv(weight, mean, denom, value=-lr)


def _np_adamw(w, g, mean, var, scale, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,  # type: ignore[no-untyped-def]
              clip_gradient=-1.0):
    s = float(np.asarray(scale).reshape(-1)[0])
    if not np.isfinite(s) or s == 0:
        return w
    gr = _np_clip(s * g, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * gr
    var = beta2 * var + (1 - beta2) * gr * gr
    return w - eta * (lr * mean / (np.sqrt(var) + epsilon) + wd * w)


def _adamw_samples() -> list:
    w, g = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))
    m, v = _u(-0.5, 0.5, (3, 4)), _u(0.1, 1.0, (3, 4))
    one, half, inf = np.array([1.0]), np.array([0.5]), np.array([np.inf])
    return [Sample((w, g, m, v, one), {"lr": 0.01, "eta": 1.0}, ref=_np_adamw),
            Sample((w, g, m, v, half), {"lr": 0.01, "eta": 0.5, "beta1": 0.8, "beta2": 0.99,
                                        "epsilon": 1e-6, "wd": 0.1, "clip_gradient": 0.4}, ref=_np_adamw),
            Sample((w, g, m, v, inf), {"lr": 0.01, "eta": 1.0}, ref=_np_adamw)]


def _weight_shape(attrs: dict, shapes: list) -> list:
    """The update's output has the weight's shape (the kernel reads the scale's value)."""
    return [shapes[0]]


def _adamw_step(name: str, weight: Tensor, grad: Tensor, mean: Tensor, var: Tensor,
                rescale_grad: Tensor, lr: float, eta: float, beta1: float, beta2: float,
                epsilon: float, wd: float, clip_gradient: float, master: Tensor) -> "Tensor | None":
    """AdamW on ``master`` (the weight or its float32 copy); None when the update is skipped
    because ``rescale_grad`` is NaN, Inf or 0 (MXNet's AMP overflow rule)."""
    if rescale_grad.numel() != 1:
        raise MXNetError(f"{name}: rescale_grad must hold one value, got shape {tuple(rescale_grad.shape)}")
    scale = float(rescale_grad.reshape(-1)[0])
    if not math.isfinite(scale) or scale == 0:
        return None
    g = _clip(scale * grad.to(master.dtype), clip_gradient)
    mean.mul_(beta1).add_((1 - beta1) * g)
    var.mul_(beta2).add_((1 - beta2) * g * g)
    return master - eta * (lr * mean / (torch.sqrt(var) + epsilon) + wd * master)


@register("_adamw_update", aliases=("_contrib_adamw_update",), aux=("mean", "var"),
          infer_shape=_weight_shape, infer_type=first_input_dtype, differentiable=False,
          samples=_adamw_samples)
def adamw_update(weight: Tensor, grad: Tensor, mean: Tensor, var: Tensor, rescale_grad: Tensor, *,
                 lr: float, eta: float, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, wd: float = 0.0, clip_gradient: float = -1.0) -> Tensor:
    """AdamW (MXNet's contrib op): weight decay decoupled from the gradient step;
    w -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * w). ``rescale_grad`` is an array (AMP's
    loss scale); NaN, Inf or 0 skips the update and returns the weight unchanged."""
    _check_same_shape("adamw_update", "weight", weight, mean=mean, var=var)
    with torch.no_grad():
        new = _adamw_step("adamw_update", weight, grad, mean, var, rescale_grad, lr, eta, beta1,
                          beta2, epsilon, wd, clip_gradient, weight)
        return weight.clone() if new is None else new


def _np_mp_adamw(w, g, mean, var, w32, scale, **attrs):  # type: ignore[no-untyped-def]
    return _np_adamw(w32, g, mean, var, scale, **attrs).astype(w.dtype)


def _mp_adamw_samples() -> list:
    w32 = _f32(_u(-1, 1, (3, 4)))
    g, m, v = _u(-2, 2, (3, 4)), _f32(_u(-0.5, 0.5, (3, 4))), _f32(_u(0.1, 1.0, (3, 4)))
    return [Sample((w32.astype(np.float64), g, m, v, w32, np.array([1.0])),
                   {"lr": 0.01, "eta": 1.0, "wd": 0.01}, ref=_np_mp_adamw),
            Sample((w32.astype(np.float64), g, m, v, w32, np.array([np.nan])),
                   {"lr": 0.01, "eta": 1.0}, ref=_np_mp_adamw)]


@register("_mp_adamw_update", aliases=("_contrib_mp_adamw_update",), aux=("mean", "var", "weight32"),
          infer_shape=_weight_shape, infer_type=first_input_dtype, differentiable=False,
          samples=_mp_adamw_samples)
def mp_adamw_update(weight: Tensor, grad: Tensor, mean: Tensor, var: Tensor, weight32: Tensor,
                    rescale_grad: Tensor, *, lr: float, eta: float, beta1: float = 0.9,
                    beta2: float = 0.999, epsilon: float = 1e-8, wd: float = 0.0,
                    clip_gradient: float = -1.0) -> Tensor:
    """Multi-precision AdamW: the update of ``_adamw_update`` on the float32 master weights
    ``weight32`` (in place); returns them cast to the weight's dtype."""
    _check_same_shape("mp_adamw_update", "weight", weight, mean=mean, var=var, weight32=weight32)
    with torch.no_grad():
        new = _adamw_step("mp_adamw_update", weight, grad, mean, var, rescale_grad, lr, eta, beta1,
                          beta2, epsilon, wd, clip_gradient, weight32)
        if new is None:
            return weight.clone()
        weight32.copy_(new)
        return new.to(weight.dtype)


def _np_rmsprop(w, g, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,  # type: ignore[no-untyped-def]
                clip_weights=-1.0):
    gr = _np_clip(rescale_grad * g + wd * w, clip_gradient)
    n = (1 - gamma1) * gr * gr + gamma1 * n
    out = w - lr * gr / np.sqrt(n + epsilon)
    return _np_clip(out, clip_weights), n


def _rmsprop_samples() -> list:
    w, g, n = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4)), _u(0.1, 1.0, (3, 4))
    return [Sample((w, g, n), {"lr": 0.01}, ref=_out_only(_np_rmsprop)),
            Sample((w, g, n), {"lr": 0.1, "gamma1": 0.9, "epsilon": 1e-6, "wd": 0.1, "rescale_grad": 2.0,
                               "clip_gradient": 1.0, "clip_weights": 0.5}, ref=_out_only(_np_rmsprop))]


@register("rmsprop_update", aux=("n",), differentiable=False, samples=_rmsprop_samples)
def rmsprop_update(weight: Tensor, grad: Tensor, n: Tensor, *, lr: float, gamma1: float = 0.95,
                   epsilon: float = 1e-8, wd: float = 0.0, rescale_grad: float = 1.0,
                   clip_gradient: float = -1.0, clip_weights: float = -1.0, out: Any = None) -> Tensor:
    """RMSProp (Tieleman & Hinton): g = clip(rescale_grad*grad + wd*weight); n = (1-gamma1)*g^2 +
    gamma1*n (in place); returns clip_weights-clipped weight - lr*g/sqrt(n + epsilon)."""
    _check_same_shape("rmsprop_update", "weight", weight, n=n)
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight.dtype, wd, weight)
        n.mul_(gamma1).addcmul_(g, g, value=1 - gamma1)
        new = weight if out is weight else weight.clone()
        new.addcdiv_(g, (n + epsilon).sqrt_(), value=-lr)
        return new.clamp_(-clip_weights, clip_weights) if clip_weights >= 0 else new


def _np_rmspropalex(w, grad, n, g, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8, wd=0.0,  # type: ignore[no-untyped-def]
                    rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0):
    gr = _np_clip(rescale_grad * grad + wd * w, clip_gradient)
    n = (1 - gamma1) * gr * gr + gamma1 * n
    g = (1 - gamma1) * gr + gamma1 * g
    delta = gamma2 * delta - lr * gr / np.sqrt(n - g * g + epsilon)
    return _np_clip(w + delta, clip_weights), n, g, delta


def _rmspropalex_samples() -> list:
    w, grad = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))
    g = _u(-0.5, 0.5, (3, 4))
    n = g * g + _u(0.1, 1.0, (3, 4))       # n >= g^2 keeps n - g^2 + eps positive
    d = _u(-0.1, 0.1, (3, 4))
    return [Sample((w, grad, n, g, d), {"lr": 0.01}, ref=_out_only(_np_rmspropalex)),
            Sample((w, grad, n, g, d), {"lr": 0.05, "gamma1": 0.9, "gamma2": 0.8, "wd": 0.05,
                                        "rescale_grad": 0.5, "clip_gradient": 0.6, "clip_weights": 0.8},
                   ref=_out_only(_np_rmspropalex))]


@register("rmspropalex_update", aux=("n", "g", "delta"), differentiable=False,
          samples=_rmspropalex_samples)
def rmspropalex_update(weight: Tensor, grad: Tensor, n: Tensor, g: Tensor, delta: Tensor, *,
                       lr: float, gamma1: float = 0.95, gamma2: float = 0.9, epsilon: float = 1e-8,
                       wd: float = 0.0, rescale_grad: float = 1.0, clip_gradient: float = -1.0,
                       clip_weights: float = -1.0) -> Tensor:
    """Centered RMSProp (Graves 2013): n, g, delta updated in place;
    delta = gamma2*delta - lr*gr/sqrt(n - g^2 + epsilon); returns clip_weights-clipped weight + delta."""
    _check_same_shape("rmspropalex_update", "weight", weight, n=n, g=g, delta=delta)
    with torch.no_grad():
        gr = _clip(rescale_grad * grad + wd * weight, clip_gradient)
        n.mul_(gamma1).add_((1 - gamma1) * gr * gr)
        g.mul_(gamma1).add_((1 - gamma1) * gr)
        delta.mul_(gamma2).sub_(lr * gr / torch.sqrt(n - g * g + epsilon))
        return _clip(weight + delta, clip_weights)


def _np_ftml(w, grad, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,  # type: ignore[no-untyped-def]
             clip_grad=-1.0):
    gr = _np_clip(rescale_grad * grad + wd * w, clip_grad)
    v = beta2 * v + (1 - beta2) * gr * gr
    d_t = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z = beta1 * z + (1 - beta1) * gr - (d_t - beta1 * d) * w
    return -z / d_t, d_t, v, z


def _ftml_samples() -> list:
    w, g = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))
    d, v, z = _u(0.5, 2.0, (3, 4)), _u(0.1, 1.0, (3, 4)), _u(-0.5, 0.5, (3, 4))
    return [Sample((w, g, d, v, z), {"lr": 0.1, "t": 1}, ref=_out_only(_np_ftml)),
            Sample((w, g, d, v, z), {"lr": 0.05, "t": 3, "beta1": 0.5, "beta2": 0.99, "wd": 0.1,
                                     "rescale_grad": 0.5, "clip_grad": 0.4}, ref=_out_only(_np_ftml))]


@register("ftml_update", aux=("d", "v", "z"), differentiable=False, samples=_ftml_samples)
def ftml_update(weight: Tensor, grad: Tensor, d: Tensor, v: Tensor, z: Tensor, *, lr: float,
                beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8, t: int,
                wd: float = 0.0, rescale_grad: float = 1.0, clip_grad: float = -1.0) -> Tensor:
    """FTML (Zheng & Kwok 2017): g = clip(rescale_grad*grad + wd*weight, clip_grad); v, z, d
    updated in place; returns -z / d_t."""
    _check_same_shape("ftml_update", "weight", weight, d=d, v=v, z=z)
    with torch.no_grad():
        g = _clip(rescale_grad * grad + wd * weight, clip_grad)
        v.mul_(beta2).add_((1 - beta2) * g * g)
        d_t = (1 - beta1 ** t) / lr * (torch.sqrt(v / (1 - beta2 ** t)) + epsilon)
        z.mul_(beta1).add_((1 - beta1) * g - (d_t - beta1 * d) * weight)
        d.copy_(d_t)
        return -z / d_t


def _np_ftrl(w, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):  # type: ignore[no-untyped-def]
    gr = _np_clip(rescale_grad * grad, clip_gradient)
    z = z + gr - (np.sqrt(n + gr * gr) - np.sqrt(n)) * w / lr
    n = n + gr * gr
    out = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > lamda1)
    return out, z, n


def _ftrl_samples() -> list:
    w, g = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))
    z, n = _u(-1, 1, (3, 4)), _u(0.1, 1.0, (3, 4))
    return [Sample((w, g, z, n), {"lr": 0.1}, ref=_out_only(_np_ftrl)),
            Sample((w, g, z, n), {"lr": 0.05, "lamda1": 0.5, "beta": 0.5, "wd": 0.1,
                                  "rescale_grad": 0.5, "clip_gradient": 0.5}, ref=_out_only(_np_ftrl))]


@register("ftrl_update", aux=("z", "n"), differentiable=False, samples=_ftrl_samples)
def ftrl_update(weight: Tensor, grad: Tensor, z: Tensor, n: Tensor, *, lr: float, lamda1: float = 0.01,
                beta: float = 1.0, wd: float = 0.0, rescale_grad: float = 1.0,
                clip_gradient: float = -1.0) -> Tensor:
    """FTRL-proximal: z += g - (sqrt(n + g^2) - sqrt(n)) * weight / lr; n += g^2 (in place);
    returns (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) where |z| > lamda1, else 0."""
    _check_same_shape("ftrl_update", "weight", weight, z=z, n=n)
    with torch.no_grad():
        g = _clip(rescale_grad * grad, clip_gradient)
        z.add_(g - (torch.sqrt(n + g * g) - torch.sqrt(n)) * weight / lr)
        n.add_(g * g)
        keep = (torch.abs(z) > lamda1).to(weight.dtype)
        return (torch.sign(z) * lamda1 - z) / ((beta + torch.sqrt(n)) / lr + wd) * keep


# ==== sign-based ===============================================================================
def _np_signsgd(w, g, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):  # type: ignore[no-untyped-def]
    return ((1 - lr * wd) * w - lr * np.sign(g),)


@register("signsgd_update", differentiable=False, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))), {"lr": 0.1}, ref=_out_only(_np_signsgd)),
    Sample((_u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))), {"lr": 0.1, "wd": 0.2, "clip_gradient": 0.1},
           ref=_out_only(_np_signsgd))])
def signsgd_update(weight: Tensor, grad: Tensor, *, lr: float, wd: float = 0.0, rescale_grad: float = 1.0,
                   clip_gradient: float = -1.0) -> Tensor:
    """signSGD: returns (1 - lr*wd)*weight - lr*sign(grad) (clip_gradient has no effect, as in MXNet)."""
    with torch.no_grad():
        return (1 - lr * wd) * weight - lr * torch.sign(grad)


def _np_signum(w, g, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, wd_lh=0.0):  # type: ignore[no-untyped-def]
    mom = momentum * mom - (1 - momentum) * wd * w - (1 - momentum) * _np_clip(rescale_grad * g, clip_gradient)
    return (1 - lr * wd_lh) * w + lr * np.sign(mom), mom


@register("signum_update", aux=("mom",), differentiable=False, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(-2, 2, (3, 4)), _u(-0.5, 0.5, (3, 4))), {"lr": 0.1, "momentum": 0.9},
           ref=_out_only(_np_signum)),
    Sample((_u(-1, 1, (3, 4)), _u(-2, 2, (3, 4)), _u(-0.5, 0.5, (3, 4))),
           {"lr": 0.1, "momentum": 0.5, "wd": 0.1, "wd_lh": 0.2, "clip_gradient": 0.3, "rescale_grad": 2.0},
           ref=_out_only(_np_signum))])
def signum_update(weight: Tensor, grad: Tensor, mom: Tensor, *, lr: float, momentum: float = 0.0,
                  wd: float = 0.0, rescale_grad: float = 1.0, clip_gradient: float = -1.0,
                  wd_lh: float = 0.0) -> Tensor:
    """Signum: mom = momentum*mom - (1-momentum)*(wd*weight + clip(rescale_grad*grad)) (in place);
    returns (1 - lr*wd_lh)*weight + lr*sign(mom)."""
    _check_same_shape("signum_update", "weight", weight, mom=mom)
    with torch.no_grad():
        mom.mul_(momentum).sub_((1 - momentum) * (wd * weight + _clip(rescale_grad * grad, clip_gradient)))
        return (1 - lr * wd_lh) * weight + lr * torch.sign(mom)


# ==== LAMB =====================================================================================
def _np_lamb1(w, g, mean, var, t, wd, beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=True,  # type: ignore[no-untyped-def]
              rescale_grad=1.0, clip_gradient=-1.0, w_for_wd=None):
    gr = _np_clip(rescale_grad * g, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * gr
    var = beta2 * var + (1 - beta2) * gr * gr
    wref = w if w_for_wd is None else w_for_wd
    if bias_correction:
        mh, vh = mean / (1 - beta1 ** t), var / (1 - beta2 ** t)
        out = mh / (np.sqrt(vh) + epsilon) + wd * wref
    else:
        out = mean / (np.sqrt(var) + epsilon) + wd * wref
    return out, mean, var


def _lamb1_samples() -> list:
    w, g = _u(-1, 1, (3, 4)), _u(-2, 2, (3, 4))
    m, v = _u(-0.5, 0.5, (3, 4)), _u(0.1, 1.0, (3, 4))
    return [Sample((w, g, m, v), {"t": 1, "wd": 0.01}, ref=_out_only(_np_lamb1)),
            Sample((w, g, m, v), {"t": 4, "wd": 0.1, "beta1": 0.8, "beta2": 0.9, "bias_correction": False,
                                  "rescale_grad": 0.5, "clip_gradient": 0.5}, ref=_out_only(_np_lamb1))]


@register("lamb_update_phase1", aux=("mean", "var"), differentiable=False, samples=_lamb1_samples)
def lamb_update_phase1(weight: Tensor, grad: Tensor, mean: Tensor, var: Tensor, *, beta1: float = 0.9,
                       beta2: float = 0.999, epsilon: float = 1e-6, t: int, bias_correction: bool = True,
                       wd: float, rescale_grad: float = 1.0, clip_gradient: float = -1.0) -> Tensor:
    """LAMB phase 1: mean, var updated in place from clip(rescale_grad*grad); returns the update
    direction m^/(sqrt(v^) + epsilon) + wd*weight (bias-corrected with step t when asked)."""
    _check_same_shape("lamb_update_phase1", "weight", weight, mean=mean, var=var)
    with torch.no_grad():
        g = _clip(rescale_grad * grad, clip_gradient)
        mean.mul_(beta1).add_((1 - beta1) * g)
        var.mul_(beta2).add_((1 - beta2) * g * g)
        if bias_correction:
            mh, vh = mean / (1 - beta1 ** t), var / (1 - beta2 ** t)
            return mh / (torch.sqrt(vh) + epsilon) + wd * weight
        return mean / (torch.sqrt(var) + epsilon) + wd * weight


def _np_lamb2(w, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0, w32=None):  # type: ignore[no-untyped-def]
    r1 = float(np.asarray(r1).reshape(-1)[0])
    r2 = float(np.asarray(r2).reshape(-1)[0])
    if lower_bound >= 0:
        r1 = max(r1, lower_bound)
    if upper_bound >= 0:
        r1 = min(r1, upper_bound)
    ratio = 1.0 if (r1 == 0 or r2 == 0) else r1 / r2
    base = w if w32 is None else w32
    return ((base - lr * ratio * g).astype(w.dtype),)


def _lamb2_samples() -> list:
    w, g = _u(-1, 1, (3, 4)), _u(-1, 1, (3, 4))
    r1 = np.array([np.linalg.norm(w)])
    r2 = np.array([np.linalg.norm(g)])
    return [Sample((w, g, r1, r2), {"lr": 0.1}, ref=_out_only(_np_lamb2)),
            Sample((w, g, r1, r2), {"lr": 0.1, "lower_bound": 5.0, "upper_bound": 10.0}, ref=_out_only(_np_lamb2)),
            Sample((w, g, r1, r2), {"lr": 0.1, "upper_bound": 0.5}, ref=_out_only(_np_lamb2)),
            Sample((w, g, np.zeros(1), r2), {"lr": 0.1}, ref=_out_only(_np_lamb2))]


def _trust_lr(r1: Tensor, r2: Tensor, lr: float, lower_bound: float, upper_bound: float) -> Tensor:
    """lr * r1/r2 with r1 clamped to [lower_bound, upper_bound] (each bound when >= 0); plain lr
    when either norm is zero. Shape (1,), computed without leaving the tensors' device."""
    a = r1.reshape(-1)[:1]
    b = r2.reshape(-1)[:1].to(a.dtype)
    if lower_bound >= 0:
        a = torch.clamp(a, min=lower_bound)
    if upper_bound >= 0:
        a = torch.clamp(a, max=upper_bound)
    bad = (a == 0) | (b == 0)
    ratio = torch.where(bad, torch.ones_like(a), a / torch.where(bad, torch.ones_like(b), b))
    return lr * ratio


@register("lamb_update_phase2", differentiable=False, samples=_lamb2_samples)
def lamb_update_phase2(weight: Tensor, g: Tensor, r1: Tensor, r2: Tensor, *, lr: float,
                       lower_bound: float = -1.0, upper_bound: float = -1.0) -> Tensor:
    """LAMB phase 2: returns weight - lr * (r1/r2) * g, with r1 (the weight norm, shape (1,))
    clamped to [lower_bound, upper_bound] and the ratio 1 when r1 or r2 is 0."""
    _check_same_shape("lamb_update_phase2", "weight", weight, g=g)
    with torch.no_grad():
        return weight - _trust_lr(r1, r2, lr, lower_bound, upper_bound).to(weight.dtype) * g


def _np_mp_lamb1(w, g, mean, var, w32, t, wd, **attrs):  # type: ignore[no-untyped-def]
    out, mean, var = _np_lamb1(w.astype(w32.dtype), g.astype(w32.dtype), mean, var, t, wd,
                               w_for_wd=w32, **attrs)
    return out.astype(w32.dtype), mean, var


def _mp_lamb1_samples() -> list:
    w32 = _f32(_u(-1, 1, (3, 4)))
    g = _u(-2, 2, (3, 4))
    m, v = _f32(_u(-0.5, 0.5, (3, 4))), _f32(_u(0.1, 1.0, (3, 4)))
    return [Sample((w32.astype(np.float64), g, m, v, w32), {"t": 2, "wd": 0.01}, ref=_out_only(_np_mp_lamb1)),
            Sample((w32.astype(np.float64), g, m, v, w32), {"t": 1, "wd": 0.1, "bias_correction": False,
                                                             "clip_gradient": 0.5}, ref=_out_only(_np_mp_lamb1))]


@register("mp_lamb_update_phase1", aux=("mean", "var"), differentiable=False, samples=_mp_lamb1_samples)
def mp_lamb_update_phase1(weight: Tensor, grad: Tensor, mean: Tensor, var: Tensor, weight32: Tensor, *,
                          beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-6, t: int,
                          bias_correction: bool = True, wd: float, rescale_grad: float = 1.0,
                          clip_gradient: float = -1.0) -> Tensor:
    """Multi-precision LAMB phase 1: like ``lamb_update_phase1`` in weight32's dtype (float32),
    with weight decay on the master weights; returns the direction in that dtype."""
    _check_same_shape("mp_lamb_update_phase1", "weight", weight, mean=mean, var=var, weight32=weight32)
    with torch.no_grad():
        g = _clip(rescale_grad * grad.to(weight32.dtype), clip_gradient)
        mean.mul_(beta1).add_((1 - beta1) * g)
        var.mul_(beta2).add_((1 - beta2) * g * g)
        if bias_correction:
            mh, vh = mean / (1 - beta1 ** t), var / (1 - beta2 ** t)
            out = mh / (torch.sqrt(vh) + epsilon) + wd * weight32
        else:
            out = mean / (torch.sqrt(var) + epsilon) + wd * weight32
        return out.to(weight32.dtype)


def _mp_lamb2_samples() -> list:
    w32 = _f32(_u(-1, 1, (3, 4)))
    g = _f32(_u(-1, 1, (3, 4)))
    r1 = _f32(np.array([np.linalg.norm(w32)]))
    r2 = _f32(np.array([np.linalg.norm(g)]))

    def ref(w, g, r1, r2, w32, **attrs):  # type: ignore[no-untyped-def]
        return _np_lamb2(w, g, r1, r2, w32=w32, **attrs)[0]
    return [Sample((w32.astype(np.float64), g, r1, r2, w32), {"lr": 0.1}, ref=ref),
            Sample((w32.astype(np.float64), g, r1, r2, w32), {"lr": 0.1, "lower_bound": 3.0}, ref=ref)]


@register("mp_lamb_update_phase2", differentiable=False, samples=_mp_lamb2_samples)
def mp_lamb_update_phase2(weight: Tensor, g: Tensor, r1: Tensor, r2: Tensor, weight32: Tensor, *,
                          lr: float, lower_bound: float = -1.0, upper_bound: float = -1.0) -> Tensor:
    """Multi-precision LAMB phase 2: returns (weight32 - lr*(r1/r2)*g) cast to the weight's dtype.

    As MXNet 1.9.1's kernel, weight32 itself is read, not written (callers update it)."""
    _check_same_shape("mp_lamb_update_phase2", "weight", weight, g=g, weight32=weight32)
    with torch.no_grad():
        lr_t = _trust_lr(r1, r2, lr, lower_bound, upper_bound).to(weight32.dtype)
        return (weight32 - lr_t * g.to(weight32.dtype)).to(weight.dtype)


# ==== multi-tensor SGD =========================================================================
def _multi_sgd_core(op: str, data: Sequence[Tensor], stride: int, lrs: list, wds: list, momentum: float,
                    rescale_grad: float, clip_gradient: float, has_mom: bool, has_mp: bool,
                    out: Any = None) -> Any:
    """The SGD rule of ``sgd_update``/``sgd_mom_update`` (on the float32 master copies for mp_)
    over many weights at once with torch's multi-tensor (``_foreach``) kernels: a handful of
    kernel launches for any number of weights. ``data`` is MXNet's interleaved input list
    (``stride`` arrays per weight). Momenta and master copies change in place, and the weights
    too when ``out`` holds exactly the weight tensors (``out=weights``)."""
    ws, gs = list(data[0::stride]), list(data[1::stride])
    moms = list(data[2::stride]) if has_mom else []
    masters = list(data[stride - 1::stride]) if has_mp else ws
    shapes = [w.shape for w in ws]
    for name, ts in (("gradient", gs), ("momentum", moms), ("weight32", masters if has_mp else [])):
        if ts and [t.shape for t in ts] != shapes:
            k = next(i for i, (t, shp) in enumerate(zip(ts, shapes)) if t.shape != shp)
            raise MXNetError(f"{op}: weight {k} has shape {tuple(shapes[k])} but its {name} has "
                             f"shape {tuple(ts[k].shape)}")
    if has_mp or any(g.dtype != m.dtype for g, m in zip(gs, masters)):
        gs = [g if g.dtype == m.dtype else g.to(m.dtype) for g, m in zip(gs, masters)]
    dsts = [out] if isinstance(out, Tensor) else out
    in_place = dsts is not None and len(dsts) == len(ws) and all(d is w for d, w in zip(dsts, ws))
    uniform = len(set(lrs)) == 1 and len(set(wds)) == 1   # one scalar instead of a list
    step: Any = None     # the change to add to the weights (a list of tensors)
    outs: Any = None
    if uniform and clip_gradient < 0 and (has_mom or in_place):
        # the common case in few kernels, no temporaries: scale, then add the scaled gradient
        lr, wd = lrs[0], wds[0]
        acc = moms if has_mom else masters
        if has_mom:
            torch._foreach_mul_(moms, momentum)
            if wd:
                torch._foreach_add_(moms, masters, alpha=-lr * wd)
        elif wd:
            torch._foreach_mul_(masters, 1 - lr * wd)
        torch._foreach_add_(acc, gs, alpha=-lr * rescale_grad)
        if has_mom:
            if in_place or has_mp:
                torch._foreach_add_(masters, moms)
            step = moms
    else:
        neg_lr: Any = -lrs[0] if uniform else [-lr for lr in lrs]
        if clip_gradient >= 0:
            step = torch._foreach_mul(gs, rescale_grad)
            torch._foreach_clamp_min_(step, -clip_gradient)
            torch._foreach_clamp_max_(step, clip_gradient)
            torch._foreach_mul_(step, neg_lr)
        else:
            step = torch._foreach_mul(gs, -lrs[0] * rescale_grad if uniform
                                      else [-lr * rescale_grad for lr in lrs])
        if uniform and wds[0]:
            torch._foreach_add_(step, masters, alpha=-lrs[0] * wds[0])
        elif not uniform and any(wds):
            torch._foreach_add_(step, torch._foreach_mul(masters, [-lr * wd for lr, wd in zip(lrs, wds)]))
        if has_mom:
            torch._foreach_mul_(moms, momentum)
            torch._foreach_add_(moms, step)
            step = moms
        if in_place or has_mp:
            torch._foreach_add_(masters, step)
    if has_mp:
        if in_place:
            torch._foreach_copy_(ws, masters)
            outs = ws
        else:
            outs = [m.to(w.dtype, copy=True) for m, w in zip(masters, ws)]
    elif in_place:
        outs = ws
    else:
        outs = torch._foreach_add(ws, step)
    return outs[0] if len(outs) == 1 else outs   # one output is a plain tensor (registry rule)


def _np_multi_sgd(*data, lrs, wds, momentum=0.0, rescale_grad=1.0, clip_gradient=-1.0, num_weights=1,  # type: ignore[no-untyped-def]
                  stride=2, has_mom=False, has_mp=False):
    """NumPy reference for the multi_* and preloaded_* SGD family: (outputs, new states...)."""
    outs, states = [], []
    for k in range(num_weights):
        grp = data[k * stride:(k + 1) * stride]
        w, g = grp[0], grp[1]
        master = grp[-1] if has_mp else w
        mom = grp[2] if has_mom else 0.0
        m = momentum * mom - lrs[k] * wds[k] * master - lrs[k] * _np_clip(rescale_grad * g.astype(master.dtype),
                                                                          clip_gradient)
        new = master + m
        outs.append(new.astype(w.dtype))
        states.append((m if has_mom else None, new if has_mp else None))
    return outs, states


def _multi_ref(stride: int, has_mom: bool, has_mp: bool, preloaded: bool = False) -> Callable:
    def ref(*data, **attrs):  # type: ignore[no-untyped-def]
        attrs = dict(attrs)
        if preloaded:
            lrs, wds = data[-2], data[-1]
            data = data[:-2]
            attrs["lrs"], attrs["wds"] = [float(x) for x in lrs], [float(x) for x in wds]
        return _np_multi_sgd(*data, stride=stride, has_mom=has_mom, has_mp=has_mp, **attrs)[0]
    return ref


def _multi_inputs(n: int, has_mom: bool, has_mp: bool, shapes: Sequence[tuple] = ((3, 4), (5,), (2, 2, 2))) -> tuple:
    arrs: list = []
    for k in range(n):
        shp = shapes[k % len(shapes)]
        w32 = _f32(_u(-1, 1, shp))
        arrs += [w32.astype(np.float64) if has_mp else _u(-1, 1, shp), _u(-2, 2, shp)]
        if has_mom:
            m = _u(-0.5, 0.5, shp)
            arrs.append(_f32(m) if has_mp else m)
        if has_mp:
            arrs.append(w32)
    return tuple(arrs)


def _multi_samples(has_mom: bool, has_mp: bool, preloaded: bool = False) -> Callable[[], list]:
    stride = 2 + has_mom + has_mp

    def samples() -> list:
        out = []
        for n, extra in ((3, {"rescale_grad": 0.5, "clip_gradient": 0.6}), (1, {})):
            attrs: dict = {"num_weights": n, **extra}
            lrs, wds = [0.1, 0.05, 0.2][:n], [0.0, 0.01, 0.1][:n]
            if has_mom:
                attrs["momentum"] = 0.9
            inputs = _multi_inputs(n, has_mom, has_mp)
            if preloaded:
                inputs = inputs + (_f32(np.array(lrs)), _f32(np.array(wds)))
            else:
                attrs["lrs"], attrs["wds"] = tuple(lrs), tuple(wds)
            out.append(Sample(inputs, attrs, ref=_multi_ref(stride, has_mom, has_mp, preloaded)))
        return out
    return samples


def _states_of(stride: int, trailing: int = 0) -> Callable[[dict, int], list]:
    """The ``mutates_inputs`` rule of a multi-weight update: per weight, the inputs after
    (weight, grad) are its states (mom, weight32), updated in place; ``trailing`` inputs at the
    end (preloaded lrs, wds) are only read."""
    return lambda attrs, n: [i for i in range(n - trailing) if i % stride >= 2]


def _make_multi(name: str, has_mom: bool, has_mp: bool) -> None:
    stride = 2 + has_mom + has_mp
    layout = "weight, grad" + (", mom" if has_mom else "") + (", weight32" if has_mp else "")

    if has_mom:
        def kernel(*data, lrs: AnyValue, wds: AnyValue, momentum: float = 0.0,  # type: ignore[no-untyped-def]
                   rescale_grad: float = 1.0, clip_gradient: float = -1.0, num_weights: int = 1,
                   out: Any = None):
            _check_count(name, data, stride, num_weights)
            with torch.no_grad():
                return _multi_sgd_core(name, data, stride, _floats(lrs, num_weights, "lrs", name),
                                       _floats(wds, num_weights, "wds", name), momentum, rescale_grad,
                                       clip_gradient, True, has_mp, out)
    else:
        def kernel(*data, lrs: AnyValue, wds: AnyValue, rescale_grad: float = 1.0,  # type: ignore[misc,no-untyped-def]
                   clip_gradient: float = -1.0, num_weights: int = 1, out: Any = None):
            _check_count(name, data, stride, num_weights)
            with torch.no_grad():
                return _multi_sgd_core(name, data, stride, _floats(lrs, num_weights, "lrs", name),
                                       _floats(wds, num_weights, "wds", name), 0.0, rescale_grad,
                                       clip_gradient, False, has_mp, out)
    kernel.__name__ = name
    kernel.__doc__ = (f"Fused SGD{' with momentum' if has_mom else ''}{' (multi-precision)' if has_mp else ''} "
                      f"over num_weights weights. Inputs interleaved per weight: {layout}; lrs/wds give "
                      f"one learning rate / weight decay per weight. States are updated in place; "
                      f"returns the num_weights new weights.")
    register(name, num_outputs=lambda a: int(a.get("num_weights", 1)), differentiable=False,
             samples=_multi_samples(has_mom, has_mp), mutates_inputs=_states_of(stride))(kernel)


def _make_preloaded(name: str, has_mom: bool, has_mp: bool) -> None:
    stride = 2 + has_mom + has_mp
    layout = "weight, grad" + (", mom" if has_mom else "") + (", weight32" if has_mp else "")

    def run(data: Sequence[Tensor], momentum: float, rescale_grad: float, clip_gradient: float,
            num_weights: int, out: Any) -> list:
        _check_count(name, data, stride, num_weights, extra=2)
        lrs_t, wds_t = data[-2], data[-1]
        for what, t in (("lrs", lrs_t), ("wds", wds_t)):
            if t.numel() != num_weights:
                raise MXNetError(f"{name}: the {what} input has {t.numel()} values but num_weights="
                                 f"{num_weights}")
        if lrs_t.device.type == "meta":   # shape-only run: any numbers do
            lrs, wds = [0.0] * num_weights, [0.0] * num_weights
        else:
            lrs = [float(x) for x in lrs_t.reshape(-1).tolist()]
            wds = [float(x) for x in wds_t.reshape(-1).tolist()]
        with torch.no_grad():
            return _multi_sgd_core(name, data[:-2], stride, lrs, wds, momentum, rescale_grad,
                                   clip_gradient, has_mom, has_mp, out)

    if has_mom:
        def kernel(*data, momentum: float = 0.0, rescale_grad: float = 1.0,  # type: ignore[no-untyped-def]
                   clip_gradient: float = -1.0, num_weights: int = 1, out: Any = None):
            return run(data, momentum, rescale_grad, clip_gradient, num_weights, out)
    else:
        def kernel(*data, rescale_grad: float = 1.0, clip_gradient: float = -1.0,  # type: ignore[misc,no-untyped-def]
                   num_weights: int = 1, out: Any = None):
            return run(data, 0.0, rescale_grad, clip_gradient, num_weights, out)
    kernel.__name__ = name
    kernel.__doc__ = (f"``multi_*`` SGD with the learning rates and weight decays given as the last two "
                      f"inputs (float32 arrays of num_weights values). Inputs: per weight {layout}; then "
                      f"lrs, wds.")
    register(name, num_outputs=lambda a: int(a.get("num_weights", 1)), differentiable=False,
             samples=_multi_samples(has_mom, has_mp, preloaded=True), mutates_inputs=_states_of(stride, 2))(kernel)


for _name, _mom, _mp in (("multi_sgd_update", False, False), ("multi_sgd_mom_update", True, False),
                         ("multi_mp_sgd_update", False, True), ("multi_mp_sgd_mom_update", True, True)):
    _make_multi(_name, _mom, _mp)
    _make_preloaded("preloaded_" + _name, _mom, _mp)


# ==== norms, LARS, finiteness, reset ===========================================================
def _count(op: str, data: Sequence[Tensor], num_arrays: int) -> None:
    if num_arrays != len(data):
        raise MXNetError(f"{op}: num_arrays={num_arrays} but {len(data)} arrays were given; pass "
                         f"num_arrays=len(arrays)")


@register("multi_sum_sq", num_outputs=1, differentiable=False, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(-2, 2, (5,)), _u(-1, 1, (2, 2, 2))), {"num_arrays": 3},
           ref=lambda *a, num_arrays: np.array([np.sum(x.astype(np.float64) ** 2) for x in a], np.float32),
           rtol=1e-5),
    Sample((_u(-1, 1, (4,)),), {"num_arrays": 1},
           ref=lambda *a, num_arrays: np.array([np.sum(x.astype(np.float64) ** 2) for x in a], np.float32))])
def multi_sum_sq(*data: Tensor, num_arrays: int) -> Tensor:
    """Sum of squares of each array: a float32 vector of num_arrays values (MXNet's output type)."""
    _count("multi_sum_sq", data, num_arrays)
    with torch.no_grad():
        if not data:
            return torch.zeros(0, dtype=torch.float32)
        # accumulate in float32 at least (MXNet's AType), float64 for float64 arrays
        sq = [a.reshape(-1) if a.dtype in (torch.float32, torch.float64) else a.reshape(-1).float()
              for a in data]
        return torch.stack([torch.dot(x, x).to(torch.float32) for x in sq])


def _np_lars(lrs, wss, gss, wds, eta, eps, rescale_grad=1.0):  # type: ignore[no-untyped-def]
    wn = np.sqrt(wss)
    ok = (wn > 0) & (gss > 0)
    new = lrs * eta * wn / (np.sqrt(gss) * rescale_grad + wds * wn + eps)
    return np.where(ok, new, lrs)


@register("multi_lars", differentiable=False, samples=lambda: [
    Sample((_u(0.01, 0.1, (4,)), np.array([1.0, 0.0, 4.0, 2.0]), np.array([0.5, 1.0, 0.0, 3.0]),
            _u(0.0, 0.01, (4,))), {"eta": 0.001, "eps": 1e-8}, ref=_np_lars),
    Sample((_u(0.01, 0.1, (3,)), _u(0.5, 2, (3,)), _u(0.5, 2, (3,)), _u(0.0, 0.01, (3,))),
           {"eta": 0.01, "eps": 1e-6, "rescale_grad": 0.5}, ref=_np_lars)])
def multi_lars(lrs: Tensor, weights_sum_sq: Tensor, grads_sum_sq: Tensor, wds: Tensor, *, eta: float,
               eps: float, rescale_grad: float = 1.0) -> Tensor:
    """LARS learning rates: lrs*eta*|w| / (|g|*rescale_grad + wds*|w| + eps) where both norms are
    positive, else lrs (norms from the sums of squares)."""
    for name, t in (("weights_sum_sq", weights_sum_sq), ("grads_sum_sq", grads_sum_sq), ("wds", wds)):
        if tuple(t.shape) != tuple(lrs.shape):
            raise MXNetError(f"multi_lars: {name} has shape {tuple(t.shape)} but lrs has shape "
                             f"{tuple(lrs.shape)}")
    with torch.no_grad():
        wn = torch.sqrt(weights_sum_sq.to(lrs.dtype))
        gss = grads_sum_sq.to(lrs.dtype)
        ok = (wn > 0) & (gss > 0)
        new = lrs * eta * wn / (torch.sqrt(gss) * rescale_grad + wds.to(lrs.dtype) * wn + eps)
        return torch.where(ok, new, lrs)


def _np_finite(*a, **_):  # type: ignore[no-untyped-def]
    return np.array([float(all(np.all(np.isfinite(x)) for x in a))], np.float32)


def _with_bad(v: float) -> np.ndarray:
    x = _u(-1, 1, (3, 4))
    x[1, 2] = v
    return x


@register("all_finite", differentiable=False, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)),), {}, ref=_np_finite),
    Sample((_with_bad(np.inf),), {}, ref=_np_finite),
    Sample((_with_bad(np.nan),), {"init_output": True}, ref=_np_finite)])
def all_finite(data: Tensor, *, init_output: bool = True) -> Tensor:
    """1.0 (float32, shape (1,)) when every element of data is finite, else 0.0.

    ``init_output=False`` (MXNet: keep the output's old value when finite) cannot see the old
    value of ``out=`` here; it computes the same flag as True."""
    with torch.no_grad():
        return torch.isfinite(data).all().to(torch.float32).reshape(1)


@register("multi_all_finite", differentiable=False, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(-1, 1, (2,))), {"num_arrays": 2}, ref=_np_finite),
    Sample((_u(-1, 1, (3, 4)), _with_bad(-np.inf)), {"num_arrays": 2}, ref=_np_finite)])
def multi_all_finite(*data: Tensor, num_arrays: int = 1, init_output: bool = True) -> Tensor:
    """1.0 (float32, shape (1,)) when every element of every array is finite, else 0.0
    (``init_output`` as in ``all_finite``)."""
    _count("multi_all_finite", data, num_arrays)
    with torch.no_grad():
        flags = [torch.isfinite(a).all() for a in data]
        if not flags:
            return torch.ones(1, dtype=torch.float32)
        return torch.stack(flags).all().to(torch.float32).reshape(1)


@register("reset_arrays", num_outputs=0, differentiable=False, mutates_inputs=lambda a, n: range(n),
          samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(-1, 1, (5,))), {"num_arrays": 2}, ref=lambda *a, **k: [], symbolic=False)])
def reset_arrays(*data: Tensor, num_arrays: int) -> list:
    """Set every input array to zero in place; no outputs."""
    _count("reset_arrays", data, num_arrays)
    with torch.no_grad():
        for a in data:
            a.zero_()
    return []


# ==== AdaGrad (MXNet's sparse.adagrad_update) ====================================================
def _np_adagrad(w, g, h, lr, epsilon=1e-7, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):  # type: ignore[no-untyped-def]
    gr = _np_clip(rescale_grad * g, clip_gradient)
    h = h + gr * gr
    return w - lr * gr / np.sqrt(h + epsilon), h


@register("_sparse_adagrad_update", aux=("history",), differentiable=False, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(-2, 2, (3, 4)), _u(0.1, 1, (3, 4))), {"lr": 0.1},
           ref=_out_only(_np_adagrad)),
    Sample((_u(-1, 1, (3, 4)), _u(-2, 2, (3, 4)), _u(0.1, 1, (3, 4))),
           {"lr": 0.1, "epsilon": 1e-5, "rescale_grad": 0.5, "clip_gradient": 0.4}, ref=_out_only(_np_adagrad))])
def sparse_adagrad_update(weight: Tensor, grad: Tensor, history: Tensor, *, lr: float,
                          epsilon: float = 1e-7, wd: float = 0.0, rescale_grad: float = 1.0,
                          clip_gradient: float = -1.0, out: Any = None) -> Tensor:
    """AdaGrad: g = clip(rescale_grad*grad); history += g^2 (in place); returns
    weight - lr*g/sqrt(history + epsilon). MXNet refuses wd != 0 here (and so do we)."""
    if wd != 0.0:
        raise MXNetError(f"sparse adagrad_update does not support wd (got wd={wd}); use wd=0")
    _check_same_shape("adagrad_update", "weight", weight, history=history)
    with torch.no_grad():
        g = _scaled(grad, rescale_grad, clip_gradient, weight.dtype)
        history.addcmul_(g, g)
        denom = (history + epsilon).sqrt_()
        if out is weight:
            return weight.addcdiv_(g, denom, value=-lr)
        return torch.addcdiv(weight, g, denom, value=-lr)


# ==== row_sparse gradients: lazy and standard updates ============================================
def _row_sparse_rule(opname: str, always_lazy: bool = False) -> None:
    """The sparse rule of ``opname`` for a row_sparse ``grad``: the dense kernel runs on the rows
    the gradient holds (lazy update) or on every row with zeros for the missing ones (standard
    update); the weight (the ``out=`` array) and the states are updated in place. A row_sparse
    weight or state must hold every row (the front-end fills them first, as MXNet does)."""
    from .registry import get
    kernel = get(opname).kernel

    def rule(weight: Tensor, grad: Tensor, *states: Tensor, **attrs: Any) -> Any:
        if grad.layout is not torch.sparse_coo or weight.layout is torch.sparse_csr or \
                any(st.layout is torch.sparse_csr for st in states):
            return NotImplemented
        w = _storage.rows_view(weight)
        ss = [_storage.rows_view(st) for st in states]
        g, idx = _storage.rsp_parts(_storage.to_rsp(grad))
        g = g.to(w.dtype)
        with torch.no_grad():
            if always_lazy or attrs.get("lazy_update", True):
                rows = [st[idx] for st in ss]
                new = kernel(w[idx], g, *rows, **attrs)
                for st, r in zip(ss, rows):
                    st[idx] = r
                w[idx] = new.to(w.dtype)
            else:
                full = torch.zeros_like(w)
                full[idx] = g
                w.copy_(kernel(w, full, *ss, **attrs))
        return weight
    rule.__name__ = f"{opname}_row_sparse"
    sparse_rule(opname)(rule)


for _opname in ("sgd_update", "sgd_mom_update", "adam_update"):
    _row_sparse_rule(_opname)
_row_sparse_rule("ftrl_update", always_lazy=True)
_row_sparse_rule("_sparse_adagrad_update", always_lazy=True)
