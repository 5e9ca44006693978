"""Update operators written in place (``nd.*_update(..., out=weight)``, as the optimizers call
them) give the same weights and states as the pure kernel (no ``out``), for every registry
sample of every operator that can write its ``out=`` buffers (``OpDef.writes_out``)."""
from __future__ import annotations

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.ndarray.ndarray import invoke
from hybridnet.ops import registry

IN_PLACE_OPS = sorted(op.name for op in registry.all_ops() if op.writes_out)


def test_the_optimizer_kernels_write_in_place():
    for name in ("sgd_update", "sgd_mom_update", "mp_sgd_update", "mp_sgd_mom_update", "nag_mom_update",
                 "adam_update", "rmsprop_update", "multi_sgd_mom_update", "preloaded_multi_mp_sgd_update"):
        assert name in IN_PLACE_OPS


def _weight_slots(op, sample):
    n = len(sample.inputs)
    if not op.variadic:
        return [0]
    count = sample.attrs["num_weights"]
    extra = 2 if op.name.startswith("preloaded_") else 0
    stride = (n - extra) // count
    return list(range(0, n - extra, stride))


@pytest.mark.parametrize("opname", IN_PLACE_OPS)
def test_in_place_equals_pure(opname):
    op = registry.get(opname)
    for sample in op.samples():
        def arrays():
            return [mx.nd.array(np.asarray(a), dtype=np.asarray(a).dtype) for a in sample.inputs]
        pure_in, place_in = arrays(), arrays()
        pure = invoke(op, pure_in, dict(sample.attrs))
        pure = pure if isinstance(pure, list) else [pure]
        slots = _weight_slots(op, sample)
        outs = [place_in[k] for k in slots]
        invoke(op, place_in, dict(sample.attrs), out=outs if op.variadic else outs[0])
        for k, p in zip(slots, pure):
            np.testing.assert_allclose(place_in[k].asnumpy(), p.asnumpy(), rtol=1e-6, atol=1e-7)
        for k, (a, b) in enumerate(zip(pure_in, place_in)):   # states: the same in-place updates
            if k not in slots:
                np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-6, atol=1e-7)
        ref = sample.ref(*[np.asarray(a) for a in sample.inputs], **sample.attrs)
        ref = ref if isinstance(ref, (list, tuple)) else [ref]
        for k, r in zip(slots, ref):
            np.testing.assert_allclose(place_in[k].asnumpy(), np.asarray(r, dtype=place_in[k].dtype),
                                       rtol=1e-5, atol=1e-6)
