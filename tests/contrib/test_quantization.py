"""mx.contrib.quantization: MXNet 1.9.1's int8 models on real int8 kernels.

The graph the pass makes is checked node for node against the one real MXNet 1.9.1 makes for the
same network; calibrated models are checked against their float32 selves (a trained LeNet's
predictions, random-weight resnet18_v1 / mobilenet1.0 outputs), and the quantized SymbolBlock
hybridizes, exports and imports again. The int8 operators' integer semantics are checked against
NumPy by tests/ops (their registry samples)."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.contrib import quantization as q
from hybridnet.gluon import nn
from hybridnet.gluon.model_zoo import vision
from hybridnet.ops import int8_kernels

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MXNET_PY = "/tmp/mxvenv/bin/python"


def _cosine(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _small_net():
    net = nn.HybridSequential(prefix="q_")
    with net.name_scope():  # layer names q_conv0_, q_pool0_... whatever ran before
        net.add(nn.Conv2D(8, 3, in_channels=3, activation="relu"), nn.MaxPool2D(2), nn.Conv2D(8, 3),
                nn.BatchNorm(), nn.Activation("relu"), nn.Flatten(), nn.Dense(10, activation="relu"), nn.Dense(4))
    net.initialize(mx.init.Xavier())
    return net


def _checkpoint(net, x, tmp_path):
    net.hybridize()
    net(x)
    net.export(str(tmp_path / "f32"))
    return mx.model.load_checkpoint(str(tmp_path / "f32"), 0)


# The graph real MXNet 1.9.1's quantize_model(..., quantize_mode='full', calib_mode='naive')
# makes of _small_net (run once with MXNET_SUBGRAPH_BACKEND=NONE; operators and names in order).
MXNET_GRAPH = [
    ("null", "data"), ("_contrib_quantize_v2", "data_quantize"), ("null", "conv0_weight_quantize"),
    ("null", "conv0_bias_quantize"), ("null", "conv0_weight_quantize_min"), ("null", "conv0_weight_quantize_max"),
    ("null", "conv0_bias_quantize_min"), ("null", "conv0_bias_quantize_max"),
    ("_contrib_quantized_conv", "quantized_conv0_fwd"), ("_contrib_requantize", "requantize_conv0_fwd"),
    ("_contrib_quantized_act", "quantized_conv0_relu_fwd"), ("_contrib_quantized_pooling", "quantized_pool0_fwd"),
    ("null", "conv1_weight_quantize"), ("null", "conv1_bias_quantize"), ("null", "conv1_weight_quantize_min"),
    ("null", "conv1_weight_quantize_max"), ("null", "conv1_bias_quantize_min"), ("null", "conv1_bias_quantize_max"),
    ("_contrib_quantized_conv", "quantized_conv1_fwd"), ("_contrib_requantize", "requantize_conv1_fwd"),
    ("null", "batchnorm0_gamma"), ("null", "batchnorm0_beta"), ("null", "batchnorm0_running_mean"),
    ("null", "batchnorm0_running_var"), ("_contrib_quantized_batch_norm", "quantized_batchnorm0_fwd"),
    ("_contrib_quantized_act", "quantized_relu0_fwd"), ("_contrib_quantized_flatten", "quantized_flatten0_flatten0"),
    ("null", "dense0_weight_quantize"), ("null", "dense0_bias_quantize"), ("null", "dense0_weight_quantize_min"),
    ("null", "dense0_weight_quantize_max"), ("null", "dense0_bias_quantize_min"), ("null", "dense0_bias_quantize_max"),
    ("_contrib_quantized_fully_connected", "quantized_dense0_fwd"), ("_contrib_requantize", "requantize_dense0_fwd"),
    ("_contrib_quantized_act", "quantized_dense0_relu_fwd"),
    ("null", "dense1_weight_quantize"), ("null", "dense1_bias_quantize"), ("null", "dense1_weight_quantize_min"),
    ("null", "dense1_weight_quantize_max"), ("null", "dense1_bias_quantize_min"), ("null", "dense1_bias_quantize_max"),
    ("_contrib_quantized_fully_connected", "quantized_dense1_fwd"), ("_contrib_requantize", "requantize_dense1_fwd"),
    ("_contrib_dequantize", "dense1_fwd_dequantize")]


def _prefixed(name):
    """MXNET_GRAPH's names for layers named q_conv0... (the test net's prefix)."""
    if name.startswith("data"):
        return name
    for head in ("quantized_", "requantize_"):
        if name.startswith(head):
            return head + "q_" + name[len(head):]
    return "q_" + name


def test_quantize_model_makes_mxnets_graph_and_runs_close_to_float32(tmp_path):
    mx.random.seed(3)
    net = _small_net()
    x = mx.nd.random.uniform(-1, 1, (4, 3, 12, 12))
    sym, args, auxs = _checkpoint(net, x, tmp_path)
    y = net(x).asnumpy()
    it = mx.io.NDArrayIter(x.asnumpy(), batch_size=4)
    for mode in ("none", "naive", "entropy"):
        qsym, qargs, qaux = q.quantize_model(sym, args, auxs, ctx=mx.cpu(), calib_mode=mode, calib_data=it,
                                             quantized_dtype="auto", quantize_mode="full", label_names=None)
        graph = json.loads(qsym.tojson())
        assert [(n["op"], n["name"]) for n in graph["nodes"]] == [(op, _prefixed(nm)) for op, nm in MXNET_GRAPH]
        calibrated = [n["name"] for n in graph["nodes"] if "min_calib_range" in n.get("attrs", {})]
        if mode == "none":
            assert calibrated == []
        else:
            assert calibrated == [_prefixed(n) for n in ("data_quantize", "requantize_conv0_fwd", "requantize_conv1_fwd",
                                                         "quantized_batchnorm0_fwd", "requantize_dense0_fwd",
                                                         "requantize_dense1_fwd")]
        assert qargs["q_conv0_weight_quantize"].dtype == np.int8
        assert qargs["q_conv0_weight_quantize_min"].shape == (1,)
        exe = qsym.bind(mx.cpu(), {"data": x, **qargs}, aux_states=qaux, grad_req="null")
        out = exe.forward()[0].asnumpy()
        assert _cosine(out, y) > 0.99, mode


def test_smart_mode_quantizes_supporting_layers_only_between_quantized_ones(tmp_path):
    data = mx.sym.var("data")
    pool = mx.sym.Pooling(data, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    conv = mx.sym.Convolution(pool, kernel=(3, 3), num_filter=4, name="conv0")
    act = mx.sym.Activation(conv, act_type="relu", name="relu0")
    fc = mx.sym.FullyConnected(act, num_hidden=3, name="fc0")
    args = {"conv0_weight": mx.nd.ones((4, 1, 3, 3)), "conv0_bias": mx.nd.zeros((4,)),
            "fc0_weight": mx.nd.random.uniform(-1, 1, (3, 64)), "fc0_bias": mx.nd.ones((3,))}
    ops = lambda s: [n["op"] for n in json.loads(s.tojson())["nodes"] if n["op"] != "null"]  # noqa: E731
    smart, _, _ = q.quantize_model(fc, args, {}, calib_mode="none", quantize_mode="smart")
    full, _, _ = q.quantize_model(fc, args, {}, calib_mode="none", quantize_mode="full")
    # smart: the pooling before the first quantized layer stays float32, the relu between two does not
    assert ops(smart)[:2] == ["Pooling", "_contrib_quantize_v2"]
    assert "_contrib_quantized_act" in ops(smart)
    assert ops(full)[:2] == ["_contrib_quantize_v2", "_contrib_quantized_pooling"]
    x = mx.nd.random.uniform(0, 1, (2, 1, 12, 12))
    want = fc.bind(mx.cpu(), {"data": x, **args}).forward()[0].asnumpy()
    for qsym in (smart, full):
        qargs = q._quantize_params(qsym, args, {})
        got = qsym.bind(mx.cpu(), {"data": x, **qargs}, grad_req="null").forward()[0].asnumpy()
        assert _cosine(got, want) > 0.999


def _demo_lenet():
    spec = importlib.util.spec_from_file_location("hybridnet_demo", os.path.join(ROOT, "examples", "demo.py"))
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    return demo.Net()


def _digits(n, rng):
    """Ten separable 1x28x28 classes: fixed random stroke templates plus noise (the demo's
    digits when scikit-learn is there would do; the tests' dependencies do not include it)."""
    templates = (np.random.RandomState(7).uniform(0, 1, (10, 1, 28, 28)) > 0.8).astype(np.float32)
    y = rng.randint(0, 10, n)
    x = templates[y] * rng.uniform(0.6, 1.0, (n, 1, 1, 1)) + rng.normal(0, 0.25, (n, 1, 28, 28))
    return np.clip(x, 0, 1).astype(np.float32), y.astype(np.float32)


def test_trained_demo_lenet_agrees_with_its_float32_self():
    mx.random.seed(0)
    rng = np.random.RandomState(0)
    (xtr, ytr), (xte, yte) = _digits(1200, rng), _digits(600, rng)
    net = _demo_lenet()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 2e-3})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    train = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(xtr, ytr), batch_size=64, shuffle=True)
    for _ in range(2):
        for data, label in train:
            with mx.autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
    x = mx.nd.array(xte)
    ref = net(x).asnumpy().argmax(1)
    assert (ref == yte).mean() > 0.9  # the float32 model learned the task
    calib = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(xtr[:256], ytr[:256]), batch_size=64)
    for mode in ("naive", "entropy"):
        qnet = q.quantize_net_v2(net, quantized_dtype="auto", calib_mode=mode, calib_data=calib,
                                 num_calib_batches=4)  # MXNet 2.0's spelling of num_calib_examples=256
        pred = qnet(x).asnumpy().argmax(1)
        agreement = (pred == ref).mean()
        assert agreement >= 0.99, (mode, agreement)
        for opts in ({}, {"static_alloc": True}):  # the fused int8 kernels (compiler/passes/int8.py)
            qnet.hybridize(**opts)
            fused = qnet(x).asnumpy().argmax(1)
            assert (fused == ref).mean() >= 0.99, (mode, opts, (fused == ref).mean())
            assert (fused == pred).mean() >= 0.99, (mode, opts, (fused == pred).mean())
    ops = {n["op"] for n in json.loads(qnet(mx.sym.var("data")).tojson())["nodes"]}
    assert {"_contrib_quantized_conv", "_contrib_quantized_fully_connected", "_contrib_quantized_pooling",
            "_contrib_requantize"} <= ops


def _zoo(name):
    """A model-zoo network with random weights and BatchNorm statistics of its own inputs (a
    fresh BatchNorm's unit statistics let the activations of a deep random net vanish)."""
    mx.random.seed(1)
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, (16, 3, 32, 32)))
    for _ in range(3):
        with mx.autograd.record():
            out = net(x)
        out.backward()
    return net


@pytest.mark.parametrize("name", ["resnet18_v1", "mobilenet1.0"])
def test_quantized_zoo_models_stay_close_to_float32(name):
    net = _zoo(name)
    rng = np.random.RandomState(5)
    calib = rng.uniform(-1, 1, (16, 3, 32, 32)).astype(np.float32)
    x = mx.nd.array(rng.uniform(-1, 1, (8, 3, 32, 32)))
    net.hybridize()
    want = net(x).asnumpy()
    for mode in ("naive", "entropy"):
        it = mx.io.NDArrayIter(calib, batch_size=8)
        qnet = q.quantize_net_v2(net, quantized_dtype="auto", calib_mode=mode, calib_data=it, num_calib_examples=16)
        got = qnet(x).asnumpy()
        assert _cosine(got, want) >= 0.99, (name, mode, _cosine(got, want))
    graph = json.loads(qnet(mx.sym.var("data")).tojson())
    ops = [n["op"] for n in graph["nodes"]]
    assert "BatchNorm" not in ops and "Convolution" not in ops  # folded, then every conv quantized
    if name == "resnet18_v1":
        assert "_contrib_quantized_elemwise_add" in ops


def test_quantized_net_hybridizes_exports_and_imports(tmp_path):
    net = _zoo("resnet18_v1")
    x = mx.nd.array(np.random.RandomState(4).uniform(-1, 1, (4, 3, 32, 32)))
    it = mx.io.NDArrayIter(x.asnumpy(), batch_size=4)
    qnet = q.quantize_net(net, calib_mode="naive", calib_data=it)
    eager = qnet(x).asnumpy()
    qnet.hybridize()
    hybrid = qnet(x).asnumpy()
    np.testing.assert_allclose(hybrid, eager, rtol=1e-5, atol=1e-6)
    qnet.export(str(tmp_path / "q"), epoch=0)
    loaded = mx.nd.load(str(tmp_path / "q-0000.params"))
    weights = [k for k in loaded if k.endswith("weight_quantize")]
    assert weights and all(loaded[k].dtype == np.int8 for k in weights)
    back = mx.gluon.SymbolBlock.imports(str(tmp_path / "q-symbol.json"), ["data"], str(tmp_path / "q-0000.params"))
    np.testing.assert_allclose(back(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    back.hybridize(static_alloc=True, static_shape=True)
    np.testing.assert_allclose(back(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)


def test_exclude_layers_match_and_operators(tmp_path):
    net = _small_net()
    x = mx.nd.random.uniform(-1, 1, (2, 3, 12, 12))
    net(x)
    shapes = [mx.io.DataDesc("data", (2, 3, 12, 12))]

    def ops_of(qnet):
        return {n["name"]: n["op"] for n in json.loads(qnet(mx.sym.var("data")).tojson())["nodes"]}
    names = ops_of(q.quantize_net_v2(net, data_shapes=shapes, exclude_layers=["q_conv1_fwd"]))
    assert names["q_conv1_fwd"] == "Convolution" and names["quantized_q_conv0_fwd"] == "_contrib_quantized_conv"
    # the float32 convolution reads the quantized pooling through a dequantize, and is quantized after
    assert names["q_pool0_fwd_dequantize"] == "_contrib_dequantize"
    assert names["q_conv1_fwd_0_quantize"] == "_contrib_quantize_v2"
    names = ops_of(q.quantize_net_v2(net, data_shapes=shapes, exclude_layers_match=["dense"]))
    assert names["q_dense0_fwd"] == "FullyConnected" and names["q_dense1_fwd"] == "FullyConnected"
    assert names["quantized_q_conv1_fwd"] == "_contrib_quantized_conv"
    names = ops_of(q.quantize_net_v2(net, data_shapes=shapes, exclude_operators=["Pooling"]))
    assert names["q_pool0_fwd"] == "Pooling"
    qnet = q.quantize_net_v2(net, data_shapes=shapes, exclude_layers=["q_conv1_fwd"])
    assert _cosine(qnet(x).asnumpy(), net(x).asnumpy()) > 0.99


def test_bad_arguments_raise_mxnets_errors(tmp_path):
    net = _small_net()
    x = mx.nd.random.uniform(-1, 1, (2, 3, 12, 12))
    sym, args, auxs = _checkpoint(net, x, tmp_path)
    shapes = [mx.io.DataDesc("data", (2, 3, 12, 12))]
    with pytest.raises(ValueError, match="unknown calibration mode foo received"):
        q.quantize_net_v2(net, data_shapes=shapes, calib_mode="foo")
    with pytest.raises(ValueError, match="unknown quantized_dtype int4 received, expected `int8`, `uint8` or `auto`"):
        q.quantize_net_v2(net, data_shapes=shapes, quantized_dtype="int4")
    with pytest.raises(ValueError, match="unknown quantized_dtype"):
        q.quantize_model(sym, args, auxs, quantized_dtype="float16", calib_mode="none")
    with pytest.raises(ValueError, match="calib_data must be provided when calib_mode=naive"):
        q.quantize_net_v2(net, data_shapes=shapes, calib_mode="naive")
    with pytest.raises(ValueError, match="calib_data must be of DataIter type"):
        q.quantize_model(sym, args, auxs, calib_mode="naive", calib_data=[x])
    with pytest.raises(ValueError, match="excluded_sym_names must be a list"):
        q.quantize_model(sym, args, auxs, excluded_sym_names="q_conv0_fwd", calib_mode="none")
    with pytest.raises(ValueError, match="data_shapes required"):
        q.quantize_net_v2(net)
    with pytest.raises(mx.MXNetError, match="unrecognized quantize mode"):
        q.quantize_model(sym, args, auxs, quantize_mode="clever", calib_mode="none")


def test_graph_api_with_a_filled_collector(tmp_path):
    net = _small_net()
    x = mx.nd.random.uniform(-1, 1, (4, 3, 12, 12))
    sym, args, auxs = _checkpoint(net, x, tmp_path)
    qsym, qargs, qaux, collector = q.quantize_graph(sym, args, auxs, calib_mode="naive")
    assert isinstance(collector, q._LayerOutputMinMaxCollector)
    internals = sym.get_internals()
    for name in collector.include_layer:
        out = internals[name].bind(mx.cpu(), {"data": x, **args}, aux_states=auxs).forward()[0]
        collector.collect(name, out)
    qsym, qargs, qaux = q.calib_graph(qsym, args, auxs, collector, calib_mode="naive")
    exe = qsym.bind(mx.cpu(), {"data": x, **qargs}, aux_states=qaux, grad_req="null")
    assert _cosine(exe.forward()[0].asnumpy(), net(x).asnumpy()) > 0.99


def _entropy_reference(hist, edges, nq, eps=0.0001):
    """A line-by-line port of MXNet 1.9.1's calibrate_entropy loop (calibrate.cc)."""
    z, best = len(hist) // 2, (np.inf, None)

    def smooth(p):
        nz = (p == 0).sum()
        e1 = eps * nz / (p.size - nz)
        return p + eps * (p == 0) - e1 * (p != 0)
    for i in range(nq // 2, z + 1):
        start, stop = z - i, z + i + 1
        s = np.zeros(stop - start)
        s[1:] = hist[start + 1:stop]
        p = s.copy()
        p[0], p[-1] = hist[:start + 1].sum(), hist[stop - 1:].sum()
        m = len(s) // nq
        q_ = np.zeros(len(s))
        for j in range(nq):
            a, b = j * m, (len(s) if j == nq - 1 else (j + 1) * m)
            norm = (s[a:b] != 0).sum()
            if norm:
                q_[a:b] = np.where(p[a:b] != 0, s[a:b].sum() / norm, 0)
        ps, qs = smooth(p), smooth(q_)
        ps, qs = ps / ps.sum(), qs / qs.sum()
        d = (ps * np.log(ps / qs)).sum()
        if d < best[0] - 1e-12:
            best = (d, edges[stop])
    return best[1], best[0]


def test_entropy_threshold_is_mxnets():
    rng = np.random.RandomState(0)
    for trial, nq in ((0, 255), (1, 255), (2, 511)):
        x = rng.randn(3000) * (1 + trial)
        x[:5] *= 8
        if nq == 511:
            x = np.abs(x)
        th = np.abs(x).max()
        hist, edges = np.histogram(x, bins=601, range=(-th, th))
        want_th, want_div = _entropy_reference(hist.astype(np.float64), edges, nq)
        got_th, got_div = q._entropy_thresholds(hist, edges, nq)
        assert got_th == pytest.approx(want_th) and got_div == pytest.approx(want_div, abs=1e-9)
    hist = (5, edges, 0.0, 1.0, 1.0)
    collector = q._LayerHistogramCollector(num_bins=11)
    collector.collect("a", mx.nd.array([0.1, 0.5, -0.2]))
    collector.collect("a", mx.nd.array([2.0, -1.0]))  # a wider range: the histogram grows
    h, e, lo, hi, th = collector.hist_dict["a"]
    assert h.sum() == 5 and lo == -1.0 and hi == 2.0 and th >= 2.0 and hist[0] == 5


def test_int8_kernels_pack_weights_once_per_version():
    w = mx.nd.array(np.random.RandomState(1).randint(-127, 128, (4, 3, 3, 3)), dtype="int8")._t
    x = mx.nd.array(np.random.RandomState(2).randint(-127, 128, (2, 3, 6, 6)), dtype="int8")._t
    a = int8_kernels.conv2d_accumulate(x, w, None, (1, 1), (0, 0), (1, 1), 1)
    packed = getattr(w, int8_kernels._PACK_ATTR, None)
    int8_kernels.conv2d_accumulate(x, w, None, (1, 1), (0, 0), (1, 1), 1)
    assert getattr(w, int8_kernels._PACK_ATTR, None) is packed  # reused, not packed again
    import torch
    ref = torch.nn.functional.conv2d(x.double(), w.double())
    assert torch.equal(a.double(), ref)
    w.mul_(-1)  # a write: the next call packs the new values
    b = int8_kernels.conv2d_accumulate(x, w, None, (1, 1), (0, 0), (1, 1), 1)
    assert torch.equal(b.double(), -ref)


@pytest.mark.skipif(not os.path.exists(MXNET_PY), reason="real MXNet 1.9.1 is not installed at /tmp/mxvenv")
def test_real_mxnet_reads_the_exported_quantized_model(tmp_path):
    net = _small_net()
    x = mx.nd.random.uniform(-1, 1, (2, 3, 12, 12))
    net(x)
    it = mx.io.NDArrayIter(x.asnumpy(), batch_size=2)
    qnet = q.quantize_net_v2(net, calib_mode="naive", calib_data=it)
    qnet.hybridize()
    qnet(x)
    qnet.export(str(tmp_path / "q"), epoch=0)
    script = textwrap.dedent(f"""
        import mxnet as mx
        sym = mx.sym.load({str(tmp_path / 'q-symbol.json')!r})
        params = mx.nd.load({str(tmp_path / 'q-0000.params')!r})
        arg_shapes, out_shapes, _ = sym.infer_shape(data=(2, 3, 12, 12))
        arg_types, out_types, _ = sym.infer_type(data='float32')
        names = sym.list_arguments()
        want = dict(zip(names, arg_shapes))
        for k, v in params.items():
            name = k.split(':', 1)[1]
            if name in want:
                assert tuple(v.shape) == tuple(want[name]), (name, v.shape, want[name])
        print(out_shapes[0], sorted(set(n['op'] for n in __import__('json').loads(sym.tojson())['nodes'])))
    """)
    res = subprocess.run([MXNET_PY, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "(2, 4)" in res.stdout and "_contrib_quantized_conv" in res.stdout
