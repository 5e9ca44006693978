"""Training throughput: the seed LeNet step (eager / hybridized / plain PyTorch + torch.optim.SGD)
and DataLoader throughput with 0 and 2 workers.
Run alone: python benchmarks/train.py
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hybridize import TorchLeNet, gluon_step, lenet, torch_step  # noqa: E402
from _timing import interleaved, table  # noqa: E402

import hybridnet as mx  # noqa: E402
from hybridnet import gluon, nd  # noqa: E402


def loader_throughput(num_workers: int, n: int = 4096, batch: int = 64) -> float:
    data = np.random.rand(n, 1, 28, 28).astype(np.float32)
    label = np.random.randint(0, 10, n).astype(np.float32)
    ds = gluon.data.ArrayDataset(data, label)
    loader = gluon.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=num_workers)
    for _ in loader:  # warm up (starts workers)
        break
    t0 = time.perf_counter()
    count = 0
    for x, _ in loader:
        count += x.shape[0]
    return count / (time.perf_counter() - t0)


def main() -> None:
    rows = []
    for batch in (16, 256):
        x = nd.random.normal(shape=(batch, 1, 28, 28))
        y = nd.array(np.random.randint(0, 10, size=batch))
        tx, ty = x.to_torch().clone(), y.to_torch().long()
        n = 100 if batch == 16 else 10
        r = interleaved({"eager": gluon_step(lenet(False), x, y), "hybridized": gluon_step(lenet(True), x, y),
                         "pytorch": torch_step(TorchLeNet(), tx, ty)}, number=n, repeats=5)
        rows.append((f"LeNet step b{batch}", f"{r['eager'] * 1e3:.3f}", f"{r['hybridized'] * 1e3:.3f}",
                     f"{r['pytorch'] * 1e3:.3f}", f"{r['pytorch'] / r['hybridized']:.2f}x"))
    print(table("training step (median ms)", rows, ["workload", "eager", "hybridized", "pytorch", "torch / hyb"]))
    lrows = [(f"num_workers={w}", f"{loader_throughput(w):.0f}") for w in (0, 2)]
    print(table("DataLoader throughput (samples/s, 1x28x28 float32, batch 64)", lrows, ["loader", "samples/s"]))


if __name__ == "__main__":
    main()
