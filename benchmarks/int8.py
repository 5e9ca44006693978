"""int8 (mx.contrib.quantization) vs float32 inference of the same model, batch 32, 3x32x32.

Workloads: resnet18_v1 and mobilenet1.0 with random weights (BatchNorm statistics from two
training steps), quantized with naive calibration (quantize_net_v2, quantized_dtype='auto').
Each model runs hybridized three ways, float32 and int8 alike: plain ``hybridize()``,
``static_alloc=True`` (the predict plan) and ``static_alloc=True, static_shape=True``; all six
are timed in interleaved rounds. Prints the median ms, each int8 setting's speedup over the
float32 predict plan's best (the faster of static_alloc and static_alloc + static_shape: the
"float32 floor" int8 must beat) and over float32 hybridized the same way, and the cosine of the
int8 outputs to float32 (on the random inputs) and to the unfused int8 graph (eager).
Run alone: OMP_NUM_THREADS=2 python benchmarks/int8.py [--quick]
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hybridnet as mx  # noqa: E402
from hybridnet.contrib import quantization  # noqa: E402
from hybridnet.gluon.model_zoo import vision  # noqa: E402
from _timing import interleaved, table  # noqa: E402

MODES = {"plain": {}, "static_alloc": {"static_alloc": True},
         "static": {"static_alloc": True, "static_shape": True}}


def _nets(name: str) -> tuple:
    """{mode: float32 net}, {mode: int8 net}, input, unfused int8 output (eager)."""
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (32, 3, 32, 32)))
    f32, i8 = {}, {}
    eager = None
    for mode, opts in MODES.items():
        mx.random.seed(0)
        net = vision.get_model(name, classes=10)
        net.initialize(mx.init.Xavier())
        for _ in range(2):
            with mx.autograd.record():
                out = net(x)
            out.backward()
        qnet = quantization.quantize_net_v2(net, calib_mode="naive",
                                            calib_data=mx.io.NDArrayIter(x.asnumpy(), batch_size=32))
        if eager is None:
            eager = qnet(x).asnumpy().ravel()
        net.hybridize(**opts)
        qnet.hybridize(**opts)
        f32[mode], i8[mode] = net, qnet
    return f32, i8, x, eager


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def main() -> None:
    quick = "--quick" in sys.argv
    warnings.simplefilter("ignore")
    rows = []
    for name in ("resnet18_v1", "mobilenet1.0"):
        f32, i8, x, eager = _nets(name)
        fns = {}
        for mode in MODES:
            fns[f"f32 {mode}"] = (lambda n: lambda: n(x).wait_to_read())(f32[mode])
            fns[f"int8 {mode}"] = (lambda n: lambda: n(x).wait_to_read())(i8[mode])
        try:
            t = interleaved(fns, number=5 if quick else 20, repeats=5 if quick else 9, warmup=10)
        except mx.MXNetError as e:  # a float32 tier or plan this machine's torch refuses
            rows.append((name, "error", str(e).splitlines()[0][:60], "", "", "", "", ""))
            continue
        floor = min(t["f32 static_alloc"], t["f32 static"])
        for mode in MODES:
            ref = f32[mode](x).asnumpy().ravel()
            out = i8[mode](x).asnumpy().ravel()
            rows.append((name, mode, f"{t[f'f32 {mode}'] * 1e3:.1f}", f"{t[f'int8 {mode}'] * 1e3:.1f}",
                         f"{floor / t[f'int8 {mode}']:.2f}", f"{t[f'f32 {mode}'] / t[f'int8 {mode}']:.2f}",
                         f"{_cos(ref, out):.4f}", f"{_cos(eager, out):.4f}"))
    print(table("int8 vs float32 inference, batch 32, 3x32x32 (median ms; speedups > 1: int8 faster)", rows,
                ["model", "hybridize", "float32", "int8", "floor/int8", "same-mode f32/int8", "cos f32",
                 "cos unfused"]))


if __name__ == "__main__":
    main()
