"""``mx.contrib.autograd``: MXNet's first autograd API (before ``mx.autograd``), kept for old
code: ``train_section()``/``test_section()`` switch recording and training together,
``compute_gradient``, and ``grad``/``grad_and_loss`` function transforms. All of it runs on
:mod:`hybridnet.autograd`."""
from __future__ import annotations

import functools
from types import TracebackType
from typing import Any, Callable, List, Optional, Sequence, Type, Union

from .. import autograd as _ag
from ..ndarray.ndarray import NDArray
from .. import ndarray as nd

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section",
           "mark_variables", "backward", "compute_gradient", "grad_and_loss", "grad"]


def set_is_training(is_train: bool) -> bool:
    """Set training and recording together; returns the previous training state."""
    prev = _ag.set_training(bool(is_train))
    _ag.set_recording(bool(is_train))
    return bool(prev)


class TrainingStateScope:
    """``with`` scope entering a training (recording) or testing state, restored on exit."""

    def __init__(self, enter_state: bool):
        self._enter_state = enter_state
        self._prev: Optional[bool] = None

    def __enter__(self) -> None:
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, ptype: Optional[Type[BaseException]], value: Optional[BaseException],
                 trace: Optional[TracebackType]) -> None:
        if self._prev != self._enter_state:
            set_is_training(bool(self._prev))


def train_section() -> TrainingStateScope:
    """Record and train inside the scope (``mx.autograd.record()`` in today's API)."""
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """Neither record nor train inside the scope."""
    return TrainingStateScope(False)


def mark_variables(variables: Sequence[NDArray], gradients: Sequence[NDArray],
                   grad_reqs: Union[str, Sequence[str]] = "write") -> None:
    """Attach ``gradients`` as the gradient buffers of ``variables``."""
    _ag.mark_variables(list(variables), list(gradients), grad_reqs)


def backward(outputs: Sequence[NDArray], out_grads: Optional[Sequence[Optional[NDArray]]] = None,
             retain_graph: bool = False) -> None:
    """Gradients of ``outputs`` (a list) into the marked variables' buffers."""
    if not isinstance(outputs, (list, tuple)):
        raise TypeError("mx.contrib.autograd.backward: outputs must be a list or tuple of NDArrays")
    if out_grads is not None and len(out_grads) != len(outputs):
        raise ValueError("mx.contrib.autograd.backward: outputs and out_grads must have the same length")
    _ag.backward(list(outputs), None if out_grads is None else list(out_grads),
                 retain_graph=retain_graph)


def compute_gradient(outputs: Sequence[NDArray]) -> None:
    """Deprecated name of :func:`backward` (MXNet's)."""
    backward(outputs)


def _variables(args: tuple, argnum: Optional[Union[int, List[int]]]) -> list:
    variables = list(args)
    if argnum is not None:
        variables = [args[i] for i in (argnum if isinstance(argnum, list) else [argnum])]
    for x in variables:
        if not isinstance(x, NDArray):
            raise TypeError(f"mx.contrib.autograd: arguments to differentiate must be NDArrays, "
                            f"got {type(x).__name__}")
    return variables


def grad_and_loss(func: Callable[..., Any], argnum: Optional[Union[int, List[int]]] = None
                  ) -> Callable[..., Any]:
    """``f(*args) -> (gradients of the args chosen by argnum, func's outputs)``."""
    @functools.wraps(func)
    def wrapped(*args: Any) -> Any:
        variables = _variables(args, argnum)
        grads = [nd.zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func: Callable[..., Any], argnum: Optional[Union[int, List[int]]] = None
         ) -> Callable[..., Any]:
    """``f(*args) -> gradients of the args chosen by argnum``."""
    grad_with_loss_func = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss_func)
    def wrapped(*args: Any) -> Any:
        return grad_with_loss_func(*args)[0]
    return wrapped
