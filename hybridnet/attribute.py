"""``mx.AttrScope``: hidden attributes (``__lr_mult__``, ``__ctx_group__``...) for nodes made in scope."""
from __future__ import annotations

import threading
from typing import Optional

__all__ = ["AttrScope", "current"]

_local = threading.local()


class AttrScope:
    """Attach ``__key__`` string attributes to every Symbol node created inside the scope."""

    def __init__(self, **kwargs: str):
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ValueError(f"AttrScope: attribute {k} must be a string, got {type(v).__name__}")
        self._attr = {(k if k.startswith("__") else f"__{k}__"): v for k, v in kwargs.items()}
        self._old: Optional[AttrScope] = None

    def get(self, attr: Optional[dict]) -> dict:
        """Scope attributes merged with ``attr`` (explicit values win)."""
        if not self._attr:
            return dict(attr) if attr else {}
        out = dict(self._attr)
        if attr:
            out.update(attr)
        return out

    def __enter__(self) -> "AttrScope":
        self._old = current()
        merged = AttrScope()
        merged._attr = {**self._old._attr, **self._attr}
        _local.value = merged
        return self

    def __exit__(self, *exc: object) -> None:
        _local.value = self._old


def current() -> AttrScope:
    scope = getattr(_local, "value", None)
    if scope is None:
        scope = _local.value = AttrScope()
    return scope
