"""The first hybridized call in a fresh process infers shapes by rule, never by a meta run.

A kernel's first run on torch's "meta" device imports torch's decompositions with sympy and
torch._dynamo (over a second, once per process): that alone made the seed LeNet's first call
25x slower than MXNet's. ``import torch`` does not import ``sympy`` or ``torch._dynamo`` (it
does import ``torch._decomp`` and ``torch._refs``, so those are no sentinel), so their absence
after the call, and an empty meta-run cache, show that no meta run happened.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTINELS = ("sympy", "torch._dynamo")

_WORKER = r"""
import json, sys, time
import torch
after_torch = [m for m in %(sentinels)r if m in sys.modules]
import numpy as np
import hybridnet as mx
from hybridnet import gluon
from hybridnet.gluon import nn
from hybridnet.compiler import infer
after_import = [m for m in %(sentinels)r if m in sys.modules]


sys.path.insert(0, %(examples)r)
from demo import Net as LeNet  # the seed tutorial's LeNet


def mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    return net


def zoo(name):
    return lambda: mx.gluon.model_zoo.vision.get_model(name, classes=10)


report = {"after_torch": after_torch, "after_import": after_import, "models": {}}
for name, make, shape in [("lenet", LeNet, (16, 1, 28, 28)), ("mlp", mlp, (1, 512)),
                          ("resnet18_v1", zoo("resnet18_v1"), (2, 3, 32, 32)),
                          ("mobilenet1.0", zoo("mobilenet1.0"), (2, 3, 32, 32))]:
    x = mx.nd.array(np.random.RandomState(0).rand(*shape).astype("float32"))
    t0 = time.perf_counter()
    net = make()
    net.initialize(mx.init.Xavier())
    # the seed code's flags, without the lowered tier's background build (not shape inference)
    net.hybridize(static_alloc=True, static_shape=True, backend="default")
    out = net(x)
    out.wait_to_read()
    report["models"][name] = {"seconds": time.perf_counter() - t0, "out": list(out.shape),
                              "meta_runs": sorted({k[0] for k in infer._META_RUNS}),
                              "sentinels": [m for m in %(sentinels)r if m in sys.modules]}
# a first training step: record, backward (with and without a head gradient), Trainer.step
net = LeNet()
net.initialize(mx.init.Xavier())
net.hybridize()
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
x = mx.nd.array(np.random.RandomState(1).rand(4, 1, 28, 28).astype("float32"))
with mx.autograd.record():
    loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(x), mx.nd.array([1, 2, 3, 4]))
loss.backward()
with mx.autograd.record():
    out = net(x)
out.backward(mx.nd.ones(out.shape) * 0.5)
trainer.step(4)
report["train_sentinels"] = [m for m in %(sentinels)r if m in sys.modules]
print(json.dumps(report))
""" % {"sentinels": SENTINELS, "examples": os.path.join(ROOT, "examples")}


def test_first_hybridized_call_makes_no_meta_run() -> None:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _WORKER], capture_output=True, text=True, env=env,
                         timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    # the sentinels mean something only if neither torch nor hybridnet imports them
    assert report["after_torch"] == [] and report["after_import"] == [], report
    expected = {"lenet": [16, 10], "mlp": [1, 2], "resnet18_v1": [2, 10], "mobilenet1.0": [2, 10]}
    for name, r in report["models"].items():
        assert r["out"] == expected[name], (name, r)
        assert r["meta_runs"] == [], f"{name}: shape inference ran {r['meta_runs']} on meta tensors"
        assert r["sentinels"] == [], f"{name}: {r['sentinels']} imported by the first call"
    # torch.autograd.backward's argument checks import them (0.3-0.7 s); backward runs the engine
    assert report["train_sentinels"] == [], f"{report['train_sentinels']} imported by a first training step"
