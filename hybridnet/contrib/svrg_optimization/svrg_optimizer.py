"""``mx.contrib.svrg_optimization.svrg_optimizer``: MXNet's routing optimizer for SVRG.

MXNet's SVRGModule keeps the full gradients in the KVStore under ``<name>_full`` keys and its
``_SVRGOptimizer`` assigns those (``_AssignmentOptimizer``) while updating the weights with the
wrapped ``default_optimizer``. hybridnet's SVRGModule keeps the full gradients itself, but both
classes exist and behave as MXNet's for code that uses them directly.
"""
from __future__ import annotations

from typing import Any, Dict, Union

from ...optimizer import Optimizer, create, register

__all__ = ["_AssignmentOptimizer", "_SVRGOptimizer"]

_BASE_PARAMS = ("rescale_grad", "param_idx2name", "wd", "clip_gradient", "learning_rate",
                "lr_scheduler", "sym", "begin_num_update", "multi_precision", "param_dict")


@register
class _AssignmentOptimizer(Optimizer):
    """``weight[:] = grad``: stores a gradient as the "weight" of a ``_full`` key."""

    def create_state(self, index: Any, weight: Any) -> None:
        return None

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        weight[:] = grad


@register
class _SVRGOptimizer(Optimizer):
    """Keys named ``*full*`` are assigned; every other key is updated by ``default_optimizer``."""

    def __init__(self, default_optimizer: Union[str, Optimizer], **kwargs: Any):
        super().__init__(**self._check_params(**kwargs))
        self.default_opt = create(default_optimizer, **kwargs) \
            if isinstance(default_optimizer, str) else default_optimizer
        self.aux_opt = create(_AssignmentOptimizer.__name__)

    @staticmethod
    def _check_params(**kwargs: Any) -> Dict[str, Any]:
        return {k: v for k, v in kwargs.items() if k in _BASE_PARAMS}

    def _name(self, index: Any) -> str:
        return index if index in self.idx2name.values() else self.idx2name[index]

    def create_state(self, index: Any, weight: Any) -> Any:
        opt = self.aux_opt if "full" in self._name(index) else self.default_opt
        return opt.create_state(index, weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        opt = self.aux_opt if "full" in self._name(index) else self.default_opt
        opt.update(index, weight, grad, state)
