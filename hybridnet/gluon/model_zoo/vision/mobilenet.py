"""MobileNet (Howard et al. 2017) and MobileNetV2 (Sandler et al. 2018) as in MXNet 1.9.1's
model zoo, with width multipliers 1.0, 0.75, 0.5 and 0.25."""
from __future__ import annotations

from typing import Any

from ....context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import DEFAULT_ROOT, load_pretrained, pretrained_setup

__all__ = ["MobileNet", "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75",
           "mobilenet_v2_0_75", "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25",
           "mobilenet_v2_0_25", "get_mobilenet", "get_mobilenet_v2"]


class RELU6(HybridBlock):
    """``clip(x, 0, 6)`` (MobileNetV2's activation; graph node ``<prefix>relu6``)."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.clip(x, 0, 6, name="relu6")


def _add_conv(out: nn.HybridSequential, channels: int = 1, kernel: int = 1, stride: int = 1,
              pad: int = 0, num_group: int = 1, active: bool = True, relu6: bool = False) -> None:
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False))
    out.add(nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation("relu"))


def _add_conv_dw(out: nn.HybridSequential, dw_channels: int, channels: int, stride: int,
                 relu6: bool = False) -> None:
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1, num_group=dw_channels,
              relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's inverted residual: 1x1 expansion (x ``t``), 3x3 depthwise (stride),
    1x1 linear projection; identity shortcut when the shape is kept."""

    def __init__(self, in_channels: int, channels: int, t: int, stride: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential(prefix="")
            _add_conv(self.out, in_channels * t, relu6=True)
            _add_conv(self.out, in_channels * t, kernel=3, stride=stride, pad=1,
                      num_group=in_channels * t, relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        out = self.out(x)
        if self.use_shortcut:
            out = F.elemwise_add(out, x)
        return out


class MobileNet(HybridBlock):
    """MobileNet: 3x3/2 conv, 13 depthwise-separable conv pairs, global average pooling and
    Flatten in ``features``; ``output`` Dense(classes). Channels scale with ``multiplier``."""

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1, stride=2)
                dw_channels = [int(x * multiplier) for x in [32, 64] + [128] * 2 + [256] * 2
                               + [512] * 6 + [1024]]
                channels = [int(x * multiplier) for x in [64] + [128] * 2 + [256] * 2 + [512] * 6
                            + [1024] * 2]
                strides = [1, 2] * 3 + [1] * 5 + [2, 1]
                for dwc, c, s in zip(dw_channels, channels, strides):
                    _add_conv_dw(self.features, dw_channels=dwc, channels=c, stride=s)
                self.features.add(nn.GlobalAvgPool2D())
                self.features.add(nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


class MobileNetV2(HybridBlock):
    """MobileNetV2: ``features_`` (stem, 17 linear bottlenecks, 1x1 conv to 1280, global
    pooling) and ``output_`` (1x1 conv ``pred_`` to ``classes``, Flatten)."""

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1, relu6=True)
                in_channels_group = [int(x * multiplier) for x in [32] + [16] + [24] * 2 + [32] * 3
                                     + [64] * 4 + [96] * 3 + [160] * 3]
                channels_group = [int(x * multiplier) for x in [16] + [24] * 2 + [32] * 3 + [64] * 4
                                  + [96] * 3 + [160] * 3 + [320]]
                ts = [1] + [6] * 16
                strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
                for in_c, c, t, s in zip(in_channels_group, channels_group, ts, strides):
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t, stride=s))
                last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"), nn.Flatten())

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


def _version_suffix(multiplier: float) -> str:
    suffix = f"{multiplier:.2f}"
    return suffix[:-1] if suffix in ("1.00", "0.50") else suffix


def get_mobilenet(multiplier: float, pretrained: bool = False, ctx: Context = cpu(),
                  root: str = DEFAULT_ROOT, **kwargs: Any) -> HybridBlock:
    """MobileNet with width ``multiplier``; pretrained files are ``mobilenet<1.0|0.75|0.5|0.25>``."""
    name = f"mobilenet{_version_suffix(multiplier)}"
    pretrained_setup(name, pretrained, kwargs)
    net = MobileNet(multiplier, **kwargs)
    if pretrained:
        load_pretrained(net, name, ctx, root)
    return net


def get_mobilenet_v2(multiplier: float, pretrained: bool = False, ctx: Context = cpu(),
                     root: str = DEFAULT_ROOT, **kwargs: Any) -> HybridBlock:
    """MobileNetV2 with width ``multiplier``; pretrained files are ``mobilenetv2_<m>``."""
    name = f"mobilenetv2_{_version_suffix(multiplier)}"
    pretrained_setup(name, pretrained, kwargs)
    net = MobileNetV2(multiplier, **kwargs)
    if pretrained:
        load_pretrained(net, name, ctx, root)
    return net


def mobilenet1_0(**kwargs: Any) -> HybridBlock:
    """MobileNet, width multiplier 1.0."""
    return get_mobilenet(1.0, **kwargs)


def mobilenet_v2_1_0(**kwargs: Any) -> HybridBlock:
    """MobileNetV2, width multiplier 1.0."""
    return get_mobilenet_v2(1.0, **kwargs)


def mobilenet0_75(**kwargs: Any) -> HybridBlock:
    """MobileNet, width multiplier 0.75."""
    return get_mobilenet(0.75, **kwargs)


def mobilenet_v2_0_75(**kwargs: Any) -> HybridBlock:
    """MobileNetV2, width multiplier 0.75."""
    return get_mobilenet_v2(0.75, **kwargs)


def mobilenet0_5(**kwargs: Any) -> HybridBlock:
    """MobileNet, width multiplier 0.5."""
    return get_mobilenet(0.5, **kwargs)


def mobilenet_v2_0_5(**kwargs: Any) -> HybridBlock:
    """MobileNetV2, width multiplier 0.5."""
    return get_mobilenet_v2(0.5, **kwargs)


def mobilenet0_25(**kwargs: Any) -> HybridBlock:
    """MobileNet, width multiplier 0.25."""
    return get_mobilenet(0.25, **kwargs)


def mobilenet_v2_0_25(**kwargs: Any) -> HybridBlock:
    """MobileNetV2, width multiplier 0.25."""
    return get_mobilenet_v2(0.25, **kwargs)
