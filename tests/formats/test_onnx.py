"""ONNX export (hybridnet.onnx / hybridnet.formats.onnx): every exported model passes
onnx.checker and, run in onnxruntime, reproduces hybridnet's outputs (rtol 1e-4, atol 1e-5).

onnx and onnxruntime are optional: the tests that need them skip cleanly without them.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon, nd, sym
from hybridnet import onnx as mxonnx
from hybridnet.base import MXNetError
from hybridnet.formats import onnx as fo
from hybridnet.gluon import nn
from hybridnet.ir.graph import Graph, Node
from hybridnet.ops import registry

RTOL, ATOL = 1e-4, 1e-5
from fixture_paths import MXNET as FIXTURES  # noqa: E402
from fixture_paths import load_case as _case  # noqa: E402
CASES = sorted(os.listdir(FIXTURES)) if os.path.isdir(FIXTURES) else []


@pytest.fixture(scope="module")
def rt():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    return onnx, ort


def _session(rt, model_or_path):
    onnx, ort = rt
    so = ort.SessionOptions()
    so.log_severity_level = 3
    src = model_or_path.SerializeToString() if hasattr(model_or_path, "SerializeToString") else model_or_path
    return ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


def _run(rt, path, xs):
    onnx, _ = rt
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    sess = _session(rt, path)
    names = [i.name for i in sess.get_inputs()]
    assert len(names) == len(xs), names
    return sess.run(None, {n: np.asarray(x) for n, x in zip(names, xs)})


def _outs(y):
    return [o.asnumpy() for o in (y if isinstance(y, (list, tuple)) else [y])]


def _check_block(rt, tmp_path, net, xs, dynamic_xs=None, **kw):
    """Export a hybridized, already-called block; compare onnxruntime with hybridnet."""
    ref = _outs(net(*[nd.array(x) for x in xs]))
    path = mxonnx.export_model(net, None, onnx_file_path=str(tmp_path / "model.onnx"),
                               dynamic=dynamic_xs is not None, **kw)
    got = _run(rt, path, xs)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=RTOL, atol=ATOL)
    if dynamic_xs is not None:  # the same file at another batch size
        ref2 = _outs(net(*[nd.array(x) for x in dynamic_xs]))
        for g, r in zip(_run(rt, path, dynamic_xs), ref2):
            np.testing.assert_allclose(g, r, rtol=RTOL, atol=ATOL)
    return path


def _randomize_running_stats(net, seed=0):
    r = np.random.RandomState(seed)
    for name, p in net.collect_params().items():
        if name.endswith("running_mean"):
            p.set_data(nd.array(r.uniform(-0.5, 0.5, p.shape)))
        elif name.endswith("running_var"):
            p.set_data(nd.array(r.uniform(0.5, 2.0, p.shape)))
        elif name.endswith("gamma") or name.endswith("beta"):
            p.set_data(nd.array(r.uniform(0.5, 1.5, p.shape)))


# ---- the seed programs' networks ------------------------------------------------------------------
class SeedNet(gluon.HybridBlock):
    """The hybridize tutorial's LeNet: conv/pool/dense, reshape((0, -1)), a manual fc3 weight."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.conv1 = nn.Conv2D(6, kernel_size=5)
            self.pool1 = nn.MaxPool2D(pool_size=2)
            self.conv2 = nn.Conv2D(16, kernel_size=5)
            self.pool2 = nn.MaxPool2D(pool_size=2)
            self.fc1 = nn.Dense(120)
            self.fc2 = nn.Dense(84)
            self.fc3_weight = self.params.get("fc3_weight", shape=(10, 84))

    def hybrid_forward(self, F, x, fc3_weight):
        x = self.pool1(F.relu(self.conv1(x)))
        x = self.pool2(F.relu(self.conv2(x)))
        x = x.reshape((0, -1))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.dot(x, fc3_weight, transpose_b=True)


def test_seed_lenet_with_dynamic_batch(rt, tmp_path):
    net = SeedNet()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    r = np.random.RandomState(0)
    x = r.normal(size=(16, 1, 28, 28)).astype(np.float32)
    net(nd.array(x))
    x5 = r.normal(size=(5, 1, 28, 28)).astype(np.float32)
    path = _check_block(rt, tmp_path, net, [x], dynamic_xs=[x5])
    onnx, _ = rt
    dim0 = onnx.load(path).graph.input[0].type.tensor_type.shape.dim[0]
    assert dim0.dim_param == "batch" and not dim0.dim_value


def test_d2l_mlp_and_hybridnet(rt, tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    net.initialize()
    net.hybridize()
    x = np.random.RandomState(1).normal(size=(1, 512)).astype(np.float32)
    net(nd.array(x))
    _check_block(rt, tmp_path, net, [x])

    class HybridNet(nn.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = nn.Dense(10)
            self.output = nn.Dense(2)

        def hybrid_forward(self, F, x):
            return self.output(F.relu(self.hidden(x)))

    net2 = HybridNet()
    net2.initialize()
    net2.hybridize()
    x2 = np.random.RandomState(2).normal(size=(3, 4)).astype(np.float32)
    net2(nd.array(x2))
    _check_block(rt, tmp_path, net2, [x2], dynamic_xs=[x2[:1]])


def test_conv_bn_pool_net(rt, tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, strides=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(3, 2, 1),
            nn.Conv2D(8, 3, padding=2, dilation=2, groups=2, use_bias=False), nn.BatchNorm(scale=False),
            nn.LeakyReLU(0.1),
            nn.AvgPool2D(3, 2, 1, ceil_mode=True),                      # 'full', counts the padding
            nn.AvgPool2D(2, 1, 1, ceil_mode=True, count_include_pad=False),
            nn.Conv2DTranspose(4, 3, strides=2, padding=1, output_padding=1),
            nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dropout(0.5), nn.Dense(5))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    r = np.random.RandomState(3)
    x = r.normal(size=(2, 3, 13, 11)).astype(np.float32)
    net(nd.array(x))
    _randomize_running_stats(net)
    _check_block(rt, tmp_path, net, [x], dynamic_xs=[r.normal(size=(4, 3, 13, 11)).astype(np.float32)])


def test_conv1d_conv3d_and_norms(rt, tmp_path):
    class Net(nn.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.c1 = nn.Conv1D(4, 3, padding=1)
                self.ln = nn.LayerNorm()
                self.inorm = nn.InstanceNorm()
                self.c3 = nn.Conv3D(2, 2)
                self.pool3 = nn.MaxPool3D(2, 1)

        def hybrid_forward(self, F, x, v):
            a = self.inorm(self.ln(self.c1(x)))
            b = self.pool3(self.c3(v))
            return F.sum(a, axis=(1, 2)), F.mean(b, axis=0, exclude=True)

    net = Net()
    net.initialize()
    net.hybridize()
    r = np.random.RandomState(4)
    x, v = r.normal(size=(2, 3, 9)).astype(np.float32), r.normal(size=(2, 1, 4, 5, 4)).astype(np.float32)
    net(nd.array(x), nd.array(v))
    _check_block(rt, tmp_path, net, [x, v])
    _check_block(rt, tmp_path, net, [x, v], opset_version=18)  # LayerNormalization, axes as inputs


def test_embedding_net(rt, tmp_path):
    class Net(nn.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.emb = nn.Embedding(20, 8)
                self.proj = nn.Dense(6, flatten=False, activation="tanh")
                self.out = nn.Dense(3)

        def hybrid_forward(self, F, x):
            h = self.proj(self.emb(x))          # (N, T, 6)
            return self.out(F.mean(h, axis=1))

    net = Net()
    net.initialize()
    net.hybridize()
    r = np.random.RandomState(5)
    x = r.randint(0, 20, size=(4, 7)).astype(np.float32)
    x[0, 0] = 25.0  # out of range: MXNet clips indices
    net(nd.array(x))
    _check_block(rt, tmp_path, net, [x], dynamic_xs=[x[:2]])


class BroadcastNet(nn.HybridBlock):
    """broadcast / scalar / reshape / transpose / concat / split / slice / softmax / dot ops."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.scale = self.params.get("scale", shape=(1, 4, 1), init=mx.init.Uniform(1.0))

    def hybrid_forward(self, F, x, scale):
        y = F.broadcast_mul(x, scale) + 1.5                      # (N, 4, 6)
        y = (y * 2 - 0.5) / 3
        z = F.transpose(y, axes=(0, 2, 1))                       # (N, 6, 4)
        z = F.reshape(z, shape=(0, -1, 2))                       # (N, 12, 2)
        c = F.concat(z, F.relu(z), F.expand_dims(F.sum(z, axis=2), axis=2), dim=2)   # (N, 12, 5)
        a, b = F.split(c, num_outputs=2, axis=1)                 # (N, 6, 5) each
        s = F.softmax(F.broadcast_add(a, F.slice_axis(b, axis=2, begin=0, end=1)), axis=-1)
        t = F.log_softmax(F.slice(b, begin=(None, 1), end=(None, None), step=(None, 2)), axis=1)
        u = F.batch_dot(s, F.transpose(s, axes=(0, 2, 1)))      # (N, 6, 6)
        v = F.reshape(u, shape=(-3, 0))                          # (N*6, 6)
        w = F.clip(F.square(v), 0.0, 0.2) - F.exp(-F.abs(v)) + F.sqrt(F.abs(v) + 1)
        m = F.maximum(F.minimum(w, 0.3), -0.3) + (1 - w) + 2 / (F.abs(w) + 1) + w ** 2
        return F.reshape(m, shape=(-4, -1, 6, -2)), F.max(t, axis=(1, 2), keepdims=True), \
            F.where(w > 0.1, w, F.zeros_like(w))


def test_broadcast_scalar_reshape_net(rt, tmp_path):
    net = BroadcastNet()
    net.initialize()
    net.hybridize()
    r = np.random.RandomState(6)
    x = r.normal(size=(2, 4, 6)).astype(np.float32)
    net(nd.array(x))
    _check_block(rt, tmp_path, net, [x], dynamic_xs=[r.normal(size=(3, 4, 6)).astype(np.float32)])


# ---- MXNet's own files ----------------------------------------------------------------------------
@pytest.mark.skipif(not CASES, reason="shared/fixtures/mxnet not found")
@pytest.mark.parametrize("name", CASES)
def test_mxnet_fixture_exports(rt, tmp_path, name):
    d, case, xs, ys = _case(name)
    sym_file, params_file = os.path.join(d, "model-symbol.json"), os.path.join(d, "model-0000.params")
    # MXNet's call: file paths in, data shapes/types given
    path = mxonnx.export_model(sym_file, params_file, [x.shape for x in xs], [x.dtype for x in xs],
                               str(tmp_path / f"{name}.onnx"))
    got = _run(rt, path, xs)
    tol = case.get("suggested_tolerance", {})
    for g, y in zip(got, ys):
        np.testing.assert_allclose(g, y, rtol=tol.get("rtol", RTOL), atol=tol.get("atol", ATOL))
    # and through gluon.SymbolBlock.imports, against hybridnet
    net = gluon.SymbolBlock.imports(sym_file, case["input_names"], params_file)
    net.hybridize()
    net(*[nd.array(x) for x in xs])
    _check_block(rt, tmp_path, net, xs)


@pytest.mark.skipif("convbn" not in CASES, reason="convbn fixture not found")
def test_params_forms_are_equivalent(rt, tmp_path):
    d, case, xs, ys = _case("convbn")
    sym_file, params_file = os.path.join(d, "model-symbol.json"), os.path.join(d, "model-0000.params")
    loaded = nd.load(params_file)
    arg = {k[4:]: v for k, v in loaded.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in loaded.items() if k.startswith("aux:")}
    s = sym.load(sym_file)
    outs = []
    for i, params in enumerate([params_file, loaded, [arg, aux], {**arg, **aux}]):
        path = mxonnx.export_model(s, params, [xs[0].shape], np.float32, str(tmp_path / f"m{i}.onnx"))
        outs.append(_run(rt, path, xs)[0])
    for o in outs:
        np.testing.assert_allclose(o, ys[0], rtol=RTOL, atol=ATOL)
    with pytest.raises(MXNetError, match="in_shapes"):
        mxonnx.export_model(s, arg, [xs[0].shape], np.float32, str(tmp_path / "bad.onnx"))  # aux missing


# ---- model zoo --------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["mobilenet0_25", "resnet18_v1"])
def test_model_zoo_32x32(rt, tmp_path, model):
    from hybridnet.gluon.model_zoo import vision
    mx.random.seed(0)
    net = getattr(vision, model)(classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    r = np.random.RandomState(7)
    x = r.uniform(-1, 1, size=(2, 3, 32, 32)).astype(np.float32)
    net(nd.array(x))
    _randomize_running_stats(net, 1)
    _check_block(rt, tmp_path, net, [x], dynamic_xs=[x[:1]])


# ---- graphs built from Symbols ------------------------------------------------------------------
def test_symbol_export_drops_loss_label_and_names_outputs(rt, tmp_path):
    data = sym.var("data")
    fc = sym.FullyConnected(data, num_hidden=3, name="fc")
    out = sym.SoftmaxOutput(fc, name="softmax")
    r = np.random.RandomState(8)
    params = {"fc_weight": nd.array(r.normal(size=(3, 4))), "fc_bias": nd.array(r.normal(size=(3,)))}
    path = mxonnx.export_model(out, params, [(2, 4)], np.float32, str(tmp_path / "m.onnx"))
    x = r.normal(size=(2, 4)).astype(np.float32)
    (got,) = _run(rt, path, [x])
    logits = x @ params["fc_weight"].asnumpy().T + params["fc_bias"].asnumpy()
    e = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=RTOL, atol=ATOL)
    onnx, _ = rt
    g = onnx.load(path).graph
    assert [i.name for i in g.input] == ["data"]
    assert [o.name for o in g.output] == ["softmax_output"]


def test_graph_output_that_is_an_input_and_repeated_outputs(rt, tmp_path):
    x = sym.var("x")
    y = sym.relu(x)
    g = sym.Group([x, y, y])
    path = mxonnx.export_model(g, {}, [(2, 3)], np.float32, str(tmp_path / "m.onnx"))
    v = np.random.RandomState(9).normal(size=(2, 3)).astype(np.float32)
    a, b, c = _run(rt, path, [v])
    np.testing.assert_array_equal(a, v)
    np.testing.assert_array_equal(b, np.maximum(v, 0))
    np.testing.assert_array_equal(c, np.maximum(v, 0))


def test_unsupported_operator_is_named(rt, tmp_path):
    x = sym.var("data")
    y = sym.relu(sym.sort(x, name="sorter"))
    with pytest.raises(MXNetError, match=r"sort.*'sorter'"):
        mxonnx.export_model(y, {}, [(2, 3)], np.float32, str(tmp_path / "m.onnx"))
    assert not (tmp_path / "m.onnx").exists()
    z = sym.Dropout(x, p=0.5, mode="always", name="drop")
    with pytest.raises(fo.OnnxUnsupported, match=r"'drop'.*Dropout.*always"):
        mxonnx.export_model(z, {}, [(2, 3)], np.float32, str(tmp_path / "m.onnx"))


def test_unknown_input_shape_and_bad_arguments(rt, tmp_path):
    x = sym.var("data")
    y = sym.FullyConnected(x, num_hidden=2, name="fc")
    with pytest.raises(MXNetError, match="data inputs"):
        mxonnx.export_model(y, {}, [(2, 3)], np.float32, str(tmp_path / "m.onnx"))
    with pytest.raises(MXNetError, match="opset"):
        mxonnx.export_model(sym.relu(x), {}, [(2, 3)], np.float32, str(tmp_path / "m.onnx"),
                            opset_version=9)
    with pytest.raises(MXNetError, match="hybridize"):
        mxonnx.export_model(nn.Dense(2), None, [(1, 2)], np.float32, str(tmp_path / "m.onnx"))


def test_options_large_model_shape_inference_and_deprecated_names(rt, tmp_path, capsys):
    net = nn.HybridSequential()
    net.add(nn.Dense(400, activation="sigmoid"), nn.Dense(2))
    net.initialize()
    net.hybridize()
    x = np.random.RandomState(10).normal(size=(3, 5)).astype(np.float32)
    ref = net(nd.array(x)).asnumpy()
    path = str(tmp_path / "big.onnx")
    mxonnx.export_model(net, None, input_shape=[(3, 5)], input_type=np.float32, onnx_file_path=path,
                        large_model=True, run_shape_inference=True, verbose=True)
    assert os.path.exists(path + ".data")
    assert "Gemm" in capsys.readouterr().out
    np.testing.assert_allclose(_run(rt, path, [x])[0], ref, rtol=RTOL, atol=ATOL)


# ---- the registry hook and the op table -----------------------------------------------------------
def test_operator_support_list_and_opdef_hook(rt, tmp_path):
    names = mxonnx.get_operator_support()
    for n in ("FullyConnected", "Convolution", "concat", "Concat", "split", "_plus_scalar", "Embedding"):
        assert n in names
    for op in fo.RULES:  # the table is keyed by the registry's OpDefs
        assert registry.get(op.name) is op

    def kernel(data, *, k: float = 2.0):
        return data * k

    def lower(ctx):
        c = ctx.scalar(ctx.attrs["k"], ctx.in_dtype(0))
        return [ctx.add("Mul", [ctx.ins[0], c], ctx.out())]

    op = registry.OpDef("_test_scale_onnx", kernel, onnx=lower)
    assert fo.lowering_for(op) is lower
    v = Node(None, "x")
    g = Graph([(Node(op, "scale0", {"k": 3.0}, [(v, 0)]), 0)])
    model = mxonnx.graph_to_model(g, {}, {"x": (2, 2)})
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_allclose(_session(rt, model).run(None, {"x": a})[0], a * 3)


def _op_samples():
    out = []
    for op in registry.all_ops():
        if fo.lowering_for(op) is None or op.samples is None:
            continue
        out.append(op.name)
    return out


@pytest.mark.parametrize("opname", _op_samples())
def test_registry_samples_run_in_onnxruntime(rt, opname):
    """Each lowered operator's registry samples (float32), one-node graphs, vs the kernel."""
    import torch
    op = registry.get(opname)
    done = 0
    for smp in op.samples():
        if smp.train:
            continue
        ins = [np.asarray(a) for a in smp.inputs]
        ins = [a.astype(np.float32) if a.dtype == np.float64 else a for a in ins]
        vs = [Node(None, f"in{i}") for i in range(len(ins))]
        node = Node(op, "node", dict(smp.attrs), [(v, 0) for v in vs])
        g = Graph([(node, k) for k in range(node.num_outputs())])
        try:
            model = mxonnx.graph_to_model(g, {}, {f"in{i}": a.shape for i, a in enumerate(ins)},
                                          {f"in{i}": a.dtype for i, a in enumerate(ins)})
        except fo.OnnxUnsupported:
            continue
        rt[0].checker.check_model(model)
        sess = _session(rt, model)
        got = sess.run(None, {i.name: ins[int(i.name[2:])] for i in sess.get_inputs()})
        attrs = dict(smp.attrs)
        if op.train_aware:
            attrs["is_train"] = False
        with torch.no_grad():
            ref = op.kernel(*[torch.from_numpy(a.copy()) for a in ins], **attrs)
        refs = [ref] if isinstance(ref, torch.Tensor) else list(ref)
        assert len(got) == len(refs)
        for o, r in zip(got, refs):
            r = r.numpy()
            assert o.shape == r.shape and o.dtype == r.dtype, (smp.attrs, o.shape, r.shape, o.dtype, r.dtype)
            np.testing.assert_allclose(o, r, rtol=RTOL, atol=ATOL, err_msg=str(smp.attrs))
        done += 1
    assert done, f"no sample of {opname} could be exported"


@pytest.mark.parametrize("attrs", [
    dict(kernel=(2, 2), stride=(2, 2), pad=(2, 2), pool_type="max"),            # pad >= kernel
    dict(kernel=(2, 2), stride=(3, 3), pool_type="max", pooling_convention="full"),
    dict(kernel=(2, 2), stride=(2, 2), pad=(2, 2), pool_type="avg"),
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="sum", pooling_convention="full"),
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", pooling_convention="full",
         count_include_pad=False),
    dict(kernel=(3, 2), stride=(2, 1), pool_type="max", layout="NHWC"),
])
def test_pooling_edge_cases(rt, attrs):
    import torch
    op = registry.get("Pooling")
    x = np.random.RandomState(11).randn(2, 5, 5, 3 if attrs.get("layout") else 5).astype(np.float32)
    v = Node(None, "x")
    model = mxonnx.graph_to_model(Graph([(Node(op, "pool", attrs, [(v, 0)]), 0)]), {}, {"x": x.shape})
    for _ in range(2):  # onnxruntime's graph rewrites must not break it
        got = _session(rt, model).run(None, {"x": x})[0]
        ref = op.kernel(torch.from_numpy(x), **attrs).numpy()
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


# ---- without onnx ---------------------------------------------------------------------------------
def test_hybridnet_imports_without_onnx(tmp_path):
    code = ("import sys; sys.modules['onnx'] = None; sys.modules['onnxruntime'] = None\n"
            "import hybridnet as mx, hybridnet.onnx, hybridnet.formats.onnx\n"
            "from hybridnet.gluon import nn\n"
            "assert 'FullyConnected' in hybridnet.onnx.get_operator_support()\n"
            "net = nn.Dense(2); net.initialize(); net.hybridize(); net(mx.nd.ones((1, 3)))\n"
            "try:\n"
            f"    hybridnet.onnx.export_model(net, None, onnx_file_path={str(tmp_path / 'x.onnx')!r})\n"
            "except ImportError as e:\n"
            "    assert 'pip install onnx' in str(e), e\n"
            "    print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
