"""The NumPy interface's operators (MXNet 1.9.1's ``_np_*``, ``_npi_*`` and ``_npx_*``).

``mx.np``, ``mx.npx``, ``mx.sym.np`` and ``F.np``/``F.npx`` are generated from these OpDefs
(``numpy/`` and ``symbol/numpy.py`` place them by name). Where MXNet's NumPy operator is an
alias of an older operator (``.add_alias("_npx_convolution")`` on ``Convolution``), it is an alias
here too (``ALIASES``): one OpDef, one kernel, and graphs name the operator as MXNet's JSON does.
Where MXNet registers a separate operator (``_npi_add``, ``_np_sum``, ``_npx_relu``), so do we,
reusing an existing kernel where the math is the same.

NumPy semantics the kernels share: a zero-dim array is an array (reductions over everything
give shape ``()``), integer arrays keep their dtype under integer arithmetic and sums (MXNet
1.9.1, unlike NumPy, sums int32 to int32), ``true_divide`` and ``mean`` of integers give floats,
comparisons give ``bool``.
"""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Literal, Optional, Sequence, Tuple

import numpy as np
import torch

from ..base import MXNetError, ShapeError, dtype_name, dtype_torch
from .attrs import Axis, Dtype, OptFloat, OptInt, Shape
from .creation import device_of
from .random import _normal, _uniform
from .registry import Sample, add_alias, get, register
from .shape_rules import broadcast_shapes, first_input_shape, same_shape_inputs

_rng = np.random.RandomState(7)

# MXNet 1.9.1's ``.add_alias`` calls that name an operator of the NumPy interface (read off its
# src/operator/**/*.cc): alias -> the operator it names.
ALIASES = {
    "_npi_boolean_mask": "_contrib_boolean_mask", "_npi_Custom": "Custom",
    "_npx_multibox_detection": "_contrib_MultiBoxDetection", "_npx_multibox_prior": "_contrib_MultiBoxPrior",
    "_npx_multibox_target": "_contrib_MultiBoxTarget", "_npx__image_crop": "_image_crop",
    "_npx__image_to_tensor": "_image_to_tensor", "_npx__image_normalize": "_image_normalize",
    "_npx__image_flip_left_right": "_image_flip_left_right",
    "_npx__image_random_flip_left_right": "_image_random_flip_left_right",
    "_npx__image_flip_top_bottom": "_image_flip_top_bottom",
    "_npx__image_random_flip_top_bottom": "_image_random_flip_top_bottom",
    "_npx__image_random_brightness": "_image_random_brightness",
    "_npx__image_random_contrast": "_image_random_contrast",
    "_npx__image_random_saturation": "_image_random_saturation", "_npx__image_random_hue": "_image_random_hue",
    "_npx__image_random_color_jitter": "_image_random_color_jitter",
    "_npx__image_adjust_lighting": "_image_adjust_lighting", "_npx__image_random_lighting": "_image_random_lighting",
    "_npx__image_resize": "_image_resize", "_npx_leaky_relu": "LeakyReLU", "_npx_activation": "Activation",
    "_npx_batch_norm": "BatchNorm", "_npi_rnn_param_concat": "_rnn_param_concat", "_npx_convolution": "Convolution",
    "_npx_deconvolution": "Deconvolution", "_npx_dropout": "Dropout", "_npx_fully_connected": "FullyConnected",
    "_npx_layer_norm": "LayerNorm", "_npx_log_softmax": "log_softmax", "_npx_pooling": "Pooling",
    "_npx_softmax": "softmax", "_npi_random_randint": "_random_randint", "_npi_shuffle": "_shuffle",
    "_npx_rnn": "RNN", "_npx_roi_pooling": "ROIPooling", "_npx_sequence_mask": "SequenceMask",
    "_npi_swapaxes": "SwapAxis", "_npx_pick": "pick", "_npx_batch_dot": "batch_dot",
    "_npi_maximum": "broadcast_maximum", "_npi_minimum": "broadcast_minimum",
    "_npi_maximum_scalar": "_maximum_scalar", "_npi_minimum_scalar": "_minimum_scalar",
    "_npi_hypot_scalar": "_hypot_scalar", "_npx_smooth_l1": "smooth_l1", "_npx_reshape_like": "reshape_like",
    "_npx_shape_array": "shape_array", "_npi_cast": "Cast", "_npx_cast": "Cast", "_npx_erf": "erf",
    "_npx_erfinv": "erfinv", "_npx_gamma": "gamma", "_npx_gammaln": "gammaln", "_npi_histogram": "_histogram",
    "_npx_embedding": "Embedding", "_npi_take": "take", "_npx_one_hot": "one_hot", "_npi_gather_nd": "gather_nd",
    "_npx_gather_nd": "gather_nd", "_npi_full": "_full", "_npx_arange_like": "_contrib_arange_like",
    "_npi_linspace": "_linspace", "_npi_inv": "_linalg_inverse", "_npi_det": "_linalg_det",
    "_npi_slogdet": "_linalg_slogdet", "_npx_batch_flatten": "Flatten", "_npi_expand_dims": "expand_dims",
    "_npx_slice": "slice", "_npi_slice": "slice", "_npi_slice_assign": "_slice_assign",
    "_npi_slice_assign_scalar": "_slice_assign_scalar", "_npi_clip": "clip", "_np_repeat": "repeat",
    "_npi_tile": "tile", "_npi_split": "_split_v2", "_npx_topk": "topk", "_npi_sort": "sort",
    "_npi_argsort": "argsort",
}


def _u(lo: float, hi: float, shape: tuple) -> np.ndarray:
    return _rng.uniform(lo, hi, size=shape)


# ---- type rules (inference without running kernels) ------------------------------------------
_BOOL_OUT = {"_npi_logical_not", "_npi_isnan", "_npi_isinf", "_npi_isfinite", "_npi_isposinf", "_npi_isneginf",
             "equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}


def _bool_type(attrs: dict, dtypes: list) -> list:
    return ["bool"]


def _float_of_input(attrs: dict, dtypes: list) -> list:
    """Float functions: a float input's dtype, float32 for integer and bool inputs."""
    d = dtypes[0]
    return [d if d is None or str(d).startswith(("float", "bfloat")) else "float32"]


def _promoted(attrs: dict, dtypes: list) -> list:
    """Binary arithmetic: the dtypes promoted as torch (and MXNet 1.9.1's NumPy operators) do."""
    if any(d is None for d in dtypes):
        return [next((d for d in dtypes if d is not None), None)]
    out = dtype_torch(dtypes[0])
    for d in dtypes[1:]:
        out = torch.promote_types(out, dtype_torch(d))
    return [dtype_name(out)]


# ---- elementwise unary ------------------------------------------------------------------------
def _unary_samples(ref: Callable, lo: float, hi: float, grad: bool) -> Callable[[], list]:
    def samples() -> list:
        return [Sample((_u(lo, hi, (3, 4)),), ref=ref, grad=grad),
                Sample((_u(lo, hi, ()),), ref=ref, grad=grad),       # zero-dim arrays
                Sample((_u(lo, hi, (0, 3)),), ref=ref, grad=False)]  # zero-size arrays
    return samples


def _unary(name: str, fn: Callable, ref: Callable, lo: float = -2.0, hi: float = 2.0,
           grad: bool = True, doc: str = "") -> None:
    def kernel(x):  # type: ignore[no-untyped-def]
        return fn(x)
    kernel.__name__ = name
    kernel.__doc__ = doc or f"NumPy's ``{name.split('_')[-1]}``, elementwise (integer inputs give floats)."
    float_fns = {"_npi_reciprocal", "_npi_sqrt", "_npi_cbrt", "_npi_exp", "_npi_expm1", "_npi_log", "_npi_log10",
                 "_npi_log2", "_npi_log1p", "_npi_sin", "_npi_cos", "_npi_tan", "_npi_arcsin", "_npi_arccos",
                 "_npi_arctan", "_npi_sinh", "_npi_cosh", "_npi_tanh", "_npi_arcsinh", "_npi_arccosh",
                 "_npi_arctanh", "_npi_degrees", "_npi_radians"}
    rule = _bool_type if name in _BOOL_OUT else _float_of_input if name in float_fns else None
    register(name, samples=_unary_samples(ref, lo, hi, grad), differentiable=grad,
             infer_inputs=same_shape_inputs, infer_shape=first_input_shape, infer_type=rule)(kernel)


def _float_in(x: torch.Tensor) -> torch.Tensor:
    """Integer and bool inputs of float functions compute in float32, as MXNet's NumPy ops do."""
    return x if x.is_floating_point() or x.is_complex() else x.to(torch.float32)


def _cbrt(x: torch.Tensor) -> torch.Tensor:
    x = _float_in(x)
    return torch.sign(x) * torch.abs(x).pow(1.0 / 3.0)


def _fix(x: torch.Tensor) -> torch.Tensor:
    return torch.trunc(x) if x.is_floating_point() else x.clone()


_UNARY: list = [
    # name, torch function, NumPy reference, (lo, hi), differentiable
    ("_npi_absolute", torch.abs, np.absolute, (-2, 2), True),
    ("_npi_negative", torch.neg, np.negative, (-2, 2), True),
    ("_npi_reciprocal", lambda x: torch.reciprocal(_float_in(x)), np.reciprocal, (0.5, 2), True),
    ("_npi_sign", torch.sign, np.sign, (-2, 2), False),
    ("_npi_rint", lambda x: torch.round(x) if x.is_floating_point() else x.clone(), np.rint, (-3, 3), False),
    ("_npi_ceil", lambda x: torch.ceil(x) if x.is_floating_point() else x.clone(), np.ceil, (-3, 3), False),
    ("_npi_floor", lambda x: torch.floor(x) if x.is_floating_point() else x.clone(), np.floor, (-3, 3), False),
    ("_npi_trunc", lambda x: torch.trunc(x) if x.is_floating_point() else x.clone(), np.trunc, (-3, 3), False),
    ("_npi_fix", _fix, np.fix, (-3, 3), False),
    ("_npi_square", torch.square, np.square, (-2, 2), True),
    ("_npi_sqrt", lambda x: torch.sqrt(_float_in(x)), np.sqrt, (0.2, 3), True),
    ("_npi_cbrt", _cbrt, np.cbrt, (0.2, 3), True),
    ("_npi_exp", lambda x: torch.exp(_float_in(x)), np.exp, (-2, 2), True),
    ("_npi_expm1", lambda x: torch.expm1(_float_in(x)), np.expm1, (-2, 2), True),
    ("_npi_log", lambda x: torch.log(_float_in(x)), np.log, (0.2, 3), True),
    ("_npi_log10", lambda x: torch.log10(_float_in(x)), np.log10, (0.2, 3), True),
    ("_npi_log2", lambda x: torch.log2(_float_in(x)), np.log2, (0.2, 3), True),
    ("_npi_log1p", lambda x: torch.log1p(_float_in(x)), np.log1p, (-0.5, 3), True),
    ("_npi_sin", lambda x: torch.sin(_float_in(x)), np.sin, (-3, 3), True),
    ("_npi_cos", lambda x: torch.cos(_float_in(x)), np.cos, (-3, 3), True),
    ("_npi_tan", lambda x: torch.tan(_float_in(x)), np.tan, (-1, 1), True),
    ("_npi_arcsin", lambda x: torch.asin(_float_in(x)), np.arcsin, (-0.9, 0.9), True),
    ("_npi_arccos", lambda x: torch.acos(_float_in(x)), np.arccos, (-0.9, 0.9), True),
    ("_npi_arctan", lambda x: torch.atan(_float_in(x)), np.arctan, (-3, 3), True),
    ("_npi_sinh", lambda x: torch.sinh(_float_in(x)), np.sinh, (-2, 2), True),
    ("_npi_cosh", lambda x: torch.cosh(_float_in(x)), np.cosh, (-2, 2), True),
    ("_npi_tanh", lambda x: torch.tanh(_float_in(x)), np.tanh, (-2, 2), True),
    ("_npi_arcsinh", lambda x: torch.asinh(_float_in(x)), np.arcsinh, (-2, 2), True),
    ("_npi_arccosh", lambda x: torch.acosh(_float_in(x)), np.arccosh, (1.2, 3), True),
    ("_npi_arctanh", lambda x: torch.atanh(_float_in(x)), np.arctanh, (-0.9, 0.9), True),
    ("_npi_degrees", lambda x: torch.rad2deg(_float_in(x)), np.degrees, (-3, 3), True),
    ("_npi_radians", lambda x: torch.deg2rad(_float_in(x)), np.radians, (-90, 90), True),
    ("_npi_logical_not", torch.logical_not, np.logical_not, (-1, 1), False),
    ("_npi_isnan", torch.isnan, np.isnan, (-1, 1), False),
    ("_npi_isinf", torch.isinf, np.isinf, (-1, 1), False),
    ("_npi_isfinite", torch.isfinite, np.isfinite, (-1, 1), False),
    ("_npi_isposinf", torch.isposinf, np.isposinf, (-1, 1), False),
    ("_npi_isneginf", torch.isneginf, np.isneginf, (-1, 1), False),
    ("_npi_bitwise_not", torch.bitwise_not, np.invert, (-1, 1), False),
]
for _name, _fn, _ref, (_lo, _hi), _grad in _UNARY:
    if _name == "_npi_bitwise_not":
        continue  # integer-only: registered below with integer samples
    _unary(_name, _fn, _ref, _lo, _hi, _grad)
add_alias("_npi_absolute", "_npi_abs")


@register("_npi_bitwise_not", differentiable=False, infer_shape=first_input_shape, samples=lambda: [
    Sample((np.array([[0, 3, -4]], dtype=np.int32),), ref=np.invert, grad=False),
    Sample((np.array([True, False]),), ref=np.invert, grad=False)])
def _npi_bitwise_not(x):  # type: ignore[no-untyped-def]
    """NumPy's ``invert``/``bitwise_not`` of integer or bool arrays."""
    return torch.bitwise_not(x)


# the activations MXNet registers again for npx (``_npx_relu`` is an operator of its own): the
# same kernels as relu / sigmoid
for _legacy in ("relu", "sigmoid"):
    _base = get(_legacy)

    def _make(base_kernel: Callable, nm: str) -> Callable:
        def kernel(data):  # type: ignore[no-untyped-def]
            return base_kernel(data)
        kernel.__name__ = f"_npx_{nm}"
        kernel.__doc__ = f"``npx.{nm}``: the kernel of ``{nm}``, under MXNet's NumPy-interface name."
        return kernel
    register(f"_npx_{_legacy}", samples=_base.samples, infer_inputs=same_shape_inputs,
             infer_shape=first_input_shape, listed_inputs=False)(_make(_base.kernel, _legacy))


# ---- elementwise binary: array-array, array-scalar, scalar-array -------------------------------
def _scalar_for(x: torch.Tensor, scalar: float, is_int: bool) -> Any:
    """The scalar as MXNet 1.9.1 applies it: integer and bool arrays take it as an integer (their
    dtype is kept: ``int32 array + 1.5`` is int32), float arrays as a float."""
    if x.is_floating_point() or x.is_complex():
        return scalar
    return int(scalar)


def _mod(a: Any, b: Any) -> torch.Tensor:
    """NumPy's ``mod`` (the divisor's sign); for floats ``a - floor(a / b) * b``, which torch can
    differentiate in both arguments (its ``remainder`` has no gradient for the divisor)."""
    a, b = _bool_as_number(a, b)
    fa = isinstance(a, torch.Tensor) and a.is_floating_point()
    fb = isinstance(b, torch.Tensor) and b.is_floating_point()
    if fa or fb:
        half = [x.dtype for x in (a, b) if isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16)]
        if half:  # float16 computes in float32 and rounds once, as NumPy (and MXNet) do
            up = [x.float() if isinstance(x, torch.Tensor) and x.dtype == half[0] else x for x in (a, b)]
            return _mod(up[0], up[1]).to(torch.result_type(a, b))
        return a - torch.floor(torch.true_divide(a, b)).detach() * b
    if not isinstance(a, torch.Tensor):
        return torch.remainder(torch.full_like(b, a), b)
    return torch.remainder(a, b)


def _true_div(a: Any, b: Any) -> torch.Tensor:
    return torch.true_divide(a, b)


def _copysign(a: Any, b: Any) -> torch.Tensor:
    if not isinstance(a, torch.Tensor):
        return torch.copysign(torch.full_like(_float_in(b), float(a)), b)
    return torch.copysign(_float_in(a), b if isinstance(b, torch.Tensor) else float(b))


def _ldexp(a: Any, b: Any) -> torch.Tensor:
    if not isinstance(a, torch.Tensor):
        return float(a) * torch.pow(2.0, b.to(torch.float64) if not b.is_floating_point() else b)
    return _float_in(a) * torch.pow(2.0, b) if isinstance(b, torch.Tensor) else _float_in(a) * (2.0 ** b)


def _arctan2(a: Any, b: Any) -> torch.Tensor:
    if not isinstance(a, torch.Tensor):
        a = torch.full_like(_float_in(b), float(a))
    if not isinstance(b, torch.Tensor):
        b = torch.full_like(_float_in(a), float(b))
    return torch.atan2(_float_in(a), _float_in(b))


def _lcm(a: Any, b: Any) -> torch.Tensor:
    if not isinstance(b, torch.Tensor):
        b = torch.tensor(int(b), dtype=a.dtype, device=a.device)
    if not isinstance(a, torch.Tensor):
        a = torch.tensor(int(a), dtype=b.dtype, device=b.device)
    return torch.lcm(a, b)


def _bool_as_number(a: Any, b: Any) -> tuple:
    """Arithmetic with one bool operand: the bool counts as 0/1 in the promoted type, as NumPy
    (torch refuses ``-`` and ``%`` on bool tensors); two bools stay bool."""
    if (isinstance(a, torch.Tensor) and a.dtype == torch.bool) or (isinstance(b, torch.Tensor) and b.dtype == torch.bool):
        dt = torch.result_type(a, b)
        if dt != torch.bool:
            a = a.to(dt) if isinstance(a, torch.Tensor) else a
            b = b.to(dt) if isinstance(b, torch.Tensor) else b
    return a, b


def _sub(a: Any, b: Any) -> torch.Tensor:
    """NumPy's ``subtract`` (a bool operand counts as 0/1; two bools raise TypeError as NumPy)."""
    a, b = _bool_as_number(a, b)
    if isinstance(a, torch.Tensor) and a.dtype == torch.bool and (not isinstance(b, torch.Tensor) or b.dtype == torch.bool):
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, "
                        "the `^` operator, or the logical_xor function instead")
    return torch.sub(a, b)


# name, torch function, NumPy reference, (lo, hi) of sample values, differentiable, reflected
# scalar operator (None: commutative, the scalar operator serves both sides)
_BINARY: list = [
    ("add", torch.add, np.add, (-2, 2), True, None),
    ("subtract", _sub, np.subtract, (-2, 2), True, "rsubtract"),
    ("multiply", torch.mul, np.multiply, (-2, 2), True, None),
    ("true_divide", _true_div, np.true_divide, (0.5, 2), True, "rtrue_divide"),
    ("mod", lambda a, b: _mod(a, b), np.mod, (0.5, 3), False, "rmod"),
    ("power", lambda a, b: torch.pow(*_bool_as_number(a, b)), np.power, (0.5, 2), True, "rpower"),
    ("arctan2", _arctan2, np.arctan2, (0.5, 2), True, "rarctan2"),
    ("copysign", _copysign, np.copysign, (-2, 2), False, "rcopysign"),
    ("ldexp", _ldexp, lambda a, b: a * np.power(2.0, b), (0.5, 2), False, "rldexp"),
    ("equal", torch.eq, np.equal, (-1, 1), False, None),
    ("not_equal", torch.ne, np.not_equal, (-1, 1), False, None),
    ("greater", torch.gt, np.greater, (-1, 1), False, "less"),
    ("greater_equal", torch.ge, np.greater_equal, (-1, 1), False, "less_equal"),
    ("less", torch.lt, np.less, (-1, 1), False, "greater"),
    ("less_equal", torch.le, np.less_equal, (-1, 1), False, "greater_equal"),
]
_INT_BINARY: list = [("bitwise_and", torch.bitwise_and, np.bitwise_and), ("bitwise_or", torch.bitwise_or, np.bitwise_or),
               ("bitwise_xor", torch.bitwise_xor, np.bitwise_xor), ("lcm", _lcm, np.lcm)]


def _binary_samples(ref: Callable, lo: float, hi: float, grad: bool) -> Callable[[], list]:
    def samples() -> list:
        return [Sample((_u(lo, hi, (3, 4)), _u(lo, hi, (3, 4))), ref=ref, grad=grad),
                Sample((_u(lo, hi, (2, 3, 1)), _u(lo, hi, (4,))), ref=ref, grad=grad),  # broadcasting
                Sample((_u(lo, hi, ()), _u(lo, hi, (2,))), ref=ref, grad=grad)]
    return samples


def _scalar_samples(ref: Callable, lo: float, hi: float, grad: bool, reflected: bool) -> Callable[[], list]:
    s = 1.5 if lo > 0 else 0.5

    def fref(x: np.ndarray, scalar: float, is_int: bool = True) -> np.ndarray:
        r = ref(scalar, x) if reflected else ref(x, scalar)
        return np.asarray(r).astype(np.result_type(x, np.float32) if np.asarray(r).dtype.kind == "f" else r.dtype)

    def samples() -> list:
        return [Sample((_u(lo, hi, (3, 4)),), {"scalar": s, "is_int": False}, ref=fref, grad=grad),
                Sample((_u(lo, hi, ()),), {"scalar": s, "is_int": False}, ref=fref, grad=grad)]
    return samples


def _make_binary(name: str, fn: Callable, ref: Callable, lo: float, hi: float, grad: bool,
                 reflected: Optional[str]) -> None:
    def kernel(x1, x2):  # type: ignore[no-untyped-def]
        return fn(x1, x2)
    kernel.__name__ = f"_npi_{name}"
    kernel.__doc__ = f"NumPy's ``{name}`` of two arrays, broadcast (MXNet 1.9.1's type promotion)."
    bool_out = name in _BOOL_OUT
    # float functions: integer inputs give float32 (``int32 / int32`` too)
    float_out = name in ("true_divide", "arctan2", "copysign", "ldexp", "hypot")
    arr_rule = _bool_type if bool_out else (lambda a, d: _float_of_input(a, _promoted(a, d))) if float_out \
        else _promoted
    register(f"_npi_{name}", samples=_binary_samples(ref, lo, hi, grad), differentiable=grad,
             infer_shape=broadcast_shapes, infer_type=arr_rule)(kernel)

    def scalar_kernel(data, *, scalar: float, is_int: bool = True):  # type: ignore[no-untyped-def]
        return fn(data, _scalar_for(data, scalar, is_int))
    scalar_kernel.__name__ = f"_npi_{name}_scalar"
    scalar_kernel.__doc__ = f"NumPy's ``{name}(array, scalar)``."
    sname = f"_npi_{name}_scalar"
    if get_or_none(sname) is None:
        register(sname, samples=_scalar_samples(ref, lo, hi, grad, False), differentiable=grad,
                 infer_inputs=same_shape_inputs, infer_shape=first_input_shape,
                 infer_type=_bool_type if bool_out else _float_of_input if float_out else None)(scalar_kernel)
    if reflected is not None and reflected.startswith("r"):
        def rscalar_kernel(data, *, scalar: float, is_int: bool = True):  # type: ignore[no-untyped-def]
            return fn(_scalar_for(data, scalar, is_int), data)
        rscalar_kernel.__name__ = f"_npi_{reflected}_scalar"
        rscalar_kernel.__doc__ = f"NumPy's ``{name}(scalar, array)``."
        register(f"_npi_{reflected}_scalar", samples=_scalar_samples(ref, lo, hi, grad, True),
                 differentiable=grad, infer_inputs=same_shape_inputs, infer_shape=first_input_shape,
                 infer_type=_float_of_input if float_out else None)(rscalar_kernel)


def get_or_none(name: str) -> Any:
    from .registry import find
    return find(name)


for _n, _f, _r, (_lo, _hi), _g, _refl in _BINARY:
    _make_binary(_n, _f, _r, _lo, _hi, _g, _refl)
# MXNet's mod_grad / mod_rgrad are 0 for integer operands (only float types have derivatives)
for _n in ("_npi_mod", "_npi_mod_scalar", "_npi_rmod_scalar"):
    get(_n).integer_zero_gradient = True


def _int_binary_samples(ref: Callable) -> Callable[[], list]:
    a = np.array([[3, 4, 6], [12, 5, 7]], dtype=np.int32)
    b = np.array([2, 6, 4], dtype=np.int32)
    return lambda: [Sample((a, b), ref=ref, grad=False)]


for _n, _f, _r in _INT_BINARY:
    def _ik(fn: Callable, nm: str) -> Callable:
        def kernel(x1, x2):  # type: ignore[no-untyped-def]
            return fn(x1, x2)
        kernel.__name__ = f"_npi_{nm}"
        kernel.__doc__ = f"NumPy's ``{nm}`` of two integer (or bool) arrays, broadcast."
        return kernel

    def _isk(fn: Callable, nm: str) -> Callable:
        def kernel(data, *, scalar: float, is_int: bool = True):  # type: ignore[no-untyped-def]
            return fn(data, int(scalar))
        kernel.__name__ = f"_npi_{nm}_scalar"
        kernel.__doc__ = f"NumPy's ``{nm}(array, integer scalar)``."
        return kernel
    register(f"_npi_{_n}", samples=_int_binary_samples(_r), differentiable=False,
             infer_shape=broadcast_shapes)(_ik(_f, _n))
    register(f"_npi_{_n}_scalar", differentiable=False, infer_shape=first_input_shape, samples=(
        lambda r=_r: [Sample((np.array([[3, 4, 6]], dtype=np.int32),), {"scalar": 6.0},
                             ref=lambda x, scalar, r=r: r(x, np.int32(scalar)), grad=False)]))(_isk(_f, _n))


# ---- reductions ----------------------------------------------------------------------------------
def _axes(axis: Any, ndim: int) -> Optional[tuple]:
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise MXNetError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(out)


def _reduce(fn: Callable, x: torch.Tensor, axis: Any, keepdims: bool) -> torch.Tensor:
    axes = _axes(axis, x.dim())
    if x.dim() == 0:
        return fn(x, None, False)
    if axes is None:
        axes = tuple(range(x.dim()))
    if len(axes) == 0:
        return x.clone()
    return fn(x, axes, keepdims)


# A re-run of recorded operators on float64 twins (ndarray._twin_run, a hybridized block's
# _int_twins): an integer dtype= there computes in float64, so the gradient passes through the cast
# as in MXNet (np.sum(x, dtype='int8') under record()).
_TWIN_RUN = threading.local()


@contextmanager
def twin_run() -> Iterator[None]:
    """Within: reductions asked for an integer dtype compute in float64 (the twin of that result)."""
    prev = getattr(_TWIN_RUN, "on", False)
    _TWIN_RUN.on = True
    try:
        yield
    finally:
        _TWIN_RUN.on = prev


def _twin_dtype(dt: torch.dtype) -> torch.dtype:
    if getattr(_TWIN_RUN, "on", False) and not (dt.is_floating_point or dt.is_complex):
        return torch.float64
    return dt


def _sum_dtype(x: torch.Tensor, dtype: Any) -> torch.dtype:
    if dtype:
        return dtype_torch(dtype)
    if x.dtype == torch.bool:
        return torch.int64
    return x.dtype  # MXNet 1.9.1 keeps integer dtypes (NumPy would widen int32 to int64)


def _red_samples(ref: Callable, lo: float = -2, hi: float = 2, grad: bool = True) -> Callable[[], list]:
    def samples() -> list:
        x = _u(lo, hi, (2, 3, 4))
        return [Sample((x,), {}, ref=lambda a: ref(a), grad=grad),
                Sample((x,), {"axis": 1}, ref=lambda a, axis: ref(a, axis=axis), grad=grad),
                Sample((x,), {"axis": (0, 2), "keepdims": True},
                       ref=lambda a, axis, keepdims: ref(a, axis=axis, keepdims=keepdims), grad=grad),
                Sample((_u(lo, hi, ()),), {}, ref=lambda a: ref(a), grad=grad)]
    return samples


@register("_np_sum", samples=_red_samples(np.sum))
def _np_sum(a, *, axis: Axis = None, dtype: Dtype = None, keepdims: bool = False,  # type: ignore[no-untyped-def]
            initial: OptFloat = None):
    """NumPy's ``sum``; integer arrays keep their dtype (MXNet 1.9.1), bools sum to int64."""
    dt = _twin_dtype(_sum_dtype(a, dtype))
    # a float array summed into an integer dtype: accumulated in float64, then truncated (MXNet)
    wdt = torch.float64 if a.is_floating_point() and not (dt.is_floating_point or dt.is_complex) else dt
    r = _reduce(lambda x, ax, kd: torch.sum(x, dim=ax, keepdim=kd, dtype=wdt) if ax is not None
                else torch.sum(x, dtype=wdt), a, axis, keepdims).to(dt)
    return r + initial if initial is not None else r


@register("_np_prod", aliases=("_np_product",), samples=_red_samples(np.prod, 0.5, 1.5))
def _np_prod(a, *, axis: Axis = None, dtype: Dtype = None, keepdims: bool = False,  # type: ignore[no-untyped-def]
             initial: OptFloat = None):
    """NumPy's ``prod``."""
    dt = _sum_dtype(a, dtype)

    def prod(x: torch.Tensor, ax: Any, kd: bool) -> torch.Tensor:
        if ax is None:
            return torch.prod(x.to(dt))
        r = x.to(dt)
        for d in sorted(ax, reverse=True):
            r = torch.prod(r, dim=d, keepdim=kd)
        return r
    r = _reduce(prod, a, axis, keepdims)
    return r * initial if initial is not None else r


def _minmax(torch_fn: Callable, a: torch.Tensor, axis: Any, keepdims: bool, what: str) -> torch.Tensor:
    if a.numel() == 0 and (axis is None or a.dim() == 0):
        raise MXNetError(f"{what}: zero-size array to reduction operation {what} which has no identity")
    return _reduce(lambda x, ax, kd: torch_fn(x, dim=ax, keepdim=kd) if ax is not None else torch_fn(x),
                   a, axis, keepdims)


@register("_np_max", aliases=("_np_amax",), samples=_red_samples(np.max))
def _np_max(a, *, axis: Axis = None, keepdims: bool = False, initial: OptFloat = None):  # type: ignore[no-untyped-def]
    """NumPy's ``max``/``amax``."""
    r = _minmax(torch.amax, a, axis, keepdims, "max")
    return torch.clamp(r, min=initial) if initial is not None else r


@register("_np_min", aliases=("_np_amin",), samples=_red_samples(np.min))
def _np_min(a, *, axis: Axis = None, keepdims: bool = False, initial: OptFloat = None):  # type: ignore[no-untyped-def]
    """NumPy's ``min``/``amin``."""
    r = _minmax(torch.amin, a, axis, keepdims, "min")
    return torch.clamp(r, max=initial) if initial is not None else r


def _mean_dtype(a: torch.Tensor, dtype: Any) -> torch.dtype:
    if dtype:
        return dtype_torch(dtype)
    return a.dtype if a.is_floating_point() else torch.float32


@register("_npi_mean", samples=_red_samples(np.mean))
def _npi_mean(a, *, axis: Axis = None, dtype: Dtype = None, keepdims: bool = False,  # type: ignore[no-untyped-def]
              initial: OptFloat = None):
    """NumPy's ``mean`` (integer arrays average to float32, MXNet's default float)."""
    dt = _twin_dtype(_mean_dtype(a, dtype))
    # accumulate in the wider of the input and the result (at least float32), round once at the end
    # as NumPy's mean(x.astype(acc)).astype(dtype) does; an integer dtype truncates
    if not (dt.is_floating_point or dt.is_complex):  # NumPy: the sum in dtype (wrapping), divided, truncated
        axes = _axes(axis, a.dim())
        count = a.numel() if axes is None else math.prod(a.shape[i] for i in axes)
        total = _reduce(lambda x, ax, kd: torch.sum(x, dim=ax, keepdim=kd) if ax is not None else torch.sum(x),
                        a.to(dt), axis, keepdims).to(dt)
        return (total.to(torch.float64) / max(count, 1)).to(dt)
    wdt = torch.promote_types(torch.promote_types(dt, torch.float32), a.dtype if a.is_floating_point() else dt)
    return _reduce(lambda x, ax, kd: torch.mean(x, dim=ax, keepdim=kd) if ax is not None
                   else torch.mean(x), a.to(wdt), axis, keepdims).to(dt)


def _var(a: torch.Tensor, axis: Any, dtype: Any, ddof: int, keepdims: bool) -> torch.Tensor:
    dt = _mean_dtype(a, dtype)
    # accumulate as NumPy does for MXNet's tests: float16 in float32, integers in float64
    wdt = torch.float64 if not a.is_floating_point() else torch.promote_types(dt, torch.float32)
    x = a.to(wdt)
    if _axes(axis, x.dim()) == ():  # no axis reduced: each element its own sample (0, or nan for ddof 1)
        return ((x - x) ** 2 / (1 - ddof)).to(dt)
    return _reduce(lambda v, ax, kd: torch.var(v, dim=ax, correction=ddof, keepdim=kd), x, axis, keepdims).to(dt)


def _var_samples(ref: Callable) -> Callable[[], list]:
    def samples() -> list:
        x = _u(-2, 2, (3, 4))
        return [Sample((x,), {}, ref=lambda a: ref(a), grad=True),
                Sample((x,), {"axis": 1, "ddof": 1}, ref=lambda a, axis, ddof: ref(a, axis=axis, ddof=ddof)),
                Sample((x,), {"axis": 0, "keepdims": True}, ref=lambda a, axis, keepdims: ref(a, axis=axis,
                                                                                            keepdims=keepdims))]
    return samples


@register("_npi_var", samples=_var_samples(np.var))
def _npi_var(a, *, axis: Axis = None, dtype: Dtype = None, ddof: int = 0,  # type: ignore[no-untyped-def]
             keepdims: bool = False):
    """NumPy's ``var`` (``ddof`` delta degrees of freedom)."""
    return _var(a, axis, dtype, ddof, keepdims)


@register("_npi_std", samples=_var_samples(np.std))
def _npi_std(a, *, axis: Axis = None, dtype: Dtype = None, ddof: int = 0,  # type: ignore[no-untyped-def]
             keepdims: bool = False):
    """NumPy's ``std``."""
    return torch.sqrt(_var(a, axis, dtype, ddof, keepdims))


@register("_np_all", differentiable=False, samples=_red_samples(np.all, -1, 1, False))
def _np_all(a, *, axis: Axis = None, keepdims: bool = False):  # type: ignore[no-untyped-def]
    """NumPy's ``all`` (a bool array)."""
    return _reduce(lambda x, ax, kd: torch.all(x, dim=ax, keepdim=kd) if ax is not None
                   else torch.all(x), a.bool(), axis, keepdims)  # axis=(): a bool copy


@register("_np_any", aliases=("_np_sometrue",), differentiable=False, samples=_red_samples(np.any, -1, 1, False))
def _np_any(a, *, axis: Axis = None, keepdims: bool = False):  # type: ignore[no-untyped-def]
    """NumPy's ``any`` (a bool array)."""
    return _reduce(lambda x, ax, kd: torch.any(x, dim=ax, keepdim=kd) if ax is not None
                   else torch.any(x), a.bool(), axis, keepdims)  # axis=(): a bool copy


def _arg_samples(ref: Callable) -> Callable[[], list]:
    def samples() -> list:
        x = _u(-2, 2, (3, 4))
        return [Sample((x,), {}, ref=lambda a: ref(a), grad=False),
                Sample((x,), {"axis": 1}, ref=lambda a, axis: ref(a, axis=axis), grad=False),
                Sample((x,), {"axis": 0, "keepdims": True},
                       ref=lambda a, axis, keepdims: np.expand_dims(ref(a, axis=axis), axis), grad=False)]
    return samples


@register("_npi_argmax", differentiable=False, samples=_arg_samples(np.argmax))
def _npi_argmax(data, *, axis: OptInt = None, keepdims: bool = False):  # type: ignore[no-untyped-def]
    """NumPy's ``argmax`` (int64 indices; ``axis=None``: into the flattened array)."""
    if axis is None:
        r = torch.argmax(data.reshape(-1))
        return r.reshape((1,) * data.dim()) if keepdims else r
    return torch.argmax(data, dim=axis, keepdim=keepdims)


@register("_npi_argmin", differentiable=False, samples=_arg_samples(np.argmin))
def _npi_argmin(data, *, axis: OptInt = None, keepdims: bool = False):  # type: ignore[no-untyped-def]
    """NumPy's ``argmin``."""
    if axis is None:
        r = torch.argmin(data.reshape(-1))
        return r.reshape((1,) * data.dim()) if keepdims else r
    return torch.argmin(data, dim=axis, keepdim=keepdims)


# ---- shape manipulation -------------------------------------------------------------------------
@register("_np_reshape", returns_view=True, samples=lambda: [
    Sample((_u(-1, 1, (2, 6)),), {"newshape": (3, -1)}, ref=lambda a, newshape: np.reshape(a, newshape)),
    Sample((_u(-1, 1, (1,)),), {"newshape": ()}, ref=lambda a, newshape: np.reshape(a, newshape)),
    Sample((_u(-1, 1, (0, 3)),), {"newshape": (3, 0)}, ref=lambda a, newshape: np.reshape(a, newshape),
           grad=False)])
def _np_reshape(a, *, newshape: Shape, order: str = "C"):  # type: ignore[no-untyped-def]
    """NumPy's ``reshape`` (one -1 is inferred; a 0 is a zero-size dimension)."""
    if order != "C":
        raise MXNetError(f"reshape: only order='C' is supported, got order={order!r}")
    try:
        return a.reshape(tuple(newshape))
    except RuntimeError as e:
        raise ValueError(f"cannot reshape array of size {a.numel()} into shape {tuple(newshape)}") from e


def _npx_reshape_shape(src: Sequence[int], newshape: Sequence[int], reverse: bool) -> tuple:
    """MXNet's ``npx.reshape`` codes: -1 infer, -2 copy this dim, -3 drop this dim (must be 1),
    -4 copy all remaining dims, -5 merge two dims, -6 split one dim into the next two values."""
    src, spec = list(src), list(newshape)
    if reverse:
        src, spec = src[::-1], spec[::-1]
        # a -6 split reads its two values after it; reversed, they precede it
        fixed: list = []
        i = 0
        while i < len(spec):
            if i + 2 < len(spec) and spec[i + 2] == -6:
                fixed += [-6, spec[i + 1], spec[i]]
                i += 3
            else:
                fixed.append(spec[i])
                i += 1
        spec = fixed
    out: list = []
    si = 0
    infer = -1
    i = 0
    while i < len(spec):
        c = spec[i]
        if c >= 0:
            out.append(c)
            si += 1
        elif c == -1:
            infer = len(out)
            out.append(-1)
            si += 1
        elif c == -2:
            out.append(src[si])
            si += 1
        elif c == -3:
            if src[si] != 1:
                raise MXNetError(f"npx.reshape: -3 drops a dimension of size 1, dimension {si} has size {src[si]}")
            si += 1
        elif c == -4:
            out.extend(src[si:])
            si = len(src)
        elif c == -5:
            out.append(src[si] * src[si + 1])
            si += 2
        elif c == -6:
            d1, d2 = spec[i + 1], spec[i + 2]
            if d1 == -1:
                d1 = src[si] // d2
            if d2 == -1:
                d2 = src[si] // d1
            out.extend([d1, d2])
            si += 1
            i += 2
        else:
            raise MXNetError(f"npx.reshape: invalid shape code {c} in {tuple(newshape)}")
        i += 1
    if infer >= 0:
        known = math.prod(d for j, d in enumerate(out) if j != infer)
        out[infer] = math.prod(src) // known if known else 0
    return tuple(out[::-1]) if reverse else tuple(out)


@register("_npx_reshape", aliases=("_npi_reshape",), returns_view=True, samples=lambda: [
    Sample((_u(-1, 1, (2, 3, 4)),), {"newshape": (-2, -1)}, ref=lambda a, newshape: a.reshape(2, 12)),
    Sample((_u(-1, 1, (2, 1, 4)),), {"newshape": (-2, -3, -4)}, ref=lambda a, newshape: a.reshape(2, 4)),
    Sample((_u(-1, 1, (2, 3, 4)),), {"newshape": (-5, -6, 2, 2)}, ref=lambda a, newshape: a.reshape(6, 2, 2))])
def _npx_reshape(a, *, newshape: Shape, reverse: bool = False, order: str = "C"):  # type: ignore[no-untyped-def]
    """``npx.reshape``: NumPy's reshape plus MXNet's special codes (-1 infer, -2 copy, -3 drop a
    size-1 dimension, -4 copy the rest, -5 merge two, -6 split one); ``reverse`` reads right to left."""
    return a.reshape(_npx_reshape_shape(tuple(a.shape), tuple(newshape), reverse))


@register("_np_transpose", samples=lambda: [
    Sample((_u(-1, 1, (2, 3, 4)),), {}, ref=lambda a: np.transpose(a)),
    Sample((_u(-1, 1, (2, 3, 4)),), {"axes": (1, 0, 2)}, ref=lambda a, axes: np.transpose(a, axes))])
def _np_transpose(a, *, axes: Axis = None):  # type: ignore[no-untyped-def]
    """NumPy's ``transpose`` (no ``axes``: reversed)."""
    if axes is None or (isinstance(axes, tuple) and len(axes) == 0):
        return a.permute(tuple(reversed(range(a.dim())))).clone()
    ax = (axes,) if isinstance(axes, int) else tuple(axes)
    if len(ax) != a.dim() or any(not -a.dim() <= x < max(a.dim(), 1) for x in ax):
        raise MXNetError(f"transpose: axes {ax} do not match an array of {a.dim()} dimensions")
    perm = tuple(x % max(a.dim(), 1) for x in ax)
    if len(set(perm)) != len(perm):
        raise ShapeError(f"transpose: repeated axis in transpose: {ax}")
    return a.permute(perm).clone()


def _concat_samples(ref: Callable) -> Callable[[], list]:
    return lambda: [Sample((_u(-1, 1, (2, 3)), _u(-1, 1, (2, 3))), {}, ref=lambda *xs: ref(xs)),
                    Sample((_u(-1, 1, (2, 3)), _u(-1, 1, (2, 3))), {"axis": 1},
                           ref=lambda *xs, axis: ref(xs, axis=axis))]


@register("_npi_concatenate", samples=_concat_samples(np.concatenate))
def _npi_concatenate(*data, axis: OptInt = 0):  # type: ignore[no-untyped-def]
    """NumPy's ``concatenate`` (``axis=None``: the flattened arrays)."""
    if axis is None:
        return torch.cat([d.reshape(-1) for d in data])
    return torch.cat(list(data), dim=axis)


@register("_npi_stack", samples=_concat_samples(np.stack))
def _npi_stack(*data, axis: int = 0):  # type: ignore[no-untyped-def]
    """NumPy's ``stack`` (a new axis)."""
    return torch.stack(list(data), dim=axis)


_STACKERS: list = [("hstack", torch.hstack, np.hstack), ("vstack", torch.vstack, np.vstack),
                   ("dstack", torch.dstack, np.dstack), ("column_stack", torch.column_stack, np.column_stack)]
for _nm, _tf, _nf in _STACKERS:
    def _stk(tf: Callable, nm: str) -> Callable:
        def kernel(*data):  # type: ignore[no-untyped-def]
            return tf(list(data))
        kernel.__name__ = f"_npi_{nm}"
        kernel.__doc__ = f"NumPy's ``{nm}``."
        return kernel
    register(f"_npi_{_nm}", samples=(lambda nf=_nf: [Sample((_u(-1, 1, (2, 3)), _u(-1, 1, (2, 3))), {},
                                                             ref=lambda *xs, nf=nf: nf(xs))]))(_stk(_tf, _nm))


@register("_np_squeeze", returns_view=True, samples=lambda: [
    Sample((_u(-1, 1, (1, 3, 1)),), {}, ref=lambda a: np.squeeze(a)),
    Sample((_u(-1, 1, (1, 3, 1)),), {"axis": 2}, ref=lambda a, axis: np.squeeze(a, axis))])
def _np_squeeze(a, *, axis: Axis = None):  # type: ignore[no-untyped-def]
    """NumPy's ``squeeze`` (a named axis must have size 1)."""
    if axis is None:
        return a.reshape([d for d in a.shape if d != 1])
    if a.dim() == 0:  # NumPy takes axis 0 or -1 of a zero-dim array (nothing to squeeze)
        for ax in ((axis,) if isinstance(axis, int) else tuple(axis)):
            if ax not in (0, -1):
                raise MXNetError(f"axis {ax} is out of bounds for an array of dimension 0")
        return a.reshape(())
    axes = _axes(axis, a.dim()) or ()
    for ax in axes:
        if a.shape[ax] != 1:
            raise MXNetError(f"squeeze: cannot select an axis to squeeze out which has size not equal to one "
                             f"(axis {ax} of shape {tuple(a.shape)})")
    return a.reshape([d for i, d in enumerate(a.shape) if i not in axes])


@register("_np_moveaxis", samples=lambda: [
    Sample((_u(-1, 1, (2, 3, 4)),), {"source": (0,), "destination": (2,)},
           ref=lambda a, source, destination: np.moveaxis(a, source, destination))])
def _np_moveaxis(a, *, source: Shape, destination: Shape):  # type: ignore[no-untyped-def]
    """NumPy's ``moveaxis``."""
    return torch.movedim(a, tuple(source), tuple(destination)).clone()


@register("_npi_where", samples=lambda: [
    Sample((np.array([[True, False, True]]), _u(-1, 1, (2, 3)), _u(-1, 1, (2, 3))), ref=np.where,
           grad_inputs=(1, 2))])
def _npi_where(condition, x, y):  # type: ignore[no-untyped-def]
    """NumPy's ``where(condition, x, y)``, broadcast."""
    return torch.where(condition.bool(), x, y)


@register("_npi_where_lscalar", samples=lambda: [
    Sample((np.array([True, False, True]), _u(-1, 1, (3,))), {"scalar": 2.0},
           ref=lambda c, y, scalar: np.where(c, scalar, y))])
def _npi_where_lscalar(condition, y, *, scalar: float = 0.0):  # type: ignore[no-untyped-def]
    """``where(condition, scalar, y)``."""
    return torch.where(condition.bool(), torch.tensor(scalar, dtype=y.dtype, device=y.device), y)


@register("_npi_where_rscalar", samples=lambda: [
    Sample((np.array([True, False, True]), _u(-1, 1, (3,))), {"scalar": 2.0},
           ref=lambda c, x, scalar: np.where(c, x, scalar))])
def _npi_where_rscalar(condition, x, *, scalar: float = 0.0):  # type: ignore[no-untyped-def]
    """``where(condition, x, scalar)``."""
    return torch.where(condition.bool(), x, torch.tensor(scalar, dtype=x.dtype, device=x.device))


@register("_npi_where_scalar2", differentiable=False, samples=lambda: [
    Sample((np.array([True, False, True]),), {"x": 1.0, "y": 2.0},
           ref=lambda c, x, y: np.asarray(np.where(c, x, y), dtype=np.float32), grad=False)])
def _npi_where_scalar2(condition, *, x: float = 0.0, y: float = 0.0):  # type: ignore[no-untyped-def]
    """``where(condition, x, y)`` with two scalars (float32)."""
    return torch.where(condition.bool(), torch.tensor(x, dtype=torch.float32, device=condition.device),
                       torch.tensor(y, dtype=torch.float32, device=condition.device))


def _np_dot_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.dot(a, b)


def _dot_inputs(attrs: dict, ins: list, outs: list) -> list:
    """Backward shape rule of ``dot``/``matmul``: the contracted dimensions of ``a`` (last) and
    ``b`` (second-to-last, or only) are equal, so a known one fills an unknown (0) one: how a
    deferred weight ``w`` of ``x.dot(w)`` gets its shape."""
    a, b = ins[0], ins[1]
    if a is None or b is None or len(a) == 0 or len(b) == 0:
        return list(ins)
    a, b = list(a), list(b)
    kb = len(b) - 2 if len(b) >= 2 else 0
    if a[-1] == 0 and b[kb] > 0:
        a[-1] = b[kb]
    elif b[kb] == 0 and a[-1] > 0:
        b[kb] = a[-1]
    return [tuple(a), tuple(b)]


@register("_np_dot", infer_inputs=_dot_inputs, samples=lambda: [
    Sample((_u(-1, 1, (2, 3)), _u(-1, 1, (3, 4))), ref=_np_dot_ref),
    Sample((_u(-1, 1, (3,)), _u(-1, 1, (3,))), ref=_np_dot_ref),
    Sample((_u(-1, 1, (2, 2, 3)), _u(-1, 1, (4, 3, 2))), ref=_np_dot_ref),
    Sample((_u(-1, 1, ()), _u(-1, 1, (3,))), ref=_np_dot_ref)])
def _np_dot(a, b):  # type: ignore[no-untyped-def]
    """NumPy's ``dot``: scalars multiply, 1-D/2-D as matrix products, N-D sums the last axis of
    ``a`` with the second-to-last of ``b``."""
    if a.dim() == 0 or b.dim() == 0:
        return a * b
    if a.dim() <= 2 and b.dim() <= 2:
        return torch.matmul(a, b)
    return torch.tensordot(a, b, dims=([a.dim() - 1], [max(b.dim() - 2, 0)]))


@register("_npi_matmul", infer_inputs=_dot_inputs, samples=lambda: [
    Sample((_u(-1, 1, (2, 3)), _u(-1, 1, (3, 4))), ref=np.matmul),
    Sample((_u(-1, 1, (2, 2, 3)), _u(-1, 1, (3, 2))), ref=np.matmul),
    Sample((_u(-1, 1, (3,)), _u(-1, 1, (3, 2))), ref=np.matmul)])
def _npi_matmul(a, b):  # type: ignore[no-untyped-def]
    """NumPy's ``matmul`` (the ``@`` operator): stacks of matrices, broadcast."""
    if a.dim() == 0 or b.dim() == 0:
        raise MXNetError("matmul: Input operand does not have enough dimensions (scalars are not allowed; "
                         "use multiply)")
    return torch.matmul(a, b)


@register("_npi_tensordot", samples=lambda: [
    Sample((_u(-1, 1, (2, 3, 4)), _u(-1, 1, (4, 3, 2))), {"a_axes_summed": (1, 2), "b_axes_summed": (1, 0)},
           ref=lambda a, b, a_axes_summed, b_axes_summed: np.tensordot(a, b, (a_axes_summed, b_axes_summed)))])
def _npi_tensordot(a, b, *, a_axes_summed: Shape, b_axes_summed: Shape):  # type: ignore[no-untyped-def]
    """NumPy's ``tensordot`` over the given axis pairs."""
    return torch.tensordot(a, b, dims=(list(a_axes_summed), list(b_axes_summed)))


@register("_npi_tensordot_int_axes", samples=lambda: [
    Sample((_u(-1, 1, (2, 3, 4)), _u(-1, 1, (3, 4, 2))), {"axes": 2},
           ref=lambda a, b, axes: np.tensordot(a, b, axes))])
def _npi_tensordot_int_axes(a, b, *, axes: int):  # type: ignore[no-untyped-def]
    """NumPy's ``tensordot`` over the last ``axes`` axes of ``a`` and the first of ``b``."""
    return torch.tensordot(a, b, dims=axes)


@register("_npi_einsum", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)), _u(-1, 1, (3, 4))), {"subscripts": "ij,jk->ik"},
           ref=lambda *xs, subscripts: np.einsum(subscripts, *xs)),
    Sample((_u(-1, 1, (3, 3)),), {"subscripts": "ii"}, ref=lambda *xs, subscripts: np.einsum(subscripts, *xs))])
def _npi_einsum(*data, subscripts: str, optimize: int = 0):  # type: ignore[no-untyped-def]
    """NumPy's ``einsum`` (``subscripts`` in NumPy's notation)."""
    return torch.einsum(subscripts, *data)


@register("_npi_broadcast_to", samples=lambda: [
    Sample((_u(-1, 1, (3, 1)),), {"shape": (2, 3, 4)}, ref=lambda a, shape: np.broadcast_to(a, shape).copy()),
    Sample((_u(-1, 1, (3, 1)),), {"shape": (2, -2, 4)}, ref=lambda a, shape: np.broadcast_to(a, (2, 3, 4)).copy())])
def _npi_broadcast_to(array, *, shape: Shape):  # type: ignore[no-untyped-def]
    """NumPy's ``broadcast_to`` (a copy); MXNet's -2 in ``shape`` keeps the input's size there
    (the axes aligned from the right)."""
    shape = tuple(shape)
    if -2 in shape:
        lead = len(shape) - array.dim()
        if lead < 0:
            raise MXNetError(f"broadcast_to: cannot broadcast an array of shape {tuple(array.shape)} to {shape}")
        shape = tuple(array.shape[i - lead] if d == -2 and i >= lead else d for i, d in enumerate(shape))
        if -2 in shape:
            raise MXNetError(f"broadcast_to: -2 in {shape} has no input axis to copy (input shape "
                             f"{tuple(array.shape)})")
    return array.expand(shape).clone()


@register("_npi_flip", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)),), {"axis": 1}, ref=lambda a, axis: np.flip(a, axis).copy())])
def _npi_flip(a, *, axis: Axis = None):  # type: ignore[no-untyped-def]
    """NumPy's ``flip`` (no axis: every axis)."""
    axes = _axes(axis, a.dim())
    return torch.flip(a, dims=axes if axes is not None else tuple(range(a.dim())))


@register("_np_roll", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)),), {"shift": 1, "axis": 1}, ref=lambda a, shift, axis: np.roll(a, shift, axis)),
    Sample((_u(-1, 1, (2, 3)),), {"shift": 2}, ref=lambda a, shift: np.roll(a, shift)),
    Sample((_u(-1, 1, (2, 3)),), {"shift": 1, "axis": (0, 1)}, ref=lambda a, shift, axis: np.roll(a, shift, axis)),
    Sample((_u(-1, 1, (2, 3)),), {"shift": (1, -1), "axis": (0, 1)},
           ref=lambda a, shift, axis: np.roll(a, shift, axis))])
def _np_roll(a, *, shift: Axis = None, axis: Axis = None):  # type: ignore[no-untyped-def]
    """NumPy's ``roll`` (no axis: the flattened array, reshaped back; one shift for several axes
    rolls each by it)."""
    if shift is None:
        raise MXNetError("roll: shift is required")
    if axis is None:
        return torch.roll(a.reshape(-1), shifts=shift if isinstance(shift, int) else tuple(shift)).reshape(a.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    dims = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) == 1 and len(dims) > 1:
        shifts = shifts * len(dims)
    elif len(dims) == 1 and len(shifts) > 1:
        dims = dims * len(shifts)
    if len(shifts) != len(dims):
        raise MXNetError(f"roll: shift {shift} and axis {axis} must have the same length (or one of them one)")
    return torch.roll(a, shifts=shifts, dims=dims)


@register("_npi_around", differentiable=False, infer_shape=first_input_shape, samples=lambda: [
    Sample((_u(-300, 300, (3, 4)),), {"decimals": 1}, ref=lambda x, decimals: np.around(x, decimals), grad=False),
    Sample((_u(-300, 300, (3, 4)),), {"decimals": -2}, ref=lambda x, decimals: np.around(x, decimals), grad=False),
    Sample((np.array([[15, 25, -35, 7]], dtype=np.int32),), {"decimals": -1},
           ref=lambda x, decimals: np.around(x, decimals), grad=False),
    Sample((np.array([3, -4], dtype=np.int64),), {"decimals": 2},
           ref=lambda x, decimals: np.around(x, decimals), grad=False)])
def _npi_around(x, *, decimals: int = 0):  # type: ignore[no-untyped-def]
    """NumPy's ``around``/``round``: half to even at ``decimals`` places (negative: tens,
    hundreds...); integer arrays stay integers (unchanged for ``decimals >= 0``)."""
    if decimals >= 0 and not x.is_floating_point():
        return x.clone()
    if x.is_floating_point():
        if decimals >= 0:
            return torch.round(x, decimals=decimals)
        f = 10.0 ** (-decimals)
        return torch.round(x / f) * f
    f = 10 ** (-decimals)
    return (torch.round(x.to(torch.float64) / f) * f).to(x.dtype)


def _mask_index(data: torch.Tensor, mask: torch.Tensor, start_axis: int) -> tuple:
    if start_axis < 0 or start_axis + mask.dim() > data.dim() or \
            tuple(data.shape[start_axis:start_axis + mask.dim()]) != tuple(mask.shape):
        raise MXNetError(f"boolean_mask_assign: a mask of shape {tuple(mask.shape)} at axis {start_axis} does not "
                         f"match data of shape {tuple(data.shape)}")
    return (slice(None),) * start_axis + (mask.bool(),)


def _mask_assign_ref(data: np.ndarray, mask: np.ndarray, value: Any, start_axis: int = 0) -> np.ndarray:
    out = data.copy()
    out[(slice(None),) * start_axis + (mask.astype(bool),)] = value
    return out


_MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])


@register("_npi_boolean_mask_assign_scalar", samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _MASK), {"value": 42.0, "start_axis": 0},
           ref=lambda d, m, value, start_axis: _mask_assign_ref(d, m, value, start_axis)),
    Sample((_u(-1, 1, (2, 3, 4)), _MASK), {"value": -1.5, "start_axis": 1},
           ref=lambda d, m, value, start_axis: _mask_assign_ref(d, m, value, start_axis))])
def _npi_boolean_mask_assign_scalar(data, mask, *, value: float = 0.0, start_axis: int = 0):  # type: ignore[no-untyped-def]
    """``data[..., mask, ...] = value`` (the mask over axes ``start_axis``...; a copy, which
    ``out=data`` writes back: MXNet's in-place boolean assignment)."""
    out = data.clone()
    out[_mask_index(data, mask, start_axis)] = value
    return out


@register("_npi_boolean_mask_assign_tensor", samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _MASK, _u(-1, 1, (6,))), {"start_axis": 0},
           ref=lambda d, m, v, start_axis: _mask_assign_ref(d, m, v, start_axis)),
    Sample((_u(-1, 1, (2, 3, 4)), _MASK, _u(-1, 1, (2, 1))), {"start_axis": 1},
           ref=lambda d, m, v, start_axis: _mask_assign_ref(d, m, v, start_axis))])
def _npi_boolean_mask_assign_tensor(data, mask, value, *, start_axis: int = 0):  # type: ignore[no-untyped-def]
    """``data[..., mask, ...] = value`` with an array ``value`` that broadcasts to the selected
    elements (a copy; ``out=data`` writes back)."""
    out = data.clone()
    out[_mask_index(data, mask, start_axis)] = value.to(data.dtype)
    return out


@register("_np_copy", samples=lambda: [Sample((_u(-1, 1, (2, 3)),), ref=np.copy)])
def _np_copy(a):  # type: ignore[no-untyped-def]
    """NumPy's ``copy``."""
    return a.clone()


@register("_np_diag", samples=lambda: [Sample((_u(-1, 1, (3, 3)),), {"k": 1}, ref=lambda a, k: np.diag(a, k)),
                                      Sample((_u(-1, 1, (3,)),), {}, ref=np.diag)])
def _np_diag(a, *, k: int = 0):  # type: ignore[no-untyped-def]
    """NumPy's ``diag`` (a 1-D input gives a matrix, a 2-D one its diagonal)."""
    return torch.diag(a, k)


@register("_np_trace", samples=lambda: [Sample((_u(-1, 1, (3, 4)),), {}, ref=np.trace)])
def _np_trace(a, *, offset: int = 0, axis1: int = 0, axis2: int = 1):  # type: ignore[no-untyped-def]
    """NumPy's ``trace``."""
    return torch.diagonal(a, offset=offset, dim1=axis1, dim2=axis2).sum(-1)


@register("_npi_tril", samples=lambda: [Sample((_u(-1, 1, (3, 4)),), {"k": 0}, ref=lambda a, k: np.tril(a, k)),
                                        Sample((_u(-1, 1, (4,)),), {"k": -1}, ref=lambda a, k: np.tril(a, k))])
def _npi_tril(a, *, k: int = 0):  # type: ignore[no-untyped-def]
    """NumPy's ``tril`` (a 1-D array is the row of a square matrix, as NumPy broadcasts it)."""
    if a.dim() == 1:
        a = a.unsqueeze(0).expand(a.shape[0], a.shape[0])
    return torch.tril(a, k)


# ---- creation ---------------------------------------------------------------------------------
def _np_float(dtype: Any) -> torch.dtype:
    return dtype_torch(dtype or "float32")


@register("_npi_zeros", differentiable=False, samples=lambda: [
    Sample((), {"shape": (2, 3)}, ref=lambda shape: np.zeros(shape, np.float32), grad=False),
    Sample((), {"shape": ()}, ref=lambda shape: np.zeros(shape, np.float32), grad=False)])
def _npi_zeros(*, shape: Shape = (), ctx: str = "", dtype: Dtype = "float32"):  # type: ignore[no-untyped-def]
    """NumPy's ``zeros`` (MXNet's float32 default; ``shape=()`` is a zero-dim array)."""
    return torch.zeros(tuple(shape), dtype=_np_float(dtype), device=device_of(ctx))


@register("_npi_ones", differentiable=False, samples=lambda: [
    Sample((), {"shape": (2, 0)}, ref=lambda shape: np.ones(shape, np.float32), grad=False)])
def _npi_ones(*, shape: Shape = (), ctx: str = "", dtype: Dtype = "float32"):  # type: ignore[no-untyped-def]
    """NumPy's ``ones``."""
    return torch.ones(tuple(shape), dtype=_np_float(dtype), device=device_of(ctx))


@register("_npi_identity", differentiable=False, samples=lambda: [
    Sample((), {"shape": (3, 3)}, ref=lambda shape: np.identity(3, np.float32), grad=False)])
def _npi_identity(*, shape: Shape = (), ctx: str = "", dtype: Dtype = "float32"):  # type: ignore[no-untyped-def]
    """NumPy's ``identity`` (``shape`` is (n, n))."""
    return torch.eye(shape[0], dtype=_np_float(dtype), device=device_of(ctx))


@register("_npi_eye", differentiable=False, samples=lambda: [
    Sample((), {"N": 3, "M": 4, "k": 1}, ref=lambda N, M, k: np.eye(N, M, k, dtype=np.float32), grad=False)])
def _npi_eye(*, N: int, M: OptInt = None, k: int = 0, ctx: str = "", dtype: Dtype = "float32"):  # type: ignore[no-untyped-def]
    """NumPy's ``eye`` (ones on diagonal ``k``)."""
    m = N if M is None else M
    if N < 0 or m < 0:
        raise MXNetError(f"eye: negative dimensions are not allowed (N={N}, M={m})")
    out = torch.zeros((N, m), dtype=_np_float(dtype), device=device_of(ctx))
    if -N < k < m:
        out.diagonal(k).fill_(1)
    return out


@register("_npi_arange", differentiable=False, samples=lambda: [
    Sample((), {"start": 1.0, "stop": 7.0, "step": 2.0}, ref=lambda start, stop, step: np.arange(
        start, stop, step, dtype=np.float32), grad=False)])
def _npi_arange(*, start: float, stop: OptFloat = None, step: float = 1.0, repeat: int = 1,  # type: ignore[no-untyped-def]
                infer_range: bool = False, ctx: str = "", dtype: Dtype = "float32"):
    """NumPy's ``arange`` (float32 unless ``dtype`` says otherwise, as MXNet's)."""
    if stop is None:
        start, stop = 0.0, start
    if step == 0:
        raise MXNetError("arange: step cannot be 0")
    n = max(int(math.ceil((stop - start) / step)), 0)
    dt = _np_float(dtype)
    vals = torch.arange(n, dtype=torch.float64, device=device_of(ctx)) * step + start
    if repeat > 1:
        vals = vals.repeat_interleave(repeat)
    return vals.to(dt)


@register("_npi_full_like", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)),), {"fill_value": 2.5}, ref=lambda a, fill_value: np.full_like(a, fill_value),
           grad=False)], differentiable=False, infer_shape=first_input_shape)
def _npi_full_like(a, *, fill_value: float, ctx: str = "", dtype: Dtype = None):  # type: ignore[no-untyped-def]
    """NumPy's ``full_like`` (``zeros_like``/``ones_like`` too): ``a``'s shape and dtype unless
    ``dtype`` is given."""
    dt = dtype_torch(dtype) if dtype else a.dtype
    return torch.full(a.shape, fill_value, dtype=dt, device=device_of(ctx) if ctx else a.device)


# ---- random ---------------------------------------------------------------------------------------
def _size(size: Any) -> tuple:
    if size is None:
        return ()
    return (size,) if isinstance(size, int) else tuple(size)


def _draw_dtype(dtype: Any) -> torch.dtype:
    dt = dtype_torch(dtype or "float32")
    if not dt.is_floating_point:
        raise MXNetError(f"random: dtype must be a float type, got {dtype}")
    return dt


def _param(x: Optional[torch.Tensor], v: Optional[float], what: str, op: str) -> Any:
    if x is not None:
        return x
    if v is None:
        raise MXNetError(f"{op}: {what} is required (a scalar attribute or an array input)")
    return v


class DistributionParameterError(MXNetError, ValueError):
    """A sampler's parameter out of its domain (a negative scale, a probability above 1): MXNet
    1.9.1 raises ValueError for these (its error registry maps them); catchable as MXNetError too."""


def _check_domain(v: Any, ok: Callable[[Any], Any], op: str, what: str) -> None:
    """Raise DistributionParameterError unless ``ok(v)`` holds for the scalar or every element."""
    if isinstance(v, torch.Tensor) and v.device.type == "meta":
        return  # shape inference: no values to check
    good = bool(ok(v).all()) if isinstance(v, torch.Tensor) else bool(ok(v))
    if not good:
        raise DistributionParameterError(f"np.random.{op}: {what} (got {v if not isinstance(v, torch.Tensor) else 'an array'})")


def _rand_shape(size: tuple, *params: Any) -> tuple:
    if size:
        return size
    shapes = [tuple(p.shape) for p in params if isinstance(p, torch.Tensor)]
    return tuple(torch.broadcast_shapes(*shapes)) if shapes else ()


@register("_npi_uniform", random=True, differentiable=False, samples=lambda: [
    Sample((), {"low": 2.5, "high": 2.5, "size": (2, 3)}, ref=lambda **k: np.full((2, 3), 2.5, np.float32),
           grad=False)])
def _npi_uniform(input1=None, input2=None, *, low: OptFloat = 0.0, high: OptFloat = 1.0,  # type: ignore[no-untyped-def]
                 size: Axis = None, ctx: str = "", dtype: Dtype = "float32"):
    """``np.random.uniform``: samples from [low, high); ``low``/``high`` are scalars or arrays
    (``input1``/``input2``) that broadcast."""
    lo = _param(input1, low, "low", "uniform")
    hi = _param(input2, high, "high", "uniform")
    dt = _draw_dtype(dtype)
    shape = _rand_shape(_size(size), lo, hi)
    dev = input1.device if input1 is not None else device_of(ctx)
    return _uniform(lo, hi, shape, torch.float64 if dt == torch.float64 else torch.float32, dev).to(dt)


@register("_npi_normal", random=True, differentiable=False, samples=lambda: [
    Sample((), {"loc": 0.0, "scale": 1.0, "size": (2, 3)}, ref=lambda **k: np.zeros((2, 3), np.float32),
           grad=False)])
def _npi_normal(input1=None, input2=None, *, loc: OptFloat = 0.0, scale: OptFloat = 1.0,  # type: ignore[no-untyped-def]
                size: Axis = None, ctx: str = "", dtype: Dtype = "float32"):
    """``np.random.normal``: samples from N(loc, scale^2); scalars or arrays that broadcast."""
    mu = _param(input1, loc, "loc", "normal")
    sd = _param(input2, scale, "scale", "normal")
    _check_domain(sd, lambda v: v >= 0, "normal", "scale must be non-negative")
    dt = _draw_dtype(dtype)
    shape = _rand_shape(_size(size), mu, sd)
    dev = input1.device if input1 is not None else device_of(ctx)
    return _normal(mu, sd, shape, torch.float64 if dt == torch.float64 else torch.float32, dev).to(dt)


# NumPy's samplers, each by the inverse CDF of one uniform draw (torch's seeded generator, as every
# random operator), so that array parameters get reparameterization gradients as in MXNet:
# name -> (parameters, transform(u, p...), the parameters' domain check)
_positive = (lambda v: v > 0, "must be positive")
_nonneg = (lambda v: v >= 0, "must be non-negative")
_INVERSE_CDF: dict = {
    "exponential": (("scale",), lambda u, scale: -scale * torch.log1p(-u), {"scale": _nonneg}),
    "gumbel": (("loc", "scale"), lambda u, loc, scale: loc - scale * torch.log(-torch.log(u)), {"scale": _nonneg}),
    "logistic": (("loc", "scale"), lambda u, loc, scale: loc + scale * torch.log(u / (1 - u)), {"scale": _nonneg}),
    "pareto": (("a",), lambda u, a: torch.pow(1 - u, -1.0 / a) - 1, {"a": _positive}),
    # np.random.power (MXNet's _npi_powerd)
    "powerd": (("a",), lambda u, a: torch.pow(u, 1.0 / a), {"a": _positive}),
    "rayleigh": (("scale",), lambda u, scale: scale * torch.sqrt(-2.0 * torch.log1p(-u)), {"scale": _nonneg}),
    "weibull": (("a",), lambda u, a: torch.pow(-torch.log1p(-u), 1.0 / a), {"a": _positive}),
}


def _make_sampler(dist: str, params: tuple, transform: Callable, domain: dict) -> None:
    def kernel(*arrays: Any, size: Axis = None, ctx: str = "", dtype: Dtype = "float32",  # type: ignore[no-untyped-def]
               **p: Any):
        # the parameters given as arrays (attribute None) take the inputs, in order
        given = [a for a in arrays if a is not None]
        vals: list = []
        for n in params:
            v = given.pop(0) if p.get(n) is None and given else p.get(n)
            if v is None:
                raise MXNetError(f"np.random.{dist}: {n} is required (a scalar attribute or an array input)")
            vals.append(v if isinstance(v, torch.Tensor) else float(v))
            if n in domain:
                _check_domain(vals[-1], domain[n][0], dist.rstrip("d") if dist == "powerd" else dist,
                              f"{n} {domain[n][1]}")
        dt = _draw_dtype(dtype)
        shape = _rand_shape(_size(size), *vals)
        tensors = [v for v in vals if isinstance(v, torch.Tensor)]
        dev = tensors[0].device if tensors else device_of(ctx)
        u = torch.rand(shape, dtype=torch.float64 if dt == torch.float64 else torch.float32, device=dev)
        u = u.clamp(min=torch.finfo(u.dtype).tiny, max=1 - torch.finfo(u.dtype).eps)
        return transform(u, *vals).to(dt)
    # the inputs and keyword-only parameters are spelled out so the registry knows them
    ins = ", ".join(f"input{i + 1}=None" for i in range(len(params)))
    src = (f"def _npi_{dist}({ins}, *, " + ", ".join(f"{n}: OptFloat = 1.0" for n in params)
           + ", size: Axis = None, ctx: str = '', dtype: Dtype = 'float32'):\n"
           + f"    return _k({ins.replace('=None', '')}, size=size, ctx=ctx, dtype=dtype, "
           + ", ".join(f"{n}={n}" for n in params) + ")\n")
    ns: dict = {"_k": kernel, "OptFloat": OptFloat, "Axis": Axis, "Dtype": Dtype}
    exec(compile(src, f"<numpy sampler {dist}>", "exec"), ns)  # noqa: S102 - fixed text, names from this table
    fn = ns[f"_npi_{dist}"]
    fn.__doc__ = (f"``np.random.{dist.rstrip('d') if dist == 'powerd' else dist}`` with parameters "
                  f"{', '.join(params)} (scalar attributes, or arrays that broadcast, in order, for the "
                  "parameters whose attribute is None; differentiable in the array parameters).")
    register(f"_npi_{dist}", random=True, samples=lambda: [
        Sample((), {"size": (3, 4)}, ref=lambda **k: np.zeros((3, 4), np.float32), grad=False),
        Sample(tuple(_u(0.5, 2, (3, 1)) for _ in params), {"size": (3, 4), **{n: None for n in params}},
               ref=lambda *a, **k: np.zeros((3, 4), np.float32), grad=False)])(fn)


for _dist, (_params, _tf, _dom) in _INVERSE_CDF.items():
    _make_sampler(_dist, _params, _tf, _dom)


@register("_npi_gamma", random=True, differentiable=False, samples=lambda: [
    Sample((), {"shape": 2.0, "scale": 1.5, "size": (3, 4)}, ref=lambda **k: np.zeros((3, 4), np.float32), grad=False)])
def _npi_gamma(input1=None, input2=None, *, shape: OptFloat = 1.0, scale: OptFloat = 1.0,  # type: ignore[no-untyped-def]
               size: Axis = None, ctx: str = "", dtype: Dtype = "float32"):
    """``np.random.gamma(shape, scale, size)`` (torch's seeded gamma sampler)."""
    k = _param(input1, shape, "shape", "gamma")
    th = _param(input2, scale, "scale", "gamma")
    _check_domain(k, lambda v: v > 0, "gamma", "shape must be positive")
    _check_domain(th, lambda v: v > 0, "gamma", "scale must be positive")
    dt = _draw_dtype(dtype)
    out_shape = _rand_shape(_size(size), k, th)
    dev = input1.device if input1 is not None else device_of(ctx)
    wdt = torch.float64 if dt == torch.float64 else torch.float32
    conc = (k if isinstance(k, torch.Tensor) else torch.tensor(float(k), device=dev)).to(wdt).expand(out_shape)
    return (torch._standard_gamma(conc.contiguous()) * th).to(dt)


@register("_npi_bernoulli", random=True, differentiable=False, samples=lambda: [
    Sample((), {"prob": 1.0, "size": (2, 3)}, ref=lambda **k: np.ones((2, 3), np.float32), grad=False)])
def _npi_bernoulli(input1=None, *, prob: OptFloat = None, logit: OptFloat = None, size: Axis = None,  # type: ignore[no-untyped-def]
                   ctx: str = "", dtype: Dtype = "float32", is_logit: bool = False):
    """``npx.random.bernoulli``: 1 with probability ``prob`` (or ``sigmoid(logit)``), else 0."""
    p = input1 if input1 is not None else (logit if is_logit else prob)
    if p is None:
        raise MXNetError("bernoulli: give prob= or logit=")
    if is_logit:
        p = torch.sigmoid(p) if isinstance(p, torch.Tensor) else 1.0 / (1.0 + math.exp(-p))
    else:
        _check_domain(p, lambda v: (v >= 0) & (v <= 1) if isinstance(v, torch.Tensor) else 0 <= v <= 1,
                      "bernoulli", "prob must be in [0, 1]")
    shape = _rand_shape(_size(size), p)
    dev = input1.device if input1 is not None else device_of(ctx)
    return (torch.rand(shape, device=dev) < p).to(dtype_torch(dtype or "float32"))


@register("_npi_choice", random=True, differentiable=False, samples=lambda: [
    Sample((), {"a": 5, "size": (4,), "replace": False}, ref=lambda **k: np.zeros((4,), np.int64), grad=False)])
def _npi_choice(input1=None, input2=None, *, a: OptInt = None, size: Axis = None, ctx: str = "",  # type: ignore[no-untyped-def]
                replace: bool = True, weighted: bool = False):
    """``np.random.choice`` of indices in [0, a) (``input1`` = the weights p when ``weighted``),
    with or without replacement; int64."""
    shape = _size(size)
    n = math.prod(shape)
    dev = input1.device if input1 is not None else device_of(ctx)
    arrays = [x for x in (input1, input2) if x is not None]
    if a is None:  # the population is the first input (its length is what is drawn from)
        if not arrays:
            raise MXNetError("choice: a is required (an int, or an array input)")
        a = int(arrays.pop(0).shape[0])
    if weighted:
        if not arrays:
            raise MXNetError("choice: weighted=True needs the probabilities p as an input")
        p = arrays[0].to(torch.float64)
        idx = torch.multinomial(p, n, replacement=replace)
    elif replace:
        idx = torch.randint(0, a, (n,), device=dev)
    else:
        if n > a:
            raise MXNetError(f"choice: cannot take a larger sample ({n}) than the population ({a}) without "
                             "replacement")
        idx = torch.randperm(a, device=dev)[:n]
    return idx.reshape(shape).to(torch.int64)


@register("_npi_multinomial", random=True, differentiable=False, samples=lambda: [
    Sample((), {"n": 4, "pvals": (0.0, 1.0), "size": (3,)}, ref=lambda **k: np.tile([0, 4], (3, 1)).astype(np.int64),
           grad=False)])
def _npi_multinomial(a=None, *, n: int, pvals: Any = None, size: Axis = None):  # type: ignore[no-untyped-def]
    """``np.random.multinomial(n, pvals, size)``: counts of ``n`` draws over the categories
    (``pvals`` a tuple, or the array input ``a``); int64, shape ``size + (len(pvals),)``."""
    p = a.to(torch.float64) if a is not None else torch.tensor(
        [float(v) for v in (pvals if not isinstance(pvals, str) else eval(pvals))], dtype=torch.float64)  # noqa: S307
    shape = _size(size)
    m = math.prod(shape)
    if (m == 0 and shape) or p.shape[-1] == 0:  # no draws, or no categories (pvals=[]): empty counts
        return torch.zeros(shape + (p.shape[-1],), dtype=torch.int64)
    draws = torch.multinomial(p.expand(max(m, 1), -1), n, replacement=True) if n else \
        torch.zeros((max(m, 1), 0), dtype=torch.int64)
    counts = torch.zeros((max(m, 1), p.shape[-1]), dtype=torch.int64).scatter_add_(
        1, draws, torch.ones_like(draws))
    return counts.reshape(shape + (p.shape[-1],))


@register("_npi_uniform_n", random=True, differentiable=False, samples=lambda: [
    Sample((), {"low": 1.0, "high": 1.0, "size": (2,)}, ref=lambda **k: np.ones((2,), np.float32), grad=False)])
def _npi_uniform_n(input1=None, input2=None, *, low: OptFloat = 0.0, high: OptFloat = 1.0,  # type: ignore[no-untyped-def]
                   size: Axis = None, ctx: str = "", dtype: Dtype = "float32"):
    """``npx.random.uniform_n``: ``size`` is the batch shape, prepended to the parameters' shape."""
    lo, hi = _param(input1, low, "low", "uniform_n"), _param(input2, high, "high", "uniform_n")
    shape = _size(size) + _rand_shape((), lo, hi)
    dt = _draw_dtype(dtype)
    dev = input1.device if input1 is not None else device_of(ctx)
    return _uniform(lo, hi, shape, torch.float64 if dt == torch.float64 else torch.float32, dev).to(dt)


@register("_npi_normal_n", random=True, differentiable=False, samples=lambda: [
    Sample((), {"loc": 0.0, "scale": 1.0, "size": (2,)}, ref=lambda **k: np.zeros((2,), np.float32), grad=False)])
def _npi_normal_n(input1=None, input2=None, *, loc: OptFloat = 0.0, scale: OptFloat = 1.0,  # type: ignore[no-untyped-def]
                  size: Axis = None, ctx: str = "", dtype: Dtype = "float32"):
    """``npx.random.normal_n``: ``size`` is the batch shape, prepended to the parameters' shape."""
    mu, sd = _param(input1, loc, "loc", "normal_n"), _param(input2, scale, "scale", "normal_n")
    shape = _size(size) + _rand_shape((), mu, sd)
    dt = _draw_dtype(dtype)
    dev = input1.device if input1 is not None else device_of(ctx)
    return _normal(mu, sd, shape, torch.float64 if dt == torch.float64 else torch.float32, dev).to(dt)


# ---- linear algebra -------------------------------------------------------------------------------
def _spd(n: int) -> np.ndarray:
    a = _u(-1, 1, (n, n))
    return a @ a.T + n * np.eye(n)


@register("_npi_norm", samples=lambda: [
    Sample((_u(-1, 1, (3, 4)),), {}, ref=lambda x: np.linalg.norm(x)),
    Sample((_u(-1, 1, (3, 4)),), {"ord": 1.0, "axis": (1,)}, ref=lambda x, ord, axis: np.linalg.norm(x, ord, axis[0])),
    Sample((_u(-1, 1, (3, 4)),), {"axis": (0,), "keepdims": True},
           ref=lambda x, axis, keepdims: np.linalg.norm(x, axis=axis[0], keepdims=keepdims)),
    Sample((_u(-1, 1, (3, 4)),), {"ord": 2.0, "flag": -1}, ref=lambda x, ord, flag: np.linalg.norm(x, 2)),
    Sample((_u(-1, 1, (3, 4)),), {"ord": -2.0, "flag": -1}, ref=lambda x, ord, flag: np.linalg.norm(x, -2)),
    Sample((_u(-1, 1, (3, 4)),), {"ord": 1.0, "flag": -1}, ref=lambda x, ord, flag: np.linalg.norm(x, 1)),
    Sample((_u(-1, 1, (3, 4)),), {"ord": float("inf"), "flag": -1},
           ref=lambda x, ord, flag: np.linalg.norm(x, np.inf)),
    Sample((_u(-1, 1, (2, 3, 4)),), {"ord": 2.0, "axis": (2, 0), "flag": 0, "keepdims": True},
           ref=lambda x, ord, axis, flag, keepdims: np.linalg.norm(x, 2, axis, keepdims)),
    Sample((_u(-1, 1, (3, 4)),), {"ord": 2.0, "flag": 2}, ref=lambda x, ord, flag: np.linalg.norm(x, "nuc")),
    Sample((_u(-1, 1, (2, 3, 4)),), {"ord": 2.0, "axis": (0, 2), "flag": 1},
           ref=lambda x, ord, axis, flag: np.linalg.norm(x, "fro", axis))])
def _npi_norm(x, *, ord: OptFloat = None, axis: Axis = None, keepdims: bool = False,  # type: ignore[no-untyped-def]
              flag: int = -1):
    """``np.linalg.norm`` with MXNet's ``flag``: -2 (no ord, no axis) and 1 ('fro') give the
    Frobenius norm over ``axis`` (all axes when None), 2 the nuclear norm, 0 and -1 the norm of
    order ``ord`` as NumPy picks it: a vector norm over one axis, a matrix norm (2/-2 by singular
    values, 1/-1/inf/-inf by column/row sums) over two; no axis means all axes of a 1-D or 2-D
    array. ``ord`` absent (older files) is the Frobenius norm."""
    axes = _axes(axis, x.dim())
    xf = _float_in(x)
    if flag in (-2, 1) or (ord is None and flag != 2):
        if axes is None:
            r = torch.sqrt(torch.sum(xf * xf))
            return r.reshape((1,) * x.dim()) if keepdims else r
        return torch.sqrt(torch.sum(xf * xf, dim=axes, keepdim=keepdims))
    if axes is None:
        if x.dim() not in (1, 2):
            raise MXNetError(f"norm: an order (ord={ord}) without axis needs a 1-D or 2-D array, got "
                             f"{x.dim()} dimensions; pass axis=")
        axes = tuple(range(x.dim()))
    if flag == 2:
        if len(axes) != 2:
            raise MXNetError(f"norm: the nuclear norm needs two axes, got axis={axis}")
        return torch.linalg.matrix_norm(xf, ord="nuc", dim=axes, keepdim=keepdims)
    if len(axes) == 1:
        return torch.linalg.vector_norm(xf, ord=ord, dim=axes[0], keepdim=keepdims)
    if len(axes) != 2:
        raise MXNetError(f"norm: axis={axis} names {len(axes)} axes; a norm takes one (vector) or two (matrix)")
    if axes[0] == axes[1]:
        raise MXNetError(f"norm: duplicate axes given: {axis}")
    if ord not in (1.0, -1.0, 2.0, -2.0, float("inf"), float("-inf")):
        raise MXNetError(f"norm: invalid norm order {ord} for matrices (1, -1, 2, -2, inf, -inf, 'fro', 'nuc')")
    return torch.linalg.matrix_norm(xf, ord=ord, dim=axes, keepdim=keepdims)


@register("_npi_svd", num_outputs=3, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)),), ref=None, grad=False)])
def _npi_svd(a):  # type: ignore[no-untyped-def]
    """``np.linalg.svd`` as MXNet returns it: (ut, l, v) with ``a = ut @ diag(l) @ v`` for an
    (M, N) ``a`` with M <= N: ut (M, M), l (M,), v (M, N)."""
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    return u, s, vh


@register("_npi_cholesky", samples=lambda: [Sample((_spd(3),), {}, ref=np.linalg.cholesky, grad=False)])
def _npi_cholesky(A, *, lower: bool = True):  # type: ignore[no-untyped-def]
    """``np.linalg.cholesky`` (the lower factor)."""
    L = torch.linalg.cholesky(A)
    return L if lower else L.transpose(-1, -2)


@register("_npi_solve", samples=lambda: [Sample((_spd(3), _u(-1, 1, (3, 2))), ref=np.linalg.solve)])
def _npi_solve(a, b):  # type: ignore[no-untyped-def]
    """``np.linalg.solve``: x with ``a @ x = b``."""
    return torch.linalg.solve(a, b)


@register("_npi_pinv", samples=lambda: [
    Sample((_u(-1, 1, (2, 3, 4)), np.array([0.01, 0.05], dtype=np.float32)), {},
           ref=lambda a, r: np.linalg.pinv(a, r), grad=False)])
def _npi_pinv(A, rcond, *, hermitian: bool = False):  # type: ignore[no-untyped-def]
    """``np.linalg.pinv`` with an array ``rcond`` (one cut-off per matrix of the batch)."""
    return torch.linalg.pinv(A, rtol=rcond.to(A.dtype), hermitian=hermitian)


@register("_npi_pinv_scalar_rcond", samples=lambda: [
    Sample((_u(-1, 1, (3, 4)),), {}, ref=lambda a: np.linalg.pinv(a, 1e-15), grad=False)])
def _npi_pinv_scalar_rcond(A, *, rcond: float = 1e-15, hermitian: bool = False):  # type: ignore[no-untyped-def]
    """``np.linalg.pinv`` (Moore-Penrose pseudo-inverse; singular values below ``rcond`` times the
    largest are dropped)."""
    return torch.linalg.pinv(A, rtol=rcond, hermitian=hermitian)


@register("_npi_eigvalsh", samples=lambda: [Sample((_spd(3),), {}, ref=np.linalg.eigvalsh, grad=False)])
def _npi_eigvalsh(A, *, UPLO: str = "L"):  # type: ignore[no-untyped-def]
    """``np.linalg.eigvalsh``: eigenvalues of a symmetric matrix, ascending."""
    A = _float_in(A)  # integer matrices compute in float32, as MXNet's
    return torch.linalg.eigvalsh(A, UPLO=UPLO)


@register("_npi_eigh", num_outputs=2, samples=lambda: [Sample((_spd(3),), {}, ref=None, grad=False)])
def _npi_eigh(A, *, UPLO: str = "L"):  # type: ignore[no-untyped-def]
    """``np.linalg.eigh``: (eigenvalues ascending, eigenvectors in columns) of a symmetric matrix."""
    A = _float_in(A)
    w, v = torch.linalg.eigh(A, UPLO=UPLO)
    return w, v


@register("_npi_eigvals", differentiable=False, samples=lambda: [
    Sample((_spd(3),), {}, ref=lambda a: np.sort(np.linalg.eigvals(a).real), grad=False)])
def _npi_eigvals(A):  # type: ignore[no-untyped-def]
    """``np.linalg.eigvals`` of a matrix with real eigenvalues (MXNet computes real ones only),
    in ascending order."""
    A = _float_in(A)
    w = torch.linalg.eigvals(A)
    if w.device.type != "meta" and w.numel() and bool(w.imag.abs().max() > 0):
        raise MXNetError("eigvals: the matrix has complex eigenvalues, which MXNet's NumPy interface "
                         "does not represent")
    return torch.sort(w.real, dim=-1).values.to(A.dtype)


@register("_npi_tensorinv", samples=lambda: [
    Sample((_spd(4).reshape(4, 2, 2),), {"ind": 1}, ref=lambda a, ind: np.linalg.tensorinv(a, ind), grad=False)])
def _npi_tensorinv(a, *, ind: int = 2):  # type: ignore[no-untyped-def]
    """``np.linalg.tensorinv``."""
    return torch.linalg.tensorinv(a, ind=ind)


@register("_npi_tensorsolve", samples=lambda: [
    Sample((_spd(4).reshape(2, 2, 4), _u(-1, 1, (2, 2))), {}, ref=lambda a, b: np.linalg.tensorsolve(a, b),
           grad=False),
    Sample((_spd(4).reshape(2, 2, 2, 2), _u(-1, 1, (2, 2))), {"a_axes": (0, 2)},
           ref=lambda a, b, a_axes: np.linalg.tensorsolve(a, b, a_axes), grad=False),
    Sample((_spd(1), _u(-1, 1, (1, 1))), {}, ref=lambda a, b: np.linalg.tensorsolve(a, b), grad=False)])
def _npi_tensorsolve(a, b, *, a_axes: Shape = ()):  # type: ignore[no-untyped-def]
    """``np.linalg.tensorsolve`` as NumPy computes it: ``a_axes`` moved last, x of shape
    ``a.shape[-(a.ndim - b.ndim):]`` (all of ``a.shape`` when the ranks are equal, NumPy's -0
    slice), one square solve."""
    if a_axes:
        rest = [k for k in range(a.dim()) if k not in tuple(ax % a.dim() for ax in a_axes)]
        a = a.permute(*rest, *(ax % a.dim() for ax in a_axes))
    xshape = tuple(a.shape[-(a.dim() - b.dim()):])
    n = math.prod(xshape)
    if a.numel() != n * n:
        raise MXNetError(f"tensorsolve: the shapes {tuple(a.shape)} and {tuple(b.shape)} must satisfy "
                         "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    return torch.linalg.solve(a.reshape(n, n), b.reshape(n)).reshape(xshape)


@register("_npi_eig", num_outputs=2, differentiable=False, samples=lambda: [Sample((_spd(3),), {}, ref=None, grad=False)])
def _npi_eig(A):  # type: ignore[no-untyped-def]
    """``np.linalg.eig`` of a matrix with real eigenvalues (MXNet's NumPy interface computes real
    ones only): (eigenvalues, eigenvectors in columns)."""
    A = _float_in(A)
    w, v = torch.linalg.eig(A)
    if w.device.type != "meta" and w.numel() and bool(w.imag.abs().max() > 0):
        raise MXNetError("eig: the matrix has complex eigenvalues, which MXNet's NumPy interface does not "
                         "represent")
    return w.real.to(A.dtype), v.real.to(A.dtype)


@register("_np_diagonal", samples=lambda: [
    Sample((_u(-1, 1, (3, 4)),), {"offset": 1}, ref=lambda a, offset: np.diagonal(a, offset).copy()),
    Sample((_u(-1, 1, (2, 3, 3)),), {"axis1": 1, "axis2": 2},
           ref=lambda a, axis1, axis2: np.diagonal(a, 0, axis1, axis2).copy())])
def _np_diagonal(data, *, offset: int = 0, axis1: int = 0, axis2: int = 1):  # type: ignore[no-untyped-def]
    """NumPy's ``diagonal`` (a copy)."""
    return torch.diagonal(data, offset=offset, dim1=axis1, dim2=axis2).clone()


add_alias("_hypot_scalar", "_npi_hypot_scalar")
_make_binary("hypot", lambda a, b: torch.hypot(_float_in(a) if isinstance(a, torch.Tensor) else torch.full_like(
    _float_in(b), float(a)), _float_in(b) if isinstance(b, torch.Tensor) else torch.full_like(_float_in(a), float(b))),
    np.hypot, 0.5, 2, True, None)


# ---- npx -------------------------------------------------------------------------------------
@register("_npx_nonzero", aliases=("_npi_nonzero",), differentiable=False, samples=lambda: [
    Sample((np.array([[0.0, 1.0], [2.0, 0.0]]),), ref=lambda x: np.asarray(np.transpose(np.nonzero(x))).astype(np.int64),
           grad=False, check_shape=False)])
def _npx_nonzero(x):  # type: ignore[no-untyped-def]
    """``npx.nonzero``: the (N, ndim) int64 indices of the nonzero elements."""
    return torch.nonzero(x)


class ConstraintViolation(MXNetError, ValueError):
    """``npx.constraint_check`` found a False element: MXNet raises ValueError (with the message
    given); catchable as MXNetError too."""


@register("_npx_constraint_check", differentiable=False, samples=lambda: [
    Sample((np.array([True, True]),), {"msg": "x"}, ref=lambda x, msg: np.array(True), grad=False)])
def _npx_constraint_check(input, *, msg: str = "Constraint violated!"):  # type: ignore[no-untyped-def]  # noqa: A002
    """``npx.constraint_check``: a bool True when every element of ``input`` holds, else
    ConstraintViolation(msg) (a ValueError, as MXNet)."""
    if input.device.type != "meta" and not bool(torch.all(input.bool())):
        raise ConstraintViolation(msg)
    return torch.ones((), dtype=torch.bool, device=input.device)


# ---- functions MXNet 1.9.1 has operators for (once computed by official NumPy here) -----------------
def _pad_index(n: int, before: int, after: int, mode: str) -> list:
    """Source positions along one axis of size ``n`` for positions ``-before .. n + after - 1``
    (NumPy's edge / reflect / symmetric, reflect_type='even', widths beyond ``n`` repeating)."""
    out = []
    for i in range(-before, n + after):
        if mode == "edge" or n == 1:
            j = min(max(i, 0), n - 1)
        elif mode == "reflect":
            period = 2 * (n - 1)
            j = i % period
            j = period - j if j > n - 1 else j
        else:  # symmetric: the edge value repeats
            j = i % (2 * n)
            j = 2 * n - 1 - j if j >= n else j
        out.append(j)
    return out


def _pad_widths(pad_width: Any, ndim: int) -> list:
    try:
        w = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (ndim, 2))
    except ValueError as e:
        raise ValueError(f"pad: pad_width {pad_width!r} does not fit an array of {ndim} dimensions; give "
                         f"((before, after),) or one pair per axis") from e
    if (w < 0).any():
        raise ValueError(f"pad: index can't contain negative values (pad_width {pad_width!r})")
    return [(int(b), int(a)) for b, a in w]


def _pad_ref(x: np.ndarray, pad_width: Any, mode: str = "constant", constant_value: float = 0.0,
             reflect_type: str = "even") -> np.ndarray:
    if mode == "constant":
        return np.pad(x, pad_width, mode="constant", constant_values=constant_value)
    return np.pad(x, pad_width, mode=mode)  # type: ignore[call-overload]  # mode: str


@register("_npi_pad", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)),), {"pad_width": ((1, 2), (2, 1)), "mode": "constant", "constant_value": 0.5},
           ref=_pad_ref),
    Sample((_u(-1, 1, (3, 4)),), {"pad_width": ((2, 3), (2, 3)), "mode": "reflect"}, ref=_pad_ref),
    Sample((_u(-1, 1, (2, 3)),), {"pad_width": ((2, 3), (4, 1)), "mode": "symmetric"}, ref=_pad_ref),
    Sample((_u(-1, 1, (2, 3, 2)),), {"pad_width": ((1, 1),), "mode": "edge"}, ref=_pad_ref),
    Sample((_u(-1, 1, (3, 4)),), {"pad_width": ((1, 2), (0, 1)), "mode": "maximum"}, ref=_pad_ref),
    Sample((_u(-1, 1, (3, 4)),), {"pad_width": ((1, 0), (2, 2)), "mode": "minimum"}, ref=_pad_ref)])
def _npi_pad(data, *, pad_width: Any = (), mode: Literal["constant", "edge", "reflect", "symmetric",  # type: ignore[no-untyped-def]
                                                          "maximum", "minimum"] = "constant",
             constant_value: float = 0.0, reflect_type: str = "even"):
    """NumPy's ``pad`` in the modes MXNet 1.9.1 has (constant, edge, reflect, symmetric, maximum,
    minimum); ``pad_width`` broadcasts as NumPy's. Differentiable (constant: the interior's
    gradient, as MXNet's ``_backward_npi_pad``; the others through the gathered positions)."""
    widths = _pad_widths(pad_width, data.dim())
    if mode == "constant":
        flat = [v for b, a in reversed(widths) for v in (b, a)]
        return torch.nn.functional.pad(data, flat, mode="constant", value=constant_value) if flat else data.clone()
    out = data
    for ax, (b, a) in enumerate(widths):
        if b == 0 and a == 0:
            continue
        n = out.shape[ax]
        if n == 0:
            raise ValueError(f"pad: can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
        if mode in ("maximum", "minimum"):
            stat = (torch.amax if mode == "maximum" else torch.amin)(out, dim=ax, keepdim=True)
            parts = [stat.expand(*[b if d == ax else s for d, s in enumerate(out.shape)]), out,
                     stat.expand(*[a if d == ax else s for d, s in enumerate(out.shape)])]
            out = torch.cat(parts, dim=ax)
        else:
            idx = torch.tensor(_pad_index(n, b, a, mode), dtype=torch.int64, device=out.device)
            out = out.index_select(ax, idx)
    return out if out is not data else data.clone()


def _percentile_ref(a: np.ndarray, q: Any = None, axis: Any = None, interpolation: str = "linear",
                    keepdims: bool = False, q_scalar: Any = None) -> np.ndarray:
    r = np.percentile(a, q_scalar if q is None else q, axis=axis, method=interpolation,  # type: ignore[call-overload]
                      keepdims=keepdims)
    return np.asarray(r).astype(a.dtype)


@register("_npi_percentile", samples=lambda: [
    Sample((_u(-2, 2, (3, 5)),), {"q_scalar": 30.0}, ref=_percentile_ref),
    Sample((_u(-2, 2, (3, 5, 4)),), {"q_scalar": 50.0, "axis": 1, "keepdims": True}, ref=_percentile_ref),
    Sample((_u(-2, 2, (3, 4, 5)), np.array([10.0, 55.0, 90.0])), {"axis": (0, 2)}, ref=_percentile_ref,
           grad_inputs=(0,)),
    Sample((_u(-2, 2, (4, 5)),), {"q_scalar": 40.0, "axis": 1, "interpolation": "lower"}, ref=_percentile_ref),
    Sample((_u(-2, 2, (4, 5)),), {"q_scalar": 40.0, "axis": 0, "interpolation": "higher"}, ref=_percentile_ref),
    Sample((_u(-2, 2, (4, 5)),), {"q_scalar": 40.0, "axis": 0, "interpolation": "midpoint"}, ref=_percentile_ref),
    Sample((_u(-2, 2, (4, 5)),), {"q_scalar": 65.0, "axis": 1, "interpolation": "nearest"}, ref=_percentile_ref)])
def _npi_percentile(a, q=None, *, axis: Axis = None, interpolation: Literal[  # type: ignore[no-untyped-def]
        "linear", "lower", "higher", "midpoint", "nearest"] = "linear", keepdims: bool = False,
        q_scalar: OptFloat = None):
    """NumPy's ``percentile`` (and ``quantile``, with ``q`` * 100): the reduced axes sorted, then
    NumPy's interpolation between the ranks around ``q / 100 * (n - 1)``; float64 stays float64,
    other dtypes give float32 (MXNet 1.9.1). ``q`` may be an array: its shape leads the output's.
    Differentiable in ``a`` through the sort (MXNet 1.9.1 gives zero gradients)."""
    dt = torch.float64 if a.dtype == torch.float64 else torch.float32
    x = a.to(dt)
    nd = x.dim()
    axes = _axes(axis, nd)
    axes = tuple(range(nd)) if axes is None else tuple(sorted(set(axes)))
    kept = [i for i in range(nd) if i not in axes]
    xt = x.permute(*(kept + list(axes))).reshape([x.shape[i] for i in kept] + [-1])
    s = torch.sort(xt, dim=-1).values
    n = s.shape[-1]
    if n == 0:
        raise MXNetError(f"percentile: the reduced axes {axes} of shape {tuple(a.shape)} are empty")
    qv = q.to(dt) if q is not None else torch.tensor(float(q_scalar if q_scalar is not None else 50.0), dtype=dt,
                                                    device=a.device)
    if q is not None and qv.device.type != "meta" and bool(((qv < 0) | (qv > 100)).any()):
        raise MXNetError("percentile: percentiles must be in the range [0, 100]")
    v = (qv / 100.0 * (n - 1)).reshape(-1)
    lo = torch.floor(v).clamp(0, n - 1)
    hi = torch.ceil(v).clamp(0, n - 1)
    s_lo = s.index_select(-1, lo.long())
    if interpolation == "lower":
        r = s_lo
    elif interpolation == "higher":
        r = s.index_select(-1, hi.long())
    elif interpolation == "nearest":
        r = s.index_select(-1, torch.round(v).clamp(0, n - 1).long())
    elif interpolation == "midpoint":
        r = (s_lo + s.index_select(-1, hi.long())) * 0.5
    else:
        r = s_lo + (s.index_select(-1, hi.long()) - s_lo) * (v - lo)
    out_shape = [1 if i in axes else x.shape[i] for i in range(nd)] if keepdims else [x.shape[i] for i in kept]
    return r.movedim(-1, 0).reshape(tuple(qv.shape) + tuple(out_shape))


@register("_npi_nan_to_num", samples=lambda: [
    Sample((np.array([[1.0, np.nan, -np.inf], [np.inf, -2.0, 0.5]]),), {"nan": 1.5, "posinf": 9.0, "neginf": -9.0},
           ref=lambda x, nan, posinf, neginf: np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf), grad=False),
    Sample((_u(-2, 2, (3, 4)),), {}, ref=lambda x: np.nan_to_num(x))])
def _npi_nan_to_num(data, *, copy: bool = True, nan: float = 0.0, posinf: OptFloat = None,  # type: ignore[no-untyped-def]
                    neginf: OptFloat = None):
    """NumPy's ``nan_to_num``: NaN to ``nan``, +-inf to ``posinf``/``neginf`` (default: the dtype's
    largest finite values); the gradient passes where the input is finite, as MXNet's."""
    return torch.nan_to_num(data, nan=nan, posinf=posinf, neginf=neginf)


def _unique_outputs(attrs: dict) -> int:
    return 1 + sum(bool(attrs.get(k, False)) for k in ("return_index", "return_inverse", "return_counts"))


def _unique_ref(ar: np.ndarray, return_index: bool = False, return_inverse: bool = False,
                return_counts: bool = False, axis: Any = None) -> Any:
    r = np.unique(ar, return_index=return_index, return_inverse=return_inverse,  # type: ignore[call-overload]
                  return_counts=return_counts, axis=axis)
    if not isinstance(r, tuple):
        return r
    # NumPy 2 shapes the inverse like the input; MXNet 1.9.1 (as NumPy 1.x) gives it 1-D
    return tuple(np.asarray(v).reshape(-1).astype(np.int64) if k > 0 else v for k, v in enumerate(r))


_UNIQUE_INVERSE_KEEPS_SHAPE = np.unique(np.zeros((2, 2)), return_inverse=True)[1].shape == (2, 2)


@register("_npi_unique", num_outputs=_unique_outputs, differentiable=False, samples=lambda: [
    Sample((np.array([3.0, 1.0, 2.0, 3.0, 1.0, 5.0]),), {}, ref=_unique_ref, grad=False, check_shape=False),
    Sample((np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], dtype=np.int32),),
           {"return_index": True, "return_inverse": True, "return_counts": True, "axis": 0},
           ref=_unique_ref, grad=False, check_shape=False),
    Sample((np.array([[2.0, 1.0], [1.0, 4.0]]),), {"return_index": True, "return_counts": True},
           ref=_unique_ref, grad=False, check_shape=False)])
def _npi_unique(data, *, return_index: bool = False, return_inverse: bool = False,  # type: ignore[no-untyped-def]
                return_counts: bool = False, axis: OptInt = None):
    """NumPy's ``unique``: the sorted unique elements (or slices along ``axis``), then as asked the
    int64 indices of their first occurrences, the inverse indices and the counts."""
    x = data.reshape(-1) if axis is None else data
    dim = 0 if axis is None else axis % max(data.dim(), 1)
    u, inv, cnt = torch.unique(x, sorted=True, return_inverse=True, return_counts=True, dim=dim)
    outs = [u]
    if return_index:
        n = x.shape[dim]
        first = torch.full((u.shape[dim],), n, dtype=torch.int64, device=x.device)
        outs.append(first.scatter_reduce(0, inv.reshape(-1), torch.arange(n, device=x.device), reduce="amin"))
    if return_inverse:
        # without axis: flat (NumPy 1, MXNet 1.9.1) or data's shape (NumPy 2), as the running NumPy
        flat_shape = tuple(data.shape) if axis is None and _UNIQUE_INVERSE_KEEPS_SHAPE else (-1,)
        outs.append(inv.reshape(flat_shape).to(torch.int64))
    if return_counts:
        outs.append(cnt.to(torch.int64))
    return outs[0] if len(outs) == 1 else tuple(outs)


@register("_npi_bincount", differentiable=False, samples=lambda: [
    Sample((np.array([0, 1, 1, 3, 2, 1, 7], dtype=np.int64),), {},
           ref=lambda x: np.bincount(x).astype(np.int64), grad=False, check_shape=False),
    Sample((np.array([0, 1, 1, 2], dtype=np.int32), np.array([0.5, 1.0, -0.25, 2.0])),
           {"minlength": 6, "has_weights": True}, ref=lambda x, w, minlength, has_weights: np.bincount(
               x, w, minlength), grad=False, check_shape=False)])
def _npi_bincount(data, weights=None, *, minlength: int = 0, has_weights: bool = False):  # type: ignore[no-untyped-def]
    """NumPy's ``bincount`` of non-negative integers (int64 counts; with ``weights``, their sums in
    the weights' dtype)."""
    if data.is_floating_point() or data.dtype == torch.bool:
        raise TypeError(f"bincount: cannot cast array data from dtype {dtype_name(data.dtype)} to int64 "
                        "according to the rule 'safe'; give an integer array")
    if data.dim() != 1:
        raise ValueError(f"bincount: object of too {'small' if data.dim() == 0 else 'large'} depth for desired "
                         f"array (a 1-D array is needed, got shape {tuple(data.shape)})")
    if data.numel() and data.device.type != "meta" and bool((data < 0).any()):
        raise ValueError("bincount: 'list' argument must have no negative elements")
    if weights is not None:
        return torch.bincount(data, weights=weights, minlength=minlength).to(weights.dtype)
    return torch.bincount(data, minlength=minlength).to(torch.int64)


@register("_npi_polyval", samples=lambda: [
    Sample((_u(-1, 1, (4,)), _u(-1, 1, (3, 2))), ref=np.polyval),
    Sample((_u(-1, 1, (1,)), _u(-1, 1, (3,))), ref=lambda p, x: np.polyval(p, x) + 0 * x)])
def _npi_polyval(p, x):  # type: ignore[no-untyped-def]
    """NumPy's ``polyval``: the polynomial with coefficients ``p`` (highest power first) at
    ``x``, by Horner's rule (differentiable in both)."""
    y = torch.zeros_like(x, dtype=torch.promote_types(p.dtype, x.dtype))
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def _ediff1d_ref(ary: np.ndarray, *extra: np.ndarray, to_begin_arr_given: bool = False,
                 to_end_arr_given: bool = False, to_begin_scalar: Any = None, to_end_scalar: Any = None) -> np.ndarray:
    it = iter(extra)
    begin = next(it) if to_begin_arr_given else to_begin_scalar
    end = next(it) if to_end_arr_given else to_end_scalar
    return np.ediff1d(ary, to_end=end, to_begin=begin).astype(ary.dtype)


@register("_npi_ediff1d", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)),), {}, ref=_ediff1d_ref),
    Sample((_u(-1, 1, (5,)), _u(-1, 1, (2,))), {"to_begin_arr_given": True, "to_end_scalar": 4.0}, ref=_ediff1d_ref),
    Sample((_u(-1, 1, (4,)), _u(-1, 1, (2,)), _u(-1, 1, (1,))), {"to_begin_arr_given": True,
                                                                  "to_end_arr_given": True}, ref=_ediff1d_ref)])
def _npi_ediff1d(input1, input2=None, input3=None, *, to_begin_arr_given: bool = False,  # type: ignore[no-untyped-def]
                 to_end_arr_given: bool = False, to_begin_scalar: OptFloat = None, to_end_scalar: OptFloat = None):
    """NumPy's ``ediff1d``: differences of the flattened array, with ``to_begin``/``to_end``
    (arrays as inputs 2 and 3 in that order, or scalars) around them."""
    flat = input1.reshape(-1)
    parts = [flat[1:] - flat[:-1]]
    extra = [t for t in (input2, input3) if t is not None]
    if to_begin_arr_given:
        parts.insert(0, extra.pop(0).reshape(-1).to(flat.dtype))
    elif to_begin_scalar is not None:
        parts.insert(0, torch.full((1,), to_begin_scalar, dtype=flat.dtype, device=flat.device))
    if to_end_arr_given:
        parts.append(extra.pop(0).reshape(-1).to(flat.dtype))
    elif to_end_scalar is not None:
        parts.append(torch.full((1,), to_end_scalar, dtype=flat.dtype, device=flat.device))
    return torch.cat(parts)


@register("_npi_indices", differentiable=False, samples=lambda: [
    Sample((), {"dimensions": (2, 3)}, ref=lambda dimensions: np.indices(dimensions).astype(np.int32), grad=False),
    Sample((), {"dimensions": (2, 0, 3), "dtype": "float32"},
           ref=lambda dimensions, dtype: np.indices(dimensions).astype(dtype), grad=False)])
def _npi_indices(*, dimensions: Shape, dtype: Dtype = "int32", ctx: str = ""):  # type: ignore[no-untyped-def]
    """NumPy's ``indices``: the grid of each axis' index, stacked (MXNet's int32 default)."""
    dev = device_of(ctx)
    dims = tuple(int(d) for d in dimensions)
    grids = torch.meshgrid(*[torch.arange(d, device=dev) for d in dims], indexing="ij") if dims else []
    return torch.stack(list(grids)).to(dtype_torch(dtype or "int32")) if dims else \
        torch.zeros((0,), dtype=dtype_torch(dtype or "int32"), device=dev)


@register("_npi_diag_indices_from", differentiable=False, samples=lambda: [
    Sample((_u(-1, 1, (3, 3)),), ref=lambda a: np.asarray(np.diag_indices_from(a)).astype(np.int64), grad=False),
    Sample((_u(-1, 1, (2, 2, 2)),), ref=lambda a: np.asarray(np.diag_indices_from(a)).astype(np.int64), grad=False)])
def _npi_diag_indices_from(data):  # type: ignore[no-untyped-def]
    """NumPy's ``diag_indices_from`` as one (ndim, n) int64 array (the front-end splits its rows)."""
    if data.dim() < 2:
        raise ValueError(f"diag_indices_from: input array must be at least 2-d, got shape {tuple(data.shape)}")
    if len(set(data.shape)) != 1:
        raise ValueError(f"diag_indices_from: all dimensions of input must be of equal length, got shape "
                         f"{tuple(data.shape)}")
    n = data.shape[0]
    return torch.arange(n, device=data.device).expand(data.dim(), n).clone()


_WINDOWS: dict = {
    "hanning": (lambda k, m: 0.5 - 0.5 * torch.cos(2 * math.pi * k / (m - 1)), np.hanning),
    "hamming": (lambda k, m: 0.54 - 0.46 * torch.cos(2 * math.pi * k / (m - 1)), np.hamming),
    "blackman": (lambda k, m: 0.42 - 0.5 * torch.cos(2 * math.pi * k / (m - 1))
                 + 0.08 * torch.cos(4 * math.pi * k / (m - 1)), np.blackman),
}
for _wname, (_wfn, _wref) in _WINDOWS.items():
    def _window(fn: Callable, nm: str) -> Callable:
        def kernel(*, M: int, ctx: str = "", dtype: Dtype = "float32"):  # type: ignore[no-untyped-def]
            dev = device_of(ctx)
            if M < 1:
                return torch.zeros((0,), dtype=_np_float(dtype), device=dev)
            if M == 1:
                return torch.ones((1,), dtype=_np_float(dtype), device=dev)
            return fn(torch.arange(M, dtype=torch.float64, device=dev), M).to(_np_float(dtype))
        kernel.__name__ = f"_npi_{nm}"
        kernel.__doc__ = f"NumPy's ``{nm}`` window of ``M`` points (MXNet's float32 default)."
        return kernel
    register(f"_npi_{_wname}", differentiable=False, samples=(lambda r=_wref: [
        Sample((), {"M": 7}, ref=lambda M, r=r: r(M).astype(np.float32), grad=False),
        Sample((), {"M": 1, "dtype": "float64"}, ref=lambda M, dtype, r=r: r(M), grad=False)]))(_window(_wfn, _wname))


@register("_npi_resize_fallback", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)),), {"new_shape": (4, 4)}, ref=lambda a, new_shape: np.resize(a, new_shape)),
    Sample((_u(-1, 1, (2, 3)),), {"new_shape": (2,)}, ref=lambda a, new_shape: np.resize(a, new_shape)),
    Sample((_u(-1, 1, (0, 3)),), {"new_shape": (2, 2)}, ref=lambda a, new_shape: np.resize(a, new_shape),
           grad=False)])
def _npi_resize_fallback(a, *, new_shape: Shape):  # type: ignore[no-untyped-def]
    """NumPy's ``resize``: the flattened array repeated to fill ``new_shape`` (zeros when ``a``
    is empty)."""
    shape = tuple(int(d) for d in ((new_shape,) if isinstance(new_shape, int) else new_shape))
    if any(d < 0 for d in shape):
        raise ValueError(f"resize: all elements of `new_shape` must be non-negative, got {shape}")
    size = math.prod(shape)
    flat = a.reshape(-1)
    if flat.shape[0] == 0 or size == 0:
        return torch.zeros(shape, dtype=a.dtype, device=a.device)
    reps = -(-size // flat.shape[0])
    return flat.repeat(reps)[:size].reshape(shape)


@register("_npi_unravel_index_fallback", differentiable=False, samples=lambda: [
    Sample((np.array([22, 41, 37], dtype=np.int64),), {"shape": (7, 6)},
           ref=lambda i, shape: np.asarray(np.unravel_index(i, shape)).astype(np.int64), grad=False),
    Sample((np.array([[3, 0], [5, 23]], dtype=np.int32),), {"shape": (2, 3, 4)},
           ref=lambda i, shape: np.asarray(np.unravel_index(i, shape)).astype(np.int64), grad=False)])
def _npi_unravel_index_fallback(indices, *, shape: Shape):  # type: ignore[no-untyped-def]
    """NumPy's ``unravel_index`` (C order) as one (len(shape), ...) int64 array (the front-end
    splits its rows); an index outside the shape's size raises ValueError."""
    if indices.is_floating_point():
        raise TypeError("unravel_index: only int indices permitted")
    size = math.prod(shape)
    idx = indices.to(torch.int64)
    if idx.numel() and idx.device.type != "meta" and bool(((idx < 0) | (idx >= size)).any()):
        bad = int(idx[(idx < 0) | (idx >= size)].reshape(-1)[0])
        raise ValueError(f"unravel_index: index {bad} is out of bounds for array with size {size}")
    out = []
    for d in reversed(tuple(shape)):
        out.append(torch.remainder(idx, d))
        idx = torch.div(idx, d, rounding_mode="floor")
    return torch.stack(out[::-1]) if out else torch.zeros((0,) + tuple(indices.shape), dtype=torch.int64)


def _delete_keep(n: int, axis: int, obj: Any, start: Any, stop: Any, step: Any, int_ind: Any) -> list:
    keep = np.ones(n, dtype=bool)
    if int_ind is not None:
        if not -n <= int_ind < n:
            raise IndexError(f"delete: index {int_ind} is out of bounds for axis {axis} with size {n}")
        keep[int_ind] = False
    elif obj is not None:
        ind = obj.detach().cpu().numpy().reshape(-1)
        if ind.dtype == np.bool_:
            if ind.shape[0] != n:
                raise ValueError(f"delete: boolean array argument obj to delete must be one dimensional and match "
                                 f"the axis length of {n}")
            keep &= ~ind
        else:
            ind = ind.astype(np.int64)
            keep[ind[(ind >= 0) & (ind < n)]] = False  # MXNet ignores indices outside [0, n), negative ones too
    else:
        keep[slice(start, stop, step)] = False
    return np.nonzero(keep)[0].tolist()


@register("_npi_delete", samples=lambda: [
    Sample((_u(-1, 1, (3, 4)),), {"int_ind": -1, "axis": 1}, ref=lambda a, int_ind, axis: np.delete(a, int_ind, axis)),
    Sample((_u(-1, 1, (3, 4)),), {"start": 1, "stop": None, "step": 2},
           ref=lambda a, start, stop, step: np.delete(a, slice(start, stop, step))),
    Sample((_u(-1, 1, (4, 2)), np.array([0, 2], dtype=np.int64)), {"axis": 0},
           ref=lambda a, obj, axis: np.delete(a, obj, axis), check_shape=False, grad_inputs=(0,)),
    # indices outside [0, n) are ignored (MXNet), negative ones included
    Sample((_u(-1, 1, (4, 2)), np.array([-1, 1, 7], dtype=np.int64)), {"axis": 0},
           ref=lambda a, obj, axis: np.delete(a, [1], axis), check_shape=False, grad_inputs=(0,))])
def _npi_delete(arr, obj=None, *, start: OptInt = None, stop: OptInt = None, step: OptInt = None,  # type: ignore[no-untyped-def]
                int_ind: OptInt = None, axis: OptInt = None):
    """NumPy's ``delete``: ``arr`` without the entries (``axis=None``: of the flattened array)
    named by an int ``int_ind``, an index array ``obj`` or the slice ``start:stop:step``."""
    x = arr.reshape(-1) if axis is None else arr
    ax = 0 if axis is None else axis % max(arr.dim(), 1)
    keep = _delete_keep(x.shape[ax], ax, obj, start, stop, step, int_ind)
    return x.index_select(ax, torch.tensor(keep, dtype=torch.int64, device=x.device))


def _insert(arr: torch.Tensor, values: Any, val: Any, axis: Any, scalar_index: Optional[int],
            indices: Optional[np.ndarray]) -> torch.Tensor:
    """NumPy's ``insert``: ``values`` (an array, or the scalar ``val``) before position
    ``scalar_index`` as a block, or one before each of ``indices``; the positions are index
    arithmetic on the host, the data moves by ``index_copy`` (differentiable in both)."""
    x = arr.reshape(-1) if axis is None else arr
    ax = 0 if axis is None else axis % max(arr.dim(), 1)
    n = x.shape[ax]
    v = values.to(x.dtype) if values is not None else torch.tensor(val, dtype=x.dtype, device=x.device)
    while v.dim() < x.dim():
        v = v.unsqueeze(0)
    if indices is not None and indices.size == 1:
        scalar_index, indices = int(indices.reshape(-1)[0]), None
    elif scalar_index is not None:
        v = v.movedim(0, ax)  # a scalar index inserts ``values`` as one block along the axis
    if indices is None:
        idx = int(scalar_index) if scalar_index is not None else 0
        if not -n <= idx <= n:
            raise IndexError(f"insert: index {idx} is out of bounds for axis {ax} with size {n}")
        idx = idx + n if idx < 0 else idx
        numnew = v.shape[ax]
        new_pos = np.arange(idx, idx + numnew)
    else:
        ind = indices.astype(np.int64).reshape(-1).copy()
        if ((ind < -n) | (ind > n)).any():
            bad = int(ind[(ind < -n) | (ind > n)][0])
            raise IndexError(f"insert: index {bad} is out of bounds for axis {ax} with size {n}")
        ind[ind < 0] += n
        numnew = ind.shape[0]
        order = ind.argsort(kind="mergesort")
        ind[order] += np.arange(numnew)
        new_pos = ind
    old_mask = np.ones(n + numnew, dtype=bool)
    old_mask[new_pos] = False
    shape = list(x.shape)
    shape[ax] = numnew
    v = v.expand(*shape) if v.dim() == x.dim() else v
    shape[ax] = n + numnew
    out = torch.zeros(shape, dtype=x.dtype, device=x.device)
    dev = x.device
    out = out.index_copy(ax, torch.tensor(np.nonzero(old_mask)[0], dtype=torch.int64, device=dev), x)
    return out.index_copy(ax, torch.tensor(new_pos, dtype=torch.int64, device=dev), v.contiguous())


@register("_npi_insert_scalar", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)), _u(-1, 1, (2, 2))), {"int_ind": 1, "axis": 1},
           ref=lambda a, v, int_ind, axis: np.insert(a, int_ind, v, axis)),
    Sample((_u(-1, 1, (2, 3)),), {"val": 5.0, "int_ind": -2},
           ref=lambda a, val, int_ind: np.insert(a, int_ind, val))])
def _npi_insert_scalar(arr, values=None, *, val: OptFloat = None, int_ind: int = 0,  # type: ignore[no-untyped-def]
                       axis: OptInt = None):
    """NumPy's ``insert(arr, int, values, axis)``: ``values`` (or the scalar ``val``) as one
    block before position ``int_ind``."""
    return _insert(arr, values, val, axis, int_ind, None)


@register("_npi_insert_slice", samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(-1, 1, (2,))), {"start": 0, "stop": 4, "step": 2, "axis": 1},
           ref=lambda a, v, start, stop, step, axis: np.insert(a, slice(start, stop, step), v, axis))])
def _npi_insert_slice(arr, values=None, *, val: OptFloat = None, start: OptInt = None,  # type: ignore[no-untyped-def]
                      stop: OptInt = None, step: OptInt = None, axis: OptInt = None):
    """NumPy's ``insert(arr, slice, values, axis)``: one value before each position of the slice."""
    n = arr.numel() if axis is None else arr.shape[axis]
    return _insert(arr, values, val, axis, None, np.arange(n)[slice(start, stop, step)])


@register("_npi_insert_tensor", samples=lambda: [
    Sample((_u(-1, 1, (4,)), np.array([1, 3], dtype=np.int64), _u(-1, 1, (2,))), {},
           ref=lambda a, obj, v: np.insert(a, obj, v), grad_inputs=(0, 2), check_shape=False),
    Sample((_u(-1, 1, (2, 3)), np.array([2, 0, 2], dtype=np.int64), _u(-1, 1, (1,))), {"axis": 1},
           ref=lambda a, obj, v, axis: np.insert(a, obj, v, axis), grad_inputs=(0, 2), check_shape=False),
    Sample((_u(-1, 1, (2, 3)), np.array([1], dtype=np.int64)), {"val": 2.0, "axis": 0},
           ref=lambda a, obj, val, axis: np.insert(a, obj, val, axis), grad_inputs=(0,), check_shape=False)])
def _npi_insert_tensor(arr, obj, values=None, *, val: OptFloat = None, axis: OptInt = None):  # type: ignore[no-untyped-def]
    """NumPy's ``insert(arr, index_array, values, axis)``: one value (``values``, or the scalar
    ``val``) before each index, as NumPy orders them; a one-element index array inserts ``values``
    as a block. (MXNet 1.9.1 orders the inputs (arr, values, obj) when ``values`` is an array.)"""
    if obj.is_floating_point():
        raise IndexError("insert: index arrays must be of integer type")
    ind = obj.detach().cpu().numpy()
    if ind.ndim == 0:
        return _insert(arr, values, val, axis, int(ind), None)
    return _insert(arr, values, val, axis, None, ind)


def _hsplit_ref(x: np.ndarray, indices: Any = (), axis: int = 1, squeeze_axis: bool = False,
                sections: int = 0) -> Any:
    parts = np.hsplit(x, sections if sections > 0 else list(indices)[1:])
    return parts if len(parts) > 1 else parts[0]


@register("_npi_hsplit", returns_view=True, num_outputs=lambda attrs: get("_split_v2").num_outputs(attrs),
          samples=lambda: [
    Sample((_u(-1, 1, (3, 4)),), {"sections": 2}, ref=_hsplit_ref),
    Sample((_u(-1, 1, (6,)),), {"sections": 3}, ref=_hsplit_ref),
    Sample((_u(-1, 1, (2, 5, 2)),), {"indices": (0, 1, 3), "sections": 0}, ref=_hsplit_ref)])
def _npi_hsplit(data, *, indices: Shape = (), axis: int = 1, squeeze_axis: bool = False,  # type: ignore[no-untyped-def]
                sections: int = 0):
    """NumPy's ``hsplit`` (MXNet's ``_npi_hsplit``): ``split`` along axis 1, along axis 0 for a
    1-D array; the axis is read off the data, so a traced call needs no shape."""
    return get("_split_v2").kernel(data, indices=indices, axis=0 if data.dim() == 1 else axis,
                                   squeeze_axis=squeeze_axis, sections=sections)


@register("_npi_rot90", samples=lambda: [
    Sample((_u(-1, 1, (2, 3)),), {"k": 1}, ref=lambda m, k: np.rot90(m, k).copy()),
    Sample((_u(-1, 1, (2, 3, 4)),), {"k": -3, "axes": (2, 0)}, ref=lambda m, k, axes: np.rot90(m, k, axes).copy()),
    Sample((_u(-1, 1, (2, 3)),), {"k": 2}, ref=lambda m, k: np.rot90(m, k).copy())])
def _npi_rot90(m, *, k: int = 1, axes: Shape = (0, 1)):  # type: ignore[no-untyped-def]
    """NumPy's ``rot90``: ``k`` quarter turns from the first of ``axes`` towards the second (a copy)."""
    ax = tuple(axes)
    if len(ax) != 2 or m.dim() < 2:
        raise MXNetError(f"rot90: axes must name two axes of an array of at least 2 dimensions, got axes={ax} "
                         f"for shape {tuple(m.shape)}")
    a0, a1 = ax[0] % m.dim(), ax[1] % m.dim()
    if a0 == a1:
        raise MXNetError(f"rot90: the axes must be different, got {ax}")
    return torch.rot90(m, k, dims=(a0, a1)).clone()


@register("_npi_diff", samples=lambda: [
    Sample((_u(-1, 1, (3, 5)),), {"n": 1, "axis": -1}, ref=lambda a, n, axis: np.diff(a, n, axis)),
    Sample((_u(-1, 1, (4, 3)),), {"n": 2, "axis": 0}, ref=lambda a, n, axis: np.diff(a, n, axis)),
    Sample((_u(-1, 1, (1, 3)),), {"n": 4, "axis": 1}, ref=lambda a, n, axis: np.diff(a, n, axis), grad=False)])
def _npi_diff(a, *, n: int = 1, axis: int = -1):  # type: ignore[no-untyped-def]
    """NumPy's ``diff``: the ``n``-th differences along ``axis`` (empty once ``n`` reaches the axis'
    length)."""
    if n < 0:
        raise MXNetError(f"diff: order must be non-negative but got {n}")
    if a.dim() == 0:
        raise MXNetError("diff: requires input that is at least one dimensional")
    ax = axis % a.dim()
    out = a
    for _ in range(n):
        m = out.shape[ax]
        if m <= 1:
            shape = list(out.shape)
            shape[ax] = 0
            return out.new_zeros(shape)
        out = out.narrow(ax, 1, m - 1) - out.narrow(ax, 0, m - 1)
    return out if n else out.clone()


def _atleast(n: int) -> None:
    def kernel(*arrays, num_args: int = 1):  # type: ignore[no-untyped-def]
        outs = []
        for x in arrays:
            if x.dim() >= n:
                outs.append(x)
            elif n == 1 or x.dim() == 0:
                outs.append(x.reshape((1,) * n))
            elif n == 2:
                outs.append(x.unsqueeze(0))
            else:  # 3-D: (N,) -> (1, N, 1), (M, N) -> (M, N, 1)
                outs.append(x.reshape(1, -1, 1) if x.dim() == 1 else x.unsqueeze(-1))
        return outs[0] if len(outs) == 1 else tuple(outs)
    kernel.__name__ = f"_np_atleast_{n}d"
    kernel.__doc__ = (f"NumPy's ``atleast_{n}d`` (MXNet's ``_np_atleast_{n}d``, ``num_args`` arrays in, as "
                      f"many out): views with at least {n} dimensions.")
    ref = getattr(np, f"atleast_{n}d")
    register(f"_np_atleast_{n}d", returns_view=True, num_outputs=lambda attrs: int(attrs.get("num_args", 1)),
             samples=lambda: [
        Sample((_u(-1, 1, ()),), {"num_args": 1}, ref=lambda x, num_args: ref(x)),
        Sample((_u(-1, 1, (3,)),), {"num_args": 1}, ref=lambda x, num_args: ref(x)),
        Sample((_u(-1, 1, (2, 3)),), {"num_args": 1}, ref=lambda x, num_args: ref(x)),
        Sample((_u(-1, 1, (3,)), _u(-1, 1, (2, 2, 2, 1))), {"num_args": 2},
               ref=lambda x, y, num_args: list(ref(x, y)))])(kernel)


for _n in (1, 2, 3):
    _atleast(_n)


def _average_ref(a: np.ndarray, w: Any = None, axis: Any = None, returned: bool = False, weighted: bool = True) -> Any:
    ax = None if axis is None else tuple(axis)
    avg, scl = np.average(a, axis=ax, weights=w if weighted else None, returned=True)
    return [np.asarray(avg), np.broadcast_to(scl, np.shape(avg)).copy()]


@register("_npi_average", num_outputs=2, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(0.5, 1, (3, 4))), {"axis": (1,)},
           ref=lambda a, w, axis: _average_ref(a, w, axis)),
    Sample((_u(-1, 1, (3, 4)), _u(0.5, 1, (4,))), {"axis": (1,)}, ref=lambda a, w, axis: _average_ref(a, w, axis)),
    Sample((_u(-1, 1, (3, 4)), _u(0.5, 1, (3, 4))), {}, ref=lambda a, w: _average_ref(a, w)),
    Sample((_u(-1, 1, (3, 4)),), {"weighted": False, "axis": (0,)},
           ref=lambda a, weighted, axis: _average_ref(a, None, axis, weighted=False))])
def _npi_average(a, weights=None, *, axis: Axis = None, returned: bool = False,  # type: ignore[no-untyped-def]
                 weighted: bool = True):
    """NumPy's ``average`` as MXNet's ``_npi_average``: (the weighted mean over ``axis``, the sum of
    the weights, broadcast to its shape). 1-D ``weights`` with one ``axis`` weigh along it;
    otherwise they have ``a``'s shape."""
    axes = _axes(axis, a.dim())
    af = _float_in(a)
    if not weighted or weights is None:
        avg = af.mean() if axes is None else af.mean(dim=axes)
        count = af.numel() if axes is None else math.prod(a.shape[i] for i in axes)
        return avg, torch.full_like(avg, float(count))
    w = weights.to(af.dtype)
    if w.shape != a.shape:
        if axes is None or len(axes) != 1 or w.dim() != 1 or w.shape[0] != a.shape[axes[0]]:
            raise MXNetError(f"average: weights of shape {tuple(w.shape)} differ from a's {tuple(a.shape)}; "
                             "1-D weights need one axis of their length")
        view = [1] * a.dim()
        view[axes[0]] = w.shape[0]
        w = w.reshape(view)
    w = w.expand(a.shape)
    scl = w.sum() if axes is None else w.sum(dim=axes)
    avg = (af * w).sum() if axes is None else (af * w).sum(dim=axes)
    return avg / scl, scl


@register("_npi_mvn_fallback", random=True, differentiable=False, samples=lambda: [
    Sample((np.zeros(2, np.float32), np.eye(2, dtype=np.float32)), {"size": (3,)},
           ref=lambda m, c, size: np.zeros((3, 2), np.float32), grad=False)])
def _npi_mvn_fallback(mean, cov, *, size: Axis = None):  # type: ignore[no-untyped-def]
    """``np.random.multivariate_normal`` (MXNet's ``_npi_mvn_fallback``): ``mean + L z`` with ``L``
    the Cholesky factor of ``cov``; mean (..., k) and cov (..., k, k) broadcast, the samples have
    shape ``size + batch + (k,)``."""
    k = mean.shape[-1]
    if cov.dim() < 2 or cov.shape[-1] != k or cov.shape[-2] != k:
        raise MXNetError(f"multivariate_normal: cov of shape {tuple(cov.shape)} does not match mean of shape "
                         f"{tuple(mean.shape)} (it needs (..., {k}, {k}))")
    work = torch.float64 if mean.dtype == torch.float64 else torch.float32
    batch = torch.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    shape = tuple(_size(size)) + tuple(batch) + (k,)
    low = torch.linalg.cholesky(cov.to(work))
    z = torch.randn(shape, dtype=work, device=mean.device)
    return (mean.to(work) + (low @ z.unsqueeze(-1)).squeeze(-1)).to(mean.dtype)


def _array_split_ref(x: np.ndarray, indices: Any = (), axis: int = 0, squeeze_axis: bool = False,
                     sections: int = 0) -> Any:
    parts = np.array_split(x, sections if sections > 0 else list(indices)[1:], axis=axis)
    return parts if len(parts) > 1 else parts[0]


@register("_npi_array_split", returns_view=True, num_outputs=lambda attrs: get("_split_v2").num_outputs(attrs),
          samples=lambda: [
    Sample((_u(-1, 1, (7, 2)),), {"sections": 3, "axis": 0}, ref=_array_split_ref),
    Sample((_u(-1, 1, (2, 5)),), {"sections": 2, "axis": 1}, ref=_array_split_ref),
    Sample((_u(-1, 1, (6,)),), {"indices": (0, 2, 9), "axis": 0}, ref=_array_split_ref),
    Sample((_u(-1, 1, (0, 3)),), {"sections": 3, "axis": 0}, ref=_array_split_ref, grad=False)])
def _npi_array_split(data, *, indices: Shape = (), axis: int = 0, squeeze_axis: bool = False,  # type: ignore[no-untyped-def]
                     sections: int = 0):
    """NumPy's ``array_split`` (MXNet's ``_npi_array_split``): ``sections`` parts whose sizes differ
    by at most one (the first ``n % sections`` one larger), or at ``indices`` (with the leading 0,
    as split_v2 takes them; indices past the end give empty parts); the axis' length is read off
    the data, so a traced call needs no shape."""
    a = axis % max(data.dim(), 1)
    n = data.shape[a]
    if sections > 0:
        sizes = [n // sections + (1 if i < n % sections else 0) for i in range(sections)]
        bounds = [0]
        for size in sizes:
            bounds.append(bounds[-1] + size)
    else:
        idx = [min(max(int(i), 0), n) for i in tuple(indices)]
        bounds = idx + [n]
    parts = [data.narrow(a, b, max(e - b, 0)) for b, e in zip(bounds[:-1], bounds[1:])]
    if squeeze_axis:
        parts = [p.squeeze(a) for p in parts]
    return parts[0] if len(parts) == 1 else tuple(parts)


for _alias, _canonical in ALIASES.items():
    if get_or_none(_canonical) is not None and get_or_none(_alias) is None:
        add_alias(_canonical, _alias)
