"""Memory an executor's graph needs beyond its bound arrays, as a static planner would allocate
it (what MXNet's ``Executor.debug_str`` reports as "Total N MB allocated").

Forward-only runs reuse a buffer as soon as its last reader has run; when gradients flow, every
forward result on the gradient path is kept for the backward pass, which needs one gradient
buffer per such result (reused the same way, in reverse order)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..base import dtype_np
from ..ir.graph import Graph

__all__ = ["planned_bytes"]


def _greedy(order: list, size: Callable[[tuple], int], last_use: dict, keep: set) -> int:
    """Bytes allocated when each entry takes a free buffer of the same size or a new one, and
    gives it back after its last reader (entries in ``keep`` never give theirs back)."""
    released: dict = {}  # step -> entries whose buffers come back after it
    for e, last in last_use.items():
        if e not in keep:
            released.setdefault(last, []).append(e)
    free: dict = {}
    total = 0
    for step, entries in enumerate(order):
        for e in entries:
            nbytes = size(e)
            if free.get(nbytes):
                free[nbytes] -= 1
            else:
                total += nbytes
        for e in released.get(step, ()):
            free[size(e)] = free.get(size(e), 0) + 1
    return total


def planned_bytes(graph: Graph, out_shapes: dict, out_dtypes: dict, grad_vars: set) -> int:
    """Bytes for the operator outputs of ``graph`` (and, when any variable in ``grad_vars`` (ids)
    reaches an output through differentiable operators, for the backward pass)."""
    ops = [n for n in graph.nodes if n.op is not None]

    def size(e: tuple) -> int:
        s, d = out_shapes[e[0]][e[1]], out_dtypes[e[0]][e[1]]
        if s is None or any(x <= 0 for x in s):
            return 0
        return int(np.prod(s)) * np.dtype(dtype_np(d or "float32")).itemsize

    produced = [[(id(n), k) for k in range(n.num_outputs())] for n in ops]
    step_of = {id(n): i for i, n in enumerate(ops)}
    last_use: dict = {e: i for i, es in enumerate(produced) for e in es}
    for n in ops:
        for src, k in n.inputs:
            if src.op is not None:
                last_use[(id(src), k)] = max(last_use[(id(src), k)], step_of[id(n)])
    outputs = {(id(n), k) for n, k in graph.outputs if n.op is not None}
    on_path: set = set(grad_vars)
    for n in ops:
        if n.op.differentiable and any(id(src) in on_path for src, _ in n.inputs):
            on_path.add(id(n))
    if not any(id(n) in on_path for n, _ in graph.outputs):
        return _greedy(produced, size, last_use, outputs)
    kept = {e for e in last_use if e[0] in on_path} | outputs
    forward = _greedy(produced, size, last_use, kept)
    grads = [[(id(n), k) for k in range(n.num_outputs())] for n in reversed(ops) if id(n) in on_path]
    grad_last = {e: i + 1 for i, es in enumerate(grads) for e in es}  # read by the next step back
    return forward + _greedy(grads, size, grad_last, set())
