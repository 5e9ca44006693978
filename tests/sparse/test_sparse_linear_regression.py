"""Sparse training end to end, as MXNet's example/sparse/linear_classification does it: CSR
batches (NDArrayIter over a CSRNDArray, LibSVMIter over a file), a row_sparse weight whose
gradient is row_sparse, and lazy optimizer updates; through Module and through Gluon."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon
from hybridnet.test_utils import rand_ndarray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from real_mxnet import MXNET_PYTHON, SKIP_REASON  # noqa: E402

N, M, BATCH = 256, 60, 32


def _data(seed: int = 0):
    np.random.seed(seed)
    mx.random.seed(seed)
    x = rand_ndarray((N, M), "csr", density=0.1)
    w = np.random.randn(M, 1).astype(np.float32)
    return x, w, x.asnumpy() @ w


def _linear_module():
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("w", shape=(M, 1), init=mx.init.Normal(0.01), stype="row_sparse")
    b = mx.sym.Variable("bias", shape=(1,))
    pred = mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b)
    out = mx.sym.LinearRegressionOutput(pred, mx.sym.Variable("label"), name="out")
    return mx.mod.Module(out, data_names=["data"], label_names=["label"])


def _train(mod, it, optimizer, params, epochs):
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    mod.init_optimizer(optimizer=optimizer, optimizer_params=params)
    metric = mx.metric.create("MSE")
    history = []
    for _ in range(epochs):
        it.reset()
        metric.reset()
        for batch in it:
            mod.forward(batch, is_train=True)
            mod.update_metric(metric, batch.label)
            mod.backward()
            mod.update()
        history.append(metric.get()[1])
    return history


@pytest.mark.parametrize("optimizer,params", [
    ("sgd", {"learning_rate": 0.5, "momentum": 0.9, "rescale_grad": 1.0 / BATCH}),
    ("adam", {"learning_rate": 0.1, "rescale_grad": 1.0 / BATCH}),
])
def test_module_trains_with_csr_data_and_row_sparse_weight(optimizer, params):
    x, _, y = _data()
    it = mx.io.NDArrayIter(x, {"label": mx.nd.array(y)}, batch_size=BATCH, last_batch_handle="discard")
    mod = _linear_module()
    history = _train(mod, it, optimizer, params, epochs=15)
    exe = mod._exec_group.execs[0]
    assert exe.arg_dict["data"].stype == "csr"
    assert exe.arg_dict["w"].stype == "row_sparse"
    assert exe.grad_dict["w"].stype == "row_sparse"
    assert mod.get_params()[0]["w"].stype == "row_sparse"
    assert history[-1] < history[0] / 20, history


def test_lazy_update_touches_only_the_batch_rows():
    x, _, y = _data(1)
    it = mx.io.NDArrayIter(x, {"label": mx.nd.array(y)}, batch_size=BATCH, last_batch_handle="discard")
    mod = _linear_module()
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "wd": 0.1})
    before = mod.get_params()[0]["w"].asnumpy().copy()
    batch = next(iter(it))
    mod.forward_backward(batch)
    mod.update()
    after = mod.get_params()[0]["w"].asnumpy()
    used = np.unique(batch.data[0].indices.asnumpy())
    unused = np.setdiff1d(np.arange(M), used)
    assert np.array_equal(after[unused], before[unused])  # not even weight decay touches them
    assert not np.allclose(after[used], before[used])


def test_module_trains_from_libsvm_file(tmp_path):
    x, _, y = _data(2)
    dense = x.asnumpy()
    path = tmp_path / "train.libsvm"
    with open(path, "w") as f:
        for row, label in zip(dense, y[:, 0]):
            cols = np.nonzero(row)[0]
            f.write(f"{label:.6f} " + " ".join(f"{c}:{row[c]:.6f}" for c in cols) + "\n")
    it = mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(M,), batch_size=BATCH)
    assert it.provide_label[0].name == "softmax_label"
    x_sym = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("w", shape=(M, 1), init=mx.init.Normal(0.01), stype="row_sparse")
    pred = mx.sym.sparse.dot(x_sym, w)
    label = mx.sym.reshape(mx.sym.Variable("softmax_label"), shape=(-1, 1))
    out = mx.sym.LinearRegressionOutput(pred, label, name="out")
    mod = mx.mod.Module(out, data_names=["data"], label_names=["softmax_label"])
    history = _train(mod, it, "adam", {"learning_rate": 0.1, "rescale_grad": 1.0 / BATCH}, epochs=15)
    assert history[-1] < history[0] / 20, history


def test_ndarrayiter_csr_needs_discard():
    x, _, y = _data(3)
    with pytest.raises(NotImplementedError, match="discard"):
        mx.io.NDArrayIter(x, y, batch_size=BATCH)
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH, shuffle=True, last_batch_handle="discard")
    batches = list(it)
    assert len(batches) == N // BATCH
    assert all(b.data[0].stype == "csr" for b in batches)
    got = np.concatenate([b.data[0].asnumpy() for b in batches])
    assert np.allclose(np.sort(got.sum(1)), np.sort(x.asnumpy().sum(1)), atol=1e-5)


def test_gluon_trains_with_row_sparse_parameter():
    x, _, y = _data(4)

    class Linear(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.w = self.params.get("w", shape=(M, 1), stype="row_sparse", grad_stype="row_sparse",
                                     init=mx.init.Normal(0.01))

        def forward(self, data):
            return mx.nd.sparse.dot(data, self.w.row_sparse_data(mx.nd.arange(M)))

    net = Linear()
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.1})
    it = mx.io.NDArrayIter(x, mx.nd.array(y), batch_size=BATCH, last_batch_handle="discard")
    loss = gluon.loss.L2Loss()
    history = []
    for _ in range(10):
        it.reset()
        total = 0.0
        for batch in it:
            with autograd.record():
                batch_loss = loss(net(batch.data[0]), batch.label[0])
            batch_loss.backward()
            trainer.step(BATCH)
            total += batch_loss.mean().asscalar()
        history.append(total)
    assert net.w.grad().stype == "row_sparse"
    assert history[-1] < history[0] / 20, history


_COMPARE_SCRIPT = r"""
import json, sys
import numpy as np
import mxnet as mx

path, optimizer = sys.argv[1], sys.argv[2]
num_features, batch = 300, 32
x = mx.sym.Variable("data", stype="csr")
w = mx.sym.Variable("weight", shape=(num_features, 2), stype="row_sparse")
b = mx.sym.Variable("bias", shape=(2,))
out = mx.sym.SoftmaxOutput(mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), b), mx.sym.Variable("softmax_label"),
                           name="out")
it = mx.io.LibSVMIter(data_libsvm=path, data_shape=(num_features,), batch_size=batch)
mod = mx.mod.Module(out, data_names=["data"], label_names=["softmax_label"])
mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
rng = np.random.RandomState(5)
mod.init_params(arg_params={
    "weight": mx.nd.array(rng.normal(0, 0.01, (num_features, 2))).tostype("row_sparse"),
    "bias": mx.nd.zeros((2,))})
mod.init_optimizer(optimizer=optimizer, optimizer_params={"learning_rate": 0.1, "rescale_grad": 1.0 / batch})
metric = mx.metric.create("nll_loss")
history = []
for epoch in range(3):
    it.reset()
    metric.reset()
    for data_batch in it:
        mod.forward_backward(data_batch)
        mod.update()
        mod.update_metric(metric, data_batch.label)
    history.append(float(metric.get()[1]))
print(json.dumps({"history": history, "weight_stype": mod.get_params()[0]["weight"].stype}))
"""


def _write_libsvm(path, rows=320, features=300, seed=11):
    rng = np.random.RandomState(seed)
    w = rng.randn(features)
    with open(path, "w") as f:
        for _ in range(rows):
            cols = np.sort(rng.choice(features, 8, replace=False))
            vals = rng.uniform(0.5, 1.5, 8)
            f.write(f"{int(w[cols] @ vals > 0)} " + " ".join(f"{c}:{v:.4f}" for c, v in zip(cols, vals)) + "\n")


@pytest.mark.skipif(MXNET_PYTHON is None, reason=SKIP_REASON)
@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adagrad"])
def test_sparse_classification_matches_real_mxnet(tmp_path, optimizer):
    """The same script (csr LibSVM batches, a row_sparse weight, lazy updates) gives MXNet
    1.9.1's loss curve."""
    data = tmp_path / "train.libsvm"
    _write_libsvm(data)
    script = tmp_path / "train.py"
    script.write_text(_COMPARE_SCRIPT)
    runs = {}
    for who, cmd in (("mxnet", [MXNET_PYTHON, str(script)]),
                     ("hybridnet", [sys.executable, "-m", "hybridnet", str(script)])):
        res = subprocess.run(cmd + [str(data), optimizer], capture_output=True, text=True, timeout=600,
                             cwd=str(tmp_path))
        assert res.returncode == 0, res.stderr[-3000:]
        runs[who] = json.loads(res.stdout.strip().splitlines()[-1])
    assert runs["hybridnet"]["weight_stype"] == runs["mxnet"]["weight_stype"] == "row_sparse"
    np.testing.assert_allclose(runs["hybridnet"]["history"], runs["mxnet"]["history"], rtol=1e-4, atol=1e-5)
