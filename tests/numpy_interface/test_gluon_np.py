"""Gluon under npx.set_np(): np parameters and outputs, F.np/F.npx in hybrid_forward, eager ==
hybridized (outputs, gradients, weights after Trainer steps)."""
import json

import numpy as onp

import hybridnet as mx
from hybridnet import autograd, gluon, np, npx
from hybridnet.gluon import nn


class _Net(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.conv = nn.Conv2D(4, 3, padding=1)
            self.bn = nn.BatchNorm()
            self.act = nn.Activation("relu")
            self.drop = nn.Dropout(0.0)
            self.dense = nn.Dense(5)

    def hybrid_forward(self, F, x):
        y = self.drop(self.act(self.bn(self.conv(x))))
        return F.np.tanh(self.dense(F.npx.batch_flatten(y))) * 2.0 + F.npx.relu(F.np.ones((1, 5)))


def _train(hybridize):
    mx.random.seed(0)
    net = _Net(prefix="net_")
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    x = np.array(onp.random.RandomState(0).uniform(size=(2, 3, 4, 4)), dtype="float32")
    label = np.array([0, 3])
    ce, l2 = gluon.loss.SoftmaxCrossEntropyLoss(), gluon.loss.L2Loss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    outs = []
    for _ in range(3):
        with autograd.record():
            out = net(x)
            loss = ce(out, label) + l2(out, np.zeros((2, 5)))
        loss.backward()
        trainer.step(2)
        outs.append(out.asnumpy())
        assert type(out) is np.ndarray and type(loss) is np.ndarray and loss.shape == (2,)
    w = net.dense.weight
    assert type(w.data()) is np.ndarray and type(w.grad()) is np.ndarray
    assert type(net.bn.running_mean.data()) is np.ndarray
    return outs, w.data().asnumpy(), w.grad().asnumpy(), net.bn.running_mean.data().asnumpy()


def test_eager_and_hybridized_training_agree():
    npx.set_np()
    eager, hybrid = _train(False), _train(True)
    for a, b in zip(eager[0], hybrid[0]):
        onp.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(eager[1:], hybrid[1:]):
        onp.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not onp.allclose(eager[0][0], eager[0][2])  # the steps changed the weights


def test_trace_records_the_numpy_operators():
    npx.set_np()
    net = _Net(prefix="net_")
    net.initialize()
    net.hybridize()
    net(np.ones((2, 3, 4, 4)))
    ops = {n["op"] for n in json.loads(net(mx.sym.var("data")).tojson())["nodes"]}
    # npx.batch_flatten is MXNet's alias of Flatten (one OpDef); _npx_relu is an operator of its own
    assert {"_npi_tanh", "_npx_relu", "_npi_ones", "Flatten", "Convolution", "BatchNorm"} <= ops


def test_legacy_mode_is_unchanged():
    net = nn.Dense(3)
    net.initialize()
    out = net(mx.nd.ones((2, 4)))
    assert type(out) is mx.nd.NDArray and type(net.weight.data()) is mx.nd.NDArray


def test_layers_and_losses_take_np_arrays():
    """Gluon's blocks written for F = nd run on mx.np inputs and return mx.np arrays, eagerly
    and hybridized, with the same values."""
    npx.set_np()
    rs = onp.random.RandomState(4)
    x4 = np.array(rs.uniform(-1, 1, (2, 3, 8, 8)), dtype="float32")
    x2 = np.array(rs.uniform(-1, 1, (4, 6)), dtype="float32")
    for make, inp in [(nn.Swish, x4), (nn.ELU, x4), (nn.SELU, x4), (nn.GELU, x4), (lambda: nn.LeakyReLU(0.1), x4),
                      (lambda: nn.Dense(3), x2), (lambda: nn.Conv2D(2, 3), x4), (nn.MaxPool2D, x4),
                      (nn.GlobalAvgPool2D, x4), (nn.BatchNorm, x4), (nn.LayerNorm, x2), (nn.Flatten, x4)]:
        outs = []
        for hybridize in (False, True):
            mx.random.seed(1)
            block = make()
            block.initialize()
            if hybridize:
                block.hybridize()
            out = block(inp)
            assert type(out) is np.ndarray, type(block).__name__
            outs.append(out.asnumpy())
        onp.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6, err_msg=type(block).__name__)
    p, t = rs.uniform(0.1, 0.9, (4, 6)).astype("float32"), rs.uniform(0.1, 0.9, (4, 6)).astype("float32")
    L = gluon.loss
    losses = [L.L2Loss(), L.L1Loss(), L.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True), L.KLDivLoss(from_logits=True),
              L.HuberLoss(), L.LogisticLoss(), L.PoissonNLLLoss()]
    npx.reset_np()
    legacy = [loss(mx.nd.array(p), mx.nd.array(t)).asnumpy() for loss in losses]
    npx.set_np()
    for loss, want in zip(losses, legacy):
        got = loss(np.array(p), np.array(t))
        assert type(got) is np.ndarray, type(loss).__name__
        onp.testing.assert_allclose(got.asnumpy(), want.reshape(got.shape), rtol=1e-6, err_msg=type(loss).__name__)


def test_every_optimizer_trains_np_parameters():
    """Parameters created under npx.set_np() are mx.np arrays; the Trainer's optimizers update them."""
    npx.set_np()
    for name in ["sgd", "nag", "adam", "rmsprop", "adagrad", "adadelta", "ftrl", "adamax", "nadam", "signum",
                 "lamb", "lars", "dcasgd", "sgld", "ftml"]:
        net = nn.HybridSequential()
        net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
        net.initialize()
        params = {"learning_rate": 0.01, **({"momentum": 0.9} if name in ("sgd", "nag", "signum", "lars") else {})}
        trainer = gluon.Trainer(net.collect_params(), name, params)
        x = np.ones((8, 3))
        net(x)
        before = net[0].weight.data().copy()
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        trainer.step(8)
        assert type(net[0].weight.data()) is np.ndarray
        assert not onp.allclose(before.asnumpy(), net[0].weight.data().asnumpy()), name


def test_np_symbols_index_and_compute_like_arrays():
    """Tracing under npx.set_np() hands hybrid_forward MXNet's np symbols: NumPy indexing,
    methods and operators record the NumPy-interface operators, and give the eager values."""
    npx.set_np()

    class Block(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            y = (x[:, -1, 1:3] + 1).dot(x[0, :2, 1:3].T) * x.sum()
            return y - x[1, None, 0, :2].reshape(1, 2) @ F.np.ones((2, 2)) / 2 ** x.mean()

    block = Block()
    block.initialize()
    x = np.array(onp.random.RandomState(5).uniform(size=(2, 3, 4)), dtype="float32")
    eager = block(x).asnumpy()
    block.hybridize()
    hybrid = block(x)
    assert type(hybrid) is np.ndarray and hybrid.shape == eager.shape == (2, 2)
    onp.testing.assert_allclose(hybrid.asnumpy(), eager, rtol=1e-5, atol=1e-6)
    ops = {n["op"] for n in json.loads(block(mx.sym.var("data")).tojson())["nodes"]}
    assert {"_np_dot", "_np_squeeze", "_npi_add_scalar", "_npi_multiply", "_npi_matmul", "_npi_subtract",
            "_npi_rpower_scalar", "slice"} <= ops
    assert not ops & {"elemwise_add", "broadcast_mul", "_plus_scalar"}


def test_deferred_weight_shape_from_np_dot():
    """A weight of unknown input size used as ``x.dot(w)`` gets its shape from x (the backward
    shape rule of _np_dot), hybridized."""
    npx.set_np()

    class Linear(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.w = self.params.get("w", shape=(0, 7), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return F.npx.relu(x.dot(w))

    net = Linear()
    net.initialize()
    net.hybridize()
    out = net(np.ones((3, 5)))
    assert out.shape == (3, 7) and net.w.shape == (5, 7) and type(net.w.data()) is np.ndarray
