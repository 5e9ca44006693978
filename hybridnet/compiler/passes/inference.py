"""Rewrites valid only in predict mode (not recording, not training).

A graph compiled for ``autograd.predict_mode()`` may drop what only matters for training:
Dropout that is off outside training, gradient markers (``BlockGrad``, ``make_loss``...), and
BatchNorm, which then normalizes with its moving statistics and is an affine map per channel that
folds into the Convolution or FullyConnected feeding it. Each pass is ``Graph -> Graph`` and
never changes its input; none of them may run on a graph that will train (the graph they leave
computes different gradients and no longer updates BatchNorm's moving statistics).

Folded weights are new graph nodes computed from the parameter variables only, so
``constfold.split_parameter_prologue`` can hoist them out of the per-call path.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, cast

from ...ir.graph import Entry, Graph, Node, transform
from ...ops import registry as _reg
from ...ops.attrs import channels_last
from ...ops.registry import OpDef
from .constfold import mutated_inputs
from .onednn import absorbable_activation

__all__ = ["remove_inference_identities", "fold_batchnorm", "compute_in_place", "INFERENCE_IDENTITY_OPS"]

# Operators whose predict-mode, no-gradient forward returns its (first) input's values unchanged
# whatever the attributes: copies (``_copy``/identity), gradient markers and loss heads (their
# forward is the identity; only their backward differs), shape-constraint markers. Dropout is
# handled apart: it is the identity only for mode='training' (or p <= 0).
INFERENCE_IDENTITY_OPS = frozenset({
    "_copy", "BlockGrad", "make_loss", "MakeLoss", "_identity_with_attr_like_rhs",
})

_BATCHNORMS = frozenset({"BatchNorm", "BatchNorm_v1"})


def _attr(node: Node, key: str) -> Any:
    """The node's attribute ``key``, or the operator's default when the node leaves it out."""
    op = cast(OpDef, node.op)
    if key in node.attrs:
        return node.attrs[key]
    return op.attrs[key].default


def _is_inference_identity(node: Node) -> bool:
    name = cast(OpDef, node.op).name
    if name in INFERENCE_IDENTITY_OPS:
        return True
    if name == "Dropout":
        # MXNet: mode='training' drops only while training; mode='always' drops in predict too
        return _attr(node, "mode") == "training" or float(_attr(node, "p")) <= 0.0
    return False


def remove_inference_identities(graph: Graph) -> Graph:
    """Bypass the nodes that are the identity in predict mode without gradients: ``_copy`` /
    ``identity``, ``BlockGrad`` / ``stop_gradient``, ``make_loss``, ``MakeLoss``,
    ``_identity_with_attr_like_rhs`` and Dropout with mode='training' (or p <= 0). Dropout with
    mode='always' and p > 0 stays: MXNet drops in predict mode too. Casts stay: whether one is
    a no-op depends on the input's dtype, which the graph does not say.

    A copy that some node writes into (an auxiliary slot, an optimizer update) stays a copy.
    A removed ``_copy`` may leave an output sharing memory with an input or another output;
    the caller's ``OutputOwnership`` (as CachedOp and PredictPlan apply it) copies those."""
    written = mutated_inputs(graph)

    def visit(node: Node, inputs: tuple) -> Any:
        if node.subgraphs or id(node) in written or not _is_inference_identity(node):
            return None
        return [inputs[0]]

    return Graph(transform(graph.outputs, visit))


# ---- BatchNorm folding ------------------------------------------------------------------------
def _channel_axis_matches(producer: Node, bn: Node) -> bool:
    """Whether BatchNorm's axis is the output-channel axis of the Convolution/FullyConnected."""
    axis = 1 if cast(OpDef, bn.op).name == "BatchNorm_v1" else int(_attr(bn, "axis"))
    if cast(OpDef, producer.op).name == "Convolution":
        ndim = len(tuple(_attr(producer, "kernel"))) + 2
        channel = ndim - 1 if channels_last(_attr(producer, "layout")) else 1
        return axis % ndim == channel if -ndim <= axis < ndim else False
    if _attr(producer, "flatten"):
        return axis in (1, -1)  # the output is (batch, num_hidden)
    return axis == -1  # the output's rank is unknown here: only the last axis is certain


def _dtype_of(entry: Entry, dtypes: Mapping[str, Any]) -> Any:
    node = entry[0]
    return dtypes.get(node.name) if node.op is None else None


def _same_dtype(entries: list, dtypes: Optional[Mapping[str, Any]]) -> bool:
    """With ``dtypes`` (variable name -> dtype), every entry is a variable of one known dtype:
    the folded weight then keeps the convolution's dtype (a float16 network keeps float32
    BatchNorm parameters, and mixing them would change the convolution's dtype)."""
    if dtypes is None:
        return True
    found = {_dtype_of(e, dtypes) for e in entries}
    return len(found) == 1 and None not in found


class _Builder:
    """Makes the new nodes of one fold, named after the BatchNorm they replace."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.count = 0

    def __call__(self, opname: str, inputs: list, attrs: Optional[dict] = None) -> Entry:
        self.count += 1
        return (Node(_reg.get(opname), f"{self.prefix}_fold{self.count}", attrs or {}, inputs), 0)


def _fold(producer: Node, pinputs: tuple, bn: Node, bninputs: tuple) -> Node:
    """The producer with weight ``W * scale`` and bias ``(b - mean) * scale + beta``."""
    make = _Builder(bn.name)
    _, gamma, beta, mean, var = bninputs
    eps = float(_attr(bn, "eps"))
    inv_std = make("rsqrt", [make("_plus_scalar", [var], {"scalar": eps})])
    # fix_gamma: MXNet treats gamma as 1 whatever it holds
    scale = inv_std if _attr(bn, "fix_gamma") else make("elemwise_mul", [gamma, inv_std])
    is_conv = cast(OpDef, producer.op).name == "Convolution"
    wdim = len(tuple(_attr(producer, "kernel"))) + 2 if is_conv else 2
    # the weight's output channels come first in every layout (NCHW: OIHW, NHWC: OHWI, FC: OI)
    column = make("Reshape", [scale], {"shape": (-1,) + (1,) * (wdim - 1)})
    weight = make("broadcast_mul", [pinputs[1], column])
    has_bias = not _attr(producer, "no_bias")
    shifted = make("elemwise_sub", [pinputs[2], mean]) if has_bias else make("negative", [mean])
    bias = make("elemwise_add", [make("elemwise_mul", [shifted, scale]), beta])
    attrs = {**producer.attrs, "no_bias": False}
    return Node(producer.op, producer.name, attrs, (pinputs[0], weight, bias))


def fold_batchnorm(graph: Graph, dtypes: Optional[Mapping[str, Any]] = None) -> Graph:
    """Fold each predict-mode BatchNorm into the Convolution / FullyConnected before it.

    Folds when the BatchNorm reads output 0 of a Convolution or FullyConnected that nothing else
    reads (not a graph output either), normalizes that producer's channel axis (axis 1, or the
    last axis for channels-last layouts and FullyConnected), and has one output (not
    ``output_mean_var``). In predict mode BatchNorm is ``(x - moving_mean) / sqrt(moving_var +
    eps) * gamma + beta`` whatever ``use_global_stats`` says, so with ``scale = gamma /
    sqrt(moving_var + eps)`` (``1 / sqrt(...)`` when ``fix_gamma``) the producer gets weight
    ``W * scale`` (per output channel) and bias ``(b - moving_mean) * scale + beta``
    (``b`` = 0 without bias). ``dtypes`` (variable name -> dtype), when given, limits folding to
    producers whose weight, bias and BatchNorm parameters are variables of one dtype.
    """
    users = graph.users()
    outputs = {id(n) for n, _ in graph.outputs}
    fold_src = {"Convolution", "FullyConnected"}

    def foldable(bn: Node) -> bool:
        if cast(OpDef, bn.op).name not in _BATCHNORMS or bn.num_outputs() != 1:
            return False
        producer, k = bn.inputs[0]
        if producer.op is None or producer.op.name not in fold_src or k != 0:
            return False
        if len(users[id(producer)]) != 1 or id(producer) in outputs:
            return False
        if not _channel_axis_matches(producer, bn):
            return False
        return _same_dtype(list(producer.inputs[1:]) + list(bn.inputs[1:]), dtypes)

    def visit(node: Node, inputs: tuple) -> Any:
        if not foldable(node):
            return None
        producer = inputs[0][0]  # the producer as rebuilt (its inputs may have been rewritten)
        return [(_fold(producer, producer.inputs, node, inputs), 0)]

    return Graph(transform(graph.outputs, visit))


# ---- predict-mode work written over fresh tensors ------------------------------------------------
_ELEMWISE_ADDS = frozenset({"elemwise_add", "_plus", "_add"})


def compute_in_place(graph: Graph) -> Graph:
    """Predict-mode BatchNorm, residual additions and activations computed over a tensor that
    only they read (``_batchnorm_act``, ``_add_act``, ``_act``): as MXNet's memory planner runs
    them in place.

    A *fresh* value is output 0 of a Convolution, or of a node this pass rewrote, that exactly
    one node reads and the graph does not return: a new tensor no other node sees, which its
    reader may overwrite. A one-output BatchNorm reading a fresh value becomes
    ``_batchnorm_act``, an ``elemwise_add`` with a fresh operand ``_add_act`` (the sum written
    over that operand); an activation ``_fused_conv`` could absorb (``onednn.
    absorbable_activation``: relu, sigmoid, tanh, clip, leaky relu) reading a fresh value joins
    the BatchNorm or addition that made it, or becomes ``_act`` after a Convolution. Needs no
    recorded shapes and no parameter prologue, so plain ``hybridize()`` gets it: a ResNet or
    MobileNet block then makes one tensor per convolution instead of three (at 224x224 the
    fresh pages of each new tensor cost more than the arithmetic)."""
    users = graph.users()
    outputs = {id(n) for n, _ in graph.outputs}
    bn_act, add_act, act_op = _reg.get("_batchnorm_act"), _reg.get("_add_act"), _reg.get("_act")
    made: dict = {}  # id(original node) -> the node this pass made for it

    def fresh(entry: Entry) -> bool:
        src, k = entry
        return k == 0 and src.op is not None and (src.op.name == "Convolution" or id(src) in made) \
            and len(users[id(src)]) == 1 and id(src) not in outputs

    def visit(node: Node, inputs: tuple) -> Any:
        name = cast(OpDef, node.op).name
        new = None
        if name in _BATCHNORMS and node.num_outputs() == 1 and fresh(node.inputs[0]):
            axis = 1 if name == "BatchNorm_v1" else int(_attr(node, "axis"))
            attrs = {"eps": float(_attr(node, "eps")), "fix_gamma": bool(_attr(node, "fix_gamma")),
                     "axis": axis, "inplace": True}
            new = Node(bn_act, node.name, attrs, inputs)
        elif name in _ELEMWISE_ADDS and len(inputs) == 2 and (fresh(node.inputs[0]) or fresh(node.inputs[1])):
            lhs, rhs = inputs if fresh(node.inputs[0]) else (inputs[1], inputs[0])  # a + b == b + a
            new = Node(add_act, node.name, {"inplace": True}, (lhs, rhs))
        elif node.inputs and (absorbed := absorbable_activation(node)) is not None and fresh(node.inputs[0]):
            act = dict(zip(("act", "act_alpha", "act_beta"), absorbed))
            src = made.get(id(node.inputs[0][0]))
            if src is None:  # a Convolution's output
                new = Node(act_op, node.name, {**act, "inplace": True}, inputs)
            elif src.op is not act_op and src.attrs.get("act", "none") == "none":
                new = Node(src.op, node.name, {**src.attrs, **act}, src.inputs)
        if new is None:
            return None
        made[id(node)] = new
        return [(new, 0)]

    return Graph(transform(graph.outputs, visit))
