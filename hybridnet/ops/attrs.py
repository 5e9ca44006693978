"""Typed operator attributes and their MXNet string spelling (spec B.4).

Inside hybridnet attributes are Python values (ints, floats, tuples, ...). Only at file
boundaries are they strings: ``format_value`` writes what MXNet 1.9.1 writes (Python ``str()``,
NumPy dtype names), ``parse_value`` reads what MXNet's parser accepts (``true``/``1`` for
booleans, ``[a, b]`` for tuples, ...). Attribute kinds are read off kernel annotations.
"""
from __future__ import annotations

import ast
from typing import Any, Literal, Optional, Tuple, Union

import numpy as np

from ..base import MXNetError, NotGiven, dtype_name

__all__ = ["Shape", "Axis", "Dtype", "OptInt", "OptFloat", "OptBool", "AnyValue", "Attr", "kind_of",
           "parse_value", "format_value", "channels_last"]

# Annotation markers used by kernels. They are ordinary typing constructs, so kernels stay
# readable, and ``kind_of`` maps them to codec kinds.
Shape = Tuple[int, ...]
Axis = Union[int, Tuple[int, ...], None]
Dtype = Union[str, None]
OptInt = Optional[int]
OptFloat = Optional[float]
OptBool = Optional[bool]
AnyValue = Any


def kind_of(annotation: Any) -> tuple[str, tuple]:
    """(kind, choices) for a kernel parameter annotation."""
    if annotation is int:
        return "int", ()
    if annotation is float:
        return "float", ()
    if annotation is bool:
        return "bool", ()
    if annotation is str:
        return "str", ()
    if annotation == Shape:
        return "shape", ()
    if annotation == Axis:
        return "axis", ()
    if annotation == Dtype:
        return "dtype", ()
    if annotation == OptInt:
        return "optint", ()
    if annotation == OptFloat:
        return "optfloat", ()
    if annotation == OptBool:
        return "optbool", ()
    origin = getattr(annotation, "__origin__", None)
    if origin is Literal:
        return "enum", tuple(annotation.__args__)
    return "any", ()


def channels_last(layout: Any) -> bool:
    """Whether a ``layout`` attribute is MXNet's NWC / NHWC / NDHWC (None and 'None' mean the
    default, channels-first)."""
    return isinstance(layout, str) and len(layout) > 2 and layout[-1] == "C"


class Attr:
    """One operator attribute: name, kind, default (``NotGiven`` when required), choices."""
    __slots__ = ("name", "kind", "default", "choices")

    def __init__(self, name: str, kind: str, default: Any = NotGiven, choices: tuple = ()):
        self.name, self.kind, self.default, self.choices = name, kind, default, choices

    @property
    def required(self) -> bool:
        return self.default is NotGiven

    def parse(self, text: str, op: str = "?") -> Any:
        return parse_value(text, self.kind, self.choices, where=f"{op}.{self.name}")

    def format(self, value: Any) -> str:
        return format_value(value)

    def __repr__(self) -> str:
        d = "" if self.required else f"={self.default!r}"
        return f"{self.name}: {self.kind}{d}"


_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


_INT64 = 2 ** 63


def _literal(text: str, where: str) -> Any:
    """A Python literal from file text. Hostile text (deep nesting, huge numbers, megabytes)
    becomes MXNetError; integers must fit MXNet's int64 attributes."""
    if len(text) > 100_000:
        raise MXNetError(f"attribute {where}: value too long ({len(text)} characters)")
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError, OverflowError):
        raise MXNetError(f"attribute {where}: cannot parse {_clip(text)}") from None
    _check_ints(value, text, where, 0)
    return value


def _clip(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:77]) + "..."


def _check_ints(value: Any, text: str, where: str, depth: int) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        if not -_INT64 <= value < _INT64:
            raise MXNetError(f"attribute {where}: integer out of the int64 range in {_clip(text)}")
    elif isinstance(value, (tuple, list, set, frozenset)) and depth < 32:
        for v in value:
            _check_ints(v, text, where, depth + 1)
    elif isinstance(value, dict) and depth < 32:
        for k, v in value.items():
            _check_ints(k, text, where, depth + 1)
            _check_ints(v, text, where, depth + 1)


def parse_value(text: str, kind: str, choices: tuple = (), where: str = "?") -> Any:
    """Parse MXNet's spelling of an attribute of ``kind``; raise MXNetError naming ``where``."""
    if not isinstance(text, str):
        raise MXNetError(f"attribute {where}: expected a string, got {type(text).__name__} {text!r}")
    s = text.strip()
    if kind == "enum" and s == "None" and None in choices:
        return None
    if kind == "enum" and s in choices:
        return s
    if kind in ("str", "dtype") or (kind == "enum" and all(isinstance(c, str) or c is None for c in choices)):
        if s == "None" and kind == "dtype":
            return None
        if kind == "enum" and s not in choices:
            raise MXNetError(f"attribute {where}: invalid value {s!r}; expected one of {list(choices)}")
        if kind == "dtype":
            try:
                return dtype_name(s)
            except TypeError as e:
                raise MXNetError(f"attribute {where}: {e}") from None
        return s
    if kind == "optbool" and s == "None":
        return None
    if kind in ("bool", "optbool"):
        low = s.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise MXNetError(f"attribute {where}: invalid boolean {text!r}; expected True or False")
    if kind in ("optint", "optfloat", "axis") and s == "None":
        return None
    if kind in ("float", "optfloat") and s.lower().lstrip("+-") in ("inf", "infinity", "nan"):
        return float(s)  # strtod's spellings, as MXNet's parameter parser reads them (str(float('inf')))
    value = _literal(s, where)
    if kind in ("int", "optint"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise MXNetError(f"attribute {where}: invalid integer {text!r}")
        return value
    if kind in ("float", "optfloat"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MXNetError(f"attribute {where}: invalid number {text!r}")
        return value
    if kind == "shape":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if not isinstance(value, (tuple, list)) or not all(
                (isinstance(v, int) and not isinstance(v, bool)) or v is None for v in value):
            raise MXNetError(f"attribute {where}: invalid shape {text!r}; expected e.g. (2, 3)")
        return value if isinstance(value, list) else tuple(value)
    if kind == "axis":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, (tuple, list)) and all(isinstance(v, int) for v in value):
            return value
        raise MXNetError(f"attribute {where}: invalid axis {text!r}; expected an int or a tuple of ints")
    if kind == "enum":
        if value not in choices:
            raise MXNetError(f"attribute {where}: invalid value {text!r}; expected one of {list(choices)}")
        return value
    return value


def format_value(value: Any) -> str:
    """MXNet's spelling: Python ``str()``, with NumPy/torch dtypes as their NumPy names."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)) or value is None:
        return str(value)
    if isinstance(value, (tuple, list)):
        return str(type(value)(_plain(v) for v in value))
    if isinstance(value, np.generic):
        return str(value.item())
    try:
        return dtype_name(value)
    except TypeError:
        return str(value)


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v
