"""Common subexpression elimination: identical deterministic nodes on identical inputs merge."""
from __future__ import annotations

from typing import Any, cast

from ...ir.graph import Graph, Node, rewrite
from ...ops import handles
from ...ops.registry import OpDef
from .constfold import written_slots


def _key(node: Node, inputs: tuple) -> Any:
    try:
        attrs = tuple(sorted((k, repr(v)) for k, v in node.attrs.items()))
    except TypeError:
        return None
    # control-flow nodes with equal attributes differ by their subgraphs (compared by identity)
    return (cast(OpDef, node.op).name, attrs, tuple((id(n), k) for n, k in inputs),
            tuple(id(g) for g in node.subgraphs))


def cse(graph: Graph) -> Graph:
    """Merge identical nodes; never random or train-aware ones, nor nodes that write into an
    input (``constfold.written_slots``): two momentum updates must each update the momentum.
    Returns ``graph`` itself where nothing merges."""
    seen: dict = {}

    def visit(node: Node, inputs: tuple) -> Any:
        op = cast(OpDef, node.op)  # transform() visits operator nodes only
        if op.random or op.train_aware or written_slots(node):
            return None
        key = _key(node, inputs)
        if key is None:
            return None
        if key in seen:
            return seen[key]
        if inputs is node.inputs:  # kept as it is (returning None tells transform so at once)
            seen[key] = [(node, k) for k in range(node.num_outputs())]
            return None
        n = node.with_inputs(inputs)
        seen[key] = [(n, k) for k in range(n.num_outputs())]
        return seen[key]

    return rewrite(graph, visit)


def distinct_outputs(graph: Graph) -> Graph:
    """Every repeat of an entry among the graph outputs gets its own ``_copy``, so each output
    is its own array (MXNet inserts these after eliminating common expressions)."""
    seen: set = set()
    outputs: list = []
    for n, k in graph.outputs:
        if (id(n), k) in seen:
            n, k = Node(handles.copy, f"{n.name}_copy{len(outputs)}", {}, [(n, k)]), 0
        seen.add((id(n), k))
        outputs.append((n, k))
    return graph if len(seen) == len(outputs) and all(
        a is b for (a, _), (b, _) in zip(outputs, graph.outputs)) else Graph(outputs)
