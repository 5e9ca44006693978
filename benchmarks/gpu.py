"""hybridnet on a CUDA device: resnet18_v1 eager vs hybridized vs ``static_alloc=True,
static_shape=True``, inference and one SGD training step. Medians of interleaved repeats;
``wait_to_read`` synchronises the device, so each call is timed to its end.

Run alone on a machine with CUDA: python benchmarks/gpu.py [--batch 32] [--size 224]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved, table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure")
        return
    import hybridnet as mx
    from hybridnet import autograd, gluon, nd
    from hybridnet.gluon.model_zoo import vision
    ctx = mx.gpu(0)
    rng = np.random.default_rng(0)
    x = nd.array(rng.standard_normal((args.batch, 3, args.size, args.size)).astype(np.float32), ctx=ctx)
    label = nd.array(rng.integers(0, 1000, args.batch).astype(np.float32), ctx=ctx)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    variants = {}
    for name, flags in (("eager", None), ("hybridized", {}), ("static", {"static_alloc": True, "static_shape": True})):
        net = vision.get_model("resnet18_v1")
        net.initialize(mx.init.Xavier(), ctx=ctx)
        if flags is not None:
            net.hybridize(**flags)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})

        def infer(net=net):
            net(x).wait_to_read()

        def train(net=net, trainer=trainer):
            with autograd.record():
                loss = loss_fn(net(x), label)
            loss.backward()
            trainer.step(args.batch)
            loss.wait_to_read()
        variants[name] = (infer, train)
    rows = []
    for what, idx in (("inference", 0), ("train step", 1)):
        med = interleaved({k: v[idx] for k, v in variants.items()}, number=5, repeats=args.repeats)
        rows.append((what, *(f"{med[k] * 1e3:.2f}" for k in variants),
                     f"{med['eager'] / med['hybridized']:.2f}x"))
    print(table(f"resnet18_v1 b{args.batch} 3x{args.size}x{args.size} on {torch.cuda.get_device_name(0)} "
                f"(median ms per call)", rows, ["", "eager", "hybridized", "static", "hybridize speedup"]))


if __name__ == "__main__":
    main()
