"""mx.nd.contrib (operators filled in from the registry at import), plus MXNet's Python-level
AdamW wrappers that take ``rescale_grad`` as a number or an array, ``rand_zipfian``, and the eager
control flow ``foreach`` / ``while_loop`` / ``cond`` (MXNet 1.9.1's python/mxnet/ndarray/contrib.py):
Python loops calling the user's function on NDArrays, so autograd records every step. The graph forms
(``mx.sym.contrib``) compute the same values; a loop state or step output whose shape changes
between iterations is an error in both.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..base import MXNetError
from ..context import current_context
from ..nesting import flatten as _nest_flatten
from ..nesting import regroup as _regroup
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


# ---- control flow ------------------------------------------------------------------------------
def _flatten(args: Any, what: str) -> tuple:
    """Nested lists of NDArrays -> (flat list, format) (MXNet's ``_flatten``)."""
    from .ndarray import NDArray
    return _nest_flatten(args, lambda a: ([a], 0) if isinstance(a, NDArray) else None,
                        lambda bad: TypeError(f"{what} must be an NDArray or a (nested) list of NDArrays, "
                                              f"but got {type(bad).__name__} {bad!r:.80}"))


def _stack_steps(op: str, k: int, parts: list, pad_to: int = 0) -> Any:
    """Step outputs ``parts`` stacked on a new first axis (zero rows appended up to ``pad_to``)."""
    from . import concat, zeros
    first = parts[0].shape
    for step, p in enumerate(parts):
        if p.shape != first:
            raise MXNetError(f"{op}: output {k} of the loop body has shape {first} in iteration 0 but "
                             f"{p.shape} in iteration {step}; every iteration must return outputs of "
                             f"the same shape")
    rows = [p.expand_dims(0) for p in parts]
    if pad_to > len(parts):
        rows.append(zeros((pad_to - len(parts),) + tuple(first), ctx=parts[0].context, dtype=parts[0].dtype))
    return concat(*rows, dim=0)


def _check_same_shapes(op: str, what: str, step: int, old: list, new: list) -> None:
    for j, (a, b) in enumerate(zip(old, new)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise MXNetError(f"{op}: {what} {j} changes from shape {a.shape} ({a.dtype.__name__}) to "
                             f"{b.shape} ({b.dtype.__name__}) in iteration {step}; a loop {what} must keep "
                             f"its shape and dtype across iterations (the graph form requires it too)")


def _scalar_true(x: Any, op: str, what: str) -> bool:
    """MXNet converts the condition with ``asscalar``: it must hold exactly one element."""
    from .ndarray import NDArray
    if isinstance(x, NDArray):
        if x.size != 1:
            raise MXNetError(f"{op}: {what} must be a scalar (an NDArray of one element), but it has "
                             f"shape {x.shape}; reduce it, e.g. with .sum() or .prod(), or compare a "
                             f"single element")
        x = x.asscalar()
    try:
        return bool(x)
    except Exception:  # noqa: BLE001 - any object that is not a truth value
        raise ValueError(f"Cannot convert {what} to python bool: {x!r:.60}") from None


def foreach(body: Callable, data: Any, init_states: Any) -> tuple:
    """Run ``body(data[i], states) -> (outputs, new_states)`` for every ``i`` along axis 0 of
    ``data`` (an NDArray or a list of them, sliced together). Returns (outputs stacked along a
    new axis 0, the states the last iteration returned), as MXNet's ``nd.contrib.foreach``."""
    flat_data, _ = _flatten(data, "foreach data")
    flat_states, _ = _flatten(init_states, "foreach init_states")
    if not flat_data:
        raise ValueError("foreach: data is empty; give at least one NDArray to iterate over")
    single = not isinstance(data, (list, tuple))
    n = data.shape[0] if single else data[0].shape[0]
    if n == 0:
        raise ValueError("foreach: data has no steps (axis 0 has length 0): there is no iteration to "
                         "take the outputs' structure from")
    states = init_states
    steps: list = []
    out_fmt: Any = None
    for i in range(n):
        eles = data[i] if single else [d[i] for d in data]
        result = body(eles, states)
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError(f"foreach: the body must return a pair (outputs, states), got "
                             f"{type(result).__name__} {result!r:.80}")
        outs, new_states = result
        flat_out, out_fmt = _flatten(outs, "foreach body outputs")
        flat_new, _ = _flatten(new_states, "foreach body states")
        flat_old, _ = _flatten(states, "foreach states")
        if len(flat_new) != len(flat_old):
            raise ValueError(f"foreach: the body returns {len(flat_new)} states for {len(flat_old)}; return "
                             f"as many states as it receives")
        _check_same_shapes("foreach", "state", i, flat_old, flat_new)
        steps.append(flat_out)
        states = new_states
    stacked = [_stack_steps("foreach", k, list(p)) for k, p in enumerate(zip(*steps))]
    return _regroup(stacked, out_fmt)[0], states


def while_loop(cond: Callable, func: Callable, loop_vars: Any, max_iterations: Any = None) -> tuple:
    """``while cond(*vars): step_output, vars = func(*vars)``, at most ``max_iterations`` times
    (MXNet's ``nd.contrib.while_loop``). Returns (step outputs stacked on a new axis 0 and padded
    to ``max_iterations`` rows, zeros past the last step; the final loop variables). When
    ``cond`` is false at once there are no step outputs (``[]``), as in MXNet."""
    from .ndarray import NDArray
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    try:
        max_iterations = int(max_iterations.asscalar() if isinstance(max_iterations, NDArray) else max_iterations)
    except (TypeError, ValueError):
        raise ValueError(f"Cannot convert max_iteration to python int: {max_iterations!r}") from None
    single = isinstance(loop_vars, NDArray)
    if not single and len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    values = [loop_vars] if single else list(loop_vars)
    steps: list = []
    out_fmt: Any = None
    while len(steps) < max_iterations and _scalar_true(cond(*values), "while_loop", "the value cond returns"):
        result = func(*values)
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError(f"while_loop: func must return a pair (step_output, new_loop_vars), got "
                             f"{type(result).__name__} {result!r:.80}")
        step_output, new_values = ([] if r is None else list(r) if isinstance(r, tuple) else r for r in result)
        new_values = new_values if isinstance(new_values, list) else [new_values]
        if len(new_values) != len(values):
            raise ValueError(f"The length of loop_vars should be consistent during the loop: func returns "
                             f"{len(new_values)} loop variables for {len(values)}")
        _check_same_shapes("while_loop", "variable", len(steps), _flatten(values, "loop_vars")[0],
                           _flatten(new_values, "new loop_vars")[0])
        flat_out, out_fmt = _flatten(step_output, "while_loop step_output")
        if steps and len(flat_out) != len(steps[0]):
            raise ValueError("Number of elements in step_output should be the same in each step")
        steps.append(flat_out)
        values = new_values
    stacked = [_stack_steps("while_loop", k, list(p), max_iterations) for k, p in enumerate(zip(*steps))]
    outputs = _regroup(stacked, out_fmt)[0] if out_fmt is not None else []
    return outputs, values[0] if single else values


def cond(pred: Any, then_func: Callable, else_func: Callable) -> Any:
    """``then_func()`` if the scalar ``pred`` is nonzero, else ``else_func()`` (MXNet's
    ``nd.contrib.cond``)."""
    return then_func() if _scalar_true(pred, "cond", "pred") else else_func()
