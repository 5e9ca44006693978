"""THE graph IR: immutable nodes and the graph of a list of output entries.

A ``Node`` is an operator application ``(op, name, attrs, inputs)`` or, with ``op=None``, a
variable. An *entry* is ``(node, output_index)``. A ``Graph`` is a list of output entries; its
node order is MXNet's (depth-first post-order from the heads, inputs in order), which is also
the order ``-symbol.json`` stores. Nodes are identified by object identity, never by name
(MXNet allows duplicate op-node names).

Control-flow operators (``_foreach``, ``_while_loop``, ``_cond``) also carry ``subgraphs``:
graphs of their own, whose variables (in the subgraph's node order, MXNet's ``list_inputs``)
are bound to the node's inputs as the operator's ``*_locs`` attributes say.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Optional

from ..ops.registry import OpDef

__all__ = ["Node", "Entry", "Graph", "GraphError", "topo_order", "transform", "rewrite", "replace_inputs",
           "collector_paused"]


class GraphError(ValueError):
    """A malformed graph (found by ``Graph.lint``)."""


class Node:
    """One operator application or variable. Treat as immutable after construction."""
    __slots__ = ("op", "name", "attrs", "inputs", "subgraphs", "__weakref__")

    def __init__(self, op: Optional[OpDef], name: str, attrs: Optional[dict] = None,
                 inputs: Iterable["Entry"] = (), subgraphs: Iterable["Graph"] = ()):
        self.op = op
        self.name = name
        self.attrs: dict = dict(attrs) if attrs else {}
        self.inputs: tuple = tuple(inputs)
        self.subgraphs: tuple = tuple(subgraphs)

    def with_inputs(self, inputs: Iterable["Entry"]) -> "Node":
        """A copy of this operator node reading ``inputs`` (attributes and subgraphs kept)."""
        return Node(self.op, self.name, self.attrs, inputs, self.subgraphs)

    @property
    def is_variable(self) -> bool:
        return self.op is None

    @property
    def opname(self) -> str:
        return "null" if self.op is None else self.op.name

    def num_outputs(self) -> int:
        return 1 if self.op is None else self.op.num_outputs(self.attrs)

    def output_names(self) -> list:
        if self.op is None:
            return [self.name]
        names = self.op.output_names(self.attrs)
        if len(names) == 1:
            return [f"{self.name}_output"]
        return [f"{self.name}_{n}" for n in names]

    def input_names(self) -> tuple:
        """Input slot names for this node (``data``, ``weight``, ``arg0``...)."""
        return self.op.slot_names(self.attrs, len(self.inputs)) if self.op is not None else ()

    def monitor_input_names(self) -> tuple:
        """Input names as MXNet's monitors and op hooks report them (``<node>_<name>``)."""
        if self.op is not None and not self.op.listed_inputs:
            return tuple(f"input{i}" for i in range(len(self.inputs)))
        return self.input_names()

    def aux_slots(self) -> tuple:
        """Indices of inputs that the operator mutates (auxiliary states)."""
        if self.op is None:
            return ()
        aux = self.op.aux_inputs(self.attrs)
        if not aux:
            return ()
        names = self.input_names()
        return tuple(i for i, n in enumerate(names) if n in aux)

    def kernel_attrs(self) -> dict:
        return self.op.kernel_attrs(self.attrs) if self.op is not None else {}

    def __repr__(self) -> str:
        return f"<Node {self.opname} {self.name}>"


Entry = tuple  # (Node, output_index)


class Graph:
    """The graph reachable from ``outputs`` (a list of entries)."""

    def __init__(self, outputs: Iterable[Entry]):
        self.outputs: list = [tuple(e) for e in outputs]
        self._nodes: Optional[list] = None
        self._positions: Optional[dict] = None
        # the strictest lint this graph passed (None: not linted; True: with unique variable
        # names). A graph never changes, so a pipeline that hands one on unchanged lints it once.
        self._linted: Optional[bool] = None

    @property
    def nodes(self) -> list:
        """All nodes in MXNet's order: DFS post-order from the heads, inputs in order."""
        if self._nodes is None:
            self._nodes = topo_order([n for n, _ in self.outputs])
        return self._nodes

    def positions(self) -> dict:
        """id(node) -> its index in ``nodes`` (computed once; treat as read-only)."""
        if self._positions is None:
            self._positions = {id(n): i for i, n in enumerate(self.nodes)}
        return self._positions

    def variables(self) -> list:
        return [n for n in self.nodes if n.op is None]

    def aux_variables(self) -> list:
        """Variables consumed in an auxiliary (mutated) slot, in node order."""
        aux: list = []
        seen: set = set()
        for n in self.nodes:
            for i in n.aux_slots():
                v = n.inputs[i][0]
                if v.op is None and id(v) not in seen:
                    seen.add(id(v))
                    aux.append(v)
        order = self.positions()
        return sorted(aux, key=lambda v: order[id(v)])

    def arguments(self) -> list:
        aux = {id(v) for v in self.aux_variables()}
        return [v for v in self.variables() if id(v) not in aux]

    def users(self) -> dict:
        """id(node) -> list of (consumer node, input slot)."""
        out: dict = {id(n): [] for n in self.nodes}
        for n in self.nodes:
            for k, (src, _) in enumerate(n.inputs):
                out[id(src)].append((n, k))
        return out

    def lint(self, unique_variable_names: bool = True) -> None:
        """Check structural invariants; raise GraphError naming the offending node (nodes of a
        subgraph are named by the path of control-flow nodes leading to them).
        ``unique_variable_names=False`` allows several variables of one name at the top level,
        as a bound Symbol may have (MXNet's ``bind`` gives them all the array of that name);
        a block's parameters are bound by name, so its graphs keep the rule.

        A graph is immutable, so a lint it passed is remembered: linting it again (as a
        pipeline does when a pass hands the graph on unchanged) costs nothing."""
        if self._linted is True or (self._linted is False and not unique_variable_names):
            return
        self._lint("", 0, unique_variable_names)
        self._linted = unique_variable_names

    def _lint(self, where: str, depth: int, unique_variable_names: bool = True) -> None:
        if depth > MAX_SUBGRAPH_DEPTH:
            raise GraphError(f"{where}subgraphs are nested more than {MAX_SUBGRAPH_DEPTH} deep")
        nodes = self.nodes
        pos = self.positions()
        n_outputs: list = []  # per node position, its number of outputs
        arity: dict = {}  # operator -> (required, expected) for operators without an inputs rule
        var_names: dict = {}
        for i, n in enumerate(nodes):
            op = n.op
            if op is None:
                n_outputs.append(1)
                if n.inputs:
                    raise GraphError(f"variable {n.name!r} has inputs")
                other = var_names.get(n.name)
                if other is not None and other is not n and unique_variable_names:
                    raise GraphError(f"{where}two different variables are named {n.name!r}")
                var_names[n.name] = n
                if n.subgraphs:
                    raise GraphError(f"{where}variable {n.name!r} has subgraphs")
                continue
            if n.subgraphs or op.num_subgraphs:
                _lint_subgraphs(n, where, depth)
            if not op.variadic:
                if op.active_inputs_rule is None:
                    bounds = arity.get(op)
                    if bounds is None:
                        bounds = arity[op] = (len([k for k in op.inputs if k not in op.optional_inputs]),
                                              len(op.inputs))
                    ok = bounds[0] <= len(n.inputs) <= bounds[1]
                else:
                    ok = len(n.inputs) == len(op.active_inputs(n.attrs))
                if not ok:
                    expected = op.active_inputs(n.attrs)
                    raise GraphError(f"{where}node {n.name!r} ({op.name}) has {len(n.inputs)} inputs, "
                                     f"expected {len(expected)} ({', '.join(expected)})")
            for src, idx in n.inputs:
                p = pos.get(id(src))
                if p is None or p >= i:
                    raise GraphError(f"{where}node {n.name!r} uses {src.name!r}, which does not come before it")
                if not 0 <= idx < n_outputs[p]:
                    raise GraphError(f"{where}node {n.name!r} uses output {idx} of {src.name!r}, "
                                     f"which has {n_outputs[p]} outputs")
            n_outputs.append(op.num_outputs(n.attrs))
        for src, idx in self.outputs:
            if not 0 <= idx < n_outputs[pos[id(src)]]:
                raise GraphError(f"{where}graph output {idx} of {src.name!r} does not exist")

    def text(self) -> str:
        """Stable, readable listing (one line per node, subgraphs indented under their node),
        for debugging and tests."""
        return "\n".join(self._text_lines(""))

    def _text_lines(self, indent: str) -> list:
        ids = {id(n): i for i, n in enumerate(self.nodes)}
        lines = []
        for i, n in enumerate(self.nodes):
            if n.op is None:
                lines.append(f"{indent}%{i} = var {n.name}")
                continue
            args = ", ".join(f"%{ids[id(s)]}" + (f".{k}" if s.num_outputs() > 1 else "") for s, k in n.inputs)
            attrs = ", ".join(f"{k}={v!r}" for k, v in sorted(n.attrs.items()))
            lines.append(f"{indent}%{i} = {n.op.name}({args}{'; ' + attrs if attrs else ''})  # {n.name}")
            for k, sub in enumerate(n.subgraphs):
                lines.append(f"{indent}  subgraph {k}:")
                lines.extend(sub._text_lines(indent + "    "))
        outs = ", ".join(f"%{ids[id(n)]}" + (f".{k}" if n.num_outputs() > 1 else "") for n, k in self.outputs)
        lines.append(f"{indent}return {outs}")
        return lines

    __str__ = text

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)


MAX_SUBGRAPH_DEPTH = 16  # control flow nested deeper than this is refused (files are untrusted)


def _lint_subgraphs(n: Node, where: str, depth: int) -> None:
    """A control-flow node has the subgraphs its operator needs, and they fit its attributes."""
    op = n.op
    assert op is not None
    want = op.num_subgraphs
    if len(n.subgraphs) != want:
        raise GraphError(f"{where}node {n.name!r} ({op.name}) has {len(n.subgraphs)} subgraphs, "
                         f"expected {want}")
    if not want:
        return
    for k, sub in enumerate(n.subgraphs):
        if not isinstance(sub, Graph):
            raise GraphError(f"{where}node {n.name!r} ({op.name}): subgraph {k} is not a Graph")
        sub._lint(f"{where}{op.name} node {n.name!r} subgraph {k}: ", depth + 1)
    if op.check_subgraphs is not None:
        try:
            op.check_subgraphs(n.attrs, len(n.inputs), [(len(g.variables()), len(g.outputs))
                                                        for g in n.subgraphs])
        except ValueError as e:
            raise GraphError(f"{where}node {n.name!r} ({op.name}): {e}") from None


def topo_order(heads: list) -> list:
    """DFS post-order over inputs (iterative, so deep graphs do not hit the recursion limit)."""
    order: list = []
    append = order.append
    # id(node) -> False while its inputs are being walked, True once it is in ``order``
    state: dict = {}
    get = state.get
    for head in heads:
        if id(head) in state:
            continue
        state[id(head)] = False
        stack: list = [(head, iter(head.inputs))]
        while stack:
            node, rest = stack[-1]
            for child, _ in rest:
                cid = id(child)
                seen = get(cid)
                if seen is None:
                    if child.inputs:
                        state[cid] = False
                        stack.append((child, iter(child.inputs)))
                        break
                    state[cid] = True  # a leaf: no need to stack it
                    append(child)
                elif seen is False:
                    raise GraphError(f"cycle through node {child.name!r}")
            else:
                stack.pop()
                state[id(node)] = True
                append(node)
    return order


def transform(outputs: list, visit: Any, order: Optional[list] = None) -> list:
    """Rebuild the graph of ``outputs`` bottom-up.

    ``visit(node, new_inputs)`` returns None to keep the node (copied only if its inputs
    changed) or a list of replacement entries, one per output of the node; ``new_inputs`` is
    ``node.inputs`` itself where no input changed. Returns the new output entries; where nothing
    changed, entries equal to ``outputs`` (the same nodes).
    ``order``: the nodes of ``outputs`` in topological order, where the caller has them.
    """
    if order is None:
        order = topo_order([n for n, _ in outputs])
    changed: dict = {}  # id(node) -> its replacement entries, for the nodes that changed only
    get = changed.get
    for node in order:
        if node.op is None:
            continue
        inputs = node.inputs
        if changed:
            new_inputs = tuple([e if (r := get(id(e[0]))) is None else r[e[1]] for e in inputs])
            if new_inputs != inputs:  # entries compare by node identity and index
                inputs = new_inputs
        repl = visit(node, inputs)
        if repl is None:
            if inputs is not node.inputs:
                copy = node.with_inputs(inputs)
                changed[id(node)] = [(copy, k) for k in range(node.num_outputs())]
        else:
            repl = list(repl)
            for k, e in enumerate(repl):
                if e[0] is not node or e[1] != k:
                    changed[id(node)] = repl
                    break
    if not changed:
        return list(outputs)
    return [e if (r := get(id(e[0]))) is None else r[e[1]] for e in outputs]


def rewrite(graph: Graph, visit: Any) -> Graph:
    """``Graph(transform(graph.outputs, visit))``, or ``graph`` itself where ``visit`` changed
    nothing: a pass that finds nothing to do hands on the graph it was given, so nothing
    downstream lints, compiles or rewrites it again."""
    outputs = transform(graph.outputs, visit, graph.nodes)
    return graph if outputs == graph.outputs else Graph(outputs)


def replace_inputs(outputs: list, mapping: dict) -> list:
    """Outputs with variables ``id(var) -> entry`` substituted (graph composition)."""
    order = topo_order([n for n, _ in outputs])
    new: dict = {}
    for node in order:
        if node.op is None:
            new[id(node)] = [mapping.get(id(node), (node, 0))]
            continue
        inputs = tuple(new[id(src)][k] for src, k in node.inputs)
        if all(a[0] is b[0] and a[1] == b[1] for a, b in zip(inputs, node.inputs)):
            new[id(node)] = [(node, k) for k in range(node.num_outputs())]
        else:
            copy = node.with_inputs(inputs)
            new[id(node)] = [(copy, k) for k in range(node.num_outputs())]
    return [new[id(n)][k] for n, k in outputs]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block (reference counting still frees
    everything that is not a cycle), as loading or compiling a graph wants: it builds nodes,
    entries and source lines by the hundred thousand, none of them garbage cycles, and each
    allocation threshold crossed starts a collection that walks all of them again (a
    100,000-node ``-symbol.json``: half of its load time). Nested and concurrent uses are
    harmless: only the use that paused the collector restarts it."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
