"""hybridize(verify=N): checked calls give the caller the usual results, agree with the eager
code (outputs, BatchNorm statistics, gradients, Dropout's random draws), and a block whose
trace no longer matches its Python code is reported at the node and line where they part."""
import random

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon
from hybridnet.compiler.verify import VerificationError
from hybridnet.gluon import nn


def _net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.BatchNorm(), nn.Dropout(0.5), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def test_verified_training_calls_match_unverified_ones():
    x = mx.nd.array(np.random.RandomState(0).randn(4, 5))
    results = []
    for verify in (0, 3):
        mx.random.seed(1)
        net = _net()
        net.hybridize(verify=verify)
        grads, outs = [], []
        for _ in range(3):
            with autograd.record():
                y = net(x)
            y.backward()
            outs.append(y.asnumpy())
            grads.append(net[0].weight.grad().asnumpy().copy())
        stats = net[1].running_mean.data().asnumpy()
        results.append((outs, grads, stats))
    for a, b in zip(results[0][0] + results[0][1], results[1][0] + results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-6)


def test_verification_stops_after_n_calls_and_the_fast_path_returns():
    net = _net()
    net.hybridize(verify=1)
    x = mx.nd.ones((2, 5))
    net(x)
    assert net._cached_op.verify_left == 0 and net._cached_op.fast_arity == 1
    net(x)


class _Scaled(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        self.scale = 2.0
        with self.name_scope():
            self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        return self.dense(x) * self.scale


def test_python_value_fixed_at_trace_is_reported_at_its_node_and_line():
    net = _net_scaled = _Scaled()
    net.initialize()
    net.hybridize(verify=2)
    x = mx.nd.ones((2, 3))
    net(x)
    net.scale = 3.0   # the graph keeps 2.0
    with pytest.raises(VerificationError) as e:
        net(x)
    msg = str(e.value)
    assert "_Scaled" in msg and "output 0" in msg
    assert "_mulscalar" in msg.lower() or "_mul_scalar" in msg
    assert "test_hybridize_verify.py:" in msg          # the user's line that made the node


class _Coin(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        if random.random() < 0.5:
            return F.relu(x)
        return F.sigmoid(x)


def test_python_control_flow_is_reported_as_a_missing_operator():
    net = _Coin()
    net.hybridize(verify=40)
    x = mx.nd.array([[-1.0, 2.0]])
    with pytest.raises(VerificationError, match="no matching operator in the eager run"):
        for _ in range(40):
            net(x)


def test_verify_must_be_a_count():
    with pytest.raises(TypeError, match="verify"):
        _net().hybridize(verify=True)


def test_symbol_block_has_no_code_to_verify():
    x = mx.sym.var("data")
    block = gluon.SymbolBlock(mx.sym.relu(x), x)
    with pytest.raises(mx.base.MXNetError, match="SymbolBlock has only the graph"):
        block.hybridize(verify=1)


class _ScaledParameter(gluon.Parameter):
    """A Parameter whose data() computes (GluonNLP's WeightDropParameter does so)."""

    def data(self, ctx=None):
        return super().data(ctx) * 2


class _WithScaledParameter(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        self.w = _ScaledParameter("w", shape=(3,))
        self.params._params["w"] = self.w

    def hybrid_forward(self, F, x, w):
        return F.relu(x * w)


def test_verify_checks_a_parameter_whose_data_computes():
    net = _WithScaledParameter()
    net.initialize(mx.init.Constant(1.5))
    net.hybridize(verify=2)
    x = mx.nd.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(net(x).asnumpy(), [3.0, 0.0, 9.0])  # checked: eager == graph
    with mx.autograd.record():
        y = net(x)
    y.backward()
    np.testing.assert_allclose(net.w.grad().asnumpy(), [2.0, 0.0, 6.0])
