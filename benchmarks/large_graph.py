"""A very large -symbol.json: load, first forward and second forward, hybridnet vs real MXNet
1.9.1 (issue 24: a 100k-node graph loaded and ran its first forward 3x slower than MXNet).

The graph is a chain of ``--nodes`` cheap operators (``_plus_scalar``, ``relu``,
``_mul_scalar``, ``tanh`` in turn) on a (4, 8) input, written once as MXNet's JSON. Each
measurement runs in a fresh process of either framework, alternating round after round: load
(``sym.load`` + ``SymbolBlock`` over it), the first forward (shape inference, passes, code
generation and the kernels) and a second forward. Medians per framework and the ratio
hybridnet / MXNet (below 1: hybridnet faster).

Real MXNet comes from a side virtualenv (never a dependency), as for vs_mxnet.py:
    python3 -m venv /tmp/mxvenv && /tmp/mxvenv/bin/pip install mxnet==1.9.1 "numpy<1.24"
Run alone: python benchmarks/large_graph.py [--nodes 100000] [--rounds 3] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))

_CHAIN = [("_plus_scalar", {"scalar": "0.5"}), ("relu", {}), ("_mul_scalar", {"scalar": "0.99"}), ("tanh", {})]


def write_chain(path: str, nodes: int) -> None:
    """MXNet 1.9.1's JSON for a chain of ``nodes`` operators after one variable ``data``."""
    out = [{"op": "null", "name": "data", "inputs": []}]
    for i in range(nodes):
        op, attrs = _CHAIN[i % len(_CHAIN)]
        node = {"op": op, "name": f"n{i}", "inputs": [[i, 0, 0]]}
        if attrs:
            node["attrs"] = attrs
        out.append(node)
    doc = {"nodes": out, "arg_nodes": [0], "node_row_ptr": list(range(nodes + 2)),
           "heads": [[nodes, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}}
    with open(path, "w") as f:
        json.dump(doc, f)


def _run_worker(framework: str, path: str) -> dict:
    if framework == "hybridnet":
        import hybridnet as mx
    else:
        import mxnet as mx  # type: ignore[import-not-found,no-redef]
    import numpy as np
    x = mx.nd.array(np.random.RandomState(0).rand(4, 8).astype("float32"))
    t0 = time.perf_counter()
    sym = mx.sym.load(path)
    block = mx.gluon.SymbolBlock(sym, [mx.sym.var("data")])
    t1 = time.perf_counter()
    block(x).wait_to_read()
    t2 = time.perf_counter()
    block(x).wait_to_read()
    t3 = time.perf_counter()
    return {"load": t1 - t0, "first": t2 - t1, "second": t3 - t2}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mxnet-python", default=os.environ.get("HYBRIDNET_MXNET_PYTHON", "/tmp/mxvenv/bin/python"))
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_run_worker(*args.worker)))
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    frameworks = {"hybridnet": (sys.executable, env)}
    if os.path.exists(args.mxnet_python):
        frameworks["mxnet"] = (args.mxnet_python, dict(env, PYTHONPATH=""))
    else:
        print(f"real MXNet not found at {args.mxnet_python}: hybridnet only")
    samples: dict = {fw: {"load": [], "first": [], "second": []} for fw in frameworks}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "chain-symbol.json")
        write_chain(path, args.nodes)
        for _ in range(args.rounds):
            for fw, (python, fw_env) in frameworks.items():
                out = subprocess.run([python, HERE, "--worker", fw, path], capture_output=True, text=True,
                                     env=fw_env, timeout=1800)
                if out.returncode != 0:
                    raise RuntimeError(f"{fw} failed:\n{out.stderr[-2000:]}")
                for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items():
                    samples[fw][k].append(v)
    print(f"{args.nodes}-node chain, {args.threads} thread(s), median seconds of {args.rounds} rounds")
    for stage in ("load", "first", "second"):
        med = {fw: statistics.median(samples[fw][stage]) for fw in frameworks}
        line = "  ".join(f"{fw} {v:.3f}" for fw, v in med.items())
        ratio = f"  ratio {med['hybridnet'] / med['mxnet']:.2f}" if "mxnet" in med else ""
        print(f"{stage:7s} {line}{ratio}")


if __name__ == "__main__":
    main()
