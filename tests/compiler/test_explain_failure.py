"""``explain_failure``: a kernel error inside a compiled graph becomes an MXNetError that says
where and with which input shapes, one message kind per way the failure can be explained:

- shape inference with the actual shapes finds the bad node: its message, then the shapes;
- inference passes and the kernel raised an MXNetError: that message, the node, the shapes;
- inference passes and the kernel raised anything else: "the hybridized graph failed at node
  ...", the first line of the error (its type name when it has no message), the shapes;
- the node is the one commented on the generated line that raised, shown as the code generator
  writes it (``ascii()``); without such a line the message names no node.
"""
from __future__ import annotations

import re

import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.compiler.cached_op import explain_failure
from hybridnet.compiler.codegen import compile_graph
from hybridnet.gluon import nn
from hybridnet.ir.graph import Graph, Node
from hybridnet.ops.registry import get as op


def _fail(graph: Graph, tensors: list) -> tuple:
    """Run the compiled graph on ``tensors``; (the kernel's error, explain_failure's error)."""
    compiled = compile_graph(graph)
    with pytest.raises(Exception) as info:
        compiled.fn(*tensors)
    err = info.value
    out = explain_failure(graph, compiled.input_names, tensors, err, compiled.source)
    assert isinstance(out, MXNetError)
    return err, str(out)


def _fc_graph() -> Graph:
    x, w = Node(None, "x"), Node(None, "w")
    fc = Node(op("FullyConnected"), "fc", {"num_hidden": 3, "no_bias": True}, [(x, 0), (w, 0)])
    return Graph([(Node(op("relu"), "act", {}, [(fc, 0)]), 0)])


def _cholesky_graph(name: str) -> Graph:
    a = Node(None, "a")
    chol = Node(op("_linalg_potrf"), name, {}, [(a, 0)])
    return Graph([(Node(op("relu"), "after", {}, [(chol, 0)]), 0)])


def _sketch_graph() -> Graph:
    data, h, s = Node(None, "data"), Node(None, "h"), Node(None, "s")
    cs = Node(op("_contrib_count_sketch"), "sketch", {"out_dim": 3}, [(data, 0), (h, 0), (s, 0)])
    return Graph([(cs, 0)])


def test_shape_inference_names_the_node_and_the_shapes():
    err, msg = _fail(_fc_graph(), [torch.zeros(2, 5), torch.zeros(3, 4)])
    assert msg.startswith("shape inference for node 'fc' (FullyConnected): FullyConnected: the input has 5 "
                          "features (all axes after the first) but the weight expects 4 (in_units=4)")
    assert msg.endswith("\n  (while running the hybridized graph; input shapes {'x': (2, 5), 'w': (3, 4)})")


def test_kernel_error_names_the_generated_line_node_and_the_first_line_of_the_error():
    err, msg = _fail(_cholesky_graph("chol"), [-torch.eye(2, dtype=torch.float64)])
    assert isinstance(err, RuntimeError) and not isinstance(err, MXNetError)
    first = str(err).splitlines()[0]
    assert first.startswith("linalg.cholesky:")
    assert msg == f"the hybridized graph failed at node 'chol': {first}\n  input shapes: {{'a': (2, 2)}}"


def test_node_name_is_shown_as_the_generated_comment_writes_it():
    _, msg = _fail(_cholesky_graph("chol\u00e9\nx"), [-torch.eye(2, dtype=torch.float64)])
    assert msg.startswith("the hybridized graph failed at node 'chol\\xe9\\nx': linalg.cholesky:")


def test_mxnet_error_from_a_kernel_keeps_its_message_and_adds_node_and_shapes():
    data, h, s = torch.ones(2, 4), torch.tensor([[0.0, 1.0, 7.0, 2.0]]), torch.ones(1, 4)
    err, msg = _fail(_sketch_graph(), [data, h, s])
    assert isinstance(err, MXNetError)
    assert msg == ("count_sketch: hash indices must lie in [0, out_dim=3), got [0, 7]\n"
                   "  (while running the hybridized graph at node 'sketch'; "
                   "input shapes {'data': (2, 4), 'h': (1, 4), 's': (1, 4)})")


def test_error_without_a_message_is_named_by_its_type_and_without_a_generated_frame_names_no_node():
    graph = _cholesky_graph("chol")
    msg = str(explain_failure(graph, ["a"], [torch.eye(2)], IndexError(), ""))
    assert msg == "the hybridized graph failed: IndexError\n  input shapes: {'a': (2, 2)}"
    msg = str(explain_failure(graph, ["a"], [torch.eye(2)], MXNetError("bad value"), ""))
    assert msg == "bad value\n  (while running the hybridized graph; input shapes {'a': (2, 2)})"
    # only the first line of a long error is kept
    msg = str(explain_failure(graph, ["a"], [torch.eye(2)], ValueError("  first\nsecond\nthird"), ""))
    assert msg == "the hybridized graph failed: first\n  input shapes: {'a': (2, 2)}"


# -- through hybridize: what users see -------------------------------------------------------------
def test_hybridized_block_reports_shape_errors_by_node():
    net = nn.Dense(3, in_units=4, prefix="dense_")
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((2, 4)))
    with pytest.raises(MXNetError) as info:
        net(mx.nd.ones((2, 5)))
    msg = str(info.value)
    assert re.search(r"node 'dense_fwd' \(FullyConnected\).*the input has 5 features", msg), msg
    assert "(while running the hybridized graph; input shapes {" in msg
    assert "'data': (2, 5)" in msg and "'dense_weight': (3, 4)" in msg


class _Cholesky(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.relu(F.linalg.potrf(x, name="chol"))


def test_hybridized_block_reports_kernel_errors_by_node():
    net = _Cholesky(prefix="net_")
    net.hybridize()
    good = mx.nd.array([[4.0, 0.0], [0.0, 9.0]], dtype="float64")
    net(good)
    with pytest.raises(MXNetError) as info:
        net(-good)
    msg = str(info.value)
    assert msg.startswith("the hybridized graph failed at node 'net_chol': linalg.cholesky:"), msg
    assert msg.endswith("\n  input shapes: {'data': (2, 2)}")


# -- which shapes the message lists: data inputs and the failing node's inputs, not every parameter
def _chain_graph() -> Graph:
    """x -> fc1 (w1) -> relu -> fc2 (w2) -> relu: fc2 fails when w2 has the wrong width."""
    x, w1, w2 = Node(None, "x"), Node(None, "w1"), Node(None, "w2")
    fc1 = Node(op("FullyConnected"), "fc1", {"num_hidden": 3, "no_bias": True}, [(x, 0), (w1, 0)])
    act = Node(op("relu"), "act", {}, [(fc1, 0)])
    fc2 = Node(op("FullyConnected"), "fc2", {"num_hidden": 2, "no_bias": True}, [(act, 0), (w2, 0)])
    return Graph([(Node(op("relu"), "out", {}, [(fc2, 0)]), 0)])


def test_shape_error_lists_data_and_the_failing_nodes_inputs_only():
    graph = _chain_graph()
    compiled = compile_graph(graph)
    assert compiled.input_names == ["x", "w1", "w2"]
    tensors = [torch.zeros(2, 4), torch.zeros(3, 4), torch.zeros(2, 5)]
    with pytest.raises(Exception) as info:
        compiled.fn(*tensors)
    msg = str(explain_failure(graph, compiled.input_names, tensors, info.value, compiled.source, n_data=1))
    assert "node 'fc2'" in msg
    assert msg.endswith("input shapes {'x': (2, 4), 'w2': (2, 5)})"), msg  # not w1


def test_kernel_error_lists_the_failing_nodes_inferred_inputs():
    a, b = Node(None, "a"), Node(None, "b")
    neg = Node(op("negative"), "neg", {}, [(a, 0)])
    chol = Node(op("_linalg_potrf"), "chol", {}, [(neg, 0)])
    graph = Graph([(Node(op("elemwise_add"), "add", {}, [(chol, 0), (b, 0)]), 0)])
    compiled = compile_graph(graph)
    tensors = [torch.eye(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64)]
    with pytest.raises(Exception) as info:
        compiled.fn(*tensors)
    msg = str(explain_failure(graph, compiled.input_names, tensors, info.value, compiled.source, n_data=1))
    assert msg.startswith("the hybridized graph failed at node 'chol':"), msg
    assert msg.endswith("input shapes: {'a': (2, 2), 'neg_output': (2, 2)}"), msg  # b is not chol's


def test_hybridized_resnet_error_does_not_list_every_parameter():
    net = mx.gluon.model_zoo.vision.get_model("resnet18_v1", classes=10)
    net.initialize()
    net.hybridize(static_alloc=True)
    net(mx.nd.ones((1, 3, 32, 32)))
    with pytest.raises(MXNetError) as info:
        net(mx.nd.ones((1, 4, 32, 32)))  # the first convolution expects 3 channels
    msg = str(info.value)
    shown = msg[msg.index("input shapes"):]
    assert "'data': (1, 4, 32, 32)" in shown
    assert shown.count("weight") <= 1, msg
