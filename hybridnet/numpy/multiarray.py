"""``mx.np.ndarray``: MXNet 1.9.1's NumPy-semantics array, a subclass of NDArray.

An ``ndarray`` is an NDArray (same ``_t`` torch tensor, same autograd, same context) whose
operators, indexing and printing follow NumPy as MXNet's NumPy interface does: zero-dim arrays
(``a[0]`` of a 1-D array has shape ``()``), ``array([1., 2.])`` repr, ``@``, and results that
are ``ndarray`` again. ``as_nd_ndarray``/``NDArray.as_np_ndarray`` change the class of a new
wrapper over the same tensor, never copy. Every computation is an operator of the registry
(``ops/numpy_ops.py``) run through ``np_invoke``; this module holds no kernels.
"""
from __future__ import annotations

import numbers
import warnings
from typing import Any, Callable, Optional, Sequence

import numpy as _onp
import torch

from .. import autograd_engine as _engine
from ..autograd_engine import is_recording
from ..base import MXNetError, dtype_torch
from ..context import Context
from ..np_semantics import is_np_default_dtype
from ..ops import registry as _reg
from ..ndarray import ndarray as _ndm
from ..ndarray.ndarray import NDArray, invoke

__all__ = ["ndarray", "np_invoke", "as_np", "np_view", "array", "default_float"]


def default_float() -> str:
    """The float dtype ``mx.np`` creation functions default to: float32, or float64 after
    ``npx.set_np(dtype=True)`` (NumPy's default)."""
    return "float64" if is_np_default_dtype() else "float32"


def as_np(x: Any) -> Any:
    """``x`` as ``mx.np.ndarray`` (the same object for a plain NDArray: its class changes; lists
    and tuples element-wise; anything else, Symbols included, unchanged)."""
    c = x.__class__
    if c is NDArray:
        x.__class__ = ndarray
        return x
    if c is list or c is tuple:
        return c(as_np(v) for v in x)
    return x


def _to_array(x: Any) -> Any:
    """A generated ``mx.np`` function's input: arrays and Symbols pass, NumPy data and Python
    sequences become ``mx.np.ndarray`` (NumPy's array_like)."""
    if x is None or isinstance(x, NDArray) or hasattr(x, "_entries"):
        return x
    if isinstance(x, (_onp.ndarray, list, tuple, numbers.Number, _onp.generic)):
        return array(x)
    return x


def np_invoke(op: _reg.OpDef, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
              hint: Any = None, attr: Any = None) -> Any:
    """The dispatch of every generated ``mx.np``/``mx.npx`` function: ``ndarray.invoke`` (or the
    Symbol front-end for Symbol inputs), results as ``mx.np.ndarray``."""
    for x in inputs:
        c = x.__class__
        if c is not ndarray and c is not NDArray and x is not None and not isinstance(x, NDArray) \
                and not hasattr(x, "_entries"):
            inputs = [_to_array(v) for v in inputs]
            break
    res = invoke(op, inputs, attrs, out, name, hint, attr)
    if res.__class__ is NDArray:  # the common case: one fresh array
        res.__class__ = ndarray
        return res
    return as_np(res)



# NumPy's dispatch protocols (filled by hybridnet.numpy_dispatch_protocol, MXNet's lists):
# {official NumPy function: mx.np function} for __array_function__, {ufunc name: mx.np function}
# for __array_ufunc__.
_NUMPY_ARRAY_FUNCTION_DICT: dict = {}
_NUMPY_ARRAY_UFUNC_DICT: dict = {}


def _as_onp_args(obj: Any) -> tuple:
    """``obj`` with every ``mx.np.ndarray`` (also inside lists/tuples) as official NumPy, and the
    context of the first array found (None if none)."""
    if isinstance(obj, NDArray):
        return obj.asnumpy(), obj.context
    if isinstance(obj, (list, tuple)):
        ctx, items = None, []
        for v in obj:
            v, c = _as_onp_args(v)
            items.append(v)
            ctx = ctx or c
        return obj.__class__(items), ctx
    return obj, None


def _as_mx_np_result(obj: Any, ctx: Optional[Context]) -> Any:
    """An official NumPy result as ``mx.np``: arrays (and NumPy bools) become ``mx.np.ndarray`` on
    ``ctx``, lists/tuples element-wise, Python and NumPy numbers and anything else unchanged."""
    if isinstance(obj, _onp.ndarray):
        return as_np(_ndm.array(_onp.ascontiguousarray(obj), ctx=ctx, dtype=obj.dtype))
    if isinstance(obj, _onp.bool_):
        return as_np(_ndm.array(_onp.asarray(obj), ctx=ctx, dtype=_onp.bool_))
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return obj.__class__(_as_mx_np_result(v, ctx) for v in obj)
    return obj


def _official_numpy(func: Callable, what: str, args: Any, kwargs: dict) -> Any:
    """MXNet's fallback for official NumPy functions it has no ``mx.np`` version of: run ``func``
    on the arrays' values, results back as ``mx.np.ndarray`` (no gradient)."""
    if is_recording():
        raise ValueError(f"Falling back to NumPy operator {what} with autograd active is not supported. "
                         "Please consider moving the operator to the outside of the autograd scope.")
    new_args, ctx = _as_onp_args(args)
    new_kwargs = {}
    for k, v in kwargs.items():
        new_kwargs[k], c = _as_onp_args(v)
        ctx = ctx or c
    return _as_mx_np_result(func(*new_args, **new_kwargs), ctx)

def array(obj: Any, dtype: Any = None, ctx: Optional[Context] = None, copy: bool = True) -> "ndarray":
    """``mx.np.array``: a new array from ``obj``. As in MXNet 1.9.1, NumPy arrays and
    ``mx.np.ndarray``s keep their dtype, anything else (nested lists, scalars) defaults to float32
    (float64 after ``npx.set_np(dtype=True)``); a legacy ``mx.nd.NDArray`` is refused (use its
    zero-copy ``as_np_ndarray()``)."""
    if isinstance(obj, NDArray) and not isinstance(obj, ndarray):
        raise ValueError("If you're trying to create a mxnet.numpy.ndarray from mx.nd.NDArray, please use the "
                         "zero-copy as_np_ndarray function.")
    if isinstance(obj, ndarray):
        return as_np(_ndm.array(obj, ctx=ctx if ctx is not None else obj.context, dtype=dtype or obj.dtype))
    if dtype is None:
        dtype = obj.dtype if hasattr(obj, "dtype") else default_float()
    try:
        try:
            src = _onp.array(obj, dtype=dtype)
        except OverflowError:  # NumPy 2 refuses out-of-range Python ints; MXNet's NumPy 1 wrapped them
            src = _onp.array(obj).astype(dtype)
    except (TypeError, ValueError) as e:
        raise TypeError(f"mx.np.array: cannot make an array of {dtype} from {obj!r:.60}: {e}") from None
    return as_np(_ndm.array(src, ctx=ctx, dtype=src.dtype))


class ndarray(NDArray):
    """An array with NumPy semantics (MXNet 1.9.1's ``mxnet.numpy.ndarray``) over a torch tensor."""

    __slots__ = ()
    _numpy_indexing = True
    __hash__ = NDArray.__hash__

    # -- NumPy's dispatch protocols (NEP 13, NEP 18) -------------------------------------------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Official NumPy ufuncs on ``mx.np`` arrays (``onp.add(a, b)``, ``onp_array * a``) run
        the ``mx.np`` function of the same name (MXNet 1.9.1's list,
        ``mx.numpy_dispatch_protocol``); other ufuncs run on the values (MXNet's fallback)."""
        if method != "__call__":
            return NotImplemented
        if "out" in kwargs:
            out = kwargs["out"]
            if isinstance(out, tuple):
                if len(out) != 1:
                    raise ValueError("The `out` parameter must have exactly one ndarray")
                kwargs["out"] = out[0]
        fn = _NUMPY_ARRAY_UFUNC_DICT.get(ufunc.__name__)
        if fn is None:
            return _official_numpy(ufunc, ufunc.__name__, inputs, kwargs)
        return fn(*inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """Official NumPy functions on ``mx.np`` arrays (``onp.sum(a)``, ``onp.concatenate``) run
        their ``mx.np`` version where MXNet 1.9.1 lists one (``mx.numpy_dispatch_protocol``);
        others run on the values and give ``mx.np`` arrays back (MXNet's fallback)."""
        fn = _NUMPY_ARRAY_FUNCTION_DICT.get(func)
        if fn is None:
            return _official_numpy(func, getattr(func, "__name__", repr(func)), args, kwargs)
        if not all(issubclass(t, ndarray) for t in types):
            return NotImplemented
        return fn(*args, **kwargs)

    # -- conversions ------------------------------------------------------------------------
    def as_nd_ndarray(self) -> NDArray:
        """The same data as a legacy ``mx.nd.NDArray`` (no copy; gradients flow through)."""
        r = NDArray(self._t)
        ctx = getattr(self, "_cpuctx", None)
        if ctx is not None:
            r._cpuctx = ctx
        return r

    def as_np_ndarray(self) -> "ndarray":
        return self

    def __repr__(self) -> str:
        """NumPy's repr, MXNet's way: no dtype for float32 (and bool), always one for the rest;
        ``ctx=`` for arrays off the CPU."""
        text = repr(self.asnumpy())
        dt = self.dtype
        if "dtype=" in text:
            if dt == _onp.float32:
                text = text[:text.rindex(",")] + ")"
        elif dt not in (_onp.float32, _onp.bool_):
            text = text[:-1] + f", dtype={_onp.dtype(dt).name})"
        ctx = self.context
        if ctx.device_type == "cpu":
            return text
        return text[:-1] + f", ctx={ctx})"

    def __str__(self) -> str:
        text = str(self.asnumpy())
        ctx = self.context
        return text if ctx.device_type == "cpu" else f"{text} @{ctx}"

    def __format__(self, spec: str) -> str:
        """NumPy's: a zero-dim array formats as its element; others only with an empty spec."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")
        return str(self)

    @property
    def dtype(self) -> Any:  # type: ignore[override]
        """The element type as a NumPy dtype (``np.dtype('float32')``), as MXNet's np arrays give."""
        return _onp.dtype(NDArray.dtype.fget(self))  # type: ignore[attr-defined]

    # -- properties ---------------------------------------------------------------------------
    @property
    def T(self) -> "ndarray":  # noqa: N802 - NumPy's name
        """The transpose (axes reversed)."""
        return self.transpose()

    @property
    def ctx(self) -> Context:
        return self.context

    @property
    def grad(self) -> Optional["ndarray"]:
        """The gradient buffer (``attach_grad``), as an ``mx.np.ndarray`` over the same memory."""
        g = NDArray.grad.fget(self)  # type: ignore[attr-defined]
        return np_view(g) if g is not None and g.__class__ is NDArray else g

    def attach_grad(self, grad_req: str = "write", stype: Optional[str] = None) -> None:
        """Attach a zero gradient buffer (an ``mx.np.ndarray``); see ``NDArray.attach_grad``.
        Integer and bool arrays take one too, as in MXNet 1.9.1: their gradient flows through
        the engine's float64 twin and is cast into the buffer. ``grad_req='null'`` keeps no
        buffer (``x.grad`` is None, as MXNet 1.9.1)."""
        if grad_req == "null" and stype in (None, "default"):
            self._mark(None, "null")  # type: ignore[arg-type]
            return
        super().attach_grad(grad_req, stype)
        g = getattr(self, "_grad", None)
        if g is not None and g.__class__ is NDArray:
            g.__class__ = ndarray

    # -- indexing -----------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> "ndarray":
        """NumPy indexing: an integer index removes its axis (``a[0]`` of a 1-D array is a zero-dim
        array), slices give views, index arrays and boolean masks give copies."""
        t = self._t
        if _ndm._nograd_needed(t):
            with torch.no_grad():
                r = self._np_getitem(t.detach(), key)
        else:
            r = self._np_getitem(t, key)
        if _engine.int_variables and _engine.is_recording():
            tw = _engine.twin_of(t)
            if tw is not None:  # an integer array with a gradient: index its float64 twin too
                rt = r._t if r is not self else None
                if rt is not None:
                    setattr(rt, _engine.TWIN, self._np_getitem(tw, key)._t)
        return r

    def _np_getitem(self, t: torch.Tensor, key: Any) -> "ndarray":
        if key.__class__ is tuple and len(key) == 0:
            return self
        if t.dim() == 0 and key is not Ellipsis and key is not None:
            raise IndexError("too many indices for array: array is 0-dimensional, but 1 were indexed")
        idx, flips, basic = _ndm._convert_key(key, t, numpy=True)
        src = t.flip(flips) if flips else t
        try:
            res = src[idx]
        except IndexError as e:
            raise IndexError(f"{e} (indexing an array of shape {self.shape} with {key!r:.80})") from None
        except RuntimeError as e:
            raise IndexError(f"cannot index an array of shape {self.shape} with {key!r:.80}: {e}") from None
        if basic and not flips:
            r = ndarray(res)
            r._view = True
            return r
        if res._is_view() or res is t:
            res = res.clone()
        return ndarray(res)

    # -- methods (NumPy's names) ---------------------------------------------------------------
    def reshape(self, *args: Any, **kwargs: Any) -> "ndarray":  # type: ignore[override]
        """NumPy's ``reshape(shape)`` or ``reshape(*shape)`` (``order='C'`` only)."""
        order = kwargs.pop("order", "C")
        if "newshape" in kwargs:
            args = (kwargs.pop("newshape"),)
        if "shape" in kwargs:
            args = (kwargs.pop("shape"),)
        if kwargs:
            raise TypeError(f"reshape: unexpected keyword arguments {sorted(kwargs)}")
        if len(args) == 1 and isinstance(args[0], (tuple, list)):
            shape = tuple(args[0])
        else:
            shape = tuple(args)
        return np_invoke(_reg.get("_np_reshape"), (self,), {"newshape": shape, "order": order})

    def reshape_view(self, *shape: Any, **kwargs: Any) -> "ndarray":
        """A reshaped view sharing this array's memory (MXNet's ``reshape_view``)."""
        return as_np(NDArray.reshape(self.as_nd_ndarray(), *shape, **kwargs))

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,  # type: ignore[override]
               copy: bool = True) -> "ndarray":
        """A copy in ``dtype`` (the array itself when it already has it and ``copy=False``)."""
        if dtype is None:
            dtype = default_float()
        return as_np(NDArray.astype(self, dtype, copy=copy))

    def copy(self, order: str = "C") -> "ndarray":  # type: ignore[override]
        if order != "C":
            raise NotImplementedError(f"copy: order={order!r} is not supported (only 'C'), as in MXNet")
        return as_np(NDArray.copy(self))

    def copyto(self, other: Any) -> Any:
        return as_np(NDArray.copyto(self, other))

    def as_in_context(self, context: Context) -> "ndarray":
        return as_np(NDArray.as_in_context(self, context))

    def as_in_ctx(self, ctx: Context) -> "ndarray":
        return self.as_in_context(ctx)

    def to_device(self, context: Context) -> "ndarray":
        return self.as_in_context(context)

    def detach(self) -> "ndarray":
        return as_np(NDArray.detach(self))

    def tostype(self, stype: str) -> "ndarray":
        if stype != "default":
            raise ValueError(f"mx.np.ndarray.tostype: only 'default' storage exists in NumPy mode, got {stype!r}")
        return self.copy()

    def flatten(self, order: str = "C") -> "ndarray":  # type: ignore[override]
        """A 1-D copy (NumPy's ``flatten``)."""
        return self.reshape(-1)

    def item(self, *args: Any) -> Any:
        """The element as a Python scalar (``args``: an index into the array)."""
        if args:
            return self[args if len(args) > 1 else args[0]].item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.asnumpy().item()

    def tolist(self) -> Any:
        return self.asnumpy().tolist()

    def nonzero(self) -> tuple:
        """NumPy's ``nonzero``: one int64 index array per axis."""
        idx = np_invoke(_reg.get("_npx_nonzero"), (self,), {})
        return tuple(idx[:, i] for i in range(max(self.ndim, 1)))

    def broadcast_like(self, other: Any) -> "ndarray":
        return self.broadcast_to(other.shape)

    def __array_namespace__(self, api_version: Any = None) -> Any:
        import sys
        return sys.modules[__name__.rsplit(".", 1)[0]]


def _disabled(name: str) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise AttributeError(f"mxnet.numpy.ndarray object has no attribute {name} (MXNet 1.9.1's NumPy arrays "
                             f"do not have this legacy NDArray method; use mx.np.{name}/mx.npx.{name} or "
                             f"x.as_nd_ndarray().{name}())")
    method.__name__ = name
    return method


# Legacy NDArray methods that MXNet 1.9.1's ``mx.np.ndarray`` has but refuses when called.
DISABLED_METHODS = (
    "abs arccos arccosh arcsin arcsinh arctan arctanh argmax_channel asscalar broadcast_axes cbrt ceil cos cosh "
    "degrees depth_to_space diag exp expand_dims expm1 fix flip floor log log10 log1p log2 log_softmax nanprod "
    "nansum norm one_hot ones_like pad pick radians rcbrt reciprocal relu reshape_like rint rsqrt shape_array "
    "sigmoid sign sin sinh size_array slice slice_axis slice_like softmax softmin space_to_depth split split_v2 "
    "sqrt square tan tanh tile topk trunc zeros_like").split()
for _n in DISABLED_METHODS:
    setattr(ndarray, _n, _disabled(_n))


def np_view(arr: NDArray) -> ndarray:
    """An ``mx.np.ndarray`` over ``arr``'s tensor that also reads ``arr``'s gradient buffer: how
    Gluon hands out its NDArray parameters (and their gradients) under ``npx.set_np()``."""
    r = _nd_as_np_ndarray(arr)
    g = getattr(arr, "_grad", None)
    if g is not None:
        r._grad = g
        r._grad_req = arr._grad_req
    return r


def _nd_as_np_ndarray(self: NDArray) -> ndarray:
    """``NDArray.as_np_ndarray``: the same data as an ``mx.np.ndarray`` (no copy)."""
    if self._t.layout is not torch.strided:
        raise MXNetError(f"as_np_ndarray: a {self.stype} array has no NumPy form; call .tostype('default') first")
    r = ndarray(self._t)
    ctx = getattr(self, "_cpuctx", None)
    if ctx is not None:
        r._cpuctx = ctx
    return r


def np_dtype(dtype: Any) -> Any:
    """A dtype argument as ``mx.np`` reads it (None: the default float)."""
    return default_float() if dtype is None else dtype


def torch_dtype(dtype: Any) -> torch.dtype:
    return dtype_torch(np_dtype(dtype))


# invoke takes its fast path for mx.np arrays too (always dense: as_np_ndarray refuses sparse ones)
_ndm._np_class = ndarray
