"""``mx.init`` / ``mx.initializer``: weight initializers with MXNet 1.9.1 behaviour.

An initializer is called as ``init(desc, arr)``: ``desc`` is an :class:`InitDesc` (a ``str``
naming the array, plus the variable's attributes) and ``arr`` an NDArray that is filled IN
PLACE. Random initializers draw from torch's global generator, so ``mx.random.seed(n)`` makes
them reproducible.

Dispatch (MXNet's ``Initializer.__call__``): when ``desc.attrs['__init__']`` is set (a bare
registered name such as ``"zeros"``, a JSON dump such as ``'["uniform", {"scale": 1.0}]'`` or
an Initializer instance, which is what Gluon passes) that initializer's ``_init_weight`` fills
the array whatever its name; otherwise the name's suffix decides (``weight`` -> ``_init_weight``,
``bias``/``beta`` -> 0, ``gamma`` -> 1, ...), and an unknown suffix raises ``ValueError``.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

import numpy as np
import torch

from . import registry as _registry
from .base import MXNetError
from .ndarray import NDArray

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero",
           "One", "Constant", "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu",
           "Bilinear", "LSTMBias", "FusedRNN"]


# --------------------------------------------------------------------------------------------
# helpers: the arrays are NDArrays (or raw torch tensors); fill them in place, without autograd

def _tensor(arr: Any) -> torch.Tensor:
    if isinstance(arr, NDArray):
        return arr._t
    if isinstance(arr, torch.Tensor):
        return arr
    raise TypeError(f"initializer: arr must be an NDArray, got {type(arr).__name__}")


def _shape(arr: Any) -> Tuple[int, ...]:
    return tuple(_tensor(arr).shape)


def _assign(arr: Any, value: Any, who: str = "initializer") -> None:
    """``arr[:] = value`` (scalar, NumPy array, list, NDArray or tensor; broadcasting allowed)."""
    t = _tensor(arr)
    with torch.no_grad():
        if isinstance(value, (bool, int, float, np.generic)):
            t.fill_(value.item() if isinstance(value, np.generic) else value)
            return
        if isinstance(value, NDArray):
            v = value._t
        elif isinstance(value, torch.Tensor):
            v = value
        else:
            v = torch.as_tensor(np.asarray(value))
        v = v.detach().to(device=t.device, dtype=t.dtype)
        try:
            t.copy_(v)
        except RuntimeError:
            raise MXNetError(f"{who}: cannot assign a value of shape {tuple(v.shape)} to an array of "
                             f"shape {tuple(t.shape)}; give a scalar or an array of (or "
                             f"broadcastable to) the target shape") from None


def _uniform(arr: Any, low: float, high: float) -> None:
    """Fill with U(low, high) from torch's global generator (MXNet ``random.uniform(out=arr)``)."""
    t = _tensor(arr)
    with torch.no_grad():
        if t.is_floating_point():
            t.uniform_(float(low), float(high))
        else:
            t.copy_(torch.empty(t.shape, dtype=torch.float32, device=t.device)
                    .uniform_(float(low), float(high)).to(t.dtype))


def _normal(arr: Any, loc: float, scale: float) -> None:
    """Fill with N(loc, scale^2) from torch's global generator (``random.normal(out=arr)``)."""
    t = _tensor(arr)
    with torch.no_grad():
        if t.is_floating_point():
            t.normal_(float(loc), float(scale))
        else:
            t.copy_(torch.empty(t.shape, dtype=torch.float32, device=t.device)
                    .normal_(float(loc), float(scale)).to(t.dtype))


def _jsonable(v: Any) -> Any:
    """Turn initializer arguments into JSON values (NumPy scalars, arrays, nested inits)."""
    if isinstance(v, Initializer):
        return v.dumps()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, NDArray):
        return v.asnumpy().tolist()
    if isinstance(v, (np.ndarray, torch.Tensor)):
        return np.asarray(v.detach().cpu() if isinstance(v, torch.Tensor) else v).tolist()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


# --------------------------------------------------------------------------------------------

class InitDesc(str):
    """The name of the array to initialize plus its variable attributes (MXNet's ``InitDesc``).

    ``attrs`` maps attribute keys to strings (``__init__`` selects the initializer);
    ``global_init`` is the initializer to fall back to (set by the first ``__call__``).
    """

    attrs: Dict[str, Any]
    global_init: Optional["Initializer"]

    def __new__(cls, name: str, attrs: Optional[Dict[str, Any]] = None,
                global_init: Optional["Initializer"] = None) -> "InitDesc":
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


def _with_init(desc: Any, init: Any) -> InitDesc:
    """A copy of ``desc`` whose ``__init__`` attribute is ``init`` (None: removed)."""
    attrs = dict(getattr(desc, "attrs", {}) or {})
    attrs.pop("__init__", None)
    if init is not None:
        attrs["__init__"] = init
    return InitDesc(str(desc), attrs, getattr(desc, "global_init", None))


class Initializer:
    """Base class of the initializers (MXNet's ``mx.init.Initializer``).

    Subclasses implement ``_init_weight(name, arr)`` and may override ``_init_bias``,
    ``_init_gamma``, ``_init_beta``...; the keyword arguments given to ``__init__`` are what
    :meth:`dumps` writes.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._verbose = False
        self._print_func: Optional[Callable[[Any], str]] = None

    # -- verbosity ----------------------------------------------------------------------------
    def set_verbosity(self, verbose: bool = False,
                      print_func: Optional[Callable[[Any], str]] = None) -> "Initializer":
        """Log every initialized array with a statistic (default: ``norm(x)/sqrt(size)``)."""
        self._verbose = verbose
        if print_func is None:
            def print_func(x: Any) -> str:
                t = _tensor(x).detach().double()
                return str(float(t.norm()) / math.sqrt(max(t.numel(), 1)))
        self._print_func = print_func
        return self

    def _verbose_print(self, desc: Any, init: Any, arr: Any) -> None:
        if getattr(self, "_verbose", False) and getattr(self, "_print_func", None):
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    # -- serialization --------------------------------------------------------------------
    def dumps(self) -> str:
        """JSON spelling ``'["name", {kwargs}]'`` (the ``__init__`` attribute of variables)."""
        kwargs = getattr(self, "_kwargs", {})
        return json.dumps([self.__class__.__name__.lower(), _jsonable(kwargs)])

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in getattr(self, "_kwargs", {}).items())
        return f"{self.__class__.__name__}({args})"

    def __eq__(self, other: object) -> bool:
        """Same class and same arguments (MXNet 1.9.1), so shared parameters declared twice
        with equal initializers agree; array arguments compare by value."""
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and \
            _jsonable(getattr(self, "_kwargs", {})) == _jsonable(getattr(other, "_kwargs", {}))

    __hash__ = None  # type: ignore[assignment]  # equal initializers are not interchangeable keys

    # -- dispatch -------------------------------------------------------------------------
    def __call__(self, desc: Any, arr: Any) -> None:
        """Initialize ``arr`` in place according to ``desc`` (MXNet's dispatch rules)."""
        if isinstance(arr, NDArray) and arr._t.layout is not torch.strided:
            # a sparse array (a row_sparse weight) is filled densely, then keeps its storage
            from .ndarray.sparse import store_into
            dense = NDArray(torch.zeros(arr.shape, dtype=arr._t.dtype, device=arr._t.device))
            self(desc, dense)
            store_into(arr, dense._t)
            return
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init is not None and not (isinstance(init, str) and init == ""):
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _SUFFIXES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name: Any, arr: Any) -> None:
        """``init(str, arr)``: MXNet's deprecated name-based initialization."""
        warnings.warn("Calling initializer with init(str, NDArray) has been deprecated. "
                      "Please use init(mx.init.InitDesc(...), NDArray) instead.",
                      DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError(f"initializer: name must be a string, got {type(name).__name__}")
        if not isinstance(arr, (NDArray, torch.Tensor)):
            raise TypeError(f"initializer: arr must be an NDArray, got {type(arr).__name__}")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            for suffix, method in _LEGACY_SUFFIXES:
                if name.endswith(suffix):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    # -- the per-kind fillers -------------------------------------------------------------
    def _init_bilinear(self, _: Any, arr: Any) -> None:
        _assign(arr, _bilinear_kernel(_shape(arr)), "Bilinear")

    def _init_loc_bias(self, name: Any, arr: Any) -> None:
        if _shape(arr)[:1] != (6,):
            raise MXNetError(f"initializer: {name} (spatial transformer loc bias) must have shape "
                             f"(6,), got {_shape(arr)}")
        _assign(arr, np.array([1.0, 0, 0, 0, 1.0, 0]))

    def _init_zero(self, _: Any, arr: Any) -> None:
        _assign(arr, 0.0)

    def _init_one(self, _: Any, arr: Any) -> None:
        _assign(arr, 1.0)

    def _init_bias(self, _: Any, arr: Any) -> None:
        _assign(arr, 0.0)

    def _init_gamma(self, _: Any, arr: Any) -> None:
        _assign(arr, 1.0)

    def _init_beta(self, _: Any, arr: Any) -> None:
        _assign(arr, 0.0)

    def _init_quantized_weight(self, _: Any, arr: Any) -> None:
        t = _tensor(arr)
        with torch.no_grad():
            t.copy_(torch.randint(-127, 127, t.shape, device=t.device).to(t.dtype))

    def _init_quantized_bias(self, _: Any, arr: Any) -> None:
        _assign(arr, 0)

    def _init_weight(self, name: Any, arr: Any) -> None:
        """Fill a weight; every concrete initializer overrides this."""
        raise NotImplementedError(f"{type(self).__name__} must override _init_weight")

    def _init_default(self, name: Any, _: Any) -> None:
        raise ValueError(
            f"Unknown initialization pattern for {name}. Default initialization is now limited to "
            f'"weight", "bias", "gamma" (1.0), and "beta" (0.0) (plus the running/moving '
            f"statistics). Please use mx.sym.Variable(init=mx.init.*) or "
            f"Parameter(init=mx.init.*) to set the initialization pattern")


# Name suffix -> method, in MXNet's order; running/moving statistics added for names that
# reach the suffix path without an ``__init__`` attribute (MXNet's legacy path knows them).
_SUFFIXES: List[Tuple[str, str]] = [
    ("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"),
    ("beta", "_init_beta"),
    ("running_mean", "_init_zero"), ("moving_mean", "_init_zero"),
    ("running_var", "_init_one"), ("moving_var", "_init_one"),
    ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"),
    ("min", "_init_zero"), ("max", "_init_one"),
    ("weight_quantize", "_init_quantized_weight"), ("bias_quantize", "_init_quantized_bias"),
]
_LEGACY_SUFFIXES: List[Tuple[str, str]] = [
    ("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
    ("weight", "_init_weight"), ("moving_mean", "_init_zero"), ("moving_var", "_init_one"),
    ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"),
    ("running_mean", "_init_zero"), ("running_var", "_init_one"),
    ("min", "_init_zero"), ("max", "_init_one"),
]


# --------------------------------------------------------------------------------------------
# registry

# MXNet builds these on mx.registry (names are case-insensitive; re-registering a name warns)
register = _registry.get_register_func(Initializer, "initializer")
alias = _registry.get_alias_func(Initializer, "initializer")
_create = _registry.get_create_func(Initializer, "initializer")
_INITIALIZER_REGISTRY: Dict[str, Type[Initializer]] = _registry._registry_of(Initializer)


def create(*args: Any, **kwargs: Any) -> Initializer:
    """Make an initializer from an instance, a registered name (+ kwargs), a JSON dump
    ``'["name", {...}]'``, a JSON object ``'{"initializer": name, ...}'`` or a dict (MXNet's
    registry create); hybridnet also takes a ``(name, kwargs)`` pair and surrounding blanks."""
    if not args and "initializer" not in kwargs:
        return _create(**kwargs)  # the registry's error: no initializer given
    spec, args = (args[0], args[1:]) if args else (kwargs.pop("initializer"), ())
    if isinstance(spec, str):
        spec = spec.strip()
    if isinstance(spec, (list, tuple)) and len(spec) == 2 and isinstance(spec[0], str):
        return _create(spec[0], *args, **dict(spec[1] or {}), **kwargs)
    return _create(spec, *args, **kwargs)


# --------------------------------------------------------------------------------------------
# simple initializers

@register
@alias("zeros")
class Zero(Initializer):
    """Fill with 0."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, 0)


@register
@alias("ones")
class One(Initializer):
    """Fill with 1."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, 1)


@register
class Constant(Initializer):
    """Fill with ``value``: a scalar, or an array of (broadcastable to) the target shape."""

    def __init__(self, value: Any) -> None:
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, self.value, "Constant")

    def dumps(self) -> str:
        """As MXNet 1.9.1: an array value is stored in ``_kwargs`` as a nested list (so
        ``_kwargs`` itself is JSON-serializable afterwards); ``value`` keeps the array."""
        val = self._kwargs["value"]
        if not np.isscalar(val):
            self._kwargs["value"] = val.tolist() if isinstance(val, np.ndarray) else \
                val.asnumpy().tolist() if hasattr(val, "asnumpy") else val
        return super().dumps()


@register
class Uniform(Initializer):
    """Uniform samples from ``[-scale, scale]``."""

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _: Any, arr: Any) -> None:
        _uniform(arr, -self.scale, self.scale)


@register
class Normal(Initializer):
    """Normal samples with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma: float = 0.01) -> None:
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _: Any, arr: Any) -> None:
        _normal(arr, 0.0, self.sigma)


@register
class Orthogonal(Initializer):
    """``scale`` times an orthogonal matrix (Saxe et al. 2013): the weight viewed as
    ``(shape[0], prod(shape[1:]))`` has orthonormal rows (or columns when it is tall)."""

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform") -> None:
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise ValueError(f"Orthogonal: rand_type must be 'uniform' or 'normal', got {rand_type!r}")
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, name: Any, arr: Any) -> None:
        shape = _shape(arr)
        if len(shape) < 1 or int(np.prod(shape)) == 0:
            return
        nout, nin = shape[0], int(np.prod(shape[1:]))
        tmp = torch.empty((nout, nin), dtype=torch.float32)
        if self.rand_type == "uniform":
            tmp.uniform_(-1.0, 1.0)
        else:
            tmp.normal_(0.0, 1.0)
        a = tmp.numpy().astype(np.float64)
        u, _s, v = np.linalg.svd(a, full_matrices=False)
        res = u if u.shape == a.shape else v
        _assign(arr, self.scale * res.reshape(shape), "Orthogonal")


def _fans(name: Any, shape: Tuple[int, ...], who: str) -> Tuple[float, float]:
    if len(shape) < 2:
        raise ValueError(f"{who} initializer cannot be applied to vector {name} (shape {shape}). "
                         f"It requires at least 2D.")
    hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
    return shape[1] * hw_scale, shape[0] * hw_scale


@register
class Xavier(Initializer):
    """Xavier/Glorot: U(-c, c) or N(0, c^2) with ``c = sqrt(magnitude / n)`` where ``n`` is
    ``(fan_in + fan_out) / 2``, ``fan_in`` or ``fan_out`` (``factor_type`` avg/in/out);
    ``fan_in = shape[1] * prod(shape[2:])``, ``fan_out = shape[0] * prod(shape[2:])``."""

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg",
                 magnitude: float = 3) -> None:
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise ValueError(f"Unknown random type {rnd_type!r} for Xavier: use 'uniform' or "
                             f"'gaussian'")
        if factor_type not in ("avg", "in", "out"):
            raise ValueError(f"Incorrect factor type {factor_type!r} for Xavier: use 'avg', 'in' "
                             f"or 'out'")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _scale(self, name: Any, shape: Tuple[int, ...]) -> float:
        fan_in, fan_out = _fans(name, shape, type(self).__name__)
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        return math.sqrt(self.magnitude / factor)

    def _init_weight(self, name: Any, arr: Any) -> None:
        shape = _shape(arr)
        if int(np.prod(shape)) == 0 and len(shape) >= 2:
            return
        scale = self._scale(name, shape)
        if self.rnd_type == "uniform":
            _uniform(arr, -scale, scale)
        else:
            _normal(arr, 0.0, scale)


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for (P)ReLU nets: Gaussian Xavier with
    ``magnitude = 2 / (1 + slope**2)``."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25) -> None:
        magnitude = 2.0 / (1 + slope ** 2)
        super().__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


def _bilinear_kernel(shape: Tuple[int, ...]) -> np.ndarray:
    """MXNet's bilinear upsampling kernel for a 4-D ``(out, in, kh, kw)`` weight: value at
    (y, x) is ``(1 - |x/f - c|) * (1 - |y/f - c|)``, ``f = ceil(kw/2)``,
    ``c = (2f - 1 - f % 2) / (2f)``."""
    if len(shape) != 4:
        raise ValueError(f"Bilinear initializer needs a 4-D (out, in, kh, kw) weight, got shape "
                         f"{shape}")
    f = math.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    x = np.arange(shape[3], dtype=np.float64)
    y = np.arange(shape[2], dtype=np.float64)
    kern = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c)).astype(np.float32)
    return np.broadcast_to(kern, shape).copy()


@register
class Bilinear(Initializer):
    """Bilinear-interpolation kernel for upsampling (Deconvolution) weights."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: Any, arr: Any) -> None:
        _assign(arr, _bilinear_kernel(_shape(arr)), "Bilinear")


@register
class LSTMBias(Initializer):
    """LSTM bias: 0 everywhere except the forget gate (second quarter) set to ``forget_bias``."""

    def __init__(self, forget_bias: float = 1.0) -> None:
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name: Any, arr: Any) -> None:
        _assign(arr, 0.0)
        t = _tensor(arr)
        num_hidden = int(t.shape[0] / 4)
        with torch.no_grad():
            t[num_hidden:2 * num_hidden] = self.forget_bias


# --------------------------------------------------------------------------------------------
# FusedRNN: the flat parameter vector of the RNN operator (cuDNN layout)

_RNN_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
              "gru": ["_r", "_z", "_o"]}


def _fused_rnn_slices(size: int, num_hidden: int, num_layers: int, mode: str,
                      bidirectional: bool) -> List[Tuple[str, int, Tuple[int, ...]]]:
    """(name, offset, shape) of every unpacked weight/bias in the fused vector, in MXNet's
    ``FusedRNNCell.unpack_weights`` naming (``l0_i2h_f_weight``, ``r1_h2h_o_bias``...)."""
    if mode not in _RNN_GATES:
        raise ValueError(f"FusedRNN: mode must be one of {sorted(_RNN_GATES)}, got {mode!r}")
    gates = _RNN_GATES[mode]
    dirs = ["l", "r"] if bidirectional else ["l"]
    b, m, h = len(dirs), len(gates), int(num_hidden)
    per = b * m * h
    if h <= 0 or num_layers <= 0 or size % per:
        raise MXNetError(f"FusedRNN: a parameter vector of {size} elements does not fit "
                         f"num_hidden={num_hidden}, num_layers={num_layers}, mode={mode!r}, "
                         f"bidirectional={bidirectional}")
    num_input = size // per - (num_layers - 1) * (h + b * h + 2) - h - 2
    if num_input <= 0:
        raise MXNetError(f"FusedRNN: a parameter vector of {size} elements is too small for "
                         f"num_hidden={num_hidden}, num_layers={num_layers}, mode={mode!r}, "
                         f"bidirectional={bidirectional}")
    out: List[Tuple[str, int, Tuple[int, ...]]] = []
    p = 0
    for layer in range(num_layers):
        isz = num_input if layer == 0 else b * h
        for d in dirs:
            for g in gates:
                out.append((f"{d}{layer}_i2h{g}_weight", p, (h, isz)))
                p += h * isz
            for g in gates:
                out.append((f"{d}{layer}_h2h{g}_weight", p, (h, h)))
                p += h * h
    for layer in range(num_layers):
        for d in dirs:
            for conn in ("i2h", "h2h"):
                for g in gates:
                    out.append((f"{d}{layer}_{conn}{g}_bias", p, (h,)))
                    p += h
    if p != size:
        raise MXNetError(f"FusedRNN: invalid parameter size {size} (layout needs {p})")
    return out


@register
class FusedRNN(Initializer):
    """Initialize the fused parameter vector of the ``RNN`` operator: each unpacked weight is
    filled by ``init`` (or the global initializer when ``init`` is None), biases by its bias
    rule, and LSTM forget-gate biases (``*_f_bias``, both i2h and h2h) with ``forget_bias``."""

    def __init__(self, init: Any, num_hidden: int, num_layers: int, mode: str,
                 bidirectional: bool = False, forget_bias: float = 1.0) -> None:
        if init is not None and not isinstance(init, Initializer):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        if mode not in _RNN_GATES:
            raise ValueError(f"FusedRNN: mode must be one of {sorted(_RNN_GATES)}, got {mode!r}")
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc: Any, arr: Any) -> None:
        t = _tensor(arr)
        flat = t.reshape(-1)
        if flat.data_ptr() != t.data_ptr() or not t.is_contiguous():
            raise MXNetError("FusedRNN: the parameter array must be contiguous")
        global_init = getattr(desc, "global_init", None)
        layout = _fused_rnn_slices(flat.numel(), self._num_hidden, self._num_layers,
                                   self._mode, self._bidirectional)
        with torch.no_grad():
            for name, off, shape in layout:
                view = NDArray(flat[off:off + int(np.prod(shape))].view(shape))
                sub = InitDesc(name, global_init=global_init)
                if self._mode == "lstm" and name.endswith("_f_bias"):
                    _assign(view, self._forget_bias)
                elif self._init is not None:
                    self._init(sub, view)
                elif global_init is None or global_init is self:
                    raise MXNetError(f"FusedRNN({desc}): init is None and there is no other "
                                     f"global initializer to fall back to; pass init=, e.g. "
                                     f"mx.init.FusedRNN(mx.init.Xavier(), ...)")
                else:
                    global_init(sub, view)


# --------------------------------------------------------------------------------------------
# composite initializers (in MXNet plain objects; here Initializer subclasses, so that Gluon's
# ``create(default_init)`` accepts them)

@register
class Mixed(Initializer):
    """Pick the initializer by the first regular expression that ``re.match``-es the name."""

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Any]) -> None:
        patterns, initializers = list(patterns), list(initializers)
        if len(patterns) != len(initializers):
            raise ValueError(f"Mixed: {len(patterns)} patterns but {len(initializers)} "
                             f"initializers; give one initializer per pattern")
        inits = [create(i) if not isinstance(i, Initializer) else i for i in initializers]
        super().__init__(patterns=patterns, initializers=inits)
        self.map = list(zip([re.compile(p) for p in patterns], inits))

    def _match(self, name: Any) -> Initializer:
        for prog, init in self.map:
            if prog.match(str(name)):
                return init
        raise ValueError(f"Parameter name {name} did not match any pattern. Consider adding a "
                         f'".*" pattern at the end with a default Initializer.')

    def __call__(self, desc: Any, arr: Any) -> None:
        init = getattr(desc, "attrs", {}).get("__init__") if isinstance(desc, InitDesc) else None
        if init is self:
            self._init_weight(desc, arr)
        else:
            self._match(desc)(desc, arr)

    def _init_weight(self, desc: Any, arr: Any) -> None:
        # This Mixed is the array's own initializer: the matched one fills it like a weight.
        sub = self._match(desc)
        sub(_with_init(desc, sub), arr)


@register
class Load(Initializer):
    """Copy arrays from ``param`` (a dict name -> array, or a file loaded with ``nd.load``;
    ``arg:``/``aux:`` prefixes are dropped); names not found go to ``default_init``."""

    def __init__(self, param: Any, default_init: Any = None, verbose: bool = False) -> None:
        fname = None
        if isinstance(param, (str, os.PathLike)):
            from . import ndarray as _nd
            fname = os.fspath(param)
            param = _nd.load(fname)
        if not isinstance(param, dict):
            raise TypeError(f"Load: param must be a dict name -> NDArray or a file of named "
                            f"arrays, got {type(param).__name__}")
        if default_init is not None and not isinstance(default_init, Initializer):
            default_init = create(default_init)
        kwargs: Dict[str, Any] = {"param": fname, "default_init": default_init, "verbose": verbose}
        super().__init__(**kwargs)
        self.param: Dict[str, Any] = {}
        for name, value in param.items():
            key = name[4:] if name.startswith("arg:") or name.startswith("aux:") else name
            self.param[key] = value
        self.default_init = default_init
        self.verbose = verbose

    def dumps(self) -> str:
        if self._kwargs["param"] is None:
            raise MXNetError("Load: an initializer built from a dict cannot be serialized; build "
                             "it from a file name to get a JSON dump")
        return super().dumps()

    def __call__(self, desc: Any, arr: Any) -> None:
        name = str(desc)
        if name in self.param:
            value = self.param[name]
            vshape = tuple(value.shape)
            if _shape(arr) != vshape:
                raise MXNetError(f"Parameter {name} cannot be initialized from loading. Shape "
                                 f"mismatch, target {_shape(arr)} vs loaded {vshape}")
            _assign(arr, value, "Load")
            if self.verbose:
                logging.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise MXNetError(f"Cannot initialize {name}. Not found in loaded param and no default "
                             f"Initializer is provided; pass default_init=")
        if isinstance(desc, InitDesc) and desc.attrs.get("__init__") is self:
            desc = _with_init(desc, self.default_init)
        self.default_init(desc, arr)
        if self.verbose:
            logging.info("Initialized %s by default", name)

    def _init_weight(self, desc: Any, arr: Any) -> None:
        if isinstance(desc, InitDesc):
            desc = _with_init(desc, self)
        self(desc, arr)
