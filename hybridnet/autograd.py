"""Autograd with MXNet's interface on torch's engine (``mx.autograd``).

* Nothing is recorded outside ``record()``: eager operators on arrays with attached gradients
  run with torch's grad mode off unless recording, so no graph (and no memory) is kept.
* ``attach_grad``/``mark_variables`` make an array a variable: its tensor becomes a torch leaf
  whose ``.grad`` *is* the gradient buffer the user sees (``x.grad``). ``backward`` runs torch's
  engine, which accumulates into ``.grad`` in place, applying each variable's ``grad_req``
  ('write' overwrites, 'add' accumulates, 'null' computes nothing). Only the variables a head
  depends on are touched.
* ``grad`` returns gradients as new arrays (``create_graph=True`` for higher order) and leaves
  the buffers alone. ``Function`` wraps user-defined forward/backward on NDArrays.

The flags, variables, recorded history and tensor-level backward are ``autograd_engine``'s (below
``ndarray``, which reads them on every operator); this module adds what takes NDArrays and
Symbols.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

from . import autograd_engine as _engine
from .autograd_engine import (STATE, Mode, current_mode, is_recording, is_training,  # noqa: F401
                              live_variables, pause, predict_mode, record, set_recording,
                              set_training, train_mode)
from .base import MXNetError
from .ndarray.ndarray import NDArray
from .symbol.symbol import Symbol

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "Function",
           "get_symbol"]


# ---- variables -------------------------------------------------------------------------------
def mark_variables(variables: Any, gradients: Any, grad_reqs: "str | Sequence[str]" = "write") -> None:
    """Mark arrays as variables whose gradients go into ``gradients`` (MXNet semantics)."""
    if isinstance(variables, NDArray):
        if not isinstance(gradients, NDArray):
            raise TypeError("mark_variables: with a single variable, gradients must be one NDArray")
        variables, gradients = [variables], [gradients]
    variables, gradients = list(variables), list(gradients)
    if len(variables) != len(gradients):
        raise MXNetError(f"mark_variables: {len(variables)} variables but {len(gradients)} gradients")
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    grad_reqs = list(grad_reqs)
    if len(grad_reqs) != len(variables):
        raise MXNetError(f"mark_variables: {len(variables)} variables but {len(grad_reqs)} grad_reqs")
    for v, g, req in zip(variables, gradients, grad_reqs):
        v._mark(g, req)


# ---- backward / grad -------------------------------------------------------------------------
def _heads_and_grads(heads: Any, head_grads: Any) -> tuple[list, list]:
    if isinstance(heads, NDArray):
        heads = [heads]
    if isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    heads = list(heads)
    if not heads:
        raise MXNetError("backward: no heads given")
    if head_grads is None:
        head_grads = [None] * len(heads)
    head_grads = list(head_grads)
    if len(head_grads) != len(heads):
        raise MXNetError(f"backward: {len(heads)} heads but {len(head_grads)} head gradients")
    ts, gs = [], []
    for i, (h, g) in enumerate(zip(heads, head_grads)):
        if not isinstance(h, NDArray):
            raise TypeError(f"backward: heads must be NDArrays, got {type(h).__name__}")
        gs.append(_engine.check_head(i, h._t, g._t if isinstance(g, NDArray) else g))
        ts.append(h._t)
    return ts, gs


def backward(heads: Any, head_grads: Any = None, retain_graph: bool = False,
             train_mode: bool = True) -> None:  # noqa: F811
    """Compute gradients of ``heads`` into the buffers of the variables they depend on.

    Each reached variable's buffer is overwritten ('write') or added to ('add'); variables the
    heads do not depend on are left untouched. ``head_grads`` default to ones.
    """
    ts, gs = _heads_and_grads(heads, head_grads)
    _engine.run_backward(ts, gs, retain_graph)


def grad(heads: Any, variables: Any, head_grads: Any = None, retain_graph: Optional[bool] = None,
         create_graph: bool = False, train_mode: bool = True) -> list:  # noqa: F811
    """Gradients of ``heads`` w.r.t. ``variables`` as a list of new NDArrays (buffers untouched).

    ``create_graph=True`` records the gradient computation so it can be differentiated again
    (higher order); ``retain_graph`` defaults to ``create_graph``.
    """
    if isinstance(variables, NDArray):
        variables = [variables]
    variables = list(variables)
    if not variables:
        raise MXNetError("grad: variables cannot be an empty list")
    ts, gs = _heads_and_grads(heads, head_grads)
    for i, v in enumerate(variables):
        if not v._t.requires_grad:
            raise MXNetError(f"grad: variable {i} (shape {v.shape}) has no attached gradient; "
                             f"call attach_grad() before computing the heads under record()")
    if retain_graph is None:
        retain_graph = create_graph
    out = _engine.run_grad(ts, gs, [v._t for v in variables], retain_graph, create_graph)
    return [NDArray(g) for g in out]


# ---- recorded history --------------------------------------------------------------------------
def get_symbol(x: Any) -> Any:
    """The computation recorded under ``record()`` that produced ``x``, as a Symbol (MXNet's
    ``autograd.get_symbol``); variables and unrecorded inputs are its arguments."""
    if not isinstance(x, NDArray):
        raise TypeError(f"get_symbol: expected an NDArray, got {type(x).__name__}")
    return Symbol([_engine.history_entry(x)])


# ---- custom functions ------------------------------------------------------------------------
class _Bridge(torch.autograd.Function):
    """Runs a user ``Function``'s forward/backward (on NDArrays) inside torch's engine."""

    @staticmethod
    def forward(ctx: Any, user: "Function", *tensors: torch.Tensor) -> Any:  # type: ignore[override]
        ctx.user = user
        ctx.n_in = len(tensors)
        with _engine.Scope(False, None):
            outs = user.forward(*[NDArray(t) for t in tensors])
        user._out_single = isinstance(outs, NDArray)
        seq = (outs,) if user._out_single else tuple(outs)
        if not seq or not all(isinstance(o, NDArray) for o in seq):
            raise MXNetError(f"{type(user).__name__}.forward must return an NDArray or a tuple of NDArrays")
        user._out_type = type(outs)
        return tuple(o._t for o in seq)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Any:  # type: ignore[override]
        user = ctx.user
        with _engine.Scope(False, None):
            res = user.backward(*[NDArray(g) for g in grads])
        res = (res,) if isinstance(res, NDArray) or res is None else tuple(res)
        if len(res) != ctx.n_in:
            raise MXNetError(f"{type(user).__name__}.backward must return exactly as many NDArrays as "
                             f"forward has inputs: expected {ctx.n_in}, got {len(res)}")
        for r in res:
            if r is not None and not isinstance(r, NDArray):
                raise MXNetError(f"{type(user).__name__}.backward must return NDArrays, not {type(r).__name__}")
        return (None,) + tuple(None if r is None else r._t for r in res)


class Function:
    """User-defined differentiable function (MXNet's ``autograd.Function``).

    Subclass it, implement ``forward(self, *inputs)`` and ``backward(self, *output_grads)`` on
    NDArrays (``backward`` returns one gradient per input), and call an instance on NDArrays.
    ``save_for_backward(*arrays)`` keeps arrays for ``backward`` in ``self.saved_tensors``.
    Each instance can be called once, as in MXNet.
    """

    def __init__(self) -> None:
        self._used = False
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *args: Any) -> None:
        self.saved_tensors = args

    def forward(self, *inputs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement forward(self, *inputs)")

    def backward(self, *output_grads: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement backward(self, *output_grads)")

    def __call__(self, *inputs: Any) -> Any:
        if getattr(self, "_used", False):
            raise MXNetError(f"each {type(self).__name__} (autograd.Function) instance can only be "
                             f"called once; create another instance")
        self._used = True
        for i, x in enumerate(inputs):
            if not isinstance(x, NDArray):
                raise TypeError(f"{type(self).__name__}: input {i} must be an NDArray, got {type(x).__name__}")
        if not _engine.current_mode().recording:
            with _engine.Scope(False, None):
                return self.forward(*inputs)
        outs = _Bridge.apply(self, *[x._t for x in inputs])
        wrapped = [NDArray(t) for t in outs]
        if self._out_single:
            return wrapped[0]
        return self._out_type(wrapped) if self._out_type in (list, tuple) else tuple(wrapped)
