"""Activation layers (MXNet 1.9.1 ``gluon.nn.activations``).

Each layer makes exactly the operator call MXNet's layer makes, so traced graphs and exported
``-symbol.json`` files carry the same ops, node names and attributes:
``Activation`` -> ``Activation`` (``<act>0_fwd``), ``LeakyReLU``/``PReLU``/``SELU``/``GELU`` ->
``LeakyReLU`` (``*_fwd``), ``ELU`` -> unnamed ``LeakyReLU`` (``elu0_leakyrelu0``), ``Swish`` ->
``_mul_scalar``, ``sigmoid`` (``swish0_fwd``), ``elemwise_mul``.
"""
from __future__ import annotations

from typing import Any

from ... import initializer
from ...ops import registry
from ..block import HybridBlock

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU"]


class Activation(HybridBlock):
    """Applies an activation function (``relu``, ``sigmoid``, ``tanh``, ``softrelu``,
    ``softsign``) to the input; the block's name hint is the activation's name."""

    def __init__(self, activation: str, **kwargs: Any):
        if not isinstance(activation, str):
            raise TypeError(f"Activation: activation must be the name of an activation function "
                            f"(e.g. 'relu'), got {activation!r} of type {type(activation).__name__}")
        valid = registry.get("Activation").attrs["act_type"].choices
        if activation not in valid:
            raise ValueError(f"Activation: unknown activation {activation!r}; valid names are "
                             f"{sorted(valid)} (LeakyReLU, PReLU, ELU, SELU, GELU and Swish are "
                             f"layers of their own)")
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self) -> str:
        return self._act_type

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """Leaky ReLU: ``x`` for ``x >= 0``, ``alpha * x`` otherwise (``alpha >= 0``)."""

    def __init__(self, alpha: float, **kwargs: Any):
        if not alpha >= 0:
            raise ValueError(f"LeakyReLU: slope coefficient alpha must be no less than 0, got {alpha!r}")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._alpha})"


class PReLU(HybridBlock):
    """Parametric leaky ReLU with a learned slope ``alpha`` of shape ``(in_channels,)``
    (initialized to 0.25 by default)."""

    def __init__(self, alpha_initializer: Any = initializer.Constant(0.25), in_channels: int = 1,
                 **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F: Any, x: Any, alpha: Any) -> Any:
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled exponential linear unit (Klambauer et al., 2017)."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    """Gaussian error linear unit (erf form)."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """Swish: ``x * sigmoid(beta * x)``."""

    def __init__(self, beta: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return x * F.sigmoid(self._beta * x, name="fwd")
