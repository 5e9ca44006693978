"""passes.layout: predict-mode calls of the default hybridized function keep convolution
activations channels-last; recording and training run the NCHW function, eager mode's kernels.

Each case compares a hybridized net (no static flags, so neither the predict plan nor a lowered
tier serves) with the same net run eagerly: predict-mode outputs to float rounding, training
outputs and gradients exactly; and checks what the pass put into the graph and which layout the
convolutions really saw, so a pattern that stops matching fails here."""
from __future__ import annotations

import collections

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import autograd, gluon, sym
from hybridnet.compiler.passes import layout
from hybridnet.gluon import nn
from hybridnet.gluon.model_zoo import vision
from hybridnet.ops import fused, registry
from hybridnet.ops import nn as ops_nn

pytestmark = pytest.mark.skipif(not fused.onednn_conv_ready(torch.zeros(1)),
                                reason="this torch build has no oneDNN convolutions")


def _ops(graph) -> collections.Counter:
    return collections.Counter(n.op.name for n in graph.nodes if n.op is not None)


def _graph(net: gluon.HybridBlock):
    return net(sym.var("data"))._graph()


class _ConvLayouts:
    """Records, for every 2-D convolution kernel call, whether its input was channels-last
    (True), NCHW (False) or both (None: one channel or one pixel)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.seen: list = []
        plain = ops_nn._CONV[2]

        def spy(x, *args):
            cl, nchw = x.is_contiguous(memory_format=torch.channels_last), x.is_contiguous()
            self.seen.append(None if cl and nchw else cl)
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


def _predict_and_train(net: gluon.HybridBlock, x: mx.nd.NDArray, label: mx.nd.NDArray,
                       layouts: "_ConvLayouts") -> tuple:
    """Predict-mode output and the convolution layouts it used; training output and gradients."""
    layouts.seen.clear()
    out = net(x).asnumpy()
    predict_layouts = list(layouts.seen)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    layouts.seen.clear()
    with autograd.record():
        train_out = net(x)
        loss = loss_fn(train_out, label)
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req != "null"}
    return out, predict_layouts, train_out.asnumpy(), list(layouts.seen), grads


@pytest.mark.parametrize("name", ["resnet18_v1", "resnet18_v2", "mobilenet1.0"])
def test_zoo_model_predicts_channels_last_and_trains_exactly_as_eager(name, monkeypatch):
    # every BatchNorm and residual addition written in place, however small (passes.inference)
    monkeypatch.setattr(fused, "INPLACE_MIN_ELEMENTS", 0)
    mx.random.seed(0)
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier())
    rng = np.random.RandomState(0)
    # batch 2: training-mode BatchNorm over 2 values per channel in the last stage (MXNet's
    # test_hybrid_static_memory), where any rounding difference shows in the outputs
    x = mx.nd.array(rng.rand(2, 3, 32, 32).astype(np.float32))
    label = mx.nd.array(rng.randint(0, 10, 2).astype(np.float32))
    net(x)
    _randomize_batchnorm(net, 1)
    # BatchNorm's moving statistics move in each backward: both runs start from the same ones
    stats = {k: p.data().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req == "null"}
    layouts = _ConvLayouts(monkeypatch)
    eager = _predict_and_train(net, x, label, layouts)
    for k, v in stats.items():
        net.collect_params()[k].set_data(mx.nd.array(v))
    net.hybridize()
    hybrid = _predict_and_train(net, x, label, layouts)
    assert True in hybrid[1] and False not in hybrid[1], "predict-mode convolutions read channels-last input"
    assert True not in eager[1] + hybrid[3], "eager mode and training stay NCHW"
    np.testing.assert_allclose(hybrid[0], eager[0], rtol=1e-4, atol=1e-5 * np.abs(eager[0]).max())
    np.testing.assert_array_equal(hybrid[2], eager[2])
    for k, g in eager[4].items():
        np.testing.assert_array_equal(hybrid[4][k], g, err_msg=k)


def test_mobilenetv2_predicts_with_batchnorm_and_relu6_in_place(monkeypatch):
    monkeypatch.setattr(fused, "INPLACE_MIN_ELEMENTS", 0)
    mx.random.seed(0)
    net = vision.get_model("mobilenetv2_0.25", classes=10)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).rand(2, 3, 32, 32).astype(np.float32))
    net(x)
    _randomize_batchnorm(net, 2)
    eager = net(x).asnumpy()
    net.hybridize()
    hybrid = net(x).asnumpy()
    np.testing.assert_allclose(hybrid, eager, rtol=1e-4, atol=1e-5 * np.abs(eager).max())
    fused_nodes = [n for n in net._cached_op.latest()._predict_function.graph.nodes
                   if n.op is not None and n.op.name in ("_batchnorm_act", "_add_act")]
    acts = collections.Counter((n.op.name, n.attrs.get("act", "none")) for n in fused_nodes)
    assert acts[("_batchnorm_act", "hardtanh")] > 0 and acts[("_add_act", "none")] > 0


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
    eager = net(x)
    net.hybridize()
    hybrid = net(x)
    for h, e in zip(hybrid, eager):
        assert h._t.is_contiguous()
        np.testing.assert_allclose(h.asnumpy(), e.asnumpy(), rtol=1e-4, atol=1e-4)
    op = net._cached_op.latest()
    assert _ops(op._predict_function.graph)["_contiguous"] == 3
    assert _ops(op.compiled.graph)["_channels_last"] == 0


def test_channels_last_operator_only_reorders_cpu_float32_4d():
    x = torch.randn(2, 3, 4, 5)
    y = fused._channels_last(x)
    assert y.is_contiguous(memory_format=torch.channels_last) and torch.equal(y, x)
    assert fused._channels_last(y) is y  # already channels-last: the input itself (an alias)
    x64 = x.double()
    assert fused._channels_last(x64) is x64
    v = torch.randn(3, 4)
    assert fused._channels_last(v) is v
    assert registry.get("_channels_last").returns_view  # it may return its input: outputs are checked for sharing


def test_symbol_executor_predicts_channels_last_and_trains_exactly_as_eager(monkeypatch):
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=32, name="c1")
    out = sym.Convolution(sym.relu(c1), kernel=(3, 3), num_filter=32, name="c2")
    rng = np.random.RandomState(5)
    args = {"data": rng.randn(2, 4, 6, 6), "c1_weight": rng.randn(32, 4, 3, 3) * 0.2, "c1_bias": rng.randn(32),
            "c2_weight": rng.randn(32, 32, 3, 3) * 0.1, "c2_bias": rng.randn(32)}
    nd_args = {k: mx.nd.array(v.astype(np.float32)) for k, v in args.items()}
    eager = {k: v.copy() for k, v in nd_args.items()}
    for v in eager.values():
        v.attach_grad()
    head = mx.nd.array(rng.randn(2, 32, 4, 4).astype(np.float32))
    with autograd.record():
        h = mx.nd.relu(mx.nd.Convolution(eager["data"], eager["c1_weight"], eager["c1_bias"], kernel=(3, 3),
                                         pad=(1, 1), num_filter=32))
        want = mx.nd.Convolution(h, eager["c2_weight"], eager["c2_bias"], kernel=(3, 3), num_filter=32)
    want.backward(head)
    layouts = _ConvLayouts(monkeypatch)
    exe = out.bind(mx.cpu(), nd_args, args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
    predicted = exe.forward(is_train=False)[0]
    assert layouts.seen == [True, True] and predicted._t.is_contiguous()
    np.testing.assert_allclose(predicted.asnumpy(), want.asnumpy(), rtol=1e-4, atol=1e-4)
    layouts.seen.clear()
    trained = exe.forward(is_train=True)[0]
    exe.backward(head)
    assert True not in layouts.seen
    np.testing.assert_array_equal(trained.asnumpy(), want.asnumpy())
    for k, g in exe.grad_dict.items():
        np.testing.assert_array_equal(g.asnumpy(), eager[k].grad.asnumpy(), err_msg=k)
