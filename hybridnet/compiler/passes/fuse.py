"""Fusion: -pick(log_softmax(x), label) (Gluon's SoftmaxCrossEntropyLoss) -> one cross-entropy op."""
from __future__ import annotations

from typing import Any

from ...ir.graph import Graph, Node, rewrite
from ...ops import handles
from .onednn import attr


def _match(node: Node, users: dict, outputs: set) -> Any:
    """(log_softmax node, pick node) when ``node`` is the negation ending the pattern."""
    if node.op is not handles.mul_scalar or float(attr(node, "scalar")) != -1.0:
        return None
    pick = node.inputs[0][0]
    if pick.op is not handles.pick or attr(pick, "mode") != "clip":
        return None
    lsm = pick.inputs[0][0]
    if lsm.op is not handles.log_softmax or len(lsm.inputs) != 1:
        return None
    if any(k in lsm.attrs for k in ("temperature", "dtype", "use_length")):
        return None
    if attr(pick, "axis") != attr(lsm, "axis"):
        return None
    for inner in (pick, lsm):  # the intermediates must not be needed elsewhere
        if len(users.get(id(inner), ())) != 1 or id(inner) in outputs:
            return None
    return lsm, pick


def fuse_softmax_ce(graph: Graph) -> Graph:
    """The pattern fused into ``_fused_softmax_ce`` (and a mean over it absorbed); ``graph``
    itself where there is nothing to fuse."""
    fused = handles.fused_softmax_ce
    # every match needs a pick (or a fused node to absorb a mean): one cheap walk rules it out
    if not any(n.op is handles.pick or n.op is fused for n in graph.nodes):
        return graph
    users = graph.users()
    outputs = {id(n) for n, _ in graph.outputs}
    rewritten: dict = {}  # original entry -> entry in the new graph

    def visit(node: Node, inputs: tuple) -> Any:
        for (src, k), new in zip(node.inputs, inputs):
            rewritten[(id(src), k)] = new
        if node.op is handles.mean:
            return _absorb_mean(node, inputs)
        found = _match(node, users, outputs)
        if found is None:
            return None
        lsm, pick = found
        x, label = lsm.inputs[0], pick.inputs[1]
        new_inputs = (rewritten.get((id(x[0]), x[1]), x), rewritten.get((id(label[0]), label[1]), label))
        attrs = {"axis": attr(lsm, "axis"), "keepdims": bool(attr(pick, "keepdims"))}
        return [(Node(fused, node.name, attrs, new_inputs), 0)]

    def _absorb_mean(node: Node, inputs: tuple) -> Any:
        """The loss's mean over the non-batch axes folds into the fused op's output."""
        src = inputs[0][0]
        if src.op is not fused or not src.attrs.get("keepdims") or src.attrs.get("batch_mean"):
            return None
        orig = node.inputs[0][0]
        if len(users.get(id(orig), ())) != 1 or id(orig) in outputs:
            return None
        if node.attrs.get("axis") != 0 or not node.attrs.get("exclude") or node.attrs.get("keepdims"):
            return None
        return [(Node(fused, node.name, {**src.attrs, "batch_mean": True}, src.inputs), 0)]

    return rewrite(graph, visit)
