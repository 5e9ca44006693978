"""Every registered operator, every sample: forward vs NumPy (float64, float32), autograd vs
finite differences (float64), meta-device shapes vs real shapes. Driven by the registry."""
from __future__ import annotations

import numpy as np
import pytest

from . import harness

CASES = harness.all_cases()
IDS = [c[0] for c in CASES]
GRAD_CASES = [c for c in CASES if harness.is_grad_case(c[1], c[3])]
SHAPE_CASES = [c for c in CASES if c[3].check_shape]


def test_every_op_has_samples() -> None:
    missing = harness.ops_without_samples()
    assert not missing, f"operators without samples: {missing}"


def test_sample_table_is_not_empty() -> None:
    assert len(CASES) > 100
    names = {c[1].name for c in CASES}
    for must in ("sum", "Reshape", "dot", "take", "relu", "_zeros"):
        assert must in names


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_float64(case: tuple) -> None:
    _, op, _, sample = case
    harness.check_forward(op, sample, np.float64)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_float32(case: tuple) -> None:
    _, op, _, sample = case
    harness.check_forward(op, sample, np.float32)


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient(case: tuple) -> None:
    _, op, _, sample = case
    harness.check_grad(op, sample)


@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_meta_shapes(case: tuple) -> None:
    _, op, _, sample = case
    harness.check_shapes(op, sample)


PARAM_CASES = [c for c in CASES if c[1].param_shapes is not None and c[3].check_shape]


@pytest.mark.parametrize("case", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_param_shapes(case: tuple) -> None:
    """Deferred init: shapes filled by param_shapes(attrs, [data shape, None, ...]) make the
    kernel run (on meta tensors) with the same output shapes as the sample's own inputs."""
    _, op, _, sample = case
    harness.check_param_shapes(op, sample)
