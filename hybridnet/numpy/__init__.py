"""``mxnet.numpy``: MXNet 2's NumPy-compatible array front-end (``mx.np``).

hybridnet implements MXNet 1.x's ``mx.nd`` front-end. Code that imports ``mxnet.numpy`` at module
level (many libraries and MXNet 1.9.1's own tests do, for a few optional functions) still
imports; using any of its names raises MXNetError saying what to write instead.
"""
from __future__ import annotations

from typing import Any

from ..base import MXNetError


class NumpyFrontendUnavailable(MXNetError, AttributeError):
    """Raised for every ``mx.np`` name; an AttributeError too, so ``hasattr`` answers False."""


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NumpyFrontendUnavailable(f"mx.np.{name}: the mx.np (NumPy-compatible) front-end is not available in "
                     "hybridnet, which implements MXNet 1.x's mx.nd API; use "
                     f"mx.nd.{name} (or F.{name} in hybrid_forward) where it exists")
