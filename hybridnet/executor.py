"""``mx.executor``: MXNet's module path of :class:`Executor` (made by ``Symbol.bind`` /
``simple_bind``); the class lives in :mod:`hybridnet.symbol.executor`."""
from __future__ import annotations

from .symbol.executor import Executor

__all__ = ["Executor"]
