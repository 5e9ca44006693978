"""MXNet's int8 operators: quantize_v2, requantize and the quantized layers of a quantized graph.

A quantized value travels as three arrays: the integers, and a float32 ``min`` and ``max`` (shape
(1,)) that give its scale. As in MXNet (``quantization_utils.h``, its oneDNN kernels), every range
is read symmetrically, ``real = max(|min|, |max|)``, and the float value of an integer ``q`` is

    int8:  q * real / 127      uint8: q * real / 255      int32: q * real / 2147483647

(uint8 has zero point 0: it holds values >= 0, as after a relu; negative inputs saturate to 0).
Float -> int8 rounds half away from zero and saturates at +-127 (MXNet's ``FloatToQuantized``),
float -> uint8 rounds half up and saturates at [0, 255]. An int8 matrix product of data and
weight leaves int32 accumulators whose range is ``+-unit_data * unit_weight * 2147483647``
(MXNet's ``QuantizationRangeForMultiplication``), which ``_contrib_requantize`` brings back to
int8/uint8 with a calibrated range (``min_calib_range``/``max_calib_range``) or, uncalibrated,
the range the values have.

The convolutions and matrix products run real int8 kernels (``int8_kernels``: oneDNN through
torch), not float math on rounded values. None of these operators has a gradient (MXNet's
quantized operators are inference-only), so the registry marks them ``differentiable=False``.

Hybridized predict-mode calls run chains of them fused (``_int8_conv``, ``_int8_fully_connected``,
at the end of this file; compiler/passes/int8.py): each operator's ``int8_role`` says its part.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..base import MXNetError
from . import int8_kernels
from ._helpers import ints as _ints, per_dim as _per_dim
from .attrs import OptFloat, OptInt, Shape
from .nn import Pooling as _pooling
from .norm import BatchNorm as _batch_norm
from .registry import Sample, register

__all__ = ["quantized_range", "real_range"]

_INT32_MAX = 2147483647.0
_QMAX = {torch.int8: 127.0, torch.uint8: 255.0, torch.int32: _INT32_MAX}
_NP_QMAX = {np.dtype(np.int8): 127.0, np.dtype(np.uint8): 255.0, np.dtype(np.int32): _INT32_MAX}
_TINY = 1e-30
_R = np.random.RandomState(2025)
_OUT3 = ("output", "min_output", "max_output")


def quantized_range(dtype: torch.dtype) -> float:
    """The integer that stands for ``real`` in a tensor of ``dtype`` (127, 255, 2**31 - 1)."""
    try:
        return _QMAX[dtype]
    except KeyError:
        raise MXNetError(f"quantized data must be int8, uint8 or int32, got {dtype}") from None


def real_range(lo: Tensor, hi: Tensor) -> float:
    """``max(|lo|, |hi|)`` of two range arrays (shape (1,)), as a Python float."""
    return max(abs(float(lo.detach().reshape(-1)[0])), abs(float(hi.detach().reshape(-1)[0])))


def _unit(data: Tensor, lo: Tensor, hi: Tensor) -> float:
    """The float value of one integer step of ``data`` quantized over [lo, hi]."""
    return real_range(lo, hi) / quantized_range(data.dtype)


def _f32(x: float) -> float:
    """``x`` rounded to float32 (the precision MXNet's ranges and scales have)."""
    return float(np.float32(x))


def _out_type(out_type: str, lo: Optional[float], hi: Optional[float]) -> torch.dtype:
    """MXNet's GetQuantizeOutputType: ``auto`` is uint8 for a calibrated range with min >= 0."""
    if out_type == "uint8":
        return torch.uint8
    if out_type == "auto" and lo is not None and hi is not None and lo >= 0.0:
        return torch.uint8
    return torch.int8


def _range_tensors(lo: float, hi: float, device: torch.device) -> list:
    return [torch.tensor([lo], dtype=torch.float32, device=device),
            torch.tensor([hi], dtype=torch.float32, device=device)]


def _requantized(scaled: Tensor, real: float, dtype: torch.dtype) -> list:
    """``scaled`` (float32 values already multiplied by ``qmax / real``, a fresh tensor) rounded
    to the nearest integer (ties to even, as MXNet's oneDNN kernels), saturated and cast:
    [q, min, max] over the symmetric range ``real`` (uint8: [0, real])."""
    if dtype == torch.uint8:
        q = scaled.round_().clamp_(0.0, 255.0).to(torch.uint8)
        return [q] + _range_tensors(0.0, real, scaled.device)
    q = scaled.round_().clamp_(-127.0, 127.0).to(torch.int8)
    return [q] + _range_tensors(-real, real, scaled.device)


def _quantize(v: Tensor, real: float, dtype: torch.dtype) -> list:
    """Float ``v`` quantized to ``dtype`` over the symmetric range ``real``: [q, min, max]."""
    scale = _f32(quantized_range(dtype) / real) if real > 0 else 0.0
    return _requantized(torch.mul(v, scale), real, dtype)


def _meta(shape: Any, dtype: torch.dtype) -> list:
    """Outputs of the right shapes and dtypes for shape and type inference on "meta" tensors."""
    return [torch.empty(tuple(shape), dtype=dtype, device="meta"), torch.empty((1,), device="meta"),
            torch.empty((1,), device="meta")]


def _calibrated(lo: Optional[float], hi: Optional[float]) -> Optional[float]:
    if lo is None or hi is None:
        return None
    return _f32(max(abs(lo), abs(hi)))


# ---- NumPy references of the integer semantics (the samples' refs) ---------------------------
def _np_real(lo: Any, hi: Any) -> np.float32:
    return np.float32(max(abs(float(np.asarray(lo).reshape(-1)[0])), abs(float(np.asarray(hi).reshape(-1)[0]))))


def _np_unit(q: np.ndarray, lo: Any, hi: Any) -> np.float32:
    return np.float32(_np_real(lo, hi) / np.float32(_NP_QMAX[q.dtype]))


def _np_scaled(scaled: np.ndarray, real: Any, dtype: Any) -> list:
    """Round half to even, saturate, cast; with the range [-real, real] (uint8: [0, real])."""
    if dtype == np.uint8:
        return [np.clip(np.round(scaled), 0, 255).astype(np.uint8), np.array([0.0], np.float32),
                np.array([real], np.float32)]
    return [np.clip(np.round(scaled), -127, 127).astype(np.int8), np.array([-real], np.float32),
            np.array([real], np.float32)]


def _np_quantize(v: np.ndarray, real: Any, dtype: Any) -> list:
    qmax = 255.0 if dtype == np.uint8 else 127.0
    return _np_scaled(v.astype(np.float32) * np.float32(qmax / float(real)), real, dtype)


# ---- quantize_v2 --------------------------------------------------------------------------------
def _np_quantize_v2(data, out_type="int8", min_calib_range=None, max_calib_range=None):  # type: ignore[no-untyped-def]
    dtype = np.uint8 if _out_type(out_type, min_calib_range, max_calib_range) == torch.uint8 else np.int8
    if min_calib_range is not None:
        real = np.float32(max(abs(min_calib_range), abs(max_calib_range)))
    else:
        real = np.float32(max(abs(data.min()), abs(data.max())))
    return _np_quantize(data, real, dtype)


def _quantize_v2_samples() -> list:
    x = _R.uniform(-2, 2, (3, 5)).astype(np.float32)
    pos = _R.uniform(0, 3, (2, 3, 4)).astype(np.float32)
    return [Sample((x,), {}, ref=_np_quantize_v2, grad=False),
            Sample((x,), {"min_calib_range": -1.0, "max_calib_range": 1.5}, ref=_np_quantize_v2, grad=False),
            Sample((pos,), {"out_type": "auto", "min_calib_range": 0.0, "max_calib_range": 2.0},
                   ref=_np_quantize_v2, grad=False),
            Sample((pos,), {"out_type": "uint8"}, ref=_np_quantize_v2, grad=False)]


@register("_contrib_quantize_v2", int8_role="entry", num_outputs=3, output_names=_OUT3, differentiable=False, returns_view=True,
          samples=_quantize_v2_samples)
def _contrib_quantize_v2(data: Tensor, *, out_type: Literal["auto", "int8", "uint8"] = "int8",
                         min_calib_range: OptFloat = None, max_calib_range: OptFloat = None) -> list:
    """Quantize float32 ``data`` to int8 (symmetric) or uint8 (zero point 0) over the calibrated
    range, else over the data's own min and max; outputs (quantized, min, max). Integer data
    passes through with the calibrated range (else the type's full range)."""
    dtype = _out_type(out_type, min_calib_range, max_calib_range)
    if data.dtype in (torch.int8, torch.uint8):
        if min_calib_range is not None and max_calib_range is not None:
            lo, hi = float(min_calib_range), float(max_calib_range)
        else:
            lo, hi = (0.0, 255.0) if data.dtype == torch.uint8 else (-127.0, 127.0)
        return [data] + _range_tensors(lo, hi, data.device)
    if data.device.type == "meta":
        return _meta(data.shape, dtype)
    if data.dtype != torch.float32:
        data = data.to(torch.float32)
    real = _calibrated(min_calib_range, max_calib_range)
    if real is None:
        if data.numel() == 0:
            raise MXNetError("quantize_v2: cannot take the range of an empty array; give "
                             "min_calib_range and max_calib_range")
        lo_t, hi_t = torch.aminmax(data)
        real = real_range(lo_t, hi_t)
    return _quantize(data, real, dtype)


# ---- requantize ---------------------------------------------------------------------------------
def _np_requantize(data, lo, hi, out_type="int8", min_calib_range=None, max_calib_range=None):  # type: ignore[no-untyped-def]
    unit = float(_np_real(lo, hi)) / _INT32_MAX
    if min_calib_range is not None:
        real = np.float32(max(abs(min_calib_range), abs(max_calib_range)))
    else:
        real = np.float32(max(abs(float(data.min())), abs(float(data.max()))) * unit)
    dtype = np.uint8 if _out_type(out_type, min_calib_range, max_calib_range) == torch.uint8 else np.int8
    qmax = 255.0 if dtype == np.uint8 else 127.0
    return _np_scaled(data.astype(np.float32) * np.float32(unit * qmax / float(real)), real, dtype)


def _requantize_samples() -> list:
    acc = _R.randint(-2 ** 20, 2 ** 20, (4, 6)).astype(np.int32)
    rng = (np.array([-3.0e4], np.float32), np.array([3.0e4], np.float32))
    return [Sample((acc,) + rng, {}, ref=_np_requantize, grad=False),
            Sample((acc,) + rng, {"min_calib_range": -10.0, "max_calib_range": 12.0}, ref=_np_requantize,
                   grad=False),
            Sample((np.abs(acc),) + rng, {"out_type": "auto", "min_calib_range": 0.0, "max_calib_range": 14.0},
                   ref=_np_requantize, grad=False)]


@register("_contrib_requantize", int8_role="requantize", num_outputs=3, output_names=_OUT3, differentiable=False,
          samples=_requantize_samples)
def _contrib_requantize(data: Tensor, min_range: Tensor, max_range: Tensor, *,
                        out_type: Literal["auto", "int8", "uint8"] = "int8",
                        min_calib_range: OptFloat = None, max_calib_range: OptFloat = None) -> list:
    """int32 ``data`` over [min_range, max_range] to int8/uint8 over the calibrated range (else
    the range of its values); outputs (quantized, min, max)."""
    if data.dtype != torch.int32:
        raise MXNetError(f"requantize: data must be int32 (a quantized layer's accumulators), got {data.dtype}")
    dtype = _out_type(out_type, min_calib_range, max_calib_range)
    if data.device.type == "meta":
        return _meta(data.shape, dtype)
    unit = real_range(min_range, max_range) / _INT32_MAX
    real = _calibrated(min_calib_range, max_calib_range)
    if real is None:
        if data.numel() == 0:
            raise MXNetError("requantize: cannot take the range of an empty array; give "
                             "min_calib_range and max_calib_range")
        lo_t, hi_t = torch.aminmax(data)
        real = _f32(max(abs(int(lo_t)), abs(int(hi_t))) * unit)
    scale = _f32(unit * quantized_range(dtype) / real) if real > 0 else 0.0
    return _requantized(torch.mul(data, scale), real, dtype)  # int32 * float: float32, one pass


# ---- quantized convolution and fully connected ------------------------------------------------------
def _qlayer_active(attrs: dict) -> tuple:
    if attrs.get("no_bias", False):
        return ("data", "weight", "min_data", "max_data", "min_weight", "max_weight")
    return ("data", "weight", "bias", "min_data", "max_data", "min_weight", "max_weight", "min_bias", "max_bias")


def _qlayer_inputs(no_bias: bool, args: tuple) -> tuple:
    """(data, weight, bias or None, min_data, max_data, min_weight, max_weight, min_bias,
    max_bias) from the kernel's positional inputs: a graph node without a bias has six, which
    fill the first six slots; an eager call hands every slot, the bias slot empty."""
    if no_bias and args[2] is not None:
        data, weight, min_d, max_d, min_w, max_w = args[:6]
        return data, weight, None, min_d, max_d, min_w, max_w, None, None
    if no_bias:
        return args[:2] + (None,) + tuple(args[3:7]) + (None, None)
    return tuple(args[:9])


def _check_qlayer(op: str, data: Tensor, weight: Tensor, bias: Optional[Tensor]) -> None:
    if data.dtype not in (torch.int8, torch.uint8):
        raise MXNetError(f"{op}: data must be int8 or uint8 (quantize it with quantize_v2), got {data.dtype}")
    if weight.dtype != torch.int8:
        raise MXNetError(f"{op}: weight must be int8, got {weight.dtype}")
    if bias is not None and bias.dtype != torch.int8:
        raise MXNetError(f"{op}: bias must be int8, got {bias.dtype}")


def _acc_unit(data: Tensor, min_d: Tensor, max_d: Tensor, weight: Tensor, min_w: Tensor, max_w: Tensor) -> float:
    """The float value of one accumulator step: data unit * weight unit (in float32)."""
    return _f32(_f32(_unit(data, min_d, max_d)) * _f32(_unit(weight, min_w, max_w)))


def _bias_in_accumulator(bias: Optional[Tensor], min_b: Optional[Tensor], max_b: Optional[Tensor],
                         acc_unit: float) -> Optional[Tensor]:
    """The int8 bias in accumulator units (``data unit * weight unit``), rounded to integers as
    MXNet's oneDNN kernels do (an int32 bias), held as float32."""
    if bias is None or bias.device.type == "meta":
        return None
    ratio = real_range(min_b, max_b) / 127.0 / max(acc_unit, _TINY)  # type: ignore[arg-type]
    return torch.round(bias.to(torch.float64) * ratio).to(torch.float32)


def _accumulators(acc: Tensor, acc_unit: float) -> list:
    """int32 accumulators (``acc`` holds integers in float32) and their range."""
    top = _f32(acc_unit * _INT32_MAX)
    return [acc.to(torch.int32)] + _range_tensors(-top, top, acc.device)


def _np_conv2d(x: np.ndarray, w: np.ndarray, stride: tuple, pad: tuple, dilate: tuple, groups: int) -> np.ndarray:
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, i * dilate[0]: i * dilate[0] + stride[0] * (oh - 1) + 1: stride[0],
                          j * dilate[1]: j * dilate[1] + stride[1] * (ow - 1) + 1: stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j].astype(np.float64))
    return out


def _np_qlayer(kind: str, args: tuple, attrs: dict) -> list:
    data, weight, bias, min_d, max_d, min_w, max_w, min_b, max_b = _qlayer_inputs(attrs.get("no_bias", False), args)
    acc_unit = np.float64(np.float32(_np_unit(data, min_d, max_d) * _np_unit(weight, min_w, max_w)))
    if kind == "conv":
        k = len(attrs["kernel"])
        acc = _np_conv2d(data, weight, attrs.get("stride") or (1,) * k, attrs.get("pad") or (0,) * k,
                         attrs.get("dilate") or (1,) * k, attrs.get("num_group", 1))
        shape: tuple = (1, -1, 1, 1)
    else:
        x = data.reshape(data.shape[0], -1) if attrs.get("flatten", True) else data
        acc = x.astype(np.float64) @ weight.astype(np.float64).T
        shape = (-1,)
    if bias is not None:
        acc = acc + np.round(bias.astype(np.float64) * (np.float64(_np_real(min_b, max_b)) / 127.0 / acc_unit)).reshape(shape)
    top = np.float32(acc_unit * _INT32_MAX)
    return [np.round(acc).astype(np.int32), np.array([-top], np.float32), np.array([top], np.float32)]


def _int_sample(shape: tuple, dtype: Any = np.int8, rng: Any = _R) -> np.ndarray:
    lo = 0 if dtype == np.uint8 else -127
    return rng.randint(lo, 128 if dtype == np.int8 else 256, shape).astype(dtype)


def _ranges(*reals: float) -> tuple:
    return tuple(a for r in reals for a in (np.array([-r], np.float32), np.array([r], np.float32)))


def _qconv_samples() -> list:
    x8, xu = _int_sample((2, 4, 6, 6)), _int_sample((2, 4, 5, 5), np.uint8)
    w, b = _int_sample((6, 4, 3, 3)), _int_sample((6,))
    dw = _int_sample((4, 1, 3, 3))
    ref = lambda *a, **k: _np_qlayer("conv", a, k)  # noqa: E731
    # (samples give inputs positionally, which a symbol without a bias cannot take: graphs
    # without a bias are tested through quantized models, tests/contrib/test_quantization.py)
    return [Sample((x8, w, b) + _ranges(1.5, 0.3, 0.2), {"kernel": (3, 3), "num_filter": 6, "pad": (1, 1)},
                   ref=ref, grad=False),
            Sample((xu, w, b) + _ranges(2.0, 0.5, 0.1), {"kernel": (3, 3), "num_filter": 6, "stride": (2, 2)},
                   ref=ref, grad=False),
            Sample((x8, dw, b[:4]) + _ranges(1.0, 0.7, 0.3), {"kernel": (3, 3), "num_filter": 4, "num_group": 4,
                                                             "dilate": (2, 2)}, ref=ref, grad=False)]


@register("_contrib_quantized_conv", int8_role="conv_layer", num_outputs=3, output_names=_OUT3, active_inputs=_qlayer_active,
          differentiable=False, samples=_qconv_samples)
def _contrib_quantized_conv(data: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                            min_data: Optional[Tensor] = None, max_data: Optional[Tensor] = None,
                            min_weight: Optional[Tensor] = None, max_weight: Optional[Tensor] = None,
                            min_bias: Optional[Tensor] = None, max_bias: Optional[Tensor] = None, *,
                            kernel: Shape, stride: Shape = (), dilate: Shape = (), pad: Shape = (),
                            num_filter: int, num_group: int = 1, workspace: int = 1024, no_bias: bool = False,
                            cudnn_tune: str = None, cudnn_off: bool = False,  # type: ignore[assignment]
                            layout: str = None) -> list:  # type: ignore[assignment]
    """2-D convolution of int8/uint8 ``data`` with int8 ``weight`` (and int8 ``bias``) into
    int32 accumulators; outputs (accumulators, min, max). Inputs without a bias: data, weight,
    min_data, max_data, min_weight, max_weight."""
    data, weight, bias, min_d, max_d, min_w, max_w, min_b, max_b = _qlayer_inputs(
        no_bias, (data, weight, bias, min_data, max_data, min_weight, max_weight, min_bias, max_bias))
    k = _ints(kernel)
    if len(k) != 2 or data.dim() != 4:
        raise MXNetError(f"quantized_conv: only 2-D convolutions (4-D NCHW data) are quantized, got kernel={k} "
                         f"and data of shape {tuple(data.shape)}")
    if layout not in (None, "NCHW"):
        raise MXNetError(f"quantized_conv: layout must be NCHW, got {layout!r}")
    _check_qlayer("quantized_conv", data, weight, bias)
    s, p, d = _per_dim(stride, 2, 1, "stride", "quantized_conv"), _per_dim(pad, 2, 0, "pad", "quantized_conv"), \
        _per_dim(dilate, 2, 1, "dilate", "quantized_conv")
    if data.device.type == "meta":
        acc = F.conv2d(torch.empty(data.shape, device="meta"), torch.empty(weight.shape, device="meta"), None,
                       s, p, d, num_group)
        return _meta(acc.shape, torch.int32)
    acc_unit = _acc_unit(data, min_d, max_d, weight, min_w, max_w)  # type: ignore[arg-type]
    bias_acc = _bias_in_accumulator(bias, min_b, max_b, acc_unit)
    return _accumulators(int8_kernels.conv2d_accumulate(data, weight, bias_acc, s, p, d, num_group), acc_unit)


def _qfc_samples() -> list:
    x, w, b = _int_sample((3, 2, 5)), _int_sample((4, 10)), _int_sample((4,))
    ref = lambda *a, **k: _np_qlayer("fc", a, k)  # noqa: E731
    return [Sample((x, w, b) + _ranges(3.0, 0.4, 0.1), {"num_hidden": 4}, ref=ref, grad=False),
            Sample((_int_sample((5, 10), np.uint8), w, b) + _ranges(2.0, 0.4, 0.2), {"num_hidden": 4},
                   ref=ref, grad=False)]


@register("_contrib_quantized_fully_connected", int8_role="fc_layer", num_outputs=3, output_names=_OUT3, active_inputs=_qlayer_active,
          differentiable=False, samples=_qfc_samples)
def _contrib_quantized_fully_connected(data: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                                       min_data: Optional[Tensor] = None, max_data: Optional[Tensor] = None,
                                       min_weight: Optional[Tensor] = None, max_weight: Optional[Tensor] = None,
                                       min_bias: Optional[Tensor] = None, max_bias: Optional[Tensor] = None, *,
                                       num_hidden: int, no_bias: bool = False, flatten: bool = True) -> list:
    """``data @ weight.T (+ bias)`` over int8/uint8 data and int8 weight into int32
    accumulators; outputs (accumulators, min, max)."""
    data, weight, bias, min_d, max_d, min_w, max_w, min_b, max_b = _qlayer_inputs(
        no_bias, (data, weight, bias, min_data, max_data, min_weight, max_weight, min_bias, max_bias))
    _check_qlayer("quantized_fully_connected", data, weight, bias)
    if weight.shape[0] != num_hidden:
        raise MXNetError(f"quantized_fully_connected: weight has shape {tuple(weight.shape)}, but "
                         f"num_hidden={num_hidden} needs {num_hidden} rows")
    lead = data.shape[:1] if flatten else data.shape[:-1]
    x = data.reshape(-1, weight.shape[1]) if not flatten else data.reshape(data.shape[0], -1)
    if x.shape[1] != weight.shape[1]:
        raise MXNetError(f"quantized_fully_connected: data of shape {tuple(data.shape)} has {x.shape[1]} "
                         f"features, the weight {tuple(weight.shape)} expects {weight.shape[1]}")
    if data.device.type == "meta":
        return _meta(tuple(lead) + (num_hidden,), torch.int32)
    acc_unit = _acc_unit(data, min_d, max_d, weight, min_w, max_w)  # type: ignore[arg-type]
    bias_acc = _bias_in_accumulator(bias, min_b, max_b, acc_unit)
    out = _accumulators(int8_kernels.linear_accumulate(x, weight, bias_acc), acc_unit)
    out[0] = out[0].reshape(tuple(lead) + (num_hidden,))
    return out


# ---- layers that keep the range: pooling, relu, flatten -------------------------------------------
def _np_qpool(data, lo, hi, kernel=(), pool_type="max", stride=(), global_pool=False, **_):  # type: ignore[no-untyped-def]
    x = data.astype(np.float64)
    if global_pool:
        y = x.max(axis=(2, 3), keepdims=True) if pool_type == "max" else x.mean(axis=(2, 3), keepdims=True)
    else:
        (kh, kw), (sh, sw) = kernel, stride or (1, 1)
        oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
        win = np.stack([x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
                        for i in range(kh) for j in range(kw)])
        y = win.max(axis=0) if pool_type == "max" else win.mean(axis=0)
    return [np.round(y).astype(data.dtype), lo, hi]


def _qpool_samples() -> list:
    x8, xu = _int_sample((2, 3, 6, 6)), _int_sample((1, 2, 5, 5), np.uint8)
    rng = _ranges(2.0)
    return [Sample((x8,) + rng, {"kernel": (2, 2), "stride": (2, 2)}, ref=_np_qpool, grad=False),
            Sample((xu,) + rng, {"kernel": (3, 3), "pool_type": "avg", "stride": (1, 1)}, ref=_np_qpool, grad=False),
            Sample((x8,) + rng, {"global_pool": True, "pool_type": "avg", "kernel": (1, 1)}, ref=_np_qpool,
                   grad=False),
            Sample((_int_sample((2, 3, 1, 1), np.uint8),) + rng, {"global_pool": True, "pool_type": "avg",
                                                                  "kernel": (1, 1)}, ref=_np_qpool, grad=False)]


@register("_contrib_quantized_pooling", int8_role="keeps_range", num_outputs=3, output_names=_OUT3, differentiable=False, returns_view=True,
          samples=_qpool_samples)
def _contrib_quantized_pooling(data: Tensor, min_data: Tensor, max_data: Tensor, *, kernel: Shape = (),
                               pool_type: Literal["avg", "lp", "max", "sum"] = "max", global_pool: bool = False,
                               cudnn_off: bool = False, pooling_convention: Literal["full", "same", "valid"] = "valid",
                               stride: Shape = (), pad: Shape = (), p_value: OptInt = None,
                               count_include_pad: bool = True, layout: str = None) -> list:  # type: ignore[assignment]
    """Max or average pooling of int8/uint8 data (Pooling's conventions); averages round to the
    nearest integer; the range passes through."""
    if pool_type not in ("max", "avg"):
        raise MXNetError(f"quantized_pooling: only pool_type max and avg are quantized, got {pool_type!r}")
    if data.dtype not in (torch.int8, torch.uint8):
        raise MXNetError(f"quantized_pooling: data must be int8 or uint8, got {data.dtype}")
    if global_pool and data.dim() == 4 and data.shape[2] == 1 and data.shape[3] == 1:
        return [data, min_data, max_data]  # one value per channel: its max and its mean
    if pool_type == "max" and not global_pool and pooling_convention == "valid" and data.device.type != "meta":
        try:  # torch's max pooling takes int8 / uint8 as they are
            return [_pooling(data, kernel=kernel, pool_type="max", stride=stride, pad=pad, layout=layout),
                    min_data, max_data]
        except (RuntimeError, NotImplementedError):
            pass
    out = _pooling(data.to(torch.float32), kernel=kernel, pool_type=pool_type, global_pool=global_pool,
                   pooling_convention=pooling_convention, stride=stride, pad=pad,
                   count_include_pad=count_include_pad, layout=layout)
    if pool_type == "avg":
        out = out.round_()
    return [out.to(data.dtype), min_data, max_data]


def _np_qact(data, lo, hi, act_type="relu"):  # type: ignore[no-untyped-def]
    return [np.maximum(data, 0).astype(data.dtype), lo, hi]


@register("_contrib_quantized_act", int8_role="relu_act", num_outputs=3, output_names=_OUT3, differentiable=False, returns_view=True,
          samples=lambda: [
    Sample((_int_sample((3, 4)),) + _ranges(1.0), {"act_type": "relu"}, ref=_np_qact, grad=False),
    Sample((_int_sample((2, 5), np.uint8),) + _ranges(1.0), {"act_type": "relu"}, ref=_np_qact, grad=False)])
def _contrib_quantized_act(data: Tensor, min_data: Tensor, max_data: Tensor, *,
                           act_type: Literal["relu", "sigmoid", "softrelu", "softsign", "tanh"]) -> list:
    """relu of int8/uint8 data (the only activation MXNet quantizes); the range passes through."""
    if act_type != "relu":
        raise MXNetError(f"quantized_act: only act_type='relu' is quantized, got {act_type!r}")
    if data.dtype == torch.uint8:
        return [data, min_data, max_data]
    return [torch.clamp(data, min=0), min_data, max_data]


@register("_contrib_quantized_flatten", int8_role="keeps_range", num_outputs=3, output_names=_OUT3, differentiable=False, returns_view=True,
          samples=lambda: [
    Sample((_int_sample((2, 3, 4)),) + _ranges(1.0), {},
           ref=lambda x, lo, hi: [x.reshape(x.shape[0], -1), lo, hi], grad=False)])
def _contrib_quantized_flatten(data: Tensor, min_data: Tensor, max_data: Tensor) -> list:
    """Flatten of quantized data: (d0, d1, ..., dk) -> (d0, d1*...*dk); the range passes through."""
    if data.dim() <= 1:
        return [data.reshape(-1 if data.dim() else 1, 1), min_data, max_data]
    return [data.flatten(1), min_data, max_data]


# ---- elementwise addition --------------------------------------------------------------------------
def _np_qadd(a, b, a_lo, a_hi, b_lo, b_hi, min_calib_range=None, max_calib_range=None):  # type: ignore[no-untyped-def]
    if min_calib_range is None:
        top, dtype, qmax = np.float32(float(_np_real(a_lo, a_hi)) + float(_np_real(b_lo, b_hi))), np.int32, _INT32_MAX
    else:
        top = np.float32(max(abs(min_calib_range), abs(max_calib_range)))
        dtype = a.dtype if a.dtype == b.dtype else np.int8
        qmax = 255.0 if dtype == np.uint8 else 127.0
    sa = np.float32(float(_np_real(a_lo, a_hi)) / _NP_QMAX[a.dtype] * qmax / float(top))
    sb = np.float32(float(_np_real(b_lo, b_hi)) / _NP_QMAX[b.dtype] * qmax / float(top))
    scaled = a.astype(np.float32) * sa + b.astype(np.float32) * sb
    if dtype == np.int32:
        return [np.round(scaled.astype(np.float64)).astype(np.int32), np.array([-top], np.float32),
                np.array([top], np.float32)]
    return _np_scaled(scaled, top, dtype)


def _qadd_samples() -> list:
    a, b, u = _int_sample((3, 4)), _int_sample((3, 4)), _int_sample((3, 4), np.uint8)
    return [Sample((a, b) + _ranges(1.0, 2.0), {}, ref=_np_qadd, grad=False),
            Sample((a, u) + _ranges(1.0, 0.5), {"min_calib_range": -1.2, "max_calib_range": 1.2}, ref=_np_qadd,
                   grad=False)]


@register("_contrib_quantized_elemwise_add", int8_role="add", num_outputs=3, output_names=_OUT3, differentiable=False,
          samples=_qadd_samples)
def _contrib_quantized_elemwise_add(lhs: Tensor, rhs: Tensor, lhs_min: Tensor, lhs_max: Tensor, rhs_min: Tensor,
                                    rhs_max: Tensor, *, min_calib_range: OptFloat = None,
                                    max_calib_range: OptFloat = None) -> list:
    """``lhs + rhs`` of quantized arrays of one shape: int32 over the sum of their ranges, or,
    calibrated, int8 (uint8 when both are uint8) over the calibrated range."""
    if lhs.shape != rhs.shape:
        raise MXNetError(f"quantized_elemwise_add: lhs {tuple(lhs.shape)} and rhs {tuple(rhs.shape)} must have "
                         "one shape")
    real = _calibrated(min_calib_range, max_calib_range)
    dtype = torch.int32 if real is None else lhs.dtype if lhs.dtype == rhs.dtype else torch.int8
    if lhs.device.type == "meta":
        return _meta(lhs.shape, dtype)
    ra, rb = real_range(lhs_min, lhs_max), real_range(rhs_min, rhs_max)
    top = _f32(ra + rb) if real is None else real
    qmax = quantized_range(dtype)
    sa = _f32(ra / quantized_range(lhs.dtype) * qmax / top) if top > 0 else 0.0
    sb = _f32(rb / quantized_range(rhs.dtype) * qmax / top) if top > 0 else 0.0
    scaled = torch.mul(lhs, sa).add_(torch.mul(rhs, sb))  # in the output's integer units
    if real is None:  # int32 over the sum of the two ranges
        return [scaled.round_().to(torch.int32)] + _range_tensors(-top, top, lhs.device)
    return _requantized(scaled, real, dtype)


# ---- batch norm -----------------------------------------------------------------------------------
def _np_qbn(data, gamma, beta, mean, var, lo, hi, eps=1e-3, fix_gamma=True, min_calib_range=None,  # type: ignore[no-untyped-def]
            max_calib_range=None, **_):
    v = data.astype(np.float32) * np.float32(float(_np_real(lo, hi)) / _NP_QMAX[data.dtype])
    g = np.ones_like(gamma) if fix_gamma else gamma
    sh = (1, -1) + (1,) * (data.ndim - 2)
    y = (v - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + np.float32(eps)) * g.reshape(sh) + beta.reshape(sh)
    real = np.float32(max(abs(min_calib_range), abs(max_calib_range))) if min_calib_range is not None \
        else np.float32(max(abs(y.min()), abs(y.max())))
    return _np_quantize(y.astype(np.float32), real, np.int8)


def _qbn_samples() -> list:
    x = _int_sample((2, 3, 4, 4))
    g, b = _R.uniform(0.5, 1.5, 3).astype(np.float32), _R.randn(3).astype(np.float32)
    m, v = _R.randn(3).astype(np.float32), _R.uniform(0.5, 2, 3).astype(np.float32)
    return [Sample((x, g, b, m, v) + _ranges(2.0), {"fix_gamma": False, "min_calib_range": -3.0,
                                                    "max_calib_range": 3.0}, ref=_np_qbn, grad=False, rtol=0, atol=1),
            Sample((x, g, b, m, v) + _ranges(2.0), {}, ref=_np_qbn, grad=False, rtol=0, atol=1)]


@register("_contrib_quantized_batch_norm", num_outputs=3, output_names=_OUT3, aux=("moving_mean", "moving_var"),
          differentiable=False, samples=_qbn_samples)
def _contrib_quantized_batch_norm(data: Tensor, gamma: Tensor, beta: Tensor, moving_mean: Tensor,
                                  moving_var: Tensor, min_data: Tensor, max_data: Tensor, *, eps: float = 1e-3,
                                  momentum: float = 0.9, fix_gamma: bool = True, use_global_stats: bool = False,
                                  output_mean_var: bool = False, axis: int = 1, cudnn_off: bool = False,
                                  min_calib_range: OptFloat = None, max_calib_range: OptFloat = None) -> list:
    """Inference BatchNorm (moving statistics) of int8/uint8 data into int8 over the calibrated
    range (else the range of the result); outputs (quantized, min, max)."""
    if data.dtype not in (torch.int8, torch.uint8):
        raise MXNetError(f"quantized_batch_norm: data must be int8 or uint8, got {data.dtype}")
    if data.device.type == "meta":
        return _meta(data.shape, torch.int8)
    v = torch.mul(data, _f32(_unit(data, min_data, max_data)))
    y = _batch_norm(v, gamma, beta, moving_mean, moving_var, eps=eps, fix_gamma=fix_gamma, axis=axis,
                    use_global_stats=True)
    real = _calibrated(min_calib_range, max_calib_range)
    if real is None:
        lo_t, hi_t = torch.aminmax(y)
        real = _f32(real_range(lo_t, hi_t))
    return _quantize(y, real, torch.int8)


# ---- fused int8 layers (predict mode: compiler/passes/int8.py builds them) ----------------------
# ``_contrib_quantized_conv`` -> ``_contrib_requantize`` (calibrated) [-> ``_contrib_quantized_act``
# relu], and a residual ``_contrib_quantized_elemwise_add`` [-> requantize -> relu] over it, become
# one ``_int8_conv``: oneDNN rounds the output integers straight from the accumulators. The
# ranges of its input and output are calibration constants (attributes); weight ranges and bias
# are parameters, turned into per-channel scales and a float bias once per parameter version.
# Where it may differ from the unfused chain: the float product ``acc * scale`` rounds in another
# order (an integer of one step now and then), and a residual sum is not first rounded to
# the branch's int8 (the fused sum is the more exact one).

_RANGE_CACHE: dict = {}
_SAMPLE_SEED = 7  # the fused layers' samples (see _int8_conv_samples)


def _const_range(lo: float, hi: float, device: torch.device) -> list:
    """The range outputs (min, max) of a fused layer: calibration constants, made once."""
    key = (lo, hi, device)
    hit = _RANGE_CACHE.get(key)
    if hit is None:
        hit = _RANGE_CACHE[key] = _range_tensors(lo, hi, device)
    return hit


def _out_range(out_type: str, out_range: float, device: torch.device) -> list:
    return _const_range(0.0, out_range, device) if out_type == "uint8" else \
        _const_range(-out_range, out_range, device)


def _layer_prep(data: Tensor, data_range: float, weight: Tensor, min_w: Tensor, max_w: Tensor,
                bias: Optional[Tensor], min_b: Optional[Tensor], max_b: Optional[Tensor], packer: Any,
                geometry: tuple, out_type: str, out_range: float, relu: bool,
                accum_range: Optional[float]) -> int8_kernels.Int8Layer:
    """An int8 layer made ready (``int8_kernels.Int8Layer``): data and weight scales (weights per
    output channel), the bias as MXNet's int32 bias (rounded in accumulator units) in real
    units, the weight packed by ``packer(w_scale, x_scale, x_zp)``."""
    x_scale = _f32(data_range / quantized_range(data.dtype))
    n_out = weight.shape[0]
    w_real = torch.maximum(min_w.detach().abs(), max_w.detach().abs()).to(torch.float64).reshape(-1)
    w_scale64 = (w_real / 127.0).expand(n_out) if w_real.numel() == 1 else w_real / 127.0
    w_scale = w_scale64.to(torch.float32).contiguous()
    acc_unit = (torch.tensor(x_scale, dtype=torch.float32) * w_scale).to(torch.float64)
    fbias = None
    if bias is not None and min_b is not None and max_b is not None:
        b_unit = real_range(min_b, max_b) / 127.0
        fbias = (torch.round(bias.detach().to(torch.float64) * b_unit / acc_unit.clamp(min=_TINY)) * acc_unit) \
            .to(torch.float32)
    x_zp = 0 if data.dtype == torch.uint8 else 128
    dtype = torch.uint8 if out_type == "uint8" else torch.int8
    accum_scales = {} if accum_range is None else \
        {t: _f32(float(accum_range) / quantized_range(t)) for t in (torch.int8, torch.uint8)}
    s, p, d, groups = geometry
    return int8_kernels.Int8Layer(x_scale, x_zp, packer(w_scale, x_scale, x_zp), weight.detach(), w_scale,
                                  torch.zeros(n_out, dtype=torch.int32), fbias, list(s), list(p), list(d), groups,
                                  _f32(out_range / quantized_range(dtype)), dtype, relu, accum_scales,
                                  _out_range(out_type, out_range, data.device))


def _fused_inputs(no_bias: bool, bias: Optional[Tensor], min_b: Optional[Tensor], max_b: Optional[Tensor],
                  accum: Optional[Tensor]) -> tuple:
    """(bias, min_bias, max_bias, accum): a graph node without a bias hands its residual in the
    bias slot (its inputs fill the first slots); an eager call hands every slot."""
    if no_bias:
        return None, None, None, accum if accum is not None else bias
    return bias, min_b, max_b, accum


def _int8_active(extra: tuple) -> Any:
    def active(attrs: dict) -> tuple:
        names: tuple = ("data", "weight", "min_weight", "max_weight")
        if not attrs.get("no_bias", False):
            names += ("bias", "min_bias", "max_bias")
        return names + tuple(e for e in extra if attrs.get("accum_range") is not None)
    return active


def _np_fused(kind: str, data, weight, min_w, max_w, bias=None, min_b=None, max_b=None, accum=None, *,  # type: ignore[no-untyped-def]
              data_range, out_type, out_range, relu=False, accum_range=None, **attrs):
    x_scale = np.float64(np.float32(data_range / _NP_QMAX[data.dtype]))
    w_scale = np.float64(max(abs(float(min_w.reshape(-1)[0])), abs(float(max_w.reshape(-1)[0]))) / 127.0)
    acc_unit = np.float64(np.float32(np.float32(x_scale) * np.float32(w_scale)))
    if kind == "conv":
        acc = _np_conv2d(data, weight, attrs.get("stride") or (1, 1), attrs.get("pad") or (0, 0),
                         attrs.get("dilate") or (1, 1), attrs.get("num_group", 1))
        shape: tuple = (1, -1, 1, 1)
    else:
        acc = data.reshape(data.shape[0], -1).astype(np.float64) @ weight.astype(np.float64).T
        shape = (-1,)
    real = acc * x_scale * w_scale
    if bias is not None:
        b_unit = float(_np_real(min_b, max_b)) / 127.0
        real = real + (np.round(bias.astype(np.float64) * b_unit / acc_unit) * acc_unit).reshape(shape)
    if accum is not None:
        real = real + accum.astype(np.float64) * (accum_range / _NP_QMAX[accum.dtype])
    if relu:
        real = np.maximum(real, 0.0)
    out_real = np.float32(out_range)
    dtype = np.uint8 if out_type == "uint8" else np.int8
    return _np_scaled(real / (float(out_real) / (255.0 if dtype == np.uint8 else 127.0)), out_real, dtype)


def _int8_conv_samples() -> list:
    # the reference rounds float64 values, the kernel float32 ones, and integer outputs are compared
    # exactly: the samples draw from a generator of their own, whose values hold no near-tie
    rng = np.random.RandomState(_SAMPLE_SEED)
    xu, w, b = _int_sample((2, 4, 6, 6), np.uint8, rng), _int_sample((6, 4, 3, 3), rng=rng), _int_sample((6,), rng=rng)
    x8 = _int_sample((2, 4, 6, 6), rng=rng)
    dw = _int_sample((4, 1, 3, 3), rng=rng)
    ru, r8 = _int_sample((2, 6, 6, 6), np.uint8, rng), _int_sample((2, 6, 6, 6), rng=rng)
    ref = lambda *a, **k: _np_fused("conv", *a, **k)  # noqa: E731
    geo = {"kernel": (3, 3), "num_filter": 6, "pad": (1, 1)}
    w_rng = _ranges(0.3)
    b_rng = _ranges(0.2)
    return [Sample((xu, w) + w_rng + (b,) + b_rng, {**geo, "data_range": 2.0, "out_type": "uint8", "out_range": 3.0,
                                                   "relu": True}, ref=ref, grad=False, rtol=0, atol=1),
            Sample((x8, w) + w_rng + (b,) + b_rng, {**geo, "data_range": 1.5, "out_type": "int8", "out_range": 2.5},
                   ref=ref, grad=False, rtol=0, atol=1),
            Sample((xu, dw) + _ranges(0.7) + (b[:4],) + b_rng, {"kernel": (3, 3), "num_filter": 4, "num_group": 4,
                                                                "stride": (2, 2), "data_range": 1.0,
                                                                "out_type": "uint8", "out_range": 1.0, "relu": True},
                   ref=ref, grad=False, rtol=0, atol=1),
            Sample((xu, w) + w_rng + (b,) + b_rng + (ru,), {**geo, "data_range": 2.0, "out_type": "uint8",
                                                            "out_range": 4.0, "relu": True, "accum_range": 1.0},
                   ref=ref, grad=False, rtol=0, atol=1),
            Sample((xu, w) + w_rng + (b,) + b_rng + (r8,), {**geo, "data_range": 2.0, "out_type": "uint8",
                                                            "out_range": 4.0, "relu": True, "accum_range": 1.5},
                   ref=ref, grad=False, rtol=0, atol=1),
            Sample((xu, w) + w_rng + (b,) + b_rng + (r8,), {**geo, "data_range": 2.0, "out_type": "int8",
                                                            "out_range": 4.0, "accum_range": 1.5},
                   ref=ref, grad=False, rtol=0, atol=1)]


@register("_int8_conv", int8_role="fused_conv", num_outputs=3, output_names=_OUT3, active_inputs=_int8_active(("accum",)),
          differentiable=False, returns_view=True, samples=_int8_conv_samples)
def _int8_conv(data: Tensor, weight: Tensor, min_weight: Tensor, max_weight: Tensor, bias: Optional[Tensor] = None,
               min_bias: Optional[Tensor] = None, max_bias: Optional[Tensor] = None,
               accum: Optional[Tensor] = None, *, kernel: Shape, stride: Shape = (), dilate: Shape = (),
               pad: Shape = (), num_filter: int, num_group: int = 1, no_bias: bool = False, data_range: float,
               out_type: Literal["int8", "uint8"], out_range: float, relu: bool = False,
               accum_range: OptFloat = None) -> list:
    """A quantized 2-D convolution with its calibrated requantize, relu and residual addition
    fused (hybridnet's predict-mode rewrite; MXNet's oneDNN subgraph ``_sg_mkldnn_conv`` does the
    same): int8/uint8 ``data`` over the real range ``data_range``, int8 ``weight`` (and bias)
    with their ranges, optional ``accum`` (int8/uint8 over ``accum_range``) added before the
    relu; the output is ``out_type`` over ``out_range``, rounded half to even and saturated.
    Outputs (quantized, min, max); the ranges are constants shared by every call."""
    if no_bias:  # a graph node without a bias hands its residual in the bias slot
        bias, min_bias, max_bias, accum = None, None, None, accum if accum is not None else bias
    device = data.device
    if data.dim() != 4 or (accum is None) != (accum_range is None):
        raise MXNetError(f"_int8_conv: data must be 4-D NCHW (got shape {tuple(data.shape)}), and a residual input "
                         "comes with accum_range")
    if device.type == "meta":
        s, p, d = _conv_geometry(kernel, stride, pad, dilate)
        out = F.conv2d(torch.empty(data.shape, device="meta"), torch.empty(weight.shape, device="meta"), None,
                       s, p, d, num_group)
        return _meta(out.shape, torch.uint8 if out_type == "uint8" else torch.int8)
    deps: tuple = (min_weight, max_weight) if bias is None else (min_weight, max_weight, bias, min_bias, max_bias)

    def make() -> int8_kernels.Int8Layer:
        _check_qlayer("_int8_conv", data, weight, bias)
        s, p, d = _conv_geometry(kernel, stride, pad, dilate)
        return _layer_prep(data, data_range, weight, min_weight, max_weight, bias, min_bias, max_bias,
                           lambda ws, xs, zp: int8_kernels.conv_prepack(weight, ws, xs, zp, s, p, d, num_group),
                           (s, p, d, num_group), out_type, out_range, relu, accum_range)
    layer = int8_kernels.prepared(weight, ("fused conv", data.dtype, kernel, stride, pad, dilate, num_group, data_range,
                                           out_type, out_range, relu, accum_range), deps, make)
    if accum is not None and (accum.dtype not in layer.accum_scales or accum.dim() != 4):
        raise MXNetError(f"_int8_conv: the residual must be int8/uint8 of the output's shape, got {accum.dtype} "
                         f"{tuple(accum.shape)}")
    return [int8_kernels.conv2d_requantized(layer, data, accum)] + layer.ranges


def _conv_geometry(kernel: Any, stride: Any, pad: Any, dilate: Any) -> tuple:
    k = _ints(kernel)
    if len(k) != 2:
        raise MXNetError(f"_int8_conv: only 2-D convolutions are fused, got kernel={k}")
    return (_per_dim(stride, 2, 1, "stride", "_int8_conv"), _per_dim(pad, 2, 0, "pad", "_int8_conv"),
            _per_dim(dilate, 2, 1, "dilate", "_int8_conv"))


def _int8_fc_samples() -> list:
    rng = np.random.RandomState(_SAMPLE_SEED + 1)
    xu, w, b = _int_sample((3, 2, 5), np.uint8, rng), _int_sample((4, 10), rng=rng), _int_sample((4,), rng=rng)
    ref = lambda *a, **k: _np_fused("fc", *a, **k)  # noqa: E731
    return [Sample((xu, w) + _ranges(0.4) + (b,) + _ranges(0.1), {"num_hidden": 4, "data_range": 3.0,
                                                                  "out_type": "int8", "out_range": 2.0},
                   ref=ref, grad=False, rtol=0, atol=1),
            Sample((_int_sample((5, 10), rng=rng), w) + _ranges(0.4) + (b,) + _ranges(0.2),
                   {"num_hidden": 4, "data_range": 2.0, "out_type": "uint8", "out_range": 1.5, "relu": True},
                   ref=ref, grad=False, rtol=0, atol=1)]


@register("_int8_fully_connected", int8_role="fused_fc", num_outputs=3, output_names=_OUT3, active_inputs=_int8_active(()),
          differentiable=False, returns_view=True, samples=_int8_fc_samples)
def _int8_fully_connected(data: Tensor, weight: Tensor, min_weight: Tensor, max_weight: Tensor,
                          bias: Optional[Tensor] = None, min_bias: Optional[Tensor] = None,
                          max_bias: Optional[Tensor] = None, *, num_hidden: int, no_bias: bool = False,
                          flatten: bool = True, data_range: float, out_type: Literal["int8", "uint8"],
                          out_range: float, relu: bool = False) -> list:
    """A quantized FullyConnected with its calibrated requantize (and relu) fused, as
    ``_int8_conv``: int8/uint8 data over ``data_range`` in, ``out_type`` over ``out_range`` out."""
    bias, min_bias, max_bias, _ = _fused_inputs(no_bias, bias, min_bias, max_bias, None)
    if weight.shape[0] != num_hidden:
        raise MXNetError(f"_int8_fully_connected: weight has shape {tuple(weight.shape)}, but num_hidden={num_hidden}")
    lead = data.shape[:1] if flatten else data.shape[:-1]
    x = data.reshape(data.shape[0], -1) if flatten else data.reshape(-1, weight.shape[1])
    if x.shape[1] != weight.shape[1]:
        raise MXNetError(f"_int8_fully_connected: data of shape {tuple(data.shape)} has {x.shape[1]} features, "
                         f"the weight {tuple(weight.shape)} expects {weight.shape[1]}")
    dtype = torch.uint8 if out_type == "uint8" else torch.int8
    if data.device.type == "meta":
        return _meta(tuple(lead) + (num_hidden,), dtype)
    deps: tuple = (min_weight, max_weight) if bias is None else (min_weight, max_weight, bias, min_bias, max_bias)

    def make() -> int8_kernels.Int8Layer:
        _check_qlayer("_int8_fully_connected", data, weight, bias)
        return _layer_prep(data, data_range, weight, min_weight, max_weight, bias, min_bias, max_bias,
                           lambda ws, xs, zp: int8_kernels.linear_prepack(weight), ((), (), (), 1), out_type,
                           out_range, relu, None)
    layer = int8_kernels.prepared(weight, ("fused fc", data.dtype, data_range, out_type, out_range, relu), deps, make)
    q = int8_kernels.linear_requantized(layer, x)
    return [q.reshape(tuple(lead) + (num_hidden,))] + layer.ranges


def calibrated_output(attrs_of: Any) -> Optional[tuple]:
    """``(out_type, real)`` of a calibrated ``_contrib_quantize_v2`` / ``_contrib_requantize``
    (``attrs_of(key)`` reads its attributes): the integer type it gives ("uint8" or "int8",
    MXNet's GetQuantizeOutputType) and its real range ``max(|min|, |max|)``; None uncalibrated."""
    lo, hi = attrs_of("min_calib_range"), attrs_of("max_calib_range")
    if lo is None or hi is None:
        return None
    dtype = _out_type(attrs_of("out_type"), float(lo), float(hi))
    return ("uint8" if dtype == torch.uint8 else "int8"), _calibrated(float(lo), float(hi))
