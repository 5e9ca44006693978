"""``mx.optimizer``: optimizers, the registry (``create``/``register``) and ``Updater``."""
from __future__ import annotations

from . import optimizer, contrib  # noqa: F401
from .optimizer import (  # noqa: F401
    AdaDelta, AdaGrad, Adam, Adamax, DCASGD, FTML, Ftrl, LARS, LBSGD, NAG, NDabs, Nadam, Optimizer,
    RMSProp, SGD, SGLD, Signum, LAMB, Test, Updater, ccSGD, create, get_updater, register,
)
from .contrib import GroupAdaGrad  # noqa: F401

__all__ = optimizer.__all__ + ["GroupAdaGrad"]
