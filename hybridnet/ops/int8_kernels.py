"""The int8 kernels the quantized operators run: the one module that calls torch's int8 backend.

Every quantized operator (``quantized_ops.py``) computes its integer arithmetic here, on plain
torch tensors (int8/uint8 in, the int32 accumulator out); the fused layers that the predict-mode
int8 fusion makes (``_int8_conv``, ``_int8_fully_connected``) run :func:`conv2d_requantized` /
:func:`linear_requantized`, int8/uint8 in and out, with an :class:`Int8Layer` made once. Today the kernels are oneDNN's, as
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

from typing import Any, NamedTuple, Optional, Sequence

import torch
from torch import Tensor

__all__ = ["available", "as_uint8", "conv2d_accumulate", "linear_accumulate", "Int8Layer", "prepared", "conv2d_requantized",
           "linear_requantized", "conv_prepack", "linear_prepack"]

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
    # the bits read as uint8 (-1 -> 255); flipping the top bit then adds 128 (one pass, a new tensor)
    return data.view(torch.uint8).bitwise_xor(128), 128


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


# ---- fused int8 layers (the predict-mode rewrite of compiler/passes/int8.py) ----------------------
# The fused operators (``quantized_ops._int8_conv`` / ``_int8_fully_connected``) take int8/uint8
# data and give int8/uint8 data directly: oneDNN scales the int32 accumulators, adds the float bias,
# applies relu (and adds a residual: the "sum" post-op) and rounds to the output's integers in one
# kernel, so no float32 accumulator array exists between layers.

_INT_LIMITS = {torch.uint8: (0.0, 255.0), torch.int8: (-127.0, 127.0)}


class Int8Layer(NamedTuple):
    """A fused int8 layer made ready once (per parameter version): the scales, packed weight,
    float bias and geometry :func:`conv2d_requantized` / :func:`linear_requantized` run with."""
    x_scale: float                # real value of one data step
    x_zp: int                     # 0 for uint8 data, 128 for int8 data (read as uint8, top bit flipped)
    packed: Any                   # oneDNN's packed weight; None: the float64 form computes
    weight: Tensor                # int8 (out, in[, kh, kw])
    w_scale: Tensor               # float32 (out,): real value of one weight step per output channel
    w_zero: Tensor                # int32 zeros (out,)
    bias: Optional[Tensor]        # float32 (out,) in real units
    stride: list
    pad: list
    dilate: list
    groups: int
    out_scale: float              # real value of one output step
    out_dtype: torch.dtype        # torch.uint8 or torch.int8
    relu: bool
    accum_scales: dict            # residual dtype -> real value of one of its steps
    ranges: list                  # the layer's (min, max) outputs: calibration constants


def prepared(weight: Tensor, key: tuple, deps: Sequence[Tensor], make: Any) -> Any:
    """What ``make()`` gives for ``weight`` and ``key``, made once while ``weight`` and the
    tensors ``deps`` (its ranges, bias...) keep their versions; kept on the weight tensor as the
    packed weights are."""
    entry = _packed(weight, key, lambda: [None, None])
    seen = entry[0]
    if seen is not None and len(seen) == len(deps):
        for (was, version), t in zip(seen, deps):
            if was is not t or version != t._version:
                break
        else:
            return entry[1]
    made = make()
    entry[1] = made  # the layer first: a reader that sees the new versions finds it (threads)
    entry[0] = tuple((t, t._version) for t in deps)
    return made


def _requantize_float(real: Tensor, out_scale: float, out_dtype: torch.dtype) -> Tensor:
    lo, hi = _INT_LIMITS[out_dtype]
    return real.div_(out_scale).round_().clamp_(lo, hi).to(out_dtype)


def conv_prepack(weight: Tensor, w_scale: Tensor, x_scale: float, x_zp: int, stride: Sequence[int],
                 pad: Sequence[int], dilate: Sequence[int], groups: int) -> Any:
    """``weight`` (int8, OIHW) packed for :func:`conv2d_requantized` (None where oneDNN does not
    serve: the float64 form then computes)."""
    if _ONEDNN is None or "qconv" in _broken:
        return None
    try:
        return _ONEDNN.qconv_prepack(weight, w_scale, x_scale, x_zp, list(stride), list(pad), list(dilate), groups,
                                     None)
    except RuntimeError:
        _broken.add("qconv")
        return None


def conv2d_requantized(layer: Int8Layer, data: Tensor, accum: Optional[Tensor] = None) -> Tensor:
    """``q = round(relu(conv(data * x_scale, weight * w_scale) + bias [+ accum * accum_scale]) /
    out_scale)`` saturated to ``out_dtype`` (uint8: [0, 255], int8: [-127, 127]), half to even.

    ``data``: uint8 or int8 (the layer's ``x_zp`` says which); ``accum``: an int8/uint8
    residual of the output's shape. The result may be channels-last in memory."""
    x = data if layer.x_zp == 0 else as_uint8(data)[0]
    if accum is None and _pointwise_on_tiny_images(layer, x):
        q = _pointwise_as_linear(layer, x)
        if q is not None:
            return q
    if layer.packed is not None and "qconv" not in _broken:
        unary = "relu" if layer.relu else "none"
        out_dtype = layer.out_dtype
        try:
            if accum is None:
                q = _ONEDNN.qconv2d_pointwise(x, layer.x_scale, layer.x_zp, layer.packed, layer.w_scale, layer.w_zero,
                                              layer.bias, layer.stride, layer.pad, layer.dilate, layer.groups,
                                              layer.out_scale, 0, None if out_dtype == torch.uint8 else out_dtype,
                                              unary, [], "")
            else:
                # the sum post-op writes into its accumulator, whose dtype is the output's: a fresh copy
                if out_dtype == torch.uint8:
                    acc, acc_zp = (accum.clone(), 0) if accum.dtype == torch.uint8 else as_uint8(accum)
                elif accum.dtype == torch.int8:
                    acc, acc_zp = accum.clone(), 0
                else:
                    raise RuntimeError("an int8 output cannot accumulate into uint8")
                q = _ONEDNN.qconv2d_pointwise.binary(x, layer.x_scale, layer.x_zp, layer.packed, layer.w_scale,
                                                     layer.w_zero, acc, layer.bias, layer.stride, layer.pad,
                                                     layer.dilate, layer.groups, layer.out_scale, 0, None,
                                                     layer.accum_scales[accum.dtype], acc_zp, "sum", 1.0, unary,
                                                     [], "")
            if out_dtype == torch.int8:
                q.clamp_(min=-127)  # oneDNN saturates at -128, MXNet at -127
            return q
        except RuntimeError:
            if accum is None:
                _broken.add("qconv")
    w64 = layer.weight.to(torch.float64) * layer.w_scale.to(torch.float64).reshape(-1, 1, 1, 1)
    real = torch.nn.functional.conv2d((x.to(torch.float64) - layer.x_zp) * layer.x_scale, w64,
                                      None if layer.bias is None else layer.bias.to(torch.float64), layer.stride,
                                      layer.pad, layer.dilate, layer.groups)
    if accum is not None:
        real += accum.to(torch.float64) * layer.accum_scales[accum.dtype]
    if layer.relu:
        real.clamp_(min=0.0)
    return _requantize_float(real, layer.out_scale, layer.out_dtype)


def _pointwise_on_tiny_images(layer: Int8Layer, x: Tensor) -> bool:
    """A 1x1 convolution (stride 1, no padding, one group) over images of at most 4 pixels."""
    w = layer.weight
    return w.dim() == 4 and w.shape[2] == 1 and w.shape[3] == 1 and layer.groups == 1 and x.dim() == 4 \
        and x.shape[2] * x.shape[3] <= 4 and list(layer.stride) == [1, 1] and list(layer.pad) == [0, 0] \
        and list(layer.dilate) == [1, 1]


def _pointwise_as_linear(layer: Int8Layer, x: Tensor) -> Optional[Tensor]:
    """A 1x1 convolution over tiny images as oneDNN's int8 matrix product over the pixels' rows
    (the same integers: oneDNN's int8 convolution is slow at these shapes, e.g. MobileNet's
    1024x1024 layer on 1x1 images of batch 32: 294 us as a convolution, 110 us as a product);
    None where the product is not served."""
    if _ONEDNN is None or "qlinear" in _broken:
        return None
    n, c, h, w = x.shape
    o = layer.weight.shape[0]
    packed = _packed(layer.weight, ("pointwise as linear",), lambda: linear_prepack(layer.weight.reshape(o, c)))
    if packed is None:
        return None
    out_dtype = layer.out_dtype
    try:
        q = _ONEDNN.qlinear_pointwise(x.permute(0, 2, 3, 1).reshape(n * h * w, c), layer.x_scale, layer.x_zp, packed,
                                      layer.w_scale, layer.w_zero, layer.bias, layer.out_scale, 0,
                                      None if out_dtype == torch.uint8 else out_dtype,
                                      "relu" if layer.relu else "none", [], "")
    except RuntimeError:
        return None
    if out_dtype == torch.int8:
        q.clamp_(min=-127)  # oneDNN saturates at -128, MXNet at -127
    return q.reshape(n, h, w, o).permute(0, 3, 1, 2)  # channels-last NCHW


def linear_prepack(weight: Tensor) -> Any:
    """``weight`` (int8, (out, in)) packed for :func:`linear_requantized` (None: float64 form)."""
    if _ONEDNN is None or "qlinear" in _broken:
        return None
    try:
        return _ONEDNN.qlinear_prepack(weight, None)
    except RuntimeError:
        _broken.add("qlinear")
        return None


def linear_requantized(layer: Int8Layer, data: Tensor) -> Tensor:
    """``q = round(relu(data * x_scale @ (weight * w_scale).T + bias) / out_scale)`` saturated to
    ``out_dtype`` over 2-D ``data`` (uint8 or int8), as :func:`conv2d_requantized`."""
    x = data if layer.x_zp == 0 else as_uint8(data)[0]
    out_dtype = layer.out_dtype
    if layer.packed is not None and "qlinear" not in _broken:
        try:
            q = _ONEDNN.qlinear_pointwise(x.contiguous(), layer.x_scale, layer.x_zp, layer.packed, layer.w_scale,
                                          layer.w_zero, layer.bias, layer.out_scale, 0,
                                          None if out_dtype == torch.uint8 else out_dtype,
                                          "relu" if layer.relu else "none", [], "")
            if out_dtype == torch.int8:
                q.clamp_(min=-127)
            return q
        except RuntimeError:
            _broken.add("qlinear")
    real = ((x.to(torch.float64) - layer.x_zp) * layer.x_scale) @ \
        (layer.weight.to(torch.float64) * layer.w_scale.to(torch.float64).reshape(-1, 1)).t()
    if layer.bias is not None:
        real += layer.bias.to(torch.float64)
    if layer.relu:
        real.clamp_(min=0.0)
    return _requantize_float(real, layer.out_scale, out_dtype)
