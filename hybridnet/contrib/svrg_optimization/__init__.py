"""``mx.contrib.svrg_optimization``: Stochastic Variance Reduced Gradient training (Johnson &
Zhang, 2013) for the Module API: :class:`~.svrg_module.SVRGModule`."""
from __future__ import annotations

from . import svrg_module, svrg_optimizer
from .svrg_module import SVRGModule

__all__ = ["SVRGModule", "svrg_module", "svrg_optimizer"]
