"""Per-thread current values of ``with`` scopes (context, name manager, attribute scope, block scope).

MXNet keeps these per thread: a thread starts from the default (``cpu(0)``, a fresh
``NameManager``...) whatever other threads have entered. Unlike MXNet, what a scope replaced is
remembered on the entering thread's own stack, not on the scope object, so one scope object may
be entered by several threads at once (or nested in one) and every exit restores exactly.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["ThreadScope"]


class ThreadScope(threading.local):
    """``value``: this thread's current value; ``enter``/``exit`` push and pop it."""

    def __init__(self, default: Callable[[], Any]):
        # threading.local runs __init__ again, with the same arguments, in every new thread
        self.value = default()
        self.saved: list = []

    def enter(self, value: Any) -> None:
        """Make ``value`` current in this thread until the matching ``exit``."""
        self.saved.append(self.value)
        self.value = value

    def exit(self) -> None:
        """Restore the value the last ``enter`` of this thread replaced."""
        if not self.saved:
            raise RuntimeError("scope exited in a thread that did not enter it (a `with` block's "
                               "__enter__ and __exit__ must run in the same thread)")
        self.value = self.saved.pop()
