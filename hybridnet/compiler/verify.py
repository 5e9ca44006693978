"""``hybridize(verify=N)``: run a call both through the compiled graph and eagerly, and say
where they part.

The real call runs as always and its results are what the caller gets. Then, on copies of the
parameters (so auxiliary-state updates and gradients touch nothing of the caller's), the same
call runs eagerly and through the traced graph node by node in the order the trace created the
nodes, which is the order the eager code ran its operators, so random operators draw the same
numbers from the same generator state. Outputs, updated parameters (BatchNorm's running
statistics...) and, under ``autograd.record()``, parameter gradients for the same random head
gradients must agree within a tolerance for the dtype. On a difference the error names the
first graph node whose value differs from the eager operator it stands for, and the user's line
that created it."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import torch

from ..base import MXNetError
from ..ir.graph import Graph, Node
from ..ir.interpreter import Interpreter

__all__ = ["VerificationError", "verify_call", "tolerance"]


class VerificationError(MXNetError):
    """The compiled graph and the eager code disagree (raised by ``hybridize(verify=N)``)."""


def tolerance(dtype: torch.dtype) -> tuple:
    """(rtol, atol) for comparing two computations of the same value in ``dtype``."""
    if dtype == torch.float64:
        return 1e-7, 1e-9
    if dtype in (torch.float16, torch.bfloat16):
        return 2e-2, 2e-3
    return 1e-4, 1e-5


def _differs(a: Any, b: Any) -> Optional[str]:
    """Why tensors ``a`` and ``b`` are not the same value ('' when they are)."""
    if tuple(a.shape) != tuple(b.shape):
        return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.numel() == 0:
        return ""
    if not (a.is_floating_point() or a.is_complex()):
        n = int((a != b).sum())
        return f"{n} of {a.numel()} elements differ" if n else ""
    rtol, atol = tolerance(a.dtype)
    a64, b64 = a.detach().double(), b.detach().double()
    bad = ~torch.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True)
    if not bool(bad.any()):
        return ""
    err = (a64 - b64).abs()[bad].max().item()
    return f"{int(bad.sum())} of {a.numel()} elements differ (max abs difference {err:.3g})"


def _first_divergence(graph: Graph, created: Sequence[tuple], values: dict, records: list) -> str:
    """The first node (in creation order) whose value differs from the eager operator matched
    to it (the next eager record of the same operator), as a sentence; '' when all agree."""
    in_graph = {id(n) for n in graph.nodes}
    r = 0
    for node, site in created:
        if id(node) not in in_graph:
            continue
        k = r
        while k < len(records) and records[k][0] is not node.op:
            k += 1
        where = f" (created at {site})" if site else ""
        if k == len(records):
            return (f"graph node {node.name!r} ({node.op.name}){where} has no matching operator in "
                    f"the eager run: Python control flow that depends on values, or on anything "
                    f"other than the inputs' structure, is fixed when the graph is traced")
        r = k + 1
        for j, (g, e) in enumerate(zip(values[id(node)], records[k][1])):
            why = _differs(g, e)
            if why:
                return f"graph node {node.name!r} ({node.op.name}) output {j}{where}: {why}"
    return ""


def verify_call(block_name: str, real_call: Callable[[], tuple], graph: Graph,
                input_vars: Sequence[Node], created: Sequence[tuple], data: Sequence[Any],
                params: Sequence[Any], param_names: Sequence[str], training: bool, recording: bool,
                run_eager: Callable[[list], tuple]) -> tuple:
    """Run ``real_call()`` and return its outputs after checking the call as described in the
    module docstring. ``graph`` is the traced (unoptimized) graph with variables ``input_vars``
    bound to ``data + params``; ``run_eager(param_copies)`` runs the block eagerly in the
    calling thread with its parameters read as the copies, and returns (output tensors, eager
    operator records). Everything the check needs comes in as arguments; the only shared state
    it touches is torch's default generator (process-wide), replayed for both runs and left as
    the real call left it."""
    rng_before = torch.get_rng_state()
    outs = real_call()
    rng_after = torch.get_rng_state()
    try:
        _check(block_name, outs, rng_before, graph, input_vars, created, data, params, param_names,
               training, recording, run_eager)
    finally:
        torch.set_rng_state(rng_after)
    return outs


def _copies(params: Sequence[Any], grad: bool) -> list:
    return [p.detach().clone().requires_grad_(grad and p.is_floating_point()) for p in params]


def _check(block_name: str, outs: tuple, rng: Any, graph: Graph, input_vars: Sequence[Node],
           created: Sequence[tuple], data: Sequence[Any], params: Sequence[Any],
           param_names: Sequence[str], training: bool, recording: bool,
           run_eager: Callable[[list], tuple]) -> None:
    data = [d.detach() for d in data]
    ops = {id(n) for n in graph.nodes if n.op is not None}
    order = [n for n, _ in created if id(n) in ops]
    interp = Interpreter(graph, input_vars, order if len(order) == len(ops) else None)
    values: dict = {}

    def keep(node: Node, ins: list, node_outs: tuple) -> None:
        values[id(node)] = node_outs

    with torch.set_grad_enabled(recording):
        torch.set_rng_state(rng)
        eager_params = _copies(params, recording)
        eager_outs, records = run_eager(eager_params)
        torch.set_rng_state(rng)
        graph_params = _copies(params, recording)
        graph_outs = interp.run(*data, *graph_params, _train=training, hook=keep)
    problems = []
    for i, (c, e) in enumerate(zip(outs, eager_outs)):
        why = _differs(c, e)
        if why:
            problems.append(f"output {i}: {why}")
    if len(outs) != len(eager_outs):
        problems.append(f"{len(outs)} outputs from the graph, {len(eager_outs)} from the eager run")
    for name, g, e in zip(param_names, graph_params, eager_params):
        why = _differs(g, e)
        if why:
            problems.append(f"parameter {name!r} after the call (auxiliary state update): {why}")
    if recording and not problems:
        problems += _gradient_problems(graph_outs, graph_params, eager_outs, eager_params, param_names)
    if problems:
        first = _first_divergence(graph, created, values, records)
        raise VerificationError(
            f"hybridize(verify=...): {block_name} gives different results hybridized and eagerly: "
            f"{'; '.join(problems[:4])}." + (f"\n  First divergence: {first}." if first else
                                             "\n  Every graph node matched its eager operator: the "
                                             "difference comes from Python values fixed at trace "
                                             "time (shapes, asnumpy()/asscalar() results).")
            + "\n  The graph keeps what hybrid_forward read when it was traced: call hybridize() "
              "again after changing such Python state, or pass the values as inputs or parameters.")


def _gradient_problems(graph_outs: tuple, graph_params: list, eager_outs: tuple, eager_params: list,
                       names: Sequence[str]) -> list:
    """Parameter gradients of both runs for the same random head gradients."""
    gen = torch.Generator().manual_seed(0)
    heads = [torch.randn(tuple(o.shape), generator=gen, dtype=torch.float64).to(o.dtype)
             if o.is_floating_point() else None for o in graph_outs]
    wanted = [i for i, p in enumerate(graph_params) if p.requires_grad]

    def grads(outs: tuple, params: list) -> list:
        pairs = [(o, h) for o, h in zip(outs, heads) if h is not None and o.requires_grad]
        if not pairs or not wanted:
            return [None] * len(wanted)
        return list(torch.autograd.grad([o for o, _ in pairs], [params[i] for i in wanted],
                                        [h for _, h in pairs], allow_unused=True))
    problems = []
    for i, g, e in zip(wanted, grads(graph_outs, graph_params), grads(eager_outs, eager_params)):
        if g is None and e is None:
            continue
        g = torch.zeros_like(graph_params[i]) if g is None else g
        e = torch.zeros_like(eager_params[i]) if e is None else e
        why = _differs(g, e)
        if why:
            problems.append(f"gradient of parameter {names[i]!r}: {why}")
    return problems
