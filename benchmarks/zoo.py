"""Model-zoo and LSTM workloads: hybridized hybridnet vs the same model written in PyTorch.

Workloads (batch 32): resnet18_v1 and mobilenet1.0 at 3x224x224 and 3x32x32, inference and one
SGD training step; a 2-layer LSTM (256 hidden, input 256, seq 35) forward + backward. The
PyTorch models are written by hand with the same layers; their weights are copied from the
hybridnet model and outputs compared before timing. Prints median ms of interleaved runs.
Run alone (under 3 minutes on 2 idle cores): python benchmarks/zoo.py [--quick]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
import torch
import torch.nn as tnn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hybridnet as mx  # noqa: E402
from hybridnet import autograd, gluon, nd  # noqa: E402
from hybridnet.gluon import rnn  # noqa: E402
from hybridnet.gluon.model_zoo import vision  # noqa: E402
from _timing import interleaved, table  # noqa: E402


# ---- hand-written PyTorch equivalents ----------------------------------------------------------
def _bn(c: int) -> tnn.BatchNorm2d:
    return tnn.BatchNorm2d(c, eps=1e-5, momentum=0.1)  # MXNet momentum 0.9 == torch 0.1


class TorchBasicBlock(tnn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = tnn.Sequential(tnn.Conv2d(cin, cout, 3, stride, 1, bias=False), _bn(cout), tnn.ReLU(),
                                   tnn.Conv2d(cout, cout, 3, 1, 1, bias=False), _bn(cout))
        self.down = None
        if cin != cout or stride != 1:
            self.down = tnn.Sequential(tnn.Conv2d(cin, cout, 1, stride, bias=False), _bn(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = self.down(x) if self.down is not None else x
        return torch.relu(self.body(x) + r)


class TorchResNet18(tnn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        layers: list = [tnn.Conv2d(3, 64, 7, 2, 3, bias=False), _bn(64), tnn.ReLU(), tnn.MaxPool2d(3, 2, 1)]
        cin = 64
        for i, c in enumerate([64, 128, 256, 512]):
            stride = 1 if i == 0 else 2
            layers += [TorchBasicBlock(cin, c, stride), TorchBasicBlock(c, c, 1)]
            cin = c
        layers += [tnn.AdaptiveAvgPool2d(1), tnn.Flatten()]
        self.features = tnn.Sequential(*layers)
        self.output = tnn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(self.features(x))


class TorchMobileNet(tnn.Module):
    def __init__(self, multiplier: float = 1.0, classes: int = 1000) -> None:
        super().__init__()

        def conv(cin: int, cout: int, k: int, s: int, p: int, g: int) -> list:
            return [tnn.Conv2d(cin, cout, k, s, p, groups=g, bias=False), _bn(cout), tnn.ReLU()]

        m = multiplier
        dw = [int(x * m) for x in [32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024]]
        ch = [int(x * m) for x in [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2]
        strides = [1, 2] * 3 + [1] * 5 + [2, 1]
        layers = conv(3, int(32 * m), 3, 2, 1, 1)
        for d, c, s in zip(dw, ch, strides):
            layers += conv(d, d, 3, s, 1, d) + conv(d, c, 1, 1, 0, 1)
        layers += [tnn.AdaptiveAvgPool2d(1), tnn.Flatten()]
        self.features = tnn.Sequential(*layers)
        self.output = tnn.Linear(ch[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(self.features(x))


def _torch_tensors_in_mxnet_order(model: tnn.Module) -> list:
    """Parameters and BN statistics in module order, per BN: weight, bias, mean, var."""
    out = []
    for mod in model.modules():
        if isinstance(mod, (tnn.Conv2d, tnn.Linear)):
            out.append(mod.weight)
            if mod.bias is not None:
                out.append(mod.bias)
        elif isinstance(mod, tnn.BatchNorm2d):
            out += [mod.weight, mod.bias, mod.running_mean, mod.running_var]
    return out


def _copy_weights(net: gluon.HybridBlock, model: tnn.Module) -> None:
    ours = list(net.collect_params().values())
    theirs = _torch_tensors_in_mxnet_order(model)
    assert len(ours) == len(theirs), (len(ours), len(theirs))
    with torch.no_grad():
        for p, t in zip(ours, theirs):
            t.copy_(torch.from_numpy(p.data().asnumpy()).reshape(t.shape))


# ---- workloads ---------------------------------------------------------------------------------
def _gluon_train(net: gluon.HybridBlock, x: nd.NDArray, y: nd.NDArray):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})

    def step() -> None:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
    return step


def _torch_train(model: tnn.Module, x: torch.Tensor, y: torch.Tensor):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        model.train()
        opt.zero_grad(set_to_none=False)
        loss = tnn.functional.cross_entropy(model(x), y, reduction="none")
        loss.backward(torch.ones_like(loss))
        opt.step()
    return step


def _torch_infer(model: tnn.Module, x: torch.Tensor):
    def run() -> torch.Tensor:
        model.eval()
        with torch.no_grad():
            return model(x)
    return run


def vision_rows(name: str, torch_cls, size: int, batch: int, repeats: int) -> list:
    mx.random.seed(0)
    net = vision.get_model(name, classes=1000)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = nd.array(np.random.RandomState(0).randn(batch, 3, size, size).astype(np.float32))
    y = nd.array(np.random.RandomState(1).randint(0, 1000, size=batch))
    net(x)
    model = torch_cls()
    _copy_weights(net, model)
    tx, ty = x.to_torch().clone(), y.to_torch().long()
    model.eval()
    with torch.no_grad():
        diff = float((model(tx) - net(x).to_torch()).abs().max())
    if diff > 1e-2:
        raise AssertionError(f"{name}: the PyTorch model does not match ({diff})")
    rows = []
    r = interleaved({"hybridized": lambda: net(x), "pytorch": _torch_infer(model, tx)},
                    number=1 if size >= 224 else 3, repeats=repeats, warmup=1)
    rows.append((f"{name} {batch}x3x{size}x{size} inference", r))
    r = interleaved({"hybridized": _gluon_train(net, x, y), "pytorch": _torch_train(model, tx, ty)},
                    number=1, repeats=repeats, warmup=1)
    rows.append((f"{name} {batch}x3x{size}x{size} train step", r))
    return rows


def lstm_rows(repeats: int) -> list:
    T, N, C, H = 35, 32, 256, 256
    mx.random.seed(0)
    layer = rnn.LSTM(H, num_layers=2, input_size=C)
    layer.initialize()
    layer.hybridize(static_alloc=True, static_shape=True)
    x = nd.array(np.random.RandomState(0).randn(T, N, C).astype(np.float32))
    x.attach_grad()
    model = tnn.LSTM(C, H, num_layers=2)
    with torch.no_grad():
        for k in range(2):
            for ours, theirs in (("i2h_weight", "weight_ih"), ("h2h_weight", "weight_hh"),
                                 ("i2h_bias", "bias_ih"), ("h2h_bias", "bias_hh")):
                getattr(model, f"{theirs}_l{k}").copy_(getattr(layer, f"l{k}_{ours}").data().to_torch())
    tx = x.to_torch().clone().requires_grad_(True)
    with torch.no_grad():
        diff = float((model(tx)[0] - layer(x).to_torch()).abs().max())
    if diff > 1e-4:
        raise AssertionError(f"LSTM: the PyTorch model does not match ({diff})")

    def ours() -> None:
        with autograd.record():
            loss = layer(x).sum()
        loss.backward()

    def theirs() -> None:
        model.zero_grad(set_to_none=False)
        tx.grad = None
        model(tx)[0].sum().backward()
    r = interleaved({"hybridized": ours, "pytorch": theirs}, number=3, repeats=repeats, warmup=2)
    return [(f"LSTM 2x{H} seq{T} b{N} fwd+bwd", r)]


def main() -> None:
    quick = "--quick" in sys.argv
    repeats = 3
    t0 = time.time()
    rows = []
    for name, cls in (("resnet18_v1", TorchResNet18), ("mobilenet1.0", TorchMobileNet)):
        for size in ((32,) if quick else (32, 224)):
            rows += vision_rows(name, cls, size, 32, repeats)
    rows += lstm_rows(repeats)
    out = [(n, f"{r['hybridized'] * 1e3:.1f}", f"{r['pytorch'] * 1e3:.1f}",
            f"{r['pytorch'] / r['hybridized']:.2f}x") for n, r in rows]
    print(table(f"model zoo / LSTM benchmark (torch {torch.__version__}, {torch.get_num_threads()} threads; "
                f"median ms per call, interleaved)", out,
                ["workload", "hybridized", "pytorch", "speed vs torch"]))
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
