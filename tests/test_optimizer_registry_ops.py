"""The optimizers run MXNet's registered update operators (one definition of each rule): each
kernel-backed optimizer's update goes through the operator MXNet 1.9.1's optimizer calls, and
the optimizer modules hold no torch code of their own."""
from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import hybridnet as mx
import hybridnet.optimizer as opt_pkg
from hybridnet.ndarray import ndarray as ndmod

CASES = [
    ("sgd", {}, False, "sgd_update"),
    ("sgd", {"momentum": 0.9}, False, "sgd_mom_update"),
    ("sgd", {"momentum": 0.9, "multi_precision": True}, True, "mp_sgd_mom_update"),
    ("sgd", {"multi_precision": True}, True, "mp_sgd_update"),
    ("nag", {"momentum": 0.9}, False, "nag_mom_update"),
    ("nag", {"momentum": 0.9, "multi_precision": True}, True, "mp_nag_mom_update"),
    ("adam", {}, False, "adam_update"),
    ("rmsprop", {}, False, "rmsprop_update"),
    ("rmsprop", {"centered": True, "clip_weights": 0.5}, False, "rmspropalex_update"),
    ("ftrl", {}, False, "ftrl_update"),
    ("ftml", {}, False, "ftml_update"),
    ("signum", {"momentum": 0.9}, False, "signum_update"),
    ("signum", {"momentum": 0.0}, False, "signsgd_update"),
    ("lamb", {}, False, "lamb_update_phase2"),
    ("lars", {"momentum": 0.9}, False, "sgd_mom_update"),
    ("lbsgd", {"momentum": 0.9}, False, "sgd_mom_update"),
]


def _recorded_ops(fn) -> list:
    with ndmod.recording_ops() as rec:
        fn()
    return [op.name for op, _ in rec.records]


@pytest.mark.parametrize("name,kwargs,fp16,opname", CASES)
def test_optimizer_runs_the_registered_update_op(name, kwargs, fp16, opname):
    opt = mx.optimizer.create(name, learning_rate=0.1, wd=0.01, **kwargs)
    dtype = "float16" if fp16 else "float32"
    w = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (3, 4)), dtype=dtype)
    g = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (3, 4)), dtype=dtype)
    before = w.asnumpy().copy()
    state = opt.create_state_multi_precision(0, w)
    ops = _recorded_ops(lambda: opt.update_multi_precision(0, w, g, state))
    assert opname in ops, ops
    assert not np.allclose(w.asnumpy(), before)


def test_aggregated_sgd_runs_one_multi_update():
    opt = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9)
    ws = [mx.nd.ones((2, 3)) for _ in range(5)]
    gs = [mx.nd.ones((2, 3)) for _ in range(5)]
    states = [opt.create_state(i, w) for i, w in enumerate(ws)]
    ops = _recorded_ops(lambda: opt.update(list(range(5)), ws, gs, states))
    assert ops == ["multi_sgd_mom_update"]
    for w in ws:
        np.testing.assert_allclose(w.asnumpy(), 0.9)


def test_optimizer_modules_do_not_import_torch():
    pkg = pathlib.Path(opt_pkg.__file__).parent
    for fname in ("optimizer.py", "contrib.py"):
        tree = ast.parse((pkg / fname).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "torch" for a in node.names), fname
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                assert (node.module or "").split(".")[0] != "torch", fname
