"""``mx.numpy_op_signature``: MXNet gives its generated ``mx.np``/``mx.npx`` operator functions
Python signatures (``inspect.signature``) at import, because its C++ registry has none.
hybridnet generates them as Python functions with real signatures from the operator registry,
so :func:`_register_op_signatures` has nothing to do and :func:`_get_builtin_op` finds the
function a name refers to."""
from __future__ import annotations

from typing import Any, Callable, Optional

from . import numpy as _mx_np
from . import numpy_extension as _mx_npx

__all__: list = []


def _get_builtin_op(op_name: str) -> Optional[Callable[..., Any]]:
    """The ``mx.np`` (``_np_``/``_npi_`` names) or ``mx.npx`` (``_npx_``) function of an
    operator name, or None."""
    for prefix, space in (("_npx_", _mx_npx), ("_npi_", _mx_np), ("_np_", _mx_np)):
        if op_name.startswith(prefix):
            return getattr(space, op_name[len(prefix):], None)
    return None


def _register_op_signatures() -> None:
    """Nothing to do: the generated functions already carry their signatures."""
