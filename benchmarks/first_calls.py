"""The first calls after ``hybridize``, and what a background tier build costs a neighbour
(issue 27, item 4b), hybridnet against real MXNet 1.9.1.

``first``: each fresh process builds the model (hybridized with the seed code's
``static_alloc=True, static_shape=True``), then times its first ``--calls`` calls one by one
(the first includes trace, compile and, in hybridnet, the predict plan; a lowered tier may be
built in the background meanwhile). hybridnet and MXNet processes alternate; the table shows the
median over processes of the total of the first calls, of the first call alone and of the
calls after it.

``neighbour`` (hybridnet only): one process serves model A (resnet18_v1 b32, static flags)
call after call while model B (the seed LeNet b256, static flags, whose oneDNN tier measured
faster than its plan) makes its first predictions, which may start B's tier build in the
background. The table shows A's median call time in the ``--calls`` calls after B's first
prediction, against A alone (B never called), alternating between processes: what a tier build
for one model costs another.

Timing on a shared 2-core machine is noisy: medians over ``--rounds`` processes each.
Run alone: python benchmarks/first_calls.py [--rounds 5] [--calls 20] [--only first]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))


def _first(framework: str, workload: str, calls: int) -> dict:
    from vs_mxnet import build_workload
    mx, build, step_of = build_workload(framework, workload)
    net = build()
    mx.nd.waitall()
    step = step_of(net)
    seconds = []
    for _ in range(calls):
        t0 = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - t0)
    return {"seconds": seconds}


def _neighbour(with_b: bool, calls: int) -> dict:
    from vs_mxnet import build_workload
    _, build_a, step_of_a = build_workload("hybridnet", "resnet18_b32_infer")
    _, build_b, step_of_b = build_workload("hybridnet", "lenet_b256_infer")
    step_a = step_of_a(build_a())
    step_b = step_of_b(build_b())
    for _ in range(5):
        step_a()
    if with_b:
        for _ in range(3):  # B's first predictions: plan, then (policy allowing) its tier build
            step_b()
    seconds = []
    for _ in range(calls):
        t0 = time.perf_counter()
        step_a()
        seconds.append(time.perf_counter() - t0)
    return {"seconds": seconds}


def _measure(python: str, args: list, env: dict) -> list:
    out = subprocess.run([python, HERE, "--worker", *args], capture_output=True, text=True, env=env,
                         timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workload", default="resnet18_b32_infer")
    ap.add_argument("--only", choices=["first", "neighbour"])
    ap.add_argument("--mxnet-python", default=os.environ.get("HYBRIDNET_MXNET_PYTHON", "/tmp/mxvenv/bin/python"))
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        kind, *rest = args.worker
        if kind == "first":
            result = _first(rest[0], rest[1], int(rest[2]))
        else:
            result = _neighbour(rest[0] == "1", int(rest[1]))
        print(json.dumps(result))
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    mx_env = dict(env, PYTHONPATH=os.path.dirname(HERE))  # real MXNet never sees hybridnet's tree
    from _timing import table
    ms = 1e3
    if args.only in (None, "first"):
        frameworks = [("hybridnet", sys.executable, env)]
        if os.path.exists(args.mxnet_python):
            frameworks.append(("mxnet", args.mxnet_python, mx_env))
        else:
            print(f"real MXNet not found at {args.mxnet_python} (see vs_mxnet.py): hybridnet only")
        runs: dict = {name: [] for name, *_ in frameworks}
        for _ in range(args.rounds):
            for name, python, e in frameworks:
                runs[name].append(_measure(python, ["first", name, args.workload, str(args.calls)], e))
        first = min(20, args.calls)  # issue 27's window; later calls (where a deferred build runs) apart
        rows = []
        for name, samples in runs.items():
            row = [name, f"{statistics.median(sum(s[:first]) for s in samples) * ms:.1f}",
                   f"{statistics.median(s[0] for s in samples) * ms:.1f}",
                   f"{statistics.median(sum(s[1:first]) for s in samples) * ms:.1f}",
                   f"{statistics.median(max(s[1:first]) for s in samples) * ms:.1f}"]
            if args.calls > first:
                row += [f"{statistics.median(sum(s[first:]) for s in samples) * ms:.1f}",
                        f"{statistics.median(max(s[first:]) for s in samples) * ms:.1f}"]
            rows.append(tuple(row))
        head = ["framework", f"calls 1-{first}", "call 1", f"calls 2-{first}", f"slowest of 2-{first}"]
        if args.calls > first:
            head += [f"calls {first + 1}-{args.calls}", "slowest of those"]
        print(table(f"{args.workload}: the first calls after hybridize(static_alloc, static_shape), "
                    f"ms, median of {args.rounds} fresh processes ({args.threads} threads)", rows, head))
    if args.only in (None, "neighbour"):
        alone, beside = [], []
        for _ in range(args.rounds):
            alone.append(statistics.median(_measure(sys.executable, ["neighbour", "0", str(args.calls)], env)))
            beside.append(statistics.median(_measure(sys.executable, ["neighbour", "1", str(args.calls)], env)))
        a, b = statistics.median(alone), statistics.median(beside)
        print(table(f"resnet18_v1 b32 (A) beside LeNet b256 (B) making its first predictions: A's median ms "
                    f"per call over {args.calls} calls, median of {args.rounds} processes", [
                        ("A alone", f"{a * ms:.2f}"), ("A after B's first predictions", f"{b * ms:.2f}"),
                        ("ratio", f"{b / a:.2f}")], ["", "ms"]))


if __name__ == "__main__":
    main()
