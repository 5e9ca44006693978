"""Real MXNet 1.9.1 (in a side virtualenv) loads hybridnet's exports and computes the same outputs.

Skips cleanly unless a Python with MXNet 1.9.1 is found (see tests/real_mxnet.py).
"""
import json
import subprocess
import textwrap

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon, nd
from real_mxnet import MXNET_PYTHON, SKIP_REASON

pytestmark = pytest.mark.skipif(MXNET_PYTHON is None, reason=SKIP_REASON)

RUNNER = textwrap.dedent("""
    import json, sys, warnings
    warnings.filterwarnings("ignore")
    import numpy as np
    import mxnet as mx
    jobs = json.load(open(sys.argv[1]))
    for job in jobs:
        net = mx.gluon.SymbolBlock.imports(job["symbol"], job["inputs"], job["params"])
        xs = [mx.nd.array(np.load(f)) for f in job["input_files"]]
        out = net(*xs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o, f in zip(outs, job["output_files"]):
            np.save(f, o.asnumpy())
        if job.get("nd_file"):
            loaded = mx.nd.load(job["nd_file"])
            np.save(job["nd_out"], loaded["x"].asnumpy())
""")


@pytest.fixture(autouse=True)
def fresh_names(monkeypatch):
    import hybridnet.name as _name
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)


def _models():
    from hybridnet.gluon import nn

    class Broadcasty(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = nn.Dense(6, flatten=False)
                self.bias = self.params.get("bias", shape=(1, 6))

        def hybrid_forward(self, F, x, bias):
            y = self.dense(x) + bias          # elemwise '+' with different shapes
            z = F.softmax(y, axis=-1) * 2 - 1
            return F.concat(z, F.relu(y), dim=1), F.sum(y, axis=(1, 2))

    mlp = nn.HybridSequential()
    mlp.add(nn.Dense(16, activation="relu"), nn.Dropout(0.3), nn.Dense(3))
    conv = nn.HybridSequential()
    conv.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
             nn.MaxPool2D(2), nn.Conv2DTranspose(2, 2, strides=2), nn.GlobalAvgPool2D(), nn.Flatten(),
             nn.Dense(2))
    emb = nn.HybridSequential()
    emb.add(nn.Embedding(20, 5), nn.LayerNorm(), nn.Dense(4, flatten=False), nn.PReLU())
    rng = np.random.RandomState(0)
    return [("broadcasty", Broadcasty(), [rng.randn(2, 3, 4).astype(np.float32)]),
            ("mlp", mlp, [rng.randn(4, 10).astype(np.float32)]),
            ("conv", conv, [rng.randn(2, 3, 8, 8).astype(np.float32)]),
            ("emb", emb, [rng.randint(0, 20, size=(3, 7)).astype(np.float32)])]


def test_real_mxnet_runs_our_exports(tmp_path):
    jobs, expected = [], {}
    for name, net, xs in _models():
        net.initialize(mx.init.Xavier())
        net.hybridize()
        with mx.autograd.record():  # one training step so BatchNorm statistics are non-trivial
            out = net(*[nd.array(x) for x in xs])
            loss = sum(o.sum() for o in (out if isinstance(out, (list, tuple)) else [out]))
        loss.backward()
        out = net(*[nd.array(x) for x in xs])
        outs = out if isinstance(out, (list, tuple)) else [out]
        prefix = str(tmp_path / name)
        net.export(prefix, epoch=2)
        sym_file, params_file = f"{prefix}-symbol.json", f"{prefix}-0002.params"
        in_files = []
        for k, x in enumerate(xs):
            f = f"{prefix}-in{k}.npy"
            np.save(f, x)
            in_files.append(f)
        out_files = [f"{prefix}-mx{k}.npy" for k in range(len(outs))]
        expected[name] = (outs, out_files)
        inputs = ["data"] if len(xs) == 1 else [f"data{i}" for i in range(len(xs))]
        jobs.append({"symbol": sym_file, "params": params_file, "inputs": inputs,
                     "input_files": in_files, "output_files": out_files})
    arr = nd.array(np.arange(6, dtype=np.float16).reshape(2, 3), dtype="float16")
    nd.save(str(tmp_path / "x.params"), {"x": arr})
    jobs[0]["nd_file"] = str(tmp_path / "x.params")
    jobs[0]["nd_out"] = str(tmp_path / "x.npy")
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    (tmp_path / "runner.py").write_text(RUNNER)
    res = subprocess.run([MXNET_PYTHON, str(tmp_path / "runner.py"), str(tmp_path / "jobs.json")],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    for name, (outs, files) in expected.items():
        for o, f in zip(outs, files):
            np.testing.assert_allclose(np.load(f), o.asnumpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    back = np.load(str(tmp_path / "x.npy"))
    assert back.dtype == np.float16
    np.testing.assert_array_equal(back, arr.asnumpy())
