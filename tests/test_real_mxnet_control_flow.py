"""Real MXNet 1.9.1 loads hybridnet's exports of control-flow graphs (``F.contrib.foreach``,
``while_loop``, ``cond``) and computes the same outputs and gradients.

Skips cleanly unless a Python with MXNet 1.9.1 is found (see tests/real_mxnet.py).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon, nd
from real_mxnet import MXNET_PYTHON, SKIP_REASON


pytestmark = pytest.mark.skipif(MXNET_PYTHON is None, reason=SKIP_REASON)

# In MXNet: load the export, run it through SymbolBlock (outputs) and an executor (gradients of
# sum(out_k * head_k) with respect to the inputs and the parameters).
RUNNER = textwrap.dedent("""
    import json, sys, warnings
    warnings.filterwarnings("ignore")
    import numpy as np
    import mxnet as mx
    job = json.load(open(sys.argv[1]))
    arrays = np.load(job["arrays"])
    xs = [mx.nd.array(arrays[f"in{i}"]) for i in range(len(job["inputs"]))]
    net = mx.gluon.SymbolBlock.imports(job["symbol"], job["inputs"], job["params"])
    out = net(*xs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    result = {f"out{i}": o.asnumpy() for i, o in enumerate(outs)}
    sym = mx.sym.load(job["symbol"])
    params = {k.split(":", 1)[1]: v for k, v in mx.nd.load(job["params"]).items()}
    args = dict(zip(job["inputs"], xs), **params)
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args=args, args_grad=grads)
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(arrays[f"head{i}"]) for i in range(len(outs))])
    result.update({f"grad_{k}": v.asnumpy() for k, v in grads.items()})
    np.savez(job["result"], **result)
""")


class RNN(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get("w", shape=(4, 3))
            self.u = self.params.get("u", shape=(4, 4))
            self.b = self.params.get("b", shape=(4,))

    def hybrid_forward(self, F, x, h0, w, u, b):
        def step(xt, states):
            h = F.tanh(F.dot(xt, w, transpose_b=True) + F.dot(states[0], u) + b)  # + b broadcasts
            return h, [h]
        outs, states = F.contrib.foreach(step, x, [h0])
        return outs, states[0]


class While(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.scale = self.params.get("scale", shape=(3,))

    def hybrid_forward(self, F, x, scale):
        def cond(v, n):
            return F.sum(F.abs(v)) < 20

        def func(v, n):
            nv = v * 2 + scale
            return [nv * 3], [nv, n + 1]
        outs, final = F.contrib.while_loop(cond, func, [x, F.zeros_like(F.sum(x, axis=0, keepdims=True))],
                                           max_iterations=7)
        return outs[0], final[0], final[1]


class Cond(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get("w", shape=(2, 3))

    def hybrid_forward(self, F, x, w):
        return F.contrib.cond(F.sum(x) > 0, lambda: [x * w, F.sin(x)], lambda: [x - w, F.cos(x) * w])


def _cases():
    rng = np.random.RandomState(0)
    return [
        ("rnn", RNN, [rng.uniform(-1, 1, (5, 2, 3)), rng.uniform(-1, 1, (2, 4))]),
        ("while", While, [rng.uniform(-1, 1, (2, 3)) * 0.1]),
        ("cond_then", Cond, [rng.uniform(0.1, 1, (2, 3))]),
        ("cond_else", Cond, [-rng.uniform(0.1, 1, (2, 3))]),
    ]


@pytest.mark.parametrize("name,cls,inputs", _cases(), ids=[c[0] for c in _cases()])
def test_real_mxnet_loads_our_control_flow_export(name, cls, inputs, tmp_path):
    net = cls(prefix=f"{name}_")
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize()
    xs = [nd.array(a) for a in inputs]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        outs = net(*xs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    rng = np.random.RandomState(1)
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
    diff = outs[:2] if name == "while" else outs  # the step counter carries no gradient
    autograd.backward(diff, [nd.array(h) for h in heads[:len(diff)]])
    prefix = str(tmp_path / name)
    net.export(prefix)
    names = ["data"] if len(xs) == 1 else [f"data{i}" for i in range(len(xs))]
    arrays = {f"in{i}": a.astype(np.float32) for i, a in enumerate(inputs)}
    arrays.update({f"head{i}": h for i, h in enumerate(heads)})
    np.savez(tmp_path / "arrays.npz", **arrays)
    job = {"symbol": f"{prefix}-symbol.json", "params": f"{prefix}-0000.params", "inputs": names,
           "arrays": str(tmp_path / "arrays.npz"), "result": str(tmp_path / "result.npz")}
    (tmp_path / "job.json").write_text(json.dumps(job))
    (tmp_path / "runner.py").write_text(RUNNER)
    run = subprocess.run([MXNET_PYTHON, str(tmp_path / "runner.py"), str(tmp_path / "job.json")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    theirs = np.load(tmp_path / "result.npz")
    steps = int(outs[2].asnumpy()[0, 0]) if name == "while" else None
    for i, o in enumerate(outs):
        ours, want = o.asnumpy(), theirs[f"out{i}"]
        if steps is not None and i == 0:
            assert 0 < steps < ours.shape[0]
            ours, want = ours[:steps], want[:steps]  # MXNet leaves the padding uninitialized
        np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-6, err_msg=f"{name} output {i}")
    for dname, x in zip(names, xs):
        np.testing.assert_allclose(x.grad.asnumpy(), theirs[f"grad_{dname}"], rtol=1e-5, atol=1e-6)
    for p in net.collect_params().values():
        assert np.abs(p.grad().asnumpy()).max() > 1e-3
        np.testing.assert_allclose(p.grad().asnumpy(), theirs[f"grad_{p.name}"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} gradient of {p.name}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
