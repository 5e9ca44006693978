"""``Block.summary``: a table of layers, output shapes and parameter counts (MXNet's format)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ..ndarray.ndarray import NDArray


def _shape_of(out: Any) -> Any:
    if isinstance(out, NDArray):
        return out.shape
    if isinstance(out, (list, tuple)):
        return [_shape_of(o) for o in out]
    return None


def summary(block: Any, *inputs: Any) -> None:
    """Run ``block(*inputs)`` with hooks on every child and print one row per layer."""
    from .block import HybridBlock
    if isinstance(block, HybridBlock) and block._options.active:
        raise AssertionError("Please first call net.summary() before net.hybridize().")
    rows: "OrderedDict[str, dict]" = OrderedDict()
    seen: set = set()
    hooks = []

    def register(b: Any) -> None:
        def hook(blk: Any, _: Any, out: Any) -> None:
            key = f"{blk.__class__.__name__}-{len(rows)}"  # rows holds "Input" first: layers count from 1
            params, trainable, shared = 0, 0, 0
            for p in blk._reg_params.values():
                n = int(np.prod(p.data().shape))
                params += n
                if id(p) in seen:
                    shared += n
                seen.add(id(p))
                if p.grad_req != "null":
                    trainable += n
            rows[key] = {"shape": _shape_of(out), "params": params, "trainable": trainable, "shared": shared}
        hooks.append(b.register_forward_hook(hook))

    block.apply(register)
    rows["Input"] = {"shape": [_shape_of(i) for i in inputs] if len(inputs) > 1 else _shape_of(inputs[0]),
                     "params": 0, "trainable": 0, "shared": 0}
    try:
        block(*inputs)
    finally:
        for h in hooks:
            h.detach()
    rows.move_to_end("Input", last=False)
    line = "-" * 80
    print(line)
    print("{:>20}  {:>42} {:>15}".format("Layer (type)", "Output Shape", "Param #"))
    print("=" * 80)
    total = trainable = shared = 0
    for name, r in rows.items():
        print("{:>20}  {:>42} {:>15}".format(name, str(r["shape"]), r["params"]))
        total += r["params"]
        trainable += r["trainable"]
        shared += r["shared"]
    print("=" * 80)
    print("Parameters in forward computation graph, duplicate included")
    print(f"   Total params: {total}")
    print(f"   Trainable params: {trainable}")
    print(f"   Non-trainable params: {total - trainable}")
    print(f"Shared params in forward computation graph: {shared}")
    print(f"Unique parameters in model: {total - shared}")
    print(line)
