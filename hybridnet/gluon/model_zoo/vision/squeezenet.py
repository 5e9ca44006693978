"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016) as in MXNet 1.9.1's model zoo.

Fire modules are transparent blocks (``prefix=''``): their layers are named as children of
the network (``squeezenet0_conv3_weight``), as in MXNet.
"""
from __future__ import annotations

from typing import Any

from ....context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent
from ..model_store import DEFAULT_ROOT, load_pretrained, pretrained_setup

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _make_fire(squeeze_channels: int, expand1x1_channels: int, expand3x3_channels: int) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix="")
    out.add(_make_fire_conv(squeeze_channels, 1))
    paths = HybridConcurrent(axis=1, prefix="")
    paths.add(_make_fire_conv(expand1x1_channels, 1))
    paths.add(_make_fire_conv(expand3x3_channels, 3, 1))
    out.add(paths)
    return out


def _make_fire_conv(channels: int, kernel_size: int, padding: int = 0) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding))
    out.add(nn.Activation("relu"))
    return out


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` '1.0' or '1.1': conv stem, fire modules with ceil-mode max
    pooling and Dropout(0.5) in ``features``; ``output``: 1x1 conv to ``classes``, ReLU,
    13x13 average pooling, Flatten."""

    def __init__(self, version: str, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        if version not in ("1.0", "1.1"):
            raise ValueError(f"Unsupported SqueezeNet version {version!r}: '1.0' or '1.1' expected")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if version == "1.0":
                self.features.add(nn.Conv2D(96, kernel_size=7, strides=2))
                self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(16, 64, 64))
                self.features.add(_make_fire(16, 64, 64))
                self.features.add(_make_fire(32, 128, 128))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(32, 128, 128))
                self.features.add(_make_fire(48, 192, 192))
                self.features.add(_make_fire(48, 192, 192))
                self.features.add(_make_fire(64, 256, 256))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(64, 256, 256))
            else:
                self.features.add(nn.Conv2D(64, kernel_size=3, strides=2))
                self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(16, 64, 64))
                self.features.add(_make_fire(16, 64, 64))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(32, 128, 128))
                self.features.add(_make_fire(32, 128, 128))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                self.features.add(_make_fire(48, 192, 192))
                self.features.add(_make_fire(48, 192, 192))
                self.features.add(_make_fire(64, 256, 256))
                self.features.add(_make_fire(64, 256, 256))
            self.features.add(nn.Dropout(0.5))

            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1))
            self.output.add(nn.Activation("relu"))
            self.output.add(nn.AvgPool2D(13))
            self.output.add(nn.Flatten())

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


def get_squeezenet(version: str, pretrained: bool = False, ctx: Context = cpu(),
                   root: str = DEFAULT_ROOT, **kwargs: Any) -> HybridBlock:
    """SqueezeNet ``version`` '1.0' or '1.1'."""
    name = f"squeezenet{version}"
    pretrained_setup(name, pretrained, kwargs)
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        load_pretrained(net, name, ctx, root)
    return net


def squeezenet1_0(**kwargs: Any) -> HybridBlock:
    """SqueezeNet 1.0."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs: Any) -> HybridBlock:
    """SqueezeNet 1.1 (2.4x less computation than 1.0)."""
    return get_squeezenet("1.1", **kwargs)
