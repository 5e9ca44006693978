"""Random sampling operators (MXNet's ``_random_*``, ``_random_*_like``, ``_sample_*``,
``_sample_multinomial``, ``_shuffle``).

Every draw comes from torch's global generator of the output's device, so ``mx.random.seed``
(``torch.manual_seed``) makes results reproducible. Scalar-parameter operators (``_random_*``)
take ``shape``/``ctx``/``dtype``; array-parameter operators (``_sample_*``) draw ``shape`` samples
per parameter entry, so the output shape is ``param.shape + shape``. Samples are drawn in
float32 (float64 when float64 output is asked for) and cast to the output dtype. Kernels run on
torch's "meta" device too (shape inference).

As in MXNet, sampling operators are not differentiable (their parameters get no gradient),
except the log-probability output of ``_sample_multinomial(get_prob=True)``.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch

from ..base import DeferredError, MXNetError, dtype_name, dtype_torch
from ..np_semantics import is_np_shape
from .attrs import Dtype, Shape
from .creation import device_of
from ._helpers import ints as sample_shape  # a shape attribute (int, list or tuple) as a tuple
from .registry import Sample, register

__all__ = ["sample_shape"]

_FLOATS = ("float16", "float32", "float64")
_BF16 = "bfloat16"


# ---- helpers ---------------------------------------------------------------------------------
def _out_shape(op: str, shape: Any) -> tuple:
    """Output shape of a scalar-parameter sampler; MXNet 1.x's empty shape means one sample,
    a zero-dim array under NumPy shape semantics (``np.random.randint(5)``)."""
    s = sample_shape(shape)
    if any(d < 0 for d in s):
        raise MXNetError(f"{op}: invalid shape {shape!r}; dimensions must be non-negative")
    return s if s or is_np_shape() else (1,)


def _float_out(op: str, dtype: Any, default: str = "float32") -> torch.dtype:
    name = default if dtype is None or dtype == "None" else dtype_name(dtype)
    if name not in _FLOATS and name != _BF16:
        raise MXNetError(f"{op}: dtype must be one of {list(_FLOATS)} (or None for float32), got {name!r}")
    return dtype_torch(name)


def _work(out_dtype: torch.dtype) -> torch.dtype:
    """dtype the sampler computes in: float64 for float64 output, float32 otherwise."""
    return torch.float64 if out_dtype == torch.float64 else torch.float32


def _check(cond: bool, op: str, msg: str) -> None:
    if not cond:
        raise MXNetError(f"{op}: {msg}")


def _value_check(cond: bool, op: str, msg: str, placeholder: Callable[[], torch.Tensor]) -> None:
    """A sampler's parameter check. MXNet makes it while sampling, on its asynchronous engine, so
    the error reaches the caller when the result is read: raised as a DeferredError carrying the
    output it stands for (NaN, or 0 for integers)."""
    if not cond:
        raise DeferredError(f"{op}: {msg}", placeholder=placeholder())


def _blank(op: str, shape: Any, dtype: Any, ctx: Any) -> torch.Tensor:
    """The output of a scalar-parameter sampler that could not sample."""
    name = dtype if dtype in ("int32", "int64") else None
    dt = dtype_torch(name) if name is not None else _float_out(op, dtype)
    return torch.full(_out_shape(op, shape), float("nan") if dt.is_floating_point else 0, dtype=dt,
                      device=device_of(ctx))


def _blank_like(data: torch.Tensor) -> torch.Tensor:
    return torch.full_like(data, float("nan") if data.is_floating_point() else 0)


# The samplers: parameters are tensors (or Python floats) broadcastable to ``shape``.
def _uniform(low: Any, high: Any, shape: tuple, wdt: torch.dtype, dev: torch.device) -> torch.Tensor:
    u = torch.rand(shape, dtype=wdt, device=dev)
    return u * (high - low) + low


def _normal(loc: Any, scale: Any, shape: tuple, wdt: torch.dtype, dev: torch.device) -> torch.Tensor:
    return torch.randn(shape, dtype=wdt, device=dev) * scale + loc


def _full(v: Any, shape: tuple, wdt: torch.dtype, dev: torch.device) -> torch.Tensor:
    if isinstance(v, torch.Tensor):
        return v.to(wdt).expand(shape).contiguous()
    return torch.full(shape, float(v), dtype=wdt, device=dev)


def _std_gamma(alpha: Any, shape: tuple, wdt: torch.dtype, dev: torch.device) -> torch.Tensor:
    return torch._standard_gamma(_full(alpha, shape, wdt, dev))


def _gamma(alpha: Any, beta: Any, shape: tuple, wdt: torch.dtype, dev: torch.device) -> torch.Tensor:
    return _std_gamma(alpha, shape, wdt, dev) * beta


def _exponential(lam: Any, shape: tuple, wdt: torch.dtype, dev: torch.device) -> torch.Tensor:
    return torch.empty(shape, dtype=wdt, device=dev).exponential_(1.0) / lam


def _poisson(lam: Any, shape: tuple, wdt: torch.dtype, dev: torch.device) -> torch.Tensor:
    return torch.poisson(_full(lam, shape, wdt, dev))


def _negative_binomial(k: Any, p: Any, shape: tuple, wdt: torch.dtype, dev: torch.device) -> torch.Tensor:
    # Failures before the k-th success with success probability p: Poisson(Gamma(k, (1-p)/p)).
    rate = _std_gamma(k, shape, wdt, dev) * ((1 - p) / p)
    return torch.poisson(rate)


def _gen_negative_binomial(mu: Any, alpha: Any, shape: tuple, wdt: torch.dtype,
                           dev: torch.device) -> torch.Tensor:
    # Mean mu, variance mu + alpha mu^2: Poisson(Gamma(1/alpha, alpha mu)); alpha == 0 is Poisson(mu).
    mu_t = _full(mu, shape, wdt, dev)
    alpha_t = _full(alpha, shape, wdt, dev)
    pos = alpha_t > 0
    safe = torch.where(pos, alpha_t, torch.ones_like(alpha_t))
    lam = torch.where(pos, torch._standard_gamma(1.0 / safe) * safe * mu_t, mu_t)
    return torch.poisson(lam)


def _cast(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return t if t.dtype == dtype else t.to(dtype)


# ---- _random_*: scalar parameters ------------------------------------------------------------
def _float_type_rule(default: str = "float32") -> Callable:
    def rule(attrs: dict, in_types: list) -> list:
        d = attrs.get("dtype")
        return [default if d is None or d == "None" else dtype_name(d)]
    return rule


def _const_sample(attrs: dict, value: float) -> Sample:
    shape = attrs["shape"]
    return Sample((), attrs, ref=lambda **a: np.full(shape, value), grad=False)


def _shape_sample(attrs: dict) -> Sample:
    """A sample checked for shapes/dtypes only (the values are random)."""
    return Sample((), attrs, ref=None, grad=False)


@register("_random_uniform", aliases=("uniform", "random_uniform"), random=True, differentiable=False,
          infer_type=_float_type_rule(), samples=lambda: [
              _const_sample({"low": 2.5, "high": 2.5, "shape": (2, 3)}, 2.5),
              _shape_sample({"low": -1.0, "high": 3.0, "shape": (4,), "dtype": "float64"})])
def _random_uniform(*, low: float = 0.0, high: float = 1.0, shape: Shape = (), ctx: str = "",
                    dtype: Dtype = None):
    """Samples from the uniform distribution on [low, high)."""
    _value_check(high >= low, "_random_uniform", f"low must be <= high, got low={low} high={high}",
                 lambda: _blank("_random_uniform", shape, dtype, ctx))
    out = _float_out("_random_uniform", dtype)
    return _cast(_uniform(low, high, _out_shape("_random_uniform", shape), _work(out), device_of(ctx)), out)


@register("_random_normal", aliases=("normal", "random_normal"), random=True, differentiable=False,
          infer_type=_float_type_rule(), samples=lambda: [
              _shape_sample({"loc": 1.0, "scale": 2.0, "shape": (2, 3)})])
def _random_normal(*, loc: float = 0.0, scale: float = 1.0, shape: Shape = (), ctx: str = "",
                   dtype: Dtype = None):
    """Samples from the normal distribution N(loc, scale^2)."""
    _value_check(scale > 0, "_random_normal", f"scale must be positive, got {scale}",
                 lambda: _blank("_random_normal", shape, dtype, ctx))
    out = _float_out("_random_normal", dtype)
    return _cast(_normal(loc, scale, _out_shape("_random_normal", shape), _work(out), device_of(ctx)), out)


@register("_random_gamma", aliases=("random_gamma",), random=True, differentiable=False,
          infer_type=_float_type_rule(), samples=lambda: [
              _shape_sample({"alpha": 2.0, "beta": 0.5, "shape": (3, 2)})])
def _random_gamma(*, alpha: float = 1.0, beta: float = 1.0, shape: Shape = (), ctx: str = "",
                  dtype: Dtype = None):
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta`` (mean alpha*beta)."""
    _value_check(alpha > 0 and beta > 0, "_random_gamma", f"alpha and beta must be positive, got {alpha}, {beta}",
                 lambda: _blank("_random_gamma", shape, dtype, ctx))
    out = _float_out("_random_gamma", dtype)
    return _cast(_gamma(alpha, beta, _out_shape("_random_gamma", shape), _work(out), device_of(ctx)), out)


@register("_random_exponential", aliases=("random_exponential",), random=True, differentiable=False,
          infer_type=_float_type_rule(), samples=lambda: [
              _shape_sample({"lam": 2.0, "shape": (5,)})])
def _random_exponential(*, lam: float = 1.0, shape: Shape = (), ctx: str = "", dtype: Dtype = None):
    """Samples from the exponential distribution with rate ``lam`` (mean 1/lam)."""
    _value_check(lam > 0, "_random_exponential", f"lam must be positive, got {lam}",
                 lambda: _blank("_random_exponential", shape, dtype, ctx))
    out = _float_out("_random_exponential", dtype)
    return _cast(_exponential(lam, _out_shape("_random_exponential", shape), _work(out), device_of(ctx)), out)


@register("_random_poisson", aliases=("random_poisson",), random=True, differentiable=False,
          infer_type=_float_type_rule(), samples=lambda: [
              _const_sample({"lam": 0.0, "shape": (2, 2)}, 0.0),
              _shape_sample({"lam": 3.0, "shape": (4,)})])
def _random_poisson(*, lam: float = 1.0, shape: Shape = (), ctx: str = "", dtype: Dtype = None):
    """Samples from the Poisson distribution with rate ``lam`` (returned as floats)."""
    _value_check(lam >= 0, "_random_poisson", f"lam must be non-negative, got {lam}",
                 lambda: _blank("_random_poisson", shape, dtype, ctx))
    out = _float_out("_random_poisson", dtype)
    return _cast(_poisson(lam, _out_shape("_random_poisson", shape), _work(out), device_of(ctx)), out)


@register("_random_negative_binomial", aliases=("random_negative_binomial",), random=True,
          differentiable=False, infer_type=_float_type_rule(), samples=lambda: [
              _const_sample({"k": 3, "p": 1.0, "shape": (2, 3)}, 0.0),
              _shape_sample({"k": 3, "p": 0.4, "shape": (4,)})])
def _random_negative_binomial(*, k: int = 1, p: float = 1.0, shape: Shape = (), ctx: str = "",
                              dtype: Dtype = None):
    """Samples from the negative binomial distribution: failures before the k-th success with
    success probability p (mean k(1-p)/p), returned as floats."""
    _value_check(k > 0, "_random_negative_binomial", f"k must be positive, got {k}",
                 lambda: _blank("_random_negative_binomial", shape, dtype, ctx))
    _value_check(0 < p <= 1, "_random_negative_binomial", f"p must be in (0, 1], got {p}",
                 lambda: _blank("_random_negative_binomial", shape, dtype, ctx))
    out = _float_out("_random_negative_binomial", dtype)
    s = _out_shape("_random_negative_binomial", shape)
    return _cast(_negative_binomial(float(k), p, s, _work(out), device_of(ctx)), out)


@register("_random_generalized_negative_binomial", aliases=("random_generalized_negative_binomial",),
          random=True, differentiable=False, infer_type=_float_type_rule(), samples=lambda: [
              _const_sample({"mu": 0.0, "alpha": 0.5, "shape": (3,)}, 0.0),
              _shape_sample({"mu": 2.0, "alpha": 0.3, "shape": (2, 2)})])
def _random_generalized_negative_binomial(*, mu: float = 1.0, alpha: float = 1.0, shape: Shape = (),
                                          ctx: str = "", dtype: Dtype = None):
    """Samples from the generalized negative binomial distribution with mean ``mu`` and
    dispersion ``alpha`` (variance mu + alpha mu^2), returned as floats."""
    _value_check(mu >= 0 and alpha >= 0, "_random_generalized_negative_binomial",
                 f"mu and alpha must be non-negative, got {mu}, {alpha}",
                 lambda: _blank("_random_generalized_negative_binomial", shape, dtype, ctx))
    out = _float_out("_random_generalized_negative_binomial", dtype)
    s = _out_shape("_random_generalized_negative_binomial", shape)
    return _cast(_gen_negative_binomial(mu, alpha, s, _work(out), device_of(ctx)), out)


def _randint_type(attrs: dict, in_types: list) -> list:
    d = attrs.get("dtype")
    return ["int32" if d is None or d == "None" else dtype_name(d)]


@register("_random_randint", aliases=("random_randint",), random=True, differentiable=False,
          infer_type=_randint_type, samples=lambda: [
              Sample((), {"low": 3, "high": 4, "shape": (2, 3)}, ref=lambda **a: np.full((2, 3), 3, np.int32),
                     grad=False),
              _shape_sample({"low": -5, "high": 5, "shape": (4,), "dtype": "int64"})])
def _random_randint(*, low: int, high: int, shape: Shape = (), ctx: str = "", dtype: Dtype = None):
    """Integers drawn uniformly from [low, high) (int32 unless dtype='int64')."""
    name = "int32" if dtype is None or dtype == "None" else dtype_name(dtype)
    _check(name in ("int32", "int64"), "_random_randint", f"dtype must be int32 or int64, got {name!r}")
    _value_check(int(high) > int(low), "_random_randint", f"high must be greater than low, got low={low} high={high}",
                 lambda: _blank("_random_randint", shape, name, ctx))
    return torch.randint(int(low), int(high), _out_shape("_random_randint", shape),
                         dtype=dtype_torch(name), device=device_of(ctx))


# ---- _random_*_like: shape, dtype and device of ``data`` ---------------------------------------
def _like_out(op: str, data: torch.Tensor) -> tuple:
    if not data.is_floating_point():
        raise MXNetError(f"{op}: data must be a floating-point array (it gives the output dtype), "
                         f"got {data.dtype}")
    return tuple(data.shape), _work(data.dtype), data.device


def _like_samples(attrs: dict, value: Optional[float]) -> Callable[[], list]:
    x = np.random.RandomState(1).uniform(-1, 1, (2, 3))
    if value is None:
        return lambda: [Sample((x,), attrs, ref=None, grad=False)]
    return lambda: [Sample((x,), attrs, ref=lambda d, **a: np.full_like(d, value), grad=False)]


@register("_random_uniform_like", random=True, differentiable=False,
          samples=_like_samples({"low": 1.5, "high": 1.5}, 1.5))
def _random_uniform_like(data, *, low: float = 0.0, high: float = 1.0):
    """Uniform samples on [low, high) with the shape and dtype of ``data``."""
    _value_check(high >= low, "_random_uniform_like", f"low must be <= high, got low={low} high={high}",
                 lambda: _blank_like(data))
    s, w, dev = _like_out("_random_uniform_like", data)
    return _cast(_uniform(low, high, s, w, dev), data.dtype)


@register("_random_normal_like", random=True, differentiable=False,
          samples=_like_samples({"loc": 1.0, "scale": 2.0}, None))
def _random_normal_like(data, *, loc: float = 0.0, scale: float = 1.0):
    """Normal samples N(loc, scale^2) with the shape and dtype of ``data``."""
    _value_check(scale > 0, "_random_normal_like", f"scale must be positive, got {scale}",
                 lambda: _blank_like(data))
    s, w, dev = _like_out("_random_normal_like", data)
    return _cast(_normal(loc, scale, s, w, dev), data.dtype)


@register("_random_gamma_like", random=True, differentiable=False,
          samples=_like_samples({"alpha": 2.0, "beta": 1.0}, None))
def _random_gamma_like(data, *, alpha: float = 1.0, beta: float = 1.0):
    """Gamma(alpha, scale beta) samples with the shape and dtype of ``data``."""
    _value_check(alpha > 0 and beta > 0, "_random_gamma_like", f"alpha and beta must be positive, got {alpha}, {beta}",
                 lambda: _blank_like(data))
    s, w, dev = _like_out("_random_gamma_like", data)
    return _cast(_gamma(alpha, beta, s, w, dev), data.dtype)


@register("_random_exponential_like", random=True, differentiable=False,
          samples=_like_samples({"lam": 2.0}, None))
def _random_exponential_like(data, *, lam: float = 1.0):
    """Exponential(rate lam) samples with the shape and dtype of ``data``."""
    _value_check(lam > 0, "_random_exponential_like", f"lam must be positive, got {lam}",
                 lambda: _blank_like(data))
    s, w, dev = _like_out("_random_exponential_like", data)
    return _cast(_exponential(lam, s, w, dev), data.dtype)


@register("_random_poisson_like", random=True, differentiable=False,
          samples=_like_samples({"lam": 0.0}, 0.0))
def _random_poisson_like(data, *, lam: float = 1.0):
    """Poisson(lam) samples with the shape and dtype of ``data``."""
    _value_check(lam >= 0, "_random_poisson_like", f"lam must be non-negative, got {lam}",
                 lambda: _blank_like(data))
    s, w, dev = _like_out("_random_poisson_like", data)
    return _cast(_poisson(lam, s, w, dev), data.dtype)


@register("_random_negative_binomial_like", random=True, differentiable=False,
          samples=_like_samples({"k": 2, "p": 1.0}, 0.0))
def _random_negative_binomial_like(data, *, k: int = 1, p: float = 1.0):
    """Negative binomial (k, p) samples with the shape and dtype of ``data``."""
    _value_check(k > 0, "_random_negative_binomial_like", f"k must be positive, got {k}",
                 lambda: _blank_like(data))
    _value_check(0 < p <= 1, "_random_negative_binomial_like", f"p must be in (0, 1], got {p}",
                 lambda: _blank_like(data))
    s, w, dev = _like_out("_random_negative_binomial_like", data)
    return _cast(_negative_binomial(float(k), p, s, w, dev), data.dtype)


@register("_random_generalized_negative_binomial_like", random=True, differentiable=False,
          samples=_like_samples({"mu": 0.0, "alpha": 1.0}, 0.0))
def _random_generalized_negative_binomial_like(data, *, mu: float = 1.0, alpha: float = 1.0):
    """Generalized negative binomial (mu, alpha) samples with the shape and dtype of ``data``."""
    _value_check(mu >= 0 and alpha >= 0, "_random_generalized_negative_binomial_like",
                 f"mu and alpha must be non-negative, got {mu}, {alpha}",
                 lambda: _blank_like(data))
    s, w, dev = _like_out("_random_generalized_negative_binomial_like", data)
    return _cast(_gen_negative_binomial(mu, alpha, s, w, dev), data.dtype)


# ---- _sample_*: one distribution per entry of the parameter arrays ----------------------------
def _params(op: str, shape: Any, dtype: Any, *params: torch.Tensor) -> tuple:
    """(expanded parameters, output shape, work dtype, output dtype, device)."""
    first = params[0]
    for name_p in params[1:]:
        if tuple(name_p.shape) != tuple(first.shape):
            raise MXNetError(f"{op}: all parameter arrays must have the same shape, got "
                             f"{[tuple(p.shape) for p in params]}")
    if first.dim() == 0 or first.numel() == 0:
        raise MXNetError(f"{op}: parameter arrays must be non-empty with at least one dimension, "
                         f"got shape {tuple(first.shape)}")
    extra = sample_shape(shape)
    if any(d <= 0 for d in extra):
        raise MXNetError(f"{op}: shape must have positive dimensions, got {shape!r}")
    out_dt = _float_out(op, dtype)
    wdt = _work(out_dt)
    oshape = tuple(first.shape) + extra
    view = tuple(first.shape) + (1,) * len(extra)
    expanded = tuple(p.detach().to(wdt).reshape(view).expand(oshape) for p in params)
    return expanded, oshape, wdt, out_dt, first.device


def _sample_type_rule(attrs: dict, in_types: list) -> list:
    d = attrs.get("dtype")
    return ["float32" if d is None or d == "None" else dtype_name(d)]


def _arr(*vals: Any) -> np.ndarray:
    return np.asarray(vals, dtype=np.float64)


@register("_sample_uniform", aliases=("sample_uniform",), random=True, differentiable=False,
          infer_type=_sample_type_rule, samples=lambda: [
              Sample((_arr(1.0, 2.0, 3.0), _arr(1.0, 2.0, 3.0)), {"shape": (2,)},
                     ref=lambda lo, hi, shape: np.repeat(lo[:, None], 2, axis=1), grad=False),
              Sample((_arr(0.0, 1.0), _arr(1.0, 4.0)), {"shape": (2, 3)}, ref=None, grad=False)])
def _sample_uniform(low, high, *, shape: Shape = (), dtype: Dtype = None):
    """Uniform samples on [low[i], high[i]) for every entry i; output shape low.shape + shape."""
    (lo, hi), oshape, wdt, out, dev = _params("_sample_uniform", shape, dtype, low, high)
    return _cast(_uniform(lo, hi, oshape, wdt, dev), out)


@register("_sample_normal", aliases=("sample_normal",), random=True, differentiable=False,
          infer_type=_sample_type_rule, samples=lambda: [
              Sample((_arr(1.0, -2.0), _arr(0.0, 0.0)), {"shape": (3,)},
                     ref=lambda mu, sigma, shape: np.repeat(mu[:, None], 3, axis=1), grad=False),
              Sample((_arr(0.0, 1.0), _arr(1.0, 2.0)), {"shape": (2, 2)}, ref=None, grad=False)])
def _sample_normal(mu, sigma, *, shape: Shape = (), dtype: Dtype = None):
    """Normal samples N(mu[i], sigma[i]^2) for every entry i; output shape mu.shape + shape."""
    (m, s), oshape, wdt, out, dev = _params("_sample_normal", shape, dtype, mu, sigma)
    return _cast(_normal(m, s, oshape, wdt, dev), out)


@register("_sample_gamma", aliases=("sample_gamma",), random=True, differentiable=False,
          infer_type=_sample_type_rule, samples=lambda: [
              Sample((_arr(1.0, 2.0), _arr(0.5, 2.0)), {"shape": (3,)}, ref=None, grad=False)])
def _sample_gamma(alpha, beta, *, shape: Shape = (), dtype: Dtype = None):
    """Gamma(alpha[i], scale beta[i]) samples for every entry i; output shape alpha.shape + shape."""
    (a, b), oshape, wdt, out, dev = _params("_sample_gamma", shape, dtype, alpha, beta)
    return _cast(torch._standard_gamma(a.contiguous()) * b, out)


@register("_sample_exponential", aliases=("sample_exponential",), random=True, differentiable=False,
          infer_type=_sample_type_rule, samples=lambda: [
              Sample((_arr(1.0, 2.0, 4.0),), {"shape": (2,)}, ref=None, grad=False)])
def _sample_exponential(lam, *, shape: Shape = (), dtype: Dtype = None):
    """Exponential(rate lam[i]) samples for every entry i; output shape lam.shape + shape."""
    (l,), oshape, wdt, out, dev = _params("_sample_exponential", shape, dtype, lam)
    return _cast(_exponential(l, oshape, wdt, dev), out)


@register("_sample_poisson", aliases=("sample_poisson",), random=True, differentiable=False,
          infer_type=_sample_type_rule, samples=lambda: [
              Sample((_arr(0.0, 0.0),), {"shape": (3,)}, ref=lambda lam, shape: np.zeros((2, 3)), grad=False),
              Sample((_arr(1.0, 5.0),), {"shape": (2, 2)}, ref=None, grad=False)])
def _sample_poisson(lam, *, shape: Shape = (), dtype: Dtype = None):
    """Poisson(lam[i]) samples for every entry i (as floats); output shape lam.shape + shape."""
    (l,), oshape, wdt, out, dev = _params("_sample_poisson", shape, dtype, lam)
    return _cast(torch.poisson(l.contiguous()), out)


@register("_sample_negative_binomial", aliases=("sample_negative_binomial",), random=True,
          differentiable=False, infer_type=_sample_type_rule,
          samples=lambda: [
              Sample((_arr(2.0, 3.0), _arr(1.0, 1.0)), {"shape": (2,)},
                     ref=lambda k, p, shape: np.zeros((2, 2)), grad=False),
              Sample((_arr(2.0, 3.0), _arr(0.3, 0.6)), {"shape": (2,)}, ref=None, grad=False)])
def _sample_negative_binomial(k, p, *, shape: Shape = (), dtype: Dtype = None):
    """Negative binomial (k[i], p[i]) samples for every entry i; output shape k.shape + shape."""
    (kk, pp), oshape, wdt, out, dev = _params("_sample_negative_binomial", shape, dtype, k, p)
    rate = torch._standard_gamma(kk.contiguous()) * ((1 - pp) / pp)
    return _cast(torch.poisson(rate), out)


@register("_sample_generalized_negative_binomial", aliases=("sample_generalized_negative_binomial",),
          random=True, differentiable=False, infer_type=_sample_type_rule, samples=lambda: [
              Sample((_arr(0.0, 0.0), _arr(0.5, 0.0)), {"shape": (2,)},
                     ref=lambda mu, alpha, shape: np.zeros((2, 2)), grad=False),
              Sample((_arr(2.0, 3.0), _arr(0.3, 0.0)), {"shape": (3,)}, ref=None, grad=False)])
def _sample_generalized_negative_binomial(mu, alpha, *, shape: Shape = (), dtype: Dtype = None):
    """Generalized negative binomial (mu[i], alpha[i]) samples; output shape mu.shape + shape."""
    (m, a), oshape, wdt, out, dev = _params("_sample_generalized_negative_binomial", shape, dtype, mu, alpha)
    return _cast(_gen_negative_binomial(m, a, oshape, wdt, dev), out)


# ---- _sample_multinomial ---------------------------------------------------------------------
_MULTI_DTYPES = ("uint8", "int32", "float16", "float32", "float64")


def _multinomial_type(attrs: dict, in_types: list) -> list:
    d = attrs.get("dtype")
    out = ["int32" if d is None else dtype_name(d)]
    if attrs.get("get_prob"):
        out.append(in_types[0] if in_types and in_types[0] is not None else "float32")
    return out


def _onehot_probs() -> np.ndarray:
    return np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


@register("_sample_multinomial", aliases=("sample_multinomial",), random=True,
          num_outputs=lambda a: 2 if a.get("get_prob") else 1,
          infer_type=_multinomial_type, samples=lambda: [
              Sample((_onehot_probs(),), {"shape": (4,)},
                     ref=lambda d, shape: np.array([[1] * 4, [2] * 4], np.int32), grad=False),
              Sample((_onehot_probs(),), {"get_prob": True},
                     ref=lambda d, get_prob: (np.array([1, 2], np.int32), np.zeros(2)), grad=False),
              Sample((np.array([0.2, 0.3, 0.5]),), {"shape": (2, 2)}, ref=None, grad=False)])
def _sample_multinomial(data, *, shape: Shape = (), get_prob: bool = False, dtype: Dtype = "int32"):
    """Category indices drawn from the distributions along the last axis of ``data``.

    Output shape is ``data.shape[:-1] + shape`` (``shape`` or ``(1,)`` for 1-D data). With
    ``get_prob`` a second output holds the log-probability of each draw; it is differentiable
    with respect to ``data`` (the REINFORCE use of MXNet)."""
    name = "int32" if dtype is None else dtype_name(dtype)
    if name not in _MULTI_DTYPES:
        raise MXNetError(f"_sample_multinomial: dtype must be one of {list(_MULTI_DTYPES)}, got {name!r}")
    if data.dim() == 0 or data.shape[-1] == 0:
        raise MXNetError(f"_sample_multinomial: data must have a non-empty last axis of category "
                         f"probabilities, got shape {tuple(data.shape)}")
    extra = sample_shape(shape)
    k = data.shape[-1]
    m = int(math.prod(extra)) if extra else 1
    if data.dim() == 1:
        oshape = extra if extra else (1,)
    else:
        oshape = tuple(data.shape[:-1]) + extra
    flat = data.reshape(-1, k)
    probs = flat.detach()
    if probs.dtype not in (torch.float32, torch.float64):
        probs = probs.float()
    idx = torch.multinomial(probs, m, replacement=True)
    out = idx.reshape(oshape).to(dtype_torch(name))
    if not get_prob:
        return out
    logp = torch.log(torch.gather(flat, 1, idx)).reshape(oshape)
    return out, logp


# ---- _shuffle --------------------------------------------------------------------------------
@register("_shuffle", aliases=("shuffle",), random=True, differentiable=False, samples=lambda: [
    Sample((np.tile(np.array([[1.0, 2.0, 3.0]]), (4, 1)),), ref=lambda d: d, grad=False),
    Sample((np.arange(6.0),), ref=None, grad=False)])
def _shuffle(data):
    """Randomly permutes ``data`` along its first axis (rows keep their contents)."""
    if data.dim() == 0:
        raise MXNetError("_shuffle: data must have at least one dimension, got a scalar")
    perm = torch.randperm(data.shape[0], device=data.device)
    return data.detach()[perm]


# ---- _random_pdf_*: densities of samples under array parameters -------------------------------
# ``sample`` has shape ``param.shape + extra``; the output has the sample's shape (Dirichlet: the
# sample's last axis is the vector, dropped from the output). Parameter formulas follow MXNet's
# kernels (note: its gamma density takes ``beta`` as a *rate*, and its negative binomial
# ``p**k (1-p)**x``). As in MXNet, discrete distributions give no gradient to ``sample``.
def _pdf_params(op: str, sample: torch.Tensor, params: Sequence[torch.Tensor], vector: bool = False) -> list:
    pshape = tuple(params[0].shape)
    for q in params[1:]:
        if tuple(q.shape) != pshape:
            raise MXNetError(f"{op}: parameter arrays must have the same shape, got "
                             f"{[tuple(p.shape) for p in params]}")
    sshape = tuple(sample.shape)
    lead = pshape[:-1] if vector else pshape
    if sshape[:len(lead)] != lead or (vector and (not sshape or sshape[-1] != pshape[-1])) \
            or len(sshape) < len(pshape):
        raise MXNetError(f"{op}: the parameter shape {pshape} must be the leading part of the sample "
                         f"shape {sshape}" + (" (and match its last axis)" if vector else ""))
    extra = len(sshape) - len(pshape)
    if vector:
        return [p.reshape(lead + (1,) * extra + pshape[-1:]) for p in params]
    return [p.reshape(pshape + (1,) * extra) for p in params]


def _pdf_out(lpdf: torch.Tensor, is_log: bool) -> torch.Tensor:
    return lpdf if is_log else torch.exp(lpdf)


def _np_lgamma(x: Any) -> np.ndarray:
    return np.vectorize(math.lgamma, otypes=[np.float64])(x)


def _np_expand(p: np.ndarray, s: np.ndarray) -> np.ndarray:
    return p.reshape(p.shape + (1,) * (s.ndim - p.ndim))


def _pdf_samples(ref: Callable, sample: np.ndarray, params: tuple, grad_inputs: Optional[tuple] = None,
                 ) -> Callable[[], list]:
    def samples() -> list:
        return [Sample((sample,) + params, {}, ref=ref, grad_inputs=grad_inputs),
                Sample((sample,) + params, {"is_log": True}, ref=lambda *a, is_log: np.log(ref(*a)),
                       grad_inputs=grad_inputs)]
    return samples


def _r(lo: float, hi: float, shape: tuple, seed: int) -> np.ndarray:
    return np.random.RandomState(seed).uniform(lo, hi, shape)


def _ref_uniform(x: np.ndarray, low: np.ndarray, high: np.ndarray, **_: Any) -> np.ndarray:
    return np.broadcast_to(1.0 / (_np_expand(high, x) - _np_expand(low, x)), x.shape).copy()


@register("_random_pdf_uniform", aliases=("random_pdf_uniform",),
          samples=_pdf_samples(_ref_uniform, _r(0.5, 1.0, (2, 3), 1), (_r(-1, 0, (2,), 2), _r(1.5, 3, (2,), 3))))
def _random_pdf_uniform(sample, low, high, *, is_log: bool = False):
    """Density 1/(high-low) of uniform distributions at ``sample`` (support not checked)."""
    lo, hi = _pdf_params("_random_pdf_uniform", sample, (low, high))
    lpdf = -torch.log(hi - lo).expand(sample.shape)
    return _pdf_out(lpdf, is_log).to(sample.dtype)


def _ref_normal(x: np.ndarray, mu: np.ndarray, sigma: np.ndarray, **_: Any) -> np.ndarray:
    m, s = _np_expand(mu, x), _np_expand(sigma, x)
    return np.exp(-0.5 * ((x - m) / s) ** 2) / (np.sqrt(2 * np.pi) * s)


@register("_random_pdf_normal", aliases=("random_pdf_normal",),
          samples=_pdf_samples(_ref_normal, _r(-2, 2, (2, 4), 4), (_r(-1, 1, (2,), 5), _r(0.5, 2, (2,), 6))))
def _random_pdf_normal(sample, mu, sigma, *, is_log: bool = False):
    """Density of normal distributions N(mu, sigma^2) at ``sample``."""
    m, s = _pdf_params("_random_pdf_normal", sample, (mu, sigma))
    lpdf = -0.5 * ((sample - m) / s) ** 2 - torch.log(s) - 0.5 * math.log(2 * math.pi)
    return _pdf_out(lpdf, is_log)


def _ref_gamma(x: np.ndarray, alpha: np.ndarray, beta: np.ndarray, **_: Any) -> np.ndarray:
    a, b = _np_expand(alpha, x), _np_expand(beta, x)
    return np.exp(a * np.log(b) + (a - 1) * np.log(x) - b * x - _np_lgamma(a))


@register("_random_pdf_gamma", aliases=("random_pdf_gamma",),
          samples=_pdf_samples(_ref_gamma, _r(0.5, 3, (3, 2), 7), (_r(1, 4, (3,), 8), _r(0.5, 2, (3,), 9))))
def _random_pdf_gamma(sample, alpha, beta, *, is_log: bool = False):
    """Density of gamma distributions with shape ``alpha`` and rate ``beta`` at ``sample``."""
    a, b = _pdf_params("_random_pdf_gamma", sample, (alpha, beta))
    lpdf = a * torch.log(b) + (a - 1) * torch.log(sample) - b * sample - torch.lgamma(a)
    return _pdf_out(lpdf, is_log)


def _ref_exponential(x: np.ndarray, lam: np.ndarray, **_: Any) -> np.ndarray:
    lm = _np_expand(lam, x)
    return lm * np.exp(-lm * x)


@register("_random_pdf_exponential", aliases=("random_pdf_exponential",),
          samples=_pdf_samples(_ref_exponential, _r(0.1, 3, (3, 2), 10), (_r(0.5, 2, (3,), 11),)))
def _random_pdf_exponential(sample, lam, *, is_log: bool = False):
    """Density of exponential distributions with rate ``lam`` at ``sample``."""
    (lm,) = _pdf_params("_random_pdf_exponential", sample, (lam,))
    return _pdf_out(torch.log(lm) - lm * sample, is_log)


def _ref_poisson(x: np.ndarray, lam: np.ndarray, **_: Any) -> np.ndarray:
    lm = _np_expand(lam, x)
    return np.exp(x * np.log(lm) - _np_lgamma(x + 1) - lm)


_COUNTS = np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 4.0, 0.0, 2.0]])


@register("_random_pdf_poisson", aliases=("random_pdf_poisson",),
          samples=_pdf_samples(_ref_poisson, _COUNTS, (np.array([1.0, 2.5]),), grad_inputs=(1,)))
def _random_pdf_poisson(sample, lam, *, is_log: bool = False):
    """Probability of the counts ``sample`` under Poisson distributions with rate ``lam``."""
    (lm,) = _pdf_params("_random_pdf_poisson", sample, (lam,))
    x = sample.detach()
    return _pdf_out(x * torch.log(lm) - torch.lgamma(x + 1) - lm, is_log)


def _nb_lpdf(x: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    return torch.lgamma(x + k) - torch.lgamma(x + 1) - torch.lgamma(k) + k * torch.log(p) + x * torch.log1p(-p)


def _ref_nb(x: np.ndarray, k: np.ndarray, p: np.ndarray, **_: Any) -> np.ndarray:
    kk, pp = _np_expand(k, x), _np_expand(p, x)
    return np.exp(_np_lgamma(x + kk) - _np_lgamma(x + 1) - _np_lgamma(kk) + kk * np.log(pp) + x * np.log(1 - pp))


@register("_random_pdf_negative_binomial", aliases=("random_pdf_negative_binomial",),
          samples=_pdf_samples(_ref_nb, _COUNTS, (np.array([1.0, 2.5]), np.array([0.3, 0.6])), grad_inputs=(1, 2)))
def _random_pdf_negative_binomial(sample, k, p, *, is_log: bool = False):
    """Probability of ``sample`` failures before the k-th success (success probability p)."""
    kk, pp = _pdf_params("_random_pdf_negative_binomial", sample, (k, p))
    return _pdf_out(_nb_lpdf(sample.detach(), kk, pp), is_log)


def _ref_gnb(x: np.ndarray, mu: np.ndarray, alpha: np.ndarray, **_: Any) -> np.ndarray:
    return _ref_nb(x, 1.0 / alpha, 1.0 / (mu * alpha + 1.0))


@register("_random_pdf_generalized_negative_binomial", aliases=("random_pdf_generalized_negative_binomial",),
          samples=_pdf_samples(_ref_gnb, _COUNTS, (np.array([1.0, 2.5]), np.array([0.5, 1.5])), grad_inputs=(1, 2)))
def _random_pdf_generalized_negative_binomial(sample, mu, alpha, *, is_log: bool = False):
    """Probability of ``sample`` under negative binomials with mean ``mu`` and dispersion
    ``alpha`` (k = 1/alpha, p = 1/(mu*alpha + 1))."""
    m, a = _pdf_params("_random_pdf_generalized_negative_binomial", sample, (mu, alpha))
    return _pdf_out(_nb_lpdf(sample.detach(), 1.0 / a, 1.0 / (m * a + 1.0)), is_log)


def _ref_dirichlet(x: np.ndarray, alpha: np.ndarray, **_: Any) -> np.ndarray:
    a = alpha.reshape(alpha.shape[:-1] + (1,) * (x.ndim - alpha.ndim) + alpha.shape[-1:])
    return np.exp(((a - 1) * np.log(x)).sum(-1) + _np_lgamma(a.sum(-1)) - _np_lgamma(a).sum(-1))


@register("_random_pdf_dirichlet", aliases=("random_pdf_dirichlet",),
          samples=_pdf_samples(_ref_dirichlet, _r(0.1, 0.5, (2, 4, 3), 12), (_r(0.5, 3, (2, 3), 13),)))
def _random_pdf_dirichlet(sample, alpha, *, is_log: bool = False):
    """Density of Dirichlet distributions with concentration ``alpha`` (last axis) at ``sample``."""
    (a,) = _pdf_params("_random_pdf_dirichlet", sample, (alpha,), vector=True)
    lpdf = ((a - 1) * torch.log(sample)).sum(-1) + torch.lgamma(a.sum(-1)) - torch.lgamma(a).sum(-1)
    return _pdf_out(lpdf, is_log)
