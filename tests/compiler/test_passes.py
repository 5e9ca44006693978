"""Graph passes: each leaves the expected node count and a graph that lints and computes the same."""
import numpy as np
import pytest

import hybridnet as mx
from hybridnet import nd, sym
from hybridnet.compiler.codegen import compile_graph
from hybridnet.compiler.passes import (broadcast_where_shapes_differ, cse, fuse_softmax_ce, remove_amp_cast,
                                       run_passes)
from hybridnet.ir.graph import Graph, GraphError, Node


def _ops(g):
    return [n.op.name for n in g.nodes if n.op is not None]


def _run(g, **inputs):
    c = compile_graph(g)
    return [o.numpy() for o in c(*[nd.array(inputs[n])._t for n in c.input_names])]


def test_cse_merges_identical_deterministic_nodes():
    a = sym.var("a")
    out = sym.relu(a) + sym.relu(a) * sym.exp(a)
    g = out._graph()
    assert _ops(g).count("relu") == 2
    g2 = cse(g)
    g2.lint()
    assert _ops(g2).count("relu") == 1 and len(g2.nodes) == len(g.nodes) - 1
    x = np.random.randn(2, 3)
    np.testing.assert_allclose(_run(g2, a=x)[0], _run(g, a=x)[0], rtol=1e-6)


def test_cse_keeps_random_and_training_nodes_apart():
    a = sym.var("a")
    g = (sym.Dropout(a, p=0.5) + sym.Dropout(a, p=0.5) + sym.random.uniform(shape=(2,)) + sym.random.uniform(shape=(2,)))._graph()
    assert len(cse(g).nodes) == len(g.nodes)


def test_fuse_softmax_ce_replaces_three_nodes_with_one():
    x, y = sym.var("x"), sym.var("y")
    loss = -sym.pick(sym.log_softmax(x, axis=-1), y, axis=-1, keepdims=True)
    g = sym.mean(loss, axis=0, exclude=True)._graph()
    g2 = fuse_softmax_ce(g)
    g2.lint()
    assert _ops(g2) == ["_fused_softmax_ce"] and len(g2.nodes) == len(g.nodes) - 3  # mean folded in too
    xv, yv = np.random.randn(4, 5), np.array([0.0, 4.0, 2.0, 9.0])
    np.testing.assert_allclose(_run(g2, x=xv, y=yv)[0], _run(g, x=xv, y=yv)[0], rtol=1e-5)


def test_fuse_leaves_shared_intermediates_alone():
    x, y = sym.var("x"), sym.var("y")
    lsm = sym.log_softmax(x)
    out = sym.Group([-sym.pick(lsm, y, keepdims=True), lsm])
    assert _ops(fuse_softmax_ce(out._graph())) == _ops(out._graph())


def test_remove_amp_cast_and_broadcast_rewrite():
    a, b = sym.var("a"), sym.var("b")
    g = (sym.amp_cast(a, dtype="float16") + b)._graph()
    g2 = remove_amp_cast(g)
    assert _ops(g2) == ["elemwise_add"] and len(g2.nodes) == 3
    g3 = broadcast_where_shapes_differ(g2, {"a": (2, 3), "b": (1, 3)})
    assert _ops(g3) == ["broadcast_add"] and g3.nodes[-1].name == g2.nodes[-1].name
    g4 = broadcast_where_shapes_differ(g2, {"a": (2, 3), "b": (2, 3)})
    assert _ops(g4) == ["elemwise_add"]


def test_run_passes_names_the_pass_that_broke_the_graph():
    def breaks(g):
        n = g.nodes[-1]
        bad = Node(n.op, n.name, n.attrs, n.inputs[:1])  # drop an input: wrong arity
        return Graph([(bad, 0)])

    g = (sym.var("a") + sym.var("b"))._graph()
    with pytest.raises(GraphError, match="breaks"):
        run_passes(g, [breaks])
