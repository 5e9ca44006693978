"""Rewrites that make a traced graph loadable by real MXNet 1.9.1."""
from __future__ import annotations

from typing import Any, cast

from ...ir.graph import Graph, Node, transform
from ...ops import registry as _reg
from ...ops.registry import OpDef

def broadcast_where_shapes_differ(graph: Graph, input_shapes: dict) -> Graph:
    """``a + b`` on Symbols broadcasts here but MXNet's elemwise_add does not: where the inferred
    input shapes differ (or are unknown), write the node as the matching ``broadcast_*``. The
    subgraphs of control-flow nodes are rewritten too, with the shapes inferred for them."""
    from ..infer import infer_graph
    try:
        res = infer_graph(graph, input_shapes)
    except Exception:  # shapes unknown: keep nodes whose shapes we cannot prove equal as broadcast
        res = None
    return Graph(_broadcast_outputs(graph, res))


def _broadcast_outputs(graph: Graph, res: Any) -> list:
    def visit(node: Node, inputs: tuple) -> Any:
        if node.subgraphs:
            sub_res = res.subgraphs.get(id(node)) if res is not None else None
            subs = tuple(Graph(_broadcast_outputs(g, sub_res[k] if sub_res else None))
                         for k, g in enumerate(node.subgraphs))
            if all(a.outputs == b.outputs for a, b in zip(subs, node.subgraphs)):
                return None
            new = Node(node.op, node.name, node.attrs, inputs, subs)
            return [(new, k) for k in range(new.num_outputs())]
        target = cast(OpDef, node.op).export_broadcast  # operator nodes only
        if target is None:
            return None
        if res is not None:
            shapes = [res.out_shapes.get(id(n), [None] * (k + 1))[k] for n, k in node.inputs]
            if shapes[0] is not None and shapes[0] == shapes[1]:
                return None
        new = Node(_reg.get(target), node.name, node.attrs, inputs)
        return [(new, 0)]

    return transform(graph.outputs, visit)


def remove_amp_cast(graph: Graph) -> Graph:
    """Drop ``amp_cast``/``amp_multicast`` nodes (MXNet's export(remove_amp_cast=True)): each
    output of an ``OpDef.amp_cast`` node is the input in its place."""
    def visit(node: Node, inputs: tuple) -> Any:
        return list(inputs) if cast(OpDef, node.op).amp_cast else None  # operator nodes only

    return Graph(transform(graph.outputs, visit))
