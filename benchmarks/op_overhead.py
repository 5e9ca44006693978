"""Imperative overhead: us per call of small ``mx.nd``/``mx.np`` operators vs the raw torch call.

Question: how much does hybridnet's eager dispatch (generated function -> ``invoke`` -> kernel
-> NDArray) add on top of the torch kernel it runs? Target: <= 3 us per call.

Method: for each case, timed blocks of ``--number`` calls of the torch call and of the mx.nd
call alternate (interleaved, so drift hits both sides alike), ``--repeat`` times; per-call
medians are reported, overhead = median(mx.nd) - median(torch). Run it alone on an idle
machine: ``python benchmarks/op_overhead.py``.

A second table times ``autograd.backward`` through a sum of ~1000 attached variables against
``torch.autograd.backward`` on the same graph (the per-variable cost of grad_req handling).
A third compares each mx.np operator with the same mx.nd one (interleaved the same way).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import hybridnet as mx  # noqa: E402


def _per_call(fn: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number * 1e6


def compare(raw: Callable[[], object], ours: Callable[[], object], number: int, repeat: int) -> tuple:
    """(median us torch, median us ours) over interleaved repeats."""
    for _ in range(max(100, number // 10)):  # warm-up
        raw()
        ours()
    a, b = [], []
    for _ in range(repeat):
        a.append(_per_call(raw, number))
        b.append(_per_call(ours, number))
    return statistics.median(a), statistics.median(b)


def cases() -> list:
    torch.manual_seed(0)
    x = mx.nd.array(torch.randn(1, 512).numpy())
    y = mx.nd.array(torch.randn(1, 512).numpy())
    w = mx.nd.array(torch.randn(512, 512).numpy() * 0.05)
    b = mx.nd.array(torch.randn(512).numpy())
    tx, ty, tw, tb = x.to_torch(), y.to_torch(), w.to_torch(), b.to_torch()
    out: list = [
        ("add (1,512): x + y", lambda: torch.add(tx, ty), lambda: x + y),
        ("add (1,512): nd.elemwise_add", lambda: torch.add(tx, ty), lambda: mx.nd.elemwise_add(x, y)),
        ("add scalar (1,512): x + 1", lambda: torch.add(tx, 1.0), lambda: x + 1.0),
        ("relu (1,512): nd.relu", lambda: torch.relu(tx), lambda: mx.nd.relu(x)),
    ]
    fc: Optional[Callable] = getattr(mx.nd, "FullyConnected", None)
    if fc is not None:
        lin = torch.nn.functional.linear
        out.append(("FullyConnected 1x512 . 512x512", lambda: lin(tx, tw, tb),
                    lambda: fc(x, w, b, num_hidden=512)))
    else:
        print("(FullyConnected not registered yet: row skipped)")
    xg = mx.nd.array(torch.randn(1, 512).numpy())
    xg.attach_grad()
    tg = xg.to_torch()

    def raw_nograd() -> object:
        with torch.no_grad():
            return torch.relu(tg)
    out.append(("relu on attached array, not recording", raw_nograd, lambda: mx.nd.relu(xg)))
    xn, yn = x.as_np_ndarray(), y.as_np_ndarray()
    out += [
        ("np.add (1,512): mx.np.add(x, y)", lambda: torch.add(tx, ty), lambda: mx.np.add(xn, yn)),
        ("np add (1,512): x + y (mx.np arrays)", lambda: torch.add(tx, ty), lambda: xn + yn),
        ("npx.relu (1,512)", lambda: torch.relu(tx), lambda: mx.npx.relu(xn)),
    ]
    return out


def np_vs_nd_cases() -> list:
    """(name, the mx.nd call, the same operation through mx.np): issue 22 asks an eager np
    operator to cost no more than the nd one."""
    torch.manual_seed(0)
    x = mx.nd.array(torch.randn(1, 512).numpy())
    y = mx.nd.array(torch.randn(1, 512).numpy())
    xn, yn = x.as_np_ndarray(), y.as_np_ndarray()
    return [("add: nd.broadcast_add vs np.add", lambda: mx.nd.broadcast_add(x, y), lambda: mx.np.add(xn, yn)),
            ("add: nd x + y vs np x + y", lambda: x + y, lambda: xn + yn),
            ("add scalar: nd x + 1 vs np x + 1", lambda: x + 1.0, lambda: xn + 1.0),
            ("relu: nd.relu vs npx.relu", lambda: mx.nd.relu(x), lambda: mx.npx.relu(xn)),
            ("sum: nd.sum vs np.sum", lambda: mx.nd.sum(x), lambda: mx.np.sum(xn))]


def backward_case(n_vars: int, number: int, repeat: int) -> tuple:
    vs = [mx.nd.ones((4,)) for _ in range(n_vars)]
    for v in vs:
        v.attach_grad()
    ts = [torch.ones(4, requires_grad=True) for _ in range(n_vars)]

    def ours() -> None:
        with mx.autograd.record():
            s = vs[0] * 2.0
            for v in vs[1:]:
                s = s + v
        s.backward()

    def raw() -> None:
        s = ts[0] * 2.0
        for t in ts[1:]:
            s = s + t
        torch.autograd.backward([s], [torch.ones_like(s)])
        for t in ts:  # grad_req='write' semantics: fresh gradients each time
            t.grad = None

    return compare(raw, ours, number, repeat)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--number", type=int, default=2000, help="calls per timed block")
    p.add_argument("--repeat", type=int, default=15, help="interleaved timed blocks per side")
    p.add_argument("--vars", type=int, default=1000, help="variables in the backward case (0: skip)")
    args = p.parse_args()
    torch.set_num_threads(1)
    print(f"hybridnet {mx.__version__}, torch {torch.__version__}, 1 thread; median of {args.repeat} "
          f"interleaved blocks of {args.number} calls\n")
    rows = []
    for name, raw, ours in cases():
        t_raw, t_ours = compare(raw, ours, args.number, args.repeat)
        rows.append((name, t_raw, t_ours))
    w = max(len(r[0]) for r in rows)
    print(f"{'case':<{w}}  {'torch us':>9}  {'mx us':>9}  {'overhead us':>11}  {'ratio':>6}")
    for name, t_raw, t_ours in rows:
        print(f"{name:<{w}}  {t_raw:9.2f}  {t_ours:9.2f}  {t_ours - t_raw:11.2f}  {t_ours / t_raw:6.2f}")
    rows = [(name,) + compare(nd_fn, np_fn, args.number, args.repeat) for name, nd_fn, np_fn in np_vs_nd_cases()]
    w = max(len(r[0]) for r in rows)
    print(f"\n{'mx.np vs mx.nd':<{w}}  {'mx.nd us':>9}  {'mx.np us':>9}  {'ratio':>6}")
    for name, t_nd, t_np in rows:
        print(f"{name:<{w}}  {t_nd:9.2f}  {t_np:9.2f}  {t_np / t_nd:6.2f}")
    if args.vars:
        n = max(1, args.number // 200)
        t_raw, t_ours = backward_case(args.vars, n, max(5, args.repeat // 3))
        print(f"\nrecord + backward through {args.vars} variables (ms): torch {t_raw / 1e3:.2f}, "
              f"hybridnet {t_ours / 1e3:.2f}, per variable overhead {(t_ours - t_raw) / args.vars:.2f} us")


if __name__ == "__main__":
    main()
