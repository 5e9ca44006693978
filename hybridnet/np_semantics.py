"""MXNet's NumPy-semantics switches, per thread (the ground ``ops`` and the front-ends read).

MXNet 1.9.1 keeps two per-thread switches: *NumPy shape semantics* (``np_shape``: a 0 in a
shape is a zero-size dimension and -1 is unknown, instead of 0 meaning unknown) and the *NumPy
array front-end* (``np_array``: ``mx.np``). hybridnet implements the ``mx.nd`` front-end, so
``np_array`` can be queried and switched off but not on; ``np_shape`` is a real per-thread flag
(written into exported JSON as MXNet does). ``mx.util`` (``util.py``) hands these names on.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from .base import MXNetError

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array",
           "set_np_array", "np_array", "use_np_array", "use_np", "set_np", "reset_np",
           "set_np_default_dtype", "is_np_default_dtype"]


class _Switches(threading.local):
    np_shape: bool = False
    np_array: bool = False
    np_default_dtype: bool = False


_state = _Switches()


def is_np_shape() -> bool:
    """Whether NumPy shape semantics are on in this thread."""
    return _state.np_shape


def set_np_shape(active: bool) -> bool:
    """Switch NumPy shape semantics for this thread; returns the previous state."""
    prev, _state.np_shape = _state.np_shape, bool(active)
    return prev


class _Scope:
    """Context manager *and* decorator that sets a switch for its extent (MXNet's _NumpyShapeScope)."""

    def __init__(self, setter: Callable[[bool], bool], active: bool):
        self._setter, self._active = setter, active
        self._prev: Any = None

    def __enter__(self) -> "_Scope":
        self._prev = self._setter(self._active)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._setter(self._prev)

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _Scope(self._setter, self._active):
                return func(*args, **kwargs)
        return wrapper


def np_shape(active: bool = True) -> _Scope:
    """``with mx.np_shape(True): ...`` -- NumPy shape semantics inside the block."""
    return _Scope(set_np_shape, active)


def use_np_shape(func: Any) -> Any:
    """Decorator: ``func`` (or every method of a class) runs with NumPy shape semantics."""
    if isinstance(func, type):
        for name, attr in list(vars(func).items()):
            if callable(attr) and not name.startswith("__"):
                setattr(func, name, use_np_shape(attr))
        return func
    if not callable(func):
        raise TypeError(f"use_np_shape: expected a function or class, got {type(func).__name__}")
    return np_shape(True)(func)


def is_np_array() -> bool:
    """Whether the ``mx.np`` front-end is active (never, in hybridnet)."""
    return _state.np_array


def set_np_array(active: bool) -> bool:
    if active:
        raise MXNetError("hybridnet implements MXNet 1.x's mx.nd front-end; the mx.np array "
                         "front-end (set_np_array(True), use_np, npx.set_np) is not available. "
                         "Write the model with mx.nd / F.* operators instead.")
    prev, _state.np_array = _state.np_array, False
    return prev


def np_array(active: bool = True) -> _Scope:
    return _Scope(set_np_array, active)


def use_np_array(func: Any) -> Any:
    """Decorator: ``func`` would run with the mx.np front-end, which is not available; calling
    it raises MXNetError with the explanation (decorating does not, so modules still import)."""
    if isinstance(func, type):
        return func

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        set_np_array(True)  # raises with the explanation
        return func(*args, **kwargs)
    return wrapper


def use_np(func: Any) -> Any:
    """MXNet's ``use_np`` = use_np_shape + use_np_array; the array part is not available."""
    return use_np_array(use_np_shape(func))


def set_np(shape: bool = True, array: bool = True, dtype: bool = False) -> None:
    if array:
        set_np_array(True)
    set_np_shape(shape)


def reset_np() -> None:
    """Back to MXNet 1.x semantics (legacy shapes, mx.nd)."""
    set_np_shape(False)
    set_np_array(False)
    _state.np_default_dtype = False


def set_np_default_dtype(is_np_default_dtype: bool = True) -> bool:
    prev, _state.np_default_dtype = _state.np_default_dtype, bool(is_np_default_dtype)
    return prev


def is_np_default_dtype() -> bool:
    return _state.np_default_dtype
