"""Predict-mode calls of the default hybridized function with and without channels-last
convolution activations (hybridnet/compiler/passes/layout.py), interleaved in one process.

Two copies of each net with the same parameters are hybridized with a bare ``hybridize()`` (no
static flags: the default function serves every call), one compiled with
``passes.layout.ENABLED`` off; both run inference at batch 32. (Training always runs the NCHW
function.) Run alone: OMP_NUM_THREADS=2 python benchmarks/layout.py [--big] [--repeats N]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Callable

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import interleaved, table  # noqa: E402

import hybridnet as mx  # noqa: E402
from hybridnet import gluon  # noqa: E402
from hybridnet.compiler.passes import layout  # noqa: E402
from hybridnet.gluon.model_zoo import vision  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _seed_lenet() -> gluon.HybridBlock:
    spec = importlib.util.spec_from_file_location("hybridnet_demo", os.path.join(ROOT, "examples", "demo.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.Net()


def _pair(make: Callable[[], gluon.HybridBlock], x: mx.nd.NDArray) -> list:
    """[NCHW net, channels-last net]: same parameters, each compiled with the pass off / on."""
    nets = []
    for enabled in (False, True):
        layout.ENABLED = enabled
        mx.random.seed(0)
        net = make()
        net.initialize(mx.init.Xavier())
        net.hybridize()
        net(x).wait_to_read()  # compiles now, under this setting
        nets.append(net)
    layout.ENABLED = True
    for a, b in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        b.set_data(a.data())
    return nets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--big", action="store_true", help="add 3x224x224 inference")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    cases = [("seed LeNet", _seed_lenet, (32, 1, 28, 28)),
             ("resnet18_v1", lambda: vision.get_model("resnet18_v1", classes=10), (32, 3, 32, 32)),
             ("mobilenet1.0", lambda: vision.get_model("mobilenet1.0", classes=10), (32, 3, 32, 32))]
    if args.big:
        cases += [("resnet18_v1", lambda: vision.get_model("resnet18_v1"), (32, 3, 224, 224)),
                  ("mobilenet1.0", lambda: vision.get_model("mobilenet1.0"), (32, 3, 224, 224))]
    rng = np.random.RandomState(0)
    rows = []
    for name, make, shape in cases:
        x = mx.nd.array(rng.rand(*shape).astype(np.float32))
        nchw, cl = _pair(make, x)
        big = shape[2] > 100
        res = interleaved({"nchw": lambda: nchw(x).wait_to_read(), "cl": lambda: cl(x).wait_to_read()},
                          number=1 if big else 5, repeats=3 if big else args.repeats, warmup=1 if big else 3)
        what = f"{name} b{shape[0]} {'x'.join(map(str, shape[1:]))}"
        rows.append((f"{what} inference", f"{res['nchw'] * 1e3:.2f}", f"{res['cl'] * 1e3:.2f}",
                     f"{res['cl'] / res['nchw']:.2f}"))
        print(rows[-1], flush=True)
    print()
    print(table("hybridize() default function, inference: NCHW vs channels-last convolution activations "
                "(median ms)",
                rows, ["workload", "NCHW", "channels-last", "ratio"]))


if __name__ == "__main__":
    main()
