"""Constant folding for predict mode: split off what depends on the parameters only.

In predict mode a parameter changes only between calls (``Trainer.step``, ``load_parameters``,
``p.set_data``), so every deterministic node whose inputs all come from parameters (folded
BatchNorm weights, reshaped or transposed weights, constants made from nothing) computes the same
value on every call. ``split_parameter_prologue`` moves those nodes into a *prologue* graph, run
once per parameter change, and leaves a *main* graph that reads the prologue's results as
variables of its own.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence, cast

from ...ir.graph import Graph, Node, transform
from ...ops.registry import OpDef

__all__ = ["ParameterPrologue", "split_parameter_prologue", "hoistable", "mutated_inputs", "written_slots"]


class ParameterPrologue(NamedTuple):
    """The result of ``split_parameter_prologue``.

    ``prologue`` computes, from the parameter variables, one output per variable in ``folded``;
    ``main`` computes the original outputs from the data and parameter variables and ``folded``
    (``main``'s variables are a subset of the data nodes, the parameter nodes and ``folded``).
    Without anything to hoist, ``prologue`` is None, ``folded`` empty and ``main`` the graph."""
    prologue: "Graph | None"
    main: Graph
    folded: tuple


def written_slots(node: Node) -> tuple:
    """The input slots ``node`` writes in place: auxiliary states and its operator's
    ``mutates_inputs`` (optimizer states, ``reset_arrays``, in-place fused operators)."""
    return node.op.written_inputs(node.attrs, len(node.inputs)) if node.op is not None else ()


def hoistable(node: Node) -> bool:
    """Whether ``node`` computes the same value from the same inputs on every predict-mode call
    and changes nothing else: not random, not train-aware (that covers BatchNorm, Dropout, RNN,
    Custom and control flow), writing into none of its inputs."""
    op = cast(OpDef, node.op)
    if op.random or op.train_aware or node.subgraphs:
        return False
    return not written_slots(node)


def mutated_inputs(graph: Graph) -> set:
    """ids of the nodes whose outputs some node may write into (``written_slots``). Such a value
    must stay computed per call (a hoisted one would be overwritten in the cache) and must stay
    a copy if it is one."""
    out: set = set()
    for node in graph.nodes:
        out.update(id(node.inputs[i][0]) for i in written_slots(node))
    return out


def split_parameter_prologue(graph: Graph, param_nodes: Sequence[Node]) -> ParameterPrologue:
    """Split ``graph`` into a parameter-only prologue and the main graph that reads its results.

    A node is hoisted when ``hoistable`` and every input is a parameter variable (one of
    ``param_nodes``) or another hoisted node; operators without inputs (``_zeros``, ``_arange``)
    are hoisted too, except values some node writes into (``mutated_inputs``). The prologue's outputs are the hoisted values that a remaining node or a
    graph output reads; each becomes a new variable of ``main`` (``_folded<k>_<node name>``).
    Only valid in predict mode: the graph must not be differentiated with respect to the
    parameters (the prologue runs without gradients)."""
    params = {id(v) for v in param_nodes}
    pinned = mutated_inputs(graph)
    constant: set = set()
    for node in graph.nodes:
        if node.op is None:
            if id(node) in params:
                constant.add(id(node))
        elif id(node) not in pinned and hoistable(node) and all(id(src) in constant for src, _ in node.inputs):
            constant.add(id(node))

    # hoisted entries read by a remaining node or returned: the prologue's outputs
    boundary: list = []
    seen: set = set()

    def need(src: Node, k: int) -> None:
        if src.op is not None and id(src) in constant and (id(src), k) not in seen:
            seen.add((id(src), k))
            boundary.append((src, k))

    for node in graph.nodes:
        if node.op is not None and id(node) not in constant:
            for src, k in node.inputs:
                need(src, k)
    for src, k in graph.outputs:
        need(src, k)
    if not boundary:
        return ParameterPrologue(None, graph, ())

    taken = {v.name for v in graph.variables()}
    folded: dict = {}
    for i, (src, k) in enumerate(boundary):
        name = f"_folded{i}_{src.name}" + (f"_{k}" if src.num_outputs() > 1 else "")
        while name in taken:
            name += "_"
        taken.add(name)
        folded[(id(src), k)] = Node(None, name)

    def visit(node: Node, inputs: tuple) -> Any:
        if id(node) not in constant:
            return None
        # a hoisted node read only by hoisted nodes is unreachable from main: keep it as it is
        return [(folded[(id(node), k)], 0) if (id(node), k) in folded else (node, k)
                for k in range(node.num_outputs())]

    main = Graph(transform(graph.outputs, visit))
    return ParameterPrologue(Graph(boundary), main, tuple(folded[(id(s), k)] for s, k in boundary))
