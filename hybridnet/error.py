"""``mx.error``: MXNet's error classes (``InternalError``, the registry ``register``).

MXNet maps error kinds raised in C++ to Python classes through ``register``; hybridnet raises
its errors in Python, so the registry only records names for code that looks them up.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Union

from .base import MXNetError

__all__ = ["MXNetError", "register", "InternalError"]

ERROR_TYPES: Dict[str, type] = {}


def register(func_name: Union[str, type, None] = None, cls: Optional[type] = None) -> Any:
    """Register an error class under a name (MXNet's ``register_error``): ``register(Cls)``,
    ``register("Name", Cls)`` or ``@register("Name")``."""
    if isinstance(func_name, type):
        cls, func_name = func_name, func_name.__name__

    def do_register(mycls: type) -> type:
        ERROR_TYPES[str(func_name or mycls.__name__)] = mycls
        return mycls
    if cls is None:
        return do_register
    return do_register(cls)


@register
class InternalError(MXNetError):
    """An internal error; the message gets MXNet's hint to report it."""

    def __init__(self, msg: str):
        if "MXNet hint:" not in msg:
            msg += ("\nMXNet hint: You hit an internal error. Please report it to hybridnet's "
                    "maintainers with the code that raised it.")
        super().__init__(msg)


register("ValueError", ValueError)
register("TypeError", TypeError)
register("AttributeError", AttributeError)
register("IndexError", IndexError)
register("NotImplementedError", NotImplementedError)
register("MXNetError", MXNetError)
