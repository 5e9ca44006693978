"""AlexNet ("One weird trick", Krizhevsky 2014) as in MXNet 1.9.1's model zoo."""
from __future__ import annotations

from typing import Any

from ....context import Context, cpu
from ...block import HybridBlock
from ... import nn
from ..model_store import DEFAULT_ROOT, load_pretrained, pretrained_setup

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """Five conv layers (ReLU) with three max poolings, two Dense(4096, relu) + Dropout(0.5)
    in ``features``; ``output``: Dense(classes)."""

    def __init__(self, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                self.features.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Conv2D(384, kernel_size=3, padding=1, activation="relu"))
                self.features.add(nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"))
                self.features.add(nn.Conv2D(256, kernel_size=3, padding=1, activation="relu"))
                self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                self.features.add(nn.Dense(4096, activation="relu"))
                self.features.add(nn.Dropout(0.5))
                self.features.add(nn.Dense(4096, activation="relu"))
                self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        x = self.features(x)
        return self.output(x)


def alexnet(pretrained: bool = False, ctx: Context = cpu(), root: str = DEFAULT_ROOT,
            **kwargs: Any) -> HybridBlock:
    """AlexNet; ``pretrained=True`` loads ``<root>/alexnet-<hash>.params``."""
    pretrained_setup("alexnet", pretrained, kwargs)
    net = AlexNet(**kwargs)
    if pretrained:
        load_pretrained(net, "alexnet", ctx, root)
    return net
