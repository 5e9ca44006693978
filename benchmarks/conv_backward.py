"""Convolution on small spatial inputs: torch's plain path vs hybridnet's exact fast paths (tap
cropping, the linear form, the tiny-output weight gradient; hybridnet/ops/nn.py), interleaved in
one process by flipping ``hybridnet.ops.nn.FAST_PATHS``.

Per shape: forward (no grad) and forward + backward (input, weight and bias gradients) of the
registered Convolution kernel. End to end: a hybridized resnet18_v1 (classes=10, static_alloc,
static_shape) SGD train step with SoftmaxCrossEntropyLoss at batch 32, 3x32x32.
Run alone: OMP_NUM_THREADS=2 python benchmarks/conv_backward.py [--rounds N]
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Dict

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import interleaved, table  # noqa: E402

import hybridnet as mx  # noqa: E402
from hybridnet import autograd, gluon  # noqa: E402
from hybridnet.ops import nn as nn_ops  # noqa: E402
from hybridnet.ops.registry import get  # noqa: E402

# (input N,C,H,W), out channels, kernel, stride, pad: resnet18's small stages at 3x32x32 and b32
SHAPES = [((32, 64, 8, 8), 64, 3, 1, 1), ((32, 128, 4, 4), 128, 3, 1, 1), ((32, 256, 2, 2), 256, 3, 1, 1),
          ((32, 256, 2, 2), 512, 3, 2, 1), ((32, 512, 2, 2), 512, 3, 1, 1), ((32, 512, 1, 1), 512, 3, 1, 1),
          ((32, 512, 1, 1), 512, 1, 1, 0)]


def with_fast_paths(on: bool, fn: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        nn_ops.FAST_PATHS = on
        try:
            return fn()
        finally:
            nn_ops.FAST_PATHS = True
    return run


def plain_vs_fast(fn: Callable[[], object], number: int, rounds: int) -> Dict[str, float]:
    return interleaved({"plain": with_fast_paths(False, fn), "fast": with_fast_paths(True, fn)},
                       number=number, repeats=rounds)


def conv_rows(rounds: int) -> list:
    conv = get("Convolution").kernel
    rows = []
    for shape, co, k, s, p in SHAPES:
        x = torch.randn(shape, requires_grad=True)
        w = torch.randn((co, shape[1], k, k), requires_grad=True)
        b = torch.randn(co, requires_grad=True)
        attrs = {"kernel": (k, k), "stride": (s, s), "pad": (p, p), "num_filter": co}

        def forward() -> object:
            with torch.no_grad():
                return conv(x, w, b, **attrs)

        def train() -> object:
            y = conv(x, w, b, **attrs)
            return torch.autograd.grad(y, (x, w, b), torch.ones_like(y))

        fw = plain_vs_fast(forward, 5, rounds)
        tr = plain_vs_fast(train, 3, rounds)
        rows.append([f"{shape} -> {co}, k{k} s{s} p{p}", f"{fw['plain'] * 1e3:.2f}", f"{fw['fast'] * 1e3:.2f}",
                     f"{fw['plain'] / fw['fast']:.2f}x", f"{tr['plain'] * 1e3:.2f}", f"{tr['fast'] * 1e3:.2f}",
                     f"{tr['plain'] / tr['fast']:.2f}x"])
    return rows


def resnet_row(rounds: int) -> list:
    net = gluon.model_zoo.vision.get_model("resnet18_v1", classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(np.random.rand(32, 3, 32, 32).astype("float32"))
    label = mx.nd.array(np.random.randint(0, 10, size=32).astype("float32"))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})

    def step() -> None:
        with autograd.record():
            loss = loss_fn(net(x), label)
        loss.backward()
        trainer.step(32)
        mx.nd.waitall()

    t = plain_vs_fast(step, 3, rounds)
    return ["resnet18_v1 b32 3x32x32 train step", "", "", "", f"{t['plain'] * 1e3:.1f}", f"{t['fast'] * 1e3:.1f}",
            f"{t['plain'] / t['fast']:.2f}x"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds per measurement")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    rows = conv_rows(args.rounds) + [resnet_row(args.rounds)]
    print(table(f"Convolution, plain torch path vs fast paths (median ms of {args.rounds} interleaved rounds, "
                f"{torch.get_num_threads()} threads)", rows,
                ["case", "fw plain", "fw fast", "fw speedup", "fw+bw plain", "fw+bw fast", "fw+bw speedup"]))


if __name__ == "__main__":
    main()
