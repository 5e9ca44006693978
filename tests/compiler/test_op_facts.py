"""Operator facts live on OpDef, and the compiler reads them instead of operator names.

The old tables (compiler/aliasing.py's ALIASING_OPS, passes/inference.py's identities and
BatchNorm names, passes/onednn.py's activations, constfold's ``name.endswith("_update")``,
passes/export.py's elemwise -> broadcast map) are written out here as they were, to show that
every operator they named has its fact on its OpDef.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

import hybridnet
from hybridnet import sym
from hybridnet.compiler.passes import cse, split_parameter_prologue
from hybridnet.compiler.passes.constfold import hoistable, mutated_inputs
from hybridnet.compiler.passes.onednn import absorbable_activation
from hybridnet.ir.graph import Graph, Node
from hybridnet.ops import registry
from hybridnet.ops.registry import ActivationChoice, OpDef

# ---- the compiler names no operator ------------------------------------------------------------
COMPILER = Path(hybridnet.__file__).parent / "compiler"

# String literals in compiler modules that equal an operator name (or alias) without naming one.
ALLOWED = {
    ("passes/onednn.py", "flatten"): "FullyConnected's attribute (Flatten's alias is also 'flatten')",
    ("passes/onednn.py", "pad"): "a convolution geometry attribute (there is also a Pad operator)",
    ("passes/fuse.py", "clip"): "pick's mode value",
}


def op_name_literals(source: str) -> list:
    """(line, text) of each string literal in ``source`` that is an operator's name or alias.
    Docstrings and the fixed parts of f-strings (``f"{name}_copy{k}"``: a node name) do not
    count."""
    names = registry.names()
    tree = ast.parse(source)
    skip: set = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        elif isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
            and id(node) not in skip]


def _compiler_literals() -> list:
    found = []
    for path in sorted(COMPILER.rglob("*.py")):
        rel = path.relative_to(COMPILER).as_posix()
        found += [(rel, line, text) for line, text in op_name_literals(path.read_text())]
    return found


def test_no_compiler_module_names_an_operator():
    bad = [f"hybridnet/compiler/{rel}:{line}: {text!r}" for rel, line, text in _compiler_literals()
           if (rel, text) not in ALLOWED]
    assert not bad, ("compiler modules must read operator facts (OpDef fields) or take OpDef objects "
                     "from hybridnet.ops.handles, not name operators:\n" + "\n".join(bad))


def test_allowed_literals_still_occur():
    seen = {(rel, text) for rel, _, text in _compiler_literals()}
    assert set(ALLOWED) <= seen, f"stale entries: {set(ALLOWED) - seen}"


def test_a_planted_operator_name_is_caught():
    planted = ('def f(node):\n'
               '    """A docstring may say Convolution."""\n'
               '    name = f"{node.name}_copy{1}"  # a node name, not an operator\n'
               '    return node.op.name in ("Convolution", "stop_gradient") or name\n')
    assert op_name_literals(planted) == [(4, "Convolution"), (4, "stop_gradient")]


# ---- the old tables, as they were before the facts moved onto OpDef ----------------------------
OLD_ALIASING_OPS = [
    "Reshape", "Flatten", "reshape_like", "expand_dims", "squeeze", "transpose", "SwapAxis",
    "slice", "slice_axis", "slice_like", "Crop", "SliceChannel", "_split_v2", "SequenceLast",
    "broadcast_to", "broadcast_axis", "broadcast_like", "diag", "_linalg_extractdiag",
    "space_to_depth", "_image_crop",
    "MakeLoss", "Cast", "amp_cast", "amp_multicast", "Dropout", "SequenceMask",
    "IdentityAttachKLSparseReg", "LinearRegressionOutput", "MAERegressionOutput", "SVMOutput",
    "_image_random_hue", "_image_random_saturation",
    "_contiguous", "_channels_last", "_onednn_conv_weight", "_onednn_linear_weight",
    "_batchnorm_act", "_add_act", "_act",
    "mp_sgd_mom_update",
    "_foreach", "_while_loop", "_cond",
]
OLD_INFERENCE_IDENTITY_OPS = ["_copy", "BlockGrad", "make_loss", "MakeLoss", "_identity_with_attr_like_rhs"]
OLD_CONTROL_FLOW = ["_foreach", "_while_loop", "_cond"]
OLD_EXPORT_BROADCAST = {"elemwise_add": "broadcast_add", "elemwise_sub": "broadcast_sub",
                        "elemwise_mul": "broadcast_mul", "elemwise_div": "broadcast_div"}


def _old_writes_inputs(name: str) -> bool:
    """constfold's old rule: these operators write into (all) their inputs."""
    return name.endswith("_update") or name == "reset_arrays"


# operators the old rule named whose kernel, called as a graph calls it (no ``out=``), writes no
# input: MXNet's FMutateInputs is empty for them too (the weight is written only through out=)
WRITE_ONLY_THROUGH_OUT = {"sgd_update", "signsgd_update", "multi_sgd_update", "preloaded_multi_sgd_update"}


def test_old_tables_moved_onto_opdef():
    for name in OLD_ALIASING_OPS:
        assert registry.get(name).returns_view, name
    for name in OLD_INFERENCE_IDENTITY_OPS:
        assert registry.get(name).is_predict_identity({}), name
    for name in OLD_CONTROL_FLOW:
        assert registry.get(name).num_subgraphs, name
    for name, target in OLD_EXPORT_BROADCAST.items():
        assert registry.get(name).export_broadcast == target
    assert [op.name for op in registry.all_ops() if op.export_broadcast] == list(OLD_EXPORT_BROADCAST)
    assert [op.name for op in registry.all_ops() if op.amp_cast] == ["amp_cast", "amp_multicast"]
    assert [op.name for op in registry.all_ops() if op.channel_affine_rule] == ["BatchNorm", "BatchNorm_v1"]
    assert sorted(op.name for op in registry.all_ops() if op.absorbs_channel_affine_rule) == \
        ["Convolution", "FullyConnected"]
    assert [op.name for op in registry.all_ops() if not op.dtype_is_output] == ["Embedding"]


def test_dropout_is_a_predict_identity_unless_it_drops_in_predict_mode():
    dropout = registry.get("Dropout")
    assert dropout.is_predict_identity({}) and dropout.is_predict_identity({"p": 0.3, "mode": "training"})
    assert dropout.is_predict_identity({"p": 0.0, "mode": "always"})
    assert not dropout.is_predict_identity({"p": 0.3, "mode": "always"})
    assert [op.name for op in registry.all_ops() if op.predict_identity is not False] == \
        sorted(OLD_INFERENCE_IDENTITY_OPS + ["Dropout"], key=[o.name for o in registry.all_ops()].index)


def _node(name: str, attrs: dict, n_inputs: int = 1) -> Node:
    return Node(registry.get(name), name, attrs, [(Node(None, f"x{i}"), 0) for i in range(n_inputs)])


@pytest.mark.parametrize("name, attrs, expected", [
    ("Activation", {"act_type": "relu"}, ("relu", 0.0, 0.0)),
    ("Activation", {"act_type": "sigmoid"}, ("sigmoid", 0.0, 0.0)),
    ("Activation", {"act_type": "tanh"}, ("tanh", 0.0, 0.0)),
    ("Activation", {"act_type": "softrelu"}, None),
    ("relu", {}, ("relu", 0.0, 0.0)),
    ("sigmoid", {}, ("sigmoid", 0.0, 0.0)),
    ("tanh", {}, ("tanh", 0.0, 0.0)),
    ("clip", {"a_min": 0.0, "a_max": 6.0}, ("hardtanh", 0.0, 6.0)),
    ("clip", {"a_min": 3.0, "a_max": 1.0}, None),
    ("LeakyReLU", {}, ("leaky_relu", 0.25, 0.0)),
    ("LeakyReLU", {"act_type": "leaky", "slope": 0.1}, ("leaky_relu", 0.1, 0.0)),
    ("LeakyReLU", {"act_type": "elu"}, None),
    ("softsign", {}, None),
])
def test_fused_activation_as_the_old_table(name, attrs, expected):
    got = absorbable_activation(_node(name, attrs))
    assert got == expected and (got is None or isinstance(got, ActivationChoice))


def _old_channel_axis_matches(producer: str, pattrs: dict, axis: int) -> bool:
    """passes/inference.py's old check of BatchNorm's axis against the producer's channels."""
    if producer == "Convolution":
        ndim = len(pattrs["kernel"]) + 2
        layout = pattrs.get("layout")
        channel = ndim - 1 if isinstance(layout, str) and len(layout) > 2 and layout[-1] == "C" else 1
        return axis % ndim == channel if -ndim <= axis < ndim else False
    if pattrs.get("flatten", True):
        return axis in (1, -1)
    return axis == -1


@pytest.mark.parametrize("producer, pattrs", [
    ("Convolution", {"kernel": (3, 3), "num_filter": 4}),
    ("Convolution", {"kernel": (3, 3), "num_filter": 4, "layout": "NHWC"}),
    ("Convolution", {"kernel": (3,), "num_filter": 4, "layout": "NCW"}),
    ("Convolution", {"kernel": (1, 1, 1), "num_filter": 4, "layout": "NDHWC"}),
    ("FullyConnected", {"num_hidden": 4}),
    ("FullyConnected", {"num_hidden": 4, "flatten": False}),
])
def test_channel_affine_axes_as_the_old_check(producer, pattrs):
    where = registry.get(producer).absorbs_channel_affine_rule(pattrs)
    for axis in range(-7, 7):
        assert (axis in where.axes) == _old_channel_axis_matches(producer, pattrs, axis), axis
    assert where.weight_rank == (len(pattrs["kernel"]) + 2 if producer == "Convolution" else 2)
    assert registry.get("BatchNorm_v1").channel_affine_rule({}) == 1
    assert registry.get("BatchNorm").channel_affine_rule({}) == 1
    assert registry.get("BatchNorm").channel_affine_rule({"axis": -1}) == -1


# ---- what operators write into ---------------------------------------------------------------
def _written_by_kernel(op: OpDef) -> list:
    """(sample index, slots the kernel changed, slots ``written_inputs`` declares) per sample."""
    from ops.harness import prepare_inputs  # tests/ is on sys.path (tests/ops is a package)
    out = []
    for i, s in enumerate(op.samples()):
        ins = [None if a is None else torch.from_numpy(np.ascontiguousarray(a))
               for a in prepare_inputs(s, np.float32)]
        before = [None if t is None else t.clone() for t in ins]
        attrs = dict(s.attrs)
        if op.train_aware:
            attrs["is_train"] = bool(s.train)
        kernel_attrs = op.kernel_attrs(attrs)
        if op.train_aware:
            kernel_attrs["is_train"] = attrs["is_train"]
        try:
            with torch.no_grad():
                op.kernel(*ins, **kernel_attrs)
        except Exception:  # samples meant for other dtypes: not this test's business
            continue
        changed = [k for k, (t, b) in enumerate(zip(ins, before))
                   if t is not None and t.layout == torch.strided and not torch.equal(t, b)
                   and not (t.is_floating_point() and torch.isnan(b).any())]
        out.append((i, changed, op.written_inputs(attrs, len(ins))))
    return out


def test_written_inputs_cover_every_input_a_kernel_writes():
    missing = {}
    for op in registry.all_ops():
        if op.samples is None:
            continue
        for i, changed, declared in _written_by_kernel(op):
            if set(changed) - set(declared):
                missing[f"{op.name}#{i}"] = (changed, declared)
    assert not missing, f"declare mutates_inputs (or aux) where these operators are registered: {missing}"


def test_every_operator_the_old_rule_named_writes_an_input_or_only_its_out():
    named = [op for op in registry.all_ops() if _old_writes_inputs(op.name)]
    assert len(named) == 25
    for op in named:
        runs = _written_by_kernel(op)
        assert runs, op.name
        for i, changed, declared in runs:
            if op.name in WRITE_ONLY_THROUGH_OUT:
                assert not changed and not declared, (op.name, i)
            else:
                assert declared and set(changed) <= set(declared), (op.name, i, changed, declared)


def test_multi_weight_updates_write_their_states_only():
    op = registry.get("multi_mp_sgd_mom_update")  # per weight: weight, grad, mom, weight32
    assert op.written_inputs({"num_weights": 2}, 8) == (2, 3, 6, 7)
    pre = registry.get("preloaded_multi_sgd_mom_update")  # per weight: weight, grad, mom; lrs, wds
    assert pre.written_inputs({"num_weights": 2}, 8) == (2, 5)
    assert registry.get("reset_arrays").written_inputs({"num_arrays": 3}, 3) == (0, 1, 2)
    assert registry.get("sgd_mom_update").written_inputs({}, 3) == (2,)
    assert registry.get("_act").written_inputs({"inplace": True}, 1) == (0,)
    assert registry.get("_act").written_inputs({}, 1) == ()


# ---- CSE and constant folding read the same fact ---------------------------------------------
def test_cse_keeps_two_identical_momentum_updates():
    """Each multi_sgd_mom_update writes the momentum in place: merging two would update it once."""
    w, g, mom = sym.var("w"), sym.var("g"), sym.var("mom")

    def update():
        return sym.multi_sgd_mom_update(w, g, mom, lrs=(0.1,), wds=(0.0,), momentum=0.9, num_weights=1)
    graph = sym.Group([update(), update()])._graph()
    out = cse(graph)
    assert [n.op.name for n in out.nodes if n.op is not None] == ["multi_sgd_mom_update"] * 2
    assert out.outputs[0][0] is not out.outputs[1][0]
    # without a write the same pair merges
    pure = sym.Group([sym.multi_sgd_update(w, g, lrs=(0.1,), wds=(0.0,), num_weights=1)
                      for _ in range(2)])._graph()
    assert [n.op.name for n in cse(pure).nodes if n.op is not None] == ["multi_sgd_update"]


def _pair_op(mutates) -> OpDef:
    """An unregistered operator ``lhs + rhs`` that declares ``mutates_inputs``."""
    def kernel(lhs, rhs):
        return lhs + rhs
    return OpDef("_test_pair", kernel, mutates_inputs=mutates)


@pytest.mark.parametrize("mutates", [("lhs",), lambda attrs, n: (0,)])
def test_cse_and_constfold_read_mutates_inputs(mutates):
    exp = registry.get("exp")
    x, p = Node(None, "x"), Node(None, "p")
    for op, writes in ((_pair_op(mutates), True), (_pair_op(()), False)):
        made = Node(exp, "made", {}, [(p, 0)])  # a parameter-only value
        a = Node(op, "a", {}, [(made, 0), (x, 0)])
        b = Node(op, "b", {}, [(made, 0), (x, 0)])
        graph = Graph([(a, 0), (b, 0)])
        merged = cse(graph)
        assert (merged.outputs[0][0] is merged.outputs[1][0]) is not writes
        assert (id(made) in mutated_inputs(graph)) is writes
        assert hoistable(a) is not writes
        split = split_parameter_prologue(graph, [p])
        hoisted = [] if split.prologue is None else [n.name for n in split.prologue.nodes if n.op is not None]
        # a value some node writes into is computed per call; otherwise exp(p) is hoisted
        assert ("made" in hoisted) is not writes
