"""Automatic node naming (MXNet's ``mx.name``): ``NameManager`` counters and ``Prefix``.

The current manager is per thread, as in MXNet: each thread starts with a fresh
``NameManager`` (so its first unnamed Dense is ``dense0`` again), and ``with NameManager():``
in one thread does not rename nodes made in another.
"""
from __future__ import annotations

from typing import Optional

from .thread_scope import ThreadScope

__all__ = ["NameManager", "Prefix", "current"]


class _CurrentManager(type):
    """``NameManager.current`` as a class property with a setter (MXNet's classproperty)."""

    @property
    def current(cls) -> "NameManager":
        return _local.value

    @current.setter
    def current(cls, value: "NameManager") -> None:
        _local.value = value


class NameManager(metaclass=_CurrentManager):
    """Names unnamed nodes ``<hint><n>`` with a counter per hint; a ``with`` block scopes it."""

    def __init__(self) -> None:
        self._counter: dict[str, int] = {}

    def get(self, name: Optional[str], hint: str) -> str:
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self) -> "NameManager":
        _local.enter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _local.exit()

    @property
    def current(self) -> "NameManager":
        """The calling thread's current manager (also readable on an instance, as in MXNet)."""
        return _local.value


class Prefix(NameManager):
    """Prepends ``prefix`` to every name (given or generated), as Gluon blocks do."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def get(self, name: Optional[str], hint: str) -> str:
        return self._prefix + super().get(name, hint)


_local = ThreadScope(NameManager)


def current() -> NameManager:
    """The calling thread's current name manager."""
    return _local.value
