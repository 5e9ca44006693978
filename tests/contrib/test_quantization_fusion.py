"""The predict-mode int8 fusion (compiler/passes/int8.py): MXNet's quantized layer chains run as
one oneDNN kernel each when a quantized net is hybridized, with the outputs of the unfused graph
(MXNet's operators node for node, which eager calls and ``export`` keep)."""
import json

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.compiler.passes.int8 import fuse_int8, has_int8_layers
from hybridnet.compiler.pipeline import Target, predict_graph
from hybridnet.contrib import quantization as q
from hybridnet.gluon import nn
from hybridnet.gluon.model_zoo.vision.resnet import BasicBlockV1
from hybridnet.ir.graph import Graph
from hybridnet.ops import int8_kernels


def _cosine(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _trained_stats(net, x):
    """Xavier weights and BatchNorm statistics of the net's own inputs."""
    net.initialize(mx.init.Xavier())
    for _ in range(2):
        with mx.autograd.record():
            out = net(x)
        out.backward()
    return net


def _resnet_blocks():
    net = nn.HybridSequential(prefix="rb_")
    with net.name_scope():
        net.add(nn.Conv2D(16, 3, padding=1, in_channels=3), nn.BatchNorm(), nn.Activation("relu"),
                BasicBlockV1(16, 1, in_channels=16), BasicBlockV1(32, 2, downsample=True, in_channels=16),
                nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


def _mobile_blocks():
    net = nn.HybridSequential(prefix="mb_")
    with net.name_scope():
        net.add(nn.Conv2D(16, 3, padding=1, in_channels=3), nn.BatchNorm(), nn.Activation("relu"),
                nn.Conv2D(16, 3, padding=1, groups=16, in_channels=16, use_bias=False), nn.BatchNorm(),
                nn.Activation("relu"), nn.Conv2D(32, 1, in_channels=16, use_bias=False), nn.BatchNorm(),
                nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(24, activation="relu"),
                nn.Dense(4))
    return net


def _tiny_images():
    """1x1 convolutions over 2x2 and 1x1 images (MobileNet's last stages on small inputs): the
    fused layer runs them as int8 matrix products."""
    net = nn.HybridSequential(prefix="ti_")
    with net.name_scope():
        net.add(nn.Conv2D(16, 3, strides=6, in_channels=3), nn.BatchNorm(), nn.Activation("relu"),
                nn.Conv2D(32, 1, in_channels=16, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                nn.GlobalAvgPool2D(), nn.Conv2D(24, 1, in_channels=32), nn.Activation("relu"),
                nn.Flatten(), nn.Dense(4))
    return net


def _quantized(make):
    mx.random.seed(3)
    x = mx.nd.array(np.random.RandomState(3).uniform(-1, 1, (8, 3, 12, 12)))
    net = _trained_stats(make(), x)
    qnet = q.quantize_net_v2(net, calib_mode="naive", calib_data=mx.io.NDArrayIter(x.asnumpy(), batch_size=8))
    return net, qnet, x


def _ops(graph):
    return [n.op.name for n in graph.nodes if n.op is not None]


def _traced(qnet, x):
    qnet.hybridize()
    qnet(x)
    return qnet._cached_graph.output._graph()


@pytest.mark.parametrize("make, convs, sums, fcs", [(_resnet_blocks, 6, 2, 1), (_mobile_blocks, 3, 0, 2)])
def test_fusion_leaves_one_node_per_layer(make, convs, sums, fcs):
    _, qnet, x = _quantized(make)
    graph = _traced(qnet, x)
    assert has_int8_layers(graph)
    fused = fuse_int8(graph)
    ops = _ops(fused)
    assert ops.count("_int8_conv") == convs and ops.count("_int8_fully_connected") == fcs
    assert sum(1 for n in fused.nodes if n.op is not None and n.op.name == "_int8_conv"
               and n.attrs.get("accum_range") is not None) == sums
    # every layer chain is one node: no requantize, quantized relu or add is left
    assert not {"_contrib_quantized_conv", "_contrib_quantized_fully_connected", "_contrib_requantize",
                "_contrib_quantized_act", "_contrib_quantized_elemwise_add"} & set(ops)
    # what is left: the entry quantize, the pooling, the exit dequantize (and flatten, _contiguous)
    assert len(ops) == convs + fcs + ops.count("_contrib_quantized_pooling") + ops.count("_contrib_quantized_flatten") \
        + 3
    assert _ops(predict_graph(graph, Target.PLAN)).count("_int8_conv") == convs


@pytest.mark.parametrize("make", [_resnet_blocks, _mobile_blocks, _tiny_images])
@pytest.mark.parametrize("opts", [{}, {"static_alloc": True}, {"static_alloc": True, "static_shape": True}])
def test_fused_outputs_are_the_unfused_graphs(make, opts):
    net, qnet, x = _quantized(make)
    unfused = qnet(x).asnumpy()  # eager: MXNet's operators one by one
    qnet.hybridize(**opts)
    for _ in range(2):
        fused = qnet(x).asnumpy()
    # oneDNN rounds each layer's output from its float accumulators and adds a residual before
    # rounding it: now and then an integer step apart from the unfused chain
    step = np.abs(unfused).max() / 127
    assert np.abs(fused - unfused).max() <= 4 * step
    assert _cosine(fused, unfused) >= 0.999
    assert _cosine(fused, net(x).asnumpy()) >= 0.99


def test_float64_fallback_computes_what_onednn_computes(monkeypatch):
    if not int8_kernels.available():
        pytest.skip("oneDNN's int8 kernels are not served here")
    _, qnet, x = _quantized(_resnet_blocks)
    qnet.hybridize()
    onednn = qnet(x).asnumpy()
    monkeypatch.setattr(int8_kernels, "_broken", {"qconv", "qlinear", "conv", "linear"})
    fallback = qnet(x).asnumpy()
    step = np.abs(onednn).max() / 127
    assert np.abs(fallback - onednn).max() <= 2 * step


def test_export_keeps_mxnets_operators(tmp_path):
    _, qnet, x = _quantized(_resnet_blocks)
    want = [n["op"] for n in json.loads(qnet(mx.sym.var("data")).tojson())["nodes"]]
    qnet.hybridize(static_alloc=True)
    for _ in range(2):
        qnet(x)
    qnet.export(str(tmp_path / "q"), epoch=0)
    with open(tmp_path / "q-symbol.json") as f:
        got = [n["op"] for n in json.load(f)["nodes"]]
    assert got == want
    assert "_contrib_quantized_elemwise_add" in got and not any(op.startswith("_int8") for op in got)


def test_chains_whose_inner_values_are_read_elsewhere_stay():
    _, qnet, x = _quantized(_mobile_blocks)
    graph = _traced(qnet, x)
    # a graph that also outputs a requantize ends that chain there: its relu stays a node
    inner = next(n for n in graph.nodes if n.op is not None and n.op.name == "_contrib_requantize")
    both = Graph(list(graph.outputs) + [(inner, 0)])
    fused = fuse_int8(both)
    ops = _ops(fused)
    assert ops.count("_contrib_quantized_act") == 1 and ops.count("_int8_conv") == 3
    src = fused.outputs[-1][0].inputs[0][0]  # through _contiguous: the output may be channels-last
    assert src.op.name == "_int8_conv" and not src.attrs["relu"]
    # its range outputs are constants the fused node shares between calls: handed out as copies
    ranges = Graph(list(graph.outputs) + [(inner, 1), (inner, 2)])
    assert [n.inputs[0][0].op.name for n, _ in fuse_int8(ranges).outputs[-2:]] == ["_copy", "_copy"]
    # and one that outputs a conv's int32 accumulators keeps that layer MXNet's
    acc = next(n for n in graph.nodes if n.op is not None and n.op.name == "_contrib_quantized_conv")
    ops = _ops(fuse_int8(Graph(list(graph.outputs) + [(acc, 0)])))
    assert ops.count("_contrib_quantized_conv") == 1 and ops.count("_int8_conv") == 2


def test_float_graphs_are_left_alone():
    net = _mobile_blocks()
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 3, 8, 8)))
    graph = net._cached_graph.output._graph()
    assert not has_int8_layers(graph)
    assert fuse_int8(graph) is graph


@pytest.mark.parametrize("dtype, calib", [("int8", "naive"), ("uint8", "naive"), ("auto", "entropy"),
                                          ("auto", "none")])
def test_every_quantized_dtype_and_calibration_runs_fused_as_unfused(dtype, calib):
    mx.random.seed(4)
    x = mx.nd.array(np.random.RandomState(4).uniform(-1, 1, (8, 3, 12, 12)))
    net = _trained_stats(_resnet_blocks(), x)
    qnet = q.quantize_net_v2(net, quantized_dtype=dtype, calib_mode=calib,
                             calib_data=mx.io.NDArrayIter(x.asnumpy(), batch_size=8))
    unfused = qnet(x).asnumpy()
    graph = _traced(qnet, x)
    fused_ops = _ops(fuse_int8(graph))
    if calib == "none":  # no calibrated ranges: nothing to fuse, MXNet's graph runs
        assert "_int8_conv" not in fused_ops
    else:
        assert fused_ops.count("_int8_conv") == 6
    qnet.hybridize(static_alloc=True)
    fused = qnet(x).asnumpy()
    step = np.abs(unfused).max() / 127
    assert np.abs(fused - unfused).max() <= 4 * step
    assert _cosine(fused, unfused) >= 0.999


def test_the_lowered_tier_leaves_int8_graphs_to_the_fused_plan():
    _, qnet, x = _quantized(_mobile_blocks)
    qnet.hybridize(static_alloc=True, static_shape=True)
    qnet(x)
    op = qnet._cached_op.latest()
    assert op.tier is None and "int8 operator" in op.tier_refused
    assert op.predict_plan is not None


def test_fused_layers_follow_new_parameters():
    _, qnet, x = _quantized(_mobile_blocks)
    qnet.hybridize(static_alloc=True)
    before = qnet(x).asnumpy()
    params = qnet.collect_params()
    name = next(k for k in params.keys() if k.endswith("dense0_weight_quantize"))
    w = params[name].data()
    params[name].set_data(mx.nd.array(-w.asnumpy().astype(np.float32), dtype="int8"))
    # the weight's range parameters change too: the scales are made again from both
    lo = next(k for k in params.keys() if k.endswith("dense0_weight_quantize_max"))
    params[lo].set_data(params[lo].data() * 2)
    after = qnet(x).asnumpy()
    qnet.hybridize(active=False)
    unfused = qnet(x).asnumpy()
    assert not np.allclose(after, before)
    assert np.abs(after - unfused).max() <= 4 * np.abs(unfused).max() / 127


@pytest.mark.parametrize("kwargs", [{"quantize_mode": "smart"}, {"exclude_layers_match": ["dense"]},
                                    {"exclude_layers_match": ["conv1"]}])
def test_partly_quantized_graphs_run_fused_as_unfused(kwargs):
    mx.random.seed(5)
    x = mx.nd.array(np.random.RandomState(5).uniform(-1, 1, (8, 3, 12, 12)))
    net = _trained_stats(_mobile_blocks(), x)
    qnet = q.quantize_net_v2(net, calib_mode="naive", calib_data=mx.io.NDArrayIter(x.asnumpy(), batch_size=8),
                             **kwargs)
    unfused = qnet(x).asnumpy()
    qnet.hybridize(static_alloc=True)
    fused = qnet(x).asnumpy()
    assert np.abs(fused - unfused).max() <= 4 * np.abs(unfused).max() / 127
    assert _cosine(fused, unfused) >= 0.999


@pytest.mark.parametrize("shape, dtype", [((4, 16, 2, 2), torch.uint8), ((4, 16, 1, 1), torch.int8)])
def test_pointwise_layers_on_tiny_images_run_as_a_product_with_the_same_integers(shape, dtype):
    from hybridnet.ops import int8_kernels
    rng = np.random.RandomState(5)
    lo, hi = (0, 255) if dtype == torch.uint8 else (-127, 127)
    x = torch.tensor(rng.randint(lo, hi + 1, shape)).to(dtype).contiguous(memory_format=torch.channels_last)
    weight = torch.tensor(rng.randint(-127, 128, (24, 16, 1, 1))).to(torch.int8)
    w_scale = torch.tensor(rng.uniform(0.001, 0.01, 24), dtype=torch.float32)
    x_zp = 0 if dtype == torch.uint8 else 128
    layer = int8_kernels.Int8Layer(0.02, x_zp, int8_kernels.conv_prepack(weight, w_scale, 0.02, x_zp, [1, 1], [0, 0],
                                                                        [1, 1], 1),
                                   weight, w_scale, torch.zeros(24, dtype=torch.int32),
                                   torch.tensor(rng.uniform(-1, 1, 24), dtype=torch.float32), [1, 1], [0, 0], [1, 1], 1,
                                   0.05, torch.uint8, True, {}, [])
    xu = x if x_zp == 0 else int8_kernels.as_uint8(x)[0]
    assert int8_kernels._pointwise_on_tiny_images(layer, xu)
    got = int8_kernels.conv2d_requantized(layer, x)
    real = torch.nn.functional.conv2d((xu.double() - x_zp) * 0.02, weight.double() * w_scale.double().reshape(-1, 1, 1, 1),
                                      layer.bias.double())
    want = real.clamp(min=0).div(0.05).round().clamp(0, 255).to(torch.uint8)
    assert got.shape == want.shape and got.dtype == torch.uint8
    assert (got.int() - want.int()).abs().max() <= 1
