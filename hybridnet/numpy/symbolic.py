"""``mx.sym.np`` / ``mx.sym.npx`` (``F.np``/``F.npx`` in a traced ``hybrid_forward``).

The same generated functions and front-end functions as ``mx.np``/``mx.npx``
(``_frontend``), dispatched to the Symbol front-end: each call adds a node of the registry's
NumPy-interface operator to the graph, named as MXNet's JSON names it.
"""
from __future__ import annotations

import types
from typing import Any

from ..symbol.symbol import Symbol, sym_invoke
from . import _frontend

__all__ = ["np", "npx"]


def _no_data(x: Any) -> Any:
    raise TypeError(f"mx.sym.np: expected a Symbol, got {type(x).__name__} ({x!r:.60}); constants inside a "
                    "traced hybrid_forward are made with F.np.array-free functions (F.np.full, F.np.ones...)")


_GEN = _frontend.generate(sym_invoke)
_FUNCS = _frontend.Frontend(sym_invoke, lambda x: isinstance(x, Symbol), _no_data, eager=False).functions()

np = types.ModuleType("hybridnet.symbol.numpy", "mx.sym.np: the NumPy interface on Symbols")
npx = types.ModuleType("hybridnet.symbol.numpy_extension", "mx.sym.npx: the NumPy extensions on Symbols")
for _mod, _tables in ((np, (_FUNCS[""], _GEN[""])), (npx, (_FUNCS["npx"], _GEN["npx"]))):
    for _t in _tables:
        for _k, _f in _t.items():
            if not hasattr(_mod, _k):
                setattr(_mod, _k, _f)
for _sub in ("random", "linalg"):
    _m = types.ModuleType(f"hybridnet.symbol.numpy.{_sub}", f"mx.sym.np.{_sub}")
    for _t in (_FUNCS[_sub], _GEN[_sub]):
        for _k, _f in _t.items():
            if not hasattr(_m, _k):
                setattr(_m, _k, _f)
    setattr(np, _sub, _m)
_internal = types.ModuleType("hybridnet.symbol.numpy._internal", "mx.sym.np._internal")
for _k, _f in _GEN["_internal"].items():
    setattr(_internal, _k, _f)
np._internal = _internal  # type: ignore[attr-defined]
