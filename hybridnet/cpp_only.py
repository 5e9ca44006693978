"""Modules of MXNet 1.9.1 that only drive its C++ library (libmxnet): here they import, and any
use raises :class:`CppOnlyError` saying why and what to do instead.

``mxnet.api`` (the C++ FFI function table), ``mxnet.cython`` (Cython bindings of the C API),
``mxnet.library`` (loading compiled operator libraries), ``mxnet.rtc`` (CUDA runtime
compilation), ``mxnet.tvmop`` and ``mxnet.space`` (TVM-generated operators and their tuning
space), ``mxnet.torch`` (Lua Torch functions compiled into libmxnet) have no meaning without
libmxnet; hybridnet's kernels are PyTorch's.
"""
from __future__ import annotations

from typing import Any, Callable

from .base import MXNetError

__all__ = ["CppOnlyError", "unavailable", "module_getattr"]


class CppOnlyError(MXNetError, AttributeError):
    """A feature of MXNet's C++ library was used. Also an AttributeError, so ``hasattr`` and
    ``getattr(mod, name, default)`` on these modules answer "absent" instead of raising."""


def _message(module: str, what: str, why: str) -> str:
    return (f"mxnet.{module}.{what} is not available in hybridnet: {why} hybridnet runs on "
            f"PyTorch kernels and has no libmxnet; import still works so that code which only "
            f"imports the module runs.")


def unavailable(module: str, what: str, why: str) -> Callable[..., Any]:
    """A function (usable as a class) that raises :class:`CppOnlyError` when called."""
    def call(*args: Any, **kwargs: Any) -> Any:
        raise CppOnlyError(_message(module, what, why))
    call.__name__ = call.__qualname__ = what
    call.__doc__ = f"Not available in hybridnet: {why}"
    return call


def module_getattr(module: str, why: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` answering any other public name with :class:`CppOnlyError`."""
    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise CppOnlyError(_message(module, name, why))
    return __getattr__
