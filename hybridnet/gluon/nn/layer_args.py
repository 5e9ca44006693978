"""Checks of layer constructor arguments: a layer that cannot work fails when it is built.

``Dense(0)``, a zero or negative kernel size, stride or dilation, or a negative padding would
otherwise build fine and fail (or silently compute nothing) at the first forward. The error
names the layer, the argument, the value and what is valid.
"""
from __future__ import annotations

from numbers import Real
from typing import Any, Sequence

__all__ = ["check_ints"]


def check_ints(layer: str, what: str, values: "Any | Sequence[Any]", minimum: int) -> None:
    """Raise ValueError unless ``values`` (one number or a sequence) are integers >= ``minimum``."""
    many = isinstance(values, (tuple, list))
    for v in values if many else (values,):
        if isinstance(v, bool) or not isinstance(v, Real) or int(v) != v or v < minimum:
            need = "positive integers" if minimum == 1 else f"integers >= {minimum}"
            if not many:
                need = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            raise ValueError(f"{layer}: {what} must be {need}, got {values!r}")
