"""block.to_torch / hybridnet.to_torch: a torch.nn.Module that computes the hybridized block's
outputs and gradients, survives torch.export (dynamic batch) and torch.jit.trace, keeps the
MXNet names, and refuses graphs a trace cannot express, naming the node."""
import os

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import autograd, gluon, nd
from hybridnet.base import MXNetError
from hybridnet.compiler.torch_module import graph_module
from hybridnet.gluon import nn, rnn
from hybridnet.gluon.model_zoo import vision
from fixture_paths import MXNET as FIXTURES

# small inputs keep these fast: 32x32 is enough for every stage of these networks
ZOO = [("resnet18_v1", (2, 3, 32, 32)), ("mobilenet0.25", (2, 3, 32, 32)), ("mobilenetv2_0.25", (2, 3, 32, 32))]


def _zoo(name, shape, seed=0):
    mx.random.seed(seed)
    net = vision.get_model(name)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = nd.array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    net(x)
    return net, x


@pytest.fixture(scope="module", params=ZOO, ids=[z[0] for z in ZOO])
def zoo(request):
    name, shape = request.param
    net, x = _zoo(name, shape)
    return net, x, net.to_torch(x)


def test_outputs_equal_the_hybridized_block(zoo):
    net, x, mod = zoo
    assert not mod.training  # predict mode, as a deployment model
    ref = net(x).asnumpy()
    with torch.no_grad():
        got = mod(torch.from_numpy(x.asnumpy())).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_parameters_are_the_blocks_under_mxnet_names(zoo):
    net, x, mod = zoo
    params = net.collect_params()
    state = mod.mxnet_state_dict()
    assert set(state) == set(params.keys())
    for name, t in state.items():
        np.testing.assert_array_equal(t.detach().numpy(), params[name].data().asnumpy())
    # BatchNorm's running statistics are buffers, the rest trainable parameters
    aux = {mod.mxnet_names[n] for n, _ in mod.named_buffers()}
    assert aux == {n for n in params.keys() if n.endswith(("running_mean", "running_var"))}
    assert all(p.requires_grad for p in mod.parameters())


# every network of the zoo, at the smallest input its final pooling accepts
def _smallest_input(name):
    side = {"densenet": 224, "squeezenet": 224, "inceptionv3": 299, "alexnet": 64}
    return (1, 3) + (next((v for k, v in side.items() if name.startswith(k)), 32),) * 2


FAMILIES = [(n, _smallest_input(n)) for n in sorted(vision._models) if (n, _smallest_input(n)) not in
            [(z[0], (1,) + z[1][1:]) for z in ZOO]]


@pytest.mark.parametrize("name,shape", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_every_zoo_network_converts_with_equal_outputs(name, shape):
    net, x = _zoo(name, shape, seed=6)
    mod = net.to_torch(x)
    with torch.no_grad():
        got = mod(torch.from_numpy(x.asnumpy())).numpy()
    ref = net(x).asnumpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


def test_torch_export_with_a_dynamic_batch_round_trips(tmp_path):
    # one network: an export costs seconds (resnet18_v1 10 s, mobilenetv2_0.25 15 s on one core)
    net, x = _zoo("mobilenet0.25", (2, 3, 32, 32), seed=2)
    mod = net.to_torch(x)
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(mod, (torch.from_numpy(x.asnumpy()),),
                             dynamic_shapes={mod.input_names[0]: {0: batch}})
    path = str(tmp_path / "m.pt2")
    torch.export.save(ep, path)
    loaded = torch.export.load(path).module()
    x3 = np.random.default_rng(1).standard_normal((3,) + x.shape[1:]).astype(np.float32)
    with torch.no_grad():
        got = loaded(torch.from_numpy(x3)).numpy()
    np.testing.assert_allclose(got, net(nd.array(x3)).asnumpy(), rtol=1e-4, atol=1e-5)


def test_gradients_equal_hybridnets():
    net, x = _zoo("resnet18_v1", (2, 3, 32, 32), seed=3)
    mod = net.to_torch(x)
    w = np.random.default_rng(4).standard_normal((2, 1000)).astype(np.float32)
    for train in (False, True):  # predict-mode BatchNorm, then batch statistics
        mod.train(train)
        with autograd.record(train_mode=train):
            loss = (net(x) * nd.array(w)).sum()
        loss.backward()
        mod.zero_grad()
        (mod(torch.from_numpy(x.asnumpy())) * torch.from_numpy(w)).sum().backward()
        for attr, p in mod.named_parameters():
            ref = net.collect_params()[mod.mxnet_names[attr]].grad().asnumpy()
            np.testing.assert_allclose(p.grad.numpy(), ref, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(ref).max()),
                                       err_msg=f"{attr} train={train}")


def test_jit_trace_and_shared_memory():
    net, x = _zoo("mobilenet0.25", (1, 3, 32, 32), seed=5)
    mod = net.to_torch(x)
    traced = torch.jit.trace(mod, (torch.from_numpy(x.asnumpy()),))
    with torch.no_grad():
        np.testing.assert_allclose(traced(torch.from_numpy(x.asnumpy())).numpy(), net(x).asnumpy(),
                                   rtol=1e-4, atol=1e-5)
    # copy=False shares the block's memory: a change in hybridnet shows in torch
    name, p = next(iter(net.collect_params().items()))
    attr = {v: k for k, v in mod.mxnet_names.items()}[name]
    p.data()[:] = 0.5
    assert float(getattr(mod, attr).detach().flatten()[0]) == 0.5
    copied = net.to_torch(copy=True)
    p.data()[:] = 0.25
    assert float(getattr(copied, attr).detach().flatten()[0]) == 0.5


class _Tagger(gluon.HybridBlock):
    """Embedding -> LSTM -> Dense: a recurrent model with two inputs (tokens and begin states)."""

    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.emb = nn.Embedding(20, 6)
            self.lstm = rnn.LSTM(8, layout="NTC", input_size=6)
            self.out = nn.Dense(5, flatten=False)

    def hybrid_forward(self, F, tokens, h, c):
        seq, (h2, c2) = self.lstm(self.emb(tokens), [h, c])
        return self.out(seq), h2


def test_recurrent_model():
    mx.random.seed(7)
    net = _Tagger()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    rng = np.random.default_rng(7)
    tokens = nd.array(rng.integers(0, 20, (2, 5)).astype(np.float32))
    h, c = nd.zeros((1, 2, 8)), nd.zeros((1, 2, 8))
    mod = net.to_torch(tokens, h, c)
    args = tuple(torch.from_numpy(a.asnumpy()) for a in (tokens, h, c))
    ref = net(tokens, h, c)
    with torch.no_grad():
        got = mod(*args)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.numpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)
    # export with a dynamic batch (axis 0 of the tokens, 1 of the states)
    b = torch.export.Dim("b", min=1, max=64)
    names = mod.input_names
    ep = torch.export.export(mod, args, dynamic_shapes={names[0]: {0: b}, names[1]: {1: b}, names[2]: {1: b}})
    t3 = rng.integers(0, 20, (3, 5)).astype(np.float32)
    z3 = np.zeros((1, 3, 8), np.float32)
    with torch.no_grad():
        got3 = ep.module()(torch.from_numpy(t3), torch.from_numpy(z3), torch.from_numpy(z3))
    ref3 = net(nd.array(t3), nd.array(z3), nd.array(z3))
    for g, r in zip(got3, ref3):
        np.testing.assert_allclose(g.numpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)
    # gradients through the torch module are hybridnet's
    mod.train()
    with autograd.record():
        loss = net(tokens, h, c)[0].sum()
    loss.backward()
    mod(*args)[0].sum().backward()
    for attr, p in mod.named_parameters():
        ref_grad = net.collect_params()[mod.mxnet_names[attr]].grad().asnumpy()
        np.testing.assert_allclose(p.grad.numpy(), ref_grad, rtol=1e-4, atol=1e-6, err_msg=attr)


@pytest.mark.skipif(not os.path.isdir(os.path.join(FIXTURES, "lenet")), reason="shared MXNet fixtures not found")
def test_real_mxnet_export_to_torch():
    d = os.path.join(FIXTURES, "lenet")
    mod = mx.to_torch(os.path.join(d, "model-symbol.json"), os.path.join(d, "model-0000.params"))
    x = np.load(os.path.join(d, "input.npy"))
    with torch.no_grad():
        got = mod(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, np.load(os.path.join(d, "output.npy")), rtol=1e-4, atol=1e-5)
    assert mod.mxnet_input_names == ["data"]


class _Twice(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2)


@mx.operator.register("h11_twice")
class _TwiceProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Twice()


def test_refuses_custom_ops_and_value_dependent_control_flow():
    x = mx.sym.var("x")
    custom = mx.sym.Custom(x, op_type="h11_twice", name="my_custom") + 1
    with pytest.raises(MXNetError, match=r"node 'my_custom' is a custom Python operator \(Custom\)"):
        mx.to_torch(custom, {})
    w = mx.sym.var("w")
    cond = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: x * w, lambda: x - w, name="branch")
    with pytest.raises(MXNetError, match=r"node '_cond\d+' is value-dependent control flow \(_cond\)"):
        mx.to_torch(cond, {"w": nd.ones((2,))})
    with pytest.raises(MXNetError, match="neither data inputs"):
        graph_module((x * w)._graph(), ["x"], {})
