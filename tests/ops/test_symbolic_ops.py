"""Every registered operator through the symbolic paths, from the registry's sample table:
Symbol + compiled Executor == eager (outputs and gradients), a hybridized HybridBlock == eager,
and the node's JSON round-trips with its attribute spellings intact."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import gluon, nd
from hybridnet.ndarray.ndarray import NDArray, invoke
from hybridnet.ops.attrs import format_value
from hybridnet.symbol import Symbol, load_json, sym_invoke, var

from . import harness

CASES = [c for c in harness.all_cases() if not c[1].random and c[3].symbolic]
IDS = [c[0] for c in CASES]


def _inputs(sample, dtype=np.float64):
    return harness.prepare_inputs(sample, dtype)


def _build(op, sample):
    arrays = _inputs(sample)
    names = [f"in{i}" for i in range(len(arrays))]
    syms = [None if a is None else var(n) for n, a in zip(names, arrays)]
    out = sym_invoke(op, syms, dict(sample.attrs), name="node")
    return out, {n: a for n, a in zip(names, arrays) if a is not None}


def _bind(out: Symbol, values: dict, grad: bool):
    args = out.list_arguments()
    aux = out.list_auxiliary_states()
    unknown = [n for n in args + aux if n not in values]
    assert not unknown, f"the symbolic node creates inputs {unknown} the sample does not provide"
    arg_arrays = {n: nd.array(values[n], dtype=values[n].dtype) for n in args}
    grads = {n: nd.zeros(values[n].shape, dtype=values[n].dtype) for n in args
             if grad and np.issubdtype(values[n].dtype, np.floating)}
    aux_arrays = {n: nd.array(values[n], dtype=values[n].dtype) for n in aux}
    return out.bind(mx.cpu(), args=arg_arrays, args_grad=grads or None, aux_states=aux_arrays)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_symbol_executor_matches_eager(case):
    _, op, _, sample = case
    out, values = _build(op, sample)
    exe = _bind(out, values, grad=False)
    got = [o.asnumpy() for o in exe.forward(is_train=bool(sample.train))]
    want = harness.run_eager(op, sample, np.float64)
    assert len(got) == len(want)
    rtol, atol = harness.tolerances(sample, np.float64)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# an Executor differentiates only in training mode (forward(is_train=True)), as in MXNet
GRAD_CASES = [c for c in CASES if harness.is_grad_case(c[1], c[3]) and (c[3].train or not c[1].train_aware)]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_symbol_executor_gradient_matches_autograd(case):
    _, op, _, sample = case
    # zero-dim and zero-size arrays exist only under NumPy shape semantics (the Executor's
    # gradient buffers of such shapes too), as in MXNet
    with mx.np_shape(any(np.ndim(a) == 0 or np.size(a) == 0 for a in sample.inputs if a is not None)):
        _check_executor_gradient(op, sample)


def _check_executor_gradient(op, sample):
    out, values = _build(op, sample)
    exe = _bind(out, values, grad=True)
    outs = exe.forward(is_train=True)
    heads = harness.head_grads_for(op, sample)
    want = harness.autograd_grad(op, sample, heads)
    live = [(o, h) for o, h in zip(exe._out_tensors, heads) if h is not None and o.requires_grad]
    assert live, "a gradient sample with no differentiable output: mark it grad=False"
    exe.backward([NDArray(torch.from_numpy(np.asarray(h, dtype=np.float64)).to(o.dtype)) if h is not None
                  else NDArray(torch.zeros_like(o)) for o, h in zip(exe._out_tensors, heads)])
    names = [f"in{i}" for i in harness.grad_indices(op, sample)]
    for n, w in zip(names, want):
        g = exe.grad_dict.get(n)
        if g is None:
            continue
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6, atol=1e-8)


class _OpBlock(gluon.HybridBlock):
    def __init__(self, op, attrs):
        super().__init__()
        self._op, self._attrs = op, attrs

    def hybrid_forward(self, F, *xs):
        return invoke(self._op, list(xs), dict(self._attrs))


# a HybridBlock is called on at least one array: samples of creation operators (no inputs) are
# left out here (test_no_sample_is_left_out_silently keeps that the only reason)
HYB_CASES = [c for c in CASES if c[3].inputs]


def test_no_sample_is_left_out_silently():
    """Every symbolic sample runs on every symbolic path above: none whose node creates inputs
    the sample does not give (the Executor could not bind it), none with an absent (None)
    input (a HybridBlock is called on arrays), and none without inputs for an operator that
    takes some. A sample like that would make the path fail or go unchecked, so it is listed
    here instead."""
    lacking = []
    for case_id, op, _, sample in CASES:
        out, values = _build(op, sample)
        if any(n not in values for n in out.list_arguments() + out.list_auxiliary_states()):
            lacking.append(case_id)
    assert lacking == []
    assert [c[0] for c in CASES if any(a is None for a in c[3].inputs)] == []
    assert [c[0] for c in CASES if not c[3].inputs and c[1].inputs] == []


@pytest.mark.parametrize("case", HYB_CASES, ids=[c[0] for c in HYB_CASES])
def test_hybridized_block_matches_eager(case):
    _, op, _, sample = case
    arrays = _inputs(sample)
    block = _OpBlock(op, sample.attrs)
    block.hybridize()
    mode = mx.autograd.train_mode() if sample.train else mx.autograd.predict_mode()
    with mode:
        got = block(*[nd.array(a, dtype=a.dtype) for a in arrays])
    got = got if isinstance(got, (list, tuple)) else [got]
    want = harness.run_eager(op, sample, np.float64)
    rtol, atol = harness.tolerances(sample, np.float64)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=rtol, atol=atol)


ATTR_CASES = [c for c in harness.all_cases() if c[3].attrs and c[3].symbolic]


@pytest.mark.parametrize("case", ATTR_CASES, ids=[c[0] for c in ATTR_CASES])
def test_json_round_trip_keeps_attributes(case):
    _, op, _, sample = case
    out, _ = _build(op, sample)
    text = out.tojson()
    back = load_json(text)
    assert back.tojson() == text
    node = back._entries[0][0]
    assert node.op is op
    for k, v in sample.attrs.items():
        assert format_value(node.attrs[k]) == format_value(v), k
