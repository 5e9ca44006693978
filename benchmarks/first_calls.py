"""The first calls after ``hybridize``, and what a background tier build costs a neighbour
(issue 27, item 4b), hybridnet against real MXNet 1.9.1.

``first``: each fresh process builds the model (hybridized with the seed code's
``static_alloc=True, static_shape=True``), then times its first ``--calls`` calls one by one
(the first includes trace, compile and, in hybridnet, the predict plan; a lowered tier may be
built in the background meanwhile). hybridnet and MXNet processes alternate; the table shows the
median over processes of the total of the first calls, of the first call alone and of the
calls after it, in wall time and in the process's CPU time (all its threads: less sensitive to
other processes on a shared machine; MXNet's engine threads count too).

``neighbour`` (hybridnet only): one process serves model A (resnet18_v1 b32, predict plan) call
after call, alone and while model B's oneDNN tier (the seed LeNet b256, whose tier measured
faster than its plan) builds in the background, at the lowest thread priority (as the library
builds it) and at normal priority, rounds interleaved in that one process (less noisy than
comparing processes): A's median call time in each, and the build's wall time. A build holds
the GIL for much of its run, so no priority makes it free for A.

Timing on a shared 2-core machine is noisy: medians over ``--rounds`` processes (rounds) each;
``--threads 1`` makes CPU times steadier (no OpenMP spinning while a sibling thread waits).
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
    seconds, cpu = [], []
    for _ in range(calls):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        seconds.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)  # every thread of the process: a build's too
    return {"seconds": seconds, "cpu": cpu}


def _neighbour(rounds: int) -> dict:
    """In one process: model A (resnet18_v1 b32, predict plan) serving call after call, alone and
    while model B's oneDNN tier builds in the background (at the lowest thread priority, as the
    library builds it, and at normal priority), rounds interleaved. A's median ms per call in
    each, and the build's wall time."""
    import statistics as st

    import torch
    from hybridnet.compiler import tiers
    from vs_mxnet import build_workload
    nets = {}
    for name, workload in (("a", "resnet18_b32_infer"), ("b", "lenet_b256_infer")):
        _, build, step_of = build_workload("hybridnet-plain", workload)
        net = build()
        net.hybridize(static_alloc=True)  # the plan only: B's tier is built below, by hand
        nets[name] = (net, step_of(net))
    step_a = nets["a"][1]
    for _ in range(5):
        step_a()
    net_b, step_b = nets["b"]
    step_b()
    op = net_b._cached_op.latest()
    tensors = [torch.rand(256, 1, 28, 28)] + [p.data()._t for p in net_b._cached_op.params]

    def build_b():
        return tiers.lower("MKLDNN", op.graph, op._inputs, 1, tensors, timed=True, baseline=op.predict_plan)
    calls: dict = {"alone": [], "build, lowest priority": [], "build, normal priority": []}
    builds: dict = {"build, lowest priority": [], "build, normal priority": []}
    for _ in range(rounds):
        for mode in calls:
            job = None if mode == "alone" else tiers.BackgroundLowering(build_b, low_priority="lowest" in mode)
            t_start, times = time.perf_counter(), []
            while (job is not None and not job.done()) or (job is None and len(times) < 15):
                t0 = time.perf_counter()
                step_a()
                times.append(time.perf_counter() - t0)
            if job is not None:
                builds[mode].append(time.perf_counter() - t_start)
            calls[mode].append(st.median(times))
    return {"calls": {k: st.median(v) for k, v in calls.items()},
            "builds": {k: st.median(v) for k, v in builds.items()}}


def _measure(python: str, args: list, env: dict) -> list:
    out = subprocess.run([python, HERE, "--worker", *args], capture_output=True, text=True, env=env,
                         timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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
            result = _neighbour(int(rest[0]))
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
        for name, results in runs.items():
            for kind in ("seconds", "cpu"):
                samples = [r[kind] for r in results]
                row = [name, "wall" if kind == "seconds" else "cpu",
                       f"{statistics.median(sum(s[:first]) for s in samples) * ms:.1f}",
                       f"{statistics.median(s[0] for s in samples) * ms:.1f}",
                       f"{statistics.median(sum(s[1:first]) for s in samples) * ms:.1f}",
                       f"{statistics.median(max(s[1:first]) for s in samples) * ms:.1f}"]
                if args.calls > first:
                    row += [f"{statistics.median(sum(s[first:]) for s in samples) * ms:.1f}",
                            f"{statistics.median(max(s[first:]) for s in samples) * ms:.1f}"]
                rows.append(tuple(row))
        head = ["framework", "time", f"calls 1-{first}", "call 1", f"calls 2-{first}", f"slowest of 2-{first}"]
        if args.calls > first:
            head += [f"calls {first + 1}-{args.calls}", "slowest of those"]
        print(table(f"{args.workload}: the first calls after hybridize(static_alloc, static_shape), "
                    f"ms, median of {args.rounds} fresh processes ({args.threads} threads)", rows, head))
    if args.only in (None, "neighbour"):
        result = _measure(sys.executable, ["neighbour", str(args.rounds)], env)
        alone = result["calls"]["alone"]
        rows = [(mode, f"{t * ms:.2f}", f"{t / alone:.2f}", f"{result['builds'].get(mode, 0.0):.2f}")
                for mode, t in result["calls"].items()]
        print(table(f"resnet18_v1 b32 predictions (A) while LeNet b256's oneDNN tier (B) builds in the "
                    f"background: A's median ms per call, median of {args.rounds} interleaved rounds "
                    f"in one process", rows, ["A's calls", "ms", "vs alone", "build wall s"]))


if __name__ == "__main__":
    main()
