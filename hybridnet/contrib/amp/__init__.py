"""``mx.contrib.amp``: automatic mixed precision (MXNet 1.9.1's API; not supported yet).

Libraries read ``amp._amp_initialized`` (False here) to choose their float32 path, which works.
The functions exist so code that calls them fails with a clear error instead of a missing name.
"""
from __future__ import annotations

from .amp import *  # noqa: F401,F403
from .amp import __all__
