"""Nested lists of values <-> one flat list plus a format (MXNet's ``_flatten``/``_regroup``,
shared by Gluon's block inputs and outputs and the control-flow operators' loop values)."""
from __future__ import annotations

from typing import Any

__all__ = ["regroup"]


def regroup(flat: list, fmt: Any) -> tuple:
    """(the nested value ``fmt`` describes, built from the front of ``flat``; the rest of
    ``flat``). ``fmt`` is 0 for one value, -1 for None, n > 0 for n values in a list, or a list
    of formats."""
    if isinstance(fmt, int):
        if fmt == 0:
            return flat[0], flat[1:]
        if fmt == -1:
            return None, flat[1:]
        return flat[:fmt], flat[fmt:]
    out = []
    for f in fmt:
        value, flat = regroup(flat, f)
        out.append(value)
    return out, flat
