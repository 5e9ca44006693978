"""MXNet's ``mxnet.util``: the NumPy-semantics switches and small helpers libraries import.

The switches themselves live in ``np_semantics`` (the ground layer: ``ops`` and the front-ends
read them); this module hands them on under MXNet's names, one per-thread state for both.
"""
from __future__ import annotations

import functools
import os
import threading
from typing import Any, Callable, Optional

from .base import MXNetError
from .context import Context
from .np_semantics import (is_np_array, is_np_default_dtype, is_np_shape, np_array, np_shape, reset_np,
                           set_np, set_np_array, set_np_default_dtype, set_np_shape, use_np, use_np_array,
                           use_np_shape)

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array",
           "set_np_array", "np_array", "use_np_array", "use_np", "set_np", "reset_np",
           "getenv", "setenv", "makedirs", "get_gpu_count", "get_gpu_memory", "wraps_safely",
           "set_module", "numpy_fallback", "default_array", "set_np_default_dtype",
           "is_np_default_dtype", "get_cuda_compute_capability", "dtype_from_number"]


class _NumpyArrayScope:
    """MXNet's scope object behind ``np_array(active)`` (``mxnet.util._NumpyArrayScope``), for
    code that builds one itself: ``with _NumpyArrayScope(True): ...`` switches the ``mx.np``
    array front-end for this thread and restores it on exit. ``_current`` is a per-thread slot
    whose ``value`` is the innermost scope entered in that thread, as in MXNet; the switch
    itself is ``np_semantics``'s, so ``mx.is_np_array()`` and ``np_array`` agree with it.
    """
    _current: Any = threading.local()

    def __init__(self, is_np_array: bool):  # pylint: disable=redefined-outer-name
        self._old_scope: Optional["_NumpyArrayScope"] = None
        self._is_np_array = bool(is_np_array)
        self._prev_switch = False

    def __enter__(self) -> "_NumpyArrayScope":
        cur = _NumpyArrayScope._current
        self._old_scope = getattr(cur, "value", None) or _NumpyArrayScope(is_np_array())
        self._prev_switch = set_np_array(self._is_np_array)
        try:
            cur.value = self
        except AttributeError:  # _current replaced by a plain object without attributes
            pass
        return self

    def __exit__(self, *exc: Any) -> None:
        set_np_array(self._prev_switch)
        try:
            _NumpyArrayScope._current.value = self._old_scope
        except AttributeError:
            pass


def default_array(source_array: Any, ctx: Any = None, dtype: Any = None) -> Any:
    """``mx.np.array`` under ``npx.set_np()`` (this thread's NumPy array semantics), else
    ``mx.nd.array``, as MXNet's ``util.default_array``."""
    if is_np_array():
        from .numpy import array as np_array_
        return np_array_(source_array, ctx=ctx, dtype=dtype)
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


def get_cuda_compute_capability(ctx: Context) -> int:
    """Compute capability of a GPU context as major*10+minor."""
    import torch
    if ctx.device_type != "gpu":
        raise ValueError("get_cuda_compute_capability: expected a GPU context")
    major, minor = torch.cuda.get_device_capability(ctx.device_id)
    return major * 10 + minor


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
