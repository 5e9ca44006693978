"""The compiled graph function vs the same registry kernels called by hand.

Graphs: the seed MLP (512-256-128-2, batch 1) and LeNet (batch 16). Target ratio <= 1.10.
Run alone: python benchmarks/executor.py
"""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hybridnet as mx  # noqa: E402
from hybridnet import sym  # noqa: E402
from hybridnet.ops import registry  # noqa: E402
from _timing import interleaved, table  # noqa: E402

FC = registry.get("FullyConnected").kernel
CONV = registry.get("Convolution").kernel
POOL = registry.get("Pooling").kernel
RELU = registry.get("relu").kernel
ACT = registry.get("Activation").kernel
RESHAPE = registry.get("Reshape").kernel
DOT = registry.get("dot").kernel


def mlp_symbol():
    x = sym.var("data")
    x = sym.Activation(sym.FullyConnected(x, num_hidden=256, name="fc1"), act_type="relu")
    x = sym.Activation(sym.FullyConnected(x, num_hidden=128, name="fc2"), act_type="relu")
    return sym.FullyConnected(x, num_hidden=2, name="fc3")


def mlp_by_hand(data, w1, b1, w2, b2, w3, b3):
    x = ACT(FC(data, w1, b1, num_hidden=256), act_type="relu")
    x = ACT(FC(x, w2, b2, num_hidden=128), act_type="relu")
    return FC(x, w3, b3, num_hidden=2)


def lenet_symbol():
    x = sym.var("data")
    x = sym.Pooling(sym.relu(sym.Convolution(x, kernel=(5, 5), num_filter=6, name="c1")), kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = sym.Pooling(sym.relu(sym.Convolution(x, kernel=(5, 5), num_filter=16, name="c2")), kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = sym.reshape(x, shape=(0, -1))
    x = sym.relu(sym.FullyConnected(x, num_hidden=120, name="f1"))
    x = sym.relu(sym.FullyConnected(x, num_hidden=84, name="f2"))
    return sym.dot(x, sym.var("w3", shape=(10, 84)), transpose_b=True)


def lenet_by_hand(data, c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, w3):
    x = POOL(RELU(CONV(data, c1w, c1b, kernel=(5, 5), num_filter=6)), kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = POOL(RELU(CONV(x, c2w, c2b, kernel=(5, 5), num_filter=16)), kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = RESHAPE(x, shape=(0, -1))
    x = RELU(FC(x, f1w, f1b, num_hidden=120))
    x = RELU(FC(x, f2w, f2b, num_hidden=84))
    return DOT(x, w3, transpose_b=True)


def bench(name, s, by_hand, shape, number):
    exe = s.simple_bind(mx.cpu(), grad_req="null", data=shape)
    for a in exe.arg_arrays:
        a[:] = mx.nd.random.normal(shape=a.shape) * 0.1
    tensors = [a._t for a in exe.arg_arrays]
    fn = exe._compiled.fn
    torch.testing.assert_close(fn(*tensors)[0], by_hand(*tensors))

    def compiled():
        with torch.no_grad():
            return fn(*tensors)

    def hand():
        with torch.no_grad():
            return by_hand(*tensors)

    def executor():
        return exe.forward()
    r = interleaved({"compiled": compiled, "by hand": hand, "Executor.forward": executor}, number=number)
    return (name, f"{r['by hand'] * 1e6:.1f}", f"{r['compiled'] * 1e6:.1f}", f"{r['Executor.forward'] * 1e6:.1f}",
            f"{r['compiled'] / r['by hand']:.3f}")


def main() -> None:
    rows = [bench("MLP 512-256-128-2 b1", mlp_symbol(), mlp_by_hand, (1, 512), 2000),
            bench("LeNet b16", lenet_symbol(), lenet_by_hand, (16, 1, 28, 28), 300)]
    print(table("compiled graph vs kernels by hand (median us per call)", rows,
                ["graph", "by hand", "compiled", "Executor.forward", "compiled / by hand"]))


if __name__ == "__main__":
    main()
