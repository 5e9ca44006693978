"""ONNX operators -> hybridnet registry operators (MXNet 1.9.1's ``_op_translations``).

``CONVERT_MAP[op_type](g, node)`` returns one value per ONNX output: a Symbol, or a NumPy array
when the result is a constant folded at import (shape arithmetic on static shapes, constants).
``g`` is the ``GraphProto`` doing the import (tensor lookup, static shapes, parameters).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ....symbol.symbol import Symbol
from ._tensors import MAX_TENSOR_ELEMENTS, Dim, np_dtype, tensor_to_array

__all__ = ["CONVERT_MAP"]

CONVERT_MAP: dict = {}
_INT64_MAX = 2 ** 63 - 1


def _reg(*names: str) -> Callable[[Callable], Callable]:
    def deco(fn: Callable) -> Callable:
        for n in names:
            CONVERT_MAP[n] = fn
        return fn
    return deco


def _broadcast(node: Any, shapes: Sequence[Sequence[int]]) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise node.error(f"input shapes {[tuple(s) for s in shapes]} do not broadcast") from None


def _checked_size(node: Any, shape: Sequence[int]) -> tuple:
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=object)) > MAX_TENSOR_ELEMENTS:
        raise node.error(f"would make a tensor of shape {shape}; the model is corrupt or hostile")
    return shape


def _static_dims(g: Any, node: Any, t: str, dims: Sequence[int]) -> tuple:
    """The sizes of dims ``dims`` of ``t``, which must be known at import."""
    shp = g.partial_shape(t)
    if shp is None or any(shp[d] is None for d in dims):
        raise node.error(f"needs dims {tuple(dims)} of {t!r} at import, but the model leaves them "
                         f"dynamic ({shp}); export it with fixed sizes for them")
    return tuple(shp[d] for d in dims)


def _need_const(g: Any, node: Any, i: int, what: str) -> np.ndarray:
    t = node.input(i)
    c = g.const(t) if t else None
    if c is None:
        raise node.error(f"input {i} ({what}) must be a constant (an initializer or computed from "
                         f"static shapes); hybridnet imports only static {what}")
    return c


def _opt_const(g: Any, node: Any, i: int, what: str) -> Optional[np.ndarray]:
    return _need_const(g, node, i, what) if node.input(i) else None


def _ax(a: int, rank: int, node: Any) -> int:
    if not -rank <= a < max(rank, 1):
        raise node.error(f"axis {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def _all_const(g: Any, node: Any) -> bool:
    return all(g.is_const(t) for t in node.inputs if t)


# ---- elementwise ----------------------------------------------------------------------------
_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log",
          "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative", "Floor": "floor", "Ceil": "ceil",
          "Sign": "sign", "Reciprocal": "reciprocal", "Sin": "sin", "Cos": "cos", "Tan": "tan",
          "Asin": "arcsin", "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh",
          "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh", "Erf": "erf", "Round": "rint",
          "Softsign": "softsign", "Not": "_npi_logical_not", "IsNaN": "_npi_isnan"}
_NP_UNARY = {"Neg": np.negative, "Floor": np.floor, "Ceil": np.ceil, "Abs": np.abs, "Sqrt": np.sqrt,
             "Not": np.logical_not, "Sign": np.sign, "Round": np.rint, "Exp": np.exp, "Log": np.log,
             "Reciprocal": np.reciprocal}


@_reg(*_UNARY)
def _unary(g: Any, node: Any) -> list:
    x = node.input(0)
    fn = _NP_UNARY.get(node.op_type)
    if fn is not None and g.is_const(x):
        return [np.asarray(fn(g.const(x))).astype(g.const(x).dtype if node.op_type != "Not" else bool)]
    return [g.op(_UNARY[node.op_type], [g.sym(x, node)], node.name)]


@_reg("Identity", "Dropout")
def _identity(g: Any, node: Any) -> list:
    if node.op_type == "Dropout" and len([o for o in node.outputs if o]) > 1:
        raise node.error("the mask output of Dropout is not supported (inference import)")
    x = node.input(0)
    if g.is_const(x):
        return [g.const(x)]
    return [g.sym(x, node)]


@_reg("Softplus")
def _softplus(g: Any, node: Any) -> list:
    return [g.op("Activation", [g.sym(node.input(0), node)], node.name, act_type="softrelu")]


@_reg("Elu", "Selu", "LeakyRelu", "Gelu", "Celu")
def _leaky(g: Any, node: Any) -> list:
    x = g.sym(node.input(0), node)
    a = node.attrs
    if node.op_type == "LeakyRelu":
        return [g.op("LeakyReLU", [x], node.name, act_type="leaky", slope=a.float("alpha", 0.01))]
    if node.op_type == "Elu":
        return [g.op("LeakyReLU", [x], node.name, act_type="elu", slope=a.float("alpha", 1.0))]
    if node.op_type == "Selu":
        alpha, gamma = a.float("alpha", 1.67326319217681884765625), a.float("gamma", 1.05070102214813232421875)
        if abs(alpha - 1.6732632) > 1e-6 or abs(gamma - 1.0507010) > 1e-6:
            pos = g.op("relu", [x], node.name + "_pos")
            neg = g.op("_mul_scalar", [g.op("expm1", [g.op("_minimum_scalar", [x], node.name + "_min", scalar=0.0)],
                                              node.name + "_expm1")], node.name + "_neg", scalar=alpha)
            return [g.op("_mul_scalar", [g.op("elemwise_add", [pos, neg], node.name + "_sum")], node.name,
                         scalar=gamma)]
        return [g.op("LeakyReLU", [x], node.name, act_type="selu")]
    if node.op_type == "Celu":
        alpha = a.float("alpha", 1.0)
        pos = g.op("relu", [x], node.name + "_pos")
        neg = g.op("_mul_scalar", [g.op("expm1", [g.op("_div_scalar", [g.op("_minimum_scalar", [x], node.name + "_min",
                                                                         scalar=0.0)], node.name + "_div", scalar=alpha)],
                                          node.name + "_expm1")], node.name + "_neg", scalar=alpha)
        return [g.op("elemwise_add", [pos, neg], node.name)]
    approx = a.str("approximate", "none")
    if approx == "none":
        return [g.op("LeakyReLU", [x], node.name, act_type="gelu")]
    if approx != "tanh":
        raise node.error(f"Gelu approximate={approx!r} is not 'none' or 'tanh'")
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    cube = g.op("_mul_scalar", [g.op("_power_scalar", [x], node.name + "_cube", scalar=3.0)], node.name + "_c3",
                scalar=0.044715)
    inner = g.op("_mul_scalar", [g.op("elemwise_add", [x, cube], node.name + "_in")], node.name + "_sc",
                 scalar=math.sqrt(2.0 / math.pi))
    t = g.op("_plus_scalar", [g.op("tanh", [inner], node.name + "_tanh")], node.name + "_p1", scalar=1.0)
    return [g.op("_mul_scalar", [g.op("elemwise_mul", [x, t], node.name + "_xt")], node.name, scalar=0.5)]


@_reg("PRelu")
def _prelu(g: Any, node: Any) -> list:
    x = g.sym(node.input(0), node)
    slope = g.sym(node.input(1), node)
    pos = g.op("relu", [x], node.name + "_pos")
    neg = g.op("_minimum_scalar", [x], node.name + "_negpart", scalar=0.0)
    return [g.op("broadcast_add", [pos, g.op("broadcast_mul", [neg, slope], node.name + "_scaled")], node.name)]


@_reg("HardSigmoid")
def _hard_sigmoid(g: Any, node: Any) -> list:
    return [g.op("hard_sigmoid", [g.sym(node.input(0), node)], node.name,
                 alpha=node.attrs.float("alpha", 0.2), beta=node.attrs.float("beta", 0.5))]


@_reg("HardSwish")
def _hard_swish(g: Any, node: Any) -> list:
    x = g.sym(node.input(0), node)
    hs = g.op("hard_sigmoid", [x], node.name + "_hs", alpha=1.0 / 6, beta=0.5)
    return [g.op("elemwise_mul", [x, hs], node.name)]


@_reg("Clip")
def _clip(g: Any, node: Any) -> list:
    big = float(np.finfo(np.float32).max)
    if g.opset_version < 11:
        lo, hi = node.attrs.float("min", -big), node.attrs.float("max", big)
    else:
        cmin, cmax = _opt_const(g, node, 1, "min"), _opt_const(g, node, 2, "max")
        lo = float(cmin.reshape(-1)[0]) if cmin is not None else -big
        hi = float(cmax.reshape(-1)[0]) if cmax is not None else big
    x = node.input(0)
    if g.is_const(x):
        return [np.clip(g.const(x), lo, hi).astype(g.const(x).dtype)]
    return [g.op("clip", [g.sym(x, node)], node.name, a_min=lo, a_max=hi)]


_BINARY = {"Add": ("broadcast_add", np.add), "Sub": ("broadcast_sub", np.subtract),
           "Mul": ("broadcast_mul", np.multiply), "Div": ("broadcast_div", None),
           "Pow": ("broadcast_power", np.power), "Equal": ("_npi_equal", np.equal),
           "Greater": ("_npi_greater", np.greater), "Less": ("_npi_less", np.less),
           "GreaterOrEqual": ("_npi_greater_equal", np.greater_equal),
           "LessOrEqual": ("_npi_less_equal", np.less_equal),
           "And": ("broadcast_logical_and", np.logical_and), "Or": ("broadcast_logical_or", np.logical_or),
           "Xor": ("broadcast_logical_xor", np.logical_xor), "Mod": ("broadcast_mod", None),
           "Max": ("broadcast_maximum", np.maximum), "Min": ("broadcast_minimum", np.minimum),
           "Sum": ("broadcast_add", np.add), "Mean": ("broadcast_add", np.add)}
# scalar forms: (x op c, c op x)
_SCALAR = {"Add": ("_plus_scalar", "_plus_scalar"), "Sub": ("_minus_scalar", "_rminus_scalar"),
           "Mul": ("_mul_scalar", "_mul_scalar"), "Div": ("_div_scalar", "_rdiv_scalar"),
           "Pow": ("_power_scalar", "_rpower_scalar"), "Max": ("_maximum_scalar", "_maximum_scalar"),
           "Min": ("_minimum_scalar", "_minimum_scalar")}
_LOGICAL = ("And", "Or", "Xor")


def _np_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == object or b.dtype == object:   # sizes (some known at run time only)
        return np.asarray(a // b)
    if np.issubdtype(a.dtype, np.integer):
        return np.trunc(a / b).astype(a.dtype)   # ONNX integer Div truncates
    return np.divide(a, b).astype(a.dtype)


@_reg(*_BINARY)
def _binary(g: Any, node: Any) -> list:
    ins = [t for t in node.inputs if t]
    if not ins:
        raise node.error("has no inputs")
    opname, fn0 = _BINARY[node.op_type]
    fn: Optional[Callable] = fn0
    if node.op_type == "Mod":
        fmod = node.attrs.int("fmod", 0)
        fn = np.fmod if fmod else np.mod
    if node.op_type == "Div":
        fn = _np_div
    if _all_const(g, node) and fn is not None:
        vals = [g.const(t) for t in ins]
        _checked_size(node, _broadcast(node, [v.shape for v in vals]))
        out = vals[0]
        for v in vals[1:]:
            out = np.asarray(fn(out, v))
        if node.op_type == "Mean":
            out = out / len(vals)
        dt = bool if node.op_type in ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual") + _LOGICAL \
            else (object if np.asarray(out).dtype == object else vals[0].dtype)
        return [np.asarray(out).astype(dt)]
    if node.op_type == "Mod" and node.attrs.int("fmod", 0):
        raise node.error("Mod with fmod=1 (C fmod) is not supported on graph tensors")
    if len(ins) == 1:
        return [g.sym(ins[0], node)]
    acc = _binary_pair(g, node, opname, ins[0], ins[1], node.name if len(ins) == 2 and node.op_type != "Mean"
                       else node.name + "_0")
    for k, t in enumerate(ins[2:], 1):
        acc_name = node.name if k == len(ins) - 2 and node.op_type != "Mean" else f"{node.name}_{k}"
        acc = g.op(opname, [acc, g.sym(t, node)], acc_name)
    if node.op_type == "Mean":
        acc = g.op("_div_scalar", [acc], node.name, scalar=float(len(ins)))
    if node.op_type in _LOGICAL:
        acc = g.op("Cast", [acc], node.name + "_bool", dtype="bool")
    return [acc]


def _binary_pair(g: Any, node: Any, opname: str, a: str, b: str, name: str) -> Symbol:
    pair = _SCALAR.get(node.op_type)
    if pair is not None:
        for const_t, other, k in ((b, a, 0), (a, b, 1)):
            c = g.const(const_t)
            if c is None or g.is_const(other) or c.size != 1:
                continue
            oshape = g.partial_shape(other)
            if c.ndim > (len(oshape) if oshape is not None else 0):
                continue
            odt = g.dtype(other)
            if np.issubdtype(odt, np.integer) and node.op_type in ("Div", "Pow"):
                continue
            scalar = c.reshape(()).item()
            return g.op(pair[k], [g.sym(other, node)], name, scalar=float(scalar))
    return g.op(opname, [g.sym(a, node), g.sym(b, node)], name)


@_reg("Where")
def _where(g: Any, node: Any) -> list:
    if _all_const(g, node):
        c, x, y = (g.const(t) for t in node.inputs[:3])
        _checked_size(node, _broadcast(node, [c.shape, x.shape, y.shape]))
        return [np.where(c, x, y)]
    cond = g.sym(node.input(0), node)
    if g.dtype(node.input(0)) != np.bool_:
        cond = g.op("Cast", [cond], node.name + "_cond", dtype="bool")
    return [g.op("_npi_where", [cond, g.sym(node.input(1), node), g.sym(node.input(2), node)], node.name)]


# ---- linear algebra ---------------------------------------------------------------------------
@_reg("MatMul")
def _matmul(g: Any, node: Any) -> list:
    a, b = node.input(0), node.input(1)
    if g.is_const(a) and g.is_const(b):
        return [np.matmul(g.const(a), g.const(b))]
    return [g.op("_npi_matmul", [g.sym(a, node), g.sym(b, node)], node.name)]


@_reg("Gemm")
def _gemm(g: Any, node: Any) -> list:
    at = node.attrs
    alpha, beta = at.float("alpha", 1.0), at.float("beta", 1.0)
    ta, tb = at.int("transA", 0), at.int("transB", 0)
    a, b, c = node.input(0), node.input(1), node.input(2)
    cb = g.const(b)
    cc = g.const(c) if c else None
    if not ta and cb is not None and cb.ndim == 2 and (not c or cc is not None):
        n = cb.shape[0] if tb else cb.shape[1]
        bias = None
        if cc is not None:
            if cc.size == 1:
                bias = np.full((n,), cc.reshape(-1)[0] * beta, dtype=cc.dtype)
            elif cc.shape in ((n,), (1, n)):
                bias = cc.reshape(n) * beta if beta != 1.0 else cc.reshape(n)
        if cc is None or bias is not None:
            if tb and alpha == 1.0:
                w = g.sym(b, node)
            else:
                wv = cb if tb else cb.T
                w = g.param(wv * alpha if alpha != 1.0 else wv, b + ("_T" if not tb else "_scaled"))
            ins = [g.sym(a, node), w]
            if bias is not None and cc is not None:
                ins.append(g.sym(c, node) if cc.shape == (n,) and beta == 1.0
                           else g.param(bias.astype(cc.dtype), c + "_bias"))
            return [g.op("FullyConnected", ins, node.name, num_hidden=int(n), no_bias=bias is None,
                         flatten=True)]
    y = g.op("dot", [g.sym(a, node), g.sym(b, node)], node.name + "_dot", transpose_a=bool(ta),
             transpose_b=bool(tb))
    if alpha != 1.0:
        y = g.op("_mul_scalar", [y], node.name + "_alpha", scalar=alpha)
    if c:
        cs = g.sym(c, node)
        if beta != 1.0:
            cs = g.op("_mul_scalar", [cs], node.name + "_beta", scalar=beta)
        y = g.op("broadcast_add", [y, cs], node.name)
    return [y]


@_reg("Einsum")
def _einsum(g: Any, node: Any) -> list:
    eq = node.attrs.str("equation")
    if not eq:
        raise node.error("Einsum without an equation")
    return [g.op("_npi_einsum", [g.sym(t, node) for t in node.inputs], node.name,
                 subscripts=eq.replace(" ", ""))]


# ---- convolution, pooling, normalization --------------------------------------------------------
def _conv_pads(g: Any, node: Any, x: str, kernel: tuple, stride: tuple, dilate: tuple) -> tuple:
    """(symmetric pads, extra (begin, end) pads or None) from pads/auto_pad."""
    nd = len(kernel)
    auto = node.attrs.str("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        rank = g.rank(x, node)
        shape = _static_dims(g, node, x, range(2, rank))
        begin, end = [], []
        for i in range(nd):
            out = -(-shape[i] // stride[i])
            total = max(0, (out - 1) * stride[i] + (kernel[i] - 1) * dilate[i] + 1 - shape[i])
            small, large = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else large)
            end.append(large if auto == "SAME_UPPER" else small)
    elif auto == "VALID":
        begin, end = [0] * nd, [0] * nd
    elif auto == "NOTSET":
        pads = node.attrs.ints("pads", (0,) * (2 * nd))
        if len(pads) != 2 * nd:
            raise node.error(f"pads {pads} do not match a {nd}-D kernel")
        begin, end = list(pads[:nd]), list(pads[nd:])
    else:
        raise node.error(f"auto_pad {auto!r} is not NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    if any(p < 0 for p in begin + end):
        raise node.error("negative pads are not supported")
    if begin == end:
        return tuple(begin), None
    sym = tuple(min(b, e) for b, e in zip(begin, end))
    extra = [(b - s, e - s) for b, e, s in zip(begin, end, sym)]
    return sym, extra


def _pad_extra(g: Any, node: Any, x: Symbol, extra: list, value: float = 0.0) -> Symbol:
    width = ((0, 0), (0, 0)) + tuple(tuple(p) for p in extra)
    return g.op("_npi_pad", [x], node.name + "_pad", pad_width=width, mode="constant", constant_value=value)


@_reg("Conv")
def _conv(g: Any, node: Any) -> list:
    b = g.sym(node.input(2), node) if node.input(2) else None
    return [_convolution(g, node, node.input(0), g.sym(node.input(0), node), g.shape(node.input(1), node),
                         g.sym(node.input(1), node), b, node.name)]


def _convolution(g: Any, node: Any, x_name: str, x: Symbol, wshape: tuple, w: Symbol, b: Optional[Symbol],
                 name: str) -> Symbol:
    """Convolution of ``x`` (tensor ``x_name``, for shapes) by weights ``w`` of ``wshape`` with
    the node's kernel/stride/dilation/group/pad attributes."""
    nd = len(wshape) - 2
    if nd < 1 or nd > 3:
        raise node.error(f"{nd}-D convolution is not supported (1-D to 3-D are)")
    kernel = node.attrs.ints("kernel_shape", tuple(wshape[2:]))
    stride = node.attrs.ints("strides", (1,) * nd)
    dilate = node.attrs.ints("dilations", (1,) * nd)
    group = node.attrs.int("group", 1)
    pad, extra = _conv_pads(g, node, x_name, kernel, stride, dilate)
    if extra is not None:
        x = _pad_extra(g, node, x, extra)
    ins = [x, w] + ([b] if b is not None else [])
    return g.op("Convolution", ins, name, kernel=tuple(kernel), stride=tuple(stride),
                dilate=tuple(dilate), pad=tuple(pad), num_filter=int(wshape[0]), num_group=group,
                no_bias=b is None)


@_reg("ConvTranspose")
def _deconv(g: Any, node: Any) -> list:
    w = node.input(1)
    wshape = g.shape(w, node)
    nd = len(wshape) - 2
    at = node.attrs
    kernel = at.ints("kernel_shape", tuple(wshape[2:]))
    stride = at.ints("strides", (1,) * nd)
    dilate = at.ints("dilations", (1,) * nd)
    group = at.int("group", 1)
    adj = list(at.ints("output_padding", (0,) * nd))
    if at.has("output_shape") or at.str("auto_pad", "NOTSET") != "NOTSET":
        shape = g.shape(node.input(0), node)[2:]
        out = at.ints("output_shape", None) or tuple(s * st for s, st in zip(shape, stride))
        out = out[-nd:]
        total = [st * (s - 1) + a + ((k - 1) * d + 1) - o
                 for s, st, a, k, d, o in zip(shape, stride, adj, kernel, dilate, out)]
        if at.str("auto_pad", "NOTSET") == "SAME_UPPER":   # the spec's split of the total pad
            begin = [t // 2 for t in total]
        else:
            begin = [t - t // 2 for t in total]
        end = [t - b for t, b in zip(total, begin)]
    else:
        pads = at.ints("pads", (0,) * (2 * nd))
        begin, end = list(pads[:nd]), list(pads[nd:])
    if any(p < 0 for p in begin + end):
        raise node.error("negative pads are not supported")
    pad = [min(b, e) for b, e in zip(begin, end)]
    ins = [g.sym(node.input(0), node), g.sym(w, node)]
    if node.input(2):
        ins.append(g.sym(node.input(2), node))
    y = g.op("Deconvolution", ins, node.name if begin == end else node.name + "_full",
             kernel=tuple(kernel), stride=tuple(stride), dilate=tuple(dilate), pad=tuple(pad),
             adj=tuple(adj), num_filter=int(wshape[1]) * group, num_group=group, no_bias=len(ins) == 2)
    if begin != end:  # crop what the symmetric pad left on one side
        for i, (b, e, p) in enumerate(zip(begin, end, pad)):
            if b > p or e > p:
                y = g.op("slice_axis", [y], f"{node.name}_crop{i}", axis=i + 2, begin=b - p,
                         end=(-(e - p)) if e > p else None)
    return [y]


@_reg("MaxPool", "AveragePool", "LpPool")
def _pool(g: Any, node: Any) -> list:
    if len([o for o in node.outputs if o]) > 1:
        raise node.error("the Indices output of MaxPool is not supported")
    at = node.attrs
    kernel = at.ints("kernel_shape")
    if not kernel:
        raise node.error("kernel_shape is required")
    nd = len(kernel)
    stride = at.ints("strides", (1,) * nd)
    dilate = at.ints("dilations", (1,) * nd)
    if any(d != 1 for d in dilate):
        raise node.error(f"dilations {dilate} are not supported for pooling")
    pad, extra = _conv_pads(g, node, node.input(0), kernel, stride, dilate)
    x = g.sym(node.input(0), node)
    kind = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[node.op_type]
    count_include_pad = bool(at.int("count_include_pad", 0))
    if extra is not None:
        if kind == "avg" and not count_include_pad:
            raise node.error("asymmetric pads with count_include_pad=0 are not supported")
        x = _pad_extra(g, node, x, extra, float("-inf") if kind == "max" else 0.0)
    attrs: dict = dict(kernel=tuple(kernel), stride=tuple(stride), pad=tuple(pad), pool_type=kind,
                       pooling_convention="full" if at.int("ceil_mode", 0) else "valid")
    if kind == "avg":
        attrs["count_include_pad"] = count_include_pad
    if kind == "lp":
        attrs["p_value"] = at.int("p", 2)
    return [g.op("Pooling", [x], node.name, **attrs)]


@_reg("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(g: Any, node: Any) -> list:
    rank = g.rank(node.input(0), node)
    kind = {"GlobalAveragePool": "avg", "GlobalMaxPool": "max", "GlobalLpPool": "lp"}[node.op_type]
    attrs: dict = dict(kernel=(1,) * (rank - 2), global_pool=True, pool_type=kind)
    if kind == "lp":
        attrs["p_value"] = node.attrs.int("p", 2)
    return [g.op("Pooling", [g.sym(node.input(0), node)], node.name, **attrs)]


@_reg("BatchNormalization")
def _batchnorm(g: Any, node: Any) -> list:
    if len([o for o in node.outputs if o]) > 1:
        raise node.error("training outputs (running mean/var) are not supported")
    ins = [g.sym(node.input(i), node) for i in range(5)]
    return [g.op("BatchNorm", ins, node.name, eps=node.attrs.float("epsilon", 1e-5),
                 momentum=node.attrs.float("momentum", 0.9), fix_gamma=False)]


@_reg("InstanceNormalization")
def _instancenorm(g: Any, node: Any) -> list:
    ins = [g.sym(node.input(i), node) for i in range(3)]
    return [g.op("InstanceNorm", ins, node.name, eps=node.attrs.float("epsilon", 1e-5))]


@_reg("LayerNormalization")
def _layernorm(g: Any, node: Any) -> list:
    if len([o for o in node.outputs if o]) > 1:
        raise node.error("the Mean/InvStdDev outputs are not supported")
    x = node.input(0)
    rank = g.rank(x, node)
    axis = _ax(node.attrs.int("axis", -1), rank, node)
    eps = node.attrs.float("epsilon", 1e-5)
    scale = node.input(1)
    norm_shape = _static_dims(g, node, x, range(axis, rank))
    shape = (0,) * axis + norm_shape     # 0: Reshape copies the (maybe dynamic) leading dims
    n = int(np.prod(norm_shape))
    gs = g.const(scale)
    bias = node.input(2)
    bc = g.const(bias) if bias else np.zeros(norm_shape, dtype=g.dtype(x))
    if gs is None or bc is None or gs.size != n or bc.size != n:
        raise node.error("Scale and B must be constants of the normalized shape")
    gamma = g.sym(scale, node) if gs.shape == (n,) else g.param(gs.reshape(n), scale)
    beta = g.sym(bias, node) if bias and bc.shape == (n,) else g.param(bc.reshape(n), (bias or node.name) + "_beta")
    xs = g.sym(x, node)
    if axis != len(shape) - 1:
        xs = g.op("Reshape", [xs], node.name + "_flat", shape=(0,) * axis + (n,))
    y = g.op("LayerNorm", [xs, gamma, beta], node.name if axis == len(shape) - 1 else node.name + "_ln",
             axis=-1, eps=eps)
    if axis != len(shape) - 1:
        y = g.op("Reshape", [y], node.name, shape=tuple(shape))
    return [y]


@_reg("LRN")
def _lrn(g: Any, node: Any) -> list:
    at = node.attrs
    return [g.op("LRN", [g.sym(node.input(0), node)], node.name, alpha=at.float("alpha", 1e-4),
                 beta=at.float("beta", 0.75), knorm=at.float("bias", 1.0), nsize=at.int("size"))]


@_reg("Softmax", "LogSoftmax")
def _softmax(g: Any, node: Any) -> list:
    opname = "softmax" if node.op_type == "Softmax" else "log_softmax"
    x = node.input(0)
    if g.opset_version >= 13:
        return [g.op(opname, [g.sym(x, node)], node.name, axis=node.attrs.int("axis", -1))]
    rank = g.rank(x, node)
    axis = _ax(node.attrs.int("axis", 1), rank, node)
    if axis == rank - 1:
        return [g.op(opname, [g.sym(x, node)], node.name, axis=-1)]
    tail = _static_dims(g, node, x, range(axis, rank))  # before opset 13: over the dims from axis on
    flat = g.op("Reshape", [g.sym(x, node)], node.name + "_flat", shape=(0,) * axis + (int(np.prod(tail)),))
    y = g.op(opname, [flat], node.name + "_2d", axis=-1)
    return [g.op("Reshape", [y], node.name, shape=(0,) * axis + tuple(tail))]


# ---- reductions ----------------------------------------------------------------------------
_REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod", "ReduceL2": "norm", "ReduceL1": "norm", "ReduceSumSquare": "sum",
           "ReduceLogSumExp": "sum", "ReduceLogSum": "sum"}
_NP_REDUCE: dict = {"ReduceMean": np.mean, "ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min,
              "ReduceProd": np.prod}


@_reg(*_REDUCE)
def _reduce(g: Any, node: Any) -> list:
    at = node.attrs
    keep = bool(at.int("keepdims", 1))
    axes_from_input = node.op_type == "ReduceSum" and g.opset_version >= 13 or g.opset_version >= 18
    if axes_from_input:
        c = _opt_const(g, node, 1, "axes")
        axes = tuple(int(a) for a in c.reshape(-1)) if c is not None else None
    else:
        axes = at.ints("axes", None)
    if not axes:
        if at.int("noop_with_empty_axes", 0):
            return _identity(g, node)
        axes = None
    x = node.input(0)
    if g.is_const(x) and node.op_type in _NP_REDUCE:
        reducer: Callable = _NP_REDUCE[node.op_type]
        return [np.asarray(reducer(g.const(x), axis=axes, keepdims=keep)).astype(g.const(x).dtype)]
    xs = g.sym(x, node)
    kw: dict = {"keepdims": keep}
    if axes is not None:
        kw["axis"] = tuple(axes)
    if node.op_type in ("ReduceL2", "ReduceL1"):
        return [g.op("norm", [xs], node.name, ord=2 if node.op_type == "ReduceL2" else 1, **kw)]
    if node.op_type == "ReduceSumSquare":
        return [g.op("sum", [g.op("square", [xs], node.name + "_sq")], node.name, **kw)]
    if node.op_type == "ReduceLogSum":
        return [g.op("log", [g.op("sum", [xs], node.name + "_sum", **kw)], node.name)]
    if node.op_type == "ReduceLogSumExp":
        m = g.op("max", [xs], node.name + "_max", axis=kw.get("axis"), keepdims=True) if axes is not None \
            else g.op("max", [xs], node.name + "_max", keepdims=True)
        e = g.op("exp", [g.op("broadcast_sub", [xs, m], node.name + "_shift")], node.name + "_exp")
        s = g.op("log", [g.op("sum", [e], node.name + "_sum", keepdims=True, **({"axis": kw["axis"]} if axes else {}))],
                 node.name + "_log")
        y = g.op("elemwise_add", [s, m], node.name + ("_k" if not keep else ""))
        if not keep:
            y = g.op("squeeze", [y], node.name, axis=kw.get("axis"))
        return [y]
    return [g.op(_REDUCE[node.op_type], [xs], node.name, **kw)]


@_reg("ArgMax", "ArgMin")
def _argmax(g: Any, node: Any) -> list:
    if node.attrs.int("select_last_index", 0):
        raise node.error("select_last_index=1 is not supported")
    y = g.op(node.op_type.lower(), [g.sym(node.input(0), node)], node.name + "_f",
             axis=node.attrs.int("axis", 0), keepdims=bool(node.attrs.int("keepdims", 1)))
    return [g.op("Cast", [y], node.name, dtype="int64")]


@_reg("TopK")
def _topk(g: Any, node: Any) -> list:
    if g.opset_version >= 10:
        k = int(_need_const(g, node, 1, "k").reshape(-1)[0])
    else:
        k = node.attrs.int("k")
    # sorted=0 lets any order out: the sorted order is one
    y = g.op("topk", [g.sym(node.input(0), node)], node.name, k=k, axis=node.attrs.int("axis", -1),
             ret_typ="both", is_ascend=not node.attrs.int("largest", 1), dtype="int64")
    return [y[0], y[1]]


@_reg("CumSum")
def _cumsum(g: Any, node: Any) -> list:
    if node.attrs.int("exclusive", 0) or node.attrs.int("reverse", 0):
        raise node.error("exclusive/reverse CumSum is not supported")
    axis = int(_need_const(g, node, 1, "axis").reshape(-1)[0])
    return [g.op("_np_cumsum", [g.sym(node.input(0), node)], node.name, axis=axis)]


# ---- shape manipulation (folded when the inputs are constants) -------------------------------
@_reg("Constant")
def _constant(g: Any, node: Any) -> list:
    at = node.attrs
    if at.has("value"):
        return [tensor_to_array(at.tensor("value"), f"{node.where}: node {node.name!r}", g.base)]
    for key, dt in (("value_float", np.float32), ("value_int", np.int64)):
        if at.has(key):
            return [np.asarray(at.float(key) if dt is np.float32 else at.int(key), dtype=dt)]
    for key, dt in (("value_floats", np.float32), ("value_ints", np.int64)):
        if at.has(key):
            return [np.asarray(at.floats(key) if dt is np.float32 else at.ints(key), dtype=dt)]
    raise node.error("Constant without a value (sparse_value and strings are not supported)")


@_reg("Shape")
def _shape(g: Any, node: Any) -> list:
    shape = g.sym_shape(node.input(0))
    if shape is None:
        raise node.error(f"needs the rank of {node.input(0)!r} at import")
    start, end = node.attrs.int("start", 0), node.attrs.int("end", None)
    part = shape[slice(start, end)]
    if all(isinstance(d, int) for d in part):
        return [np.asarray(part, dtype=np.int64)]
    return [np.asarray(list(part) + [None], dtype=object)[:-1]]   # run-time dims stay symbolic


@_reg("Size")
def _size(g: Any, node: Any) -> list:
    return [np.asarray(int(np.prod(g.shape(node.input(0), node))), dtype=np.int64)]


@_reg("ConstantOfShape")
def _constant_of_shape(g: Any, node: Any) -> list:
    raw = _need_const(g, node, 0, "shape").reshape(-1)
    v = node.attrs.tensor("value")
    val = np.zeros(1, dtype=np.float32)
    if v is not None:
        val = tensor_to_array(v, f"{node.where}: node {node.name!r}")
        if val.size != 1:
            raise node.error("value must hold one element")
    fill = val.reshape(-1)[0]
    if raw.dtype == object:   # sizes known at run time: zeros built from tensors carrying them
        r = len(raw)
        acc = None
        for i, d in enumerate(raw):
            if isinstance(d, Dim):
                v = g.dim_vector(d, r, i, node)
                acc = v if acc is None else g.op("broadcast_add", [acc, v], f"{node.name}_acc{i}")
        assert acc is not None
        static = tuple(0 if isinstance(d, Dim) else int(d) for d in raw)
        _checked_size(node, [max(d, 1) for d in static])
        y = g.op("broadcast_to", [acc], node.name + "_full", shape=static) if any(static) else acc
        if g.dtype_of_sym(y) != val.dtype:
            y = g.op("Cast", [y], node.name + "_cast", dtype=val.dtype.name)
        if fill == 0:
            return [y]
        return [g.op("_plus_scalar", [y], node.name, scalar=float(fill))]
    shape = _checked_size(node, [int(d) for d in raw])
    return [np.full(shape, fill, dtype=val.dtype)]


@_reg("Range")
def _range(g: Any, node: Any) -> list:
    start, limit, delta = (_need_const(g, node, i, what).reshape(()) for i, what in
                           enumerate(("start", "limit", "delta")))
    lim = limit.item() if limit.dtype == object else None
    if isinstance(lim, Dim):   # arange(t) for a run-time t: arange_like over a tensor carrying t
        if start.dtype == object or delta.dtype == object or int(start) != 0 or int(delta) != 1:
            raise node.error(f"Range({start}, {lim!r}, {delta}) over a run-time size is supported only "
                             f"as Range(0, t, 1)")
        found = g.find_dim(lim)
        if found is None:
            raise node.error(f"needs the run-time size {lim!r}, which no earlier graph tensor carries")
        y = g.op("_contrib_arange_like", [g.sym(found[0], node)], node.name + "_f", axis=found[1])
        return [g.op("Cast", [y], node.name, dtype=start.dtype.name)]
    if delta == 0:
        raise node.error("delta is 0")
    n = max(int(math.ceil((float(limit) - float(start)) / float(delta))), 0)
    _checked_size(node, (n,))
    return [(start + np.arange(n, dtype=np.float64 if start.dtype.kind == "f" else np.int64) * delta)
            .astype(start.dtype)]


@_reg("Cast", "CastLike")
def _cast(g: Any, node: Any) -> list:
    if node.op_type == "Cast":
        dt = np_dtype(node.attrs.int("to", 1), f"{node.where}: node {node.name!r}")
    else:
        dt = g.dtype(node.input(1))
    x = node.input(0)
    if g.is_const(x):
        c = g.const(x)
        if c.dtype == object and dt.kind in "iu":   # sizes known at run time stay symbolic
            return [c]
        return [c.astype(dt)]
    return [g.op("Cast", [g.sym(x, node)], node.name, dtype=dt.name)]


def _dim_or_int(v: Any) -> Any:
    """An int, or the ``Dim`` a folded size known only at run time is."""
    return v if isinstance(v, Dim) else int(v)


def _dynamic_target(g: Any, node: Any, raw: np.ndarray) -> tuple:
    """A Reshape target holding run-time dims: one equal to the input's dim at its position is
    copied (0); one other becomes -1."""
    src = g.sym_shape(node.input(0)) or ()
    out, free = [], 0
    for i, d in enumerate(raw):
        if isinstance(d, Dim):
            if i < len(src) and isinstance(src[i], Dim) and src[i] == d:
                out.append(0)
                continue
            free += 1
            out.append(-1)
        else:
            out.append(int(d))
            free += int(d) == -1
    if free > 1:
        raise node.error(f"cannot reshape {src} to {raw.tolist()}: more than one size known only at "
                         f"run time; export the model with fixed sizes")
    return tuple(out)


@_reg("Reshape")
def _reshape(g: Any, node: Any) -> list:
    if g.opset_version < 5:
        target = node.attrs.ints("shape")
    else:
        raw = _need_const(g, node, 1, "shape").reshape(-1)
        target = tuple(int(d) for d in raw) if raw.dtype != object else _dynamic_target(g, node, raw)
    x = node.input(0)
    allowzero = node.attrs.int("allowzero", 0)
    if allowzero and 0 in target:
        raise node.error("allowzero=1 with a 0 in the shape (empty tensors) is not supported")
    if any(d < -1 for d in target) or list(target).count(-1) > 1:
        raise node.error(f"invalid shape {target}")
    if g.is_const(x):
        c = g.const(x)
        full = [c.shape[i] if d == 0 else d for i, d in enumerate(target)]
        return [c.reshape(full)]
    return [g.op("Reshape", [g.sym(x, node)], node.name, shape=tuple(target))]


@_reg("Flatten")
def _flatten(g: Any, node: Any) -> list:
    x = node.input(0)
    axis = node.attrs.int("axis", 1)
    if g.is_const(x):
        c = g.const(x)
        axis = _ax(axis, c.ndim + 1, node) if axis < 0 else axis
        return [c.reshape(int(np.prod(c.shape[:axis])), -1)]
    if axis == 1:
        return [g.op("Flatten", [g.sym(x, node)], node.name)]
    shp = g.partial_shape(x)
    if shp is None:
        raise node.error(f"needs the rank of {x!r} at import")
    axis = _ax(axis, len(shp) + 1, node)
    head, tail = shp[:axis], shp[axis:]
    if None not in tail:
        target = (-1, int(np.prod(tail)))
    elif None not in head:
        target = (int(np.prod(head)), -1)
    else:
        raise node.error(f"cannot flatten {shp} at axis {axis}: dynamic dims on both sides")
    return [g.op("Reshape", [g.sym(x, node)], node.name, shape=target)]


@_reg("Transpose")
def _transpose(g: Any, node: Any) -> list:
    perm = node.attrs.ints("perm", None)
    x = node.input(0)
    if g.is_const(x):
        return [np.transpose(g.const(x), perm)]
    if perm is not None and list(perm) == list(range(len(perm))):
        return [g.sym(x, node)]
    return [g.op("transpose", [g.sym(x, node)], node.name, axes=tuple(perm) if perm else ())]


def _axes_arg(g: Any, node: Any) -> Optional[tuple]:
    if g.opset_version >= 13:
        c = _opt_const(g, node, 1, "axes")
        return tuple(int(a) for a in c.reshape(-1)) if c is not None else None
    return node.attrs.ints("axes", None)


@_reg("Squeeze")
def _squeeze(g: Any, node: Any) -> list:
    axes = _axes_arg(g, node)
    x = node.input(0)
    if g.is_const(x):
        return [np.squeeze(g.const(x), axis=axes)]
    return [g.op("squeeze", [g.sym(x, node)], node.name, axis=tuple(axes) if axes else None)]


@_reg("Unsqueeze")
def _unsqueeze(g: Any, node: Any) -> list:
    axes = _axes_arg(g, node)
    if not axes:
        raise node.error("axes are required")
    x = node.input(0)
    if g.is_const(x):
        return [np.expand_dims(g.const(x), tuple(axes))]
    out_rank = g.rank(x, node) + len(axes)
    norm = sorted(_ax(a, out_rank, node) for a in axes)
    y = g.sym(x, node)
    for k, a in enumerate(norm):
        y = g.op("expand_dims", [y], node.name if k == len(norm) - 1 else f"{node.name}_{k}", axis=a)
    return [y]


@_reg("Concat")
def _concat(g: Any, node: Any) -> list:
    ins = [t for t in node.inputs if t]
    axis = node.attrs.int("axis")
    if axis is None:
        raise node.error("axis is required")
    if _all_const(g, node):
        return [np.concatenate([g.const(t) for t in ins], axis=axis)]
    if axis < 0:
        axis += g.rank(ins[0], node)
    return [g.op("Concat", [g.sym(t, node) for t in ins], node.name, dim=axis)]


@_reg("Split")
def _split(g: Any, node: Any) -> list:
    x = node.input(0)
    axis = node.attrs.int("axis", 0)
    nout = len(node.outputs)
    if g.opset_version >= 13:
        c = _opt_const(g, node, 1, "split")
        split = tuple(int(s) for s in c.reshape(-1)) if c is not None else None
    else:
        split = node.attrs.ints("split", None)
    if split is None and node.attrs.int("num_outputs", None):
        n = node.attrs.int("num_outputs")
        size = _static_dims(g, node, x, [_ax(axis, g.rank(x, node), node)])[0]
        step = -(-size // n)
        split = tuple(min(step, size - i * step) for i in range(n))
    if g.is_const(x):
        c = g.const(x)
        if split is None:
            return list(np.split(c, nout, axis=axis))
        return list(np.split(c, np.cumsum(split)[:-1], axis=axis))
    xs = g.sym(x, node)
    if split is None or len(set(split)) == 1:
        if nout == 1:
            return [xs]
        y = g.op("SliceChannel", [xs], node.name, num_outputs=nout, axis=axis)
        return [y[i] for i in range(nout)]
    idx = (0,) + tuple(int(v) for v in np.cumsum(split)[:-1])
    y = g.op("_split_v2", [xs], node.name, indices=idx, axis=axis)
    return [y[i] for i in range(nout)]


@_reg("Slice")
def _slice(g: Any, node: Any) -> list:
    if g.opset_version < 10:
        starts, ends = node.attrs.ints("starts"), node.attrs.ints("ends")
        axes = node.attrs.ints("axes", None)
        steps = None
    else:
        starts = tuple(_dim_or_int(v) for v in _need_const(g, node, 1, "starts").reshape(-1))
        ends = tuple(_dim_or_int(v) for v in _need_const(g, node, 2, "ends").reshape(-1))
        c = _opt_const(g, node, 3, "axes")
        axes = tuple(int(v) for v in c.reshape(-1)) if c is not None else None
        c = _opt_const(g, node, 4, "steps")
        steps = tuple(int(v) for v in c.reshape(-1)) if c is not None else None
    x = node.input(0)
    rank = g.rank(x, node)
    axes = tuple(range(len(starts))) if axes is None else axes
    like: list = []   # (axis, dim): x[..., :dim] for a size known only at run time
    if any(isinstance(e, Dim) for e in ends):
        if g.opset_version < 10 or len(axes) != len(ends):
            raise node.error("a run-time end needs axes")
        keep = []
        for k, (st, e, a, step) in enumerate(zip(starts, ends, axes, steps or (1,) * len(ends))):
            if isinstance(e, Dim):
                if isinstance(st, Dim) or int(st) != 0 or int(step) != 1:
                    raise node.error("a run-time end is supported only with start 0 and step 1")
                like.append((_ax(int(a), rank, node), e))
            else:
                keep.append(k)
        starts, ends, axes = (tuple(starts[k] for k in keep), tuple(ends[k] for k in keep),
                              tuple(axes[k] for k in keep))
        steps = tuple(steps[k] for k in keep) if steps is not None else None
    steps = (1,) * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps differ in length")
    if any(s == 0 for s in steps):
        raise node.error("a step is 0")
    shape = g.partial_shape(x)
    sl = [slice(None)] * rank
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _ax(a, rank, node)
        big = 2 ** 62
        s2: Optional[int] = None if (st > 0 and s <= -big) or (st < 0 and s >= big) else s
        e2: Optional[int] = None if abs(e) >= big else e
        if shape is not None and shape[a] is not None:   # clamp to the dim: begin/end in MXNet's range
            d = shape[a]
            s2, e2, _ = slice(s2, e2, st).indices(d)
            if st < 0 and e2 < 0:
                e2 = None
        sl[a] = slice(s2, e2, st)
    if g.is_const(x) and not like:
        return [np.ascontiguousarray(g.const(x)[tuple(sl)])]
    y = g.sym(x, node)
    if any(sv != slice(None) for sv in sl):
        y = g.op("slice", [y], node.name if not like else node.name + "_static",
                 begin=tuple(sv.start for sv in sl), end=tuple(sv.stop for sv in sl),
                 step=tuple(sv.step for sv in sl))
    for k, (a, d) in enumerate(like):
        ref = g.dim_vector(d, rank, a, node)
        y = g.op("slice_like", [y, ref], node.name if k == len(like) - 1 else f"{node.name}_like{k}", axes=(a,))
    return [y]


@_reg("Gather")
def _gather(g: Any, node: Any) -> list:
    data, idx = node.input(0), node.input(1)
    axis = node.attrs.int("axis", 0)
    if g.is_const(data) and g.is_const(idx):
        cd, ci0 = g.const(data), g.const(idx)
        ax = _ax(axis, cd.ndim, node)
        _checked_size(node, cd.shape[:ax] + ci0.shape + cd.shape[ax + 1:])
        if ci0.size and (ci0.min() < -cd.shape[ax] or ci0.max() >= cd.shape[ax]):
            raise node.error(f"index out of range for axis {axis} of size {cd.shape[ax]}")
        return [np.take(cd, ci0, axis=ax)]
    rank = g.rank(data, node)
    axis = _ax(axis, rank, node)
    ci = g.const(idx)
    if ci is not None and ci.ndim == 0:   # one index: a slice, the axis dropped
        i = int(ci)
        xs = g.sym(data, node)
        y = g.op("slice_axis", [xs], node.name + "_at", axis=axis, begin=i, end=(i + 1) or None)
        return [g.op("squeeze", [y], node.name, axis=(axis,))]
    return [g.op("take", [g.sym(data, node), g.sym(idx, node)], node.name, axis=axis, mode="wrap")]


@_reg("GatherND")
def _gather_nd(g: Any, node: Any) -> list:
    if node.attrs.int("batch_dims", 0):
        raise node.error("batch_dims other than 0 are not supported")
    idx = node.input(1)
    r = g.rank(idx, node)
    ci = g.const(idx)
    if ci is not None:
        ind = g.param(np.moveaxis(ci, -1, 0), idx + "_T")
    else:
        ind = g.op("transpose", [g.sym(idx, node)], node.name + "_idx", axes=(r - 1,) + tuple(range(r - 1)))
    return [g.op("gather_nd", [g.sym(node.input(0), node), ind], node.name)]


@_reg("Expand")
def _expand(g: Any, node: Any) -> list:
    raw = _need_const(g, node, 1, "shape").reshape(-1)
    x = node.input(0)
    grow: list = []   # (axis, dim): broadcast from 1 to a run-time size
    if raw.dtype == object:   # a run-time dim equal to the input's own dim there: kept
        src = g.sym_shape(x) or ()
        off = len(raw) - len(src)
        kept = []
        for i, d in enumerate(raw):
            if isinstance(d, Dim):
                if not (0 <= i - off < len(src) and src[i - off] == d):
                    grow.append((i, d))
                kept.append(1)
            else:
                kept.append(d)
        raw = np.asarray(kept, dtype=np.int64)
    target = tuple(int(d) for d in raw)
    if g.is_const(x) and not grow:
        full = _checked_size(node, _broadcast(node, [g.const(x).shape, target]))
        return [np.ascontiguousarray(np.broadcast_to(g.const(x), full))]
    shape = g.partial_shape(x)
    if shape is None:
        raise node.error(f"needs the rank of {x!r} at import")
    r = max(len(shape), len(target))
    ins = (1,) * (r - len(shape)) + tuple(shape)
    tgt = (1,) * (r - len(target)) + target
    out: list = []
    for a, b in zip(ins, tgt):
        if a is None:
            out.append(None if b == 1 else b)   # a run-time dim: kept, or broadcast from 1 to b
        elif a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise node.error(f"cannot broadcast {shape} to {target}")
    _checked_size(node, [1 if d is None else d for d in out])
    y = g.sym(x, node)
    for k in range(r - len(shape)):
        y = g.op("expand_dims", [y], f"{node.name}_rank{k}", axis=0)
    if tuple(out) != ins:
        y = g.op("broadcast_to", [y], node.name if not grow else node.name + "_static",
                 shape=tuple(0 if d is None else d for d in out))
    for k, (i, d) in enumerate(grow):
        z = g.dim_vector(d, r, i, node)
        if g.dtype_of_sym(z) != g.dtype(x):
            z = g.op("Cast", [z], f"{node.name}_z{k}", dtype=g.dtype(x).name)
        y = g.op("broadcast_add", [y, z], node.name if k == len(grow) - 1 else f"{node.name}_grow{k}")
    return [y]


@_reg("Tile")
def _tile(g: Any, node: Any) -> list:
    reps = tuple(int(r) for r in _need_const(g, node, 1, "repeats").reshape(-1))
    x = node.input(0)
    shape = g.maybe_shape(x)
    if shape is not None:
        if len(reps) != len(shape) or any(r < 0 for r in reps):
            raise node.error(f"repeats {reps} do not fit rank {len(shape)}")
        _checked_size(node, tuple(a * b for a, b in zip(shape, reps)))
    if g.is_const(x):
        _checked_size(node, tuple(a * b for a, b in zip(g.const(x).shape, reps)))
        return [np.tile(g.const(x), reps)]
    return [g.op("tile", [g.sym(x, node)], node.name, reps=reps)]


@_reg("Pad")
def _pad(g: Any, node: Any) -> list:
    mode = node.attrs.str("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise node.error(f"mode {mode!r} is not constant, reflect or edge")
    x = node.input(0)
    rank = g.rank(x, node)
    if g.opset_version < 11:
        pads = node.attrs.ints("pads") or node.attrs.ints("paddings")
        value = node.attrs.float("value", 0.0)
        axes = None
    else:
        pads = tuple(int(p) for p in _need_const(g, node, 1, "pads").reshape(-1))
        c = _opt_const(g, node, 2, "constant_value")
        value = float(c.reshape(-1)[0]) if c is not None and c.size else 0.0
        ca = _opt_const(g, node, 3, "axes")
        axes = tuple(_ax(int(a), rank, node) for a in ca.reshape(-1)) if ca is not None else None
    axes = tuple(range(rank)) if axes is None else axes
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads {pads} do not match rank {rank}")
    if any(p < 0 for p in pads):
        raise node.error("negative pads (cropping) are not supported")
    width = [[0, 0] for _ in range(rank)]
    for k, a in enumerate(axes):
        width[a] = [pads[k], pads[k + len(axes)]]
    shape = g.maybe_shape(x)
    if shape is not None:
        _checked_size(node, tuple(d + a + b for d, (a, b) in zip(shape, width)))
    return [g.op("_npi_pad", [g.sym(x, node)], node.name, pad_width=tuple(tuple(w) for w in width),
                 mode=mode, constant_value=value)]


@_reg("DepthToSpace", "SpaceToDepth")
def _depth_space(g: Any, node: Any) -> list:
    b = node.attrs.int("blocksize")
    x = g.sym(node.input(0), node)
    if node.op_type == "SpaceToDepth":
        return [g.op("space_to_depth", [x], node.name, block_size=b)]
    if node.attrs.str("mode", "DCR") == "DCR":
        return [g.op("depth_to_space", [x], node.name, block_size=b)]
    n, c, h, w = g.shape(node.input(0), node)
    y = g.op("Reshape", [x], node.name + "_r", shape=(n, c // (b * b), b, b, h, w))
    y = g.op("transpose", [y], node.name + "_t", axes=(0, 1, 4, 2, 5, 3))
    return [g.op("Reshape", [y], node.name, shape=(n, c // (b * b), h * b, w * b))]


# ---- recurrent layers --------------------------------------------------------------------------
_GATES = {"LSTM": (4, [0, 2, 3, 1]),   # ONNX i,o,f,c -> MXNet i,f,c,o
          "GRU": (3, [1, 0, 2]),       # ONNX z,r,h -> MXNet r,z,n
          "RNN": (1, [0])}


@_reg("LSTM", "GRU", "RNN")
def _rnn(g: Any, node: Any) -> list:
    at = node.attrs
    kind = node.op_type
    if at.int("layout", 0):
        raise node.error("layout=1 (batch first) is not supported; export with the default layout")
    if at.float("clip", None) is not None or at.int("input_forget", 0):
        raise node.error("clip and input_forget are not supported")
    direction = at.str("direction", "forward")
    if direction not in ("forward", "bidirectional"):
        raise node.error(f"direction {direction!r} is not supported (forward, bidirectional)")
    dirs = 2 if direction == "bidirectional" else 1
    acts = at.strs("activations", None)
    mode = {"LSTM": "lstm", "GRU": "gru"}.get(kind, "rnn_tanh")
    defaults = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}[kind]
    if acts:
        if kind == "RNN" and all(a == "Relu" for a in acts):
            mode = "rnn_relu"
        elif tuple(acts) != defaults * (len(acts) // len(defaults)):
            raise node.error(f"activations {acts} are not supported (default {defaults} are)")
    if kind == "GRU" and not at.int("linear_before_reset", 0):
        raise node.error("GRU with linear_before_reset=0 is not supported (MXNet's GRU applies the "
                         "reset gate after the linear map: linear_before_reset=1, as torch exports)")
    if node.input(4):
        raise node.error("sequence_lens is not supported")
    w = _need_const(g, node, 1, "W")
    r = _need_const(g, node, 2, "R")
    hidden = at.int("hidden_size", r.shape[-1])
    ng, order = _GATES[kind]
    if w.ndim != 3 or r.ndim != 3 or w.shape[0] != dirs or w.shape[1] != ng * hidden \
            or r.shape != (dirs, ng * hidden, hidden):
        raise node.error(f"W {w.shape} / R {r.shape} do not fit hidden_size {hidden}, {dirs} direction(s)")
    b = _opt_const(g, node, 3, "B")
    if b is None:
        b = np.zeros((dirs, 2 * ng * hidden), dtype=w.dtype)
    if b.shape != (dirs, 2 * ng * hidden):
        raise node.error(f"B {b.shape} does not fit hidden_size {hidden}")

    def reorder(m: np.ndarray) -> np.ndarray:
        parts = np.split(m, ng, axis=0)
        return np.concatenate([parts[i] for i in order], axis=0)

    weights, biases = [], []
    for d in range(dirs):
        weights += [reorder(w[d]).reshape(-1), reorder(r[d]).reshape(-1)]
        bw, br = b[d][:ng * hidden], b[d][ng * hidden:]
        biases += [reorder(bw), reorder(br)]
    flat = np.concatenate(weights + biases).astype(w.dtype)
    x = node.input(0)
    xs = g.sym(x, node)
    params = g.param(flat, node.name + "_parameters")

    def state(i: int, tag: str) -> Symbol:
        if node.input(i):
            return g.sym(node.input(i), node)
        # zeros of (dirs, batch, hidden) from the data, so a dynamic batch works
        z = g.op("zeros_like", [g.op("slice_axis", [xs], f"{node.name}_{tag}_x", axis=2, begin=0, end=1)],
                 f"{node.name}_{tag}_z")
        z = g.op("slice_axis", [z], f"{node.name}_{tag}_t", axis=0, begin=0, end=1)
        return g.op("broadcast_axis", [z], f"{node.name}_{tag}", axis=(0, 2), size=(dirs, hidden))

    ins = [xs, params, state(5, "h0")]
    if kind == "LSTM":
        ins.append(state(6, "c0"))
    y = g.op("RNN", ins, node.name, state_size=hidden, num_layers=1, bidirectional=dirs == 2, mode=mode,
             state_outputs=True)
    out = g.op("Reshape", [y[0]], node.name + "_y4", shape=(0, 0, dirs, hidden))
    out = g.op("transpose", [out], node.name + "_Y", axes=(0, 2, 1, 3))
    res = [out, y[1]]
    if kind == "LSTM":
        res.append(y[2])
    return res


def supported() -> list:
    """ONNX operator types the import reads (sorted)."""
    return sorted(CONVERT_MAP)



@_reg("GatherElements")
def _gather_elements(g: Any, node: Any) -> list:
    data, idx = node.input(0), node.input(1)
    dshape, ishape = g.shape(data, node), g.shape(idx, node)
    r = len(dshape)
    axis = _ax(node.attrs.int("axis", 0), r, node)
    if len(ishape) != r:
        raise node.error(f"indices of rank {len(ishape)} for data of rank {r}")
    if g.is_const(data) and g.is_const(idx):
        return [np.take_along_axis(g.const(data), g.const(idx), axis=axis)]
    # gather_nd over full coordinates: the static grid for every axis but ``axis``
    grids = np.indices(ishape, dtype=np.int64)
    ci = g.const(idx)
    if ci is not None:
        grids[axis] = np.where(ci < 0, ci + dshape[axis], ci)
        return [g.op("gather_nd", [g.sym(data, node), g.param(grids, node.name + "_coords")], node.name)]
    i = g.sym(idx, node)
    if g.dtype(idx) != np.int64:
        i = g.op("Cast", [i], node.name + "_i64", dtype="int64")
    i = g.op("_mod_scalar", [g.op("_plus_scalar", [i], node.name + "_shift", scalar=float(dshape[axis]))],
             node.name + "_wrap", scalar=float(dshape[axis]))
    parts = []
    for d in range(r):
        src = i if d == axis else g.param(grids[d], f"{node.name}_grid{d}")
        parts.append(g.op("expand_dims", [src], f"{node.name}_c{d}", axis=0))
    coords = g.op("Concat", parts, node.name + "_coords", dim=0)
    return [g.op("gather_nd", [g.sym(data, node), coords], node.name)]


@_reg("ScatterElements", "Scatter")
def _scatter_elements(g: Any, node: Any) -> list:
    """data with ``updates`` written at ``indices`` along ``axis``, as one-hot sums (static
    shapes): no registry scatter needed."""
    data, idx, upd = node.input(0), node.input(1), node.input(2)
    reduction = node.attrs.str("reduction", "none")
    if reduction not in ("none", "add"):
        raise node.error(f"reduction {reduction!r} is not supported (none, add)")
    dshape, ishape = g.shape(data, node), g.shape(idx, node)
    r = len(dshape)
    axis = _ax(node.attrs.int("axis", 0), r, node)
    if len(ishape) != r or g.shape(upd, node) != ishape or any(i > d for i, d in zip(ishape, dshape)):
        raise node.error(f"indices {ishape} / updates do not fit data {dshape}")
    depth = dshape[axis]
    _checked_size(node, tuple(ishape) + (depth,))
    i = g.sym(idx, node)
    if g.dtype(idx) != np.int64:
        i = g.op("Cast", [i], node.name + "_i64", dtype="int64")
    i = g.op("_mod_scalar", [g.op("_plus_scalar", [i], node.name + "_shift", scalar=float(depth))],
             node.name + "_wrap", scalar=float(depth))
    dt = g.dtype(data)
    hot = g.op("one_hot", [i], node.name + "_hot", depth=depth, dtype=dt.name)          # (*ishape, D)
    u = g.op("expand_dims", [g.sym(upd, node)], node.name + "_u", axis=r)
    perm = tuple(range(axis)) + (r - 1,) + tuple(range(axis, r - 1))

    def spread(x: Symbol, tag: str) -> Symbol:
        s = g.op("sum", [x], f"{node.name}_{tag}_sum", axis=(axis,))                      # D last
        s = g.op("transpose", [s], f"{node.name}_{tag}_t", axes=perm)                     # D at axis
        pads = tuple((0, 0) if d == axis else (0, dshape[d] - ishape[d]) for d in range(r))
        if any(p[1] for p in pads):
            s = g.op("_npi_pad", [s], f"{node.name}_{tag}_pad", pad_width=pads, mode="constant",
                     constant_value=0.0)
        return s

    scattered = spread(g.op("broadcast_mul", [hot, u], node.name + "_hu"), "val")
    if reduction == "add":
        return [g.op("elemwise_add", [g.sym(data, node), scattered], node.name)]
    hit = g.op("_greater_scalar", [spread(hot, "hit")], node.name + "_hit", scalar=0.0)
    hit = g.op("Cast", [hit], node.name + "_mask", dtype="bool")
    return [g.op("_npi_where", [hit, scattered, g.sym(data, node)], node.name)]


@_reg("Resize", "Upsample")
def _resize(g: Any, node: Any) -> list:
    at = node.attrs
    x = node.input(0)
    if g.rank(x, node) != 4:
        raise node.error(f"only 4-D (NCHW) inputs are resized, got rank {g.rank(x, node)}")
    nc = g.partial_shape(x)[:2]
    shape = (1, 1) + _static_dims(g, node, x, (2, 3))   # N, C may be dynamic: never resized
    mode = at.str("mode", "nearest")
    if node.op_type == "Upsample":
        scales = at.floats("scales") if g.opset_version < 9 else tuple(
            float(v) for v in _need_const(g, node, 1, "scales").reshape(-1))
        sizes = None
        ctm = "asymmetric"
    else:
        if g.opset_version < 11:
            scales, sizes = tuple(float(v) for v in _need_const(g, node, 1, "scales").reshape(-1)), None
            ctm = "asymmetric"
        else:
            cs = _opt_const(g, node, 2, "scales")
            cz = _opt_const(g, node, 3, "sizes")
            scales = tuple(float(v) for v in cs.reshape(-1)) if cs is not None and cs.size else None
            sizes = tuple(int(v) for v in cz.reshape(-1)) if cz is not None and cz.size else None
            ctm = at.str("coordinate_transformation_mode", "half_pixel")
        if at.ints("axes", None):
            raise node.error("the axes attribute is not supported")
    if sizes is None:
        if scales is None or len(scales) != 4:
            raise node.error("needs 4 scales or sizes")
        if scales[:2] != (1.0, 1.0):
            raise node.error("resizing the batch or channel axis is not supported")
        sizes = tuple(int(math.floor(d * s)) for d, s in zip(shape, scales))
    elif len(sizes) != 4 or any(k is not None and k != z for k, z in zip(nc, sizes[:2])):
        raise node.error("resizing the batch or channel axis is not supported")
    _checked_size(node, sizes)
    oh, ow = sizes[2], sizes[3]
    xs = g.sym(x, node)
    if mode == "nearest":
        nm = at.str("nearest_mode", "round_prefer_floor")
        fh, fw = oh // shape[2], ow // shape[3]
        integral = oh == fh * shape[2] and ow == fw * shape[3] and fh == fw and fh >= 1
        # the source index is floor(out / f) (UpSampling's) for: asymmetric + floor; asymmetric +
        # round_prefer_floor at f=2 (ties go down); half-pixel + rounding (never a tie)
        if integral and fh == 1:
            return [xs]
        if integral and (ctm == "asymmetric" and (nm == "floor" or nm == "round_prefer_floor" and fh == 2)
                         or ctm in ("half_pixel", "pytorch_half_pixel")
                         and nm in ("round_prefer_floor", "round_prefer_ceil")):
            return [g.op("UpSampling", [xs], node.name, scale=fh, sample_type="nearest", num_args=1)]
        raise node.error(f"nearest resize to {oh}x{ow} with {ctm}/{nm} is not supported (equal integer "
                         f"H/W factors with asymmetric/floor or half_pixel/round_prefer_* are)")
    if mode == "linear":
        if ctm not in ("align_corners", "half_pixel", "pytorch_half_pixel"):
            raise node.error(f"linear resize with coordinate_transformation_mode {ctm!r} is not supported")
        if ctm == "pytorch_half_pixel" and (oh == 1 or ow == 1):
            raise node.error("pytorch_half_pixel to a size of 1 is not supported")
        if at.int("antialias", 0) and (oh < shape[2] or ow < shape[3]):
            raise node.error("antialiased downsampling is not supported")
        return [g.op("_contrib_BilinearResize2D", [xs], node.name, height=oh, width=ow,
                     align_corners=ctm == "align_corners")]
    raise node.error(f"mode {mode!r} is not supported (nearest, linear)")


@_reg("Trilu")
def _trilu(g: Any, node: Any) -> list:
    c = _opt_const(g, node, 1, "k")
    k = int(c.reshape(-1)[0]) if c is not None else 0
    xs = g.sym(node.input(0), node)
    if not node.attrs.int("upper", 1):
        return [g.op("_npi_tril", [xs], node.name, k=k)]
    low = g.op("_npi_tril", [xs], node.name + "_low", k=k - 1)     # triu(x, k) = x - tril(x, k-1)
    return [g.op("elemwise_sub", [xs, low], node.name)]


@_reg("IsInf")
def _isinf(g: Any, node: Any) -> list:
    xs = g.sym(node.input(0), node)
    pos, neg = node.attrs.int("detect_positive", 1), node.attrs.int("detect_negative", 1)
    inf = g.op("_npi_isinf", [xs], node.name + ("" if pos and neg else "_inf"))
    if pos and neg:
        return [inf]
    if not pos and not neg:
        return [g.op("Cast", [g.op("zeros_like", [xs], node.name + "_z")], node.name, dtype="bool")]
    side = g.op("_greater_scalar" if pos else "_lesser_scalar", [xs], node.name + "_side", scalar=0.0)
    side = g.op("Cast", [side], node.name + "_sideb", dtype="bool")
    return [g.op("broadcast_logical_and", [inf, side], node.name)]


@_reg("ThresholdedRelu", "Shrink", "Mish")
def _activation_misc(g: Any, node: Any) -> list:
    xs = g.sym(node.input(0), node)
    n = node.name
    if node.op_type == "Mish":   # x * tanh(softplus(x))
        sp = g.op("Activation", [xs], n + "_sp", act_type="softrelu")
        return [g.op("elemwise_mul", [xs, g.op("tanh", [sp], n + "_tanh")], n)]
    if node.op_type == "ThresholdedRelu":
        alpha = node.attrs.float("alpha", 1.0)
        keep = g.op("_greater_scalar", [xs], n + "_keep", scalar=alpha)
        return [g.op("elemwise_mul", [xs, keep], n)]
    lambd, bias = node.attrs.float("lambd", 0.5), node.attrs.float("bias", 0.0)
    up = g.op("elemwise_mul", [g.op("_minus_scalar", [xs], n + "_m", scalar=bias),
                               g.op("_greater_scalar", [xs], n + "_gt", scalar=lambd)], n + "_up")
    down = g.op("elemwise_mul", [g.op("_plus_scalar", [xs], n + "_p", scalar=bias),
                                 g.op("_lesser_scalar", [xs], n + "_lt", scalar=-lambd)], n + "_down")
    return [g.op("elemwise_add", [up, down], n)]


@_reg("OneHot")
def _one_hot(g: Any, node: Any) -> list:
    depth = int(_need_const(g, node, 1, "depth").reshape(-1)[0])
    values = _need_const(g, node, 2, "values").reshape(-1)
    if values.size != 2 or depth <= 0:
        raise node.error("values must hold [off, on] and depth must be positive")
    idx = node.input(0)
    rank = g.rank(idx, node)
    axis = _ax(node.attrs.int("axis", -1), rank + 1, node)
    i = g.sym(idx, node)
    i = g.op("_mod_scalar", [g.op("_plus_scalar", [i], node.name + "_shift", scalar=float(depth))],
             node.name + "_wrap", scalar=float(depth))     # negative indices count from the end
    y = g.op("one_hot", [i], node.name + ("_h" if axis != rank else ""), depth=depth,
             on_value=float(values[1]), off_value=float(values[0]), dtype=values.dtype.name)
    if axis != rank:
        y = g.op("transpose", [y], node.name, axes=tuple(range(axis)) + (rank,) + tuple(range(axis, rank)))
    return [y]


@_reg("Hardmax")
def _hardmax(g: Any, node: Any) -> list:
    x = node.input(0)
    rank = g.rank(x, node)
    default = -1 if g.opset_version >= 13 else 1
    axis = _ax(node.attrs.int("axis", default), rank, node)
    if g.opset_version < 13 and axis != rank - 1:
        raise node.error("Hardmax before opset 13 over more than the last axis is not supported")
    shape = g.shape(x, node)
    am = g.op("argmax", [g.sym(x, node)], node.name + "_arg", axis=axis)
    y = g.op("one_hot", [am], node.name + ("_h" if axis != rank - 1 else ""), depth=shape[axis],
             dtype=g.dtype(x).name)
    if axis != rank - 1:
        y = g.op("transpose", [y], node.name,
                 axes=tuple(range(axis)) + (rank - 1,) + tuple(range(axis, rank - 1)))
    return [y]


@_reg("GroupNormalization")
def _group_norm(g: Any, node: Any) -> list:
    groups = node.attrs.int("num_groups")
    x = node.input(0)
    shape = g.shape(x, node)
    c = shape[1]
    scale, bias = _need_const(g, node, 1, "scale"), _need_const(g, node, 2, "bias")
    eps = node.attrs.float("epsilon", 1e-5)
    if not groups or c % groups:
        raise node.error(f"num_groups {groups} does not divide {c} channels")
    if scale.size == c and bias.size == c:    # opset 21: per-channel scale
        gamma, beta = scale.reshape(c), bias.reshape(c)
    elif scale.size == groups and bias.size == groups:   # opset 18: per-group scale
        gamma, beta = np.repeat(scale.reshape(groups), c // groups), np.repeat(bias.reshape(groups), c // groups)
    else:
        raise node.error("scale/bias must hold one value per channel or per group")
    return [g.op("GroupNorm", [g.sym(x, node), g.param(gamma, node.name + "_gamma"),
                               g.param(beta, node.name + "_beta")], node.name, num_groups=groups, eps=eps)]


@_reg("LpNormalization")
def _lp_norm(g: Any, node: Any) -> list:
    p = node.attrs.int("p", 2)
    if p not in (1, 2):
        raise node.error(f"p={p} is not 1 or 2")
    xs = g.sym(node.input(0), node)
    nrm = g.op("norm", [xs], node.name + "_norm", ord=p, axis=(node.attrs.int("axis", -1),), keepdims=True)
    return [g.op("broadcast_div", [xs, nrm], node.name)]


@_reg("MeanVarianceNormalization")
def _mvn(g: Any, node: Any) -> list:
    axes = node.attrs.ints("axes", (0, 2, 3))
    xs = g.sym(node.input(0), node)
    n = node.name
    mean = g.op("mean", [xs], n + "_mean", axis=tuple(axes), keepdims=True)
    cen = g.op("broadcast_sub", [xs, mean], n + "_cen")
    var = g.op("mean", [g.op("square", [cen], n + "_sq")], n + "_var", axis=tuple(axes), keepdims=True)
    std = g.op("sqrt", [g.op("_plus_scalar", [var], n + "_eps", scalar=1e-9)], n + "_std")
    return [g.op("broadcast_div", [cen, std], n)]


def _per_axis(g: Any, node: Any, t: str, x: str, tag: str) -> Symbol:
    """Scale or zero point ``t`` (a scalar, or 1-D along attribute ``axis`` of ``x``), shaped to
    broadcast against ``x``."""
    c = g.const(t)
    if node.attrs.int("block_size", 0):
        raise node.error("blocked quantization (block_size) is not supported")
    rank = g.rank(x, node)
    if c is not None and c.size == 1:
        return g.param(c.reshape(()).astype(np.float32).reshape((1,) * max(rank, 1)), f"{node.name}_{tag}")
    axis = _ax(node.attrs.int("axis", 1), rank, node)
    shape = [1] * rank
    shape[axis] = -1
    s = g.sym(t, node)
    if g.dtype(t) != np.float32:
        s = g.op("Cast", [s], f"{node.name}_{tag}_f", dtype="float32")
    return g.op("Reshape", [s], f"{node.name}_{tag}_r", shape=tuple(shape))


@_reg("DequantizeLinear")
def _dequantize_linear(g: Any, node: Any) -> list:
    """(x - zero_point) * scale, in float32."""
    x = node.input(0)
    xs = g.op("Cast", [g.sym(x, node)], node.name + "_f", dtype="float32")
    if node.input(2):
        xs = g.op("broadcast_sub", [xs, _per_axis(g, node, node.input(2), x, "zp")], node.name + "_c")
    return [g.op("broadcast_mul", [xs, _per_axis(g, node, node.input(1), x, "scale")], node.name)]


@_reg("QuantizeLinear")
def _quantize_linear(g: Any, node: Any) -> list:
    """saturate(round_half_even(x / scale) + zero_point) in the zero point's type (uint8 default)."""
    x = node.input(0)
    zp = node.input(2)
    out_dt = g.dtype(zp) if zp else np.dtype(np.uint8)
    if out_dt not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise node.error(f"quantizing to {out_dt} is not supported (uint8, int8)")
    xs = g.sym(x, node)
    if g.dtype(x) != np.float32:
        xs = g.op("Cast", [xs], node.name + "_f", dtype="float32")
    q = g.op("rint", [g.op("broadcast_div", [xs, _per_axis(g, node, node.input(1), x, "scale")],
                           node.name + "_div")], node.name + "_round")
    if zp:
        q = g.op("broadcast_add", [q, _per_axis(g, node, zp, x, "zp")], node.name + "_zp")
    info = np.iinfo(out_dt)
    q = g.op("clip", [q], node.name + "_sat", a_min=float(info.min), a_max=float(info.max))
    return [g.op("Cast", [q], node.name, dtype=out_dt.name)]


# ---- integer and quantized linear operators: exact in float64, requantized as ONNX says ------
def _centered(g: Any, node: Any, q: str, zp: str, like_axis: int, tag: str) -> Symbol:
    """Tensor ``q`` minus its zero point ``zp`` (scalar or along ``like_axis``), in float64."""
    y = g.op("Cast", [g.sym(q, node)], f"{node.name}_{tag}64", dtype="float64")
    if not zp:
        return y
    c = g.const(zp)
    if c is not None and c.size == 1:
        return g.op("_minus_scalar", [y], f"{node.name}_{tag}c", scalar=float(c.reshape(-1)[0]))
    rank = g.rank(q, node)
    shape = [1] * rank
    shape[_ax(like_axis, rank, node)] = -1
    z = g.op("Reshape", [g.op("Cast", [g.sym(zp, node)], f"{node.name}_{tag}z64", dtype="float64")],
             f"{node.name}_{tag}zr", shape=tuple(shape))
    return g.op("broadcast_sub", [y, z], f"{node.name}_{tag}c")


def _scale_vec(g: Any, node: Any, t: str, rank: int, axis: int, tag: str) -> Symbol:
    c = g.const(t)
    if c is None:
        raise node.error(f"scale {t!r} must be a constant")
    shape = [1] * rank
    if c.size > 1:
        shape[axis] = c.size
    return g.param(c.astype(np.float64).reshape(shape), f"{node.name}_{tag}")


def _requantize(g: Any, node: Any, acc: Symbol, multiplier: Symbol, yzp: str) -> Symbol:
    y = g.op("rint", [g.op("broadcast_mul", [acc, multiplier], node.name + "_m")], node.name + "_r")
    dt = g.dtype(yzp) if yzp else np.dtype(np.uint8)
    if dt not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise node.error(f"output type {dt} is not supported (uint8, int8)")
    if yzp:
        c = g.const(yzp)
        if c is None or c.size != 1:
            raise node.error("the output zero point must be a constant scalar")
        y = g.op("_plus_scalar", [y], node.name + "_zp", scalar=float(c.reshape(-1)[0]))
    info = np.iinfo(dt)
    y = g.op("clip", [y], node.name + "_sat", a_min=float(info.min), a_max=float(info.max))
    return g.op("Cast", [y], node.name, dtype=dt.name)


@_reg("MatMulInteger", "QLinearMatMul")
def _matmul_integer(g: Any, node: Any) -> list:
    q = node.op_type == "QLinearMatMul"
    if q:
        a, azp, b, bzp = node.input(0), node.input(2), node.input(3), node.input(5)
    else:
        a, azp, b, bzp = node.input(0), node.input(2), node.input(1), node.input(3)
    # zero points (and scales) are per row of a, per column of b
    acc = g.op("_npi_matmul", [_centered(g, node, a, azp, -2, "a"), _centered(g, node, b, bzp, -1, "b")],
               node.name + ("_acc" if q else "_f"))
    if not q:
        return [g.op("Cast", [acc], node.name, dtype="int32")]
    rank = max(g.rank(a, node), g.rank(b, node))
    mult = g.op("broadcast_div", [g.op("broadcast_mul", [_scale_vec(g, node, node.input(1), rank, rank - 2, "as"),
                                                         _scale_vec(g, node, node.input(4), rank, rank - 1, "bs")],
                                       node.name + "_ab"),
                                  _scale_vec(g, node, node.input(6), rank, rank - 1, "ys")], node.name + "_mult")
    return [_requantize(g, node, acc, mult, node.input(7))]


@_reg("ConvInteger", "QLinearConv")
def _conv_integer(g: Any, node: Any) -> list:
    q = node.op_type == "QLinearConv"
    x, xzp = node.input(0), node.input(2)
    w, wzp = (node.input(3), node.input(5)) if q else (node.input(1), node.input(3))
    wshape = g.shape(w, node)
    xc = _centered(g, node, x, xzp, 1, "x")
    wc = _centered(g, node, w, wzp, 0, "w")
    bias = None
    if q and node.input(8):
        bias = g.op("Cast", [g.sym(node.input(8), node)], node.name + "_b64", dtype="float64")
    acc = _convolution(g, node, x, xc, wshape, wc, bias, node.name + ("_acc" if q else "_f"))
    if not q:
        return [g.op("Cast", [acc], node.name, dtype="int32")]
    rank = g.rank(x, node)
    mult = g.op("broadcast_div", [g.op("broadcast_mul", [_scale_vec(g, node, node.input(1), rank, 1, "xs"),
                                                         _scale_vec(g, node, node.input(4), rank, 1, "ws")],
                                       node.name + "_xw"),
                                  _scale_vec(g, node, node.input(6), rank, 1, "ys")], node.name + "_mult")
    return [_requantize(g, node, acc, mult, node.input(7))]


@_reg("DynamicQuantizeLinear")
def _dynamic_quantize_linear(g: Any, node: Any) -> list:
    """uint8 quantization with the scale and zero point of x's range (widened to hold 0):
    scale = (max(0, max x) - min(0, min x)) / 255, zero point = saturate(round(-min / scale))."""
    x = node.input(0)
    xs = g.sym(x, node)
    if g.dtype(x) != np.float32:
        raise node.error("only float32 inputs are quantized")
    n = node.name

    def scalar(y: Symbol, tag: str) -> Symbol:   # ONNX's 0-d outputs
        return g.op("_np_reshape", [y], f"{n}_{tag}", newshape=())

    lo = g.op("_minimum_scalar", [g.op("min", [xs], n + "_min")], n + "_lo", scalar=0.0)
    hi = g.op("_maximum_scalar", [g.op("max", [xs], n + "_max")], n + "_hi", scalar=0.0)
    scale = g.op("_div_scalar", [g.op("elemwise_sub", [hi, lo], n + "_range")], n + "_scale1", scalar=255.0)
    zp = g.op("clip", [g.op("rint", [g.op("negative", [g.op("elemwise_div", [lo, scale], n + "_lods")],
                                          n + "_neg")], n + "_zpr")], n + "_zpf", a_min=0.0, a_max=255.0)
    q = g.op("rint", [g.op("broadcast_div", [xs, scale], n + "_div")], n + "_round")
    q = g.op("clip", [g.op("broadcast_add", [q, zp], n + "_shift")], n + "_sat", a_min=0.0, a_max=255.0)
    return [g.op("Cast", [q], n, dtype="uint8"), scalar(scale, "scale"),
            scalar(g.op("Cast", [zp], n + "_zp8", dtype="uint8"), "zero_point")]
