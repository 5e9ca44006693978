"""mx.nd.contrib (operators filled in from the registry at import), plus MXNet's Python-level
AdamW wrappers that take ``rescale_grad`` as a number or an array, and ``rand_zipfian``."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..context import current_context
from ..ops.frontend import make_rand_zipfian
from .random import uniform

# MXNet's nd.contrib also re-exports current_context and uniform (its module imports them)
rand_zipfian = make_rand_zipfian(uniform, current_context)


def _scale_array(rescale_grad: Any, like: Any) -> Any:
    """MXNet's AdamW ops take the gradient scale as an array (AMP's loss scale); a number is
    wrapped into one on the weight's context."""
    from .ndarray import NDArray, array
    if isinstance(rescale_grad, NDArray):
        return rescale_grad
    return array([float(rescale_grad)], ctx=like.context, dtype="float32")


def adamw_update(weight: Any, grad: Any, mean: Any, var: Any, rescale_grad: Any, lr: float,
                 eta: float, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                 wd: float = 0.0, clip_gradient: float = -1.0, out: Any = None, name: Any = None) -> Any:
    """AdamW step (operator ``_adamw_update``); ``rescale_grad`` may be a number or an array."""
    from . import _internal
    return _internal._adamw_update(weight, grad, mean, var, _scale_array(rescale_grad, weight),
                                   lr=lr, eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon,
                                   wd=wd, clip_gradient=clip_gradient, out=out, name=name)


def mp_adamw_update(weight: Any, grad: Any, mean: Any, var: Any, weight32: Any, rescale_grad: Any,
                    lr: float, eta: float, beta1: float = 0.9, beta2: float = 0.999,
                    epsilon: float = 1e-8, wd: float = 0.0, clip_gradient: float = -1.0,
                    out: Any = None, name: Any = None) -> Any:
    """Multi-precision AdamW step (operator ``_mp_adamw_update``)."""
    from . import _internal
    return _internal._mp_adamw_update(weight, grad, mean, var, weight32,
                                      _scale_array(rescale_grad, weight), lr=lr, eta=eta,
                                      beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                                      clip_gradient=clip_gradient, out=out, name=name)


def _multi(step: Any, groups: Sequence[Sequence[Any]], rescale_grad: Any, lrs: Sequence[float],
           wds: Sequence[float], etas: Sequence[float], out: Any, size: int, kwargs: dict) -> list:
    n = size or len(groups)
    if not (len(groups) >= n and len(lrs) >= n and len(wds) >= n and len(etas) >= n):
        raise ValueError(f"multi AdamW update: {n} weights need as many lrs/wds/etas, got "
                         f"{len(lrs)}/{len(wds)}/{len(etas)}")
    outs = list(out) if isinstance(out, (list, tuple)) else [None] * n
    scale = _scale_array(rescale_grad, groups[0][0])
    return [step(*groups[i], scale, lr=lrs[i], wd=wds[i], eta=etas[i], out=outs[i], **kwargs)
            for i in range(n)]


def multi_adamw_update(weights: Sequence[Any], grads: Sequence[Any], mean: Sequence[Any],
                       var: Sequence[Any], rescale_grad: Any, lrs: Sequence[float],
                       wds: Sequence[float], etas: Sequence[float], out: Optional[Any] = None,
                       name: Any = None, size: int = 0, **kwargs: Any) -> list:
    """AdamW on several weights at once (MXNet's ``multi_adamw_update``): the same step as
    ``adamw_update`` per weight, with per-weight lr, wd and eta."""
    return _multi(adamw_update, list(zip(weights, grads, mean, var)), rescale_grad, lrs, wds, etas,
                  out, size, kwargs)


def multi_mp_adamw_update(weights: Sequence[Any], grads: Sequence[Any], mean: Sequence[Any],
                          var: Sequence[Any], weights32: Sequence[Any], rescale_grad: Any,
                          lrs: Sequence[float], wds: Sequence[float], etas: Sequence[float],
                          out: Optional[Any] = None, name: Any = None, size: int = 0,
                          **kwargs: Any) -> list:
    """Multi-precision ``multi_adamw_update``."""
    return _multi(mp_adamw_update, list(zip(weights, grads, mean, var, weights32)), rescale_grad,
                  lrs, wds, etas, out, size, kwargs)
