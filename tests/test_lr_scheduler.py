"""mx.lr_scheduler against hand-computed schedules (MXNet 1.9.1 semantics)."""
import math

import pytest

import hybridnet as mx
from hybridnet import lr_scheduler as lrs


def values(sched, ns):
    return [sched(n) for n in ns]


def test_factor_scheduler_steps_and_floor():
    s = lrs.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    # decays once num_update exceeds count + step: n = 3, 5, 7 ...
    assert values(s, [0, 1, 2, 3, 4, 5, 6, 7]) == [1, 1, 1, 0.5, 0.5, 0.25, 0.25, 0.125]
    s = lrs.FactorScheduler(step=1, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0)
    got = values(s, [1, 2, 3, 4, 5, 6])
    assert got[:4] == pytest.approx([1.0, 0.1, 0.01, 0.001])
    assert got[4] == 1e-3 and got[5] == 1e-3  # clamped at stop_factor_lr


def test_factor_scheduler_catches_up_when_resuming():
    s = lrs.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    assert s(7) == 0.125  # three decays at once
    assert s.count == 6


def test_warmup_linear_and_constant():
    s = lrs.FactorScheduler(step=10, factor=0.5, base_lr=1.0, warmup_steps=4, warmup_begin_lr=0.2)
    assert values(s, [0, 1, 2, 3]) == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert s(4) == 1.0 and s(10) == 1.0 and s(11) == 0.5
    s = lrs.MultiFactorScheduler(step=[5], factor=0.1, base_lr=1.0, warmup_steps=3,
                                 warmup_begin_lr=0.3, warmup_mode="constant")
    assert values(s, [0, 1, 2, 3]) == pytest.approx([0.3, 0.3, 0.3, 1.0])


def test_multifactor():
    s = lrs.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    assert values(s, [1, 2, 3, 5]) == pytest.approx([1, 1, 0.1, 0.1])
    assert s(6) == pytest.approx(0.01) and s(100) == pytest.approx(0.01)
    assert s.cur_step_ind == 2 and s.count == 5


def test_poly():
    s = lrs.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1)
    assert s(0) == pytest.approx(1.0)
    assert s(5) == pytest.approx(0.1 + 0.9 * 0.25)
    assert s(10) == pytest.approx(0.1)
    assert s(12) == pytest.approx(0.1)  # keeps the last value
    s = lrs.PolyScheduler(max_update=10, base_lr=1.0, pwr=1, warmup_steps=2)
    assert s(1) == pytest.approx(0.5)  # linear warmup from 0
    assert s(6) == pytest.approx(1.0 * (1 - 4 / 8))


def test_cosine():
    s = lrs.CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.0)
    assert s(0) == pytest.approx(1.0)
    assert s(5) == pytest.approx(0.5)
    assert s(10) == pytest.approx(0.0, abs=1e-15)
    assert s(15) == pytest.approx(0.0, abs=1e-15)
    s = lrs.CosineScheduler(max_update=10, base_lr=2.0, final_lr=0.5, warmup_steps=2, warmup_begin_lr=1.0)
    assert s(1) == pytest.approx(1.5)
    assert s(4) == pytest.approx(0.5 + 1.5 * (1 + math.cos(math.pi * 2 / 8)) / 2)


def test_errors():
    with pytest.raises(ValueError, match="warmup_begin_lr"):
        lrs.FactorScheduler(step=1, base_lr=0.1, warmup_begin_lr=0.5)
    with pytest.raises(ValueError, match="warmup_mode"):
        lrs.FactorScheduler(step=1, warmup_mode="cubic")
    with pytest.raises(ValueError, match="warmup_steps"):
        lrs.FactorScheduler(step=1, warmup_steps=-1)
    with pytest.raises(ValueError, match="step"):
        lrs.FactorScheduler(step=0)
    with pytest.raises(ValueError, match="factor"):
        lrs.FactorScheduler(step=1, factor=2.0)
    with pytest.raises(ValueError, match="increasing"):
        lrs.MultiFactorScheduler(step=[3, 2])
    with pytest.raises(ValueError, match="max_update"):
        lrs.PolyScheduler(max_update=0)
    with pytest.raises(ValueError, match="max_update"):
        lrs.CosineScheduler(max_update=0)
    with pytest.raises(NotImplementedError):
        lrs.LRScheduler()(1)


def test_scheduler_inside_optimizer():
    sched = lrs.PolyScheduler(max_update=4, base_lr=1.0, pwr=1)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    w = mx.nd.array([0.0], dtype="float64")
    g = mx.nd.array([1.0], dtype="float64")
    steps = []
    for _ in range(4):
        before = w.asscalar()
        opt.update(0, w, g, None)
        steps.append(before - w.asscalar())
    # lr evaluated at num_update = 1..4 : 0.75, 0.5, 0.25, 0
    assert steps == pytest.approx([0.75, 0.5, 0.25, 0.0])
    assert mx.lr_scheduler is lrs
