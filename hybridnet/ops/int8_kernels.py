"""The int8 kernels the quantized operators run: the one module that calls torch's int8 backend.

Every quantized operator (``quantized_ops.py``) computes its integer arithmetic here, on plain
torch tensors (int8/uint8 in, the int32 accumulator out). Today the kernels are oneDNN's, as
torch's x86 backend exposes them (``torch.ops.onednn.qconv2d_pointwise`` /
``qlinear_pointwise`` with prepacked weights): real int8 multiply-accumulate, not float math on
fake-quantized values. torch marks its quantized-tensor API deprecated (2.13); these functions
take and give ordinary tensors so that the kernel source can change here alone.

Where the backend is missing (a torch without oneDNN, a CPU it does not serve) or refuses a
shape, the same accumulators are computed exactly in float64 (slow, correct).

Weights are packed once: the packed form is kept on the weight tensor itself (an attribute,
checked against the tensor's version counter, so writing the weight repacks it), so a compiled
graph, the interpreter and eager calls all pack a weight once, not per call.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import torch
from torch import Tensor

__all__ = ["available", "as_uint8", "conv2d_accumulate", "linear_accumulate"]

_PACK_ATTR = "_hybridnet_int8_packed"


def _onednn_ops() -> Any:
    try:
        ops = torch.ops.onednn
        ops.qconv2d_pointwise, ops.qconv_prepack, ops.qlinear_pointwise, ops.qlinear_prepack
        return ops
    except (AttributeError, RuntimeError):
        return None


_ONEDNN = _onednn_ops()
_broken: set = set()   # kernels that failed once on this machine: their float64 form serves


def available() -> bool:
    """Whether real int8 kernels serve the quantized operators here (else the float64 fallback)."""
    return _ONEDNN is not None and not _broken


def as_uint8(data: Tensor) -> tuple:
    """``(uint8 tensor, zero point)`` holding ``data`` (int8 or uint8): int8 ``q`` becomes
    ``q + 128`` with zero point 128 (the bit pattern with its sign bit flipped)."""
    if data.dtype == torch.uint8:
        return data, 0
    if data.dtype != torch.int8:
        raise TypeError(f"int8 kernels take int8 or uint8 data, got {data.dtype}")
    # the cast wraps (-1 -> 255); flipping the top bit then adds 128
    return data.to(torch.uint8).bitwise_xor_(128), 128


def _packed(weight: Tensor, key: tuple, pack: Any) -> Any:
    """The packed form of ``weight`` for ``key``, made by ``pack()`` once per weight version."""
    cache = getattr(weight, _PACK_ATTR, None)
    version = weight._version
    if cache is None or cache[0] != version:
        cache = (version, {})
        try:
            setattr(weight, _PACK_ATTR, cache)
        except (AttributeError, RuntimeError):  # a tensor that takes no attributes: pack per call
            return pack()
    packs: dict = cache[1]
    if key not in packs:
        packs[key] = pack()
    return packs[key]


def conv2d_accumulate(data: Tensor, weight: Tensor, bias: Optional[Tensor], stride: Sequence[int],
                      pad: Sequence[int], dilate: Sequence[int], groups: int) -> Tensor:
    """The int8 convolution's accumulators as float32: ``sum(data * weight) + bias`` over
    integer ``data`` (NCHW, int8 or uint8) and int8 ``weight`` (OIHW); ``bias`` is float32 in
    accumulator units. Exact while |accumulator| < 2**24 (float32's integers); the output may be
    channels-last in memory."""
    stride, pad, dilate = list(stride), list(pad), list(dilate)
    if _ONEDNN is not None and "conv" not in _broken:
        x, zp = as_uint8(data)
        n_out = weight.shape[0]

        def pack() -> Any:
            return (_ONEDNN.qconv_prepack(weight, torch.ones(n_out), 1.0, zp, stride, pad, dilate, groups, None),
                    torch.ones(n_out), torch.zeros(n_out, dtype=torch.int32))
        try:
            packed, ones, zeros = _packed(weight, ("conv", zp, tuple(stride), tuple(pad), tuple(dilate), groups),
                                          pack)
            return _ONEDNN.qconv2d_pointwise(x, 1.0, zp, packed, ones, zeros, bias, stride, pad, dilate, groups,
                                             1.0, 0, torch.float32, "none", [], "")
        except RuntimeError:
            _broken.add("conv")
    out = torch.nn.functional.conv2d(data.to(torch.float64), weight.to(torch.float64),
                                     None if bias is None else bias.to(torch.float64), stride, pad, dilate, groups)
    return out.to(torch.float32)


def linear_accumulate(data: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """The int8 matrix product's accumulators as float32: ``data @ weight.T + bias`` over
    integer 2-D ``data`` (int8 or uint8) and int8 ``weight`` (out, in); ``bias`` float32 in
    accumulator units."""
    if _ONEDNN is not None and "linear" not in _broken:
        x, zp = as_uint8(data)
        n_out = weight.shape[0]

        def pack() -> Any:
            return (_ONEDNN.qlinear_prepack(weight, None), torch.ones(n_out),
                    torch.zeros(n_out, dtype=torch.int32))
        try:
            packed, ones, zeros = _packed(weight, ("linear",), pack)
            return _ONEDNN.qlinear_pointwise(x.contiguous(), 1.0, zp, packed, ones, zeros, bias, 1.0, 0,
                                             torch.float32, "none", [], "")
        except RuntimeError:
            _broken.add("linear")
    out = data.to(torch.float64) @ weight.to(torch.float64).t()
    if bias is not None:
        out = out + bias.to(torch.float64)
    return out.to(torch.float32)
