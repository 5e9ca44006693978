"""CachedOp: the compiled function a hybridized block calls (MXNet's CachedOp).

The traced graph is optimized by the passes and compiled once to a shape-generic Python
function. A call passes data tensors then parameter tensors; outside ``autograd.record()`` it
runs with torch's grad mode off so nothing is recorded. Outputs own their memory as eager
results do (``aliasing``). A CachedOp holds no per-call state: threads may call one at once.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, Sequence

import torch

from ..ir.graph import Graph, Node
from ..ir.interpreter import Interpreter
from ..profiler import recorder as _profiler
from .aliasing import OutputOwnership
from .codegen import compile_graph
from .passes import optimize

__all__ = ["CachedOp"]

_set_grad = torch._C._set_grad_enabled
_is_grad = torch.is_grad_enabled


class Mode(Protocol):
    """What a call reads of the calling thread's autograd flags (``autograd.current_mode()``)."""
    recording: bool
    training: bool


class CachedOp:
    """Compiled graph with inputs ordered ``data_nodes + param_nodes``."""

    def __init__(self, graph: Graph, data_nodes: Sequence[Node], param_nodes: Sequence[Node],
                 flags: Any = None):
        self.flags = dict(flags or {})
        self.graph = optimize(graph)
        order = list(data_nodes) + list(param_nodes)
        present = {id(v) for v in self.graph.variables()}
        self._keep = [i for i, v in enumerate(order) if id(v) in present]
        self._all = len(self._keep) == len(order)
        inputs = [order[i] for i in self._keep]
        self._inputs = inputs
        self.compiled = compile_graph(self.graph, inputs, "hybrid_forward")
        self._fn = self.compiled.fn
        ownership = OutputOwnership(self.graph, inputs)
        self._own = ownership.apply if ownership else None

    def set_op_hook(self, callback: Optional[Callable[[str, str, Any], Any]], monitor_all: bool = False) -> None:
        """Call ``callback(name, op_name, tensor)`` on every operator output (``<node>_output``)
        and, with ``monitor_all``, first on its inputs (``<node>_<input>``), as MXNet's op hooks
        do. The graph then runs node by node (``ir.interpreter``); ``None`` restores the
        generated function."""
        if callback is None:
            self._fn = self.compiled.fn
            return
        interpreter = Interpreter(self.graph, self._inputs)

        def on_node(node: Node, ins: list, outs: tuple) -> None:
            name = node.op.name if node.op is not None else "null"
            if monitor_all:
                for slot, t in zip(node.monitor_input_names(), ins):
                    callback(f"{node.name}_{slot}", name, t)
            for out_name, t in zip(node.output_names(), outs):
                callback(out_name, name, t)

        def run(*tensors: Any, _train: bool = False) -> tuple:
            return interpreter.run(*tensors, _train=_train, hook=on_node)
        self._fn = run

    @property
    def source(self) -> str:
        """The generated Python source (what actually runs)."""
        return self.compiled.source

    def __call__(self, tensors: list, mode: Mode) -> tuple:
        """Run on ``tensors`` under ``mode`` (the caller's ``autograd.current_mode()``)."""
        if not self._all:
            tensors = [tensors[i] for i in self._keep]
        fn = self._fn if not _profiler.running else _profiler.timed_graph(self.compiled)
        try:
            if mode.recording or not _is_grad():
                outs = fn(*tensors, _train=mode.training)
            else:
                _set_grad(False)
                try:
                    outs = fn(*tensors, _train=mode.training)
                finally:
                    _set_grad(True)
        except (RuntimeError, ValueError, IndexError, TypeError) as e:
            raise explain_failure(self.graph, self.compiled.input_names, tensors, e,
                                  self.compiled.source) from e
        return outs if self._own is None else self._own(outs, tensors)


def explain_failure(graph: Graph, names: Sequence[str], tensors: Sequence[Any], err: Exception,
                    source: str = "") -> Exception:
    """Turn a kernel error inside a compiled graph into an MXNetError naming the node and shapes,
    by running shape inference with the actual input shapes (only on the failure path); when
    inference passes, the node is the one on the generated line where the kernel failed."""
    from ..base import MXNetError, dtype_name
    from ..symbol.infer import infer_graph
    shapes = {n: tuple(t.shape) for n, t in zip(names, tensors)}
    dtypes = {n: dtype_name(t.dtype) for n, t in zip(names, tensors)}
    try:
        infer_graph(graph, shapes, dtypes)
    except MXNetError as e:
        return MXNetError(f"{e}\n  (while running the hybridized graph; input shapes {shapes})")
    except Exception:  # inference itself could not say more: keep the original error
        pass
    node = _failing_node(err, source)
    at = f" at node {node}" if node else ""
    if isinstance(err, MXNetError):
        return MXNetError(f"{err}\n  (while running the hybridized graph{at}; input shapes {shapes})")
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return MXNetError(f"the hybridized graph failed{at}: {msg}\n  input shapes: {shapes}")


def _failing_node(err: Exception, source: str) -> str:
    """The node name commented on the generated line that raised ``err`` ('' if not found).

    The comment is the code generator's ``ascii()`` of the name, so it is shown as it is."""
    tb = err.__traceback__
    lineno = 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<hybridnet graph"):
            lineno = tb.tb_lineno
        tb = tb.tb_next
    lines = source.splitlines()
    if not 0 < lineno <= len(lines):
        return ""
    _, sep, comment = lines[lineno - 1].partition("  # ")
    return comment if sep else ""
