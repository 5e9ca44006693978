"""Sparse vs dense embedding update: one SGD step on a 1M x 64 table when a batch touches 1k rows.

* sparse: the gradient is a RowSparseNDArray holding the 1k touched rows; ``lazy_update`` SGD
  (the registered ``sgd_update`` op's row_sparse rule) updates only those rows;
* dense: the same gradient as a dense 1M x 64 array; SGD updates every row.
* also the whole training step (Embedding(sparse_grad=True) forward + backward + Trainer.step)
  against its dense-gradient form.

Prints medians of interleaved runs. Run: ``python benchmarks/sparse_embedding.py [--rows N]``.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hybridnet as mx  # noqa: E402
from hybridnet import autograd, gluon  # noqa: E402
from _timing import interleaved, table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--touched", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.RandomState(0)
    shape = (args.rows, args.dim)
    rows = np.sort(rng.choice(args.rows, args.touched, replace=False))
    values = rng.randn(args.touched, args.dim).astype(np.float32)

    # -- the update alone ------------------------------------------------------------------
    w_sparse = mx.nd.array(rng.randn(*shape).astype(np.float32) * 0.01)
    w_dense = w_sparse.copy()
    g_sparse = mx.nd.sparse.row_sparse_array((values, rows), shape=shape)
    g_dense = g_sparse.tostype("default")
    lazy = mx.optimizer.SGD(learning_rate=0.1, wd=1e-4, lazy_update=True)
    dense = mx.optimizer.SGD(learning_rate=0.1, wd=1e-4)
    times = interleaved({
        "sparse (lazy SGD, row_sparse grad)": lambda: lazy.update(0, w_sparse, g_sparse, None),
        "dense (SGD, dense grad)": lambda: dense.update(0, w_dense, g_dense, None),
    }, number=3, repeats=args.repeats, warmup=1)

    # -- a whole training step ------------------------------------------------------------
    idx = mx.nd.array(rng.choice(args.rows, (args.touched,), replace=False).astype(np.float32))

    def make(sparse_grad: bool):  # type: ignore[no-untyped-def]
        net = gluon.nn.Embedding(args.rows, args.dim, sparse_grad=sparse_grad)
        net.initialize(mx.init.Normal(0.01))
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "wd": 1e-4})

        def step() -> None:
            with autograd.record():
                loss = net(idx).sum()
            loss.backward()
            trainer.step(1)
        return step

    step_times = interleaved({"sparse_grad=True": make(True), "sparse_grad=False": make(False)},
                             number=3, repeats=args.repeats, warmup=1)
    rows_out = [(k, f"{v * 1e3:.3f}") for k, v in times.items()]
    ratio = times["dense (SGD, dense grad)"] / times["sparse (lazy SGD, row_sparse grad)"]
    print(table(f"SGD update of a {args.rows} x {args.dim} table, {args.touched} rows touched "
                f"(median ms, {args.repeats} interleaved runs)", rows_out, ["update", "ms"]))
    print(f"dense / sparse: {ratio:.1f}x")
    print()
    srows = [(k, f"{v * 1e3:.3f}") for k, v in step_times.items()]
    sratio = step_times["sparse_grad=False"] / step_times["sparse_grad=True"]
    print(table("Embedding forward + backward + Trainer.step (median ms)", srows, ["Embedding", "ms"]))
    print(f"dense / sparse: {sratio:.1f}x")


if __name__ == "__main__":
    main()
