"""Elementwise operators: unary math, binary arithmetic (elemwise_/broadcast_), scalar forms.

MXNet's binary ``elemwise_*`` operators require equal shapes; ours broadcast (a superset, so
code that works eagerly also works hybridized). Comparisons and logical operators return the
input dtype (0/1 values), as MXNet does.
"""
from __future__ import annotations

import math
from typing import Any, Callable, cast

import numpy as np
import torch

from .registry import ActivationChoice, Sample, get, register
from .shape_rules import broadcast_shapes, first_input_shape, same_shape_inputs

_rng = np.random.RandomState(0)


def _u(lo: float, hi: float, shape: tuple = (3, 4)) -> np.ndarray:
    return _rng.uniform(lo, hi, size=shape)


def _unary_samples(ref: Callable, lo: float, hi: float, grad: bool) -> Callable[[], list]:
    def samples() -> list:
        return [Sample((_u(lo, hi, (3, 4)),), ref=ref, grad=grad),
                Sample((_u(lo, hi, (2, 3, 2)),), ref=ref, grad=grad),
                Sample((_u(lo, hi, (5,)),), ref=ref, grad=grad)]
    return samples


def _unary(name: str, fn: Callable, ref: Callable, lo: float = -2.0, hi: float = 2.0,
           aliases: tuple = (), grad: bool = True, doc: str = "", **facts: Any) -> None:
    def kernel(data):  # type: ignore[no-untyped-def]
        return fn(data)
    kernel.__name__ = name
    kernel.__doc__ = doc or f"Elementwise {name}."
    register(name, aliases=aliases, samples=_unary_samples(ref, lo, hi, grad),
             differentiable=grad, infer_inputs=same_shape_inputs, listed_inputs=False,
             infer_shape=first_input_shape, **facts)(kernel)


def _erfinv_scalar(x: float) -> float:
    """erfinv by Newton's method on ``math.erf``, independent of torch's kernel. From
    ``sqrt(pi)/2 * x`` (the tangent of erf at 0) the iterates approach the root monotonically,
    erf being concave on the root's side."""
    if abs(x) >= 1.0:
        return math.copysign(math.inf, x) if abs(x) == 1.0 else math.nan
    y = x * math.sqrt(math.pi) / 2
    for _ in range(100):
        step = (math.erf(y) - x) / (2 / math.sqrt(math.pi) * math.exp(-y * y))
        y -= step
        if abs(step) <= 1e-13 * max(1.0, abs(y)):  # quadratic: the error left is ~step**2
            break
    return y


def _np_erfinv(x: np.ndarray) -> np.ndarray:
    return np.vectorize(_erfinv_scalar, otypes=[np.float64])(x)


def _np_gammaln(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.lgamma)(x)


def _np_gamma(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.gamma)(x)


def _np_erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * torch.floor(torch.abs(x) + 0.5)


_unary("relu", torch.relu, lambda x: np.maximum(x, 0), fused_activation=lambda a: ActivationChoice("relu"))
_unary("sigmoid", torch.sigmoid, lambda x: 1 / (1 + np.exp(-x)),
       fused_activation=lambda a: ActivationChoice("sigmoid"))
@register("hard_sigmoid", samples=lambda: [
    Sample((_u(-4, 4),), ref=lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    Sample((_u(-4, 4),), {"alpha": 0.3, "beta": 0.4}, ref=lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1))])
def hard_sigmoid(data, *, alpha: float = 0.2, beta: float = 0.5):
    """clip(alpha * x + beta, 0, 1)."""
    return torch.clamp(alpha * data + beta, 0, 1)
_unary("softsign", lambda x: x / (1 + torch.abs(x)), lambda x: x / (1 + np.abs(x)))
_unary("tanh", torch.tanh, np.tanh, fused_activation=lambda a: ActivationChoice("tanh"))
_unary("exp", torch.exp, np.exp)
_unary("expm1", torch.expm1, np.expm1)
_unary("log", torch.log, np.log, 0.1, 3.0)
_unary("log1p", torch.log1p, np.log1p, 0.1, 3.0)
_unary("log2", torch.log2, np.log2, 0.1, 3.0)
_unary("log10", torch.log10, np.log10, 0.1, 3.0)
_unary("sqrt", torch.sqrt, np.sqrt, 0.1, 3.0)
_unary("rsqrt", torch.rsqrt, lambda x: 1 / np.sqrt(x), 0.1, 3.0)
class _Cbrt(torch.autograd.Function):
    """Cube root whose gradient is MXNet's ``1 / (3 cbrt(x)^2)``: +inf at 0 (the composite
    sign(x) * |x|^(1/3) differentiates to 0 * inf = nan there)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        y = torch.sign(x) * torch.abs(x).pow(1.0 / 3)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        (y,) = ctx.saved_tensors
        return g / (3 * y * y)


_unary("cbrt", _Cbrt.apply, np.cbrt, 0.1, 3.0)
_unary("rcbrt", lambda x: 1 / (torch.sign(x) * torch.abs(x).pow(1.0 / 3)), lambda x: 1 / np.cbrt(x), 0.1, 3.0)
_unary("square", torch.square, np.square)
_unary("abs", torch.abs, np.abs)
_unary("sign", torch.sign, np.sign, grad=False)
_unary("negative", torch.neg, np.negative)
_unary("reciprocal", torch.reciprocal, np.reciprocal, 0.5, 3.0)
_unary("floor", torch.floor, np.floor, grad=False)
_unary("ceil", torch.ceil, np.ceil, grad=False)
_unary("round", _round_half_away, lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), grad=False,
       doc="Round half away from zero (MXNet's round).")
_unary("rint", torch.round, np.rint, grad=False, doc="Round half to even.")
_unary("fix", torch.trunc, np.fix, grad=False, doc="Round toward zero.")
_unary("trunc", torch.trunc, np.trunc, grad=False)
_unary("sin", torch.sin, np.sin)
_unary("cos", torch.cos, np.cos)
_unary("tan", torch.tan, np.tan, -1.0, 1.0)
_unary("arcsin", torch.asin, np.arcsin, -0.9, 0.9)
_unary("arccos", torch.acos, np.arccos, -0.9, 0.9)
_unary("arctan", torch.atan, np.arctan)
_unary("sinh", torch.sinh, np.sinh)
_unary("cosh", torch.cosh, np.cosh)
_unary("arcsinh", torch.asinh, np.arcsinh)
_unary("arccosh", torch.acosh, np.arccosh, 1.2, 3.0)
_unary("arctanh", torch.atanh, np.arctanh, -0.9, 0.9)
_unary("degrees", torch.rad2deg, np.degrees)
_unary("radians", torch.deg2rad, np.radians)
_unary("erf", torch.erf, _np_erf)
_unary("erfinv", torch.erfinv, _np_erfinv, -0.9, 0.9)
def _gamma(x: torch.Tensor) -> torch.Tensor:
    # Gamma is negative on (-(2k+1), -2k): where floor(x) is odd and x < 0
    sign = torch.where((x < 0) & (torch.floor(x).remainder(2) == 1), -1.0, 1.0).to(x.dtype)
    return torch.exp(torch.lgamma(x)) * sign


def _gamma_samples() -> list:
    return [Sample((_u(0.5, 3.0, (3, 4)),), ref=_np_gamma),
            Sample((np.array([-0.5, -1.5, -2.5, -3.3, 0.7, 4.2]),), ref=_np_gamma)]


class _GammaFn(torch.autograd.Function):
    """gamma with MXNet's gradient gamma(x) * psi(x), where psi is +inf at the poles 0, -1,
    -2... (torch's digamma gives -inf at 0, so exp(lgamma)'s gradient had the wrong sign there)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        y = _gamma(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        x, y = ctx.saved_tensors
        return g * y * _psi(x)


def _psi(x: torch.Tensor) -> torch.Tensor:
    """MXNet's digamma: +inf at the poles 0, -1, -2... (torch's is -inf at 0)."""
    psi = torch.digamma(x)
    return torch.where((x <= 0) & (x == torch.floor(x)), torch.full_like(psi, float("inf")), psi)


class _GammalnFn(torch.autograd.Function):
    """lgamma with MXNet's gradient psi(x) (+inf at the poles)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(x)
        return torch.lgamma(x)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        (x,) = ctx.saved_tensors
        return g * _psi(x)


@register("gamma", samples=_gamma_samples)
def gamma(data):
    """The gamma function (negative between odd and even negative integers)."""
    return _GammaFn.apply(data)
_unary("gammaln", _GammalnFn.apply, _np_gammaln, 0.5, 3.0)
_unary("logical_not", lambda x: (x == 0).to(x.dtype), lambda x: (x == 0).astype(x.dtype), grad=False)
_unary("_copy", lambda x: x.clone(), lambda x: x.copy(), aliases=("identity",), predict_identity=True)
_unary("BlockGrad", lambda x: x.detach().clone(), lambda x: x, aliases=("stop_gradient",), grad=False,
       doc="Identity in the forward pass; blocks gradients.", predict_identity=True)


@register("_identity_with_attr_like_rhs", predict_identity=True, infer_inputs=same_shape_inputs, samples=lambda: [
    Sample((_u(-1, 1, (3, 4)), _u(-1, 1, (3, 4))), ref=lambda lhs, rhs: lhs.copy(), grad_inputs=(0,))])
def _identity_with_attr_like_rhs(lhs, rhs):
    """``lhs`` unchanged, with the shape of ``rhs``: a shape constraint that lets inference flow
    from ``lhs`` to ``rhs`` and back (no gradient reaches ``rhs``)."""
    return lhs.clone()
class _MakeLoss(torch.autograd.Function):
    """Identity forward; backward ignores the head gradient and returns ones (MXNet make_loss)."""

    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def,override]
        return x.clone()

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def,override]
        return torch.ones_like(grad)


@register("make_loss", predict_identity=True, samples=lambda: [Sample((_u(-2, 2),), ref=lambda x: x, grad=False)])
def make_loss(data):
    """Identity; marks a loss head: its gradient is 1 whatever the head gradient (MXNet make_loss)."""
    return _MakeLoss.apply(data) if data.requires_grad else data.clone()


def _clip_activation(attrs: dict) -> "ActivationChoice | None":
    lo, hi = float(attrs["a_min"]), float(attrs["a_max"])
    return ActivationChoice("hardtanh", lo, hi) if lo <= hi else None


@register("clip", infer_shape=first_input_shape, fused_activation=_clip_activation,
          samples=lambda: [Sample((_u(-2, 2),), {"a_min": -0.5, "a_max": 0.7},
                                          ref=lambda x, a_min, a_max: np.clip(x, a_min, a_max))])
def clip(data, *, a_min: float, a_max: float):
    """Clip values into [a_min, a_max]."""
    if data.is_floating_point():  # float bounds: TorchScript's oneDNN fusion asserts on int ones
        return torch.clamp(data, float(a_min), float(a_max))
    return torch.clamp(data, a_min, a_max)


# ---- binary ----------------------------------------------------------------------------------
def _cmp(fn: Callable) -> Callable:
    return lambda a, b: fn(a, b).to(torch.result_type(a, b) if isinstance(b, torch.Tensor) else a.dtype)


def _npcmp(fn: Callable) -> Callable:
    return lambda a, b: fn(a, b).astype(np.result_type(a, b))


def _mod(a: Any, b: Any) -> torch.Tensor:
    """Python-style remainder (sign of the divisor) that is 0 where the divisor is 0, as MXNet's
    mod (torch raises for integer division by zero and gives NaN for floats)."""
    if not isinstance(b, torch.Tensor):
        b = torch.as_tensor(b, dtype=a.dtype if isinstance(a, torch.Tensor) else None,
                            device=a.device if isinstance(a, torch.Tensor) else None)
    if not isinstance(a, torch.Tensor):
        a = torch.as_tensor(a, dtype=b.dtype, device=b.device)
    zero = b == 0
    safe = torch.where(zero, torch.ones_like(b), b)
    r = torch.remainder(a, safe)
    return torch.where(zero, torch.zeros_like(r), r)
def _div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """MXNet divides integer arrays in their dtype, truncating (7 / 2 == 3, -7 / 2 == -3)."""
    if not (a.is_floating_point() or b.is_floating_point() or a.is_complex() or b.is_complex()):
        return torch.div(a, b, rounding_mode="trunc")
    return torch.div(a, b)


def _maximum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """max(a, b) whose gradient on ties goes to ``a`` (MXNet's ge/lt split; torch's halves it)."""
    return torch.where(torch.isnan(a) | (a >= b), a, b)


def _minimum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """min(a, b) whose gradient on ties goes to ``a`` (MXNet's le/gt split)."""
    return torch.where(torch.isnan(a) | (a <= b), a, b)


# name, torch fn, numpy ref, differentiable, (elemwise_ aliases), (broadcast_ aliases), input range
_BINARY: list = [
    ("add", torch.add, np.add, True, ("_add", "_plus", "_Plus"), ("broadcast_plus",), (-2, 2)),
    ("sub", torch.sub, np.subtract, True, ("_sub", "_minus", "_Minus"), ("broadcast_minus",), (-2, 2)),
    ("mul", torch.mul, np.multiply, True, ("_mul", "_Mul"), (), (-2, 2)),
    ("div", _div, np.divide, True, ("_div", "_Div"), (), (0.5, 2)),
    ("mod", _mod, np.mod, False, None, ("_mod",), (0.5, 3)),
    ("power", torch.pow, np.power, True, None, ("_power", "_Power"), (0.5, 2)),
    ("maximum", _maximum, np.maximum, True, None, ("_maximum", "_Maximum"), (-2, 2)),
    ("minimum", _minimum, np.minimum, True, None, ("_minimum", "_Minimum"), (-2, 2)),
    ("hypot", torch.hypot, np.hypot, True, None, ("_hypot",), (0.5, 2)),
    ("equal", _cmp(torch.eq), _npcmp(np.equal), False, None, ("_equal",), (-2, 2)),
    ("not_equal", _cmp(torch.ne), _npcmp(np.not_equal), False, None, ("_not_equal",), (-2, 2)),
    ("greater", _cmp(torch.gt), _npcmp(np.greater), False, None, ("_greater",), (-2, 2)),
    ("greater_equal", _cmp(torch.ge), _npcmp(np.greater_equal), False, None, ("_greater_equal",), (-2, 2)),
    ("lesser", _cmp(torch.lt), _npcmp(np.less), False, None, ("_lesser",), (-2, 2)),
    ("lesser_equal", _cmp(torch.le), _npcmp(np.less_equal), False, None, ("_lesser_equal",), (-2, 2)),
    ("logical_and", _cmp(lambda a, b: (a != 0) & (b != 0)), _npcmp(np.logical_and), False, None, ("_logical_and",), (-1, 1)),
    ("logical_or", _cmp(lambda a, b: (a != 0) | (b != 0)), _npcmp(np.logical_or), False, None, ("_logical_or",), (-1, 1)),
    ("logical_xor", _cmp(lambda a, b: (a != 0) ^ (b != 0)), _npcmp(np.logical_xor), False, None, ("_logical_xor",), (-1, 1)),
]


def _binary_samples(ref: Callable, lo: float, hi: float, grad: bool, broadcast: bool) -> Callable:
    def samples() -> list:
        out = [Sample((_u(lo, hi, (3, 4)), _u(lo, hi, (3, 4))), ref=ref, grad=grad)]
        if broadcast:
            out.append(Sample((_u(lo, hi, (3, 1, 4)), _u(lo, hi, (1, 2, 4))), ref=ref, grad=grad))
            out.append(Sample((_u(lo, hi, (2, 3)), _u(lo, hi, (1, 3))), ref=ref, grad=grad))
        return out
    return samples


def _make_binary(opname: str, fn: Callable, aliases: tuple, samples: Callable, grad: bool, doc: str,
                 same_shape: bool = False, export_broadcast: "str | None" = None) -> None:
    def kernel(lhs, rhs):  # type: ignore[no-untyped-def]
        return fn(lhs, rhs)
    kernel.__name__ = opname
    kernel.__doc__ = doc
    register(opname, aliases=aliases, samples=samples, differentiable=grad, infer_shape=broadcast_shapes,
             infer_inputs=same_shape_inputs if same_shape else None, export_broadcast=export_broadcast)(kernel)


for _name, _fn, _ref, _grad, _elem_aliases, _bc_aliases, (_lo, _hi) in _BINARY:
    if _elem_aliases is not None:
        # elemwise_add & co. are their own operators in MXNet's JSON (a + b on Symbols).
        _make_binary(f"elemwise_{_name}", _fn, _elem_aliases, _binary_samples(_ref, _lo, _hi, _grad, False),
                     _grad, f"Elementwise {_name} (broadcasts when shapes differ, unlike MXNet).",
                     same_shape=True, export_broadcast=f"broadcast_{_name}")
    _make_binary(f"broadcast_{_name}", _fn, _bc_aliases, _binary_samples(_ref, _lo, _hi, _grad, True),
                 _grad, f"Broadcasting {_name}.")


# ---- scalar forms ----------------------------------------------------------------------------
def _scalar_samples(ref: Callable, lo: float, hi: float, grad: bool, scalar: float) -> Callable:
    return lambda: [Sample((_u(lo, hi, (3, 4)),), {"scalar": scalar}, ref=ref, grad=grad),
                    Sample((_u(lo, hi, (2, 5)),), {"scalar": 2}, ref=ref, grad=grad)]


def _make_scalar(opname: str, fn: Callable, ref: Callable, grad: bool, lo: float, hi: float,
                 aliases: tuple = (), scalar: float = 1.5) -> None:
    def kernel(data, *, scalar: float = 1.0, is_int: bool = True):  # type: ignore[no-untyped-def]
        if data.is_floating_point():
            return fn(data, scalar)
        # MXNet computes integer arrays in their own dtype (int32 / 2 stays int32)
        return fn(data, scalar).to(data.dtype)
    kernel.__name__ = opname
    kernel.__doc__ = f"{opname}: elementwise with a Python scalar."
    register(opname, aliases=aliases, samples=_scalar_samples(ref, lo, hi, grad, scalar),
             differentiable=grad, infer_shape=first_input_shape)(kernel)


def _keep(fn: Callable) -> Callable:
    return lambda x, s: fn(x, s).to(x.dtype)


_make_scalar("_plus_scalar", lambda x, s: x + s, lambda x, scalar: x + scalar, True, -2, 2, ("_PlusScalar",))
_make_scalar("_minus_scalar", lambda x, s: x - s, lambda x, scalar: x - scalar, True, -2, 2, ("_MinusScalar",))
_make_scalar("_rminus_scalar", lambda x, s: s - x, lambda x, scalar: scalar - x, True, -2, 2, ("_RMinusScalar",))
_make_scalar("_mul_scalar", lambda x, s: x * s, lambda x, scalar: x * scalar, True, -2, 2, ("_MulScalar",))
_make_scalar("_div_scalar", lambda x, s: x / s, lambda x, scalar: x / scalar, True, -2, 2, ("_DivScalar",))
_make_scalar("_rdiv_scalar", lambda x, s: s / x, lambda x, scalar: scalar / x, True, 0.5, 2, ("_RDivScalar",))
_make_scalar("_mod_scalar", lambda x, s: _mod(x, s), lambda x, scalar: np.mod(x, scalar), False, 0.1, 3, ("_ModScalar",))
_make_scalar("_rmod_scalar", lambda x, s: _mod(torch.full_like(x, s), x), lambda x, scalar: np.mod(scalar, x), False, 0.5, 3, ("_RModScalar",))
# MXNet's mod_grad / mod_rgrad are 0 for integer operands (only float types have derivatives)
for _n in ("broadcast_mod", "_mod_scalar", "_rmod_scalar"):
    get(_n).integer_zero_gradient = True
_make_scalar("_power_scalar", lambda x, s: x ** s, lambda x, scalar: x ** scalar, True, 0.5, 2, ("_PowerScalar",))
_make_scalar("_rpower_scalar", lambda x, s: torch.pow(torch.as_tensor(s, dtype=x.dtype), x), lambda x, scalar: np.power(scalar, x), True, -1, 1, ("_RPowerScalar",))
_make_scalar("_maximum_scalar", lambda x, s: torch.clamp(x, min=s), lambda x, scalar: np.maximum(x, scalar), True, -2, 2, ("_MaximumScalar",), 0.3)
_make_scalar("_minimum_scalar", lambda x, s: torch.clamp(x, max=s), lambda x, scalar: np.minimum(x, scalar), True, -2, 2, ("_MinimumScalar",), 0.3)
_make_scalar("_hypot_scalar", lambda x, s: torch.hypot(x, torch.as_tensor(float(s), dtype=x.dtype)), lambda x, scalar: np.hypot(x, scalar), True, 0.5, 2, ("_HypotScalar",))
for _n, _t, _r in [("equal", torch.eq, np.equal), ("not_equal", torch.ne, np.not_equal),
                   ("greater", torch.gt, np.greater), ("greater_equal", torch.ge, np.greater_equal),
                   ("lesser", torch.lt, np.less), ("lesser_equal", torch.le, np.less_equal),
                   ("logical_and", lambda a, s: (a != 0) & (s != 0), np.logical_and),
                   ("logical_or", lambda a, s: (a != 0) | (s != 0), np.logical_or),
                   ("logical_xor", lambda a, s: (a != 0) ^ (s != 0), np.logical_xor)]:
    # cast: mypy joins torch functions and lambdas into "function", which it does not call
    _make_scalar(f"_{_n}_scalar", _keep(cast(Callable, _t)), (lambda r: lambda x, scalar: r(x, scalar).astype(x.dtype))(_r),
                 False, -2, 2, scalar=0.3)


@register("add_n", aliases=("ElementWiseSum", "_sum"),
          samples=lambda: [Sample((_u(-1, 1), _u(-1, 1), _u(-1, 1)), ref=lambda *a: sum(a))])
def add_n(*args):
    """Sum of any number of arrays of the same shape."""
    out = args[0]
    for a in args[1:]:
        out = out + a
    return out


@register("smooth_l1", samples=lambda: [Sample((_u(-3, 3),), {"scalar": 1.0}, ref=lambda x, scalar: np.where(
    np.abs(x) < 1 / scalar ** 2, 0.5 * (scalar * x) ** 2, np.abs(x) - 0.5 / scalar ** 2))])
def smooth_l1(data, *, scalar: float = 1.0):
    """Smooth L1: 0.5 (s x)^2 if |x| < 1/s^2 else |x| - 0.5/s^2."""
    s2 = scalar * scalar
    return torch.where(data.abs() < 1.0 / s2, 0.5 * s2 * data * data, data.abs() - 0.5 / s2)
