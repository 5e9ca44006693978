"""``mx.np``: MXNet 1.9.1's NumPy-compatible array interface.

``from mxnet import np, npx; npx.set_np()`` then NumPy-style code: ``np.ones((2, 3))``,
``a @ b``, ``np.sum(a, axis=1)``, ``np.random.uniform(size=(2,))``, ``np.linalg.norm(a)``.
The array class is ``multiarray.ndarray`` (a subclass of NDArray over the same torch storage);
the functions are generated from the NumPy-interface operators of the registry
(``ops/numpy_ops.py``, placed by ``_frontend.placement``) plus MXNet's thin front-end functions
(``_frontend.Frontend``) and its NumPy fallbacks (``fallback.py``).
"""
from __future__ import annotations

import builtins as _builtins
import sys
import types
from typing import Any, Callable

import numpy as _onp
import torch as _torch

from .. import random as _mx_random
from ..ndarray import ndarray as _ndm
from ..ndarray.ndarray import NDArray
from . import _frontend, fallback
from . import multiarray
from .multiarray import array, as_np, ndarray, np_invoke

_this = sys.modules[__name__]


def _submodule(name: str, doc: str) -> types.ModuleType:
    full = f"{__name__}.{name}"
    mod = sys.modules.get(full)
    if mod is None:
        mod = types.ModuleType(full, doc)
        sys.modules[full] = mod
    setattr(_this, name, mod)
    return mod


random = _submodule("random", "mx.np.random: NumPy's random sampling over the registry's _npi_* operators")
linalg = _submodule("linalg", "mx.np.linalg: NumPy's linear algebra over the registry's _npi_* operators")
_internal = _submodule("_internal", "mx.np._internal (MXNet's _npi): every NumPy-interface operator by name")


def _is_np_array(x: Any) -> bool:
    return isinstance(x, NDArray)


_GENERATED = _frontend.generate(np_invoke)
_FRONT = _frontend.Frontend(np_invoke, _is_np_array, array, eager=True, array_class=ndarray)
_FUNCS = _FRONT.functions()
_FALLBACK, _FALLBACK_LINALG = fallback.functions(array, _is_np_array)


def _fill(mod: types.ModuleType, *tables: dict) -> None:
    """Earlier tables win: front-end functions over generated ones over fallbacks."""
    for table in tables:
        for name, fn in table.items():
            if not hasattr(mod, name):
                setattr(mod, name, fn)


_fill(_this, _FUNCS[""], _GENERATED[""], _FALLBACK)
_fill(random, _FUNCS["random"], _GENERATED["random"])
_fill(linalg, _FUNCS["linalg"], _GENERATED["linalg"], _FALLBACK_LINALG)
_fill(_internal, _GENERATED["_internal"])


random.seed = _mx_random.seed  # type: ignore[attr-defined]  # one seed for every generator
fallback_linalg = _submodule("fallback_linalg", "mx.np.fallback_linalg: np.linalg functions official NumPy computes")
_fill(fallback_linalg, _FALLBACK_LINALG)
linalg.fallback_linalg = fallback_linalg  # type: ignore[attr-defined]


def shares_memory(a: Any, b: Any, max_work: Any = None) -> ndarray:
    """NumPy's ``shares_memory`` as MXNet 1.9.1 answers it (a bool array, its
    ``_npi_share_memory``): whether two arrays' memory ranges overlap. MXNet's basic indexing
    copies a slice that is not one contiguous block, so a non-contiguous view shares nothing here
    either (``x[2:5, 0]`` and ``x[3:4, 0]`` do not share; ``x[0, 2:5]`` and ``x[0, 3:4]`` do)."""
    ta, tb = a._t, b._t
    if ta.device != tb.device or ta.numel() == 0 or tb.numel() == 0 \
            or not ta.is_contiguous() or not tb.is_contiguous():
        return array(False, dtype="bool")
    sa, sb = ta.untyped_storage().data_ptr(), tb.untyped_storage().data_ptr()
    if sa != sb:
        return array(False, dtype="bool")

    def span(t: Any) -> tuple:
        lo = t.storage_offset()
        hi = lo + _builtins.sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if st > 0) + 1
        return lo * t.element_size(), hi * t.element_size()
    (a0, a1), (b0, b1) = span(ta), span(tb)
    return array(a0 < b1 and b0 < a1, dtype="bool")


may_share_memory = shares_memory

# -- dtypes and constants, as NumPy's names ---------------------------------------------------------
bool_ = _onp.bool_
bool = _onp.bool_  # noqa: A001 - MXNet exposes np.bool
int8, uint8, int32, int64 = _onp.int8, _onp.uint8, _onp.int32, _onp.int64
float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
pi, e, inf, nan = _onp.pi, _onp.e, _onp.inf, _onp.nan
NAN = NaN = _onp.nan
PINF, NINF = _onp.inf, -_onp.inf
PZERO, NZERO = 0.0, -0.0
newaxis = None
finfo = _onp.finfo
set_printoptions = _onp.set_printoptions
function_base = fallback  # MXNet's np.function_base/stride_tricks/utils/io are helper modules
stride_tricks = fallback
utils = fallback
io = fallback
arrayprint = fallback


def shape(a: Any) -> tuple:
    """NumPy's ``shape``."""
    return tuple(a.shape)


def genfromtxt(*args: Any, **kwargs: Any) -> ndarray:
    """NumPy's ``genfromtxt`` into an ``mx.np.ndarray``."""
    return array(_onp.genfromtxt(*args, **kwargs))


# -- the array's methods and operators ----------------------------------------------------------------
def _binop(fname: str, reflected: bool = False) -> Callable:
    fn = getattr(_this, fname)

    def op(self: ndarray, other: Any) -> Any:
        if other.__class__ is ndarray:  # the hot path
            return fn(other, self) if reflected else fn(self, other)
        if other.__class__ is NDArray:
            # MXNet 1.9.1 raises TypeError here; hybridnet reads the NDArray as an mx.np array (no
            # copy) so that Gluon's blocks written for F = nd (Swish, the losses) run on np inputs
            other = other.as_np_ndarray()
        if not isinstance(other, (ndarray, int, float, _onp.generic, _onp.ndarray, list, tuple)):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    op.__name__ = f"__{'r' if reflected else ''}{fname}__"
    return op


def _iop(fname: str) -> Callable:
    fn = _binop(fname)

    def op(self: ndarray, other: Any) -> Any:
        res = fn(self, other)
        if res is NotImplemented:
            return res
        dst = _ndm._inplace_check(self, "in-place operator")
        if tuple(res.shape) != tuple(dst.shape):
            raise ValueError(f"non-broadcastable output operand with shape {tuple(dst.shape)} doesn't match the "
                             f"broadcast shape {tuple(res.shape)}")
        if _ndm._mode().recording and (res._t.requires_grad or dst.requires_grad):
            dst.copy_(res._t)
        else:
            with _torch.no_grad():
                dst.copy_(res._t)
        return self
    return op


_OPS = [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"), ("mod", "mod"),
        ("pow", "power"), ("matmul", "matmul"), ("and", "bitwise_and"), ("or", "bitwise_or"),
        ("xor", "bitwise_xor")]
for _py, _f in _OPS:
    setattr(ndarray, f"__{_py}__", _binop(_f))
    setattr(ndarray, f"__r{_py}__", _binop(_f, reflected=True))
    setattr(ndarray, f"__i{_py}__", _iop(_f))
for _py, _f in [("eq", "equal"), ("ne", "not_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                ("lt", "less"), ("le", "less_equal")]:
    def _cmp(f: Callable, py: str) -> Callable:
        def op(self: ndarray, other: Any) -> Any:
            if other is None:
                return py == "ne"
            return f(self, other)
        return op
    setattr(ndarray, f"__{_py}__", _cmp(_binop(_f), _py))
ndarray.__neg__ = lambda self: _this.negative(self)  # type: ignore[attr-defined,assignment]
ndarray.__pos__ = lambda self: self.copy()  # type: ignore[assignment]
ndarray.__abs__ = lambda self: _this.absolute(self)  # type: ignore[attr-defined,assignment]
ndarray.__invert__ = lambda self: (_this.logical_not(self) if self.dtype == _onp.bool_  # type: ignore[assignment,attr-defined]
                                   else _this.invert(self))  # type: ignore[attr-defined]


def _method(fname: str) -> Callable:
    fn = getattr(_this, fname)

    def method(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = fname
    method.__doc__ = fn.__doc__
    return method


for _m in ("all any argmax argmin argsort clip cumsum dot max mean min prod repeat sort squeeze std sum "
           "swapaxes take var broadcast_to").split():
    setattr(ndarray, _m, _method(_m))


def _clip(self: ndarray, min: Any = None, max: Any = None, out: Any = None) -> ndarray:  # noqa: A002
    """MXNet's ``a.clip(min=None, max=None, out=None)`` (the method names its bounds min/max)."""
    return _this.clip(self, min, max, out=out)  # type: ignore[attr-defined,no-any-return]


ndarray.clip = _clip  # type: ignore[assignment]


def _round(self: ndarray, decimals: int = 0, out: Any = None) -> ndarray:
    return _this.around(self, decimals, out)  # type: ignore[attr-defined]


def _transpose(self: ndarray, *axes: Any) -> ndarray:
    """NumPy's ``a.transpose()``, ``a.transpose(1, 0)`` or ``a.transpose((1, 0))``."""
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0] or ()
    return _this.transpose(self, tuple(axes) if axes else None)  # type: ignore[attr-defined]


ndarray.round = _round  # type: ignore[assignment]
ndarray.transpose = _transpose  # type: ignore[assignment]
ndarray.__round__ = _round  # type: ignore[attr-defined]
# NDArray.as_np_ndarray is the one way from mx.nd to mx.np (set here: ndarray/ sits below numpy/)
NDArray.as_np_ndarray = multiarray._nd_as_np_ndarray  # type: ignore[assignment]

__all__ = sorted(n for n in dir(_this) if not n.startswith("_") and n not in ("sys", "types", "annotations"))
