"""Nested lists of values <-> one flat list plus a format (MXNet's ``_flatten``/``_regroup``,
shared by Gluon's block inputs and outputs and the control-flow operators' loop values)."""
from __future__ import annotations

from typing import Any, Callable, Optional

__all__ = ["flatten", "regroup"]


def flatten(args: Any, leaf: Callable[[Any], Optional[tuple]],
            not_nested: Callable[[Any], Exception]) -> tuple:
    """(flat list, format) of ``args``, nested lists/tuples of leaves. ``leaf(x)`` says what a
    leaf stands for, ``(its flat values, its format)``, or None where ``x`` is no leaf; a value
    that is neither a leaf nor a list/tuple raises ``not_nested(value)``. The format is what
    ``regroup`` reads back."""
    one = leaf(args)
    if one is not None:
        return one
    if not isinstance(args, (list, tuple)):
        raise not_nested(args)
    flat: list = []
    fmts: list = []
    for a in args:
        f, fmt = flatten(a, leaf, not_nested)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


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
