"""MXNet's NumPy-semantics switches, per thread (the ground ``ops`` and the front-ends read).

MXNet 1.9.1 keeps two per-thread switches: *NumPy shape semantics* (``np_shape``: a 0 in a
shape is a zero-size dimension and -1 is unknown, instead of 0 meaning unknown, written into
exported JSON) and the *NumPy array front-end* (``np_array``: Gluon makes ``mx.np.ndarray``s);
a third, *NumPy default dtype*, makes ``mx.np`` creation functions default to float64.
``mx.util`` (``util.py``) and ``mx.npx`` hand these names on.
"""
from __future__ import annotations

import functools
import inspect
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


def is_np_array() -> bool:
    """Whether the ``mx.np`` array front-end is on in this thread (arrays made by Gluon
    parameters and blocks are then ``mx.np.ndarray``)."""
    return _state.np_array


def set_np_array(active: bool) -> bool:
    """Switch the ``mx.np`` array front-end for this thread; returns the previous state."""
    prev, _state.np_array = _state.np_array, bool(active)
    return prev


def np_array(active: bool = True) -> _Scope:
    """``with np_array(True): ...`` -- the ``mx.np`` array front-end inside the block."""
    return _Scope(set_np_array, active)


def _wrap_class(cls: type, wrap: Callable[[Callable], Callable]) -> type:
    """MXNet's class form of ``use_np_*``: every function, method and property the class has
    (inherited ones included, as ``inspect.getmembers`` finds them) runs inside the scope."""
    for name, member in inspect.getmembers(
            cls, predicate=lambda f: inspect.isfunction(f) or inspect.ismethod(f) or isinstance(f, property)):
        if isinstance(member, property):
            setattr(cls, name, property(wrap(member.__get__), member.__set__, member.__delattr__, member.__doc__))
        else:
            setattr(cls, name, wrap(member))
    return cls


def _decorator(func: Any, scope: Callable[[], _Scope], what: str) -> Any:
    if inspect.isclass(func):
        return _wrap_class(func, lambda f: _decorator(f, scope, what))
    if not callable(func):
        raise TypeError(f"{what}: expected a function or class, got {type(func).__name__}")
    return scope()(func)


def use_np_shape(func: Any) -> Any:
    """Decorator: ``func`` (or every method of a class) runs with NumPy shape semantics."""
    return _decorator(func, lambda: np_shape(True), "use_np_shape")


def use_np_array(func: Any) -> Any:
    """Decorator: ``func`` (or every method of a class) runs with the ``mx.np`` array front-end:
    Gluon parameters and the arrays blocks create are ``mx.np.ndarray``s (MXNet 1.9.1's)."""
    return _decorator(func, lambda: np_array(True), "use_np_array")


def use_np(func: Any) -> Any:
    """MXNet's ``use_np`` = ``use_np_shape(use_np_array(func))``."""
    return use_np_shape(use_np_array(func))


def set_np(shape: bool = True, array: bool = True, dtype: bool = False) -> None:
    """MXNet's ``npx.set_np``: NumPy shape semantics and the ``mx.np`` array front-end on in this
    thread; ``dtype=True`` (MXNet 2's keyword) also makes float64 the default dtype, as NumPy's.
    The array front-end needs shape semantics: ``set_np(shape=False, array=True)`` raises
    ValueError, as in MXNet."""
    if not shape and array:
        raise ValueError("set_np(shape=False, array=True): NumPy shape semantics are required by the "
                         "NumPy array semantics; use set_np(shape=True, array=True) or set_np(array=False)")
    set_np_shape(shape)
    set_np_array(array)
    set_np_default_dtype(dtype)


def reset_np() -> None:
    """Back to MXNet 1.x semantics (legacy shapes, mx.nd, float32 default)."""
    set_np(shape=False, array=False, dtype=False)


def set_np_default_dtype(is_np_default_dtype: bool = True) -> bool:
    """Switch NumPy's float64 default dtype (``mx.np`` creation functions) for this thread;
    returns the previous state."""
    prev, _state.np_default_dtype = _state.np_default_dtype, bool(is_np_default_dtype)
    return prev


def is_np_default_dtype() -> bool:
    """Whether ``mx.np`` creation functions default to float64 (NumPy) rather than float32."""
    return _state.np_default_dtype
