"""``mx.notebook``: training callbacks for Jupyter notebooks (:mod:`.callback`)."""
from __future__ import annotations

from . import callback

__all__ = ["callback"]
