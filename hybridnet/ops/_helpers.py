"""Small attribute and shape helpers shared by the operator families."""
from __future__ import annotations

import ast
from typing import Any, Optional

import numpy as np

from ..base import MXNetError

__all__ = ["ints", "floats", "per_dim", "shape_known", "fill_shape"]


def ints(v: Any) -> tuple:
    """A tuple of ints from an int / list / tuple / None attribute value."""
    if v is None:
        return ()
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    return tuple(int(i) for i in v)


def floats(v: Any, who: str, name: str) -> tuple:
    """A tuple of floats from a number, list, tuple or MXNet string spelling ("(0.5, 0.25)")."""
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            raise MXNetError(f"{who}: cannot parse {name}={v[:80]!r}; expected e.g. (0.5, 0.25)") from None
    if isinstance(v, (int, float, np.number)):
        return (float(v),)
    try:
        return tuple(float(x) for x in v)
    except TypeError:
        raise MXNetError(f"{who}: {name} must be a number or a sequence of numbers, got {v!r}") from None


def per_dim(v: Any, n: int, default: int, what: str, op: str) -> tuple:
    """An n-tuple from an MXNet spatial attribute (empty means ``default`` everywhere)."""
    t = ints(v)
    if not t:
        return (default,) * n
    if len(t) == 1 and n > 1:
        return t * n
    if len(t) != n:
        raise MXNetError(f"{op}: {what}={tuple(t)} has {len(t)} values but the kernel has {n} "
                         f"spatial dimensions; give {n} values")
    return t


def shape_known(s: Any) -> bool:
    return s is not None and len(s) > 0 and all(d > 0 for d in s)


def fill_shape(old: Any, new: Optional[tuple]) -> Any:
    """Fill the unknown parts of a parameter shape; never contradict a fully known one."""
    if new is None:
        return old
    if old is None or len(old) == 0:
        return tuple(new)
    if all(d > 0 for d in old):
        return tuple(old)
    if len(old) != len(new):
        return tuple(new) if all(d == 0 for d in old) else tuple(old)
    return tuple(a if a else b for a, b in zip(old, new))
