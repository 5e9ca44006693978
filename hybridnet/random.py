"""``mx.random``: global seeding (torch's generators) and the sampling functions of ``nd.random``."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .context import Context

__all__ = ["seed"]


def seed(seed_state: int, ctx: "str | Context" = "all") -> None:
    """Seed every random operator (MXNet's ``mx.random.seed``); ``ctx`` is accepted for compatibility."""
    if not isinstance(seed_state, (int, np.integer)):
        raise ValueError(f"seed must be an int, got {type(seed_state).__name__}")
    torch.manual_seed(int(seed_state))
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(int(seed_state))


def __getattr__(name: str) -> Any:
    # mx.random.uniform & co. are nd.random's functions.
    from .ndarray import random as _ndr
    try:
        return getattr(_ndr, name)
    except AttributeError:
        raise AttributeError(f"module 'hybridnet.random' has no attribute {name!r}") from None
