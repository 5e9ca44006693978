"""``mx.numpy_dispatch_protocol``: official NumPy functions and ufuncs called on ``mx.np.ndarray``
arguments dispatch to ``mx.np`` (NumPy's ``__array_function__`` / ``__array_ufunc__`` protocols,
NEP 18 / NEP 13), as in MXNet 1.9.1.

``_NUMPY_ARRAY_FUNCTION_LIST`` / ``_NUMPY_ARRAY_UFUNC_LIST`` are MXNet 1.9.1's lists (the names
``mx.np`` implements for official NumPy), less the few the running NumPy no longer defines
(``product``, ``round_``, ``sometrue`` were removed in NumPy 2). Importing this module (the face
does) fills ``multiarray``'s dispatch tables; ``mx.np.ndarray.__array_function__`` and
``__array_ufunc__`` read them. Official NumPy functions outside the tables run on the arrays'
values (MXNet's fallback: results come back as ``mx.np.ndarray``, no gradient; refused while
autograd records).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional

import numpy as _onp

from . import numpy as _mx_np
from .numpy.multiarray import _NUMPY_ARRAY_FUNCTION_DICT, _NUMPY_ARRAY_UFUNC_DICT

__all__ = ["with_array_function_protocol", "with_array_ufunc_protocol",
           "_NUMPY_ARRAY_FUNCTION_LIST", "_NUMPY_ARRAY_UFUNC_LIST"]

# MXNet 1.9.1's lists, in its order.
_MXNET_ARRAY_FUNCTIONS = (
    "all any sometrue argmin argmax around round round_ argsort sort append broadcast_arrays broadcast_to clip "
    "concatenate copy cumsum diag diagonal diagflat dot expand_dims fix flip flipud fliplr inner insert max amax "
    "mean min amin nonzero ones_like atleast_1d atleast_2d atleast_3d prod product ravel repeat reshape roll split "
    "array_split hsplit vsplit dsplit squeeze stack std sum swapaxes take tensordot tile transpose unique "
    "unravel_index diag_indices_from delete var vdot vstack column_stack hstack dstack zeros_like linalg.norm "
    "linalg.cholesky linalg.inv linalg.solve linalg.tensorinv linalg.tensorsolve linalg.pinv linalg.eigvals "
    "linalg.eig linalg.eigvalsh linalg.eigh shape trace tril meshgrid outer einsum polyval shares_memory "
    "may_share_memory quantile percentile diff ediff1d resize where full_like bincount empty_like nan_to_num "
    "isnan isfinite isposinf isneginf isinf pad").split()

_MXNET_ARRAY_UFUNCS = (
    "abs fabs add arctan2 copysign degrees hypot lcm subtract multiply true_divide negative power mod matmul "
    "absolute rint sign exp log log2 log10 expm1 sqrt square cbrt reciprocal invert bitwise_not remainder sin cos "
    "tan sinh cosh tanh arcsin arccos arctan arcsinh arccosh arctanh maximum minimum ceil trunc floor bitwise_and "
    "bitwise_xor bitwise_or logical_not equal not_equal less less_equal greater greater_equal").split()


def _lookup(root: Any, dotted: str) -> Optional[Any]:
    obj = root
    for part in dotted.split("."):
        obj = obj.__dict__.get(part) if isinstance(obj, type(_onp)) else getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _defined(name: str) -> bool:
    return _lookup(_onp, name) is not None and callable(_lookup(_mx_np, name))


_NUMPY_ARRAY_FUNCTION_LIST: List[str] = [n for n in _MXNET_ARRAY_FUNCTIONS if _defined(n)]
_NUMPY_ARRAY_UFUNC_LIST: List[str] = [n for n in _MXNET_ARRAY_UFUNCS if _defined(n)]


def with_array_function_protocol(func: Callable[..., Any]) -> Callable[..., Any]:
    """MXNet's test decorator: runs ``func`` (NumPy >= 1.17 always has the protocol); a failure
    is re-raised as RuntimeError naming the function, as MXNet's does."""
    @functools.wraps(func)
    def _run(*args: Any, **kwargs: Any) -> None:
        try:
            func(*args, **kwargs)
        except Exception as e:
            raise RuntimeError(f"Running function {func.__name__} with NumPy array function protocol failed "
                               f"with exception {e}") from e
    return _run


def with_array_ufunc_protocol(func: Callable[..., Any]) -> Callable[..., Any]:
    """MXNet's test decorator for the ufunc protocol (see :func:`with_array_function_protocol`)."""
    @functools.wraps(func)
    def _run(*args: Any, **kwargs: Any) -> None:
        try:
            func(*args, **kwargs)
        except Exception as e:
            raise RuntimeError(f"Running function {func.__name__} with NumPy array ufunc protocol failed "
                               f"with exception {e}") from e
    return _run


def _register_array_function() -> Dict[Any, Callable[..., Any]]:
    """Fill ``{official NumPy function: its mx.np implementation}`` (idempotent) and return it."""
    for name in _NUMPY_ARRAY_FUNCTION_LIST:
        _NUMPY_ARRAY_FUNCTION_DICT[_lookup(_onp, name)] = _lookup(_mx_np, name)
    return _NUMPY_ARRAY_FUNCTION_DICT


def _register_array_ufunc() -> Dict[str, Callable[..., Any]]:
    """Fill ``{official NumPy ufunc name: its mx.np implementation}`` (idempotent) and return it."""
    for name in _NUMPY_ARRAY_UFUNC_LIST:
        _NUMPY_ARRAY_UFUNC_DICT[name] = _lookup(_mx_np, name)
    return _NUMPY_ARRAY_UFUNC_DICT


_register_array_function()
_register_array_ufunc()
