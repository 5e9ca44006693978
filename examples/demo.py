"""hybridnet demo: train the seed tutorial's LeNet on real handwritten digits, eager then
hybridized; export, re-import with SymbolBlock.imports, and plot the training curves.

Data: scikit-learn's bundled 8x8 digits (no download), upscaled to 28x28.
Run: python examples/demo.py [--epochs N] [--out DIR]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import hybridnet as mx
from hybridnet import autograd, gluon, nd
from hybridnet.gluon import nn


class Net(gluon.HybridBlock):
    """The seed tutorial's LeNet (without its debugging print)."""

    def __init__(self, **kwargs):
        super(Net, self).__init__(**kwargs)
        with self.name_scope():
            self.conv1 = nn.Conv2D(6, kernel_size=5)
            self.pool1 = nn.MaxPool2D(pool_size=2)
            self.conv2 = nn.Conv2D(16, kernel_size=5)
            self.pool2 = nn.MaxPool2D(pool_size=2)
            self.fc1 = nn.Dense(120)
            self.fc2 = nn.Dense(84)
            self.fc3_weight = self.params.get('fc3_weight', shape=(10, 84))

    def hybrid_forward(self, F, x, fc3_weight):
        x = self.pool1(F.relu(self.conv1(x)))
        x = self.pool2(F.relu(self.conv2(x)))
        x = x.reshape((0, -1))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.dot(x, fc3_weight, transpose_b=True)


def load_digits_28(seed: int = 0):
    """scikit-learn's digits upscaled to 1x28x28 in [0, 1]; an 80/20 stratified split."""
    from sklearn.datasets import load_digits
    import torch
    d = load_digits()
    images = torch.from_numpy(d.images.astype(np.float32) / 16.0)[:, None]
    images = torch.nn.functional.interpolate(images, size=(28, 28), mode="bilinear", align_corners=False)
    x, y = images.numpy(), d.target.astype(np.float32)
    rng = np.random.RandomState(seed)
    test_idx = np.concatenate([rng.permutation(np.where(y == c)[0])[: int(0.2 * (y == c).sum())] for c in range(10)])
    train_mask = np.ones(len(y), bool)
    train_mask[test_idx] = False
    return (x[train_mask], y[train_mask]), (x[test_idx], y[test_idx])


def evaluate(net, loader) -> float:
    metric = mx.metric.Accuracy()
    for data, label in loader:
        metric.update([label], [net(data)])
    return metric.get()[1]


def train_epoch(net, loader, trainer, loss_fn, progress):
    """One pass over ``loader``; returns (mean loss, epoch seconds, per-step seconds)."""
    total, n, steps, t0 = 0.0, 0, [], time.perf_counter()
    for data, label in progress(loader):
        s0 = time.perf_counter()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        total += loss.sum().asscalar()
        steps.append(time.perf_counter() - s0)
        n += data.shape[0]
    nd.waitall()
    return total / n, time.perf_counter() - t0, steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=20, help="total epochs (the first runs eagerly)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--out", default="demo-output")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    try:
        from tqdm import tqdm

        def progress(it, **kw):
            return tqdm(it, leave=False, **kw)
    except ImportError:
        def progress(it, **kw):
            return it

    mx.random.seed(42)
    np.random.seed(42)
    (xtr, ytr), (xte, yte) = load_digits_28()
    print(f"digits: {len(ytr)} training and {len(yte)} test images, 1x28x28")
    train = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(xtr), nd.array(ytr)),
                                  batch_size=args.batch_size, shuffle=True, last_batch="keep")
    test = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(xte), nd.array(yte)),
                                 batch_size=256)

    net = Net()
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    schedule = mx.lr_scheduler.FactorScheduler(step=5 * len(train), factor=0.5, base_lr=2e-3)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 2e-3, "lr_scheduler": schedule})

    history, step_times = [], {"eager": [], "hybridized": []}
    for epoch in range(args.epochs):
        mode = "eager" if epoch == 0 else "hybridized"
        if epoch == 1:
            net.hybridize(static_alloc=True, static_shape=True)
        loss, seconds, steps = train_epoch(net, train, trainer, loss_fn,
                                           lambda it: progress(it, desc=f"epoch {epoch + 1} ({mode})"))
        # the first step of each mode pays for deferred init / tracing: leave it out of the medians
        step_times[mode].extend(steps[1:])
        acc = evaluate(net, test)
        history.append((loss, acc, seconds, mode))
        print(f"epoch {epoch + 1:2d} [{mode:10s}] loss {loss:.4f}  test accuracy {acc:.4f}  time {seconds:.2f}s")

    eager_step = float(np.median(step_times["eager"]))
    hyb_step = float(np.median(step_times["hybridized"])) if step_times["hybridized"] else float("nan")
    print(f"median training step: eager {eager_step * 1e3:.2f} ms, hybridized {hyb_step * 1e3:.2f} ms "
          f"-> hybridize speedup {eager_step / hyb_step:.2f}x")
    final_acc = history[-1][1]
    print(f"final test accuracy: {final_acc:.4f}")

    prefix = os.path.join(args.out, "lenet")
    net.export(prefix, epoch=args.epochs)
    sym_file, params_file = f"{prefix}-symbol.json", f"{prefix}-{args.epochs:04d}.params"
    print(f"exported {sym_file} and {params_file}")
    net2 = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    x = nd.array(xte)
    p1, p2 = net(x).asnumpy(), net2(x).asnumpy()
    same = bool((p1.argmax(1) == p2.argmax(1)).all()) and np.allclose(p1, p2, rtol=1e-4, atol=1e-5)
    print(f"re-imported model predictions match: {same} (max abs diff {np.abs(p1 - p2).max():.2e})")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax1 = plt.subplots(figsize=(7, 4))
        epochs = np.arange(1, len(history) + 1)
        ax1.plot(epochs, [h[0] for h in history], "o-", color="tab:red", label="training loss")
        ax1.set_xlabel("epoch (1 = eager, then hybridized)")
        ax1.set_ylabel("training loss")
        ax2 = ax1.twinx()
        ax2.plot(epochs, [h[1] for h in history], "s-", color="tab:blue", label="test accuracy")
        ax2.set_ylabel("test accuracy")
        fig.legend(loc="center", bbox_to_anchor=(0.5, 0.5))
        ax1.set_title("hybridnet LeNet on digits")
        fig.tight_layout()
        png = os.path.join(args.out, "training_curves.png")
        fig.savefig(png, dpi=100)
        print(f"wrote {png}")
    except ImportError:
        print("matplotlib not installed: skipping the training-curve plot")

    if final_acc < 0.97 or not same:
        raise SystemExit(f"demo failed: accuracy {final_acc:.4f} (need >= 0.97), predictions match: {same}")


if __name__ == "__main__":
    main()
