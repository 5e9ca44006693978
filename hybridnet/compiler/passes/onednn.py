"""Predict mode on oneDNN: 2-D convolutions with their activation or residual add fused, reading
weights reordered once into oneDNN's blocked layout, activations kept channels-last between them;
big FullyConnected layers with their activation on oneDNN's linear kernel, weights packed once.

MXNet 1.9.1's CPU build does this with its MKLDNN subgraph backend (conv + bias + relu/add
fusion, weights cached in the blocked layout). Here the rewrite targets torch's oneDNN kernels
through two operators (``ops/fused.py``): ``_onednn_conv_weight`` (parameter-only, so the
predict plan's prologue reorders each weight once per parameter change) and ``_fused_conv``.
Graph outputs that may carry the channels-last layout leave through ``_contiguous``, so callers
see row-major arrays as before. Valid only in predict mode: the fused kernels have no gradients.

The reorder is chosen for one input size; ``shapes`` (each node output's shape on a real call,
recorded by the caller) supplies it and checks residual shapes. Inputs of another size still
give the same results through the plain weight.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional, cast

from ...ir.graph import Entry, Graph, Node, topo_order, transform
from ...ops import fused as _fused
from ...ops import handles
from ...ops.registry import ActivationChoice, OpDef

__all__ = ["fuse_onednn", "fusible_convolutions", "is_conv2d_nchw", "leave_channels_last", "attr",
           "absorbable_activation"]

_ADDS = (handles.elemwise_add, handles.broadcast_add)

Shapes = Mapping[tuple, tuple]  # (id(node), output index) -> shape


def attr(node: Node, key: str) -> Any:
    """An attribute of ``node``, or its operator's default."""
    return cast(OpDef, node.op).attr_value(node.attrs, key)


def is_conv2d_nchw(node: Node) -> bool:
    """A 2-D Convolution in MXNet's default NCHW layout."""
    return node.op is handles.Convolution and len(tuple(attr(node, "kernel"))) == 2 \
        and attr(node, "layout") in (None, "None", "NCHW")


def _is_fusible_conv(node: Node, shapes: Shapes) -> bool:
    """A 2-D NCHW Convolution whose input shape was recorded (4-D)."""
    if not is_conv2d_nchw(node):
        return False
    data = shapes.get((id(node.inputs[0][0]), node.inputs[0][1]))
    return data is not None and len(data) == 4


def fusible_convolutions(graph: Graph) -> bool:
    """Whether ``graph`` has a 2-D NCHW Convolution (the pass needs recorded shapes for it)."""
    return any(is_conv2d_nchw(n) for n in graph.nodes)


def absorbable_activation(node: Node) -> Optional[ActivationChoice]:
    """The activation ``_fused_conv`` (and the in-place operators of
    ``inference.compute_in_place``) computes ``node`` as (its operator's ``fused_activation``:
    relu, sigmoid, tanh, clip, leaky relu), else None."""
    return node.op.fused_activation(node.attrs) if node.op is not None else None


def _fusible_linear(node: Node, shapes: Shapes) -> Optional[int]:
    """The rows of a FullyConnected whose input shape was recorded and which multiplies
    ``flatten(data)`` (flatten=True, or 2-D data) by at least ``LINEAR_MIN_MACS``; else None."""
    if node.op is not handles.FullyConnected:
        return None
    data = shapes.get((id(node.inputs[0][0]), node.inputs[0][1]))
    if data is None or len(data) < 2 or (len(data) > 2 and not attr(node, "flatten")):
        return None
    macs = math.prod(int(d) for d in data) * int(attr(node, "num_hidden"))
    return int(data[0]) if macs >= _fused.LINEAR_MIN_MACS else None


def fuse_onednn(graph: Graph, shapes: Shapes) -> Graph:
    """Rewrite each fusible Convolution (see the module docstring) into ``_fused_conv``, and each
    big FullyConnected into ``_fused_linear``.

    A convolution or FullyConnected whose output only feeds an activation (relu, sigmoid, tanh,
    clip, leaky relu) absorbs it; a convolution whose output only feeds an addition with a value
    of the same shape absorbs the addition, and the relu after it when the sum only feeds that
    relu (ResNet's residual join). Neither absorbed value may be a graph output or read
    elsewhere."""
    users = graph.users()
    outputs = {id(n) for n, _ in graph.outputs}

    def sole_reader(node: Node) -> Optional[Node]:
        readers = users[id(node)]
        return readers[0][0] if len(readers) == 1 and id(node) not in outputs else None

    convs = {id(n) for n in graph.nodes if _is_fusible_conv(n, shapes)}
    linears = {id(n): rows for n in graph.nodes if (rows := _fusible_linear(n, shapes)) is not None}
    # what each convolution or FullyConnected absorbs: its id -> ("act", node) | ("add", add node,
    # conv slot, relu) (additions: convolutions only)
    absorbed: dict = {}
    ends: dict = {}  # id(node that the fused op replaces) -> id(its convolution or FullyConnected)
    claimed: set = set()  # additions a convolution absorbs (the other operand stays as it is)
    for conv in graph.nodes:
        if id(conv) not in convs and id(conv) not in linears:
            continue
        reader = sole_reader(conv)
        if reader is None or reader.inputs.count((conv, 0)) != 1:
            continue
        if absorbable_activation(reader) is not None and len(reader.inputs) == 1:
            absorbed[id(conv)] = ("act", reader)
            ends[id(reader)] = id(conv)
        elif id(conv) in convs and reader.op in _ADDS and len(reader.inputs) == 2 \
                and id(reader) not in claimed:
            slot = reader.inputs.index((conv, 0))
            other = reader.inputs[1 - slot]
            mine, theirs = shapes.get((id(conv), 0)), shapes.get((id(other[0]), other[1]))
            if mine is None or mine != theirs:
                continue
            after = sole_reader(reader)
            relu = after if after is not None and absorbable_activation(after) == _fused.RELU else None
            absorbed[id(conv)] = ("add", reader, slot, relu)
            claimed.add(id(reader))
            ends[id(relu if relu is not None else reader)] = id(conv)
    originals = {id(n): n for n in graph.nodes}
    fused_op, pack_op, zeros_op = handles.fused_conv, handles.onednn_conv_weight, handles.zeros
    rebuilt: dict = {}  # id(original node) -> its rebuilt inputs

    def fused(conv: Node, conv_inputs: tuple, act: tuple, other: Optional[Entry], name: str) -> list:
        data, weight = conv_inputs[0], conv_inputs[1]
        geometry = {k: attr(conv, k) for k in ("stride", "pad", "dilate", "num_group")}
        size = tuple(int(d) for d in shapes[(id(conv.inputs[0][0]), conv.inputs[0][1])])
        packed = Node(pack_op, f"{conv.name}_onednn_weight", {**geometry, "input_size": size}, (weight,))
        if len(conv_inputs) > 2 and not attr(conv, "no_bias"):
            bias = conv_inputs[2]
        else:
            bias = (Node(zeros_op, f"{conv.name}_zero_bias", {"shape": (int(attr(conv, "num_filter")),)}, ()), 0)
        inputs = (data, weight, (packed, 0), bias) + ((other,) if other is not None else ())
        attrs = {**geometry, "act": act[0], "act_alpha": act[1], "act_beta": act[2], "input_size": size}
        return [(Node(fused_op, name, attrs, inputs), 0)]

    linear_op, linear_pack_op = handles.fused_linear, handles.onednn_linear_weight

    def fused_linear(fc: Node, fc_inputs: tuple, act: tuple, name: str) -> list:
        packed = Node(linear_pack_op, f"{fc.name}_onednn_weight", {"rows": linears[id(fc)]}, (fc_inputs[1],))
        bias = (fc_inputs[2],) if len(fc_inputs) > 2 and not attr(fc, "no_bias") else ()
        attrs = {"act": act[0], "act_alpha": act[1], "act_beta": act[2]}
        return [(Node(linear_op, name, attrs, (fc_inputs[0], fc_inputs[1], (packed, 0)) + bias), 0)]

    def visit(node: Node, inputs: tuple) -> Any:
        rebuilt[id(node)] = inputs
        if id(node) in convs and id(node) not in absorbed:
            return fused(node, inputs, _fused.NO_ACTIVATION, None, node.name)
        if id(node) in linears and id(node) not in absorbed:
            return fused_linear(node, inputs, _fused.NO_ACTIVATION, node.name)
        conv_id = ends.get(id(node))
        if conv_id is None:
            return None
        conv = originals[conv_id]
        how = absorbed[conv_id]
        if id(conv) in linears:
            return fused_linear(conv, rebuilt[conv_id], cast(tuple, absorbable_activation(node)), node.name)
        if how[0] == "act":
            return fused(conv, rebuilt[conv_id], cast(tuple, absorbable_activation(node)), None, node.name)
        _, add, slot, relu = how
        add_inputs = rebuilt[id(add)]
        act = _fused.RELU if relu is not None else _fused.NO_ACTIVATION
        return fused(conv, rebuilt[conv_id], act, add_inputs[1 - slot], node.name)

    new_outputs = transform(graph.outputs, visit)
    if not convs:
        return Graph(new_outputs)
    return Graph(leave_channels_last(new_outputs, fused_op))


def leave_channels_last(outputs: list, start: OpDef) -> list:
    """``outputs`` with each one computed from a ``start`` node (whose output may be
    channels-last) wrapped in ``_contiguous``."""
    tainted: set = set()
    for node in topo_order([n for n, _ in outputs]):
        if node.op is start or any(id(src) in tainted for src, _ in node.inputs):
            tainted.add(id(node))
    contiguous = handles.contiguous
    return [(Node(contiguous, f"{n.name}_contiguous{k}", {}, ((n, k),)), 0) if id(n) in tainted else (n, k)
            for n, k in outputs]
