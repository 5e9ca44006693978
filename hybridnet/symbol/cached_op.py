"""``mx.nd.CachedOp``: a Symbol compiled once and called on NDArrays (MXNet's imperative CachedOp).

The graph goes through the same passes and code generator as a hybridized block. A call
takes one NDArray per input of the symbol, in ``list_inputs()`` order; under
``autograd.record()`` gradients flow through it like through any operator.
"""
from __future__ import annotations

from typing import Any

from ..autograd import current_mode
from ..base import MXNetError
from ..ndarray.ndarray import NDArray, _write_out

__all__ = ["CachedOp"]


class CachedOp:
    """``CachedOp(sym, flags=())``; ``op(*arrays, out=None)`` returns an NDArray for a
    single-output symbol, else a list of NDArrays."""

    def __init__(self, sym: Any, flags: Any = ()) -> None:
        from ..compiler.cached_op import CachedGraph
        from .symbol import Symbol
        if not isinstance(sym, Symbol):
            raise TypeError(f"CachedOp expects a Symbol, got {type(sym).__name__}")
        graph = sym._graph()
        self._input_names = [v.name for v in graph.variables()]
        self._num_outputs = len(graph.outputs)
        options = {k: _flag_value(v) for k, v in dict(flags or ()).items()}
        self._compiled = CachedGraph(graph, self._input_names, [], owner="CachedOp",
                                     static_alloc=bool(options.get("static_alloc", False)),
                                     static_shape=bool(options.get("static_shape", False)))

    def __call__(self, *args: NDArray, out: Any = None, default_ctx: Any = None) -> Any:
        if len(args) != len(self._input_names):
            raise MXNetError(f"CachedOp: {len(args)} inputs given, the symbol has {len(self._input_names)} "
                             f"({self._input_names}, in this order)")
        for name, a in zip(self._input_names, args):
            if not isinstance(a, NDArray):
                raise TypeError(f"CachedOp: input {name!r} must be an NDArray, got {type(a).__name__}")
        outs = [NDArray(t) for t in self._compiled([a._t for a in args], current_mode())]
        if out is not None:
            targets = list(out) if isinstance(out, (list, tuple)) else [out]
            if len(targets) != len(outs):
                raise MXNetError(f"CachedOp: out= has {len(targets)} arrays for {len(outs)} outputs")
            for o, r in zip(targets, outs):
                _write_out(o, r._t)
            return out
        return outs[0] if self._num_outputs == 1 else outs


def _flag_value(v: Any) -> Any:
    """MXNet passes CachedOp flags as strings ("true", "1"); Python values pass through."""
    if isinstance(v, str):
        low = v.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
    return v
