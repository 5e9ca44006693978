"""MXNet's contrib quantize / dequantize: float data <-> int8 / uint8 with a (min, max) range.

int8 is symmetric: the real range is max(|min|, |max|) mapped onto [-127, 127], values rounded
half away from zero. uint8 maps [min, max] onto [0, 255], rounded half up. Both quantize outputs
the data and the range it used, so dequantize(quantize(x)) recovers x to within one step.
"""
from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from torch import Tensor

from ..base import MXNetError
from .registry import Sample, register

_R = np.random.RandomState(77)


def _range_of(min_range: Tensor, max_range: Tensor) -> tuple:
    return min_range.reshape(-1)[:1].to(torch.float32), max_range.reshape(-1)[:1].to(torch.float32)


def _np_quantize(data, min_range, max_range, out_type="uint8"):  # type: ignore[no-untyped-def]
    lo, hi = np.float32(min_range.reshape(-1)[0]), np.float32(max_range.reshape(-1)[0])
    x = data.astype(np.float32)
    if out_type == "int8":
        real = max(abs(lo), abs(hi))
        q = np.sign(x) * np.minimum(np.abs(x) * np.float32(127.0 / real) + np.float32(0.5), 127)
        return [np.trunc(q).astype(np.int8), np.array([-real], np.float32), np.array([real], np.float32)]
    q = np.clip((x - lo) * np.float32(255.0 / (hi - lo)) + np.float32(0.5), 0, 255)
    return [np.trunc(q).astype(np.uint8), np.array([lo], np.float32), np.array([hi], np.float32)]


@register("_contrib_quantize", num_outputs=3, output_names=("output", "min_output", "max_output"),
          differentiable=False, samples=lambda: [
              Sample((_R.uniform(-1, 1, (3, 4)), np.array([-1.0]), np.array([1.0])), {"out_type": "int8"},
                     ref=_np_quantize, grad=False),
              Sample((_R.uniform(0, 2, (5,)), np.array([0.0]), np.array([2.0])), {}, ref=_np_quantize,
                     grad=False)])
def _contrib_quantize(data: Tensor, min_range: Tensor, max_range: Tensor, *,
                      out_type: Literal["int8", "uint8"] = "uint8") -> list:
    """Quantize ``data`` to ``out_type`` over [min_range, max_range]; outputs (quantized, min, max)."""
    lo, hi = _range_of(min_range, max_range)
    x = data.detach().to(torch.float32)
    if out_type == "int8":
        real = torch.maximum(lo.abs(), hi.abs())
        if data.device.type != "meta" and bool((real == 0).any()):
            raise MXNetError("quantize: the range [min_range, max_range] must not be [0, 0]")
        q = torch.sign(x) * torch.clamp(x.abs() * (127.0 / real) + 0.5, max=127.0)
        return [torch.trunc(q).to(torch.int8), -real, real.clone()]
    q = torch.clamp((x - lo) * (255.0 / (hi - lo)) + 0.5, 0.0, 255.0)
    return [torch.trunc(q).to(torch.uint8), lo.clone(), hi.clone()]


def _np_dequantize(data, min_range, max_range, out_type="float32"):  # type: ignore[no-untyped-def]
    lo, hi = np.float32(min_range.reshape(-1)[0]), np.float32(max_range.reshape(-1)[0])
    if data.dtype == np.int8:
        return data.astype(np.float32) * (max(abs(lo), abs(hi)) / np.float32(127.0))
    return data.astype(np.float32) * ((hi - lo) / np.float32(255.0)) + lo


@register("_contrib_dequantize", differentiable=False, samples=lambda: [
    Sample((np.array([[18, -75], [77, 109]], np.int8), np.array([-1.0], np.float32),
            np.array([1.0], np.float32)), {}, ref=_np_dequantize, grad=False),
    Sample((np.array([0, 128, 255], np.uint8), np.array([0.5], np.float32), np.array([2.0], np.float32)), {},
           ref=_np_dequantize, grad=False)])
def _contrib_dequantize(data: Tensor, min_range: Tensor, max_range: Tensor, *,
                        out_type: Literal["float32"] = "float32") -> Tensor:
    """Float32 values of int8 / uint8 ``data`` quantized over [min_range, max_range]."""
    lo, hi = _range_of(min_range, max_range)
    x = data.to(torch.float32)
    if data.dtype == torch.int8:
        return x * (torch.maximum(lo.abs(), hi.abs()) / 127.0)
    if data.dtype != torch.uint8:
        raise MXNetError(f"dequantize: data must be int8 or uint8, got {data.dtype}")
    return x * ((hi - lo) / 255.0) + lo
