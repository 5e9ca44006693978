"""Forward shape rules (``infer_shape=``) agree with the kernels they stand in for.

Inference uses an operator's rule instead of running its kernel on torch's "meta" device (the
first meta run of a process imports torch's decompositions, sympy and torch._dynamo: over a
second). A rule must say exactly what the meta run says: the same output shapes and dtypes for
inputs that fit, and None (the meta run then raises the kernel's error) or an MXNetError for
inputs that do not. The registry test covers every sample of every operator with a rule; the
grids below add random attributes and shapes, unfit ones included, per rule.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError, dtype_name
from hybridnet.ir.graph import Node
from hybridnet.ops import registry
from hybridnet.compiler import infer

from . import harness

RULE_CASES = [c for c in harness.all_cases()
              if c[1].infer_shape_rule is not None and c[3].check_shape
              and any(a is not None for a in c[3].inputs) and not c[1].open_attrs]

# Samples a rule leaves to the meta run on purpose (None), with the reason.
DEFERRED = {
    "LeakyReLU": "prelu with a gamma of rank > 1 broadcasts in the kernel",
    "softmax": "use_length: the kernel checks the length input",
    "log_softmax": "use_length: the kernel checks the length input",
    "softmin": "use_length: the kernel checks the length input",
    "_contrib_boolean_mask": "the output size depends on the mask's values",
}


def _meta(op: registry.OpDef, attrs: dict, shapes: list, dtypes: list) -> list:
    """[(shape, dtype name)] of the kernel run on meta tensors (predict mode)."""
    metas = [None if s is None else torch.empty(s, dtype=getattr(torch, d), device="meta")
             for s, d in zip(shapes, dtypes)]
    kw = dict(attrs)
    if op.train_aware:
        kw["is_train"] = False
    with torch.no_grad():
        out = op.kernel(*metas, **kw)
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    return [(tuple(o.shape), dtype_name(o.dtype)) for o in outs]


def _node(op: registry.OpDef, attrs: dict, n_inputs: int) -> Node:
    ins = [(Node(None, f"in{i}"), 0) for i in range(n_inputs)]
    return Node(op, "node", attrs, ins)


@pytest.mark.parametrize("case", RULE_CASES, ids=[c[0] for c in RULE_CASES])
def test_rule_equals_meta_run_and_real_kernel(case: tuple) -> None:
    """Inference through the rule (shapes and dtypes) == the meta run == the real outputs."""
    _, op, _, sample = case
    arrays = [a for a in harness.prepare_inputs(sample, np.float32)]
    if any(a is None for a in arrays):  # optional inputs left out: trailing Nones only
        assert all(a is None for a in arrays[arrays.index(None):])
        arrays = arrays[:arrays.index(None)]
    shapes = [tuple(a.shape) for a in arrays]
    dtypes = [str(a.dtype) for a in arrays]
    rule = op.infer_shape_rule(dict(sample.attrs), list(shapes))
    if rule is None:
        assert op.name in DEFERRED, f"{op.name}: the rule gives up on the valid sample {sample.attrs} {shapes}"
        return
    node = _node(op, op.kernel_attrs(dict(sample.attrs)), len(shapes))
    got_shapes, got_dtypes = infer._run(node, shapes, dtypes)
    real = harness.run_eager(op, sample, np.float32)
    try:
        want = _meta(op, op.kernel_attrs(dict(sample.attrs)), shapes, dtypes)
    except RuntimeError:  # a kernel that reads values (optimizer steps): the real run decides
        want = [(r.shape, str(r.dtype)) for r in real]
    assert [tuple(s) for s in rule] == [w[0] for w in want], f"{op.name}: rule {rule}, kernel {want}"
    assert list(zip(got_shapes, got_dtypes)) == want, f"{op.name}: inference {got_shapes} {got_dtypes}, kernel {want}"
    assert [r.shape for r in real] == [w[0] for w in want]


def test_every_model_operator_has_a_rule() -> None:
    """The operators of the seed nets and the model zoo's conv nets infer by rule (no meta run)."""
    for name in ("Convolution", "Deconvolution", "Pooling", "FullyConnected", "BatchNorm", "Activation",
                 "Reshape", "Flatten", "dot", "batch_dot", "elemwise_add", "broadcast_add", "Concat",
                 "Dropout", "softmax", "log_softmax", "SoftmaxOutput", "SoftmaxActivation", "Embedding",
                 "LeakyReLU", "transpose", "expand_dims", "slice", "slice_axis", "sum", "mean", "LRN", "clip",
                 "relu", "LayerNorm", "InstanceNorm", "RNN", "_rnn_param_concat", "broadcast_to", "zeros_like"):
        assert registry.get(name).infer_shape_rule is not None, name


# ---- grids: random attributes and shapes, unfit ones included ---------------------------------
def _agree(name: str, attrs: dict, shapes: list, strict: bool = True) -> bool:
    """Rule, meta run and the real kernel (on small random arrays) agree: where both runs work
    the rule gives their shapes (or, unless ``strict``, None: torch accepts some inputs MXNet
    would reject, and the rule leaves those to the meta run); where the real kernel raises the
    rule gives None or an MXNetError. Returns whether the real kernel worked."""
    op = registry.get(name)
    kw = op.kernel_attrs(attrs)
    try:
        want = _meta(op, kw, shapes, ["float32"] * len(shapes))
    except Exception:  # noqa: BLE001 - any kernel error: the rule must not claim a shape
        want = None
    try:
        real = op.kernel(*[torch.rand(s) for s in shapes], **(dict(kw, is_train=False) if op.train_aware else kw))
        real = [real] if isinstance(real, torch.Tensor) else list(real)
    except Exception:  # noqa: BLE001
        real = None
    try:
        got = op.infer_shape_rule(dict(attrs), list(shapes))
    except MXNetError:
        got = "error"
    where = f"{name} {attrs} {shapes}"
    if real is None or want is None:
        assert got is None or got == "error", f"{where}: the kernel raises, rule says {got}"
        return False
    assert [tuple(r.shape) for r in real] == [w[0] for w in want], f"{where}: meta {want}, real {real}"
    if got is None and (not strict or any(0 in w[0] for w in want)):
        return False  # (a 0 in a shape means "unknown" to inference: the rule leaves it)
    assert got not in (None, "error"), f"{where}: the kernel gives {want}, the rule gives up ({got})"
    assert [tuple(s) for s in got] == [w[0] for w in want], f"{where}: rule {got}, kernel {want}"
    return True


def _grid(seed: int, n: int, make) -> int:
    """How many of ``n`` random cases from ``make(rng)`` fit (each checked by ``_agree``)."""
    rng = np.random.RandomState(seed)
    return sum(_agree(*make(rng)) for _ in range(n))


def _choice(rng: np.random.RandomState, options: list):
    return options[rng.randint(len(options))]


def test_convolution_grid() -> None:
    def make(rng):
        nd = rng.randint(1, 4)
        g = _choice(rng, [1, 1, 2, 3])
        cin = g * rng.randint(1, 3) + _choice(rng, [0, 0, 0, 1])
        nf = g * rng.randint(1, 3) + _choice(rng, [0, 0, 0, 1])
        k = tuple(rng.randint(1, 4) for _ in range(nd))
        layout = _choice(rng, [None, None, {1: "NWC", 2: "NHWC", 3: "NDHWC"}[nd]])
        attrs = {"kernel": k, "num_filter": nf, "num_group": g, "no_bias": bool(rng.randint(2)), "layout": layout}
        for key, lo, hi in (("stride", 0, 3), ("pad", -1, 3), ("dilate", 0, 3)):
            if rng.rand() < 0.6:
                attrs[key] = tuple(rng.randint(lo, hi + 1) for _ in range(_choice(rng, [nd, nd, nd, 1, 2])))
        # torch reads only the first value of a too long stride/pad/dilate for 1-D: the rule leaves
        # such attributes (which MXNet rejects) to the meta run
        strict = all(len(attrs.get(key, ())) in (0, 1, nd) for key in ("stride", "pad", "dilate"))
        spatial = tuple(rng.randint(1, 9) for _ in range(nd))
        data = (2, cin) + spatial
        w = (nf, cin // g if g else cin) + k
        if layout:
            data, w = (data[0],) + data[2:] + (data[1],), (w[0],) + w[2:] + (w[1],)
        shapes = [data, w] + ([] if attrs["no_bias"] else [(_choice(rng, [nf, nf, nf + 1]),)])
        return "Convolution", attrs, shapes, strict
    assert _grid(0, 400, make) > 80


def test_deconvolution_grid() -> None:
    def make(rng):
        nd = rng.randint(1, 4)
        g = _choice(rng, [1, 1, 2])
        cin = g * rng.randint(1, 3) + _choice(rng, [0, 0, 0, 1])
        nfg = rng.randint(1, 3)
        k = tuple(rng.randint(1, 4) for _ in range(nd))
        attrs = {"kernel": k, "num_filter": nfg * g, "num_group": g, "no_bias": bool(rng.randint(2))}
        for key, lo, hi in (("stride", 1, 3), ("pad", 0, 2), ("dilate", 1, 2), ("adj", 0, 2)):
            if rng.rand() < 0.5:
                attrs[key] = tuple(rng.randint(lo, hi + 1) for _ in range(_choice(rng, [nd, nd, 1])))
        spatial = tuple(rng.randint(1, 6) for _ in range(nd))
        if rng.rand() < 0.2:
            attrs["target_shape"] = tuple(rng.randint(1, 14) for _ in range(nd))
        shapes = [(1, cin) + spatial, (cin, nfg) + k] + ([] if attrs["no_bias"] else [(nfg * g,)])
        # torch's transposed convolution accepts input channels that num_group does not divide
        return "Deconvolution", attrs, shapes, cin % g == 0
    assert _grid(1, 400, make) > 100


def test_pooling_grid() -> None:
    def make(rng):
        nd = rng.randint(1, 4)
        attrs = {"pool_type": _choice(rng, ["max", "avg", "sum", "lp"]),
                 "pooling_convention": _choice(rng, ["valid", "full", "same"]),
                 "kernel": tuple(rng.randint(1, 5) for _ in range(_choice(rng, [nd, nd, nd, nd + 1])))}
        if rng.rand() < 0.6:
            attrs["stride"] = tuple(rng.randint(1, 4) for _ in range(_choice(rng, [nd, nd, 1])))
        if rng.rand() < 0.5:
            attrs["pad"] = tuple(rng.randint(0, 3) for _ in range(nd))
        if attrs["pool_type"] == "lp":
            attrs["p_value"] = _choice(rng, [1, 2, 3, 4])
        if rng.rand() < 0.15:
            attrs["global_pool"] = True
        data = (2, 3) + tuple(rng.randint(1, 9) for _ in range(nd))
        if rng.rand() < 0.2:
            attrs["layout"] = {1: "NWC", 2: "NHWC", 3: "NDHWC"}[nd]
            data = (data[0],) + data[2:] + (data[1],)
        return "Pooling", attrs, [data]
    assert _grid(2, 500, make) > 150


def test_fully_connected_grid() -> None:
    def make(rng):
        data = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 4)))
        flatten = bool(rng.randint(2))
        k = int(np.prod(data[1:])) if flatten and len(data) > 1 else data[-1]
        if flatten and len(data) == 1:
            k = 1
        nh = rng.randint(1, 4)
        attrs = {"num_hidden": nh, "flatten": flatten, "no_bias": bool(rng.randint(2))}
        w = (_choice(rng, [nh, nh, nh + 1]), _choice(rng, [k, k, k, k + 1]))
        bias = (_choice(rng, [nh, nh, nh, nh + 1]),)
        shapes = [data, w] + ([] if attrs["no_bias"] else [bias])
        # F.linear broadcasts a bias of another length: left to the meta run
        return "FullyConnected", attrs, shapes, attrs["no_bias"] or bias == (nh,)
    assert _grid(3, 300, make) > 80


def test_fully_connected_rule_checks_num_hidden() -> None:
    """The rule names the operator, the shapes and the fix when the weight does not have
    num_hidden rows (MXNet checks num_hidden against the weight too)."""
    rule = registry.get("FullyConnected").infer_shape_rule
    with pytest.raises(MXNetError, match=r"FullyConnected: num_hidden=5 but the weight has shape \(4, 3\).*"
                                          r"set num_hidden=4"):
        rule({"num_hidden": 5}, [(2, 3), (4, 3), (5,)])
    data, weight = mx.sym.var("data"), mx.sym.var("weight")
    y = mx.sym.FullyConnected(data, weight, num_hidden=5, no_bias=True, name="fc")
    with pytest.raises(MXNetError, match=r"node 'fc'.*num_hidden=5.*\(4, 3\)"):
        y.infer_shape(data=(2, 3), weight=(4, 3))


def test_matrix_product_grids() -> None:
    def make_dot(rng):
        ls = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 4)))
        rs = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 4)))
        return "dot", {"transpose_a": bool(rng.randint(2)), "transpose_b": bool(rng.randint(2))}, [ls, rs]

    def make_batch_dot(rng):
        nd = rng.randint(2, 5)
        ls = tuple(rng.randint(1, 4) for _ in range(nd))
        rs = tuple(rng.randint(1, 4) for _ in range(_choice(rng, [nd, nd, nd, nd + 1])))
        if rng.rand() < 0.7:
            rs = ls[:-2] + rs[len(ls) - 2:] if len(rs) == len(ls) else rs
        return "batch_dot", {"transpose_a": bool(rng.randint(2)), "transpose_b": bool(rng.randint(2))}, [ls, rs]
    assert _grid(4, 400, make_dot) > 60
    assert _grid(5, 300, make_batch_dot) > 30


def test_binary_broadcast_grid() -> None:
    def make(rng):
        a = tuple(_choice(rng, [1, 2, 3]) for _ in range(rng.randint(0, 4)))
        b = tuple(_choice(rng, [1, 2, 3]) for _ in range(rng.randint(0, 4)))
        return _choice(rng, ["broadcast_add", "elemwise_mul", "broadcast_greater", "broadcast_power"]), {}, [a, b]
    assert _grid(6, 300, make) > 80


def test_shape_operator_grids() -> None:
    def make_reshape(rng):
        data = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 5)))
        spec = tuple(_choice(rng, [0, -1, -2, -3, -4, 1, 2, 3, 4, 6]) for _ in range(rng.randint(1, 5)))
        return "Reshape", {"shape": spec, "reverse": bool(rng.randint(2))}, [data]

    def make_transpose(rng):
        nd = rng.randint(1, 5)
        axes = tuple(rng.randint(-nd - 1, nd + 1) for _ in range(_choice(rng, [0, nd, nd, nd - 1])))
        if rng.rand() < 0.5:
            axes = tuple(rng.permutation(nd))
        return "transpose", {"axes": axes}, [tuple(rng.randint(1, 5) for _ in range(nd))]

    def make_expand(rng):
        nd = rng.randint(0, 4)
        return "expand_dims", {"axis": rng.randint(-nd - 2, nd + 2)}, [tuple(rng.randint(1, 4) for _ in range(nd))]

    def make_concat(rng):
        nd = rng.randint(1, 4)
        base = tuple(rng.randint(1, 4) for _ in range(nd))
        dim = rng.randint(-nd - 1, nd + 1)
        shapes = []
        for _ in range(rng.randint(1, 4)):
            s = list(base)
            s[dim % nd] = rng.randint(1, 4)
            if rng.rand() < 0.1:
                s[rng.randint(nd)] += 1
            shapes.append(tuple(s) if rng.rand() > 0.05 else tuple(s) + (1,))
        return "Concat", {"dim": dim, "num_args": len(shapes)}, shapes

    def make_slice_axis(rng):
        nd = rng.randint(1, 4)
        end = _choice(rng, [None, rng.randint(-5, 6)])
        return "slice_axis", {"axis": rng.randint(-nd - 1, nd + 1), "begin": rng.randint(-5, 6), "end": end}, \
            [tuple(rng.randint(1, 6) for _ in range(nd))]

    def make_reduce(rng):
        nd = rng.randint(0, 4)
        axis = _choice(rng, [None, (), rng.randint(-nd - 1, nd + 1) if nd else 0,
                             tuple(rng.randint(-nd, nd) for _ in range(rng.randint(1, 3))) if nd else (0,)])
        attrs = {"keepdims": bool(rng.randint(2)), "exclude": bool(rng.randint(2))}
        if axis is not None:
            attrs["axis"] = axis
        return _choice(rng, ["sum", "mean", "max", "prod"]), attrs, [tuple(rng.randint(1, 4) for _ in range(nd))]

    def make_slice(rng):
        nd = rng.randint(1, 4)
        k = rng.randint(1, nd + 2)
        pick = lambda: _choice(rng, [None, rng.randint(-5, 6)])  # noqa: E731
        attrs = {"begin": tuple(pick() for _ in range(k)), "end": tuple(pick() for _ in range(k))}
        if rng.rand() < 0.6:
            attrs["step"] = tuple(_choice(rng, [None, 1, 2, -1, -2, 0]) for _ in range(k))
        return "slice", attrs, [tuple(rng.randint(1, 6) for _ in range(nd))]

    def make_flatten(rng):
        return "Flatten", {}, [tuple(rng.randint(1, 4) for _ in range(rng.randint(0, 5)))]

    assert _grid(7, 400, make_reshape) > 40
    assert _grid(8, 200, make_transpose) > 50
    assert _grid(9, 100, make_expand) > 30
    assert _grid(10, 200, make_concat) > 60
    assert _grid(11, 200, make_slice_axis) > 30
    assert _grid(12, 300, make_reduce) > 80
    assert _grid(13, 40, make_flatten) == 40
    assert _grid(15, 400, make_slice) > 40


def test_activation_family_grid() -> None:
    def make(rng):
        nd = rng.randint(0, 5)
        data = tuple(rng.randint(1, 4) for _ in range(nd))
        name = _choice(rng, ["softmax", "log_softmax", "SoftmaxActivation", "LeakyReLU", "LRN", "Dropout",
                             "SoftmaxOutput", "Embedding"])
        if name in ("softmax", "log_softmax"):
            return name, {"axis": rng.randint(-nd - 1, nd + 1)}, [data]
        if name == "SoftmaxActivation":
            return name, {"mode": _choice(rng, ["channel", "instance"])}, [data]
        if name == "LeakyReLU":
            act = _choice(rng, ["leaky", "elu", "selu", "gelu", "rrelu", "prelu"])
            shapes = [data] + ([(_choice(rng, [1, 2, 3]),)] if act == "prelu" else [])
            return name, {"act_type": act}, shapes
        if name == "LRN":
            return name, {"nsize": rng.randint(1, 4)}, [data]
        if name == "SoftmaxOutput":
            return name, {}, [data, data[:1]]
        if name == "Embedding":
            return name, {"input_dim": 5, "output_dim": 3}, [data, (5, 3)]
        return name, {"p": 0.5}, [data]
    assert _grid(14, 400, make) > 150


def test_batch_norm_grid() -> None:
    def make(rng):
        nd = rng.randint(1, 5)
        data = tuple(rng.randint(1, 4) for _ in range(nd))
        axis = rng.randint(-nd - 1, nd + 1)
        c = data[axis % nd]
        params = [(c,)] * 4 if rng.rand() < 0.7 else [(_choice(rng, [c, c + 1, 1]),) for _ in range(4)]
        attrs = {"axis": axis, "output_mean_var": bool(rng.randint(2)), "fix_gamma": bool(rng.randint(2))}
        # an axis out of range or parameters of another size are MXNet's errors; the kernel may
        # still run (fix_gamma ignores gamma): the rule leaves them to the meta run
        return "BatchNorm", attrs, [data] + params, -nd <= axis < nd and all(p == (c,) for p in params)
    assert _grid(16, 300, make) > 100


def test_normalization_and_broadcast_to_grids() -> None:
    def make_norm(rng):
        nd = rng.randint(1, 5)
        data = tuple(rng.randint(1, 4) for _ in range(nd))
        if rng.rand() < 0.5:
            axis = rng.randint(-nd - 1, nd + 1)
            c = data[axis % nd]
            p = [(c,)] * 2 if rng.rand() < 0.7 else [(_choice(rng, [c, c + 1]),) for _ in range(2)]
            return "LayerNorm", {"axis": axis, "output_mean_var": bool(rng.randint(2))}, [data] + p, -nd <= axis < nd
        c = data[1] if nd > 1 else 1
        p = [(c,)] * 2 if rng.rand() < 0.7 else [(_choice(rng, [c, c + 1]),) for _ in range(2)]
        # (gamma/beta of another size broadcast in the kernel: MXNet's error, left to the meta run)
        return "InstanceNorm", {}, [data] + p, all(q == (c,) for q in p)

    def make_broadcast_to(rng):
        nd = rng.randint(1, 4)
        data = tuple(_choice(rng, [1, 1, 2, 3]) for _ in range(nd))
        shape = tuple(_choice(rng, [0, 1, 2, 3, 4]) for _ in range(_choice(rng, [nd, nd, nd, nd + 1])))
        return "broadcast_to", {"shape": shape}, [data]
    assert _grid(17, 300, make_norm) > 100
    assert _grid(18, 200, make_broadcast_to) > 20


def test_rnn_rule_checks_every_input() -> None:
    """The fused RNN's rule gives its outputs only for inputs of the sizes the kernel requires."""
    rule = registry.get("RNN").infer_shape_rule
    attrs = {"mode": "lstm", "state_size": 4, "num_layers": 1, "state_outputs": True}
    n_params = 4 * 4 * (3 + 4 + 2)
    good = [(5, 2, 3), (n_params,), (1, 2, 4), (1, 2, 4)]
    assert rule(attrs, good) == [(5, 2, 4), (1, 2, 4), (1, 2, 4)]
    assert _agree("RNN", attrs, good)
    for i, bad in [(1, (n_params + 1,)), (2, (1, 3, 4)), (3, (2, 2, 4)), (0, (5, 2))]:
        shapes = list(good)
        shapes[i] = bad
        assert rule(attrs, shapes) is None, (i, bad)
        assert not _agree("RNN", attrs, shapes)


# ---- the registry fills defaults; dtypes the rule cannot see ----------------------------------
def test_rules_see_complete_attributes() -> None:
    """Every shape/type rule receives the attributes with the kernel's defaults filled in, once,
    by the registry (so a rule never repeats a default); the rule as written is __wrapped__."""
    seen: dict = {}
    op = registry.get("Convolution")
    rule = op.infer_shape_rule.__wrapped__

    def probe(attrs: dict, shapes: list) -> list:
        seen.update(attrs)
        return rule(attrs, shapes)
    wrapped = op._with_defaults(probe)
    assert wrapped({"kernel": (3, 3), "num_filter": 4}, [(1, 2, 5, 5), (4, 2, 3, 3), (4,)]) == [(1, 4, 3, 3)]
    assert seen["stride"] == () and seen["num_group"] == 1 and seen["no_bias"] is False and seen["layout"] is None
    assert op.complete_attrs({"num_group": 2})["num_group"] == 2
    assert "kernel" not in op.defaults and "num_filter" not in op.defaults  # required: no default
    for o in registry.all_ops():
        for r in (o.param_shapes, o.infer_shape_rule, o.infer_type_rule, o.infer_inputs_rule,
                  o.partial_outputs_rule, o.infer_subgraphs_rule):
            assert r is None or hasattr(r, "__wrapped__"), o.name


def test_mixed_input_dtypes_go_to_the_meta_run() -> None:
    """A rule sees shapes only: with inputs of several dtypes the meta run promotes them, as the
    kernel does (float16 data with float32 BatchNorm statistics gives float32 mean/var)."""
    bn = registry.get("BatchNorm")
    node = _node(bn, {"output_mean_var": True, "fix_gamma": False}, 5)
    shapes = [(2, 3, 4), (3,), (3,), (3,), (3,)]
    _, dtypes = infer._run(node, shapes, ["float16"] + ["float32"] * 4)
    assert dtypes == ["float16", "float32", "float32"]
    add = registry.get("broadcast_add")
    shapes_out, dtypes = infer._run(_node(add, {}, 2), [(2, 3), (3,)], ["float32", "float64"])
    assert shapes_out == [(2, 3)] and dtypes == ["float64"]
    shapes_out, dtypes = infer._run(_node(registry.get("sum"), {}, 1), [(2, 3)], ["bool"])
    assert shapes_out == [(1,)] and dtypes == ["int64"]
    # a kernel that reads values cannot run on meta tensors: its dtype rule keeps it on the rule
    mp = _node(registry.get("_mp_adamw_update"), {"lr": 0.1, "eta": 1.0}, 6)
    out = infer._run(mp, [(3,)] * 5 + [(1,)], ["float16", "float16"] + ["float32"] * 4)
    assert out == ([(3,)], ["float16"])


def test_unfit_inputs_still_raise_clear_errors() -> None:
    """Where a rule gives up, inference runs the kernel on meta tensors, whose error names the
    node, the operator, the shapes and the fix."""
    data, weight = mx.sym.var("data"), mx.sym.var("weight")
    y = mx.sym.Convolution(data, weight, kernel=(3, 3), num_filter=4, no_bias=True, name="conv")
    with pytest.raises(MXNetError, match=r"conv.*3 channels.*expects 2.*in_channels"):
        y.infer_shape(data=(1, 3, 8, 8), weight=(4, 2, 3, 3))
    p = mx.sym.Pooling(data, kernel=(5, 5), name="pool")
    with pytest.raises(MXNetError, match=r"pool.*Pooling"):
        p.infer_shape(data=(1, 1, 3, 3))
    fc = mx.sym.FullyConnected(data, weight, num_hidden=4, no_bias=True, name="fc")
    with pytest.raises(MXNetError, match=r"fc.*5 features.*expects 6"):
        fc.infer_shape(data=(2, 5), weight=(4, 6))


def test_partial_inference_through_rules() -> None:
    """Unknown dimensions still flow (sentinel runs now go through the rules): a conv net with
    an unknown batch size infers the batch through to its output."""
    x = mx.sym.var("data")
    y = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, name="c")
    y = mx.sym.Pooling(y, kernel=(2, 2), stride=(2, 2), name="p")
    y = mx.sym.FullyConnected(mx.sym.Flatten(y), num_hidden=5, name="f")
    with mx.np_shape(True):
        args, outs, _ = y.infer_shape_partial(data=(-1, 3, 10, 10))
    assert outs == [(-1, 5)]
    assert dict(zip(y.list_arguments(), args))["f_weight"] == (5, 64)
