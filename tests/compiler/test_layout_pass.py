"""passes.layout: the default hybridized function keeps convolution activations channels-last.

Each case compares a hybridized net (default function: no static flags, so neither the predict
plan nor a lowered tier serves) with the same net run eagerly, outputs and parameter gradients,
and checks what the pass put into the graph and which layout the convolutions really saw, so a
pattern that stops matching, or an aliasing mistake that corrupts a value autograd saved, fails
here."""
from __future__ import annotations

import collections

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import autograd, gluon, sym
from hybridnet.compiler.aliasing import ALIASING_OPS
from hybridnet.compiler.passes import layout
from hybridnet.gluon import nn
from hybridnet.gluon.model_zoo import vision
from hybridnet.ops import fused
from hybridnet.ops import nn as ops_nn

pytestmark = pytest.mark.skipif(not fused.onednn_conv_ready(torch.zeros(1)),
                                reason="this torch build has no oneDNN convolutions")


def _ops(graph) -> collections.Counter:
    return collections.Counter(n.op.name for n in graph.nodes if n.op is not None)


def _graph(net: gluon.HybridBlock):
    return net(sym.var("data"))._graph()


class _ConvLayouts:
    """Records, for every 2-D convolution kernel call, whether its input was channels-last (an
    NCHW input with more than one channel and pixel fails, unless it is channels-last too)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.seen: list = []
        plain = ops_nn._CONV[2]

        def spy(x, *args):
            self.seen.append(x.is_contiguous(memory_format=torch.channels_last))
            return plain(x, *args)
        monkeypatch.setitem(ops_nn._CONV, 2, spy)


def _randomize_batchnorm(net: gluon.HybridBlock, seed: int) -> None:
    rng = np.random.RandomState(seed)
    for name, p in net.collect_params().items():
        t = p.data()._t.detach()
        if name.endswith(("running_var", "gamma")):
            t.copy_(torch.from_numpy(rng.uniform(0.5, 2.0, tuple(t.shape))))
        elif name.endswith(("running_mean", "beta")):
            t.copy_(torch.from_numpy(rng.randn(*t.shape) * 0.3))


def _outputs_and_grads(net: gluon.HybridBlock, x: mx.nd.NDArray, label: mx.nd.NDArray, train: bool) -> tuple:
    out = net(x).asnumpy()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    with autograd.record(train_mode=train):
        loss = loss_fn(net(x), label)
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req != "null"}
    return out, grads


# mobilenet1.0's training-mode gradients (BatchNorm on batch statistics) change by 10-25% when
# the input changes by 1e-6: it is compared with BatchNorm on its moving statistics
@pytest.mark.parametrize("name,train", [("resnet18_v1", True), ("resnet18_v2", True), ("mobilenet1.0", False)])
def test_zoo_model_hybridized_matches_eager_outputs_and_gradients(name, train, monkeypatch):
    mx.random.seed(0)
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier())
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.rand(4, 3, 64, 64).astype(np.float32))
    label = mx.nd.array(rng.randint(0, 10, 4).astype(np.float32))
    net(x)
    _randomize_batchnorm(net, 1)
    # BatchNorm's moving statistics move in each backward: both runs start from the same ones
    stats = {k: p.data().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req == "null"}
    eager_out, eager_grads = _outputs_and_grads(net, x, label, train)
    for k, v in stats.items():
        net.collect_params()[k].set_data(mx.nd.array(v))
    layouts = _ConvLayouts(monkeypatch)
    net.hybridize()
    hybrid_out, hybrid_grads = _outputs_and_grads(net, x, label, train)
    assert layouts.seen and all(layouts.seen), "every convolution reads channels-last input"
    np.testing.assert_allclose(hybrid_out, eager_out, rtol=1e-4, atol=1e-5 * np.abs(eager_out).max())
    for k, g in eager_grads.items():
        # relative to each gradient's own scale: rounding differs, nothing else may
        np.testing.assert_allclose(hybrid_grads[k], g, rtol=0, atol=2e-4 * (np.abs(g).max() + 1e-20), err_msg=k)


def test_resnet18_graph_converts_each_convolution_input_once():
    net = vision.get_model("resnet18_v1", classes=10)
    net.initialize()
    net(mx.nd.zeros((1, 3, 32, 32)))
    g = _graph(net)
    after = layout.channels_last_convolutions(g)
    ops = _ops(after)
    assert ops["Convolution"] == _ops(g)["Convolution"] == 20
    # the stem and the 19 others: a block's first conv and its downsample conv share one input
    assert ops["_channels_last"] == 17
    assert ops["_contiguous"] == 1  # the single output leaves row-major
    for n in after.nodes:
        if n.op is not None and n.op.name == "Convolution":
            assert n.inputs[0][0].op.name == "_channels_last"


def test_narrow_convolutions_keep_nchw_and_the_graph_is_unchanged():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 5), nn.MaxPool2D(), nn.Conv2D(16, 5), nn.Dense(10))  # the seed LeNet's widths
    net.initialize()
    net(mx.nd.zeros((1, 1, 28, 28)))
    g = _graph(net)
    assert layout.channels_last_convolutions(g) is g


def test_grouped_convolution_is_converted_even_when_narrow():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, groups=8, in_channels=8), nn.Activation("relu"))
    net.initialize()
    g = _graph(net)
    assert _ops(layout.channels_last_convolutions(g))["_channels_last"] == 1


def test_switch_off_leaves_the_graph(monkeypatch):
    net = vision.get_model("resnet18_v1", classes=10)
    net.initialize()
    net(mx.nd.zeros((1, 3, 32, 32)))
    g = _graph(net)
    monkeypatch.setattr(layout, "ENABLED", False)
    assert layout.channels_last_convolutions(g) is g


class _TwoHeads(gluon.HybridBlock):
    """A convolution's output is a graph output and also feeds a residual add and a flatten."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.conv = nn.Conv2D(32, 3, padding=1, in_channels=3)
        self.conv2 = nn.Conv2D(32, 3, padding=1, in_channels=32)

    def hybrid_forward(self, F, x):
        y = self.conv(x)
        z = F.relu(self.conv2(y) + y)
        return y, F.flatten(z), F.sum(z, axis=(2, 3))


def test_outputs_leave_row_major_and_match_eager_with_shared_values():
    net = _TwoHeads()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(3).randn(2, 3, 6, 5).astype(np.float32))
    x.attach_grad()
    with autograd.record():
        eager = net(x)
        autograd.backward([o.sum() for o in eager])
    eager_grad = x.grad.asnumpy().copy()
    net.hybridize()
    with autograd.record():
        hybrid = net(x)
        autograd.backward([o.sum() for o in hybrid])
    for h, e in zip(hybrid, eager):
        assert h._t.is_contiguous()
        np.testing.assert_allclose(h.asnumpy(), e.asnumpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(x.grad.asnumpy(), eager_grad, rtol=1e-4, atol=1e-4)
    compiled = net._cached_op.latest().compiled
    assert _ops(compiled.graph)["_contiguous"] == 3


def test_channels_last_operator_only_reorders_cpu_float32_4d():
    x = torch.randn(2, 3, 4, 5)
    y = fused._channels_last(x)
    assert y.is_contiguous(memory_format=torch.channels_last) and torch.equal(y, x)
    assert fused._channels_last(y) is y  # already channels-last: the input itself (an alias)
    x64 = x.double()
    assert fused._channels_last(x64) is x64
    v = torch.randn(3, 4)
    assert fused._channels_last(v) is v
    assert "_channels_last" in ALIASING_OPS  # it may return its input: outputs are checked for sharing


def test_symbol_executor_runs_the_layout_and_matches_eager(monkeypatch):
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=32, name="c1")
    out = sym.Convolution(sym.relu(c1), kernel=(3, 3), num_filter=32, name="c2")
    rng = np.random.RandomState(5)
    args = {"data": rng.randn(2, 4, 6, 6), "c1_weight": rng.randn(32, 4, 3, 3) * 0.2, "c1_bias": rng.randn(32),
            "c2_weight": rng.randn(32, 32, 3, 3) * 0.1, "c2_bias": rng.randn(32)}
    nd_args = {k: mx.nd.array(v.astype(np.float32)) for k, v in args.items()}
    layouts = _ConvLayouts(monkeypatch)
    exe = out.bind(mx.cpu(), nd_args, args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
    y = exe.forward(is_train=True)[0]
    head = mx.nd.array(rng.randn(*y.shape).astype(np.float32))
    exe.backward(head)
    assert layouts.seen == [True, True] and y._t.is_contiguous()
    eager = {k: v.copy() for k, v in nd_args.items()}
    for v in eager.values():
        v.attach_grad()
    with autograd.record():
        h = mx.nd.relu(mx.nd.Convolution(eager["data"], eager["c1_weight"], eager["c1_bias"], kernel=(3, 3),
                                         pad=(1, 1), num_filter=32))
        want = mx.nd.Convolution(h, eager["c2_weight"], eager["c2_bias"], kernel=(3, 3), num_filter=32)
    want.backward(head)
    np.testing.assert_allclose(y.asnumpy(), want.asnumpy(), rtol=1e-4, atol=1e-4)
    for k, g in exe.grad_dict.items():
        np.testing.assert_allclose(g.asnumpy(), eager[k].grad.asnumpy(), rtol=1e-4, atol=1e-4, err_msg=k)
