"""``mx.AttrScope``: attributes (``ctx_group``, ``lr_mult``...) for Symbol nodes made in scope.

The current scope is per thread, as in MXNet: a ``with AttrScope(...)`` block in one thread does
not add attributes to nodes made in another. Keys are kept as given (``AttrScope(x='1')._attr ==
{'x': '1'}``); the Symbol front-end stores them as hidden ``__x__`` attributes.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Optional

from .thread_scope import ThreadScope

__all__ = ["AttrScope", "current"]


class _CurrentScope(type):
    """``AttrScope.current`` as a class property with a setter (MXNet's classproperty)."""

    @property
    def current(cls) -> "AttrScope":
        return _local.value

    @current.setter
    def current(cls, value: "AttrScope") -> None:
        _local.value = value


class AttrScope(metaclass=_CurrentScope):
    """Attach string attributes to every Symbol node created inside the scope."""

    # how many subgraphs of each name the control-flow front-end has made (``foreach0``,
    # ``cond_then1``...); MXNet keeps this count process-wide on the class too
    _subgraph_names: "defaultdict[str, int]" = defaultdict(int)

    def __init__(self, **kwargs: str):
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ValueError(f"AttrScope: attribute {k} must be a string, got {type(v).__name__} "
                                 f"{v!r}; pass it as a string, e.g. {k}={str(v)!r}")
        self._attr = dict(kwargs)

    def get(self, attr: Optional[dict]) -> dict:
        """Scope attributes merged with ``attr`` (explicit values win)."""
        if not self._attr:
            return dict(attr) if attr else {}
        out = dict(self._attr)
        if attr:
            out.update(attr)
        return out

    def __enter__(self) -> "AttrScope":
        merged = AttrScope()
        merged._attr = {**_local.value._attr, **self._attr}
        _local.enter(merged)
        return self

    def __exit__(self, *exc: object) -> None:
        _local.exit()

    @property
    def current(self) -> "AttrScope":
        """The calling thread's current scope (also readable on an instance, as in MXNet)."""
        return _local.value


_local = ThreadScope(AttrScope)


def current() -> AttrScope:
    """The calling thread's current attribute scope."""
    return _local.value
