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

from ...ir.graph import Entry, Graph, Node, rewrite
from ...ops import handles
from ...ops.registry import ChannelAffine, OpDef
from .constfold import mutated_inputs
from .onednn import absorbable_activation, attr as _attr

__all__ = ["remove_inference_identities", "fold_batchnorm", "compute_in_place"]


def remove_inference_identities(graph: Graph) -> Graph:
    """Bypass the nodes that are the identity in predict mode without gradients (their
    operator's ``predict_identity``): ``_copy`` / ``identity``, ``BlockGrad`` /
    ``stop_gradient``, ``make_loss``, ``MakeLoss``, ``_identity_with_attr_like_rhs`` and Dropout
    with mode='training' (or p <= 0). Dropout with mode='always' and p > 0 stays: MXNet drops in
    predict mode too. Casts stay: whether one is a no-op depends on the input's dtype, which the
    graph does not say.

    A copy that some node writes into (an auxiliary slot, an optimizer update) stays a copy.
    A removed ``_copy`` may leave an output sharing memory with an input or another output;
    the caller's ``OutputOwnership`` (as CachedOp and PredictPlan apply it) copies those."""
    written = mutated_inputs(graph)

    def visit(node: Node, inputs: tuple) -> Any:
        if node.subgraphs or id(node) in written or not cast(OpDef, node.op).is_predict_identity(node.attrs):
            return None
        return [inputs[0]]

    return rewrite(graph, visit)


# ---- BatchNorm folding ------------------------------------------------------------------------
def _channel_affine(bn: Node) -> Optional[int]:
    """The channel axis of a node that is a per-channel affine map in predict mode (BatchNorm's
    ``channel_affine``), else None."""
    rule = bn.op.channel_affine_rule if bn.op is not None else None
    return rule(bn.attrs) if rule is not None else None


def _absorbs(producer: Node) -> Optional[ChannelAffine]:
    """Where ``producer`` takes a per-output-channel affine into its weight and bias."""
    rule = producer.op.absorbs_channel_affine_rule if producer.op is not None else None
    return rule(producer.attrs) if rule is not None else None


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

    def __call__(self, op: OpDef, inputs: list, attrs: Optional[dict] = None) -> Entry:
        self.count += 1
        return (Node(op, f"{self.prefix}_fold{self.count}", attrs or {}, inputs), 0)


def _fold(producer: Node, pinputs: tuple, bn: Node, bninputs: tuple) -> Node:
    """The producer with weight ``W * scale`` and bias ``(b - mean) * scale + beta``."""
    make = _Builder(bn.name)
    _, gamma, beta, mean, var = bninputs
    eps = float(_attr(bn, "eps"))
    inv_std = make(handles.rsqrt, [make(handles.plus_scalar, [var], {"scalar": eps})])
    # fix_gamma: MXNet treats gamma as 1 whatever it holds
    scale = inv_std if _attr(bn, "fix_gamma") else make(handles.elemwise_mul, [gamma, inv_std])
    wdim = cast(ChannelAffine, _absorbs(producer)).weight_rank
    # the weight's output channels come first (NCHW: OIHW, NHWC: OHWI, FC: OI)
    column = make(handles.Reshape, [scale], {"shape": (-1,) + (1,) * (wdim - 1)})
    weight = make(handles.broadcast_mul, [pinputs[1], column])
    has_bias = not _attr(producer, "no_bias")
    shifted = make(handles.elemwise_sub, [pinputs[2], mean]) if has_bias else make(handles.negative, [mean])
    bias = make(handles.elemwise_add, [make(handles.elemwise_mul, [shifted, scale]), beta])
    attrs = {**producer.attrs, "no_bias": False}
    return Node(producer.op, producer.name, attrs, (pinputs[0], weight, bias))


def fold_batchnorm(graph: Graph, dtypes: Optional[Mapping[str, Any]] = None) -> Graph:
    """Fold each predict-mode BatchNorm (``channel_affine``) into the Convolution /
    FullyConnected (``absorbs_channel_affine``) before it.

    Folds when the BatchNorm reads output 0 of a Convolution or FullyConnected that nothing else
    reads (not a graph output either), normalizes that producer's channel axis (axis 1, or the
    last axis for channels-last layouts and FullyConnected), and has one output (not
    ``output_mean_var``). In predict mode BatchNorm is ``(x - moving_mean) / sqrt(moving_var +
    eps) * gamma + beta`` whatever ``use_global_stats`` says, so with ``scale = gamma /
    sqrt(moving_var + eps)`` (``1 / sqrt(...)`` when ``fix_gamma``) the producer gets weight
    ``W * scale`` (per output channel) and bias ``(b - moving_mean) * scale + beta``
    (``b`` = 0 without bias). ``dtypes`` (variable name -> dtype), when given, limits folding to
    producers whose weight, bias and BatchNorm parameters are variables of one dtype. Returns
    ``graph`` itself where nothing folds.
    """
    if not any(_channel_affine(n) is not None for n in graph.nodes):
        return graph
    users = graph.users()
    outputs = {id(n) for n, _ in graph.outputs}

    def foldable(bn: Node) -> bool:
        axis = _channel_affine(bn)
        if axis is None or bn.num_outputs() != 1:
            return False
        producer, k = bn.inputs[0]
        where = _absorbs(producer)
        if where is None or k != 0:
            return False
        if len(users[id(producer)]) != 1 or id(producer) in outputs:
            return False
        if axis not in where.axes:
            return False
        return _same_dtype(list(producer.inputs[1:]) + list(bn.inputs[1:]), dtypes)

    def visit(node: Node, inputs: tuple) -> Any:
        if not foldable(node):
            return None
        producer = inputs[0][0]  # the producer as rebuilt (its inputs may have been rewritten)
        return [(_fold(producer, producer.inputs, node, inputs), 0)]

    return rewrite(graph, visit)


# ---- predict-mode work written over fresh tensors ------------------------------------------------
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
    fresh pages of each new tensor cost more than the arithmetic). Returns ``graph`` itself
    where nothing is rewritten."""
    # every fresh value starts at a Convolution: without one, one cheap walk decides
    if not any(n.op is handles.Convolution for n in graph.nodes):
        return graph
    users = graph.users()
    outputs = {id(n) for n, _ in graph.outputs}
    bn_act, add_act, act_op = handles.batchnorm_act, handles.add_act, handles.act
    made: dict = {}  # id(original node) -> the node this pass made for it

    def fresh(entry: Entry) -> bool:
        src, k = entry
        return k == 0 and (src.op is handles.Convolution or id(src) in made) \
            and len(users[id(src)]) == 1 and id(src) not in outputs

    def visit(node: Node, inputs: tuple) -> Any:
        new = None
        if (axis := _channel_affine(node)) is not None and node.num_outputs() == 1 and fresh(node.inputs[0]):
            attrs = {"eps": float(_attr(node, "eps")), "fix_gamma": bool(_attr(node, "fix_gamma")),
                     "axis": axis, "inplace": True}
            new = Node(bn_act, node.name, attrs, inputs)
        elif node.op is handles.elemwise_add and len(inputs) == 2 \
                and (fresh(node.inputs[0]) or fresh(node.inputs[1])):
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

    return rewrite(graph, visit)
