"""``mx.sym.register``: how the ``mx.sym`` operator functions are made.

In MXNet this module generates Python source for each operator of the C++ registry. Here the
registry is :mod:`hybridnet.ops.registry` and :func:`hybridnet.ops.frontend.make_function`
writes the functions; this module offers MXNet's entry points over them, by operator name (a
string stands where MXNet passes a C operator handle).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..ops import frontend as _frontend
from .symbol import sym_invoke as invoke

__all__ = ["_make_symbol_function", "_generate_symbol_function_code"]


def _make_symbol_function(handle: Any, name: Optional[str] = None,
                          func_name: Optional[str] = None) -> Callable[..., Any]:
    """The ``mx.sym`` function of operator ``name`` (or ``handle`` as a name), named
    ``func_name`` (default: the operator name)."""
    return _frontend.function_by_name(handle, name, func_name, invoke, "mx.sym.register")


def _generate_symbol_function_code(handle: Any, op_name: Optional[str] = None,
                                   func_name: Optional[str] = None,
                                   signature_only: bool = False) -> str:
    """The signature line of the generated function."""
    return _frontend.signature_line_by_name(handle, op_name, func_name, "mx.sym.register")
