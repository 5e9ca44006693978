"""``mx.nd.CachedOp``: a Symbol compiled once and called on NDArrays (MXNet's imperative CachedOp).

The graph goes through the same passes and code generator as a hybridized block. A call
takes one NDArray per input of the symbol, in ``list_inputs()`` order; under
``autograd.record()`` gradients flow through it like through any operator.
"""
from __future__ import annotations

from typing import Any

from ..autograd_engine import current_mode
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
        options = dict(flags or ())
        self._compiled = CachedGraph(graph, self._input_names, [], owner="CachedOp",
                                     static_alloc=_bool_flag(options, "static_alloc"),
                                     static_shape=_bool_flag(options, "static_shape"))

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


def _bool_flag(options: dict, name: str) -> bool:
    """A boolean CachedOp flag; MXNet passes them as strings ("true", "1"), read as the
    registry reads boolean attributes (a bad spelling raises naming the flag)."""
    from ..ops.attrs import parse_value
    value = options.get(name, False)
    return parse_value(value, "bool", where=f"CachedOp flag {name}") if isinstance(value, str) else bool(value)
