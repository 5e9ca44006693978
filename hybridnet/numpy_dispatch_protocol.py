"""``mx.numpy_dispatch_protocol``: which official NumPy functions and ufuncs dispatch to
``mx.np`` when called on ``mx.np.ndarray`` arguments (NumPy's ``__array_function__`` /
``__array_ufunc__`` protocols, NEP 18 / NEP 13).

MXNet lists the names it supports and registers its implementations at import. Here the lists
are the names ``mx.np`` defines (computed, not hand-kept), and the registration functions are
idempotent; :func:`with_array_function_protocol` / :func:`with_array_ufunc_protocol` keep
MXNet's decorator signatures (the protocols are always on in NumPy >= 1.17).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List

import numpy as _onp

from . import numpy as _mx_np

__all__ = ["with_array_function_protocol", "with_array_ufunc_protocol",
           "_NUMPY_ARRAY_FUNCTION_LIST", "_NUMPY_ARRAY_UFUNC_LIST"]


def _names(kind: type) -> List[str]:
    return sorted(n for n in dir(_onp) if not n.startswith("_")
                  and isinstance(getattr(_onp, n, None), kind) and callable(getattr(_mx_np, n, None)))


_NUMPY_ARRAY_UFUNC_LIST: List[str] = _names(_onp.ufunc)
_NUMPY_ARRAY_FUNCTION_LIST: List[str] = sorted(
    n for n in dir(_onp) if not n.startswith("_") and n not in _NUMPY_ARRAY_UFUNC_LIST
    and callable(getattr(_onp, n, None)) and not isinstance(getattr(_onp, n), type)
    and callable(getattr(_mx_np, n, None)))


def with_array_function_protocol(func: Callable[..., Any]) -> Callable[..., Any]:
    """MXNet's test decorator: runs ``func`` (the protocol needs no switch here)."""
    @functools.wraps(func)
    def _run(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)
    return _run


def with_array_ufunc_protocol(func: Callable[..., Any]) -> Callable[..., Any]:
    """MXNet's test decorator: runs ``func`` (the protocol needs no switch here)."""
    return with_array_function_protocol(func)


def _register_array_function() -> Dict[str, Callable[..., Any]]:
    """``{official NumPy function name: its mx.np implementation}``."""
    return {n: getattr(_mx_np, n) for n in _NUMPY_ARRAY_FUNCTION_LIST}


def _register_array_ufunc() -> Dict[str, Callable[..., Any]]:
    """``{official NumPy ufunc name: its mx.np implementation}``."""
    return {n: getattr(_mx_np, n) for n in _NUMPY_ARRAY_UFUNC_LIST}
