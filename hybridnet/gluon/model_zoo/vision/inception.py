"""Inception v3 (Szegedy et al. 2015) as in MXNet 1.9.1's model zoo (299x299 inputs).

Mixed blocks are ``HybridConcurrent`` blocks with prefixes ``A1_``...``E2_``; their branches
are transparent, so parameters are named ``inception30_A1_conv0_weight`` as in MXNet.
"""
from __future__ import annotations

from typing import Any, Optional

from ....context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent
from ..model_store import DEFAULT_ROOT, load_pretrained, pretrained_setup

__all__ = ["Inception3", "inception_v3"]

_SETTING_NAMES = ("channels", "kernel_size", "strides", "padding")


def _make_basic_conv(**kwargs: Any) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(use_bias=False, **kwargs))
    out.add(nn.BatchNorm(epsilon=0.001))
    out.add(nn.Activation("relu"))
    return out


def _make_branch(use_pool: Optional[str], *conv_settings: tuple) -> nn.HybridSequential:
    out = nn.HybridSequential(prefix="")
    if use_pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif use_pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in conv_settings:
        kwargs = {k: v for k, v in zip(_SETTING_NAMES, setting) if v is not None}
        out.add(_make_basic_conv(**kwargs))
    return out


def _make_A(pool_features: int, prefix: str) -> HybridBlock:
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (64, 1, None, None)))
        out.add(_make_branch(None, (48, 1, None, None), (64, 5, None, 2)))
        out.add(_make_branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)))
        out.add(_make_branch("avg", (pool_features, 1, None, None)))
    return out


def _make_B(prefix: str) -> HybridBlock:
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (384, 3, 2, None)))
        out.add(_make_branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)))
        out.add(_make_branch("max"))
    return out


def _make_C(channels_7x7: int, prefix: str) -> HybridBlock:
    c7 = channels_7x7
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (192, 1, None, None)))
        out.add(_make_branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                             (192, (7, 1), None, (3, 0))))
        out.add(_make_branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                             (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                             (192, (1, 7), None, (0, 3))))
        out.add(_make_branch("avg", (192, 1, None, None)))
    return out


def _make_D(prefix: str) -> HybridBlock:
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (192, 1, None, None), (320, 3, 2, None)))
        out.add(_make_branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                             (192, (7, 1), None, (3, 0)), (192, 3, 2, None)))
        out.add(_make_branch("max"))
    return out


def _make_E(prefix: str) -> HybridBlock:
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (320, 1, None, None)))

        branch_3x3 = nn.HybridSequential(prefix="")
        out.add(branch_3x3)
        branch_3x3.add(_make_branch(None, (384, 1, None, None)))
        branch_3x3_split = HybridConcurrent(axis=1, prefix="")
        branch_3x3_split.add(_make_branch(None, (384, (1, 3), None, (0, 1))))
        branch_3x3_split.add(_make_branch(None, (384, (3, 1), None, (1, 0))))
        branch_3x3.add(branch_3x3_split)

        branch_3x3dbl = nn.HybridSequential(prefix="")
        out.add(branch_3x3dbl)
        branch_3x3dbl.add(_make_branch(None, (448, 1, None, None), (384, 3, None, 1)))
        branch_3x3dbl_split = HybridConcurrent(axis=1, prefix="")
        branch_3x3dbl.add(branch_3x3dbl_split)
        branch_3x3dbl_split.add(_make_branch(None, (384, (1, 3), None, (0, 1))))
        branch_3x3dbl_split.add(_make_branch(None, (384, (3, 1), None, (1, 0))))

        out.add(_make_branch("avg", (192, 1, None, None)))
    return out


def make_aux(classes: int) -> nn.HybridSequential:
    """The auxiliary classifier head of Inception v3 (built by MXNet, unused by Inception3)."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.AvgPool2D(pool_size=5, strides=3))
    out.add(_make_basic_conv(channels=128, kernel_size=1))
    out.add(_make_basic_conv(channels=768, kernel_size=5))
    out.add(nn.Flatten())
    out.add(nn.Dense(classes))
    return out


class Inception3(HybridBlock):
    """Inception v3: conv stem, mixed blocks A1-A3, B, C1-C4, D, E1-E2, 8x8 average pooling
    and Dropout(0.5) in ``features``; ``output``: Dense(classes). Expects 299x299 inputs."""

    def __init__(self, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_make_basic_conv(channels=32, kernel_size=3, strides=2))
            self.features.add(_make_basic_conv(channels=32, kernel_size=3))
            self.features.add(_make_basic_conv(channels=64, kernel_size=3, padding=1))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_make_basic_conv(channels=80, kernel_size=1))
            self.features.add(_make_basic_conv(channels=192, kernel_size=3))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_make_A(32, "A1_"))
            self.features.add(_make_A(64, "A2_"))
            self.features.add(_make_A(64, "A3_"))
            self.features.add(_make_B("B_"))
            self.features.add(_make_C(128, "C1_"))
            self.features.add(_make_C(160, "C2_"))
            self.features.add(_make_C(160, "C3_"))
            self.features.add(_make_C(192, "C4_"))
            self.features.add(_make_D("D_"))
            self.features.add(_make_E("E1_"))
            self.features.add(_make_E("E2_"))
            self.features.add(nn.AvgPool2D(pool_size=8))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


def inception_v3(pretrained: bool = False, ctx: Context = cpu(), root: str = DEFAULT_ROOT,
                 **kwargs: Any) -> HybridBlock:
    """Inception v3; ``pretrained=True`` loads ``<root>/inceptionv3-<hash>.params``."""
    pretrained_setup("inceptionv3", pretrained, kwargs)
    net = Inception3(**kwargs)
    if pretrained:
        load_pretrained(net, "inceptionv3", ctx, root)
    return net
