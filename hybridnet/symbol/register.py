"""``mx.sym.register``: how the ``mx.sym`` operator functions are made.

In MXNet this module generates Python source for each operator of the C++ registry. Here the
registry is :mod:`hybridnet.ops.registry` and :func:`hybridnet.ops.frontend.make_function`
writes the functions; this module offers MXNet's entry points over them, by operator name (a
string stands where MXNet passes a C operator handle).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..ops import frontend as _frontend
from ..ops import registry as _registry
from .symbol import sym_invoke as invoke

__all__ = ["_make_symbol_function", "_generate_symbol_function_code"]


def _op_name(handle: Any, name: Optional[str]) -> str:
    op_name = name if name is not None else handle
    if not isinstance(op_name, str):
        raise TypeError(f"mx.sym.register: give the operator by name (a str, such as "
                        f"'FullyConnected'); hybridnet has no C operator handles, got {handle!r}")
    return op_name


def _make_symbol_function(handle: Any, name: Optional[str] = None,
                           func_name: Optional[str] = None) -> Callable[..., Any]:
    """The ``mx.sym`` function of operator ``name`` (or ``handle`` as a name), named
    ``func_name`` (default: the operator name)."""
    op = _registry.get(_op_name(handle, name))
    return _frontend.make_function(op, func_name or op.name, invoke)


def _generate_symbol_function_code(handle: Any, op_name: Optional[str] = None,
                                    func_name: Optional[str] = None,
                                    signature_only: bool = False) -> str:
    """The signature line of the generated function (hybridnet does not build it from source
    text, so the signature is what there is to show)."""
    op = _registry.get(_op_name(handle, op_name))
    return f"def {func_name or op.name}({_frontend.signature_text(op)}):"
