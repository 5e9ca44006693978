"""Automatic node naming (MXNet's ``mx.name``): ``NameManager`` counters and ``Prefix``."""
from __future__ import annotations

import threading
from typing import Optional

__all__ = ["NameManager", "Prefix", "current"]

_local = threading.local()


class NameManager:
    """Names unnamed nodes ``<hint><n>`` with a counter per hint; a ``with`` block scopes it."""

    def __init__(self) -> None:
        self._counter: dict[str, int] = {}
        self._old: Optional[NameManager] = None

    def get(self, name: Optional[str], hint: str) -> str:
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self) -> "NameManager":
        self._old = current()
        _local.value = self
        return self

    def __exit__(self, *exc: object) -> None:
        _local.value = self._old


class Prefix(NameManager):
    """Prepends ``prefix`` to every name (given or generated), as Gluon blocks do."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def get(self, name: Optional[str], hint: str) -> str:
        return self._prefix + super().get(name, hint)


def current() -> NameManager:
    mgr = getattr(_local, "value", None)
    if mgr is None:
        mgr = _local.value = NameManager()
    return mgr


# MXNet exposes the current manager as NameManager.current
NameManager.current = property(lambda self: current())  # type: ignore[attr-defined]
