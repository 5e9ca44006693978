"""Basic layers (placeholder module replaced by the nn layers work)."""
from __future__ import annotations

from typing import Any

from ..block import Block, HybridBlock

__all__ = ["Sequential", "HybridSequential"]


class Sequential(Block):
    """Stacks Blocks sequentially."""

    def __init__(self, prefix: Any = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks: Block) -> None:
        for b in blocks:
            self.register_child(b)

    def forward(self, x: Any, *args: Any) -> Any:
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):
                args = x[1:]
                x = x[0]
        if args:
            x = tuple([x] + list(args))
        return x


class HybridSequential(HybridBlock):
    """Stacks HybridBlocks sequentially."""

    def __init__(self, prefix: Any = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks: HybridBlock) -> None:
        for b in blocks:
            self.register_child(b)

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):
                args = x[1:]
                x = x[0]
        if args:
            x = tuple([x] + list(args))
        return x
