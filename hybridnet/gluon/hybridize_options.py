"""``HybridBlock.hybridize()``'s options, checked once and held as one typed, frozen value.

MXNet 1.9.1 keeps them as loose attributes and a ``_flags`` list of (name, value) pairs; here
a block holds one :class:`HybridizeOptions` (``block._options``) that its compiled graph is built
from and every reader reads by field name.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Optional

from ..compiler.cached_op import DEFAULT_MAX_CACHED, lowering_backend

__all__ = ["HybridizeOptions", "HYBRIDIZE_FLAGS", "check_flags"]

# hybridize()'s keywords, in the order the unknown-flag error lists them: MXNet 1.9.1's, plus
# backend_opts and partition_if_dynamic (MXNet 2's spelling of the same knobs), max_cached and
# verify (hybridnet). ``clear`` is an action on the call, not an option the block keeps.
HYBRIDIZE_FLAGS = ("active", "backend", "backend_opts", "clear", "static_alloc", "static_shape",
                   "inline_limit", "forward_bulk_size", "backward_bulk_size", "partition_if_dynamic",
                   "max_cached", "verify")


@dataclass(frozen=True)
class HybridizeOptions:
    """What the last ``hybridize()`` call asked for (defaults: a block never hybridized).

    ``static_alloc``, ``static_shape``, ``backend``, ``max_cached`` and ``verify`` shape the
    compiled graph (``compiler.cached_op.CachedGraph``); ``backend_opts``, ``inline_limit``,
    the bulk sizes and ``partition_if_dynamic`` are MXNet's knobs for its own executor, kept
    with MXNet's defaults and not read (the compiled function does not need them)."""
    active: bool = False
    backend: Optional[str] = None
    backend_opts: Any = None
    static_alloc: bool = False
    static_shape: bool = False
    inline_limit: Any = 2
    forward_bulk_size: Any = None
    backward_bulk_size: Any = None
    partition_if_dynamic: Any = True
    max_cached: int = DEFAULT_MAX_CACHED
    verify: int = 0

    @classmethod
    def parse(cls, owner: str, active: bool = True, backend: Any = None, backend_opts: Any = None,
              static_alloc: bool = False, static_shape: bool = False, verify: int = 0,
              **flags: Any) -> "HybridizeOptions":
        """The options of ``hybridize(active, ...)`` on a block of class ``owner``, checked
        (MXNet checks none: a misspelled or mistyped flag there is silently ignored)."""
        check_flags(owner, flags)
        if isinstance(verify, bool) or not isinstance(verify, int) or verify < 0:
            raise TypeError(f"hybridize(verify=...) takes the number of calls to check (an int >= 0), "
                            f"got {verify!r}")
        max_cached = flags.pop("max_cached", DEFAULT_MAX_CACHED)
        if isinstance(max_cached, bool) or not isinstance(max_cached, int) or max_cached < 1:
            raise TypeError(f"hybridize(max_cached=...) takes how many compiled signatures to keep "
                            f"(an int >= 1), got {max_cached!r}")
        lowering_backend(backend, bool(static_alloc), bool(static_shape))  # unknown names raise now
        return cls(active=active, backend=backend, backend_opts=backend_opts,
                   static_alloc=bool(static_alloc), static_shape=bool(static_shape),
                   max_cached=max_cached, verify=verify, **flags)


def check_flags(owner: str, flags: dict) -> None:
    """Reject keyword flags hybridize() does not know (MXNet would pass them to a backend
    silently, so a misspelled ``static_aloc=True`` did nothing). ``owner``: the block's class."""
    unknown = [k for k in flags if k not in HYBRIDIZE_FLAGS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], HYBRIDIZE_FLAGS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise TypeError(f"{owner}.hybridize() got unknown flag(s) {unknown}{hint}; "
                        f"valid flags are {list(HYBRIDIZE_FLAGS)}")

