"""``mx.engine``: MXNet's bulk-execution knobs, accepted with MXNet's signatures.

MXNet's dependency engine can bundle up to ``size`` consecutive small operators into one
scheduled unit ("bulking"), an optimisation of its asynchronous engine. hybridnet runs operators
synchronously on PyTorch, and a hybridized graph is compiled as a whole, so there is nothing to
bundle: the size is remembered (``set_bulk_size`` returns the previous one, as in MXNet) and
has no effect on results or on speed.
"""
from __future__ import annotations

import threading
from types import TracebackType
from typing import Optional, Type

__all__ = ["set_bulk_size", "bulk"]

_state = threading.local()
_DEFAULT_BULK_SIZE = 15  # MXNet's MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN default


def _current() -> int:
    return getattr(_state, "size", _DEFAULT_BULK_SIZE)


def set_bulk_size(size: int) -> int:
    """Set the bulk size (kept per thread, no effect here); returns the previous size."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"mx.engine.set_bulk_size: size must be an int >= 0, got {size!r}")
    prev = _current()
    _state.size = size
    return prev


class _BulkScope:
    """``with mx.engine.bulk(size):`` sets the bulk size inside and restores it after."""

    def __init__(self, size: int):
        self._size = size
        self._old_size: Optional[int] = None

    def __enter__(self) -> "_BulkScope":
        self._old_size = set_bulk_size(self._size)
        return self

    def __exit__(self, ptype: Optional[Type[BaseException]], value: Optional[BaseException],
                 trace: Optional[TracebackType]) -> None:
        set_bulk_size(self._old_size if self._old_size is not None else _DEFAULT_BULK_SIZE)


def bulk(size: int) -> _BulkScope:
    """A scope bundling up to ``size`` operators in MXNet; here a no-op with the same API."""
    return _BulkScope(size)
