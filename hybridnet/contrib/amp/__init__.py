"""``mx.contrib.amp``: automatic mixed precision (MXNet 1.9.1's API).

``amp.init()`` runs MXNet's low-precision operator lists in float16 or bfloat16; ``init_trainer``
and ``scale_loss`` add dynamic loss scaling; ``convert_*`` rewrite float32 graphs for
mixed-precision inference. Libraries read ``amp.amp._amp_initialized`` to choose their path.
"""
from __future__ import annotations

from . import amp, lists
from .amp import *  # noqa: F401,F403
from .amp import __all__ as _amp_all
from .loss_scaler import LossScaler

__all__ = list(_amp_all) + ["LossScaler", "amp", "lists"]
