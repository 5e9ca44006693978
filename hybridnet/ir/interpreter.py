"""A node-by-node executor of the IR: the reference the code generator is tested against, and
the way to watch every operator output of a graph (``register_op_hook``, debugging).

It calls each node's registry kernel exactly as the generated code does (the same attributes,
``is_train`` for training-aware operators), on whatever values the kernels take (torch tensors),
so ``Interpreter(g).run(...)`` equals ``compile_graph(g).fn(...)`` on every graph. It is slower
than the generated function (a dictionary lookup per input, attributes rebuilt per node) and
keeps no intermediate beyond its last use unless a hook asks to see it."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from .graph import Graph, Node

__all__ = ["Interpreter", "NodeHook", "KernelCall"]

# hook(node, input values, output values) called after each operator node runs
NodeHook = Callable[[Node, list, tuple], None]
# call(op, input values, attributes) -> the kernel's result, instead of op.kernel(*inputs, **attrs)
KernelCall = Callable[[Any, list, dict], Any]


class Interpreter:
    """Runs ``graph`` with its variables bound positionally in ``input_order`` (default: the
    graph's variables in node order), like ``compile_graph(graph, input_order).fn``.

    ``node_order`` runs the operator nodes in another topological order (the order a trace
    created them in, which is the order eager code ran them: random operators then draw the
    same numbers)."""

    def __init__(self, graph: Graph, input_order: Optional[Sequence[Node]] = None,
                 node_order: Optional[Sequence[Node]] = None):
        self.graph = graph
        self.nodes = list(graph.nodes)
        if node_order is not None:
            ops = [n for n in self.nodes if n.op is not None]
            if sorted(map(id, node_order)) != sorted(map(id, ops)):
                raise ValueError("Interpreter: node_order must list each operator node of the graph once")
            done = {id(n) for n in self.nodes if n.op is None}
            for n in node_order:
                if any(id(src) not in done for src, _ in n.inputs):
                    raise ValueError(f"Interpreter: node_order runs {n.name!r} before its inputs")
                done.add(id(n))
            self.nodes = [n for n in self.nodes if n.op is None] + list(node_order)
        self.inputs = list(input_order) if input_order is not None else graph.variables()
        bound = {id(v) for v in self.inputs}
        missing = [v.name for v in graph.variables() if id(v) not in bound]
        if missing:
            raise ValueError(f"Interpreter: no argument given for variables {missing}")
        position = {id(n): i for i, n in enumerate(self.nodes)}
        self._last_use: dict = {}
        for n in self.nodes:
            for src, k in n.inputs:
                self._last_use[(id(src), k)] = position[id(n)]
        self._outputs = {(id(n), k) for n, k in graph.outputs}
        # control-flow nodes call their subgraphs as the generated code does: fn(*xs, _train=)
        self._subgraphs = {id(n): tuple(Interpreter(sub).run for sub in n.subgraphs)
                           for n in self.nodes if n.subgraphs}

    def run(self, *values: Any, _train: bool = False, hook: Optional[NodeHook] = None,
            call: Optional[KernelCall] = None) -> tuple:
        """The graph outputs for ``values``; ``hook(node, inputs, outputs)`` sees every operator
        node; ``call(op, inputs, attrs)``, where given, runs each operator instead of its kernel."""
        if len(values) != len(self.inputs):
            raise ValueError(f"Interpreter.run: {len(values)} values for {len(self.inputs)} inputs "
                             f"{[v.name for v in self.inputs]}")
        env: dict = {(id(v), 0): x for v, x in zip(self.inputs, values)}
        for i, n in enumerate(self.nodes):
            if n.op is None:
                continue
            args = [env[(id(src), k)] for src, k in n.inputs]
            attrs = n.kernel_attrs()
            if n.op.train_aware:
                attrs["is_train"] = _train
            if n.subgraphs:
                attrs["subgraphs"] = self._subgraphs[id(n)]
            out = n.op.kernel(*args, **attrs) if call is None else call(n.op, args, attrs)
            outs = (out,) if n.num_outputs() == 1 else tuple(out)
            for k, o in enumerate(outs):
                env[(id(n), k)] = o
            if hook is not None:
                hook(n, args, outs)
            for src, k in n.inputs:
                if self._last_use.get((id(src), k)) == i and (id(src), k) not in self._outputs:
                    env.pop((id(src), k), None)
        return tuple(env[(id(n), k)] for n, k in self.graph.outputs)

    __call__ = run
