"""``mx.sym``: the symbolic front-end, generated from the same operator registry as ``mx.nd``."""
from __future__ import annotations

import sys
import types

from .. import ops as _ops  # noqa: F401
from ..ndarray import ndarray as _nd_mod
from ..ops import frontend as _frontend
from ..ops import registry as _reg
from . import symbol as _symbol_mod
from .symbol import Group, Symbol, Variable, fromjson, load, load_json, sym_invoke, var

_this = sys.modules[__name__]


def _submodule(name: str) -> types.ModuleType:
    full = f"{__name__}.{name}"
    mod = types.ModuleType(full, f"mx.sym.{name}: generated operator functions")
    sys.modules[full] = mod
    setattr(_this, name, mod)
    return mod


from . import contrib  # noqa: E402  (hand-written control flow; operators filled in below)

_spaces = {"": _this, "random": _submodule("random"), "linalg": _submodule("linalg"),
           "contrib": contrib, "image": _submodule("image"),
           "sparse": _submodule("sparse"), "_internal": _submodule("_internal")}
op = _submodule("op")
# sym.random.uniform & co. choose _random_* or _sample_* by parameter type, as nd.random does
from ..ndarray.random import Frontend as _RandomFrontend, make_functions as _random_functions  # noqa: E402

for _k, _f in _random_functions(_RandomFrontend(sym_invoke, lambda x: isinstance(x, Symbol), True)).items():
    setattr(_spaces["random"], _k, _f)
_FUNCS = _frontend.populate(_spaces, sym_invoke)
_spaces["contrib"].rand_zipfian = _frontend.make_rand_zipfian(_spaces["random"].uniform)  # type: ignore[attr-defined]
_frontend.fill_op_module(op, _FUNCS)
_symbol_mod._FN.update(_FUNCS)
_symbol_mod._install_operators()
for _m in _frontend.OPERATOR_METHODS:
    if _m in _FUNCS and not hasattr(Symbol, _m):
        setattr(Symbol, _m, _frontend.method_from(_FUNCS[_m], _m))

# NDArray operators hand Symbol inputs to the symbolic front-end.
_nd_mod.symbolic_dispatch = sym_invoke
# mx.nd.CachedOp runs a Symbol on NDArrays; it lives here, above the compiler it uses.
from .cached_op import CachedOp  # noqa: E402
sys.modules["hybridnet.ndarray"].CachedOp = CachedOp  # type: ignore[attr-defined]


def _make(opname: str):  # type: ignore[no-untyped-def]
    o = _reg.get(opname)
    if "scalar" in o.attrs:
        return lambda data, scalar: sym_invoke(o, (data,), {"scalar": scalar})
    return lambda lhs, rhs: sym_invoke(o, (lhs, rhs), {})


_mixed_ops = {n: _make(n) for n in {x for t in _frontend.MIXED.values() for x in t}}
for _fname in _frontend.MIXED:
    setattr(_this, _fname, _frontend.make_mixed(_fname, _mixed_ops, lambda x: isinstance(x, Symbol)))


def _creation(opname: str, doc: str):  # type: ignore[no-untyped-def]
    o = _reg.get(opname)

    def fn(shape=None, dtype=None, name=None, attr=None, **kwargs):  # type: ignore[no-untyped-def]
        attrs = dict(kwargs)
        if shape is not None:
            attrs["shape"] = shape
        if dtype is not None:
            attrs["dtype"] = dtype
        return sym_invoke(o, (), attrs, name=name, attr=attr)
    fn.__doc__ = doc
    return fn


zeros = _creation("_zeros", "sym.zeros(shape, dtype=None, **kwargs): a _zeros node.")
ones = _creation("_ones", "sym.ones(shape, dtype=None, **kwargs): a _ones node.")


def full(shape, val, dtype=None, name=None, attr=None, **kwargs):  # type: ignore[no-untyped-def]
    attrs = {"shape": shape, "value": val, **kwargs}
    if dtype is not None:
        attrs["dtype"] = dtype
    return sym_invoke(_reg.get("_full"), (), attrs, name=name, attr=attr)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):  # type: ignore[no-untyped-def]
    attrs = {"start": start, "stop": stop, "step": step, "repeat": repeat}
    if infer_range:
        attrs["infer_range"] = True
    if dtype is not None:
        attrs["dtype"] = dtype
    return sym_invoke(_reg.get("_arange"), (), attrs, name=name)


def eye(N, M=0, k=0, dtype=None, name=None, **kwargs):  # type: ignore[no-untyped-def]
    attrs = {"N": N, "M": M, "k": k}
    if dtype is not None:
        attrs["dtype"] = dtype
    return sym_invoke(_reg.get("_eye"), (), attrs, name=name)


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):  # type: ignore[no-untyped-def]
    attrs = {"start": start, "stop": stop, "num": num, "endpoint": endpoint}
    if dtype is not None:
        attrs["dtype"] = dtype
    return sym_invoke(_reg.get("_linspace"), (), attrs, name=name)


def pow(base, exp):  # type: ignore[no-untyped-def]  # noqa: A001
    return power(base, exp)  # noqa: F821


def _executor():  # type: ignore[no-untyped-def]
    from . import executor
    return executor

split_v2 = _frontend.make_split_v2(_FUNCS["_split_v2"])
histogram = _frontend.make_histogram(_FUNCS["_histogram"], lambda x: isinstance(x, Symbol))
Symbol.split_v2 = lambda self, *a, **k: split_v2(self, *a, **k)  # type: ignore[attr-defined]
