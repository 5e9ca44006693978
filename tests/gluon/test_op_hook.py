"""register_op_hook: every operator output of a hybridized graph (and with monitor_all its
inputs) reaches the callback under MXNet's names, with the values the graph computes."""
import numpy as np

import hybridnet as mx
from hybridnet.gluon import nn


def _net():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(3), nn.Activation("relu"))
    net.initialize(mx.init.Uniform(1.0))
    net.hybridize()
    return net


def test_outputs_are_reported_by_name_with_their_values():
    net = _net()
    x = mx.nd.array(np.random.RandomState(0).randn(2, 4))
    want = net(x).asnumpy()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.asnumpy())))
    got = net(x).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert [(n, o) for n, o, _ in seen] == [("net_dense0_fwd_output", "FullyConnected"),
                                            ("net_relu0_fwd_output", "Activation")]
    np.testing.assert_allclose(seen[1][2], want, rtol=1e-6)
    dense = net[0]  # the hooked FullyConnected output is x W^T + b, before the relu
    np.testing.assert_allclose(seen[0][2], x.asnumpy() @ dense.weight.data().asnumpy().T
                               + dense.bias.data().asnumpy(), rtol=1e-5, atol=1e-6)


def test_monitor_all_reports_inputs_first():
    net = _net()
    net(mx.nd.ones((2, 4)))             # built before the hook: the hook still applies
    names = []
    net.register_op_hook(lambda name, op, arr: names.append(name), monitor_all=True)
    net(mx.nd.ones((2, 4)))
    assert names == ["net_dense0_fwd_data", "net_dense0_fwd_weight", "net_dense0_fwd_bias",
                     "net_dense0_fwd_output", "net_relu0_fwd_input0", "net_relu0_fwd_output"]


def test_hooked_graph_trains_like_the_plain_one():
    x = mx.nd.array(np.random.RandomState(1).randn(2, 4))
    grads = []
    for hooked in (False, True):
        mx.random.seed(0)
        net = _net()
        if hooked:
            net.register_op_hook(lambda *a: None)
        with mx.autograd.record():
            net(x).sum().backward()
        grads.append(net[0].weight.grad().asnumpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
