"""passes.onednn: convolutions fused with their activation / residual join on oneDNN, weights
reordered once, matrix-product forms for tiny outputs. Each case runs the predict plan (which
applies the pass on CPU float32) against the default compiled function, and checks what the
pass left in the graph, so a pattern that stops matching fails here."""
from __future__ import annotations

import collections

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import gluon, sym
from hybridnet.compiler.codegen import compile_graph
from hybridnet.compiler.passes.onednn import fuse_onednn
from hybridnet.compiler.predict import PredictPlan
from hybridnet.gluon import nn
from hybridnet.gluon.model_zoo import vision
from hybridnet.ops import fused

pytestmark = pytest.mark.skipif(not fused.onednn_conv_ready(torch.zeros(1)),
                                reason="this torch build has no oneDNN fused convolutions")


class _Plan:
    """A net's graph, its predict plan and its default function on the net's parameters."""

    def __init__(self, net: gluon.HybridBlock, shape: tuple, seed: int = 0):
        net.initialize(mx.init.Xavier())
        net(mx.nd.zeros(shape))
        rng = np.random.RandomState(seed)
        for name, p in net.collect_params().items():  # BatchNorm away from identity
            t = p.data()._t.detach()
            if name.endswith(("running_var", "gamma")):
                t.copy_(torch.from_numpy(rng.uniform(0.5, 2.0, tuple(t.shape))))
            elif name.endswith(("running_mean", "beta")):
                t.copy_(torch.from_numpy(rng.randn(*t.shape) * 0.3))
        self.params = net.collect_params()
        out = net(sym.var("data"))
        self.graph = (sym.Group(list(out)) if isinstance(out, tuple) else out)._graph()
        self.data = [v for v in self.graph.variables() if v.name == "data"]
        self.param_nodes = [v for v in self.graph.variables() if v.name != "data"]
        self.default = compile_graph(self.graph, self.data + self.param_nodes)
        self.plan = PredictPlan(self.graph, self.data, self.param_nodes)
        self.rng = rng

    def tensors(self, x: torch.Tensor) -> list:
        return [x] + [self.params[v.name].data()._t for v in self.param_nodes]

    def check(self, shape: tuple, rtol: float = 1e-4, atol: float = 1e-5) -> tuple:
        x = torch.from_numpy(self.rng.randn(*shape).astype(np.float32))
        got = self.plan(self.tensors(x))
        with torch.no_grad():
            want = self.default.fn(*self.tensors(x), _train=False)
        for g, w in zip(got, want):
            assert g.is_contiguous(), "outputs leave the channels-last region row-major"
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol)
        return got

    def main_ops(self, shape: tuple) -> collections.Counter:
        x = torch.zeros(shape)
        _, main = self.plan.program_for(self.tensors(x))
        return collections.Counter(n.op.name for n in main.graph.nodes if n.op is not None)

    def fused_attrs(self, shape: tuple) -> list:
        _, main = self.plan.program_for(self.tensors(torch.zeros(shape)))
        return [dict(n.attrs, inputs=len(n.inputs)) for n in main.graph.nodes
                if n.op is not None and n.op.name == "_fused_conv"]


def test_resnet18_v1_every_convolution_fused_with_its_relu_or_residual_join():
    p = _Plan(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    p.check((2, 3, 32, 32))
    ops = p.main_ops((2, 3, 32, 32))
    assert ops["_fused_conv"] == 20 and ops["Convolution"] == 0
    assert ops["Activation"] == 0 and ops["elemwise_add"] + ops["_plus"] == 0
    assert ops["_contiguous"] == 1  # the one output
    attrs = p.fused_attrs((2, 3, 32, 32))
    # 8 residual joins (one per basic block) carry the shortcut as a fifth input
    assert sum(a["inputs"] == 5 for a in attrs) == 8
    assert sum(a["act"] == "relu" for a in attrs) == 17  # 9 conv+relu, 8 join+relu; 3 shortcuts bare


@pytest.mark.parametrize("name,size", [("resnet18_v2", 32), ("mobilenet1.0", 32), ("mobilenetv2_0.25", 32),
                                       ("resnet50_v1", 32), ("vgg11_bn", 32), ("alexnet", 64)])
def test_zoo_models_agree_with_the_default_function(name, size):
    p = _Plan(vision.get_model(name, classes=10), (2, 3, size, size))
    p.check((2, 3, size, size))
    ops = p.main_ops((2, 3, size, size))
    assert ops["Convolution"] == 0 and ops["_fused_conv"] > 0


def test_mobilenetv2_relu6_becomes_a_hardtanh_epilogue():
    p = _Plan(vision.get_model("mobilenetv2_0.25", classes=10), (2, 3, 32, 32))
    acts = collections.Counter(a["act"] for a in p.fused_attrs((2, 3, 32, 32)))
    assert acts["hardtanh"] > 10 and p.main_ops((2, 3, 32, 32))["clip"] == 0


class _Heads(gluon.HybridBlock):
    """One convolution per activation kind, a residual join without relu, a convolution read twice
    and one that is a graph output."""

    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.convs = [nn.Conv2D(4, 3, padding=1, in_channels=4) for _ in range(8)]
            for i, c in enumerate(self.convs):
                self.register_child(c, f"c{i}")
            self.leaky = nn.LeakyReLU(0.1)

    def hybrid_forward(self, F, x):
        c = self.convs
        a = F.sigmoid(c[0](x))
        b = F.Activation(c[1](a), act_type="tanh")
        d = F.clip(c[2](b), -0.5, 0.25)
        e = self.leaky(c[3](d))
        f = c[4](e) + e                   # join without relu
        g = c[5](f)
        h = F.relu(g) * g                 # g is read twice: nothing absorbed
        out = c[6](h)                     # a graph output: fused, returned row-major
        return out, F.relu(c[7](x)) + x   # relu before the join: not a join epilogue


def test_activation_kinds_joins_and_shared_outputs():
    p = _Plan(_Heads(), (2, 4, 5, 6))
    p.check((2, 4, 5, 6))
    acts = [(a["act"], a["inputs"]) for a in p.fused_attrs((2, 4, 5, 6))]
    assert collections.Counter(acts) == collections.Counter(
        [("sigmoid", 4), ("tanh", 4), ("hardtanh", 4), ("leaky_relu", 4), ("none", 5), ("none", 4),
         ("none", 4), ("relu", 4)])
    ops = p.main_ops((2, 4, 5, 6))
    assert ops["relu"] == 1 and ops["elemwise_add"] + ops["_plus"] == 1 and ops["_contiguous"] == 2
    hard = [a for a in p.fused_attrs((2, 4, 5, 6)) if a["act"] == "hardtanh"][0]
    assert (hard["act_alpha"], hard["act_beta"]) == (-0.5, 0.25)


def test_other_input_sizes_use_the_plain_weight_and_agree():
    p = _Plan(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    p.check((2, 3, 32, 32))  # the reorders are made for this size
    p.check((3, 3, 40, 24))
    p.check((1, 3, 64, 64))
    p.check((2, 3, 32, 32))


def test_tiny_images_run_as_one_matrix_product(monkeypatch):
    """resnet18_v1 at 32x32: stage 3 sees 2x2 images (its 3x3 pad-1 convolutions, 4 positions <
    9 taps, run dense; its first reads 4x4 at stride 2: 16 positions, oneDNN), stage 4 1x1
    images (3x3 pad 1 -> centre tap) and its first convolution a 2x2 input at stride 2; the 1x1
    shortcut there reads 2x2 -> 1x1 at stride 2, which is no matrix form (it skips input pixels)."""
    calls = []
    real = fused._conv_as_matmul
    monkeypatch.setattr(fused, "_conv_as_matmul", lambda *a: calls.append(a[-1]) or real(*a))
    p = _Plan(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    p.check((2, 3, 32, 32))
    assert collections.Counter(calls) == {("dense", 1, 1): 4, ("dense", 2, 2): 3}
    calls.clear()
    p.check((2, 3, 48, 48))  # another size: oneDNN with the plain weight
    assert calls == []


def test_matrix_forms_run_oneDNN_linear_when_big_enough(monkeypatch):
    """With every matrix product big enough (threshold 0) the matrix forms read a oneDNN-packed
    weight and still agree, residual joins included; resnet18_v1 at batch 2 is below the real
    threshold (dense matrix, torch.addmm)."""
    p = _Plan(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    x = torch.zeros(2, 3, 32, 32)
    assert not any(t.is_mkldnn for t in p.plan.prologue_values(p.tensors(x)) if t.dim() == 2)
    monkeypatch.setattr(fused, "LINEAR_MIN_MACS", 0)
    q = _Plan(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    q.check((2, 3, 32, 32))
    packed = [t for t in q.plan.prologue_values(q.tensors(x)) if t.is_mkldnn and t.dim() == 2]
    assert len(packed) == 7 + 1  # the 7 "dense" convolutions and the Dense head


class _Head(gluon.HybridBlock):
    """A convolution net's head: Dense + relu big enough for oneDNN's linear kernel (64 rows x
    512 x 512), a Dense read twice (its relu is not absorbed), a small Dense (MKL stays)."""

    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.conv = nn.Conv2D(32, 3, padding=1, in_channels=8)
            self.big = nn.Dense(512, activation="relu", in_units=512)
            self.shared = nn.Dense(512, in_units=512)
            self.small = nn.Dense(10, in_units=512)

    def hybrid_forward(self, F, x):
        h = self.big(self.conv(x))
        s = self.shared(h)
        return self.small(F.relu(s)), s


def test_big_fully_connected_layers_run_on_oneDNN_linear_with_their_activation():
    p = _Plan(_Head(), (64, 8, 4, 4))
    p.check((64, 8, 4, 4))
    p.check((5, 8, 4, 4))  # other rows: the packed weight still serves
    ops = p.main_ops((64, 8, 4, 4))
    assert ops["_fused_linear"] == 2 and ops["FullyConnected"] == 1
    assert ops["Activation"] + ops["relu"] == 1  # the shared Dense keeps its relu
    acts = sorted(n.attrs["act"] for n in p.plan.program_for(p.tensors(torch.zeros(64, 8, 4, 4)))[1].graph.nodes
                  if n.op is not None and n.op.name == "_fused_linear")
    assert acts == ["none", "relu"]
    w = [q for k, q in p.params.items() if k.endswith("dense0_weight")][0]
    before = p.check((64, 8, 4, 4))[0].clone()
    w.set_data(w.data() * 0.5)  # the packed weight follows
    assert not torch.allclose(before, p.check((64, 8, 4, 4))[0])


def test_matmul_form_geometry():
    form = fused.matmul_form
    assert form((8, 4, 1, 1), (2, 4, 2, 2), (1, 1), (0, 0), (1, 1), 1) == ("pixel",)
    assert form((8, 4, 1, 1), (2, 4, 3, 3), (1, 1), (0, 0), (1, 1), 1) is None  # 9 positions
    assert form((8, 4, 3, 3), (2, 4, 1, 1), (1, 1), (1, 1), (1, 1), 1) == ("dense", 1, 1)
    assert form((8, 4, 3, 3), (2, 4, 2, 2), (2, 2), (1, 1), (1, 1), 1) == ("dense", 1, 1)
    assert form((8, 4, 3, 3), (2, 4, 3, 3), (1, 1), (0, 0), (1, 1), 1) == ("dense", 1, 1)  # covers
    assert form((8, 4, 3, 3), (2, 4, 2, 2), (1, 1), (1, 1), (1, 1), 1) == ("dense", 2, 2)  # 4 < 9 taps
    assert form((8, 4, 3, 3), (2, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1) is None  # 9 positions, 9 taps
    assert form((8, 4, 3, 3), (2, 4, 4, 4), (2, 2), (1, 1), (1, 1), 1) is None  # 16 positions
    assert form((8, 4, 3, 3), (2, 4, 2, 2), (1, 1), (4, 4), (1, 1), 1) is None  # matrix 36 / 9 taps
    assert form((8, 4, 1, 1), (2, 4, 2, 2), (2, 2), (0, 0), (1, 1), 1) is None  # skips pixels
    assert form((8, 2, 3, 3), (2, 4, 1, 1), (1, 1), (1, 1), (1, 1), 2) is None  # groups


def test_dense_conv_matrix_is_the_convolution():
    """Each column of the unrolled weight is the convolution of one basis image (NumPy)."""
    r = np.random.RandomState(3)
    w = r.randn(5, 3, 3, 3).astype(np.float32)
    for spatial, s, p, d in (((2, 2), (1, 1), (1, 1), (1, 1)), ((2, 3), (1, 2), (2, 1), (2, 1)),
                             ((1, 1), (1, 1), (1, 1), (1, 1))):
        geo = dict(stride=s, pad=p, dilate=d)
        out = tuple((x + 2 * pi - di * 2 - 1) // si + 1 for x, si, pi, di in zip(spatial, s, p, d))
        m = fused.dense_conv_matrix(torch.from_numpy(w), spatial, out, s, p, d).numpy()
        x = r.randn(4, 3, *spatial).astype(np.float32)
        want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), None, s, p, d).numpy()
        got = (x.transpose(0, 2, 3, 1).reshape(4, -1) @ m.T).reshape(4, *out, 5).transpose(0, 3, 1, 2)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert m.shape == (out[0] * out[1] * 5, spatial[0] * spatial[1] * 3), geo


def test_weight_changes_reach_the_reordered_weights():
    p = _Plan(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    before = p.check((2, 3, 32, 32))[0].clone()
    w = [q for k, q in p.params.items() if k.endswith("stage4_conv1_weight")][0]
    w.set_data(w.data() * -2.0)
    after = p.check((2, 3, 32, 32))[0]
    assert not torch.allclose(before, after)
    w.data()[:] = 0.0  # in place
    p.check((2, 3, 32, 32))


class _Layouts(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.nhwc = nn.Conv2D(3, 3, padding=1, layout="NHWC", in_channels=4)
            self.c1d = nn.Conv1D(3, 3, padding=1, in_channels=4)

    def hybrid_forward(self, F, x):
        y = F.relu(self.nhwc(x))                        # (N, H, W, 3)
        z = F.relu(self.c1d(F.reshape(x, (0, -1, 4)).transpose((0, 2, 1))))
        return y, z


def test_channels_last_layouts_and_1d_convolutions_stay_plain():
    p = _Plan(_Layouts(), (2, 5, 6, 4))
    p.check((2, 5, 6, 4))
    ops = p.main_ops((2, 5, 6, 4))
    assert ops["_fused_conv"] == 0 and ops["Convolution"] == 2


def test_float64_plans_are_not_rewritten():
    net = vision.get_model("resnet18_v1", classes=10)
    net.initialize()
    net.cast("float64")
    x = mx.nd.array(np.random.RandomState(0).rand(2, 3, 32, 32), dtype="float64")
    net(x)
    graph = net(sym.var("data"))._graph()
    data = [v for v in graph.variables() if v.name == "data"]
    params = [v for v in graph.variables() if v.name != "data"]
    plan = PredictPlan(graph, data, params)
    tensors = [x._t] + [net.collect_params()[v.name].data()._t for v in params]
    _, main = plan.program_for(tensors)
    assert not any(n.op is not None and n.op.name == "_fused_conv" for n in main.graph.nodes)


def test_the_pass_without_recorded_shapes_leaves_the_graph():
    """Shapes come from a real call; a convolution whose input shape is unknown is left alone."""
    p = _Plan(vision.get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    out = fuse_onednn(p.graph, {})
    assert sum(n.op is not None and n.op.name == "_fused_conv" for n in out.nodes) == 0
    assert len(out.nodes) == len(p.graph.nodes)


def test_hybridized_static_alloc_net_agrees_with_eager():
    net = vision.get_model("mobilenet1.0", classes=10)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(3).rand(4, 3, 32, 32))
    want = net(x).asnumpy()
    net.hybridize(static_alloc=True)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5)
    with mx.autograd.record():  # recording runs the generated function: gradients reach weights
        out = net(x)
    out.backward()
    first = [p for k, p in net.collect_params().items() if k.endswith("conv0_weight")][0]
    assert first.grad().abs().sum().asscalar() > 0
