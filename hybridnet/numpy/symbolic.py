"""``mx.sym.np`` / ``mx.sym.npx`` (``F.np``/``F.npx`` in a traced ``hybrid_forward``).

The same generated functions and front-end functions as ``mx.np``/``mx.npx``
(``_frontend``), dispatched to the Symbol front-end: each call adds a node of the registry's
NumPy-interface operator to the graph, named as MXNet's JSON names it.
"""
from __future__ import annotations

import types
from typing import Any

from ..symbol.symbol import Symbol, sym_invoke
from ..ops import registry as _reg
from . import _frontend

__all__ = ["np", "npx", "NpSymbol", "as_np_symbol"]


class NpSymbol(Symbol):
    """A Symbol with the NumPy interface's operators and indexing (MXNet's ``mx.sym.np._Symbol``):
    what ``hybrid_forward`` sees while a block traces under ``npx.set_np()``. ``x + y`` records
    ``_npi_add``, ``x[:, -1]`` a ``slice`` and a ``_np_squeeze``, ``x.dot(w)`` ``_np_dot``."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str) or len(self._entries) > 1:
            return as_np_symbol(Symbol.__getitem__(self, key))
        if isinstance(key, slice) and key == slice(None):
            return self
        keys = key if isinstance(key, tuple) else (key,)
        begin: list = []
        end: list = []
        step: list = []
        squeeze: list = []
        expand: list = []
        axis = 0
        for k in keys:
            if k is None:
                expand.append(axis + len(expand))
                continue
            if isinstance(k, bool) or not isinstance(k, (int, slice)):
                raise TypeError(f"mx.sym.np: a traced array takes ints, slices and None as indices, got "
                                f"{type(k).__name__} ({k!r:.40}); use F.np.take / F.npx.pick for index arrays")
            if isinstance(k, int):
                begin.append(k)
                end.append(k + 1 if k != -1 else None)
                step.append(None)
                squeeze.append(axis)
            else:
                begin.append(k.start)
                end.append(k.stop)
                step.append(k.step)
            axis += 1
        res: Symbol = self
        if any(v is not None for v in begin + end + step):
            res = _call("_npi_slice", (res,), {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)})
        if squeeze:
            res = _call("_np_squeeze", (res,), {"axis": tuple(squeeze)})
        for ax in expand:
            res = _call("_npi_expand_dims", (res,), {"axis": ax})
        return as_np_symbol(res)

    def as_nd_ndarray(self) -> Symbol:
        return Symbol(self._entries)

    def as_np_ndarray(self) -> "NpSymbol":
        return self

    @property
    def T(self) -> "NpSymbol":  # noqa: N802 - NumPy's name
        return np.transpose(self)  # type: ignore[attr-defined,no-any-return]


def _call(opname: str, inputs: tuple, attrs: dict) -> Any:
    return as_np_symbol(sym_invoke(_reg.get(opname), inputs, attrs))


def as_np_symbol(x: Any) -> Any:
    """``x`` (a Symbol, or lists/tuples of them) as NpSymbols (the class changes in place)."""
    c = x.__class__
    if c is Symbol:
        x.__class__ = NpSymbol
        return x
    if c is list or c is tuple:
        return c(as_np_symbol(v) for v in x)
    return x


def _np_sym_invoke(op: Any, inputs: Any, attrs: dict, out: Any = None, name: Any = None, hint: Any = None,
                   attr: Any = None) -> Any:
    return as_np_symbol(sym_invoke(op, inputs, attrs, out, name, hint, attr))


def _no_data(x: Any) -> Any:
    raise TypeError(f"mx.sym.np: expected a Symbol, got {type(x).__name__} ({x!r:.60}); constants inside a "
                    "traced hybrid_forward are made with F.np.array-free functions (F.np.full, F.np.ones...)")


_GEN = _frontend.generate(_np_sym_invoke)
_FUNCS = _frontend.Frontend(_np_sym_invoke, lambda x: isinstance(x, Symbol), _no_data, eager=False).functions()

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
for _sub in ("random", "image"):  # F.npx.random (bernoulli, uniform_n...), F.npx.image
    _m = types.ModuleType(f"hybridnet.symbol.numpy_extension.{_sub}", f"mx.sym.npx.{_sub}")
    for _t in (_FUNCS.get(f"npx.{_sub}", {}), _GEN.get(f"npx.{_sub}", {})):
        for _k, _f in _t.items():
            if not hasattr(_m, _k):
                setattr(_m, _k, _f)
    if not hasattr(npx, _sub):
        setattr(npx, _sub, _m)
_internal = types.ModuleType("hybridnet.symbol.numpy._internal", "mx.sym.np._internal")
for _k, _f in _GEN["_internal"].items():
    setattr(_internal, _k, _f)
np._internal = _internal  # type: ignore[attr-defined]
np._Symbol = NpSymbol  # type: ignore[attr-defined]  # MXNet's name of the np-mode Symbol class


def _binary(fname: str, reflected: bool = False) -> Any:
    fn = getattr(np, fname)

    def op(self: NpSymbol, other: Any) -> Any:
        return fn(other, self) if reflected else fn(self, other)
    op.__name__ = f"__{'r' if reflected else ''}{fname}__"
    return op


for _py, _f in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                ("mod", "mod"), ("pow", "power"), ("matmul", "matmul")]:
    setattr(NpSymbol, f"__{_py}__", _binary(_f))
    setattr(NpSymbol, f"__r{_py}__", _binary(_f, reflected=True))
for _py, _f in [("eq", "equal"), ("ne", "not_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                ("lt", "less"), ("le", "less_equal")]:
    setattr(NpSymbol, f"__{_py}__", _binary(_f))
NpSymbol.__hash__ = Symbol.__hash__  # type: ignore[assignment]
NpSymbol.__neg__ = lambda self: np.negative(self)  # type: ignore[attr-defined,assignment]
NpSymbol.__abs__ = lambda self: np.absolute(self)  # type: ignore[attr-defined,assignment]


def _method(fname: str, space: Any = None) -> Any:
    fn = getattr(space or np, fname)

    def method(self: NpSymbol, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = fname
    return method


for _m in ("dot sum mean max min prod std var argmax argmin clip squeeze swapaxes repeat take cumsum sort "
           "argsort all any").split():
    setattr(NpSymbol, _m, _method(_m))


def _reshape(self: NpSymbol, *shape: Any, **kwargs: Any) -> Any:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return np.reshape(self, tuple(shape), **kwargs)  # type: ignore[attr-defined]


def _transpose(self: NpSymbol, *axes: Any) -> Any:
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0] or ()
    return np.transpose(self, tuple(axes) if axes else None)  # type: ignore[attr-defined]


def _astype(self: NpSymbol, dtype: Any, copy: bool = True) -> Any:
    return _call("_npi_cast", (self,), {"dtype": dtype})


NpSymbol.reshape = _reshape  # type: ignore[assignment]
NpSymbol.transpose = _transpose  # type: ignore[assignment]
NpSymbol.astype = _astype  # type: ignore[assignment]
NpSymbol.flatten = lambda self, order="C": np.reshape(self, (-1,))  # type: ignore[attr-defined,assignment]


def _sym_as_np_ndarray(self: Symbol) -> NpSymbol:
    """``Symbol.as_np_ndarray``: the same graph outputs as an NpSymbol (MXNet's ``mx.sym.np._Symbol``),
    whose operators and indexing are the NumPy interface's (a new handle; ``self`` stays classic)."""
    return as_np_symbol(Symbol(self._entries))  # type: ignore[no-any-return]


Symbol.as_np_ndarray = _sym_as_np_ndarray  # type: ignore[assignment]
