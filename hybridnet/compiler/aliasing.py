"""Outputs of a compiled graph own their memory, as eager operator results do.

Eagerly, every ``nd`` operator returns new memory (``ndarray._owned`` copies a kernel result
that is a view of, or is, an input). A compiled graph calls the same kernels without that copy,
so a block returning ``F.reshape(x)``, ``F.identity(x)``, ``x`` itself, a parameter, or one value
twice would hand out memory shared with its input, its weight or another output: writing into
the output would change them.

The analysis runs once per compiled graph. An output *may alias* a graph variable (data input,
parameter, auxiliary state) when a path of operators that can return their input or a view of
it (``OpDef.returns_view``) leads from the variable to the output; two outputs may alias each other
when such paths reach them from one value. Only those outputs are checked at run time, by
comparing storage pointers, and copied when they do share memory. Outputs of ordinary graphs
(the last layer is a Dense, a Convolution, an activation...) are never checked: no cost.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..ir.graph import Graph, Node

__all__ = ["OutputOwnership"]


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


class OutputOwnership:
    """Which outputs of ``graph`` may share memory, and the run-time fix for those.

    ``inputs`` is the order in which the compiled function receives the graph's variables.
    ``checks`` lists ``(output index, input positions, earlier output indices)`` for every output
    that may share memory with one of those inputs or earlier outputs; it is empty for most graphs.
    """

    def __init__(self, graph: Graph, inputs: Sequence[Node]):
        position = {id(v): i for i, v in enumerate(inputs)}
        # id(view node) -> frozenset of the root keys (values whose memory it may share) of its
        # inputs; only the views the outputs reach through views are visited
        shared: dict = {}

        def is_view(n: Node) -> bool:
            return n.op is not None and n.op.returns_view

        def roots(n: Node, k: int) -> frozenset:
            return shared[id(n)] | {(id(n), k)} if is_view(n) else frozenset({(id(n), k)})

        for n, _ in graph.outputs:
            stack = [n] if is_view(n) and id(n) not in shared else []
            while stack:  # post-order over views (iterative: view chains may be long)
                m = stack[-1]
                pending = [s for s, _ in m.inputs if is_view(s) and id(s) not in shared]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                if id(m) not in shared:
                    shared[id(m)] = frozenset().union(*(roots(s, k) for s, k in m.inputs))
        var_roots = {(id(v), 0): position[id(v)] for v in graph.variables() if id(v) in position}
        checks = []
        seen: list = []
        for i, (n, k) in enumerate(graph.outputs):
            r = roots(n, k)
            on_inputs = tuple(sorted(var_roots[x] for x in r if x in var_roots))
            earlier = tuple(j for j, rj in enumerate(seen) if r & rj)
            if on_inputs or earlier:
                checks.append((i, on_inputs, earlier))
            seen.append(r)
        self.checks: tuple = tuple(checks)

    def __bool__(self) -> bool:
        return bool(self.checks)

    def apply(self, outputs: Sequence[torch.Tensor], inputs: Sequence[torch.Tensor]) -> tuple:
        """``outputs`` with a copy in place of each one that shares memory with an input or an
        earlier output (an output that only may, and does not, is returned as it is)."""
        outs = list(outputs)
        for i, on_inputs, earlier in self.checks:
            o = outs[i]
            p = _storage(o)
            if any(_storage(inputs[j]) == p for j in on_inputs) or \
                    any(_storage(outs[j]) == p for j in earlier):
                outs[i] = o.clone()
        return tuple(outs)
