"""ResNet V1 (He et al. 2015) and V2 (He et al. 2016) as in MXNet 1.9.1's model zoo.

Block structure, prefixes (``resnetv10_stage1_conv0_weight``...) and structural names
(``features.4.0.body.0.weight``...) are MXNet's, so MXNet's pretrained ``.params`` files and
exported graphs line up.
"""
from __future__ import annotations

from typing import Any, Sequence, Type

from ....context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import DEFAULT_ROOT, load_pretrained, pretrained_setup

__all__ = ["ResNetV1", "ResNetV2",
           "BasicBlockV1", "BasicBlockV2",
           "BottleneckV1", "BottleneckV2",
           "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
           "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2",
           "get_resnet"]


def _conv3x3(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


class BasicBlockV1(HybridBlock):
    """Two 3x3 conv + BN layers with an identity (or 1x1 conv + BN) shortcut, ReLU after the
    sum; ResNet V1 18/34."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3x3(channels, stride, in_channels))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation("relu"))
        self.body.add(_conv3x3(channels, 1, channels))
        self.body.add(nn.BatchNorm())
        if downsample:
            self.downsample = nn.HybridSequential(prefix="")
            self.downsample.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                                          in_channels=in_channels))
            self.downsample.add(nn.BatchNorm())
        else:
            self.downsample = None

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        residual = x
        x = self.body(x)
        if self.downsample:
            residual = self.downsample(residual)
        return F.Activation(residual + x, act_type="relu")


class BottleneckV1(HybridBlock):
    """1x1 (strided, with bias) -> 3x3 -> 1x1 conv + BN bottleneck; ResNet V1 50/101/152."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation("relu"))
        self.body.add(_conv3x3(channels // 4, 1, channels // 4))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation("relu"))
        self.body.add(nn.Conv2D(channels, kernel_size=1, strides=1))
        self.body.add(nn.BatchNorm())
        if downsample:
            self.downsample = nn.HybridSequential(prefix="")
            self.downsample.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                                          in_channels=in_channels))
            self.downsample.add(nn.BatchNorm())
        else:
            self.downsample = None

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        residual = x
        x = self.body(x)
        if self.downsample:
            residual = self.downsample(residual)
        return F.Activation(x + residual, act_type="relu")


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block (BN -> ReLU -> conv, twice); ResNet V2 18/34."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        if downsample:
            self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
        else:
            self.downsample = None

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        residual = x
        x = self.bn1(x)
        x = F.Activation(x, act_type="relu")
        if self.downsample:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.bn2(x)
        x = F.Activation(x, act_type="relu")
        x = self.conv2(x)
        return x + residual


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck (1x1 -> 3x3 strided -> 1x1, no biases); ResNet V2 50/101/152."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        if downsample:
            self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
        else:
            self.downsample = None

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        residual = x
        x = self.bn1(x)
        x = F.Activation(x, act_type="relu")
        if self.downsample:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.bn2(x)
        x = F.Activation(x, act_type="relu")
        x = self.conv2(x)
        x = self.bn3(x)
        x = F.Activation(x, act_type="relu")
        x = self.conv3(x)
        return x + residual


def _make_stage(block: Type[HybridBlock], layers: int, channels: int, stride: int, stage_index: int,
                in_channels: int) -> nn.HybridSequential:
    """One stage ``stage<i>_``: the first block may downsample, the rest keep the shape."""
    stage = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels, prefix=""))
        for _ in range(layers - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


class ResNetV1(HybridBlock):
    """ResNet V1: ``features`` (stem, four stages, global average pooling) and ``output``
    (Dense). ``thumbnail=True`` replaces the 7x7/2 stem and max pooling by one 3x3 conv
    (for 32x32 inputs)."""

    def __init__(self, block: Type[HybridBlock], layers: Sequence[int], channels: Sequence[int],
                 classes: int = 1000, thumbnail: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"ResNetV1: channels must have one more entry than layers, got "
                             f"layers={list(layers)} and channels={list(channels)}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False))
                self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(3, 2, 1))
            for i, num_layer in enumerate(layers):
                stride = 1 if i == 0 else 2
                self.features.add(_make_stage(block, num_layer, channels[i + 1], stride, i + 1,
                                              in_channels=channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


class ResNetV2(HybridBlock):
    """ResNet V2 (pre-activation): input BatchNorm without scale/center, stem, four stages,
    BN + ReLU, global pooling, Flatten; ``output`` Dense."""

    def __init__(self, block: Type[HybridBlock], layers: Sequence[int], channels: Sequence[int],
                 classes: int = 1000, thumbnail: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"ResNetV2: channels must have one more entry than layers, got "
                             f"layers={list(layers)} and channels={list(channels)}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False))
                self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(3, 2, 1))
            in_channels = channels[0]
            for i, num_layer in enumerate(layers):
                stride = 1 if i == 0 else 2
                self.features.add(_make_stage(block, num_layer, channels[i + 1], stride, i + 1,
                                              in_channels=in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.GlobalAvgPool2D())
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}

resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version: int, num_layers: int, pretrained: bool = False, ctx: Context = cpu(),
               root: str = DEFAULT_ROOT, **kwargs: Any) -> HybridBlock:
    """ResNet ``version`` (1 or 2) with ``num_layers`` in 18, 34, 50, 101, 152; with
    ``pretrained=True`` loads ``<root>/resnet<n>_v<version>-<hash>.params``."""
    if num_layers not in resnet_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(resnet_spec)}")
    if version not in (1, 2):
        raise ValueError(f"Invalid resnet version: {version}. Options are 1 and 2.")
    name = f"resnet{num_layers}_v{version}"
    pretrained_setup(name, pretrained, kwargs)
    block_type, layers, channels = resnet_spec[num_layers]
    net = resnet_net_versions[version - 1](resnet_block_versions[version - 1][block_type], layers,
                                           channels, **kwargs)
    if pretrained:
        load_pretrained(net, name, ctx, root)
    return net


def resnet18_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-18 V1 (``pretrained``, ``ctx``, ``root``, ``classes``, ``thumbnail``)."""
    return get_resnet(1, 18, **kwargs)


def resnet34_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-34 V1."""
    return get_resnet(1, 34, **kwargs)


def resnet50_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-50 V1."""
    return get_resnet(1, 50, **kwargs)


def resnet101_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-101 V1."""
    return get_resnet(1, 101, **kwargs)


def resnet152_v1(**kwargs: Any) -> HybridBlock:
    """ResNet-152 V1."""
    return get_resnet(1, 152, **kwargs)


def resnet18_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-18 V2."""
    return get_resnet(2, 18, **kwargs)


def resnet34_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-34 V2."""
    return get_resnet(2, 34, **kwargs)


def resnet50_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-50 V2."""
    return get_resnet(2, 50, **kwargs)


def resnet101_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-101 V2."""
    return get_resnet(2, 101, **kwargs)


def resnet152_v2(**kwargs: Any) -> HybridBlock:
    """ResNet-152 V2."""
    return get_resnet(2, 152, **kwargs)
