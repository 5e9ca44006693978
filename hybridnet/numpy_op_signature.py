"""``mx.numpy_op_signature``: MXNet gives its generated ``mx.np``/``mx.npx`` operator functions
Python signatures (``__signature__``, read off ``mx._numpy_op_doc``) at import, because its C++
registry has none. hybridnet generates them as Python functions with real signatures from the
operator registry; :func:`_register_op_signatures` pins each ``_np_*`` operator's function
signature as ``__signature__`` (what ``inspect`` and MXNet's tests read), and
:func:`_get_builtin_op` finds the function an operator name refers to."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

from . import numpy as _mx_np
from . import numpy_extension as _mx_npx
from .ops import registry as _reg

__all__: list = []


def _get_builtin_op(op_name: str) -> Optional[Callable[..., Any]]:
    """The ``mx.np`` (``_np_``/``_npi_`` names) or ``mx.npx`` (``_npx_``) function of an
    operator name, or None."""
    for prefix, space in (("_npx_", _mx_npx), ("_npi_", _mx_np), ("_np_", _mx_np)):
        if op_name.startswith(prefix):
            return getattr(space, op_name[len(prefix):], None)
    return None


def _register_op_signatures() -> None:
    """Set ``__signature__`` on the function of every ``_np_*`` operator (idempotent)."""
    for name in _reg.names():
        if not name.startswith("_np_"):
            continue
        fn = _get_builtin_op(name)
        if fn is None or getattr(fn, "__signature__", None) is not None:
            continue
        try:
            fn.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        except (TypeError, ValueError, AttributeError):
            continue


_register_op_signatures()
