"""Predict-mode tiers: plain eager vs the default compiled function vs each lowered tier.

Workloads: the seed LeNet at batch 16 and 256, resnet18_v1 and mobilenet1.0 at batch 32 on
3x32x32 (``--big`` adds 3x224x224). Tiers: ``eager`` (the block not hybridized), ``default``
(the generated Python function of ``compiler/codegen``), ``MKLDNN`` (frozen TorchScript with
oneDNN fusion), ``inductor`` (torch.compile with freezing; ``--no-inductor`` skips it, it
compiles for seconds per workload) and, for the zoo conv nets, ``MKLDNN-CL`` / ``inductor-CL``
(the same run in channels-last memory: the layout question of issue 12). Prints the median ms per call of interleaved repeats, the speedup
over the default tier and the build time of each tier.
Run alone: python benchmarks/tiers.py [--big] [--no-inductor] [--repeats 7]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import hybridnet as mx  # noqa: E402
from hybridnet.compiler import tiers  # noqa: E402
from hybridnet.compiler.codegen import compile_graph  # noqa: E402
from hybridnet.gluon.model_zoo.vision import get_model  # noqa: E402
from _timing import interleaved, table  # noqa: E402
from demo import Net  # noqa: E402  (the seed LeNet without its print)

WORKLOADS = {
    "lenet_b16": (Net, (16, 1, 28, 28)),
    "lenet_b256": (Net, (256, 1, 28, 28)),
    "resnet18_v1_b32_32": (lambda: get_model("resnet18_v1"), (32, 3, 32, 32)),
    "mobilenet1.0_b32_32": (lambda: get_model("mobilenet1.0"), (32, 3, 32, 32)),
}
BIG = {
    "resnet18_v1_b32_224": (lambda: get_model("resnet18_v1"), (32, 3, 224, 224)),
    "mobilenet1.0_b32_224": (lambda: get_model("mobilenet1.0"), (32, 3, 224, 224)),
}


def run_workload(name: str, make, shape: tuple, args: argparse.Namespace) -> list:
    net = make()
    net.initialize()
    x = mx.nd.random.uniform(shape=shape)
    net(x)
    graph = net(mx.sym.var("data"))._graph()
    variables = graph.variables()
    data = [v for v in variables if v.name == "data"]
    params = [v for v in variables if v.name != "data"]
    table_ = net.collect_params()
    tensors = [x._t] + [table_[v.name].data()._t for v in params]
    default = compile_graph(graph, data + params)

    def run_default() -> tuple:
        with torch.no_grad():
            return default(*tensors)

    fns = {"eager": lambda: net(x).wait_to_read(), "default": run_default}
    builds = {}
    variants = [("MKLDNN", "MKLDNN", False)]
    if len(shape) == 4 and not name.startswith("lenet"):
        variants.append(("MKLDNN-CL", "MKLDNN", True))
    if not args.no_inductor:
        variants.append(("inductor", "inductor", False))
        if len(shape) == 4 and not name.startswith("lenet"):
            variants.append(("inductor-CL", "inductor", True))
    for label, backend, channels_last in variants:
        t0 = time.perf_counter()
        try:
            lowered = tiers.lower(backend, graph, data + params, 1, tensors, channels_last=channels_last)
        except Exception as e:  # noqa: BLE001 - a benchmark reports and goes on
            print(f"{name}: {label} refused: {e}")
            continue
        builds[label] = time.perf_counter() - t0
        fns[label] = (lambda f: lambda: f(tensors))(lowered)
    number = max(1, int(args.budget / max(1e-4, _once(run_default))))
    times = interleaved(fns, number=number, repeats=args.repeats, warmup=2)
    rows = []
    for label, t in times.items():
        rows.append([name, label, f"{t * 1e3:.3f}", f"{times['default'] / t:.2f}x",
                     f"{builds[label]:.2f}" if label in builds else "-"])
    return rows


def _once(fn) -> float:
    fn()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="add the 3x224x224 workloads")
    parser.add_argument("--no-inductor", action="store_true", help="skip torch.compile (slow to build)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per timed sample")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    workloads = dict(WORKLOADS, **(BIG if args.big else {}))
    if args.only:
        workloads = {k: v for k, v in workloads.items() if k in args.only.split(",")}
    rows = []
    for name, (make, shape) in workloads.items():
        rows += run_workload(name, make, shape, args)
    print(table(f"predict-mode tiers (torch {torch.__version__}, {torch.get_num_threads()} threads)",
                rows, ["workload", "tier", "ms/call", "vs default", "build s"]))


if __name__ == "__main__":
    main()
