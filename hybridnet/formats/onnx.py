"""ONNX lowering of the graph IR (what MXNet 1.9.1's ``mx.onnx`` export does, on our IR).

Every operator's lowering is a *rule* ``rule(ctx) -> [onnx tensor name per output]`` kept in
``RULES`` keyed by the operator's ``OpDef`` (registered by canonical name, checked against the
registry at import); an operator may instead carry its own rule (``OpDef(onnx=...)``, stored as
``op.onnx_rule``), which wins. Every other operator is in ``NOT_EXPORTABLE`` with the reason
(``tests/formats/test_onnx_coverage.py`` fails for an operator in neither). A rule reads the node's typed
attributes (MXNet defaults filled in) and the inferred shapes, dtypes and dynamic dimensions of
its inputs and outputs from ``ctx``, and emits standard ONNX nodes (opset 13 and later) through
``ctx.add`` / ``ctx.const``.

This module is pure IR + NumPy + the optional ``onnx`` package (imported only when a model is
built). Shape inference is done by the caller (``hybridnet.onnx``), which passes per-entry
shapes, dtypes and the set of dimensions that vary with the dynamic input dimensions.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from .. import ops as _ops  # noqa: F401  (every operator family registered)
from ..base import MXNetError
from ..ir.graph import Graph, Node
from ..ops import registry as _registry
from ..ops.attrs import channels_last
from ._onnx_unsupported import NOT_EXPORTABLE

__all__ = ["RULES", "NOT_EXPORTABLE", "OnnxUnsupported", "rule", "lowering_for", "supported_ops",
           "graph_to_onnx", "DEFAULT_OPSET", "MIN_OPSET"]

DEFAULT_OPSET = 13
MIN_OPSET = 13
_INT64_MAX = 2 ** 63 - 1


class OnnxUnsupported(MXNetError):
    """An operator, or one attribute setting of it, that has no ONNX lowering."""


def _onnx() -> Any:
    try:
        import onnx  # noqa: F401  (the optional dependency)
        import onnx.numpy_helper  # noqa: F401
    except ImportError:  # pragma: no cover - exercised only without onnx
        raise ImportError("ONNX export needs the 'onnx' package: pip install onnx "
                          "(and onnxruntime to run the exported model)") from None
    return onnx


# ---- the rule table ---------------------------------------------------------------------------
RULES: dict = {}   # OpDef -> rule


def rule(*names: str) -> Callable[[Callable], Callable]:
    """Decorator: register a lowering for the operators with these canonical names (each must
    name a registered operator by its canonical name, once)."""
    def deco(fn: Callable) -> Callable:
        for n in names:
            op = _registry.get(n)
            if op.name != n:
                raise ValueError(f"ONNX rule for {n!r}: register it under the canonical name {op.name!r}")
            if op in RULES:
                raise ValueError(f"ONNX rule for {n} registered twice")
            RULES[op] = fn
        return fn
    return deco


def lowering_for(op: Any) -> Optional[Callable]:
    """The ONNX lowering of an OpDef: its own ``onnx_rule`` if set, else the table's."""
    own = getattr(op, "onnx_rule", None)
    return own if own is not None else RULES.get(op)


def supported_ops() -> list:
    """Canonical names of the operators that have an ONNX lowering (sorted)."""
    from ..ops import registry
    return sorted(op.name for op in registry.all_ops() if lowering_for(op) is not None)


def full_attrs(node: Node) -> dict:
    """The node's kernel attributes with MXNet's defaults filled in."""
    out = node.op.complete_attrs(node.kernel_attrs())
    out.pop("num_args", None)
    return out


# ---- small attribute helpers ------------------------------------------------------------------
def _ints(v: Any) -> tuple:
    if v is None:
        return ()
    if isinstance(v, (int, np.integer)):
        return (int(v),)
    return tuple(int(i) for i in v)


def _per_dim(v: Any, n: int, default: int) -> list:
    t = _ints(v)
    if not t:
        return [default] * n
    if len(t) == 1 and n > 1:
        return list(t) * n
    return list(t)


def _axis(a: int, nd: int, allow_end: bool = False) -> int:
    hi = nd + 1 if allow_end else nd
    a = int(a)
    return a + hi if a < 0 else a


def _prod(s: Iterable[int]) -> int:
    p = 1
    for d in s:
        p *= int(d)
    return p


# ---- emission -----------------------------------------------------------------------------------
class _Emitter:
    """Accumulates ONNX nodes and initializers with unique tensor names."""

    def __init__(self, opset: int):
        self.onnx = _onnx()
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.names: set = set()
        self.produced: set = set()
        self._consts: dict = {}

    def fresh(self, hint: str) -> str:
        hint = hint or "t"
        if hint not in self.names:
            self.names.add(hint)
            return hint
        i = 1
        while f"{hint}_{i}" in self.names:
            i += 1
        name = f"{hint}_{i}"
        self.names.add(name)
        return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], name: str,
             **attrs: Any) -> None:
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), list(outputs),
                                                     name=self.fresh(name), **attrs))
        self.produced.update(outputs)

    def initializer(self, arr: np.ndarray, name: str) -> None:
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(arr), name))

    def const(self, value: Any, hint: str, dtype: Any = None) -> str:
        arr = np.asarray(value, dtype=dtype)
        small = arr.size <= 64
        key = (arr.dtype.str, arr.shape, arr.tobytes()) if small else None
        if key is not None and key in self._consts:
            return self._consts[key]
        name = self.fresh(hint)
        self.initializer(arr, name)
        if key is not None:
            self._consts[key] = name
        return name


class Ctx:
    """What a lowering rule sees: one node, its inputs as ONNX tensor names, shape facts."""

    def __init__(self, em: _Emitter, node: Node, ins: list, in_info: list, out_info: list,
                 out_names: list):
        self.em = em
        self.node = node
        self.op = node.op.name
        self.attrs = full_attrs(node)
        self.ins = ins
        self._in = in_info      # [(shape, dtype, dyn)]
        self._out = out_info
        self._out_names = out_names
        self.opset = em.opset

    # -- facts
    def in_shape(self, i: int) -> tuple:
        return tuple(self._in[i][0])

    def in_dtype(self, i: int) -> np.dtype:
        return np.dtype(self._in[i][1])

    def in_dyn(self, i: int) -> frozenset:
        return self._in[i][2]

    def out_shape(self, k: int = 0) -> tuple:
        return tuple(self._out[k][0])

    def out_dtype(self, k: int = 0) -> np.dtype:
        return np.dtype(self._out[k][1])

    def out_dyn(self, k: int = 0) -> frozenset:
        return self._out[k][2]

    def out(self, k: int = 0) -> str:
        """The preferred ONNX name of output ``k`` (used by the rule's last node)."""
        return self._out_names[k]

    # -- emission
    def add(self, op_type: str, inputs: Sequence[str], out: Any = None, n: int = 1, **attrs: Any) -> Any:
        """Emit one ONNX node; returns its output name (or list of names when ``n > 1``).

        ``out`` is an output name (or list of names); None makes fresh ones.
        """
        if out is None:
            outs = [self.em.fresh(f"{self.node.name}_{op_type.lower()}") for _ in range(n)]
        elif isinstance(out, str):
            outs = [out]
        else:
            outs = list(out)
        self.em.node(op_type, inputs, outs, self.node.name, **attrs)
        return outs[0] if len(outs) == 1 and n == 1 and not isinstance(out, list) else outs

    def const(self, value: Any, dtype: Any = None, hint: str = "const") -> str:
        return self.em.const(value, f"{self.node.name}_{hint}", dtype)

    def ints(self, values: Sequence[int]) -> str:
        """A 1-D int64 constant (shapes, axes, starts...)."""
        return self.em.const(np.asarray(list(values), dtype=np.int64), f"{self.node.name}_i64")

    def scalar(self, value: Any, dtype: Any) -> str:
        return self.em.const(np.asarray(value, dtype=dtype), f"{self.node.name}_scalar")

    def fail(self, what: str) -> "OnnxUnsupported":
        return OnnxUnsupported(f"ONNX export: node {self.node.name!r} (operator {self.op}): {what}")

    # -- common patterns
    def onnx_type(self, dtype: Any) -> int:
        return _elem_type(self.em.onnx, np.dtype(dtype))

    def cast(self, x: str, dtype: Any, out: Any = None) -> str:
        return self.add("Cast", [x], out, to=self.onnx_type(dtype))

    def unsqueeze(self, x: str, axes: Sequence[int], out: Any = None) -> str:
        return self.add("Unsqueeze", [x, self.ints(axes)], out)

    def squeeze(self, x: str, axes: Sequence[int], out: Any = None) -> str:
        return self.add("Squeeze", [x, self.ints(axes)], out)

    def reduce(self, op_type: str, x: str, axes: Sequence[int], keepdims: bool, out: Any = None) -> str:
        """ReduceXxx over ``axes`` (axes as input from opset 18, ReduceSum from 13)."""
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.add(op_type, [x, self.ints(axes)], out, keepdims=int(keepdims))
        return self.add(op_type, [x], out, axes=list(axes), keepdims=int(keepdims))

    def reshape(self, x: str, shape: Sequence[int], dyn: Iterable[int] = (), out: Any = None,
                in_shape: Optional[Sequence[int]] = None, in_dyn: Iterable[int] = ()) -> str:
        """Reshape to the static ``shape`` whose ``dyn`` dims vary with the dynamic inputs:
        one dynamic dim becomes -1; more reuse ONNX's 0 (copy the input dim) where the input
        dim at the same position is dynamic too."""
        vec = [int(d) for d in shape]
        dyn = sorted(set(dyn))
        if len(dyn) == 1:
            vec[dyn[0]] = -1
        elif dyn:
            in_dyn = set(in_dyn)
            rest = []
            for d in dyn:
                if d in in_dyn and in_shape is not None and d < len(in_shape):
                    vec[d] = 0
                else:
                    rest.append(d)
            if len(rest) > 1:
                raise self.fail(f"cannot reshape to {tuple(shape)} with dynamic dims {dyn}; "
                                f"export with static input shapes (dynamic=False)")
            if rest:
                vec[rest[0]] = -1
        return self.add("Reshape", [x, self.ints(vec)], out)

    def transpose(self, x: str, perm: Sequence[int], out: Any = None) -> str:
        return self.add("Transpose", [x], out, perm=list(perm))


def _elem_type(onnx: Any, dt: np.dtype) -> int:
    if dt.name == "bfloat16":  # pragma: no cover - ml_dtypes spelling
        return onnx.TensorProto.BFLOAT16
    return int(onnx.helper.np_dtype_to_tensor_dtype(dt))


# ---- activations & elementwise ----------------------------------------------------------------
_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softsign": "Softsign",
          "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg",
          "floor": "Floor", "ceil": "Ceil", "sign": "Sign", "reciprocal": "Reciprocal",
          "sin": "Sin", "cos": "Cos", "tan": "Tan", "arcsin": "Asin", "arccos": "Acos",
          "arctan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "arcsinh": "Asinh",
          "arccosh": "Acosh", "arctanh": "Atanh", "erf": "Erf", "rint": "Round",
          "_copy": "Identity", "BlockGrad": "Identity", "make_loss": "Identity"}


@rule(*_UNARY)
def _unary(ctx: Ctx) -> list:
    return [ctx.add(_UNARY[ctx.op], [ctx.ins[0]], ctx.out())]


@rule("square")
def _square(ctx: Ctx) -> list:
    x = ctx.ins[0]
    return [ctx.add("Mul", [x, x], ctx.out())]


@rule("rsqrt")
def _rsqrt(ctx: Ctx) -> list:
    return [ctx.add("Reciprocal", [ctx.add("Sqrt", [ctx.ins[0]])], ctx.out())]


@rule("log1p", "expm1", "log2", "log10", "degrees", "radians")
def _unary_scaled(ctx: Ctx) -> list:
    x, dt = ctx.ins[0], ctx.in_dtype(0)
    if ctx.op == "log1p":
        return [ctx.add("Log", [ctx.add("Add", [x, ctx.scalar(1, dt)])], ctx.out())]
    if ctx.op == "expm1":
        return [ctx.add("Sub", [ctx.add("Exp", [x]), ctx.scalar(1, dt)], ctx.out())]
    if ctx.op in ("log2", "log10"):
        base = 2.0 if ctx.op == "log2" else 10.0
        return [ctx.add("Div", [ctx.add("Log", [x]), ctx.scalar(math.log(base), dt)], ctx.out())]
    f = 180.0 / math.pi if ctx.op == "degrees" else math.pi / 180.0
    return [ctx.add("Mul", [x, ctx.scalar(f, dt)], ctx.out())]


@rule("round", "fix", "trunc")
def _rounding(ctx: Ctx) -> list:
    x, dt = ctx.ins[0], ctx.in_dtype(0)
    a = ctx.add("Abs", [x])
    if ctx.op == "round":  # half away from zero
        a = ctx.add("Add", [a, ctx.scalar(0.5, dt)])
    return [ctx.add("Mul", [ctx.add("Sign", [x]), ctx.add("Floor", [a])], ctx.out())]


@rule("logical_not")
def _logical_not(ctx: Ctx) -> list:
    z = ctx.scalar(0, ctx.in_dtype(0))
    return [ctx.cast(ctx.add("Equal", [ctx.ins[0], z]), ctx.out_dtype(), ctx.out())]


@rule("hard_sigmoid")
def _hard_sigmoid(ctx: Ctx) -> list:
    return [ctx.add("HardSigmoid", [ctx.ins[0]], ctx.out(), alpha=float(ctx.attrs["alpha"]),
                    beta=float(ctx.attrs["beta"]))]


def _gelu(ctx: Ctx, x: str, dt: np.dtype, out: str) -> str:
    e = ctx.add("Erf", [ctx.add("Div", [x, ctx.scalar(math.sqrt(2.0), dt)])])
    h = ctx.add("Mul", [ctx.add("Add", [e, ctx.scalar(1.0, dt)]), ctx.scalar(0.5, dt)])
    return ctx.add("Mul", [x, h], out)


@rule("Activation")
def _activation(ctx: Ctx) -> list:
    t, x = ctx.attrs["act_type"], ctx.ins[0]
    simple = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
              "softsign": "Softsign"}
    if t in simple:
        return [ctx.add(simple[t], [x], ctx.out())]
    raise ctx.fail(f"act_type={t!r} has no ONNX lowering")


@rule("LeakyReLU")
def _leaky_relu(ctx: Ctx) -> list:
    a, x = ctx.attrs, ctx.ins[0]
    t = a["act_type"]
    if t == "leaky":
        return [ctx.add("LeakyRelu", [x], ctx.out(), alpha=float(a["slope"]))]
    if t == "prelu":
        g = ctx.ins[1]
        nd, gs = len(ctx.in_shape(0)), ctx.in_shape(1)
        if len(gs) > 1 and nd > len(gs):  # MXNet aligns a gamma of rank > 1 with data's leading axes
            g = ctx.unsqueeze(g, list(range(len(gs), nd)))
        elif len(gs) == 1 and _prod(gs) != 1 and nd > 2:
            g = ctx.unsqueeze(g, list(range(1, nd - 1)))  # (C,) -> (C, 1, ..., 1)
        return [ctx.add("PRelu", [x, g], ctx.out())]
    if t == "elu":
        return [ctx.add("Elu", [x], ctx.out(), alpha=float(a["slope"]))]
    if t == "selu":
        return [ctx.add("Selu", [x], ctx.out(), alpha=1.6732632423543772, gamma=1.0507009873554805)]
    if t == "gelu":
        return [_gelu(ctx, x, ctx.in_dtype(0), ctx.out())]
    if t == "rrelu":  # predict mode: the mean slope everywhere (the mask output)
        slope = (float(a["lower_bound"]) + float(a["upper_bound"])) / 2
        y = ctx.add("LeakyRelu", [x], ctx.out(), alpha=slope)
        value = ctx.em.onnx.numpy_helper.from_array(np.asarray([slope], dtype=ctx.in_dtype(0)), "value")
        return [y, ctx.add("ConstantOfShape", [ctx.add("Shape", [x])], ctx.out(1), value=value)]
    raise ctx.fail(f"act_type={t!r} has no ONNX lowering")


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "maximum": "Max",
           "minimum": "Min", "power": "Pow"}
_COMPARE = {"equal": ("Equal", False), "not_equal": ("Equal", True), "greater": ("Greater", False),
            "greater_equal": ("GreaterOrEqual", False), "lesser": ("Less", False),
            "lesser_equal": ("LessOrEqual", False)}
_LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}


def _binary_kind(name: str) -> str:
    return name.split("_", 1)[1]


def _same_dtype(ctx: Ctx, names: list, dtypes: list, want: np.dtype) -> list:
    return [n if d == want else ctx.cast(n, want) for n, d in zip(names, dtypes)]


@rule(*[f"elemwise_{k}" for k in ("add", "sub", "mul", "div")],
      *[f"broadcast_{k}" for k in _BINARY], "broadcast_hypot", "broadcast_mod")
def _binary(ctx: Ctx) -> list:
    kind = _binary_kind(ctx.op)
    dt = ctx.out_dtype()
    a, b = _same_dtype(ctx, ctx.ins[:2], [ctx.in_dtype(0), ctx.in_dtype(1)], dt)
    if kind in _BINARY:
        return [ctx.add(_BINARY[kind], [a, b], ctx.out())]
    if kind == "hypot":
        s = ctx.add("Add", [ctx.add("Mul", [a, a]), ctx.add("Mul", [b, b])])
        return [ctx.add("Sqrt", [s], ctx.out())]
    # mod: Python-style remainder a - floor(a / b) * b (floats), ONNX Mod(fmod=0) for integers
    if dt.kind in "iu":
        return [ctx.add("Mod", [a, b], ctx.out(), fmod=0)]
    q = ctx.add("Floor", [ctx.add("Div", [a, b])])
    return [ctx.add("Sub", [a, ctx.add("Mul", [q, b])], ctx.out())]


@rule(*[f"broadcast_{k}" for k in list(_COMPARE) + list(_LOGICAL)])
def _compare(ctx: Ctx) -> list:
    kind = _binary_kind(ctx.op)
    a, b = ctx.ins[:2]
    da, db = ctx.in_dtype(0), ctx.in_dtype(1)
    if kind in _LOGICAL:
        za, zb = ctx.scalar(0, da), ctx.scalar(0, db)
        ba = ctx.add("Not", [ctx.add("Equal", [a, za])])
        bb = ctx.add("Not", [ctx.add("Equal", [b, zb])])
        r = ctx.add(_LOGICAL[kind], [ba, bb])
    else:
        if da != db:
            common = np.promote_types(da, db)
            a, b = _same_dtype(ctx, [a, b], [da, db], common)
        op, neg = _COMPARE[kind]
        r = ctx.add(op, [a, b])
        if neg:
            r = ctx.add("Not", [r])
    return [ctx.cast(r, ctx.out_dtype(), ctx.out())]


@rule("add_n")
def _add_n(ctx: Ctx) -> list:
    if len(ctx.ins) == 1:
        return [ctx.add("Identity", ctx.ins, ctx.out())]
    return [ctx.add("Sum", list(ctx.ins), ctx.out())]


# scalar forms: torch computes integer arrays in float and casts back (see ops/elementwise.py)
_SCALAR_ARITH = {"_plus_scalar": "Add", "_minus_scalar": "Sub", "_mul_scalar": "Mul",
                 "_div_scalar": "Div", "_power_scalar": "Pow", "_maximum_scalar": "Max",
                 "_minimum_scalar": "Min"}
_SCALAR_REV = {"_rminus_scalar": "Sub", "_rdiv_scalar": "Div", "_rpower_scalar": "Pow"}
_SCALAR_CMP = {f"_{k}_scalar": v for k, v in _COMPARE.items()}
_SCALAR_LOGIC = {f"_{k}_scalar": v for k, v in _LOGICAL.items()}


@rule(*_SCALAR_ARITH, *_SCALAR_REV, *_SCALAR_CMP, *_SCALAR_LOGIC, "_mod_scalar", "_rmod_scalar",
      "_hypot_scalar")
def _scalar(ctx: Ctx) -> list:
    x, dt, s = ctx.ins[0], ctx.in_dtype(0), float(ctx.attrs["scalar"])
    name = ctx.op
    if name in _SCALAR_LOGIC:
        b = ctx.add("Not", [ctx.add("Equal", [x, ctx.scalar(0, dt)])])
        r = ctx.add(_SCALAR_LOGIC[name], [b, ctx.const(np.array(s != 0.0), hint="bool")])
        return [ctx.cast(r, dt, ctx.out())]
    integer = dt.kind in "iub"
    work = np.dtype(np.float32) if integer else dt
    xw = ctx.cast(x, work) if integer else x
    c = ctx.scalar(s, work)
    last = None if integer else ctx.out()
    if name in _SCALAR_CMP:
        op, neg = _SCALAR_CMP[name]
        r = ctx.add(op, [xw, c])
        if neg:
            r = ctx.add("Not", [r])
        return [ctx.cast(r, dt, ctx.out())]
    if name in _SCALAR_ARITH:
        y = ctx.add(_SCALAR_ARITH[name], [xw, c], last)
    elif name in _SCALAR_REV:
        y = ctx.add(_SCALAR_REV[name], [c, xw], last)
    elif name == "_hypot_scalar":
        y = ctx.add("Sqrt", [ctx.add("Add", [ctx.add("Mul", [xw, xw]), ctx.scalar(s * s, work)])], last)
    else:  # _mod_scalar / _rmod_scalar: a - floor(a / b) * b
        a, b = (xw, c) if name == "_mod_scalar" else (c, xw)
        q = ctx.add("Floor", [ctx.add("Div", [a, b])])
        y = ctx.add("Sub", [a, ctx.add("Mul", [q, b])], last)
    return [ctx.cast(y, dt, ctx.out()) if integer else y]


@rule("clip")
def _clip(ctx: Ctx) -> list:
    dt = ctx.in_dtype(0)
    lo, hi = ctx.scalar(ctx.attrs["a_min"], dt), ctx.scalar(ctx.attrs["a_max"], dt)
    return [ctx.add("Clip", [ctx.ins[0], lo, hi], ctx.out())]


@rule("Cast", "amp_cast")
def _cast(ctx: Ctx) -> list:
    return [ctx.cast(ctx.ins[0], ctx.out_dtype(), ctx.out())]


@rule("Dropout")
def _dropout(ctx: Ctx) -> list:
    if ctx.attrs["mode"] == "always" and float(ctx.attrs["p"]) > 0:
        raise ctx.fail("mode='always' drops at inference time; ONNX export is inference only")
    return [ctx.add("Identity", [ctx.ins[0]], ctx.out())]


@rule("LinearRegressionOutput", "MAERegressionOutput", "LogisticRegressionOutput")
def _regression_head(ctx: Ctx) -> list:
    op = "Sigmoid" if ctx.op == "LogisticRegressionOutput" else "Identity"
    return [ctx.add(op, [ctx.ins[0]], ctx.out())]


# ---- creation -----------------------------------------------------------------------------------
@rule("zeros_like", "ones_like", "_full_like")
def _fill_like(ctx: Ctx) -> list:
    v = {"zeros_like": 0, "ones_like": 1}.get(ctx.op)
    if v is None:
        v = ctx.attrs["fill_value"]
    dt = ctx.out_dtype()
    shape = ctx.add("Shape", [ctx.ins[0]])
    value = ctx.em.onnx.numpy_helper.from_array(np.asarray([v], dtype=dt), "value")
    return [ctx.add("ConstantOfShape", [shape], ctx.out(), value=value)]


@rule("_zeros", "_ones", "_full", "_arange", "_eye", "_linspace")
def _creation(ctx: Ctx) -> list:
    shape, dt = ctx.out_shape(), ctx.out_dtype()
    a = ctx.attrs
    if ctx.op == "_zeros":
        arr = np.zeros(shape, dt)
    elif ctx.op == "_ones":
        arr = np.ones(shape, dt)
    elif ctx.op == "_full":
        arr = np.full(shape, a["value"], dt)
    elif ctx.op == "_arange":
        start, stop, step = a["start"], a.get("stop"), a.get("step", 1.0)
        if stop is None:
            start, stop = 0, start
        n = int(math.ceil((stop - start) / step))
        arr = np.repeat(np.arange(n, dtype=np.float64) * step + start, int(a.get("repeat", 1))).astype(dt)
    elif ctx.op == "_eye":
        arr = np.eye(int(a["N"]), int(a["M"]) or int(a["N"]), int(a["k"]), dtype=dt)
    else:
        arr = np.linspace(a["start"], a["stop"], int(a["num"]), endpoint=bool(a["endpoint"])).astype(dt)
    if tuple(arr.shape) != shape:
        raise ctx.fail(f"computed constant of shape {arr.shape}, expected {shape}")
    return [ctx.add("Identity", [ctx.const(arr, hint="value")], ctx.out())]


# ---- nn -----------------------------------------------------------------------------------------
@rule("FullyConnected")
def _fully_connected(ctx: Ctx) -> list:
    a = ctx.attrs
    x, w = ctx.ins[0], ctx.ins[1]
    bias = ctx.ins[2] if not a["no_bias"] and len(ctx.ins) > 2 else None
    nd = len(ctx.in_shape(0))
    if a["flatten"]:
        if nd != 2:
            x = ctx.add("Flatten", [x], axis=1)
        return [ctx.add("Gemm", [x, w] + ([bias] if bias else []), ctx.out(), transB=1)]
    wt = ctx.transpose(w, [1, 0])
    y = ctx.add("MatMul", [x, wt], None if bias else ctx.out())
    return [ctx.add("Add", [y, bias], ctx.out())] if bias else [y]


def _to_channels_first(ctx: Ctx, x: str, nd: int) -> str:
    return ctx.transpose(x, [0, nd - 1] + list(range(1, nd - 1)))


def _to_channels_last(ctx: Ctx, x: str, nd: int, out: str) -> str:
    return ctx.transpose(x, [0] + list(range(2, nd)) + [1], out)


@rule("Convolution", "Deconvolution")
def _convolution(ctx: Ctx) -> list:
    a = ctx.attrs
    x, w = ctx.ins[0], ctx.ins[1]
    default_no_bias = ctx.op == "Deconvolution"
    bias = ctx.ins[2] if not a.get("no_bias", default_no_bias) and len(ctx.ins) > 2 else None
    shape = ctx.in_shape(0)
    nd = len(shape)
    n = nd - 2
    cl = channels_last(a.get("layout"))
    if cl:
        x = _to_channels_first(ctx, x, nd)
        w = _to_channels_first(ctx, w, nd)
        shape = (shape[0], shape[-1]) + tuple(shape[1:-1])
    k = _per_dim(a["kernel"], n, 1)
    s = _per_dim(a["stride"], n, 1)
    d = _per_dim(a["dilate"], n, 1)
    p = _per_dim(a["pad"], n, 0)
    attrs: dict = dict(kernel_shape=k, strides=s, dilations=d, group=int(a["num_group"]))
    op = "Conv"
    if ctx.op == "Deconvolution":
        op = "ConvTranspose"
        adj = _per_dim(a["adj"], n, 0)
        ts = _ints(a["target_shape"])
        if ts and any(ts):
            ts = _per_dim(ts, n, 0)
            p, adj = [], []
            for i in range(n):
                total = s[i] * (shape[2 + i] - 1) + d[i] * (k[i] - 1) + 1 - ts[i]
                adj.append(total % 2)
                p.append((total + 1) // 2)
        attrs["output_padding"] = adj
    attrs["pads"] = p + p
    y = ctx.add(op, [x, w] + ([bias] if bias else []), None if cl else ctx.out(), **attrs)
    return [_to_channels_last(ctx, y, nd, ctx.out()) if cl else y]


def _pool_counts(k: list, s: list, sp: Sequence[int], outs: Sequence[int], left: list, hi: list) -> np.ndarray:
    """MXNet's averaging divisor per output position: the window's cells inside [lo, hi) of
    the padded input (lo = left pad when the padding is not counted), at least 1."""
    div = np.ones([1, 1] + list(outs), dtype=np.float64)
    for i in range(len(k)):
        start = np.arange(outs[i]) * s[i]
        c = np.clip(np.minimum(start + k[i], hi[i]) - np.maximum(start, left[i]), 0, None)
        shape = [1] * (len(k) + 2)
        shape[2 + i] = outs[i]
        div = div * c.reshape(shape)
    return np.maximum(div, 1)


def _lp_root(ctx: Ctx, sums: str, p: int, dt: np.dtype, out: Optional[str]) -> str:
    if p == 1:
        return ctx.add("Identity", [sums], out)
    if p == 2:
        return ctx.add("Sqrt", [sums], out)
    r = ctx.add("Pow", [ctx.add("Abs", [sums]), ctx.scalar(1.0 / p, dt)])
    return ctx.add("Mul", [ctx.add("Sign", [sums]), r], out)


def _lp_power(ctx: Ctx, x: str, p: int, dt: np.dtype) -> str:
    if p == 1:
        return x
    if p == 2:
        return ctx.add("Mul", [x, x])
    return ctx.add("Pow", [x, ctx.scalar(float(p), dt)])


@rule("Pooling")
def _pooling(ctx: Ctx) -> list:
    a = ctx.attrs
    x = ctx.ins[0]
    shape, out_shape = ctx.in_shape(0), ctx.out_shape()
    nd = len(shape)
    n = nd - 2
    dt = ctx.in_dtype(0)
    cl = channels_last(a.get("layout"))
    if cl:
        x = _to_channels_first(ctx, x, nd)
        shape = (shape[0], shape[-1]) + tuple(shape[1:-1])
        out_shape = (out_shape[0], out_shape[-1]) + tuple(out_shape[1:-1])
    last = None if cl else ctx.out()
    pt = a["pool_type"]
    pv = int(a["p_value"] or 1) if pt == "lp" else 1
    if pt == "lp" and pv not in (1, 2, 3):
        raise ctx.fail(f"pool_type='lp' needs p_value 1, 2 or 3, got {pv}")
    static = not (ctx.in_dyn(0) & set(range(2, nd)))
    if a["global_pool"]:
        if pt == "max":
            y = ctx.add("GlobalMaxPool", [x], last)
        elif pt == "avg":
            y = ctx.add("GlobalAveragePool", [x], last)
        else:  # sum / lp: MXNet sums x^p (no abs) and takes a signed root
            sums = ctx.reduce("ReduceSum", _lp_power(ctx, x, pv, dt), list(range(2, nd)), True,
                              last if pt == "sum" else None)
            y = sums if pt == "sum" else _lp_root(ctx, sums, pv, dt, last)
        return [_to_channels_last(ctx, y, nd, ctx.out()) if cl else y]
    k = _per_dim(a["kernel"], n, 1)
    s = _per_dim(a["stride"], n, 1)
    p = _per_dim(a["pad"], n, 0)
    sp, outs = shape[2:], out_shape[2:]
    if a["pooling_convention"] == "same":
        tot = [max((outs[i] - 1) * s[i] + k[i] - sp[i], 0) for i in range(n)]
        left = [t // 2 for t in tot]
        region = [tot[i] - left[i] for i in range(n)]
    else:
        left, region = list(p), list(p)
    # the right padding that makes ONNX's floor formula give MXNet's output size
    right = [max((outs[i] - 1) * s[i] + k[i] - sp[i] - left[i], 0) for i in range(n)]
    if not static and right != region:
        raise ctx.fail("pooling whose windows pass the padding needs static spatial dims")
    overhang = any(right[i] > region[i] for i in range(n))
    pads_ok = all(left[i] < k[i] and right[i] < k[i] for i in range(n))  # ONNX: pads < kernel
    if pt == "max":
        if not pads_ok:
            x = ctx.add("Pad", [x, ctx.ints([0, 0] + left + [0, 0] + right), ctx.scalar(-np.inf, dt)],
                        mode="constant")
            left, right = [0] * n, [0] * n
        y = ctx.add("MaxPool", [x], last, kernel_shape=k, strides=s, pads=left + right)
    elif pt == "avg" and pads_ok and not a["count_include_pad"]:
        y = ctx.add("AveragePool", [x], last, kernel_shape=k, strides=s, pads=left + right,
                    count_include_pad=0)
    elif pt == "avg" and pads_ok and not overhang:
        y = ctx.add("AveragePool", [x], last, kernel_shape=k, strides=s, pads=left + right,
                    count_include_pad=1)
    else:
        # general case: window sums as a depthwise all-ones convolution over the zero-padded
        # input (Conv, unlike the pooling ops, takes pads >= kernel), then MXNet's divisor
        if not static or 1 in ctx.in_dyn(0):
            raise ctx.fail(f"{pt} pooling with this padding needs static channel and spatial dims")
        c = int(shape[1])
        ones = ctx.const(np.ones([c, 1] + k, dtype=dt), hint="window")
        src = _lp_power(ctx, x, pv, dt)
        if pt == "avg":
            sums = ctx.add("Conv", [src, ones], kernel_shape=k, strides=s, pads=left + right, group=c)
            if a["count_include_pad"]:
                div = _pool_counts(k, s, sp, outs, [0] * n, [sp[i] + left[i] + region[i] for i in range(n)])
            else:
                div = _pool_counts(k, s, sp, outs, left, [left[i] + sp[i] for i in range(n)])
            y = ctx.add("Mul", [sums, ctx.const((1.0 / div).astype(dt), hint="scale")], last)
        else:
            sums = ctx.add("Conv", [src, ones], last if pt == "sum" else None, kernel_shape=k, strides=s,
                           pads=left + right, group=c)
            y = sums if pt == "sum" else _lp_root(ctx, sums, pv, dt, last)
    return [_to_channels_last(ctx, y, nd, ctx.out()) if cl else y]


def _softmax_like(ctx: Ctx, log: bool, neg: bool) -> list:
    a = ctx.attrs
    x = ctx.ins[0]
    nd = len(ctx.in_shape(0))
    ax = _axis(a["axis"], nd)
    if a.get("dtype") is not None:
        x = ctx.cast(x, np.dtype(a["dtype"]))
    dt = np.dtype(a["dtype"]) if a.get("dtype") is not None else ctx.in_dtype(0)
    if neg:
        x = ctx.add("Neg", [x])
    t = a.get("temperature")
    if t is not None and float(t) != 1.0:
        x = ctx.add("Div", [x, ctx.scalar(float(t), dt)])
    if not a.get("use_length"):
        return [ctx.add("LogSoftmax" if log else "Softmax", [x], ctx.out(), axis=ax)]
    # masked: positions at or past length[...] along the axis get -max before and 0 after
    m = ctx.in_shape(0)[ax]
    if ax in ctx.in_dyn(0):
        raise ctx.fail("use_length along a dynamic axis needs static input shapes")
    pos = np.arange(m, dtype=np.int64).reshape([m] + [1] * (nd - 1 - ax))
    length = ctx.cast(ctx.ins[1], np.int64) if ctx.in_dtype(1) != np.int64 else ctx.ins[1]
    mask = ctx.add("Less", [ctx.const(pos, hint="positions"), ctx.unsqueeze(length, [ax])])
    xm = ctx.add("Where", [mask, x, ctx.scalar(np.finfo(dt).min, dt)])
    y = ctx.add("LogSoftmax" if log else "Softmax", [xm], axis=ax)
    return [ctx.add("Where", [mask, y, ctx.scalar(0, dt)], ctx.out())]


@rule("softmax")
def _softmax(ctx: Ctx) -> list:
    return _softmax_like(ctx, False, False)


@rule("log_softmax")
def _log_softmax(ctx: Ctx) -> list:
    return _softmax_like(ctx, True, False)


@rule("softmin")
def _softmin(ctx: Ctx) -> list:
    return _softmax_like(ctx, False, True)


def _softmax_flat(ctx: Ctx, x: str) -> str:
    """softmax over all non-batch axes: Flatten, Softmax(axis=1), reshape back."""
    shape = ctx.in_shape(0)
    if len(shape) == 2:
        return ctx.add("Softmax", [x], ctx.out(), axis=1)
    s = ctx.add("Softmax", [ctx.add("Flatten", [x], axis=1)], axis=1)
    return ctx.reshape(s, shape, ctx.in_dyn(0), ctx.out())


@rule("SoftmaxActivation")
def _softmax_activation(ctx: Ctx) -> list:
    if ctx.attrs["mode"] == "channel":
        return [ctx.add("Softmax", [ctx.ins[0]], ctx.out(), axis=1)]
    return [_softmax_flat(ctx, ctx.ins[0])]


@rule("SoftmaxOutput")
def _softmax_output(ctx: Ctx) -> list:
    a, x = ctx.attrs, ctx.ins[0]
    nd = len(ctx.in_shape(0))
    if a["multi_output"]:
        return [ctx.add("Softmax", [x], ctx.out(), axis=1 if nd > 1 else 0)]
    if a["preserve_shape"]:
        return [ctx.add("Softmax", [x], ctx.out(), axis=nd - 1)]
    return [_softmax_flat(ctx, x)]


@rule("Embedding")
def _embedding(ctx: Ctx) -> list:
    idx = ctx.ins[0]
    if ctx.in_dtype(0) != np.int64:
        idx = ctx.cast(idx, np.int64)
    n = ctx.in_shape(1)[0]
    idx = ctx.add("Clip", [idx, ctx.scalar(0, np.int64), ctx.scalar(n - 1, np.int64)])
    return [ctx.add("Gather", [ctx.ins[1], idx], ctx.out(), axis=0)]


# ---- normalization ------------------------------------------------------------------------------
def _bn_rule(ctx: Ctx) -> list:
    a = ctx.attrs
    x, gamma, beta, mean, var = ctx.ins[:5]
    nd = len(ctx.in_shape(0))
    ax = _axis(a.get("axis", 1), nd)
    c = ctx.in_shape(0)[ax]
    dt = ctx.in_dtype(3)
    eps = float(a["eps"])
    if a["fix_gamma"]:
        gamma = ctx.const(np.ones((c,), dtype=ctx.in_dtype(1)), hint="ones")
    moved = ax != 1 and nd > 1
    perm = list(range(nd))
    if moved:
        perm = [0, ax] + [i for i in range(1, nd) if i != ax]
        x = ctx.transpose(x, perm)
    if nd == 1:
        raise ctx.fail("BatchNorm of 1-D data has no ONNX lowering")
    y = ctx.add("BatchNormalization", [x, gamma, beta, mean, var], None if moved else ctx.out(),
                epsilon=eps)
    if moved:
        y = ctx.transpose(y, [int(i) for i in np.argsort(perm)], ctx.out())
    outs = [y]
    if a.get("output_mean_var"):
        outs.append(ctx.add("Identity", [mean], ctx.out(1)))
        std = ctx.add("Sqrt", [ctx.add("Add", [var, ctx.scalar(eps, dt)])])
        outs.append(ctx.add("Reciprocal", [std], ctx.out(2)))
    return outs


rule("BatchNorm", "BatchNorm_v1")(_bn_rule)


def _param_at_axis(ctx: Ctx, p: str, ax: int, nd: int) -> str:
    """A (C,) parameter shaped to broadcast along axis ``ax`` of an nd-array."""
    return p if ax == nd - 1 else ctx.unsqueeze(p, list(range(1, nd - ax)))


@rule("LayerNorm")
def _layer_norm(ctx: Ctx) -> list:
    a = ctx.attrs
    x, gamma, beta = ctx.ins[:3]
    nd = len(ctx.in_shape(0))
    ax = _axis(a["axis"], nd)
    dt = ctx.in_dtype(0)
    eps = float(a["eps"])
    want_stats = bool(a.get("output_mean_var"))
    if ctx.opset >= 17 and ax == nd - 1 and not want_stats:
        return [ctx.add("LayerNormalization", [x, gamma, beta], ctx.out(), axis=-1, epsilon=eps)]
    mean = ctx.reduce("ReduceMean", x, [ax], True, ctx.out(1) if want_stats else None)
    d = ctx.add("Sub", [x, mean])
    var = ctx.reduce("ReduceMean", ctx.add("Mul", [d, d]), [ax], True)
    std = ctx.add("Sqrt", [ctx.add("Add", [var, ctx.scalar(eps, dt)])], ctx.out(2) if want_stats else None)
    y = ctx.add("Div", [d, std])
    y = ctx.add("Mul", [y, _param_at_axis(ctx, gamma, ax, nd)])
    out = ctx.add("Add", [y, _param_at_axis(ctx, beta, ax, nd)], ctx.out())
    return [out, mean, std] if want_stats else [out]


@rule("InstanceNorm")
def _instance_norm(ctx: Ctx) -> list:
    return [ctx.add("InstanceNormalization", ctx.ins[:3], ctx.out(), epsilon=float(ctx.attrs["eps"]))]


@rule("GroupNorm")
def _group_norm(ctx: Ctx) -> list:
    a = ctx.attrs
    x, gamma, beta = ctx.ins[:3]
    shape = ctx.in_shape(0)
    nd, C = len(shape), shape[1]
    G = int(a["num_groups"])
    dt = ctx.in_dtype(0)
    eps = float(a["eps"])
    xg = ctx.add("Reshape", [x, ctx.ints([0, G, -1])])
    mean = ctx.reduce("ReduceMean", xg, [2], True)
    d = ctx.add("Sub", [xg, mean])
    var = ctx.reduce("ReduceMean", ctx.add("Mul", [d, d]), [2], True)
    std = ctx.add("Sqrt", [ctx.add("Add", [var, ctx.scalar(eps, dt)])])
    yg = ctx.add("Div", [d, std])
    if _prod(ctx.in_shape(1)) == C:  # per-channel scale
        y = ctx.reshape(yg, shape, ctx.in_dyn(0), in_shape=None)
        g, b = _param_at_axis(ctx, gamma, 1, nd), _param_at_axis(ctx, beta, 1, nd)
        out = ctx.add("Add", [ctx.add("Mul", [y, g]), b], ctx.out())
    else:  # MXNet 1.x: one scale per group
        g, b = ctx.unsqueeze(gamma, [1]), ctx.unsqueeze(beta, [1])
        z = ctx.add("Add", [ctx.add("Mul", [yg, g]), b])
        out = ctx.reshape(z, shape, ctx.in_dyn(0), ctx.out())
    if a.get("output_mean_var"):
        m = ctx.squeeze(mean, [2], ctx.out(1))
        s = ctx.squeeze(std, [2], ctx.out(2))
        return [out, m, s]
    return [out]


@rule("L2Normalization")
def _l2_normalization(ctx: Ctx) -> list:
    a, x = ctx.attrs, ctx.ins[0]
    nd = len(ctx.in_shape(0))
    mode = a["mode"]
    axes = {"instance": list(range(1, nd)), "channel": [1], "spatial": list(range(2, nd))}[mode]
    dt = ctx.in_dtype(0)
    ss = ctx.reduce("ReduceSum", ctx.add("Mul", [x, x]), axes, True)
    norm = ctx.add("Sqrt", [ctx.add("Add", [ss, ctx.scalar(float(a["eps"]), dt)])])
    return [ctx.add("Div", [x, norm], ctx.out())]


# ---- shape ------------------------------------------------------------------------------------
@rule("Flatten")
def _flatten(ctx: Ctx) -> list:
    return [ctx.add("Flatten", [ctx.ins[0]], ctx.out(), axis=1)]


@rule("Reshape", "reshape_like")
def _reshape(ctx: Ctx) -> list:
    return [ctx.reshape(ctx.ins[0], ctx.out_shape(), ctx.out_dyn(), ctx.out(),
                        in_shape=ctx.in_shape(0), in_dyn=ctx.in_dyn(0))]


@rule("transpose")
def _transpose(ctx: Ctx) -> list:
    nd = len(ctx.in_shape(0))
    axes = _ints(ctx.attrs["axes"])
    perm = [_axis(i, nd) for i in axes] if axes else list(reversed(range(nd)))
    return [ctx.transpose(ctx.ins[0], perm, ctx.out())]


@rule("SwapAxis")
def _swapaxis(ctx: Ctx) -> list:
    nd = len(ctx.in_shape(0))
    perm = list(range(nd))
    i, j = _axis(ctx.attrs["dim1"], nd), _axis(ctx.attrs["dim2"], nd)
    perm[i], perm[j] = perm[j], perm[i]
    return [ctx.transpose(ctx.ins[0], perm, ctx.out())]


@rule("expand_dims")
def _expand_dims(ctx: Ctx) -> list:
    nd = len(ctx.in_shape(0))
    return [ctx.unsqueeze(ctx.ins[0], [_axis(ctx.attrs["axis"], nd, allow_end=True)], ctx.out())]


@rule("squeeze")
def _squeeze(ctx: Ctx) -> list:
    shape = ctx.in_shape(0)
    nd = len(shape)
    axis = ctx.attrs["axis"]
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1 and i not in ctx.in_dyn(0)]
    else:
        axes = sorted(_axis(i, nd) for i in _ints(axis))
    if not axes:
        return [ctx.add("Identity", [ctx.ins[0]], ctx.out())]
    if len(axes) == nd:  # MXNet keeps shape (1,) where NumPy would give a scalar
        return [ctx.add("Reshape", [ctx.ins[0], ctx.ints([1])], ctx.out())]
    return [ctx.squeeze(ctx.ins[0], axes, ctx.out())]


@rule("Concat")
def _concat(ctx: Ctx) -> list:
    nd = len(ctx.in_shape(0))
    return [ctx.add("Concat", list(ctx.ins), ctx.out(), axis=_axis(ctx.attrs["dim"], nd))]


@rule("stack")
def _stack(ctx: Ctx) -> list:
    nd = len(ctx.in_shape(0))
    ax = _axis(ctx.attrs["axis"], nd, allow_end=True)
    parts = [ctx.unsqueeze(x, [ax]) for x in ctx.ins]
    return [ctx.add("Concat", parts, ctx.out(), axis=ax)]


def _split(ctx: Ctx, ax: int, sizes: list, squeeze: bool) -> list:
    n = len(sizes)
    if n == 1:
        parts = [ctx.add("Identity", [ctx.ins[0]], None if squeeze else ctx.out(0))]
    else:
        names = None if squeeze else [ctx.out(i) for i in range(n)]
        parts = ctx.add("Split", [ctx.ins[0], ctx.ints(sizes)], names, n=n, axis=ax)
    if squeeze:
        parts = [ctx.squeeze(p, [ax], ctx.out(i)) for i, p in enumerate(parts)]
    return parts


@rule("SliceChannel")
def _slice_channel(ctx: Ctx) -> list:
    a = ctx.attrs
    shape = ctx.in_shape(0)
    ax = _axis(a["axis"], len(shape))
    if ax in ctx.in_dyn(0):
        raise ctx.fail("split along a dynamic axis needs static input shapes")
    n = int(a["num_outputs"])
    return _split(ctx, ax, [shape[ax] // n] * n, bool(a["squeeze_axis"]))


@rule("_split_v2")
def _split_v2(ctx: Ctx) -> list:
    a = ctx.attrs
    shape = ctx.in_shape(0)
    ax = _axis(a["axis"], len(shape))
    size = shape[ax]
    sections = int(a.get("sections") or 0)
    if sections > 0:
        bounds = [i * (size // sections) for i in range(sections)] + [size]
    else:
        bounds = list(_ints(a["indices"])) + [size]
    return _split(ctx, ax, [bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)],
                  bool(a["squeeze_axis"]))


@rule("slice_axis")
def _slice_axis(ctx: Ctx) -> list:
    a = ctx.attrs
    nd = len(ctx.in_shape(0))
    ax = _axis(a["axis"], nd)
    end = _INT64_MAX if a["end"] is None else int(a["end"])
    return [ctx.add("Slice", [ctx.ins[0], ctx.ints([int(a["begin"])]), ctx.ints([end]), ctx.ints([ax])],
                    ctx.out())]


@rule("slice")
def _slice(ctx: Ctx) -> list:
    a = ctx.attrs
    begin, end = tuple(a["begin"] or ()), tuple(a["end"] or ())
    step = tuple(a["step"] or ())
    starts, ends, axes, steps = [], [], [], []
    for i in range(len(begin)):
        s = step[i] if i < len(step) and step[i] is not None else 1
        b = begin[i] if begin[i] is not None else (0 if s > 0 else _INT64_MAX)
        e = end[i] if i < len(end) and end[i] is not None else (_INT64_MAX if s > 0 else -_INT64_MAX)
        starts.append(int(b))
        ends.append(int(e))
        axes.append(i)
        steps.append(int(s))
    return [ctx.add("Slice", [ctx.ins[0], ctx.ints(starts), ctx.ints(ends), ctx.ints(axes), ctx.ints(steps)],
                    ctx.out())]


@rule("slice_like")
def _slice_like(ctx: Ctx) -> list:
    nd = len(ctx.in_shape(0))
    like = ctx.in_shape(1)
    axes = [_axis(i, nd) for i in _ints(ctx.attrs["axes"])] or list(range(nd))
    if set(axes) & (ctx.in_dyn(1) | ctx.in_dyn(0)):
        raise ctx.fail("slice_like on dynamic axes needs static input shapes")
    return [ctx.add("Slice", [ctx.ins[0], ctx.ints([0] * len(axes)), ctx.ints([like[i] for i in axes]),
                              ctx.ints(axes)], ctx.out())]


@rule("reverse")
def _reverse(ctx: Ctx) -> list:
    nd = len(ctx.in_shape(0))
    axes = [_axis(i, nd) for i in _ints(ctx.attrs["axis"])]
    k = len(axes)
    return [ctx.add("Slice", [ctx.ins[0], ctx.ints([-1] * k), ctx.ints([-_INT64_MAX] * k), ctx.ints(axes),
                              ctx.ints([-1] * k)], ctx.out())]


@rule("broadcast_to", "broadcast_like", "broadcast_axis")
def _broadcast_to(ctx: Ctx) -> list:
    if ctx.out_dyn():
        raise ctx.fail("broadcast to a dynamic shape needs static input shapes")
    return [ctx.add("Expand", [ctx.ins[0], ctx.ints(ctx.out_shape())], ctx.out())]


@rule("tile")
def _tile(ctx: Ctx) -> list:
    shape = ctx.in_shape(0)
    reps = list(_ints(ctx.attrs["reps"]))
    x = ctx.ins[0]
    if len(reps) > len(shape):
        x = ctx.unsqueeze(x, list(range(len(reps) - len(shape))))
    elif len(reps) < len(shape):
        reps = [1] * (len(shape) - len(reps)) + reps
    return [ctx.add("Tile", [x, ctx.ints(reps)], ctx.out())]


@rule("Pad")
def _pad(ctx: Ctx) -> list:
    a = ctx.attrs
    pw = list(_ints(a["pad_width"]))
    nd = len(ctx.in_shape(0))
    pads = [pw[2 * i] for i in range(nd)] + [pw[2 * i + 1] for i in range(nd)]
    mode = a["mode"]
    inputs = [ctx.ins[0], ctx.ints(pads)]
    if mode == "constant":
        inputs.append(ctx.scalar(a["constant_value"], ctx.in_dtype(0)))
    return [ctx.add("Pad", inputs, ctx.out(), mode={"constant": "constant", "edge": "edge",
                                                     "reflect": "reflect"}[mode])]


@rule("depth_to_space", "space_to_depth")
def _depth_space(ctx: Ctx) -> list:
    b = int(ctx.attrs["block_size"])
    if ctx.op == "depth_to_space":
        return [ctx.add("DepthToSpace", [ctx.ins[0]], ctx.out(), blocksize=b, mode="DCR")]
    return [ctx.add("SpaceToDepth", [ctx.ins[0]], ctx.out(), blocksize=b)]


# ---- linear algebra -----------------------------------------------------------------------------
@rule("dot")
def _dot(ctx: Ctx) -> list:
    ta, tb = bool(ctx.attrs["transpose_a"]), bool(ctx.attrs["transpose_b"])
    lhs, rhs = ctx.ins[:2]
    ls, rs = ctx.in_shape(0), ctx.in_shape(1)
    if len(ls) == 2 and len(rs) == 2:
        a = ctx.transpose(lhs, [1, 0]) if ta else lhs
        b = ctx.transpose(rhs, [1, 0]) if tb else rhs
        return [ctx.add("MatMul", [a, b], ctx.out())]
    if len(ls) == 1:
        a = ctx.add("Reshape", [lhs, ctx.ints([1, -1])])
    elif ta:
        a = ctx.transpose(ctx.add("Reshape", [lhs, ctx.ints([ls[0], -1])]), [1, 0])
    else:
        a = ctx.add("Reshape", [lhs, ctx.ints([-1, ls[-1]])])
    if len(rs) == 1:
        b = ctx.add("Reshape", [rhs, ctx.ints([-1, 1])])
    elif tb:
        b = ctx.transpose(ctx.add("Reshape", [rhs, ctx.ints([-1, rs[-1]])]), [1, 0])
    else:
        b = ctx.add("Reshape", [rhs, ctx.ints([rs[0], -1])])
    y = ctx.add("MatMul", [a, b])
    return [ctx.reshape(y, ctx.out_shape(), ctx.out_dyn(), ctx.out())]


@rule("batch_dot")
def _batch_dot(ctx: Ctx) -> list:
    nd = len(ctx.in_shape(0))
    perm = list(range(nd - 2)) + [nd - 1, nd - 2]
    a = ctx.transpose(ctx.ins[0], perm) if ctx.attrs["transpose_a"] else ctx.ins[0]
    b = ctx.transpose(ctx.ins[1], perm) if ctx.attrs["transpose_b"] else ctx.ins[1]
    return [ctx.add("MatMul", [a, b], ctx.out())]


# ---- reductions ---------------------------------------------------------------------------------
_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
           "prod": "ReduceProd"}


def _reduce_axes(axis: Any, nd: int, exclude: bool) -> list:
    if axis is None or (isinstance(axis, (tuple, list)) and len(axis) == 0):
        return list(range(nd))
    axes = sorted({_axis(a, nd) for a in _ints(axis)})
    if exclude:
        return [i for i in range(nd) if i not in axes]
    return axes


@rule(*_REDUCE)
def _reduce(ctx: Ctx) -> list:
    a = ctx.attrs
    nd = len(ctx.in_shape(0))
    axes = _reduce_axes(a["axis"], nd, bool(a["exclude"]))
    keep = bool(a["keepdims"])
    if not axes:
        return [ctx.add("Identity", [ctx.ins[0]], ctx.out())]
    scalar = len(axes) == nd and not keep
    y = ctx.reduce(_REDUCE[ctx.op], ctx.ins[0], axes, keep, None if scalar else ctx.out())
    if scalar:  # MXNet 1.x has no 0-d arrays: shape (1,)
        y = ctx.add("Reshape", [y, ctx.ints([1])], ctx.out())
    return [y]


@rule("norm")
def _norm(ctx: Ctx) -> list:
    a = ctx.attrs
    nd = len(ctx.in_shape(0))
    ordv = int(a["ord"])
    if ordv not in (1, 2):
        raise ctx.fail(f"ord={ordv}")
    axes = _reduce_axes(a["axis"], nd, False)
    keep = bool(a["keepdims"])
    scalar = len(axes) == nd and not keep
    y = ctx.reduce("ReduceL2" if ordv == 2 else "ReduceL1", ctx.ins[0], axes, keep)
    if scalar:
        y = ctx.add("Reshape", [y, ctx.ints([1])])
    if ctx.out_dtype() != ctx.in_dtype(0):
        return [ctx.cast(y, ctx.out_dtype(), ctx.out())]
    return [ctx.add("Identity", [y], ctx.out())]


@rule("argmax", "argmin")
def _argmax(ctx: Ctx) -> list:
    a = ctx.attrs
    x = ctx.ins[0]
    nd = len(ctx.in_shape(0))
    if a["axis"] is None:
        x = ctx.add("Reshape", [x, ctx.ints([-1])])
        ax, keep = 0, False
    else:
        ax, keep = _axis(a["axis"], nd), bool(a["keepdims"])
    y = ctx.add("ArgMax" if ctx.op == "argmax" else "ArgMin", [x], axis=ax, keepdims=int(keep))
    if a["axis"] is None or (nd == 1 and not keep):
        y = ctx.add("Reshape", [y, ctx.ints(ctx.out_shape())])
    return [ctx.cast(y, ctx.out_dtype(), ctx.out())]


# ---- indexing -------------------------------------------------------------------------------
def _index(ctx: Ctx, i: int, n: int, mode: str) -> str:
    idx = ctx.ins[i]
    if ctx.in_dtype(i) != np.int64:
        idx = ctx.cast(idx, np.int64)
    if mode == "clip":
        return ctx.add("Clip", [idx, ctx.scalar(0, np.int64), ctx.scalar(n - 1, np.int64)])
    if mode == "wrap":
        return ctx.add("Mod", [idx, ctx.scalar(n, np.int64)], fmod=0)
    return idx


@rule("take")
def _take(ctx: Ctx) -> list:
    shape = ctx.in_shape(0)
    ax = _axis(ctx.attrs["axis"], len(shape))
    idx = _index(ctx, 1, shape[ax], ctx.attrs["mode"])
    return [ctx.add("Gather", [ctx.ins[0], idx], ctx.out(), axis=ax)]


@rule("pick")
def _pick(ctx: Ctx) -> list:
    a = ctx.attrs
    shape = ctx.in_shape(0)
    nd = len(shape)
    if a["axis"] is None:
        raise ctx.fail("axis=None")
    ax = _axis(a["axis"], nd)
    idx = _index(ctx, 1, shape[ax], a["mode"])
    if len(ctx.in_shape(1)) == nd - 1:
        idx = ctx.unsqueeze(idx, [ax])
    keep = bool(a["keepdims"])
    y = ctx.add("GatherElements", [ctx.ins[0], idx], ctx.out() if keep else None, axis=ax)
    if keep:
        return [y]
    if nd == 1:
        return [ctx.add("Identity", [y], ctx.out())]
    return [ctx.squeeze(y, [ax], ctx.out())]


@rule("one_hot")
def _one_hot(ctx: Ctx) -> list:
    a = ctx.attrs
    depth = int(a["depth"])
    dt = ctx.out_dtype()
    idx = ctx.ins[0]
    if ctx.in_dtype(0) != np.int64:
        idx = ctx.cast(idx, np.int64)
    nd = len(ctx.in_shape(0))
    hot = ctx.add("Equal", [ctx.unsqueeze(idx, [nd]), ctx.const(np.arange(depth, dtype=np.int64), hint="arange")])
    return [ctx.add("Where", [hot, ctx.scalar(a["on_value"], dt), ctx.scalar(a["off_value"], dt)], ctx.out())]


@rule("where")
def _where(ctx: Ctx) -> list:
    c = ctx.cast(ctx.ins[0], np.bool_)
    cs, xs = ctx.in_shape(0), ctx.in_shape(1)
    if len(cs) != len(xs):
        c = ctx.unsqueeze(c, list(range(1, len(xs))))
    return [ctx.add("Where", [c, ctx.ins[1], ctx.ins[2]], ctx.out())]


@rule("_slice_assign_scalar")
def _slice_assign_scalar(ctx: Ctx) -> list:
    from ..ops.shape import slice_ranges  # MXNet's slice rules, shared with the kernel
    shape = ctx.in_shape(0)
    if ctx.in_dyn(0):
        raise ctx.fail("slice assignment needs static input shapes")
    a = ctx.attrs
    mask = np.zeros(shape, dtype=bool)
    idx = tuple(slice(b, e if e >= 0 or s > 0 else None, s)
                for b, e, s in slice_ranges(shape, a["begin"], a["end"], a["step"]))
    mask[idx] = True
    v = ctx.scalar(a["scalar"], ctx.in_dtype(0))
    return [ctx.add("Where", [ctx.const(mask, hint="mask"), v, ctx.ins[0]], ctx.out())]


# ---- more operators ------------------------------------------------------------------------------
@rule("cbrt", "rcbrt")
def _cbrt(ctx: Ctx) -> list:
    x, dt = ctx.ins[0], ctx.in_dtype(0)
    r = ctx.add("Mul", [ctx.add("Sign", [x]), ctx.add("Pow", [ctx.add("Abs", [x]), ctx.scalar(1.0 / 3, dt)])],
                ctx.out() if ctx.op == "cbrt" else None)
    return [r if ctx.op == "cbrt" else ctx.add("Reciprocal", [r], ctx.out())]


@rule("smooth_l1")
def _smooth_l1(ctx: Ctx) -> list:
    x, dt = ctx.ins[0], ctx.in_dtype(0)
    s2 = float(ctx.attrs["scalar"]) ** 2
    a = ctx.add("Abs", [x])
    small = ctx.add("Less", [a, ctx.scalar(1.0 / s2, dt)])
    quad = ctx.add("Mul", [ctx.add("Mul", [x, x]), ctx.scalar(0.5 * s2, dt)])
    lin = ctx.add("Sub", [a, ctx.scalar(0.5 / s2, dt)])
    return [ctx.add("Where", [small, quad, lin], ctx.out())]


@rule("argmax_channel")
def _argmax_channel(ctx: Ctx) -> list:
    y = ctx.add("ArgMax", [ctx.ins[0]], axis=1, keepdims=0)
    return [ctx.cast(y, ctx.out_dtype(), ctx.out())]


@rule("topk")
def _topk(ctx: Ctx) -> list:
    a = ctx.attrs
    x = ctx.ins[0]
    shape = ctx.in_shape(0)
    if a["axis"] is None:
        x = ctx.add("Reshape", [x, ctx.ints([-1])])
        ax, n = 0, _prod(shape)
    else:
        ax = _axis(a["axis"], len(shape))
        n = shape[ax]
        if ax in ctx.in_dyn(0):
            raise ctx.fail("topk along a dynamic axis needs static input shapes")
    k = n if int(a["k"]) < 1 else int(a["k"])
    ret = a["ret_typ"]
    values, indices = ctx.add("TopK", [x, ctx.ints([k])], n=2, axis=ax, largest=int(not a["is_ascend"]),
                              sorted=1)
    if ret == "value":
        return [ctx.add("Identity", [values], ctx.out())]
    if ret == "mask":
        dt = ctx.in_dtype(0)
        zeros = ctx.add("Mul", [x, ctx.scalar(0, dt)])
        ones = ctx.add("Add", [ctx.add("Mul", [values, ctx.scalar(0, dt)]), ctx.scalar(1, dt)])
        m = ctx.add("ScatterElements", [zeros, indices, ones], axis=ax)
        return [ctx.add("Reshape", [m, ctx.ints(shape)], ctx.out())] if a["axis"] is None else \
            [ctx.add("Identity", [m], ctx.out())]
    idt = ctx.out_dtype(1 if ret == "both" else 0)
    idx = ctx.cast(indices, idt, ctx.out(1 if ret == "both" else 0))
    if ret == "indices":
        return [idx]
    return [ctx.add("Identity", [values], ctx.out(0)), idx]


@rule("moments")
def _moments(ctx: Ctx) -> list:
    a, x = ctx.attrs, ctx.ins[0]
    nd = len(ctx.in_shape(0))
    axes = _reduce_axes(a["axes"], nd, False)
    keep = bool(a["keepdims"])
    mean = ctx.reduce("ReduceMean", x, axes, True)
    d = ctx.add("Sub", [x, mean])
    var = ctx.reduce("ReduceMean", ctx.add("Mul", [d, d]), axes, True)
    outs = []
    for k, t in enumerate((mean, var)):
        outs.append(ctx.add("Reshape", [t, ctx.ints(ctx.out_shape(k))], ctx.out(k)) if not keep
                    else ctx.add("Identity", [t], ctx.out(k)))
    return outs


@rule("shape_array", "size_array")
def _shape_array(ctx: Ctx) -> list:
    op = "Shape" if ctx.op == "shape_array" else "Size"
    y = ctx.add(op, [ctx.ins[0]], ctx.out() if op == "Shape" else None)
    return [y] if op == "Shape" else [ctx.add("Reshape", [y, ctx.ints([1])], ctx.out())]


@rule("MakeLoss")
def _make_loss(ctx: Ctx) -> list:
    return [ctx.add("Identity", [ctx.ins[0]], ctx.out())]


@rule("batch_take")
def _batch_take(ctx: Ctx) -> list:
    idx = _index(ctx, 1, ctx.in_shape(0)[1], "clip")
    g = ctx.add("GatherElements", [ctx.ins[0], ctx.unsqueeze(idx, [1])], axis=1)
    return [ctx.squeeze(g, [1], ctx.out())]


@rule("gather_nd")
def _gather_nd(ctx: Ctx) -> list:
    idx = ctx.ins[1]
    if ctx.in_dtype(1) != np.int64:
        idx = ctx.cast(idx, np.int64)
    m = len(ctx.in_shape(1))
    idx = ctx.transpose(idx, list(range(1, m)) + [0])  # (M, Y...) -> (Y..., M)
    return [ctx.add("GatherND", [ctx.ins[0], idx], ctx.out())]


@rule("LRN")
def _lrn(ctx: Ctx) -> list:
    a = ctx.attrs
    size = int(a["nsize"])
    if size % 2 == 0:
        raise ctx.fail(f"nsize={size}: ONNX LRN centres even windows differently; use an odd nsize")
    return [ctx.add("LRN", [ctx.ins[0]], ctx.out(), size=size, alpha=float(a["alpha"]),
                    beta=float(a["beta"]), bias=float(a["knorm"]))]


@rule("UpSampling")
def _upsampling(ctx: Ctx) -> list:
    a = ctx.attrs
    if a["sample_type"] == "bilinear":  # MXNet: a grouped Deconvolution with the given weight
        sc = int(a["scale"])
        k, p = 2 * sc - sc % 2, int(math.ceil((sc - 1) / 2.0))
        return [ctx.add("ConvTranspose", ctx.ins[:2], ctx.out(), kernel_shape=[k, k], strides=[sc, sc],
                        pads=[p] * 4, group=int(ctx.in_shape(0)[1]))]
    out_h = ctx.in_shape(0)[2] * int(a["scale"])
    parts = []
    for i, x in enumerate(ctx.ins):
        n, c, h, w = ctx.in_shape(i)
        f = out_h // h
        if f == 1:
            parts.append(x)
            continue
        if ctx.in_dyn(i):
            raise ctx.fail("nearest upsampling needs static input shapes")
        e = ctx.add("Expand", [ctx.add("Reshape", [x, ctx.ints([n, c, h, 1, w, 1])]),
                               ctx.ints([n, c, h, f, w, f])])
        parts.append(ctx.add("Reshape", [e, ctx.ints([n, c, h * f, w * f])]))
    if len(parts) == 1:
        return [ctx.add("Identity", parts, ctx.out())]
    if a["multi_input_mode"] == "sum":
        return [ctx.add("Sum", parts, ctx.out())]
    return [ctx.add("Concat", parts, ctx.out(), axis=1)]


@rule("SequenceMask")
def _sequence_mask(ctx: Ctx) -> list:
    a = ctx.attrs
    x = ctx.ins[0]
    if not a["use_sequence_length"]:
        return [ctx.add("Identity", [x], ctx.out())]
    shape = ctx.in_shape(0)
    nd = len(shape)
    ax = _axis(a["axis"], nd)
    t = shape[ax]
    pos = np.arange(t, dtype=np.int64).reshape((t, 1) if ax == 0 else (1, t))
    lens = ctx.cast(ctx.ins[1], np.int64) if ctx.in_dtype(1) != np.int64 else ctx.ins[1]
    lens = ctx.unsqueeze(lens, [0 if ax == 0 else 1])
    keep = ctx.add("Less", [ctx.const(pos, hint="positions"), lens])
    if nd > 2:
        keep = ctx.unsqueeze(keep, list(range(2, nd)))
    dt = ctx.in_dtype(0)
    return [ctx.add("Where", [keep, x, ctx.scalar(a["value"], dt)], ctx.out())]


# ---- the graph ----------------------------------------------------------------------------------
def graph_to_onnx(graph: Graph, params: dict, inputs: Sequence[tuple], info: dict, *,
                  opset: int = DEFAULT_OPSET, graph_name: str = "hybridnet",
                  output_names: Optional[Sequence[str]] = None) -> Any:
    """An ``onnx.ModelProto`` computing ``graph`` in inference mode.

    ``params``: variable name -> NumPy array (become initializers); ``inputs``: (name, shape
    with None for dynamic dims, dtype name) per data input, in order; ``info``: (id(node), k)
    -> (shape, dtype name, frozenset of dynamic dims) for every entry of the graph (see
    ``hybridnet.onnx``). Raises OnnxUnsupported naming the first node with no lowering.
    """
    onnx = _onnx()
    if opset < MIN_OPSET:
        raise MXNetError(f"ONNX export supports opset {MIN_OPSET} and later, got opset_version={opset}")
    em = _Emitter(opset)
    by_name = {n: (s, d) for n, s, d in inputs}
    tensor: dict = {}          # (id(node), k) -> onnx tensor name
    used_vars: list = []
    for v in graph.variables():
        em.names.add(v.name)
    # unsupported operators first, all named at once
    missing = sorted({n.op.name for n in graph.nodes if n.op is not None and lowering_for(n.op) is None})
    if missing:
        where = [f"{n.name!r} ({n.op.name})" for n in graph.nodes if n.op is not None and n.op.name in missing]
        why = "".join(f"; {m}: {NOT_EXPORTABLE[m]}" for m in missing if m in NOT_EXPORTABLE)
        raise OnnxUnsupported(f"ONNX export: no lowering for operator(s) {missing} (node(s) "
                              f"{', '.join(where[:5])}{', ...' if len(where) > 5 else ''}){why}; "
                              f"supported operators are listed by hybridnet.onnx.get_operator_support()")
    wanted: dict = {}  # graph output entries name their tensors directly
    for i, (n, k) in enumerate(graph.outputs):
        if output_names and n.op is not None and output_names[i] not in em.names:
            wanted.setdefault((id(n), k), output_names[i])
    for node in graph.nodes:
        if node.op is None:
            tensor[(id(node), 0)] = node.name
            used_vars.append(node)
            continue
        nout = node.num_outputs()
        in_names, in_info = [], []
        for src, k in node.inputs:
            key = (id(src), k)
            if key not in tensor:
                raise OnnxUnsupported(f"ONNX export: node {node.name!r} ({node.op.name}) uses output {k} "
                                      f"of {src.name!r} ({src.opname}), which the ONNX lowering does not "
                                      f"produce")
            in_names.append(tensor[key])
            in_info.append(info[key])
        out_info = [info[(id(node), k)] for k in range(nout)]
        names = node.output_names()
        out_names = [em.fresh(wanted.get((id(node), k)) or (node.name if nout == 1 else names[k]))
                     for k in range(nout)]
        ctx = Ctx(em, node, in_names, in_info, out_info, out_names)
        outs = lowering_for(node.op)(ctx)
        for k, t in enumerate(outs):
            tensor[(id(node), k)] = t
    # inputs and initializers
    elem = lambda d: _elem_type(onnx, np.dtype(d))  # noqa: E731
    vis = onnx.helper.make_tensor_value_info
    graph_inputs, inits, seen = [], list(em.initializers), set()
    referenced = {i for n in em.nodes for i in n.input}
    out_entries = [tensor.get((id(n), k)) for n, k in graph.outputs]
    for v in used_vars:
        if v.name in seen:
            continue
        seen.add(v.name)
        needed = v.name in referenced or v.name in out_entries
        if v.name not in by_name and v.name not in params:
            if not needed:
                continue  # e.g. the label of a loss head, unused at inference
            raise MXNetError(f"ONNX export: variable {v.name!r} is neither a data input "
                             f"({list(by_name)}) nor in params; pass its value in params or its "
                             f"shape in in_shapes")
        if v.name in by_name:
            if v.name not in referenced and v.name not in out_entries:
                continue  # e.g. the label of a loss head, unused at inference
            shape, dt = by_name[v.name]
            dims = [d if d is not None else ("batch" if i == 0 else f"{v.name}_dim{i}")
                    for i, d in enumerate(shape)]
            graph_inputs.append(vis(v.name, elem(dt), dims))
        else:
            if v.name not in referenced and v.name not in out_entries:
                continue
            inits.append(onnx.numpy_helper.from_array(np.ascontiguousarray(params[v.name]), v.name))
    # outputs: every output tensor must be produced by a node, under a unique name
    graph_outputs, used_out = [], set()
    for i, (n, k) in enumerate(graph.outputs):
        t = tensor.get((id(n), k))
        if t is None:
            raise OnnxUnsupported(f"ONNX export: graph output {k} of {n.name!r} ({n.opname}) is not "
                                  f"produced by its ONNX lowering")
        want = output_names[i] if output_names else t
        if t not in em.produced or t in used_out or want != t:
            if want != t and want in wanted.values() and want not in em.produced:
                name = want  # reserved for this output, but the rule returned another tensor
            else:
                name = em.fresh(want if want != t else t + "_out")
            em.node("Identity", [t], [name], name)
            t = name
        used_out.add(t)
        shape, dt, dyn = info[(id(n), k)]
        dims = [None if j in dyn else d for j, d in enumerate(shape)]
        graph_outputs.append(vis(t, elem(dt), dims))
    g = onnx.helper.make_graph(em.nodes, graph_name, graph_inputs, graph_outputs, inits)
    opsets = [onnx.helper.make_opsetid("", opset)]
    model = onnx.helper.make_model(g, opset_imports=opsets, producer_name="hybridnet")
    try:
        model.ir_version = onnx.helper.find_min_ir_version_for(opsets)
    except Exception:  # pragma: no cover - very old onnx
        model.ir_version = 7
    return model
