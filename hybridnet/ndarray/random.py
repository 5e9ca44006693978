"""``mx.nd.random``: MXNet's sampling functions (uniform, normal, randn, gamma, ...).

Each function dispatches as MXNet's does: Python-number parameters call the ``_random_*``
operator (``shape`` samples, ``ctx``/``dtype`` as given), array parameters call the
``_sample_*`` operator (``shape`` samples per parameter entry, output shape
``param.shape + shape``). The functions are built by :func:`make_functions` around a front-end's
``invoke``, so the Symbol front-end builds the same functions for ``mx.sym.random``; the
NDArray ones also hand Symbol parameters to the Symbol front-end (``invoke`` does that).

Operator functions generated from the registry (``uniform_like``, ``normal_like``, ...) are added
to this module after import, without replacing the functions defined here.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

from ..base import NotGiven, dtype_name, numeric_types
from ..context import Context, current_context
from ..ops import registry as _reg
from .ndarray import NDArray, invoke

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint",
           "make_functions", "Frontend"]

_Null = NotGiven


class Frontend(NamedTuple):
    """What the sampling functions need from a front-end (NDArray or Symbol)."""
    invoke: Callable            # invoke(op, inputs, attrs, out, name, hint, attr)
    is_array: Callable          # is_array(x) -> True for the front-end's array type
    symbolic: bool              # True: no ctx default, no ``out=``


def _is_nd_or_symbol(x: Any) -> bool:
    return isinstance(x, NDArray) or hasattr(x, "_entries")


def _given(v: Any) -> bool:
    return v is not _Null and v is not None


def make_functions(fe: Frontend) -> dict:
    """The ``nd.random`` functions (name -> function) bound to front-end ``fe``."""

    def _attrs_from(kwargs: dict, op: Any) -> tuple:
        name = kwargs.pop("name", None)
        attr = kwargs.pop("attr", None)
        for k in kwargs:
            if k not in op.attrs:
                raise TypeError(f"{op.name}: unexpected argument {k!r}; its attributes are "
                                f"{sorted(a for a in op.attrs if a != 'num_args')}")
        return dict(kwargs), name, attr

    def _helper(rand_op: str, sample_op: "str | None", names: Sequence[str], params: list,
                shape: Any, dtype: Any, ctx: Any, out: Any, kwargs: dict) -> Any:
        first = params[0]
        if fe.is_array(first):
            for p in params[1:]:
                if not fe.is_array(p):
                    raise TypeError(f"distribution parameters must all have the same type, but got "
                                    f"both {type(first).__name__} and {type(p).__name__}")
            if sample_op is None:
                raise TypeError(f"{rand_op}: parameters must be Python numbers, got {type(first).__name__}")
            op = _reg.get(sample_op)
            attrs, name, attr = _attrs_from(kwargs, op)
            if _given(shape):
                attrs["shape"] = shape
            if _given(dtype):
                attrs["dtype"] = dtype_name(dtype)
            elif out is not None and not fe.symbolic:
                attrs["dtype"] = dtype_name(out.dtype)
            return fe.invoke(op, tuple(params), attrs, out, name, None, attr)
        if isinstance(first, numeric_types) and not isinstance(first, bool):
            for p in params[1:]:
                if not isinstance(p, numeric_types):
                    raise TypeError(f"distribution parameters must all have the same type, but got "
                                    f"both {type(first).__name__} and {type(p).__name__}")
            op = _reg.get(rand_op)
            attrs, name, attr = _attrs_from(kwargs, op)
            for n, p in zip(names, params):
                attrs[n] = p.item() if hasattr(p, "item") else p
            if not fe.symbolic:
                if ctx is None:
                    ctx = current_context()
                if not _given(shape):
                    shape = out.shape if out is not None else 1
                if not _given(dtype) and out is not None:
                    dtype = out.dtype
            if _given(shape):
                attrs["shape"] = shape
            if _given(dtype):
                attrs["dtype"] = dtype_name(dtype)
            if ctx is not None:
                attrs["ctx"] = ctx if isinstance(ctx, (Context, str)) else str(ctx)
            return fe.invoke(op, (), attrs, out, name, None, attr)
        raise ValueError(f"distribution parameters must be either arrays or numbers, "
                         f"but got {type(first).__name__}")

    def uniform(low: Any = 0, high: Any = 1, shape: Any = _Null, dtype: Any = _Null,
                ctx: Any = None, out: Any = None, **kwargs: Any) -> Any:
        """Samples from the uniform distribution on [low, high) (MXNet ``nd.random.uniform``).

        Scalar ``low``/``high``: an array of ``shape`` (default (1,)). Array ``low``/``high``:
        ``shape`` samples for each pair, output shape ``low.shape + shape``."""
        return _helper("_random_uniform", "_sample_uniform", ("low", "high"), [low, high],
                       shape, dtype, ctx, out, kwargs)

    def normal(loc: Any = 0, scale: Any = 1, shape: Any = _Null, dtype: Any = _Null,
               ctx: Any = None, out: Any = None, **kwargs: Any) -> Any:
        """Samples from the normal distribution N(loc, scale^2) (MXNet ``nd.random.normal``)."""
        return _helper("_random_normal", "_sample_normal", ("loc", "scale"), [loc, scale],
                       shape, dtype, ctx, out, kwargs)

    def randn(*shape: Any, **kwargs: Any) -> Any:
        """Normal samples of shape ``shape`` given positionally (MXNet ``nd.random.randn(2, 3, loc=0, scale=1)``)."""
        loc = kwargs.pop("loc", 0)
        scale = kwargs.pop("scale", 1)
        dtype = kwargs.pop("dtype", _Null)
        ctx = kwargs.pop("ctx", None)
        out = kwargs.pop("out", None)
        if not (isinstance(loc, numeric_types) or fe.is_array(loc)):
            raise TypeError(f"randn: loc must be a number or an array, got {type(loc).__name__}")
        if not (isinstance(scale, numeric_types) or fe.is_array(scale)):
            raise TypeError(f"randn: scale must be a number or an array, got {type(scale).__name__}")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _helper("_random_normal", "_sample_normal", ("loc", "scale"), [loc, scale],
                       tuple(shape), dtype, ctx, out, kwargs)

    def poisson(lam: Any = 1, shape: Any = _Null, dtype: Any = _Null, ctx: Any = None,
                out: Any = None, **kwargs: Any) -> Any:
        """Samples from the Poisson distribution with rate ``lam``, as floats (MXNet ``nd.random.poisson``)."""
        return _helper("_random_poisson", "_sample_poisson", ("lam",), [lam],
                       shape, dtype, ctx, out, kwargs)

    def exponential(scale: Any = 1, shape: Any = _Null, dtype: Any = _Null, ctx: Any = None,
                    out: Any = None, **kwargs: Any) -> Any:
        """Samples from the exponential distribution with scale ``scale`` = 1/rate (MXNet
        ``nd.random.exponential``; the operator takes the rate ``lam = 1/scale``)."""
        return _helper("_random_exponential", "_sample_exponential", ("lam",), [1.0 / scale],
                       shape, dtype, ctx, out, kwargs)

    def gamma(alpha: Any = 1, beta: Any = 1, shape: Any = _Null, dtype: Any = _Null,
              ctx: Any = None, out: Any = None, **kwargs: Any) -> Any:
        """Samples from the gamma distribution with shape ``alpha`` and scale ``beta`` (MXNet ``nd.random.gamma``)."""
        return _helper("_random_gamma", "_sample_gamma", ("alpha", "beta"), [alpha, beta],
                       shape, dtype, ctx, out, kwargs)

    def negative_binomial(k: Any = 1, p: Any = 1, shape: Any = _Null, dtype: Any = _Null,
                          ctx: Any = None, out: Any = None, **kwargs: Any) -> Any:
        """Samples from the negative binomial distribution (k, p), as floats (MXNet
        ``nd.random.negative_binomial``; mean k(1-p)/p)."""
        return _helper("_random_negative_binomial", "_sample_negative_binomial", ("k", "p"), [k, p],
                       shape, dtype, ctx, out, kwargs)

    def generalized_negative_binomial(mu: Any = 1, alpha: Any = 1, shape: Any = _Null,
                                      dtype: Any = _Null, ctx: Any = None, out: Any = None,
                                      **kwargs: Any) -> Any:
        """Samples from the generalized negative binomial distribution with mean ``mu`` and
        dispersion ``alpha`` (MXNet ``nd.random.generalized_negative_binomial``)."""
        return _helper("_random_generalized_negative_binomial", "_sample_generalized_negative_binomial",
                       ("mu", "alpha"), [mu, alpha], shape, dtype, ctx, out, kwargs)

    def multinomial(data: Any, shape: Any = _Null, get_prob: bool = False, out: Any = None,
                    dtype: Any = "int32", **kwargs: Any) -> Any:
        """Category indices drawn from the distributions along the last axis of ``data``
        (MXNet ``nd.random.multinomial``). With ``get_prob=True`` returns ``[samples, log_prob]``."""
        op = _reg.get("_sample_multinomial")
        attrs, name, attr = _attrs_from(kwargs, op)
        if _given(shape):
            attrs["shape"] = shape
        attrs["get_prob"] = bool(get_prob)
        attrs["dtype"] = dtype_name(dtype)
        return fe.invoke(op, (data,), attrs, out, name, None, attr)

    def shuffle(data: Any, **kwargs: Any) -> Any:
        """A copy of ``data`` with its first axis randomly permuted (MXNet ``nd.random.shuffle``)."""
        out = kwargs.pop("out", None)
        op = _reg.get("_shuffle")
        attrs, name, attr = _attrs_from(kwargs, op)
        return fe.invoke(op, (data,), attrs, out, name, None, attr)

    def randint(low: int, high: int, shape: Any = _Null, dtype: Any = _Null, ctx: Any = None,
                out: Any = None, **kwargs: Any) -> Any:
        """Integers drawn uniformly from [low, high), int32 by default (MXNet ``nd.random.randint``)."""
        return _helper("_random_randint", None, ("low", "high"), [low, high],
                       shape, dtype, ctx, out, kwargs)

    fns = {f.__name__: f for f in (uniform, normal, randn, poisson, exponential, gamma,
                                   negative_binomial, generalized_negative_binomial, multinomial,
                                   shuffle, randint)}
    for f in fns.values():
        f.__module__ = __name__
        f.__qualname__ = f.__name__
    return fns


_FUNCS = make_functions(Frontend(invoke=invoke, is_array=_is_nd_or_symbol, symbolic=False))
uniform = _FUNCS["uniform"]
normal = _FUNCS["normal"]
randn = _FUNCS["randn"]
poisson = _FUNCS["poisson"]
exponential = _FUNCS["exponential"]
gamma = _FUNCS["gamma"]
negative_binomial = _FUNCS["negative_binomial"]
generalized_negative_binomial = _FUNCS["generalized_negative_binomial"]
multinomial = _FUNCS["multinomial"]
shuffle = _FUNCS["shuffle"]
randint = _FUNCS["randint"]
