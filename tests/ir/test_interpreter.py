"""hybridnet/ir/interpreter.py on small hand-built graphs: it equals the compiled function (the
registry-wide comparison is tests/ops/test_interpreter.py), runs another topological order when
asked, and refuses wrong bindings with clear errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import hybridnet.ops  # noqa: F401  (registers every operator family)
from hybridnet.compiler.codegen import compile_graph
from hybridnet.ir.graph import Graph, Node
from hybridnet.ir.interpreter import Interpreter
from hybridnet.ops.registry import get as op


def _mlp_bn():
    """FullyConnected -> BatchNorm (train-aware: batch statistics in training) -> relu -> SliceChannel, two outputs (one of them a second output of the split)."""
    x, w, b = Node(None, "x"), Node(None, "w"), Node(None, "b")
    gamma, beta, mean, var = (Node(None, n) for n in ("gamma", "beta", "mean", "var"))
    fc = Node(op("FullyConnected"), "fc", {"num_hidden": 4}, [(x, 0), (w, 0), (b, 0)])
    bn = Node(op("BatchNorm"), "bn", {"fix_gamma": False}, [(fc, 0), (gamma, 0), (beta, 0), (mean, 0), (var, 0)])
    act = Node(op("relu"), "act", {}, [(bn, 0)])
    s = Node(op("SliceChannel"), "split", {"num_outputs": 2, "axis": 1}, [(act, 0)])
    return Graph([(s, 1), (fc, 0)])


def _values(graph):
    rng = np.random.RandomState(0)
    shapes = {"x": (3, 5), "w": (4, 5), "b": (4,), "gamma": (4,), "beta": (4,), "mean": (4,), "var": (4,)}
    vals = {k: rng.uniform(0.5, 1.5, s) for k, s in shapes.items()}
    return [vals[v.name] for v in graph.variables()]


@pytest.mark.parametrize("train", [False, True])
def test_interpreter_equals_the_compiled_function(train):
    g = _mlp_bn()
    arrays = _values(g)
    fresh = lambda: [torch.from_numpy(a.copy()) for a in arrays]  # noqa: E731
    want_in, got_in = fresh(), fresh()
    with torch.no_grad():
        want = compile_graph(g).fn(*want_in, _train=train)
        got = Interpreter(g).run(*got_in, _train=train)
    assert len(got) == len(want) == 2
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(got_in, want_in):  # inputs (running statistics included) left alike
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_input_order_binds_positionally():
    g = _mlp_bn()
    order = list(reversed(g.variables()))
    arrays = list(reversed(_values(g)))
    want = compile_graph(g, order).fn(*[torch.from_numpy(a.copy()) for a in arrays])
    got = Interpreter(g, order).run(*[torch.from_numpy(a.copy()) for a in arrays])
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_another_node_order_gives_the_same_result_and_hook_follows_it():
    x = Node(None, "x")
    a = Node(op("relu"), "a", {}, [(x, 0)])
    b = Node(op("_mul_scalar"), "b", {"scalar": 3.0}, [(x, 0)])
    c = Node(op("elemwise_add"), "c", {}, [(a, 0), (b, 0)])
    g = Graph([(c, 0)])
    t = torch.tensor([-1.0, 2.0])
    seen = []
    out = Interpreter(g, node_order=[b, a, c]).run(t, hook=lambda n, ins, outs: seen.append(n.name))
    assert seen == ["b", "a", "c"]
    assert out[0].tolist() == Interpreter(g).run(t)[0].tolist() == [-3.0, 8.0]


def test_bad_node_orders_and_bindings_are_refused():
    x = Node(None, "x")
    a = Node(op("relu"), "a", {}, [(x, 0)])
    b = Node(op("relu"), "b", {}, [(a, 0)])
    g = Graph([(b, 0)])
    with pytest.raises(ValueError, match="^Interpreter: node_order runs 'b' before its inputs$"):
        Interpreter(g, node_order=[b, a])
    with pytest.raises(ValueError, match="^Interpreter: node_order must list each operator node of the graph once$"):
        Interpreter(g, node_order=[a])
    with pytest.raises(ValueError, match=r"^Interpreter: no argument given for variables \['x'\]$"):
        Interpreter(g, input_order=[])
