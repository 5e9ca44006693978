"""The IR interpreter equals the generated code on every registry sample (forward, in the
sample's train/predict mode), and its hook sees every operator output."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.compiler.codegen import compile_graph
from hybridnet.ir.interpreter import Interpreter
from hybridnet.symbol import sym_invoke, var

from . import harness

CASES = [c for c in harness.all_cases() if not c[1].random and c[3].symbolic]


def _graph(op, sample):
    arrays = harness.prepare_inputs(sample, np.float64)
    names = [f"in{i}" for i in range(len(arrays))]
    syms = [None if a is None else var(n) for n, a in zip(names, arrays)]
    out = sym_invoke(op, syms, dict(sample.attrs), name="node")
    values = {n: a for n, a in zip(names, arrays) if a is not None}
    return out._graph(), values


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_interpreter_equals_generated_code(case):
    _, op, _, sample = case
    graph, values = _graph(op, sample)
    order = graph.variables()
    missing = [v.name for v in order if v.name not in values]
    assert not missing, f"the node creates inputs {missing} the sample does not provide"
    # each run gets its own copies: operators that update auxiliary state do so in place
    fresh = lambda: [torch.from_numpy(np.array(values[v.name], copy=True)) for v in order]  # noqa: E731
    train = bool(sample.train)
    with torch.no_grad():
        want = compile_graph(graph, order).fn(*fresh(), _train=train)
        got = Interpreter(graph, order).run(*fresh(), _train=train)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_hook_sees_every_operator_output_in_order():
    x = mx.sym.var("x")
    y = mx.sym.relu(x * 2, name="act") + 1
    graph = y._graph()
    seen = []
    out = Interpreter(graph).run(torch.tensor([-1.0, 3.0]),
                                 hook=lambda n, ins, outs: seen.append((n.name, outs[0].tolist())))
    assert [s[0] for s in seen] == [n.name for n in graph.nodes if n.op is not None]
    assert seen[1] == ("act", [0.0, 6.0])
    assert out[0].tolist() == [1.0, 7.0]


def test_wrong_arity_is_a_clear_error():
    graph = (mx.sym.var("a") + mx.sym.var("b"))._graph()
    with pytest.raises(ValueError, match=r"1 values for 2 inputs \['a', 'b'\]"):
        Interpreter(graph).run(torch.zeros(1))


def test_control_flow_nodes_run_their_subgraphs():
    data = mx.sym.var("data")
    init = mx.sym.var("init")
    outs, states = mx.sym.contrib.foreach(lambda x, s: (x + s[0], [x * 2 + s[0]]), data, [init])
    graph = mx.sym.Group([outs, states[0]])._graph()
    order = graph.variables()
    values = {"data": torch.arange(6.0).reshape(3, 2), "init": torch.ones(2)}
    args = [values[v.name] for v in order]
    want = compile_graph(graph, order).fn(*args)
    got = Interpreter(graph, order).run(*args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
