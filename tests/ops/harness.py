"""Registry-driven operator checks (PyTorch OpInfo / JAX lax_test style).

Every registered operator carries ``Sample``s (NumPy inputs, attributes, a NumPy reference).
The functions here run one sample through one execution path and return NumPy results, so
further runners (Symbol, hybridized graph) can be added next to ``run_eager`` and compared
with the same checks:

- ``run_eager(op, sample, dtype)``: the generated ``mx.nd`` function on NDArrays;
- ``reference(op, sample, dtype)``: the sample's NumPy reference on the same inputs;
- ``autograd_grad(op, sample, head_grads)``: gradients through ``mx.autograd`` (float64);
- ``numeric_grad(op, sample, head_grads)``: central finite differences (float64);
- ``meta_shapes(op, sample)``: shapes/dtypes from running the kernel on torch "meta" tensors
  (or from the operator's explicit ``infer_shape`` rule).

Input dtypes: float64 sample inputs are converted to the run's dtype; inputs of any other dtype
(float32, int, bool) are kept as given, so a sample can pin a dtype on purpose.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch

import hybridnet as mx
from hybridnet.ndarray import _FUNCS
from hybridnet.ndarray.ndarray import NDArray, invoke
from hybridnet.ops import registry
from hybridnet.ops.registry import OpDef, Sample

from finite_differences import central_differences

__all__ = ["all_cases", "ops_without_samples", "prepare_inputs", "run_eager", "reference",
           "autograd_grad", "numeric_grad", "meta_shapes", "grad_indices", "head_grads_for",
           "check_forward", "check_grad", "check_shapes", "tolerances"]

# Finite differences: step, and how many coordinates per input are probed at most.
FD_EPS = 1e-6
FD_MAX_COORDS = 32


# ---- the sample table ------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def all_cases() -> tuple:
    """(case id, op, sample index, sample) for every sample of every registered operator."""
    cases = []
    for op in sorted(registry.all_ops(), key=lambda o: o.name):
        if op.samples is None:
            continue
        for i, s in enumerate(op.samples()):
            cases.append((f"{op.name}-{i}", op, i, s))
    return tuple(cases)


def ops_without_samples() -> list:
    """Operators the sample table does not cover. Control-flow operators (``num_subgraphs``) run
    subgraphs, which a NumPy sample cannot give: tests/ops/test_control_flow.py covers them."""
    return sorted(op.name for op in registry.all_ops() if op.samples is None and not op.num_subgraphs)


# ---- inputs and calls ------------------------------------------------------------------------
def prepare_inputs(sample: Sample, dtype: Any) -> list:
    """NumPy inputs for a run in ``dtype`` (float64 inputs converted, others kept; None kept)."""
    out = []
    for a in sample.inputs:
        if a is None:
            out.append(None)
            continue
        a = np.asarray(a)
        out.append(a.astype(dtype) if a.dtype == np.float64 else a.copy())
    return out


def _nd(a: Optional[np.ndarray]) -> Optional[NDArray]:
    return None if a is None else NDArray(torch.from_numpy(np.array(a, copy=True)))


def _as_list(res: Any) -> list:
    if isinstance(res, (list, tuple)):
        return list(res)
    return [res]


def _call(op: OpDef, nd_inputs: Sequence, attrs: dict) -> list:
    """The generated ``mx.nd`` function (falls back to ``invoke`` for unexported names)."""
    fn = _FUNCS.get(op.name)
    if fn is None:
        return _as_list(invoke(op, list(nd_inputs), dict(attrs)))
    return _as_list(fn(*nd_inputs, **attrs))


def _mode(sample: Sample) -> Any:
    return mx.autograd.train_mode() if sample.train else mx.autograd.predict_mode()


def run_eager(op: OpDef, sample: Sample, dtype: Any) -> list:
    """Outputs (NumPy, with their dtypes) of the generated nd function on the sample."""
    inputs = [_nd(a) for a in prepare_inputs(sample, dtype)]
    with _mode(sample):
        outs = _call(op, inputs, sample.attrs)
    for o in outs:
        assert isinstance(o, NDArray), f"{op.name}: output is {type(o).__name__}, not an NDArray"
    return [o.asnumpy() for o in outs]


def reference(op: OpDef, sample: Sample, dtype: Any) -> Optional[list]:
    """The sample's NumPy reference outputs for the same inputs (None without a reference)."""
    if sample.ref is None:
        return None
    return [np.asarray(r) for r in _as_list(sample.ref(*prepare_inputs(sample, dtype), **sample.attrs))]


def tolerances(sample: Sample, dtype: Any) -> tuple:
    if np.dtype(dtype) == np.float64:
        return sample.rtol, sample.atol
    return max(sample.rtol, 2e-4), max(sample.atol, 2e-5)


# ---- gradients -------------------------------------------------------------------------------
def grad_indices(op: OpDef, sample: Sample) -> list:
    """Inputs to differentiate: ``sample.grad_inputs`` or every float64 non-auxiliary input."""
    if sample.grad_inputs is not None:
        return list(sample.grad_inputs)
    names = list(op.inputs) if not op.variadic else [op.inputs[0]] * len(sample.inputs)
    return [i for i, a in enumerate(sample.inputs)
            if a is not None and np.asarray(a).dtype == np.float64
            and (i >= len(names) or names[i] not in op.aux)]


def _kernel_outputs(op: OpDef, tensors: list, sample: Sample) -> list:
    attrs = dict(sample.attrs)
    if op.train_aware:
        attrs["is_train"] = bool(sample.train)
    res = op.kernel(*tensors, **attrs)
    return [res] if isinstance(res, torch.Tensor) else list(res)


def head_grads_for(op: OpDef, sample: Sample, seed: int = 0) -> list:
    """Random head gradients (float64) for every output that carries a gradient; None for the
    others (integer outputs, and outputs the operator deliberately detaches, as MXNet gives no
    gradient through e.g. topk's indices or LayerNorm's mean/std outputs)."""
    inputs = [None if a is None else torch.from_numpy(a) for a in prepare_inputs(sample, np.float64)]
    for i in grad_indices(op, sample):
        inputs[i] = inputs[i].clone().requires_grad_(True)
    with torch.enable_grad():
        outs = _kernel_outputs(op, inputs, sample)
    rng = np.random.RandomState(seed)
    return [rng.standard_normal(tuple(o.shape)) if o.is_floating_point() and o.requires_grad else None
            for o in outs]


def autograd_grad(op: OpDef, sample: Sample, head_grads: list) -> list:
    """Gradients of sum(out_k * head_k) w.r.t. the grad inputs, via mx.autograd (float64)."""
    arrays = prepare_inputs(sample, np.float64)
    nds = [_nd(a) for a in arrays]
    idx = grad_indices(op, sample)
    for i in idx:
        nds[i].attach_grad()
    with mx.autograd.record(train_mode=bool(sample.train)):
        outs = _call(op, nds, sample.attrs)
    heads, hgrads = [], []
    for o, h in zip(outs, head_grads):
        if h is not None and o._t.requires_grad:
            heads.append(o)
            hgrads.append(NDArray(torch.from_numpy(np.asarray(h, dtype=np.float64)).to(o._t.dtype)))
    if not heads:
        return [np.zeros_like(arrays[i]) for i in idx]
    mx.autograd.backward(heads, hgrads)
    return [nds[i].grad.asnumpy() for i in idx]


def _coords(size: int, rng: np.random.RandomState) -> np.ndarray:
    if size <= FD_MAX_COORDS:
        return np.arange(size)
    return np.sort(rng.choice(size, FD_MAX_COORDS, replace=False))


def numeric_grad(op: OpDef, sample: Sample, head_grads: list, eps: float = FD_EPS) -> tuple:
    """Central differences of sum(out_k * head_k); returns (gradients, probed flat coordinates)."""
    arrays = prepare_inputs(sample, np.float64)
    idx = grad_indices(op, sample)

    def objective(arrs: list) -> float:
        tensors = [None if a is None else torch.from_numpy(np.array(a, copy=True)) for a in arrs]
        with torch.no_grad():
            outs = _kernel_outputs(op, tensors, sample)
        total = 0.0
        for o, h in zip(outs, head_grads):
            if h is not None:
                total += float(np.sum(o.double().numpy() * h))
        return total

    rng = np.random.RandomState(1)
    grads, probed = [], []
    for i in idx:
        coords = _coords(arrays[i].size, rng)
        grads.append(central_differences(lambda v: objective([v if j == i else a for j, a in enumerate(arrays)]),
                                         arrays[i], eps, at=coords))
        probed.append(coords)
    return grads, probed


# ---- shapes ----------------------------------------------------------------------------------
def meta_shapes(op: OpDef, sample: Sample, dtype: Any = np.float32) -> Optional[list]:
    """[(shape, torch dtype or None)] per output without running the real kernel; None when the
    operator has no array inputs and no infer_shape rule (nothing to infer from)."""
    arrays = prepare_inputs(sample, dtype)
    if op.infer_shape_rule is not None:
        shapes = op.infer_shape_rule(dict(sample.attrs), [None if a is None else tuple(a.shape) for a in arrays])
        if shapes is not None:  # None: the inputs do not fit the rule; the meta run decides
            return [(tuple(s), None) for s in shapes]
    if not any(a is not None for a in arrays):
        return None
    metas = [None if a is None else torch.empty(a.shape, dtype=torch.from_numpy(a.reshape(-1)[:0]).dtype,
                                                 device="meta") for a in arrays]
    outs = _kernel_outputs(op, metas, sample)
    return [(tuple(o.shape), o.dtype) for o in outs]


# ---- the checks (used by test_registry_ops.py) -------------------------------------------------
def _same_dtype_rule(op: OpDef, sample: Sample, dtype: Any, ours: np.dtype, ref: np.dtype) -> Optional[str]:
    if not any(a is not None for a in sample.inputs):
        return None                        # creation ops: dtype comes from attributes
    if ref.kind != "f":
        return None if ours == ref else f"dtype {ours}, reference {ref}"
    if ours.kind != "f":
        return f"dtype {ours}, reference {ref} (floating)"
    if np.dtype(dtype) == np.float64 or ref.itemsize < 8:
        return None if ours == ref else f"dtype {ours}, reference {ref}"
    return None                            # float32 run, reference promoted to float64


def check_forward(op: OpDef, sample: Sample, dtype: Any) -> None:
    """Eager outputs equal the NumPy reference (values, shapes, dtypes)."""
    op.check_attrs(dict(sample.attrs))
    outs = run_eager(op, sample, dtype)
    n = op.num_outputs(dict(sample.attrs))
    assert len(outs) == n, f"{op.name}: {len(outs)} outputs, num_outputs says {n}"
    if op.random:
        ref = reference(op, sample, dtype)
        if ref is not None:
            assert [o.shape for o in outs] == [r.shape for r in ref], \
                f"{op.name}: output shapes {[o.shape for o in outs]}, expected {[r.shape for r in ref]}"
            assert [o.dtype.kind for o in outs] == [r.dtype.kind for r in ref], \
                f"{op.name}: output dtypes {[o.dtype for o in outs]}, expected kinds of {[r.dtype for r in ref]}"
        return
    ref = reference(op, sample, dtype)
    if ref is None:
        return
    assert len(ref) == len(outs), f"{op.name}: {len(outs)} outputs, reference has {len(ref)}"
    rtol, atol = tolerances(sample, dtype)
    for k, (o, r) in enumerate(zip(outs, ref)):
        where = f"{op.name} output {k} ({np.dtype(dtype).name} run, attrs {sample.attrs})"
        assert o.shape == r.shape, f"{where}: shape {o.shape}, reference {r.shape}"
        bad = _same_dtype_rule(op, sample, dtype, o.dtype, r.dtype)
        assert bad is None, f"{where}: {bad}"
        if r.dtype.kind in "fc":
            np.testing.assert_allclose(o.astype(np.float64), r.astype(np.float64), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(o, r, err_msg=where)


def check_grad(op: OpDef, sample: Sample) -> None:
    """autograd gradients equal central finite differences (float64)."""
    heads = head_grads_for(op, sample)
    auto = autograd_grad(op, sample, heads)
    num, probed = numeric_grad(op, sample, heads)
    idx = grad_indices(op, sample)
    for i, a, g, coords in zip(idx, auto, num, probed):
        assert a.shape == g.shape, f"{op.name}: gradient of input {i} has shape {a.shape}, input {g.shape}"
        scale = max(1.0, float(np.max(np.abs(g))) if g.size else 1.0)
        np.testing.assert_allclose(
            a.reshape(-1)[coords], g.reshape(-1)[coords], rtol=max(1e-4, sample.rtol),
            atol=max(1e-6, sample.atol) * scale,
            err_msg=f"{op.name}: autograd vs finite differences, input {i}, attrs {sample.attrs}")


def check_shapes(op: OpDef, sample: Sample) -> None:
    """Meta-device (or infer_shape) output shapes equal the real ones."""
    real = run_eager(op, sample, np.float32)
    try:
        meta = meta_shapes(op, sample, np.float32)
    except Exception as e:  # noqa: BLE001 - report which operator cannot run on meta
        raise AssertionError(
            f"{op.name}: kernel fails on 'meta' tensors ({type(e).__name__}: {e}); make it shape-only, "
            f"register infer_shape=..., or mark the sample check_shape=False if the shape depends "
            f"on values") from e
    if meta is None:
        return
    assert [m[0] for m in meta] == [r.shape for r in real], \
        f"{op.name}: meta shapes {[m[0] for m in meta]}, real shapes {[r.shape for r in real]}"
    for k, ((_, mdt), r) in enumerate(zip(meta, real)):
        if mdt is not None and mdt != torch.bfloat16:
            mnp = torch.empty(0, dtype=mdt).numpy().dtype
            assert mnp == r.dtype, f"{op.name} output {k}: meta dtype {mnp}, real dtype {r.dtype}"


def is_grad_case(op: OpDef, sample: Sample) -> bool:
    return (op.differentiable and not op.random and sample.grad and bool(grad_indices(op, sample)))


Runner = Callable[[OpDef, Sample, Any], list]


def check_param_shapes(op: OpDef, sample: Sample) -> None:
    """param_shapes fills the unknown input shapes from the data shape so that the kernel runs
    with the same output shapes as with the sample's inputs (what deferred init relies on)."""
    arrays = prepare_inputs(sample, np.float32)
    shapes = [None if a is None else tuple(a.shape) for a in arrays]
    filled = op.param_shapes(dict(sample.attrs), [shapes[0]] + [None] * (len(shapes) - 1))
    assert len(filled) == len(shapes), f"{op.name}: param_shapes returned {len(filled)} shapes for {len(shapes)} inputs"
    new = []
    for k, (a, got) in enumerate(zip(arrays, filled)):
        if a is None:
            new.append(None)
        elif got is None:
            new.append(a)
        else:
            new.append(np.zeros(tuple(got), dtype=a.dtype))
    want = meta_shapes(op, sample, np.float32)
    trial = Sample(tuple(new), dict(sample.attrs), train=sample.train)
    got_shapes = meta_shapes(op, trial, np.float32)
    assert want is not None and got_shapes is not None
    assert [w[0] for w in want] == [g[0] for g in got_shapes], \
        f"{op.name}: with param_shapes {filled} the outputs are {[g[0] for g in got_shapes]}, expected {[w[0] for w in want]}"
