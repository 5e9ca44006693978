"""``mx.nd.register``: how the ``mx.nd`` operator functions are made.

In MXNet this module generates Python source for each operator of the C++ registry. Here the
registry is :mod:`hybridnet.ops.registry` and :func:`hybridnet.ops.frontend.make_function`
writes the functions; this module offers MXNet's entry points over them, by operator name (a
string stands where MXNet passes a C operator handle).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..ops import frontend as _frontend
from .ndarray import invoke

__all__ = ["_make_ndarray_function", "_generate_ndarray_function_code"]


def _make_ndarray_function(handle: Any, name: Optional[str] = None,
                           func_name: Optional[str] = None) -> Callable[..., Any]:
    """The ``mx.nd`` function of operator ``name`` (or ``handle`` as a name), named
    ``func_name`` (default: the operator name)."""
    return _frontend.function_by_name(handle, name, func_name, invoke, "mx.nd.register")


def _generate_ndarray_function_code(handle: Any, op_name: Optional[str] = None,
                                    func_name: Optional[str] = None,
                                    signature_only: bool = False) -> str:
    """The signature line of the generated function."""
    return _frontend.signature_line_by_name(handle, op_name, func_name, "mx.nd.register")
