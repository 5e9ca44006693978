"""PredictPlan against the default compiled function (``compile_graph(...)(..., _train=False)``)
on the seed LeNet and vision zoo models, in float32 and float64; parameter changes, Dropout,
output ownership and concurrent calls."""
import importlib.util
import os
import threading

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import gluon, sym
from hybridnet.compiler.codegen import compile_graph
from hybridnet.compiler.predict import PredictPlan
from hybridnet.ops.fused import onednn_conv_ready
from hybridnet.gluon import nn
from hybridnet.gluon.model_zoo import vision

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _seed_lenet():
    spec = importlib.util.spec_from_file_location("hybridnet_demo", os.path.join(_ROOT, "examples", "demo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Net()


def _randomize_batchnorm(net, seed):
    """Moving statistics and affine parameters away from their (identity) initial values, so a
    wrong fold shows in the numbers."""
    rng = np.random.RandomState(seed)
    for name, p in net.collect_params().items():
        t = p.data()._t.detach()
        shape = tuple(t.shape)
        if name.endswith(("running_var", "gamma")):
            t.copy_(torch.from_numpy(rng.uniform(0.5, 2.0, shape)))
        elif name.endswith(("running_mean", "beta")):
            t.copy_(torch.from_numpy(rng.randn(*shape) * 0.3))


class _Setup:
    """A net's graph, its PredictPlan and the default compiled function, with tensors."""

    def __init__(self, net, x):
        net(x)  # deferred shapes known
        out = net(sym.var("data"))
        self.graph = out._graph()
        params = net.collect_params()
        self.params = params
        self.data_nodes = [v for v in self.graph.variables() if v.name == "data"]
        self.param_nodes = [v for v in self.graph.variables() if v.name != "data"]
        self.default = compile_graph(self.graph, self.data_nodes + self.param_nodes)
        self.plan = PredictPlan(self.graph, self.data_nodes, self.param_nodes)
        self.x = x._t

    def tensors(self):
        return [self.x] + [self.params[v.name].data()._t for v in self.param_nodes]

    def reference(self):
        with torch.no_grad():
            return self.default(*self.tensors(), _train=False)

    def check(self, rtol):
        ref = self.reference()
        got = self.plan(self.tensors())
        assert len(got) == len(ref)
        for a, b in zip(got, ref):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert not a.requires_grad
            scale = float(b.abs().max())
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=rtol * scale)
        return got


def _param(s, local):
    """The parameter named ``<net prefix>_<local>`` (zoo prefixes count up per instance)."""
    found = [p for name, p in s.params.items() if name.split("_", 1)[1] == local]
    assert len(found) == 1, local
    return found[0]


def _setup(net, shape, dtype="float32", seed=0):
    net.initialize(mx.init.Xavier())
    if dtype != "float32":
        net.cast(dtype)
    net(mx.nd.zeros(shape, dtype=dtype))
    _randomize_batchnorm(net, seed)
    x = mx.nd.array(np.random.RandomState(seed + 1).randn(*shape), dtype=dtype)
    return _Setup(net, x)


# name, input size: the smallest each accepts, kept small so the test stays fast
_ZOO = [("resnet18_v1", 32), ("resnet18_v2", 32), ("mobilenet1.0", 32), ("mobilenetv2_0.25", 32),
        ("vgg11_bn", 32), ("alexnet", 64), ("squeezenet1.1", 224)]


@pytest.mark.parametrize("name,size", _ZOO)
def test_zoo_model_float32(name, size):
    s = _setup(vision.get_model(name), (2, 3, size, size))
    s.check(rtol=1e-5)


@pytest.mark.parametrize("name,size", [("densenet121", 224), ("inceptionv3", 299)])
def test_zoo_model_fixed_input_size(name, size):
    """The nets whose last pooling fixes the input size: one image each (about 2 s apiece)."""
    s = _setup(vision.get_model(name), (1, 3, size, size))
    s.check(rtol=1e-5)


@pytest.mark.parametrize("name", ["resnet18_v1", "mobilenetv2_0.25"])
def test_zoo_model_float64(name):
    s = _setup(vision.get_model(name), (2, 3, 32, 32), dtype="float64")
    s.check(rtol=1e-10)


def test_seed_lenet_float32_and_float64():
    for dtype, rtol in (("float32", 1e-5), ("float64", 1e-12)):
        s = _setup(_seed_lenet(), (4, 1, 28, 28), dtype=dtype)
        s.check(rtol=rtol)


def test_resnet18_v1_batchnorm_folded_away():
    s = _setup(vision.get_model("resnet18_v1"), (1, 3, 32, 32))
    assert s.plan.source == ""  # built at the first call
    prologue, main = s.plan.program_for(s.tensors())
    assert s.plan.source.startswith("def predict_main(") and "BatchNorm(" not in s.plan.source
    assert sum(n.op is not None and n.op.name == "BatchNorm" for n in s.graph.nodes) == 20
    main_ops = [n.op.name for n in main.graph.nodes if n.op is not None]
    # on CPU float32 each convolution becomes a oneDNN-fused one (passes.onednn): its relu or
    # residual join goes with it, and it reads its oneDNN weight besides the folded weight
    fused = main_ops.count("_fused_conv")
    assert "BatchNorm" not in main_ops and main_ops.count("Convolution") + fused == 20
    assert fused == (20 if onednn_conv_ready(s.x) else 0)
    # every convolution reads a folded weight and bias, computed once in the prologue
    per_conv = 3 if fused else 2
    assert len(main.graph.variables()) == 1 + per_conv * 20 + 2   # data, folded conv params, dense
    assert len(prologue.graph.outputs) == per_conv * 20


def test_parameter_changes_are_seen():
    s = _setup(vision.get_model("resnet18_v1"), (2, 3, 32, 32))
    first = s.check(rtol=1e-5)[0].clone()
    # in place, through the NDArray
    var = _param(s, "batchnorm0_running_var")
    var.data()[:] = var.data() * 4.0
    changed = s.check(rtol=1e-5)[0]
    assert not torch.allclose(changed, first)
    # replaced with set_data
    w = _param(s, "conv0_weight")
    w.set_data(w.data() * -1.0)
    s.check(rtol=1e-5)
    # the dense layer (a parameter main reads directly)
    d = _param(s, "dense0_bias")
    d.set_data(d.data() + 1.0)
    s.check(rtol=1e-5)


def test_prologue_runs_once_per_parameter_change(monkeypatch):
    s = _setup(vision.get_model("resnet18_v1"), (1, 3, 32, 32))
    prologue, _ = s.plan.program_for(s.tensors())
    calls = []
    original = prologue.fn
    monkeypatch.setattr(prologue, "fn", lambda *a: calls.append(1) or original(*a))
    for _ in range(3):
        s.plan(s.tensors())
    assert calls == []
    _param(s, "batchnorm0_gamma").data()[:] = 2.0
    for _ in range(3):
        s.plan(s.tensors())
    assert calls == [1]
    s.check(rtol=1e-5)


class _DropoutNet(gluon.HybridBlock):
    def __init__(self, mode):
        super().__init__()
        with self.name_scope():
            self.fc1 = nn.Dense(16)
            self.drop = nn.Dropout(0.5) if mode == "training" else None
            self.fc2 = nn.Dense(3)
        self.mode = mode

    def hybrid_forward(self, F, x):
        x = F.relu(self.fc1(x))
        x = self.drop(x) if self.drop is not None else F.Dropout(x, p=0.5, mode="always")
        return self.fc2(x)


def test_dropout_removed_in_predict_mode():
    s = _setup(_DropoutNet("training"), (4, 8))
    s.check(rtol=1e-6)
    _, main = s.plan.program_for(s.tensors())
    assert "Dropout" not in [n.op.name for n in main.graph.nodes if n.op is not None]


def test_always_on_dropout_kept():
    s = _setup(_DropoutNet("always"), (64, 8))
    _, main = s.plan.program_for(s.tensors())
    assert "Dropout" in [n.op.name for n in main.graph.nodes if n.op is not None]
    a, b = s.plan(s.tensors())[0], s.plan(s.tensors())[0]
    assert not torch.equal(a, b)  # still drops (p=0.5 on 64x16 units: equal is impossible in practice)


def test_outputs_are_owned_by_the_caller():
    """A parameter-only output (a folded constant) and an input passed through a removed
    identity both come back as fresh memory; writing into them changes nothing."""
    data, w = sym.var("data"), sym.var("w")
    g = sym.Group([sym.Dropout(data, p=0.5), sym.transpose(w), w])._graph()
    dn = [v for v in g.variables() if v.name == "data"]
    pn = [v for v in g.variables() if v.name == "w"]
    plan = PredictPlan(g, dn, pn)
    x, wt = torch.randn(2, 3), torch.randn(3, 4)
    outs = plan([x, wt])
    for o, src in zip(outs, (x, wt, wt)):
        assert o.untyped_storage().data_ptr() != src.untyped_storage().data_ptr()
    outs[1].zero_()
    outs[0].zero_()
    again = plan([x, wt])
    torch.testing.assert_close(again[0], x)
    torch.testing.assert_close(again[1], wt.t())
    torch.testing.assert_close(again[2], wt)


def test_plan_requires_every_variable():
    data, w = sym.var("data"), sym.var("w")
    g = sym.FullyConnected(data, w, num_hidden=2, no_bias=True)._graph()
    with pytest.raises(ValueError, match="w"):
        PredictPlan(g, [v for v in g.variables() if v.name == "data"], [])


def test_concurrent_calls_agree():
    s = _setup(_seed_lenet(), (8, 1, 28, 28))
    ref = s.reference()[0]
    errors = []

    def worker():
        try:
            for _ in range(5):
                torch.testing.assert_close(s.plan(s.tensors())[0], ref, rtol=1e-5, atol=1e-5)
        except Exception as e:  # noqa: BLE001 - collected for the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _conv_bn_dense():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, in_channels=3), nn.BatchNorm(in_channels=4), nn.Dense(5, in_units=4 * 6 * 6))
    return net


def _ops_of(compiled):
    return [n.op.name for n in compiled.graph.nodes if n.op is not None]


def test_float16_network_keeps_float32_batchnorm_unfolded():
    """Gluon keeps BatchNorm parameters float32 in a float16 network: folding them into the
    float16 convolution would change its dtype, so the plan leaves that BatchNorm alone."""
    s = _setup(_conv_bn_dense(), (2, 3, 8, 8), dtype="float16")
    assert s.params[[k for k in s.params.keys() if k.endswith("gamma")][0]].data().dtype == np.float32
    s.check(rtol=1e-3)
    _, main = s.plan.program_for(s.tensors())
    assert "BatchNorm" in _ops_of(main)


def test_parameter_dtype_change_rebuilds_the_plan():
    net = _conv_bn_dense()
    s = _setup(net, (2, 3, 8, 8))
    s.check(rtol=1e-5)
    assert "BatchNorm" not in _ops_of(s.plan.program_for(s.tensors())[1])
    net.cast("float64")
    s.x = s.x.double()
    s.check(rtol=1e-12)
    prologue, main = s.plan.program_for(s.tensors())
    assert "BatchNorm" not in _ops_of(main)
    assert all(t.dtype == torch.float64 for t in prologue(*[s.tensors()[1:][i] for i in
                                                            s.plan._folded.program.prologue_pos]))
    net.cast("float16")  # BatchNorm stays float32: no longer folded
    s.x = s.x.half()
    s.check(rtol=1e-3)
    assert "BatchNorm" in _ops_of(s.plan.program_for(s.tensors())[1])


def test_graph_without_foldable_parameters_checks_no_snapshot():
    """The seed LeNet in float64 has nothing parameter-only to precompute (no BatchNorm; the
    oneDNN weight reorders are for float32): no prologue, and the plan still sees parameter
    changes (main reads parameters on every call)."""
    s = _setup(_seed_lenet(), (2, 1, 28, 28), dtype="float64")
    prologue, _ = s.plan.program_for(s.tensors())
    assert prologue is None
    s.check(rtol=1e-10)
    fc3 = [p for k, p in s.params.items() if k.endswith("fc3_weight")][0]
    fc3.data()[:] = 0.5
    s.check(rtol=1e-10)


# -- memory: prologue values a call of the plan's signature never reads are not kept -----------
def _held_bytes(plan):
    folded = plan._folded
    values = folded.slim if folded.slim is not None else folded.values
    return sum(t.untyped_storage().nbytes() for t in values
               if isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.is_meta)


@pytest.mark.skipif(not onednn_conv_ready(torch.zeros(1)), reason="needs oneDNN's fused convolutions")
def test_unread_folded_weights_are_dropped_after_the_first_call_and_other_sizes_still_agree():
    s = _setup(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    s.check(1e-4)  # the first call: watched
    full = sum(t.untyped_storage().nbytes() for t in s.plan.prologue_values(s.tensors())
               if t.layout == torch.strided)
    s.plan.release()
    s.check(1e-4)
    assert s.plan._folded.values is None and s.plan._folded.slim is not None
    assert _held_bytes(s.plan) < full / 2  # the plain folded weights of the fused convolutions
    for _ in range(2):
        s.check(1e-4)  # served from the slim values
    other = mx.nd.array(np.random.RandomState(3).randn(3, 3, 40, 40))
    s.x = other._t
    s.check(1e-4)  # another size reads the plain weights: computed again, same results


def test_a_placeholder_read_after_all_reruns_on_the_full_values_and_stops_slimming(monkeypatch):
    from hybridnet.compiler import predict
    monkeypatch.setattr(predict, "_SLIM_MIN_BYTES", 0)
    s = _setup(_conv_bn_dense(), (2, 3, 8, 8))
    s.check(1e-4)
    values = s.plan.prologue_values(s.tensors())
    folded = s.plan._folded
    # pretend the watched call read nothing: every dense value (the folded bias too) becomes a placeholder
    s.plan._slim(folded, values, set(), predict._data_key([s.x]), ())
    assert s.plan._folded.slim is not None and any(t.is_meta for t in s.plan._folded.slim)
    s.check(1e-4)  # a placeholder is read: the call reruns on the full values
    assert s.plan._slimming is False and s.plan._folded.slim is None
    s.check(1e-4)


@pytest.mark.skipif(not onednn_conv_ready(torch.zeros(1)), reason="needs oneDNN's fused convolutions")
def test_full_values_for_another_size_share_the_read_ones_with_the_slim_set():
    s = _setup(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    s.check(1e-4)
    planned = s.x
    s.x = torch.rand(3, 3, 40, 40)
    s.check(1e-4)  # another size: full values computed again
    folded = s.plan._folded
    assert folded.values is not None and folded.slim is not None
    assert all(a is b for a, b in zip(folded.slim, folded.values) if not a.is_meta)
    s.x = planned
    s.check(1e-4)
