"""Autograd with MXNet's interface on torch's engine (``mx.autograd``).

Nothing is recorded outside ``record()``: eager operators on arrays that require gradients run
with torch's grad mode off unless recording. Gradients land in buffers allocated by
``attach_grad``; ``backward`` writes them per ``grad_req`` ('write' overwrites, 'add'
accumulates, 'null' skips), as MXNet does.
"""
from __future__ import annotations

import weakref
from typing import Any, Optional, Sequence

import torch

from .base import MXNetError

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "Function",
           "get_symbol"]


class _State:
    __slots__ = ("recording", "training")

    def __init__(self) -> None:
        self.recording = False
        self.training = False


STATE = _State()
# Every array with an attached gradient buffer; backward() fills the ones it reaches.
_VARIABLES: "weakref.WeakSet[Any]" = weakref.WeakSet()


def is_recording() -> bool:
    return STATE.recording


def is_training() -> bool:
    return STATE.training


def set_recording(is_recording: bool) -> bool:
    prev = STATE.recording
    STATE.recording = bool(is_recording)
    torch.set_grad_enabled(STATE.recording)
    return prev


def set_training(train_mode: bool) -> bool:
    prev = STATE.training
    STATE.training = bool(train_mode)
    return prev


class _Scope:
    def __init__(self, recording: Optional[bool], training: Optional[bool]):
        self._rec, self._train = recording, training
        self._prev: tuple = ()

    def __enter__(self) -> "_Scope":
        self._prev = (STATE.recording, STATE.training, torch.is_grad_enabled())
        if self._rec is not None:
            STATE.recording = self._rec
            torch.set_grad_enabled(self._rec)
        if self._train is not None:
            STATE.training = self._train
        return self

    def __exit__(self, *exc: Any) -> None:
        STATE.recording, STATE.training, grad_enabled = self._prev
        torch.set_grad_enabled(grad_enabled)


def record(train_mode: bool = True) -> _Scope:
    """Record operators for differentiation; ``train_mode`` sets the Dropout/BatchNorm flag."""
    return _Scope(True, train_mode)


def pause(train_mode: bool = False) -> _Scope:
    """Stop recording inside a ``record()`` block."""
    return _Scope(False, train_mode)


def train_mode() -> _Scope:
    return _Scope(None, True)


def predict_mode() -> _Scope:
    return _Scope(None, False)


def register_variable(arr: Any) -> None:
    _VARIABLES.add(arr)


def mark_variables(variables: Any, gradients: Any, grad_reqs: "str | Sequence[str]" = "write") -> None:
    """Mark arrays as variables whose gradients go into ``gradients`` (MXNet semantics)."""
    from .ndarray.ndarray import NDArray
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    for v, g, req in zip(variables, gradients, grad_reqs):
        v._mark(g, req)


def _heads_and_grads(heads: Any, head_grads: Any) -> tuple[list, list]:
    from .ndarray.ndarray import NDArray
    if isinstance(heads, NDArray):
        heads = [heads]
        head_grads = [head_grads] if head_grads is not None else None
    if head_grads is None:
        head_grads = [None] * len(heads)
    if len(head_grads) != len(heads):
        raise MXNetError(f"backward: {len(heads)} heads but {len(head_grads)} head gradients")
    ts, gs = [], []
    for h, g in zip(heads, head_grads):
        t = h._t
        if not t.requires_grad:
            raise MXNetError("backward: a head does not depend on any variable with an attached "
                             "gradient, or was not computed inside autograd.record(); call "
                             "x.attach_grad() and compute the head under `with autograd.record():`")
        ts.append(t)
        gs.append(torch.ones_like(t) if g is None else g._t.to(t.dtype))
    return ts, gs


def backward(heads: Any, head_grads: Any = None, retain_graph: bool = False,
             train_mode: bool = True) -> None:
    """Compute gradients of ``heads`` into every reached variable's buffer, per its grad_req."""
    ts, gs = _heads_and_grads(heads, head_grads)
    variables = [v for v in list(_VARIABLES) if v._grad_req != "null" and v._t.requires_grad]
    if not variables:
        raise MXNetError("backward: no variable has an attached gradient; call attach_grad() first")
    leaves = [v._t for v in variables]
    with torch.enable_grad():
        grads = torch.autograd.grad(ts, leaves, gs, retain_graph=retain_graph, allow_unused=True)
    with torch.no_grad():
        for v, g in zip(variables, grads):
            if g is None:
                continue
            buf = v._grad._t
            if v._grad_req == "add":
                buf.add_(g)
            else:
                buf.copy_(g)


def grad(heads: Any, variables: Any, head_grads: Any = None, retain_graph: Optional[bool] = None,
         create_graph: bool = False, train_mode: bool = True) -> list:
    """Gradients of ``heads`` w.r.t. ``variables``, returned (not stored); higher order with create_graph."""
    from .ndarray.ndarray import NDArray
    single = isinstance(variables, NDArray)
    if single:
        variables = [variables]
    ts, gs = _heads_and_grads(heads, head_grads)
    if retain_graph is None:
        retain_graph = create_graph
    with torch.enable_grad():
        out = torch.autograd.grad(ts, [v._t for v in variables], gs, retain_graph=retain_graph,
                                  create_graph=create_graph, allow_unused=True)
    res = [NDArray(torch.zeros_like(v._t) if g is None else g) for v, g in zip(variables, out)]
    return res


def get_symbol(x: Any) -> Any:
    raise MXNetError("autograd.get_symbol is not supported: hybridnet records with torch's "
                     "engine; hybridize a HybridBlock to obtain its graph instead")


class Function:
    """User-defined differentiable function (MXNet's ``autograd.Function``).

    Subclass it and implement ``forward(self, *inputs)`` and ``backward(self, *output_grads)``
    on NDArrays; call the instance on NDArrays.
    """

    def __init__(self) -> None:
        self._saved: tuple = ()

    def save_for_backward(self, *args: Any) -> None:
        self._saved = args

    @property
    def saved_tensors(self) -> tuple:
        return self._saved

    def forward(self, *inputs: Any) -> Any:
        raise NotImplementedError

    def backward(self, *output_grads: Any) -> Any:
        raise NotImplementedError

    def __call__(self, *inputs: Any) -> Any:
        from .ndarray.ndarray import NDArray
        user = self

        class _Bridge(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, *tensors: torch.Tensor) -> Any:  # type: ignore[override]
                with pause(STATE.training):
                    outs = user.forward(*[NDArray(t.detach()) for t in tensors])
                ctx.single = isinstance(outs, NDArray)
                outs = (outs,) if ctx.single else tuple(outs)
                return tuple(o._t for o in outs)

            @staticmethod
            def backward(ctx: Any, *grads: torch.Tensor) -> Any:  # type: ignore[override]
                with pause(STATE.training):
                    res = user.backward(*[NDArray(g) for g in grads])
                res = (res,) if isinstance(res, NDArray) else tuple(res)
                return tuple(None if r is None else r._t for r in res)

        outs = _Bridge.apply(*[x._t for x in inputs])
        wrapped = [NDArray(t) for t in outs]
        return wrapped[0] if len(wrapped) == 1 else wrapped
