"""hybridnet vs real MXNet 1.9.1 on the same Gluon code, interleaved (issue 12's baseline).

Each measurement runs in a fresh process of either framework (the same worker code below, with
``import hybridnet as mx`` or ``import mxnet as mx``); processes alternate between the two
frameworks round after round, and the table shows medians over everything and the ratio
hybridnet / MXNet (below 1: hybridnet is faster). Both run hybridized with
``static_alloc=True, static_shape=True`` (the seed code's flags; in hybridnet they select the
predict plan and the lowered oneDNN tier) and the same thread count. ``--plain`` adds both
frameworks with a bare ``hybridize()`` (hybridnet's default tier, the generated function, against
MXNet's default CachedOp). Each worker warms up for 3 s first.

Workloads: the seed MLP 512-256-128-2 at batch 1; the seed LeNet at batch 16 and 256 (inference
and one SGD training step), its first hybridized call (build + deferred init + trace + compile +
run) in a fresh process and in a warm one (``warm_first_call``: the process has already built
and run an MLP and a LeNet made of Gluon's layers, so only the per-graph work is timed), its
first training step in a fresh process (``train_first_call``: build + trace + compile + forward,
backward and SGD update), and at batch 16 without
``hybridize`` (``eager``: imperative NDArray calls); resnet18_v1 and mobilenet1.0 at batch 32 on 3x32x32 (inference; resnet18_v1
also a training step). ``--big`` adds the 3x224x224 inputs; ``--numpy-mode`` a LeNet made of
Gluon's layers only, in nd mode and under ``npx.set_np()`` with mx.np arrays (inference and a
training step): NumPy mode should cost what nd mode costs, in either framework. ``--int8`` adds
resnet18_v1 and mobilenet1.0 at batch 32 on 3x32x32 quantized by each framework's own
``mx.contrib.quantization.quantize_net_v2`` (naive calibration, quantized_dtype='auto', BatchNorm
statistics from two training steps first), then hybridized as the others, except that MXNet's int8
net always runs a plain ``hybridize()`` (with static_alloc, MXNet 1.9.1 fails on the second call:
"We can't generate TBlob for MKLDNN data").

Real MXNet comes from a side virtualenv (never a dependency):
    python3 -m venv /tmp/mxvenv && /tmp/mxvenv/bin/pip install mxnet==1.9.1 "numpy<1.24"
Run alone: python benchmarks/vs_mxnet.py [--rounds 3] [--big] [--mxnet-python PATH]
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

WORKLOADS = ["mlp_b1_infer", "lenet_b16_infer", "lenet_b16_train", "lenet_b256_infer",
             "lenet_b256_train", "lenet_b16_first_call", "lenet_b16_warm_first_call",
             "lenet_b16_train_first_call", "lenet_b16_eager_infer",
             "lenet_b16_eager_train", "resnet18_b32_infer", "resnet18_b32_train", "mobilenet_b32_infer",
             "mobilenet_b32_train"]
BIG = ["resnet18_b32_224_infer", "mobilenet_b32_224_infer"]
# the same layer-only LeNet in nd and in NumPy mode (issue 22: np mode as fast as nd mode)
# int8 inference (--int8): each framework's mx.contrib.quantization.quantize_net_v2 (naive calibration on
# the timed batch, quantized_dtype='auto') of the same random-weight model
INT8 = ["resnet18_b32_int8_infer", "mobilenet_b32_int8_infer"]
NUMPY_MODE = ["layers_lenet_b16_infer", "layers_lenet_b16_np_infer", "layers_lenet_b16_train",
              "layers_lenet_b16_np_train"]


# ---- the worker: runs in either framework's interpreter ---------------------------------------
def build_workload(framework: str, workload: str):
    """``(mx, build, step_of)`` for ``workload`` in ``framework``: ``build()`` makes the hybridized
    net, ``step_of(net)`` the callable one timed call runs (inference or one SGD step). Shared
    with benchmarks/floor.py, which times the same calls against their kernels."""
    if framework.startswith("hybridnet"):
        import hybridnet as mx
    else:
        import mxnet as mx  # type: ignore[import-not-found,no-redef]
    import numpy as np
    gluon, nn, autograd = mx.gluon, mx.gluon.nn, mx.autograd

    class LeNet(gluon.HybridBlock):
        """The seed tutorial's LeNet (examples/demo.py), written once for both frameworks."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.conv1 = nn.Conv2D(6, kernel_size=5)
                self.pool1 = nn.MaxPool2D(pool_size=2)
                self.conv2 = nn.Conv2D(16, kernel_size=5)
                self.pool2 = nn.MaxPool2D(pool_size=2)
                self.fc1 = nn.Dense(120)
                self.fc2 = nn.Dense(84)
                self.fc3_weight = self.params.get("fc3_weight", shape=(10, 84))

        def hybrid_forward(self, F, x, fc3_weight):
            x = self.pool1(F.relu(self.conv1(x)))
            x = self.pool2(F.relu(self.conv2(x)))
            x = x.reshape((0, -1))
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return F.dot(x, fc3_weight, transpose_b=True)

    def mlp():
        net = nn.HybridSequential()
        net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
        return net

    def zoo(name):
        return mx.gluon.model_zoo.vision.get_model(name, classes=10)

    def lenet_layers():
        """LeNet from Gluon's layers only: the same code runs in nd and in NumPy mode."""
        net = nn.HybridSequential()
        net.add(nn.Conv2D(6, kernel_size=5, activation="relu"), nn.MaxPool2D(pool_size=2),
                nn.Conv2D(16, kernel_size=5, activation="relu"), nn.MaxPool2D(pool_size=2),
                nn.Dense(120, activation="relu"), nn.Dense(84, activation="relu"), nn.Dense(10))
        return net

    rng = np.random.RandomState(0)
    name = workload
    numpy_mode = "_np_" in name  # MXNet's NumPy interface: npx.set_np(), mx.np arrays
    array = mx.nd.array
    if numpy_mode:
        mx.npx.set_np()
        array = mx.np.array
    if name.startswith("mlp"):
        make, shape = mlp, (1, 512)
    elif name.startswith("layers_lenet"):
        make, shape = lenet_layers, (int(name.split("_")[2][1:]), 1, 28, 28)
    elif name.startswith("lenet"):
        make, shape = LeNet, (int(name.split("_")[1][1:]), 1, 28, 28)
    elif name.startswith("resnet18"):
        make = lambda: zoo("resnet18_v1")  # noqa: E731
        shape = (32, 3, 224, 224) if "_224_" in name else (32, 3, 32, 32)
    else:
        make = lambda: zoo("mobilenet1.0")  # noqa: E731
        shape = (32, 3, 224, 224) if "_224_" in name else (32, 3, 32, 32)
    mode = "train" if "_train" in name else "infer"  # *_first_call: the first call of that mode
    eager = "_eager_" in name
    x = array(rng.rand(*shape).astype("float32"))
    label = array(rng.randint(0, 2 if name.startswith("mlp") else 10, size=shape[0]).astype("float32"))

    def build():
        net = make()
        net.initialize(mx.init.Xavier())
        if "_int8_" in name:  # BatchNorm statistics of real activations, then MXNet's int8 graph
            for _ in range(2):
                with autograd.record():
                    out = net(x)
                out.backward()
            from importlib import import_module
            quantization = import_module(mx.__name__ + ".contrib.quantization")
            net = quantization.quantize_net_v2(net, quantized_dtype="auto", calib_mode="naive",
                                               calib_data=mx.io.NDArrayIter(x.asnumpy(), batch_size=shape[0]),
                                               num_calib_examples=shape[0])
        if eager:
            pass  # imperative: every call dispatches its operators one by one
        elif framework.endswith("-plain") or ("_int8_" in name and framework == "mxnet"):
            # no flags: each framework's default (MXNet 1.9.1's quantized SymbolBlock fails its second
            # static_alloc call: "We can't generate TBlob for MKLDNN data"; its int8 runs plain)
            net.hybridize()
        else:
            net.hybridize(static_alloc=True, static_shape=True)
        return net

    def step_of(net):
        if mode != "train":
            def infer():
                net(x).wait_to_read()
            return infer
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})

        def train():
            with autograd.record():
                loss = loss_fn(net(x), label)
            loss.backward()
            trainer.step(shape[0])
            mx.nd.waitall()
        return train
    return mx, build, step_of


def _run_worker(framework: str, workload: str, repeats: int) -> dict:
    mx, build, step_of = build_workload(framework, workload)
    if workload.endswith("first_call"):
        if "_warm_" in workload:  # other models first: libraries loaded, kernels and caches warm
            for other in ("mlp_b1_infer", "layers_lenet_b16_infer", "layers_lenet_b16_train"):
                _, build_other, step_of_other = build_workload(framework, other)
                step_of_other(build_other())()
        t0 = time.perf_counter()
        step_of(build())()
        return {"seconds": [time.perf_counter() - t0]}
    net = build()
    step = step_of(net)
    # warm up for 5 calls and at least 3 s: caches settle, and hybridnet's lowered tier, built in
    # the background after the first static-shape call, swaps in as it would for a user (or is
    # left out); on big inputs its build outlasts the 3 s, so wait for it: steady state is timed
    t_end = time.perf_counter() + 3.0
    for _ in range(5):
        step()
    compiled = getattr(net, "_cached_op", None)
    if framework.startswith("hybridnet") and compiled is not None:
        compiled.latest().wait_for_tier()
    while time.perf_counter() < t_end:
        step()
    number = max(1, int(0.3 / max(_time_one(step), 1e-6)))
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            step()
        seconds.append((time.perf_counter() - t0) / number)
    return {"seconds": seconds}


def _time_one(step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


# ---- the driver ---------------------------------------------------------------------------------
def _measure(python: str, framework: str, workload: str, repeats: int, env: dict) -> list:
    cmd = [python, HERE, "--worker", framework, workload, str(repeats)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{framework} {workload} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--big", action="store_true", help="add the 3x224x224 workloads")
    ap.add_argument("--int8", action="store_true",
                    help="add int8 (quantize_net_v2) resnet18_v1 and mobilenet1.0 inference")
    ap.add_argument("--numpy-mode", action="store_true",
                    help="add a layer-only LeNet in nd and in NumPy mode (npx.set_np())")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mxnet-python", default=os.environ.get("HYBRIDNET_MXNET_PYTHON", "/tmp/mxvenv/bin/python"))
    ap.add_argument("--only", nargs="*", help="run only these workloads")
    ap.add_argument("--plain", action="store_true",
                    help="also run both frameworks with plain hybridize() (no static flags)")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        framework, workload, repeats = args.worker
        print(json.dumps(_run_worker(framework, workload, int(repeats))))
        return
    if not os.path.exists(args.mxnet_python):
        print(f"real MXNet not found at {args.mxnet_python}; make the side venv (see the docstring) "
              f"or pass --mxnet-python. Skipping.")
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    mx_env = dict(env, PYTHONPATH="")  # real MXNet must never see hybridnet's tree
    workloads = args.only or (WORKLOADS + (BIG if args.big else []) + (NUMPY_MODE if args.numpy_mode else [])
                              + (INT8 if args.int8 else []))
    rows = []
    for w in workloads:
        samples: dict = {"hybridnet": [], "hybridnet-plain": [], "mxnet": [], "mxnet-plain": []}
        reps = 1 if w.endswith("first_call") else args.repeats
        rounds = args.rounds * (3 if w.endswith("first_call") else 1)
        for _ in range(rounds):
            samples["hybridnet"] += _measure(sys.executable, "hybridnet", w, reps, env)
            if args.plain:
                samples["hybridnet-plain"] += _measure(sys.executable, "hybridnet-plain", w, reps, env)
            samples["mxnet"] += _measure(args.mxnet_python, "mxnet", w, reps, mx_env)
            if args.plain:
                samples["mxnet-plain"] += _measure(args.mxnet_python, "mxnet-plain", w, reps, mx_env)
        hyb, mxn = statistics.median(samples["hybridnet"]), statistics.median(samples["mxnet"])
        row = [w, f"{hyb * 1e3:.3f}", f"{mxn * 1e3:.3f}", f"{hyb / mxn:.2f}"]
        if args.plain:
            plain, mx_plain = (statistics.median(samples[k]) for k in ("hybridnet-plain", "mxnet-plain"))
            row[1:1] = [f"{plain * 1e3:.3f}"]
            row[3:3] = [f"{mx_plain * 1e3:.3f}"]
            row.append(f"{plain / mx_plain:.2f}")
        rows.append(tuple(row))
        print(f"{w}: hybridnet {hyb * 1e3:.3f} ms, mxnet {mxn * 1e3:.3f} ms, ratio {hyb / mxn:.2f}",
              flush=True)
    sys.path.insert(0, os.path.dirname(HERE))
    from _timing import table
    print()
    head = ["workload", "hybridnet", "mxnet", "ratio"]
    if args.plain:
        head = ["workload", "hybridnet hybridize()", "hybridnet static", "mxnet hybridize()", "mxnet static",
                "ratio static", "ratio hybridize()"]
    print(table(f"hybridnet vs MXNet 1.9.1 ({args.threads} threads; median ms per call; ratio < 1: "
                f"hybridnet faster)", rows, head))


if __name__ == "__main__":
    main()
