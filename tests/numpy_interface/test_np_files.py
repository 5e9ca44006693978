"""NumPy mode and files, both ways with real MXNet 1.9.1: np-mode exports written by real MXNet
(tests/fixtures/numpy_mode, made by its make_fixtures.py) load and run to MXNet's outputs, eager
and hybridized; npx.save files written by MXNet load with their dtypes; hybridnet's np-mode
exports and npx.save files load in real MXNet (live, where real MXNet is installed). Also the
np-mode data path: DataLoader batches and batchify results are mx.np arrays under set_np, metrics
take np arrays, the model zoo runs on them."""
import json
import os
import subprocess
import sys

import numpy as onp
import pytest

import hybridnet as mx
from hybridnet import gluon, np, npx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from real_mxnet import MXNET_PYTHON, SKIP_REASON  # noqa: E402

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "numpy_mode")


class NpNet(gluon.HybridBlock):
    """The block of tests/fixtures/numpy_mode/make_fixtures.py."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv = gluon.nn.Conv2D(4, 3, padding=1)
            self.bn = gluon.nn.BatchNorm()
            self.dense = gluon.nn.Dense(5)
            self.proj = self.params.get("proj", shape=(5, 3))

    def hybrid_forward(self, F, x, proj):
        y = self.bn(self.conv(x))
        y = F.npx.activation(y, act_type="relu")
        pooled = F.np.mean(y, axis=(2, 3))
        z = F.np.concatenate([pooled, y[:, :, 0, 0] * 2], axis=1)
        h = F.np.tanh(self.dense(z))
        return F.np.matmul(h, proj) + 1.5, F.np.sum(F.np.square(y[:, 1:3]), axis=1)


@pytest.mark.parametrize("hybridize", [False, True])
def test_real_mxnet_np_export_loads_and_runs(hybridize):
    npx.set_np()
    ref = onp.load(os.path.join(FIX, "npnet.npz"))
    with open(os.path.join(FIX, "npnet-symbol.json")) as f:
        ops = {n["op"] for n in json.load(f)["nodes"]}
    assert {"_npi_mean", "_npx_reshape", "_npi_concatenate", "_npi_matmul", "_np_sum"} <= ops
    blk = gluon.SymbolBlock.imports(os.path.join(FIX, "npnet-symbol.json"), ["data"],
                                    os.path.join(FIX, "npnet-0000.params"))
    if hybridize:
        blk.hybridize()
    out0, out1 = blk(np.array(ref["in0"]))
    assert isinstance(out0, np.ndarray) and isinstance(out1, np.ndarray)
    onp.testing.assert_allclose(out0.asnumpy(), ref["out0"], rtol=1e-5, atol=1e-5)
    onp.testing.assert_allclose(out1.asnumpy(), ref["out1"], rtol=1e-5, atol=1e-5)


def test_real_mxnet_npx_save_files_load():
    npx.set_np()
    got = npx.load(os.path.join(FIX, "arrays.npx"))
    ref = onp.load(os.path.join(FIX, "arrays.npz"))
    assert sorted(got) == sorted(ref.files)
    for k, v in got.items():
        assert isinstance(v, np.ndarray)
        assert v.dtype == ref[k].dtype and v.shape == ref[k].shape, k
        onp.testing.assert_array_equal(v.asnumpy(), ref[k])
    lst = npx.load(os.path.join(FIX, "list.npx"))
    assert isinstance(lst, list) and len(lst) == 2
    onp.testing.assert_array_equal(lst[1].asnumpy(), ref["idx"])


def test_npx_save_round_trip(tmp_path):
    npx.set_np()
    arrays = {"a": np.arange(6).reshape(2, 3), "b": np.array([True, False], dtype="bool"),
              "c": np.array(3.0), "d": np.zeros((0, 2), dtype="int64")}
    path = str(tmp_path / "x.npx")
    npx.save(path, arrays)
    back = npx.load(path)
    for k, v in arrays.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape
        onp.testing.assert_array_equal(back[k].asnumpy(), v.asnumpy())


def _export_np_net(prefix):
    npx.set_np()
    mx.random.seed(3)
    net = NpNet()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.array(onp.random.RandomState(0).uniform(-1, 1, (2, 3, 6, 6)).astype("float32"))
    outs = net(x)
    net.export(prefix, epoch=0)
    return x.asnumpy(), [o.asnumpy() for o in outs]


def test_np_export_writes_mxnet_np_operators(tmp_path):
    prefix = str(tmp_path / "net")
    x, outs = _export_np_net(prefix)
    with open(prefix + "-symbol.json") as f:
        ops = {n["op"] for n in json.load(f)["nodes"]}
    assert {"_npi_mean", "_npi_concatenate", "_npi_matmul", "_np_sum", "_npi_tanh"} <= ops
    blk = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    for got, want in zip(blk(np.array(x)), outs):
        onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(MXNET_PYTHON is None, reason=SKIP_REASON)
def test_real_mxnet_loads_hybridnet_np_export_and_npx_save(tmp_path):
    prefix = str(tmp_path / "net")
    x, outs = _export_np_net(prefix)
    onp.savez(str(tmp_path / "ref.npz"), x=x, out0=outs[0], out1=outs[1])
    npx.save(str(tmp_path / "arrays.npx"), {"w": np.array(x[0, 0]), "i": np.array([1, 2], dtype="int64"),
                                             "m": np.array([True, False], dtype="bool")})
    script = f"""
import numpy as onp, mxnet as mx
from mxnet import gluon, np, npx
npx.set_np()
ref = onp.load({str(tmp_path / 'ref.npz')!r})
blk = gluon.SymbolBlock.imports({prefix + '-symbol.json'!r}, ['data'], {prefix + '-0000.params'!r})
o0, o1 = blk(np.array(ref['x']))
assert onp.allclose(o0.asnumpy(), ref['out0'], rtol=1e-4, atol=1e-5), abs(o0.asnumpy() - ref['out0']).max()
assert onp.allclose(o1.asnumpy(), ref['out1'], rtol=1e-4, atol=1e-5), abs(o1.asnumpy() - ref['out1']).max()
a = npx.load({str(tmp_path / 'arrays.npx')!r})
assert str(a['i'].dtype) == 'int64' and str(a['m'].dtype) == 'bool' and a['w'].shape == (6, 6)
assert onp.allclose(a['w'].asnumpy(), ref['x'][0, 0])
print('OK')
"""
    out = subprocess.run([MXNET_PYTHON, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-3000:]


def test_dataloader_batches_are_np_arrays_under_set_np():
    X = onp.random.RandomState(1).uniform(size=(10, 3)).astype("float32")
    Y = onp.arange(10) % 3
    npx.set_np()
    for data in (gluon.data.ArrayDataset(X, Y), gluon.data.ArrayDataset(np.array(X), np.array(Y))):
        for xb, yb in gluon.data.DataLoader(data, batch_size=4):
            assert isinstance(xb, np.ndarray) and isinstance(yb, np.ndarray)
            onp.testing.assert_allclose(xb.asnumpy(), X[:4])
            break
    pad = gluon.data.batchify.Pad(ret_length=True)([onp.ones(2), onp.ones(3)])
    assert all(isinstance(p, np.ndarray) for p in pad)
    npx.reset_np()
    xb, yb = next(iter(gluon.data.DataLoader(gluon.data.ArrayDataset(X, Y), batch_size=4)))
    assert type(xb) is mx.nd.NDArray


def test_dataloader_workers_give_np_batches():
    X = onp.arange(24, dtype="float32").reshape(8, 3)
    npx.set_np()
    batches = list(gluon.data.DataLoader(gluon.data.ArrayDataset(X), batch_size=4, num_workers=1,
                                         thread_pool=True))
    assert all(isinstance(b, np.ndarray) for b in batches)
    onp.testing.assert_array_equal(batches[1].asnumpy(), X[4:])


def test_metrics_take_np_arrays():
    npx.set_np()
    labels = np.array([0, 1, 2, 1])
    probs = np.array(onp.eye(3, dtype="float32")[[0, 1, 1, 1]])
    acc = mx.metric.Accuracy()
    acc.update([labels], [probs])
    assert acc.get()[1] == 0.75
    mse = mx.metric.MSE()
    mse.update([np.array([1.0, 2.0])], [np.array([1.5, 2.0])])
    assert abs(mse.get()[1] - 0.125) < 1e-6
    ce = mx.metric.CrossEntropy()
    ce.update([labels], [np.array(onp.full((4, 3), 1 / 3, dtype="float32"))])
    assert abs(ce.get()[1] - onp.log(3)) < 1e-5


def test_model_zoo_in_np_mode():
    npx.set_np()
    net = gluon.model_zoo.vision.get_model("mobilenet0.25", classes=7)
    net.initialize()
    x = np.array(onp.random.RandomState(2).uniform(size=(1, 3, 32, 32)).astype("float32"))
    eager = net(x)
    net.hybridize()
    hybrid = net(x)
    assert isinstance(hybrid, np.ndarray) and hybrid.shape == (1, 7)
    onp.testing.assert_allclose(eager.asnumpy(), hybrid.asnumpy(), rtol=1e-4, atol=1e-5)
