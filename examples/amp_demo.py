"""The demo's LeNet trained with AMP (``amp.init`` + ``amp.scale_loss``) against float32.

Same data, model, optimizer and schedule as ``examples/demo.py``: the first epoch runs eagerly,
the rest hybridized. ``amp.init`` is process-wide, so each precision trains in its own process.
Run: python examples/amp_demo.py [--epochs N] [--dtype bfloat16|float16]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def train(precision: str, epochs: int, batch_size: int) -> dict:
    """Train in this process; ``precision`` is 'float32' or an AMP target dtype."""
    import hybridnet as mx
    from hybridnet import autograd, gluon, nd
    from hybridnet.contrib import amp
    from demo import Net, load_digits_28, evaluate

    if precision != "float32":
        amp.init(target_dtype=precision)
    mx.random.seed(42)
    np.random.seed(42)
    (xtr, ytr), (xte, yte) = load_digits_28()
    train_data = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(xtr), nd.array(ytr)),
                                       batch_size=batch_size, shuffle=True, last_batch="keep")
    test_data = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(xte), nd.array(yte)),
                                      batch_size=256)
    net = Net()
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    schedule = mx.lr_scheduler.FactorScheduler(step=5 * len(train_data), factor=0.5, base_lr=2e-3)
    trainer = gluon.Trainer(net.collect_params(), "adam",
                            {"learning_rate": 2e-3, "lr_scheduler": schedule})
    if precision != "float32":
        amp.init_trainer(trainer)
    history = []
    for epoch in range(epochs):
        if epoch == 1:
            net.hybridize(static_alloc=True, static_shape=True)
        total, n, t0 = 0.0, 0, time.perf_counter()
        for data, label in train_data:
            with autograd.record():
                loss = loss_fn(net(data), label)
                if precision != "float32":  # MXNet's AMP recipe: scale inside record()
                    with amp.scale_loss(loss, trainer) as scaled:
                        autograd.backward(scaled)
            if precision == "float32":
                loss.backward()
            trainer.step(data.shape[0])
            total += loss.astype("float32").sum().asscalar()
            n += data.shape[0]
        history.append({"epoch": epoch + 1, "loss": float(total / n), "accuracy": float(evaluate(net, test_data)),
                        "seconds": time.perf_counter() - t0})
    casts = 0
    if precision != "float32":
        casts = sum(1 for node in net._cached_graph[1]._graph().nodes
                    if node.op is not None and node.op.name == "amp_cast")
    return {"precision": precision, "history": history, "amp_cast_nodes": casts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(train(args.worker, args.epochs, args.batch_size)))
        return
    results = {}
    for precision in ("float32", args.dtype):
        out = subprocess.run([sys.executable, __file__, "--worker", precision, "--epochs",
                              str(args.epochs), "--batch-size", str(args.batch_size)],
                             check=True, capture_output=True, text=True).stdout
        results[precision] = json.loads(out.strip().splitlines()[-1])
    print(f"{'epoch':>5} | {'float32 loss':>12} {'acc':>6} | {args.dtype + ' AMP loss':>18} {'acc':>6}")
    for a, b in zip(results["float32"]["history"], results[args.dtype]["history"]):
        print(f"{a['epoch']:5d} | {a['loss']:12.4f} {a['accuracy']:6.4f} | {b['loss']:18.4f} {b['accuracy']:6.4f}")
    fa = results["float32"]["history"][-1]["accuracy"]
    fb = results[args.dtype]["history"][-1]["accuracy"]
    ta = sum(h["seconds"] for h in results["float32"]["history"])
    tb = sum(h["seconds"] for h in results[args.dtype]["history"])
    print(f"final test accuracy: float32 {fa:.4f}, {args.dtype} AMP {fb:.4f} "
          f"(difference {fb - fa:+.4f}); training time {ta:.1f}s vs {tb:.1f}s; "
          f"amp_cast nodes in the hybridized graph: {results[args.dtype]['amp_cast_nodes']}")
    if fb < 0.97 or abs(fb - fa) > 0.02:
        raise SystemExit(f"AMP demo failed: {args.dtype} accuracy {fb:.4f} vs float32 {fa:.4f}")


if __name__ == "__main__":
    main()
