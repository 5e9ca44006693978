"""What hybridnet costs on top of its kernels: each workload of benchmarks/vs_mxnet.py timed
against its kernel floor (issue 27).

For every workload (a fresh process each, hybridized with ``static_alloc=True,
static_shape=True`` as in vs_mxnet.py, warmed up until the lowered tier is in):
* ``call``: the median time of one call (inference, or one SGD training step);
* ``kernels``: the time the same calls spend inside ATen operators (the sum of their self times
  in torch's profiler, per call, less the profiler's own cost per event, measured on a view):
  what the kernels cost, with the dispatcher's small share; where the lowered tier serves
  (``serves``: tier), the self time of its TorchScript program counts as kernels (the oneDNN
  convolutions it runs have no profiler events of their own);
* ``call / kernels``: what the framework adds (Python, graph walking, allocation) as a ratio;
  issue 27's target is <= 1.15;
* ``replay``: the ATen operators one call dispatches (captured below autograd with a
  ``TorchDispatchMode``), called again from a plain Python loop on the same tensors: PyTorch
  running this call's kernels with no framework around them, the floor without the profiler's
  distortion of small calls; ``call / replay`` is what the framework adds over it (rows where the
  lowered tier serves have none: its TorchScript convolutions run below the dispatcher);
* ``GFLOP``: the work the profiler counts (matrix products and ``aten`` forward convolutions;
  oneDNN-fused convolutions and convolution gradients are not counted), and ``at peak``: that work at this machine's measured
  float32 GEMM peak (a torch.mm of 2048x2048 matrices, the same thread count), a lower bound for
  the GEMM-bound layers.
``--plain`` adds every workload hybridized with a bare ``hybridize()`` (the in-place function
serves its predictions). ``first_call`` rows compare the first call after ``hybridize`` (trace, passes, codegen) with the
kernels of one steady call.

Run alone (other processes on the cores distort both columns):
    python benchmarks/floor.py [--threads 2] [--only lenet_b16_infer ...] [--plain] [--markdown]
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

from vs_mxnet import WORKLOADS, build_workload  # noqa: E402
from _timing import table  # noqa: E402


def _gemm_peak(seconds: float = 1.0) -> float:
    """Best float32 GEMM rate (FLOP/s) of torch.mm on 2048x2048 matrices."""
    import torch
    n = 2048
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best, end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t0))
    return best


def _kernel_events(fn, calls: int) -> tuple:
    """(summed self seconds of the ATen operator events, their number, FLOPs) of ``calls`` calls."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        for _ in range(calls):
            fn()
    self_us, events, flops = 0.0, 0, 0
    for e in prof.events():
        # "forward": a lowered tier's TorchScript program, whose oneDNN kernels have no events
        # of their own; its self time is those kernels plus TorchScript's small per-op cost
        if e.name.startswith(("aten::", "mkldnn", "quantized::", "onednn::")) or e.name == "forward":
            self_us += e.self_cpu_time_total
            events += 1
            flops += e.flops or 0
    return self_us / 1e6, events, flops


def _profiler_inflation() -> float:
    """Seconds the profiler adds to one operator event's self time: a view (almost no work)
    timed with and without it."""
    import torch
    x = torch.zeros(4)
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        x.view(-1)
    plain = (time.perf_counter() - t0) / n
    seconds, events, _ = _kernel_events(lambda: x.view(-1), n)
    return max(0.0, seconds / max(events, 1) - plain)


def _kernel_profile(step, calls: int) -> tuple:
    """(seconds inside ATen operators per call, FLOPs per call) over ``calls`` calls, the
    profiler's own cost per event taken out."""
    seconds, events, flops = _kernel_events(step, calls)
    return max(0.0, seconds - events * _profiler_inflation()) / calls, flops / calls


def _run_worker(framework: str, workload: str, repeats: int) -> dict:
    mx, build, step_of = build_workload(framework, workload)
    first = None
    if workload.endswith("first_call"):
        t0 = time.perf_counter()
        net = build()
        step = step_of(net)
        step()
        first = time.perf_counter() - t0
    else:
        net = build()
        step = step_of(net)
    t_end = time.perf_counter() + 3.0
    for _ in range(5):
        step()
    compiled = getattr(net, "_cached_op", None)
    if compiled is not None:
        compiled.latest().wait_for_tier()
    while time.perf_counter() < t_end:
        step()
    serves = "eager" if compiled is None else "compiled"  # training steps: the default function
    if compiled is not None and "_train" not in workload:
        latest = compiled.latest()
        tier = latest.tier
        serves = ("tier" if tier is not None and tier.disabled is None and tier.builds else
                  "plan" if latest.predict_plan is not None else "in-place")
    # a tier's TorchScript program runs its convolutions below the dispatcher: no replay
    replay = None if serves == "tier" else _aten_replay(step)
    t0 = time.perf_counter()
    step()
    number = max(1, int(0.3 / max(time.perf_counter() - t0, 1e-6)))
    seconds, replayed = [], []
    for _ in range(repeats):  # interleaved: drift hits the call and its replay alike
        t0 = time.perf_counter()
        for _ in range(number):
            step()
        seconds.append((time.perf_counter() - t0) / number)
        if replay is not None:
            t0 = time.perf_counter()
            for _ in range(number):
                replay()
            replayed.append((time.perf_counter() - t0) / number)
    kernels, flops = _kernel_profile(step, max(3, min(number, 50)))
    return {"call": first if first is not None else statistics.median(seconds), "kernels": kernels,
            "replay": statistics.median(replayed) if replayed else None,
            "flops": flops, "peak": _gemm_peak(), "serves": serves}


def _aten_replay(step):
    """A function that calls, from Python, the ATen operators one ``step()`` dispatches (the
    same operators on the same tensors, captured below autograd by a dispatch mode): plain
    PyTorch running this call's kernels, with no framework around them."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Capture(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls.append((func, args, kwargs or {}))
            return func(*args, **(kwargs or {}))

    capture = Capture()
    with capture:
        step()
    calls = capture.calls

    def replay():
        with torch.no_grad():
            for func, args, kwargs in calls:
                func(*args, **kwargs)
    return replay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--only", nargs="*", help="run only these workloads")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table (BENCHMARKS.md)")
    ap.add_argument("--plain", action="store_true",
                    help="also time every hybridized workload with a bare hybridize() (no static flags)")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_run_worker(args.worker[0], args.worker[1], int(args.worker[2]))))
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rows = []
    runs = [("hybridnet", w) for w in args.only or WORKLOADS]
    if args.plain:  # eager workloads have no hybridize() to leave bare
        runs += [("hybridnet-plain", w) for w in args.only or WORKLOADS if "_eager_" not in w]
    for framework, w in runs:
        out = subprocess.run([sys.executable, HERE, "--worker", framework, w, str(args.repeats)], capture_output=True,
                             text=True, env=env, timeout=900)
        if out.returncode != 0:
            raise RuntimeError(f"{w} failed:\n{out.stderr[-2000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        at_peak = r["flops"] / r["peak"]
        label = w if framework == "hybridnet" else f"{w} (hybridize())"
        replay = r["replay"]
        rows.append((label, r["serves"], f"{r['call'] * 1e3:.3f}", f"{r['kernels'] * 1e3:.3f}",
                     f"{r['call'] / r['kernels']:.2f}", "-" if replay is None else f"{replay * 1e3:.3f}",
                     "-" if replay is None else f"{r['call'] / replay:.2f}",
                     f"{r['flops'] / 1e9:.3f}", f"{at_peak * 1e3:.3f}"))
        print(f"{label}: call {r['call'] * 1e3:.3f} ms, kernels {r['kernels'] * 1e3:.3f} ms, "
              f"ratio {r['call'] / r['kernels']:.2f}, GEMM peak {r['peak'] / 1e9:.0f} GFLOP/s", flush=True)
    head = ["workload", "serves", "call ms", "kernels ms", "call / kernels", "replay ms", "call / replay",
            "GFLOP", "at peak ms"]
    title = (f"hybridnet against its kernel floor ({args.threads} threads, {time.strftime('%Y-%m-%d')}; "
             f"median ms per call)")
    if args.markdown:
        print(f"\n{title}\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print()
        print(table(title, rows, head))


if __name__ == "__main__":
    main()
