"""2-bit gradient compression with error feedback (MXNet 1.9.1 ``set_gradient_compression``).

Each pushed gradient plus the residual kept for its (key, slot) is quantized to three levels:
``+threshold`` where it is >= threshold, ``-threshold`` where it is <= -threshold, else 0; what
was cut off stays in the residual and is added to the next push.  MXNet packs the three
levels into 2 bits for the wire; here the all-reduce carries the dequantized values, so the
numbers (not the bytes) match MXNet.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import torch

from ..base import MXNetError

__all__ = ["TwoBitCompression", "parse_compression_params"]


class TwoBitCompression:
    """Quantizer holding one residual per (key, value slot)."""

    def __init__(self, threshold: float = 0.5) -> None:
        if not threshold > 0:
            raise MXNetError(f"gradient compression: threshold must be greater than 0, got {threshold}")
        self.threshold = float(threshold)
        self._residuals: Dict[Tuple[Any, int], torch.Tensor] = {}

    def quantize(self, key: Any, slot: int, grad: torch.Tensor) -> torch.Tensor:
        """The quantized ``grad`` (new tensor); updates the residual of (key, slot)."""
        residual = self._residuals.get((key, slot))
        if residual is None or residual.shape != grad.shape or residual.device != grad.device:
            residual = torch.zeros_like(grad)
        total = residual + grad.detach()
        out = torch.zeros_like(total)
        out[total >= self.threshold] = self.threshold
        out[total <= -self.threshold] = -self.threshold
        self._residuals[(key, slot)] = total - out
        return out


def parse_compression_params(params: Any) -> TwoBitCompression:
    """Validate ``{'type': '2bit', 'threshold': t}`` (threshold defaults to 0.5, as in MXNet)."""
    if not isinstance(params, dict) or "type" not in params:
        raise MXNetError(f"set_gradient_compression expects a dict with a 'type' key, e.g. "
                         f"{{'type': '2bit', 'threshold': 0.5}}; got {params!r}")
    unknown = sorted(set(params) - {"type", "threshold"})
    if unknown:
        raise MXNetError(f"set_gradient_compression: unknown parameter(s) {unknown}; "
                         f"valid are 'type' and 'threshold'")
    kind = str(params["type"])
    if kind != "2bit":
        raise MXNetError(f"set_gradient_compression: unknown type {kind!r}; MXNet 1.9.1 "
                         f"supports '2bit'")
    return TwoBitCompression(float(params.get("threshold", 0.5)))
