"""Contrib optimizers of MXNet 1.9.1 (``GroupAdaGrad``)."""
from __future__ import annotations

from typing import Any

from .. import ndarray as _nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .optimizer import Optimizer, _check_nd, _py_scaled, register

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one learning rate per row of a 2-D weight (MXNet's ``GroupAdaGrad``)::

        g = clip(rescale_grad * grad, clip_gradient)
        history += mean(g**2, axis=1, keepdims=True)
        weight -= lr * g / sqrt(history + eps)

    Weight decay is not supported (``wd`` must be 0).
    """

    def __init__(self, eps: float = 1e-5, **kwargs: Any):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: Any, weight: NDArray) -> NDArray:
        if len(weight.shape) != 2:
            raise MXNetError(f"GroupAdaGrad: the weight must be 2-D (rows share a learning rate), "
                             f"got shape {weight.shape}")
        return _nd.zeros((weight.shape[0], 1), ctx=weight.context, dtype=weight.dtype)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        _check_nd(weight, grad, "GroupAdaGrad")
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        if wd != 0:
            raise MXNetError(f"GroupAdaGrad: weight decay is not supported (got wd={wd}); "
                             f"create the optimizer with wd=0")
        g = _py_scaled(grad, self.rescale_grad, self.clip_gradient)
        _nd.elemwise_add(state, _nd.mean(_nd.square(g), axis=1, keepdims=True), out=state)
        _nd.elemwise_sub(weight, lr * g / _nd.sqrt(state + self.float_stable_eps), out=weight)
