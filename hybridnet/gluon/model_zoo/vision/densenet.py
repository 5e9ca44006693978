"""DenseNet-BC 121/161/169/201 (Huang et al. 2016) as in MXNet 1.9.1's model zoo."""
from __future__ import annotations

from typing import Any, Sequence

from ....context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent, Identity
from ..model_store import DEFAULT_ROOT, load_pretrained, pretrained_setup

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _make_dense_block(num_layers: int, bn_size: int, growth_rate: int, dropout: float,
                      stage_index: int) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_make_dense_layer(growth_rate, bn_size, dropout))
    return out


def _make_dense_layer(growth_rate: int, bn_size: int, dropout: float) -> HybridBlock:
    new_features = nn.HybridSequential(prefix="")
    new_features.add(nn.BatchNorm())
    new_features.add(nn.Activation("relu"))
    new_features.add(nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False))
    new_features.add(nn.BatchNorm())
    new_features.add(nn.Activation("relu"))
    new_features.add(nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = HybridConcurrent(axis=1, prefix="")
    out.add(Identity())
    out.add(new_features)
    return out


def _make_transition(num_output_features: int) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix="")
    out.add(nn.BatchNorm())
    out.add(nn.Activation("relu"))
    out.add(nn.Conv2D(num_output_features, kernel_size=1, use_bias=False))
    out.add(nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """Densenet-BC: stem, dense blocks (each layer's output concatenated to its input) with
    transitions, BN + ReLU + 7x7 average pooling + Flatten in ``features``; ``output`` Dense."""

    def __init__(self, num_init_features: int, growth_rate: int, block_config: Sequence[int],
                 bn_size: int = 4, dropout: float = 0, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                                        use_bias=False))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_make_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                num_features = num_features + num_layers * growth_rate
                if i != len(block_config) - 1:
                    self.features.add(_make_transition(num_features // 2))
                    num_features = num_features // 2
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.AvgPool2D(pool_size=7))
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers: int, pretrained: bool = False, ctx: Context = cpu(),
                 root: str = DEFAULT_ROOT, **kwargs: Any) -> HybridBlock:
    """DenseNet-BC with ``num_layers`` in 121, 161, 169, 201."""
    if num_layers not in densenet_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(densenet_spec)}")
    name = f"densenet{num_layers}"
    pretrained_setup(name, pretrained, kwargs)
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        load_pretrained(net, name, ctx, root)
    return net


def densenet121(**kwargs: Any) -> HybridBlock:
    """DenseNet-BC 121."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs: Any) -> HybridBlock:
    """DenseNet-BC 161."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs: Any) -> HybridBlock:
    """DenseNet-BC 169."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs: Any) -> HybridBlock:
    """DenseNet-BC 201."""
    return get_densenet(201, **kwargs)
