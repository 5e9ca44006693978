"""Control flow: a tanh RNN written with ``F.contrib.foreach``, eager vs hybridized vs the torch
loop a user would write.

Question: what does a hybridized ``_foreach`` (a Python loop calling the compiled body) cost per
time step over the same loop in plain torch, and how much faster is it than the eager form
(``nd.contrib.foreach``, which dispatches every operator of every step)?

Method: interleaved medians (``_timing.interleaved``) of one forward over a (T, N, C) sequence,
and of forward + backward under ``autograd.record()``. Run it alone on an idle machine:
``python benchmarks/control_flow.py [--steps 50]``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import hybridnet as mx  # noqa: E402
from _timing import interleaved, table  # noqa: E402


class RNN(mx.gluon.HybridBlock):
    def __init__(self, hidden: int, **kw: object):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get("w", shape=(hidden, hidden))
            self.u = self.params.get("u", shape=(hidden, hidden))

    def hybrid_forward(self, F, x, h0, w, u):  # type: ignore[no-untyped-def]
        def step(xt, states):  # type: ignore[no-untyped-def]
            h = F.tanh(F.dot(xt, w, transpose_b=True) + F.dot(states[0], u))
            return h, [h]
        outs, states = F.contrib.foreach(step, x, [h0])
        return outs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--number", type=int, default=20)
    args = ap.parse_args()
    T, N, H = args.steps, args.batch, args.hidden
    x = mx.nd.random.uniform(shape=(T, N, H))
    h0 = mx.nd.zeros((N, H))
    eager = RNN(H, prefix="e_")
    eager.initialize(mx.init.Xavier())
    eager(x, h0)
    hyb = RNN(H, prefix="h_")
    hyb.initialize(mx.init.Xavier())
    hyb(x, h0)
    hyb.hybridize()
    hyb(x, h0)
    tw, tu = (p.data().to_torch().detach().clone() for p in (hyb.w, hyb.u))
    tx, th = x.to_torch(), h0.to_torch()

    def torch_loop() -> torch.Tensor:
        h, outs = th, []
        for t in range(T):
            h = torch.tanh(tx[t] @ tw.t() + h @ tu)
            outs.append(h)
        return torch.stack(outs)

    def train(net: RNN):  # type: ignore[no-untyped-def]
        def run() -> None:
            with mx.autograd.record():
                out = net(x, h0)
            out.backward()
        return run

    def torch_train() -> None:
        tw.requires_grad_(True)
        tu.requires_grad_(True)
        torch_loop().sum().backward()
        tw.requires_grad_(False)
        tu.requires_grad_(False)

    with torch.no_grad():
        fwd = interleaved({"torch": torch_loop, "eager": lambda: eager(x, h0).wait_to_read(),
                           "hybridized": lambda: hyb(x, h0).wait_to_read()}, args.number)
    bwd = interleaved({"torch": torch_train, "eager": train(eager), "hybridized": train(hyb)}, args.number)
    rows = []
    for what, res in (("forward", fwd), ("forward+backward", bwd)):
        for k in ("torch", "eager", "hybridized"):
            rows.append((what, k, f"{res[k] * 1e3:.2f}", f"{res[k] / T * 1e6:.1f}", f"{res[k] / res['torch']:.2f}"))
    print(table(f"foreach RNN, T={T} N={N} H={H}", rows, ["pass", "impl", "ms", "us/step", "x torch"]))


if __name__ == "__main__":
    main()
