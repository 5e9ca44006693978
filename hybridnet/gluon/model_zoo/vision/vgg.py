"""VGG 11/13/16/19, with and without BatchNorm (Simonyan & Zisserman 2014), as in MXNet 1.9.1."""
from __future__ import annotations

from typing import Any, Sequence

from ....context import Context, cpu
from ....initializer import Xavier
from ...block import HybridBlock
from ... import nn
from ..model_store import DEFAULT_ROOT, load_pretrained, pretrained_setup

__all__ = ["VGG",
           "vgg11", "vgg13", "vgg16", "vgg19",
           "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn",
           "get_vgg"]


class VGG(HybridBlock):
    """``features``: 3x3 conv (+BN) + ReLU blocks with 2x2 max pooling, then two Dense(4096,
    relu) + Dropout(0.5); ``output``: Dense(classes). Conv weights use Xavier(gaussian, out, 2),
    dense weights 'normal', biases zeros (MXNet's initializers)."""

    def __init__(self, layers: Sequence[int], filters: Sequence[int], classes: int = 1000,
                 batch_norm: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"VGG: layers and filters must have the same length, got {list(layers)} "
                             f"and {list(filters)}")
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                       bias_initializer="zeros"))
            self.features.add(nn.Dropout(rate=0.5))
            self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                       bias_initializer="zeros"))
            self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    def _make_features(self, layers: Sequence[int], filters: Sequence[int],
                       batch_norm: bool) -> nn.HybridSequential:
        featurizer = nn.HybridSequential(prefix="")
        for i, num in enumerate(layers):
            for _ in range(num):
                featurizer.add(nn.Conv2D(filters[i], kernel_size=3, padding=1,
                                         weight_initializer=Xavier(rnd_type="gaussian",
                                                                   factor_type="out", magnitude=2),
                                         bias_initializer="zeros"))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation("relu"))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers: int, pretrained: bool = False, ctx: Context = cpu(), root: str = DEFAULT_ROOT,
            **kwargs: Any) -> HybridBlock:
    """VGG with ``num_layers`` in 11, 13, 16, 19 (``batch_norm=True`` for the _bn variants)."""
    if num_layers not in vgg_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(vgg_spec)}")
    name = f"vgg{num_layers}{'_bn' if kwargs.get('batch_norm') else ''}"
    pretrained_setup(name, pretrained, kwargs)
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        load_pretrained(net, name, ctx, root)
    return net


def vgg11(**kwargs: Any) -> HybridBlock:
    """VGG-11."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs: Any) -> HybridBlock:
    """VGG-13."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs: Any) -> HybridBlock:
    """VGG-16."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs: Any) -> HybridBlock:
    """VGG-19."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs: Any) -> HybridBlock:
    """VGG-11 with BatchNorm."""
    kwargs["batch_norm"] = True
    return get_vgg(11, **kwargs)


def vgg13_bn(**kwargs: Any) -> HybridBlock:
    """VGG-13 with BatchNorm."""
    kwargs["batch_norm"] = True
    return get_vgg(13, **kwargs)


def vgg16_bn(**kwargs: Any) -> HybridBlock:
    """VGG-16 with BatchNorm."""
    kwargs["batch_norm"] = True
    return get_vgg(16, **kwargs)


def vgg19_bn(**kwargs: Any) -> HybridBlock:
    """VGG-19 with BatchNorm."""
    kwargs["batch_norm"] = True
    return get_vgg(19, **kwargs)
