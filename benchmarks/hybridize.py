"""Imperative vs hybridized vs hand-written PyTorch nn.Module on the seed workloads.

Workloads: the d2l MLP 512-256-128-2 at batch 1 (inference), the tutorial's LeNet at batch 16
and 256 (inference and one SGD training step). Prints median ms per call and ratios.
Run alone: python benchmarks/hybridize.py
"""
from __future__ import annotations

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import hybridnet as mx  # noqa: E402
from hybridnet import autograd, gluon, nd  # noqa: E402
from hybridnet.gluon import nn  # noqa: E402
from _timing import interleaved, table  # noqa: E402
from demo import Net  # noqa: E402  (the seed LeNet without its print)


def mlp() -> gluon.HybridBlock:
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    net.initialize()
    return net


class TorchMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(512, 256), torch.nn.Linear(256, 128), torch.nn.Linear(128, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class TorchLeNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(1, 6, 5), torch.nn.Conv2d(6, 16, 5)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc1, self.fc2 = torch.nn.Linear(256, 120), torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, 10, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def lenet(hybrid: bool) -> gluon.HybridBlock:
    net = Net()
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    return net


def gluon_step(net: gluon.HybridBlock, x: nd.NDArray, y: nd.NDArray):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    if net._options.active:  # a user who hybridizes the model hybridizes the loss block too
        loss_fn.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})

    def step() -> None:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
    return step


def torch_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(model(x), y, reduction="none")
        loss.backward(torch.ones_like(loss))
        opt.step()
    return step


def main() -> None:
    rows = []
    x = nd.random.normal(shape=(1, 512))
    eager, hyb = mlp(), mlp()
    hyb.hybridize()
    tm, tx = TorchMLP(), x.to_torch().clone()

    def torch_infer(m, t):
        def run():
            with torch.no_grad():
                return m(t)
        return run
    r = interleaved({"imperative": lambda: eager(x), "hybridized": lambda: hyb(x),
                     "pytorch": torch_infer(tm, tx)}, number=1000, repeats=5)
    rows.append(("MLP b1 inference", r))
    for batch in (16, 256):
        x = nd.random.normal(shape=(batch, 1, 28, 28))
        y = nd.array(np.random.randint(0, 10, size=batch))
        e, h, t = lenet(False), lenet(True), TorchLeNet()
        tx, ty = x.to_torch().clone(), y.to_torch().long()
        n = 200 if batch == 16 else 20
        r = interleaved({"imperative": lambda: e(x), "hybridized": lambda: h(x),
                         "pytorch": torch_infer(t, tx)}, number=n, repeats=5)
        rows.append((f"LeNet b{batch} inference", r))
        e, h, t = lenet(False), lenet(True), TorchLeNet()
        r = interleaved({"imperative": gluon_step(e, x, y), "hybridized": gluon_step(h, x, y),
                         "pytorch": torch_step(t, tx, ty)}, number=n // 2, repeats=5)
        rows.append((f"LeNet b{batch} train step", r))
    out = []
    for name, r in rows:
        out.append((name, f"{r['imperative'] * 1e3:.3f}", f"{r['hybridized'] * 1e3:.3f}", f"{r['pytorch'] * 1e3:.3f}",
                    f"{r['imperative'] / r['hybridized']:.2f}x", f"{r['pytorch'] / r['hybridized']:.2f}x"))
    print(table(f"hybridize benchmark (torch {torch.__version__}, {torch.get_num_threads()} threads; "
                f"median ms per call)", out,
                ["workload", "imperative", "hybridized", "pytorch", "hyb vs imp", "hyb vs torch"]))


if __name__ == "__main__":
    main()
