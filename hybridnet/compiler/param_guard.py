"""Whether parameter tensors changed since a compiled artefact baked them in.

Tiers that freeze weights into their program (folded BatchNorm scales, TorchScript freezing,
Inductor constants) must notice a ``Trainer.step`` or ``load_parameters`` before reusing it. A
tensor changes either by being replaced (``NDArray._t`` rebound: identity differs) or in place
(torch bumps its version counter on every in-place write, under ``no_grad`` too).
"""
from __future__ import annotations

from typing import Sequence

import torch

__all__ = ["ParameterSnapshot"]


class ParameterSnapshot:
    """The identities and version counters of ``tensors`` when taken."""

    __slots__ = ("_tensors", "_versions")

    def __init__(self, tensors: Sequence[torch.Tensor]):
        self._tensors = tuple(tensors)
        self._versions = tuple(t._version for t in self._tensors)

    def matches(self, tensors: Sequence[torch.Tensor]) -> bool:
        """True when ``tensors`` are the same objects, none written since the snapshot."""
        if len(tensors) != len(self._tensors):
            return False
        for t, s, v in zip(tensors, self._tensors, self._versions):
            if t is not s or t._version != v:
                return False
        return True
