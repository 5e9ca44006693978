"""int8 (mx.contrib.quantization) vs float32 inference of the same model, batch 32, 3x32x32.

Workloads: resnet18_v1 and mobilenet1.0 with random weights (BatchNorm statistics from two
training steps), quantized with naive calibration (quantize_net_v2, quantized_dtype='auto');
both hybridized the same way (plain hybridize(), and static_alloc + static_shape). Prints the
median ms of interleaved runs and the float32 / int8 ratio (> 1: int8 faster), plus the cosine
of the int8 outputs to float32. Run alone: OMP_NUM_THREADS=2 python benchmarks/int8.py [--quick]
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


def _pair(name: str, static: bool) -> tuple:
    mx.random.seed(0)
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (32, 3, 32, 32)))
    for _ in range(2):
        with mx.autograd.record():
            out = net(x)
        out.backward()
    qnet = quantization.quantize_net_v2(net, calib_mode="naive",
                                        calib_data=mx.io.NDArrayIter(x.asnumpy(), batch_size=32))
    opts = {"static_alloc": True, "static_shape": True} if static else {}
    net.hybridize(**opts)
    qnet.hybridize(**opts)
    return net, qnet, x


def main() -> None:
    quick = "--quick" in sys.argv
    warnings.simplefilter("ignore")
    rows = []
    for name in ("resnet18_v1", "mobilenet1.0"):
        for static in (False, True):
            net, qnet, x = _pair(name, static)
            a, b = net(x).asnumpy().ravel(), qnet(x).asnumpy().ravel()
            cosine = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
            try:
                t = interleaved({"f32": lambda: net(x).wait_to_read(), "int8": lambda: qnet(x).wait_to_read()},
                                number=5 if quick else 20, repeats=3 if quick else 7)
            except mx.MXNetError as e:  # a float32 tier or plan this machine's torch refuses
                rows.append((name, "static" if static else "plain", "error", "", "", str(e).splitlines()[0][:60]))
                continue
            rows.append((name, "static" if static else "plain", f"{t['f32'] * 1e3:.1f}", f"{t['int8'] * 1e3:.1f}",
                         f"{t['f32'] / t['int8']:.2f}", f"{cosine:.4f}"))
    print(table("int8 vs float32 inference, batch 32, 3x32x32 (median ms)", rows,
                ["model", "hybridize", "float32", "int8", "f32/int8", "cosine"]))


if __name__ == "__main__":
    main()
