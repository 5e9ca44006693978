"""``gluon.data``: datasets, samplers, batchify functions and the DataLoader (MXNet 1.9.1)."""
from __future__ import annotations

from .dataset import *  # noqa: F401,F403
from .sampler import *  # noqa: F401,F403
from .dataloader import *  # noqa: F401,F403
from . import batchify  # noqa: F401
from . import vision  # noqa: F401
from .dataset import __all__ as _ds_all
from .sampler import __all__ as _sp_all
from .dataloader import __all__ as _dl_all

__all__ = list(_ds_all) + list(_sp_all) + list(_dl_all) + ["batchify", "vision"]
