"""MXNet's ``mxnet.util``: the NumPy-semantics switches and small helpers libraries import.

MXNet 1.9.1 keeps two per-thread switches: *NumPy shape semantics* (``np_shape``: a 0 in a
shape is a zero-size dimension and -1 is unknown, instead of 0 meaning unknown) and the *NumPy
array front-end* (``np_array``: ``mx.np``). hybridnet implements the ``mx.nd`` front-end, so
``np_array`` can be queried and switched off but not on; ``np_shape`` is a real per-thread flag
(written into exported JSON as MXNet does).
"""
from __future__ import annotations

import functools
import os
import threading
from typing import Any, Callable, Optional

from .base import MXNetError

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array",
           "set_np_array", "np_array", "use_np_array", "use_np", "set_np", "reset_np",
           "getenv", "setenv", "makedirs", "get_gpu_count", "get_gpu_memory", "wraps_safely",
           "set_module", "numpy_fallback", "default_array", "set_np_default_dtype",
           "is_np_default_dtype", "get_cuda_compute_capability", "dtype_from_number"]


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


def default_array(source_array: Any, ctx: Any = None, dtype: Any = None) -> Any:
    """``mx.nd.array`` (the NumPy front-end's counterpart is not available)."""
    from .ndarray import array
    return array(source_array, ctx=ctx, dtype=dtype)


def getenv(name: str) -> Optional[str]:
    """Environment variable as MXNet's C library sees it."""
    return os.environ.get(name)


def setenv(name: str, value: Optional[str]) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def makedirs(d: str) -> None:
    """``os.makedirs(d, exist_ok=True)`` (MXNet's py2/py3 shim)."""
    os.makedirs(os.path.expanduser(d), exist_ok=True)


def get_gpu_count() -> int:
    from .context import num_gpus
    return num_gpus()


def get_gpu_memory(gpu_dev_id: int) -> tuple:
    """(free, total) bytes of GPU ``gpu_dev_id``."""
    import torch
    if not torch.cuda.is_available() or gpu_dev_id >= torch.cuda.device_count():
        raise MXNetError(f"get_gpu_memory: no GPU {gpu_dev_id} on this machine "
                         f"({torch.cuda.device_count() if torch.cuda.is_available() else 0} present)")
    return torch.cuda.mem_get_info(gpu_dev_id)


def get_cuda_compute_capability(ctx: Any) -> int:
    from .test_utils import get_cuda_compute_capability as f
    return f(ctx)


def wraps_safely(wrapped: Callable, assigned: tuple = functools.WRAPPER_ASSIGNMENTS) -> Callable:
    """``functools.wraps`` that skips attributes ``wrapped`` lacks."""
    return functools.wraps(wrapped, [a for a in assigned if hasattr(wrapped, a)])


def set_module(module: str) -> Callable:
    """Decorator overriding ``__module__`` (used by MXNet for documentation)."""
    def deco(func: Any) -> Any:
        if module is not None:
            func.__module__ = module
        return func
    return deco


def numpy_fallback(func: Callable) -> Callable:
    """MXNet runs a NumPy implementation on NDArray inputs; arguments convert both ways."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from .ndarray import NDArray, array
        conv = [a.asnumpy() if isinstance(a, NDArray) else a for a in args]
        kw = {k: v.asnumpy() if isinstance(v, NDArray) else v for k, v in kwargs.items()}
        out = func(*conv, **kw)
        import numpy
        return array(out, dtype=out.dtype) if isinstance(out, numpy.ndarray) else out
    return wrapper


def dtype_from_number(number: Any) -> Any:
    """The NumPy dtype MXNet's NumPy front-end gives a Python/NumPy scalar."""
    import numpy
    if isinstance(number, bool):
        return numpy.bool_
    if isinstance(number, int):
        return numpy.int64
    if isinstance(number, float):
        return numpy.float64 if is_np_default_dtype() else numpy.float32
    if isinstance(number, numpy.generic):
        return number.dtype.type
    raise TypeError(f"dtype_from_number: {type(number).__name__} is not a number")
