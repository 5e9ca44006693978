"""Memory: what importing, and what inference or training of a built model, add to a process,
hybridnet against real MXNet 1.9.1 (issue 27's fifth item).

Each configuration runs in a fresh process of either framework (the same worker code, with
``import hybridnet as mx`` or ``import mxnet as mx``, reusing ``vs_mxnet.build_workload``):

* ``python``: RSS of the bare interpreter (after ``import numpy``);
* ``import``: RSS after ``import hybridnet`` / ``import mxnet``, minus ``python``;
* ``model``: RSS after constructing, initializing and hybridizing the model (no call yet);
* ``peak``: the peak RSS over the calls (``VmHWM``, reset after the model is built through
  ``/proc/self/clear_refs``) minus ``model``: what inference or training adds;
* ``end``: RSS after the calls minus ``model`` (what the process keeps);
* ``trim``: ``end`` after glibc's ``malloc_trim(0)`` (freed heap given back): live memory.

The calls: three times ``--calls`` calls (inference or one SGD training step), each followed
(hybridnet) by a wait for a lowered tier built in the background (a wait also ends the automatic
tier's deferral: the next call starts its build), so that the build and whichever function ends
up serving are counted. Hybridize modes: ``plain`` (``hybridize()``), ``alloc``
(``static_alloc=True``), ``static`` (``static_alloc=True, static_shape=True``). Memory is not
timing-sensitive: this can run on a busy machine (RSS still varies by a few MB run to run; the
table shows the median of ``--rounds``).

Real MXNet comes from a side virtualenv (see vs_mxnet.py); without it only hybridnet runs.
Run alone: python benchmarks/memory.py [--rounds 3] [--only resnet18_b32_infer] [--modes static]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

WORKLOADS = ["resnet18_b32_infer", "resnet18_b32_train", "lenet_b256_infer", "lenet_b256_train"]
MODES = {"plain": {}, "alloc": {"static_alloc": True},
         "static": {"static_alloc": True, "static_shape": True}}


def _status(key: str) -> int:
    """A /proc/self/status field in bytes (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        return int(re.search(rf"{key}:\s+(\d+)", f.read()).group(1)) * 1024


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _trim() -> None:
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _run_worker(framework: str, workload: str, mode: str, calls: int) -> dict:
    import numpy  # noqa: F401  (both frameworks need it; not counted as their import)
    python = _status("VmRSS")
    if framework == "hybridnet":
        import hybridnet  # noqa: F401
    else:
        import mxnet  # type: ignore[import-not-found]  # noqa: F401
    imported = _status("VmRSS")
    from vs_mxnet import build_workload
    mx, build, step_of = build_workload(framework + "-plain", workload)
    net = build()  # hybridize() plain; then the mode's flags
    net.hybridize(**MODES[mode])
    step = step_of(net)
    mx.nd.waitall()  # MXNet initializes on its engine, asynchronously
    _trim()
    model = _status("VmRSS")
    _reset_peak()
    compiled = getattr(net, "_cached_op", None)
    for _ in range(3):  # calls, wait for a lowered tier (its build may be deferred to the next call)
        for _ in range(calls):
            step()
        if framework == "hybridnet" and compiled is not None:
            compiled.latest().wait_for_tier()
    peak = _status("VmHWM")
    end = _status("VmRSS")
    _trim()
    trimmed = _status("VmRSS")
    return {"python": python, "import": imported - python, "model": model - imported,
            "peak": peak - model, "end": end - model, "trim": trimmed - model}


def _measure(python: str, framework: str, workload: str, mode: str, calls: int, env: dict) -> dict:
    cmd = [python, HERE, "--worker", framework, workload, mode, str(calls)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{framework} {workload} {mode} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="*", help="run only these workloads")
    ap.add_argument("--modes", nargs="*", default=list(MODES), choices=list(MODES))
    ap.add_argument("--mxnet-python", default=os.environ.get("HYBRIDNET_MXNET_PYTHON", "/tmp/mxvenv/bin/python"))
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        framework, workload, mode, calls = args.worker
        print(json.dumps(_run_worker(framework, workload, mode, int(calls))))
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    mx_env = dict(env, PYTHONPATH=os.path.dirname(HERE))  # real MXNet never sees hybridnet's tree
    frameworks = [("hybridnet", sys.executable, env)]
    if os.path.exists(args.mxnet_python):
        frameworks.append(("mxnet", args.mxnet_python, mx_env))
    else:
        print(f"real MXNet not found at {args.mxnet_python} (see vs_mxnet.py): hybridnet only")
    mb = 1 / 2 ** 20
    rows = []
    for workload in args.only or WORKLOADS:
        for mode in args.modes:
            for name, python, e in frameworks:
                runs = [_measure(python, name, workload, mode, args.calls, e) for _ in range(args.rounds)]
                med = {k: statistics.median(r[k] for r in runs) * mb for k in runs[0]}
                rows.append((workload, mode, name, f"{med['import']:.0f}", f"{med['model']:.0f}",
                             f"{med['peak']:.0f}", f"{med['end']:.0f}", f"{med['trim']:.0f}"))
                print("  ".join(rows[-1]), flush=True)
    from _timing import table
    print()
    print(table(f"RSS in MB, median of {args.rounds} fresh processes ({args.threads} threads; "
                f"3 x ({args.calls} calls, tier wait))", rows,
                ["workload", "hybridize", "framework", "import", "model", "peak added", "end added",
                 "after trim"]))


if __name__ == "__main__":
    main()
