"""How ``sym.contrib.foreach`` / ``while_loop`` / ``cond`` build their nodes: the subgraph is cut
out of the traced function (outside values become inputs), the IR prints and lints subgraphs,
shape/type inference goes through them, and passes keep them."""
from __future__ import annotations

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import nd
from hybridnet.compiler.passes import cse
from hybridnet.ir.graph import Graph, GraphError, Node


def _node(sym):
    return sym._entries[0][0]


def test_outside_values_become_inputs_and_locs_bind_them():
    x, h, w = mx.sym.var("x"), mx.sym.var("h"), mx.sym.var("w")
    pre = mx.sym.relu(w, name="pre")  # computed before the loop, read inside it

    def step(xt, states):
        out = mx.sym.dot(xt, pre) + states[0] + w
        return out, [out]
    outs, _ = mx.sym.contrib.foreach(step, x, [h])
    node = _node(outs)
    assert [src.name for src, _ in node.inputs] == ["x", "h", "pre", "w"]
    sub = node.subgraphs[0]
    names = [v.name for v in sub.variables()]
    assert names == ["x-0", "pre_output", "h-0", "w"]  # cut values named by their output, as MXNet
    assert node.attrs["in_data_locs"] == [0] and node.attrs["in_state_locs"] == [2]
    assert node.attrs["remain_locs"] == [1, 3] and node.attrs["num_args"] == 5
    # every node made inside is tagged with the subgraph's name, nothing outside is
    assert all(n.attrs.get("__subgraph_name__", "").startswith("foreach") for n in sub.nodes
               if n.op is not None)
    assert "__subgraph_name__" not in _node(pre).attrs


def test_results_passed_through_get_an_identity_node():
    x, h = mx.sym.var("x"), mx.sym.var("h")
    outs, states = mx.sym.contrib.foreach(lambda d, s: (d, s), x, [h])  # both are the inputs
    sub = _node(outs).subgraphs[0]
    assert [n.op.name for n, _ in sub.outputs] == ["_copy", "_copy"]
    res = mx.sym.Group([outs] + states).eval(x=nd.array([[1.0, 2.0], [3.0, 4.0]]), h=nd.array([5.0, 6.0]))
    np.testing.assert_allclose(res[0].asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_allclose(res[1].asnumpy(), [5, 6])


def test_text_shows_subgraphs_under_their_node():
    outs, _ = mx.sym.contrib.foreach(lambda d, s: (d * 2, [s[0] + d]), mx.sym.var("x"), [mx.sym.var("h")])
    text = outs.debug_str()
    lines = text.splitlines()
    assert lines[2].startswith("%2 = _foreach(%0, %1;")
    assert lines[3] == "  subgraph 0:"
    assert lines[4] == "    %0 = var x-0"
    assert lines[-2] == "    return %1, %3" and lines[-1] == "return %2.0"


def test_lint_checks_subgraphs_against_the_attributes():
    outs, _ = mx.sym.contrib.foreach(lambda d, s: (d * 2, [s[0] + d]), mx.sym.var("x"), [mx.sym.var("h")])
    node = _node(outs)
    Graph(outs._entries).lint()
    bad = Node(node.op, node.name, {**node.attrs, "in_state_locs": [0]}, node.inputs, node.subgraphs)
    with pytest.raises(GraphError, match=r"_foreach.*must name each of the body's 2 inputs once"):
        Graph([(bad, 0)]).lint()
    missing = Node(node.op, node.name, node.attrs, node.inputs)
    with pytest.raises(GraphError, match="has 0 subgraphs, expected 1"):
        Graph([(missing, 0)]).lint()
    inner_bad = Graph([(Node(node.op, "inner", node.attrs, node.subgraphs[0].outputs[:1]), 0)])
    wrapped = Node(node.op, node.name, node.attrs, node.inputs, (inner_bad,))
    with pytest.raises(GraphError, match=r"_foreach node '_foreach\d+' subgraph 0: node 'inner'"):
        Graph([(wrapped, 0)]).lint()


def test_cse_keeps_loops_with_different_bodies_apart():
    x, h = mx.sym.var("x"), mx.sym.var("h")
    a, _ = mx.sym.contrib.foreach(lambda d, s: (d * 2, [s[0] + d]), x, [h])
    b, _ = mx.sym.contrib.foreach(lambda d, s: (d * 3, [s[0] + d]), x, [h])
    b = mx.sym.Symbol([(Node(_node(b).op, _node(a).name, _node(a).attrs, _node(b).inputs, _node(b).subgraphs), 0)])
    g = cse(Graph(mx.sym.Group([a, b])._entries))
    assert len([n for n in g.nodes if n.op is not None]) == 2


def test_inference_reaches_parameters_used_only_inside_a_loop():
    """Deferred init: a Dense layer called inside the body gets its weight shape."""
    class Net(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = mx.gluon.nn.Dense(4, flatten=False)

        def hybrid_forward(self, F, x, h):
            return F.contrib.foreach(lambda xt, s: (self.dense(xt) + s[0], [s[0] * 2]), x, [h])[0]

    net = Net()
    net.initialize()
    net.hybridize()
    out = net(nd.ones((3, 2, 5)), nd.ones((2, 4)))
    assert out.shape == (3, 2, 4)
    assert net.dense.weight.shape == (4, 5)


def test_scope_counts_subgraph_names_as_mxnet():
    from collections import defaultdict
    from hybridnet.attribute import AttrScope
    AttrScope._subgraph_names = defaultdict(int)
    p = mx.sym.var("p")
    mx.sym.contrib.cond(p, lambda: p * 2, lambda: p * 3, name="my_cond")
    mx.sym.contrib.cond(p, lambda: p * 2, lambda: p * 3, name="my_cond")
    assert dict(AttrScope._subgraph_names) == {"my_cond_pred": 2, "my_cond_then": 2, "my_cond_else": 2}
