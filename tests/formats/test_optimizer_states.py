"""Optimizer states files (Trainer.save_states / load_states, Updater.get/set_states): hostile
and mismatched files are refused with a clear MXNetError before anything is accepted."""
from __future__ import annotations

import json
import pickle
import struct
import warnings

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon
from hybridnet.base import MXNetError
from hybridnet.gluon import nn
from hybridnet.formats import optimizer_states as _codec


def _net(units: int = 3, in_units: int = 4) -> nn.Dense:
    net = nn.Dense(units, in_units=in_units, prefix="dense_")
    net.initialize(mx.init.Constant(0.5))
    return net


def _step(net, trainer, x=None):
    x = mx.nd.ones((2, net.weight.shape[1])) if x is None else x
    with mx.autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(2)


def _saved(tmp_path, optimizer="adam", **kw):
    net = _net()
    tr = gluon.Trainer(net.collect_params(), optimizer, kw)
    _step(net, tr)
    path = str(tmp_path / "a.states")
    tr.save_states(path)
    return path, open(path, "rb").read()


def _header(blob: bytes) -> dict:
    (n,) = struct.unpack("<Q", blob[8:16])
    return json.loads(blob[16:16 + n])


def _repack(blob: bytes, header: dict) -> bytes:
    (n,) = struct.unpack("<Q", blob[8:16])
    new = json.dumps(header).encode()
    return blob[:8] + struct.pack("<Q", len(new)) + new + blob[16 + n:]


def _snapshot(tr):
    upd = tr._updaters[0]
    states = {k: [s.asnumpy() for s in (v if isinstance(v, tuple) else (v,)) if s is not None]
              for k, v in upd.states.items()}
    return tr._optimizer, dict(vars(tr._optimizer)), states


def _load_fails(tmp_path, blob: bytes, match: str, optimizer="adam"):
    """load_states refuses ``blob`` with ``match`` and leaves the trainer exactly as it was."""
    net = _net()
    tr = gluon.Trainer(net.collect_params(), optimizer)
    _step(net, tr)
    before_opt, before_attrs, before_states = _snapshot(tr)
    path = tmp_path / "bad.states"
    path.write_bytes(blob)
    with pytest.raises(MXNetError, match=match) as info:
        tr.load_states(str(path))
    assert "bad.states" in str(info.value)
    opt, attrs, states = _snapshot(tr)
    assert opt is before_opt and attrs.keys() == before_attrs.keys()
    assert all(attrs[k] is before_attrs[k] for k in attrs)
    assert states.keys() == before_states.keys()
    for k in states:
        for a, b in zip(states[k], before_states[k]):
            np.testing.assert_array_equal(a, b)
    _step(net, tr)  # still trains
    return info.value


def test_round_trip_then_step_matches_uninterrupted_training(tmp_path):
    net_a, net_b = _net(), _net()
    tr_a = gluon.Trainer(net_a.collect_params(), "adam", {"learning_rate": 0.1})
    tr_b = gluon.Trainer(net_b.collect_params(), "adam", {"learning_rate": 0.1})
    _step(net_a, tr_a)
    _step(net_b, tr_b)
    tr_a.save_states(str(tmp_path / "s"))
    tr_b2 = gluon.Trainer(net_b.collect_params(), "adam", {"learning_rate": 0.5})
    tr_b2.load_states(str(tmp_path / "s"))
    assert tr_b2.learning_rate == 0.1
    _step(net_a, tr_a)
    _step(net_b, tr_b2)
    np.testing.assert_allclose(net_a.weight.data().asnumpy(), net_b.weight.data().asnumpy(), rtol=1e-6)


def test_states_from_another_network_name_the_parameter_and_both_shapes(tmp_path):
    _, blob = _saved(tmp_path)
    net = _net(units=5)
    tr = gluon.Trainer(net.collect_params(), "adam")
    (tmp_path / "other.states").write_bytes(blob)
    with pytest.raises(MXNetError, match=r"parameter 'dense_bias' \(index 0\) state\[0\]: saved state has shape \(3,\) but the parameter needs \(5,\)"):
        tr.load_states(str(tmp_path / "other.states"))


def test_states_for_more_parameters_than_the_trainer_has(tmp_path):
    _, blob = _saved(tmp_path)
    net = _net()
    tr = gluon.Trainer([net.weight], "adam")
    (tmp_path / "more.states").write_bytes(blob)
    with pytest.raises(MXNetError, match="index 1, but the Trainer has 1 parameters"):
        tr.load_states(str(tmp_path / "more.states"))


def test_pickled_mxnet_states_are_refused_with_an_explanation(tmp_path):
    blob = pickle.dumps({0: (np.zeros(3), np.zeros(3))}, protocol=2)
    err = _load_fails(tmp_path, blob, "looks like a Python pickle")
    assert "never unpickles" in str(err) and "re-save" in str(err)


@pytest.mark.parametrize("edit, match", [
    (lambda h: h["arrays"][0].update(nbytes=h["arrays"][0]["nbytes"] + 4), "takes 12 bytes, but the table says 16"),
    (lambda h: h["arrays"][0].update(shape=[4, 3]), "takes 48 bytes"),
    (lambda h: h["arrays"][0].update(shape=[-1, 12]), "non-negative ints"),
    (lambda h: h["arrays"][0].update(offset=10 ** 9), "run past the end"),
    (lambda h: h["arrays"][0].update(dtype="complex64"), "unknown dtype"),
    (lambda h: h["arrays"][0].pop("offset"), "exactly dtype, shape, offset, nbytes"),
    (lambda h: h.update(arrays={}), "'arrays' must be a list"),
    (lambda h: h.update(version=2), "unsupported states format"),
    (lambda h: h.pop("tree"), "no 'tree'"),
    (lambda h: h["tree"].update(t="pickle"), "unknown node type"),
])
def test_corrupt_header_is_refused(tmp_path, edit, match):
    _, blob = _saved(tmp_path)
    h = _header(blob)
    edit(h)
    _load_fails(tmp_path, _repack(blob, h), match)


def _optimizer_attrs(h: dict) -> list:
    """The [key, value] pairs of the saved optimizer's attribute dict."""
    for k, v in h["tree"]["v"]:
        if k == "optimizer":
            return v["v"]["v"]
    raise AssertionError("no optimizer in the blob")


def _set_attr(h: dict, name: str, value) -> None:
    for pair in _optimizer_attrs(h):
        if pair[0] == name:
            pair[1] = value
            return
    raise AssertionError(name)


@pytest.mark.parametrize("name, value, match", [
    ("beta1", "0.9", "attribute 'beta1' is a str"),
    ("wd", None, "attribute 'wd' is a None"),  # would fail only at step() before
    ("lr", {"t": "float", "v": "nan"}, "not a finite number"),
    ("num_update", -3, "num_update must be a non-negative int"),
    ("num_update", 2 ** 70, "out of range"),
    ("aggregate_num", 10 ** 9, "aggregate_num must be a small"),
    ("lr_mult", {"t": "dict", "v": [[0, "x"]]}, "lr_mult must map"),
    ("epsilon", {"t": "list", "v": []}, "attribute 'epsilon' is a sequence"),
])
def test_hostile_optimizer_attributes_are_refused(tmp_path, name, value, match):
    _, blob = _saved(tmp_path)
    h = _header(blob)
    _set_attr(h, name, value)
    _load_fails(tmp_path, _repack(blob, h), match)


def test_missing_and_unknown_optimizer_attributes(tmp_path):
    _, blob = _saved(tmp_path)
    h = _header(blob)
    attrs = _optimizer_attrs(h)
    attrs[:] = [p for p in attrs if p[0] != "beta2"]
    _load_fails(tmp_path, _repack(blob, h), r"\['beta2'\] are missing")
    h = _header(blob)
    _optimizer_attrs(h).append(["__class__", 1])
    _load_fails(tmp_path, _repack(blob, h), "unknown attribute")


def test_scheduler_settings_are_checked_by_its_own_constructor(tmp_path):
    sched = mx.lr_scheduler.FactorScheduler(2, 0.5, base_lr=0.001)
    _, blob = _saved(tmp_path, lr_scheduler=sched)
    h = _header(blob)
    scheduler = dict((k, v) for k, v in _optimizer_attrs(h))["lr_scheduler"]
    for pair in scheduler["v"]["v"]:
        if pair[0] == "step":
            pair[1] = 1e-300  # FactorScheduler would loop ~forever catching up
    _load_fails(tmp_path, _repack(blob, h), "FactorScheduler rejects the saved settings")
    h = _header(blob)
    scheduler = dict((k, v) for k, v in _optimizer_attrs(h))["lr_scheduler"]
    for pair in scheduler["v"]["v"]:
        if pair[0] == "count":
            pair[1] = -10 ** 15
    _load_fails(tmp_path, _repack(blob, h), "count=")


def test_state_structure_and_dtype_must_match_what_the_optimizer_creates(tmp_path):
    _, blob = _saved(tmp_path)
    h = _header(blob)
    h["arrays"][0]["dtype"] = "float64"
    h["arrays"][0]["nbytes"] *= 2
    data = blob[16 + struct.unpack("<Q", blob[8:16])[0]:]
    first = np.frombuffer(data[:48], "<f4").astype("<f8").tobytes()
    for a in h["arrays"][1:]:
        a["offset"] += 48
    new = json.dumps(h).encode()
    bad = blob[:8] + struct.pack("<Q", len(new)) + new + first + data[48:]
    _load_fails(tmp_path, bad, "dtype float64 but the parameter needs float32")
    # Adam keeps (mean, var); an SGD-with-momentum file has one array per parameter
    _, sgd = _saved(tmp_path, "sgd", momentum=0.9)
    h = _header(sgd)
    h["tree"]["v"] = [p for p in h["tree"]["v"] if p[0] != "optimizer"]
    h["tree"]["v"][0][1] = "states"
    _load_fails(tmp_path, _repack(sgd, h), "expected a state of 2 entries")


def test_array_referenced_twice_and_deep_nesting(tmp_path):
    _, blob = _saved(tmp_path)
    h = _header(blob)
    text = json.dumps(h).replace('"i": 1}', '"i": 0}', 1)
    _load_fails(tmp_path, _repack(blob, json.loads(text)), "referenced twice")
    h = _header(blob)
    deep = {"t": "list", "v": []}
    for _ in range(100):
        deep = {"t": "list", "v": [deep]}
    h["tree"]["v"].append(["extra", deep])
    _load_fails(tmp_path, _repack(blob, h), "deeper than 64 levels")
    nested = blob[:8] + struct.pack("<Q", 200_000) + b"[" * 200_000
    _load_fails(tmp_path, nested, "corrupt optimizer-states header")


def test_updater_set_states_validates_and_keeps_old_states_on_error(tmp_path):
    _, blob = _saved(tmp_path)
    upd = mx.optimizer.get_updater(mx.optimizer.Adam())
    w, g = mx.nd.ones((3, 4)), mx.nd.ones((3, 4))
    upd(0, g, w)
    before = upd.states
    h = _header(blob)
    _set_attr(h, "beta1", {"t": "list", "v": [1]})
    with pytest.raises(MXNetError, match="beta1"):
        upd.set_states(_repack(blob, h))
    assert upd.states is before
    upd.set_states(blob)
    assert sorted(upd.states) == [0, 1]


def test_loaded_optimizer_with_another_aggregate_num_steps(tmp_path):
    """SGD aggregates updates (aggregate_num 4), Adam does not: loading Adam's states (with
    the optimizer) into an SGD trainer must switch the updater's mode, not loop forever."""
    path, _ = _saved(tmp_path, "adam")
    net = _net()
    tr = gluon.Trainer(net.collect_params(), "sgd")
    _step(net, tr)
    tr.load_states(path)
    assert type(tr._optimizer).__name__ == "Adam"
    _step(net, tr)


def _state_arrays(state) -> list:
    """The arrays of one parameter's state (nested tuples and lists, multi-precision's
    (master weight, state) pair included), in order; None entries kept as None."""
    if state is None:
        return [None]
    if isinstance(state, (tuple, list)):
        return [a for s in state for a in _state_arrays(s)]
    return [state.asnumpy()]


def _all_states(tr) -> dict:
    return {k: _state_arrays(v) for k, v in tr._updaters[0].states.items()}


def _assert_same_states(got: dict, want: dict, where: str) -> None:
    assert sorted(got) == sorted(want), where
    for k in want:
        assert len(got[k]) == len(want[k]), f"{where}: parameter {k} has {len(got[k])} state arrays, not {len(want[k])}"
        for i, (g, w) in enumerate(zip(got[k], want[k])):
            if w is None:
                assert g is None, f"{where}: parameter {k} state {i}"
                continue
            assert g.dtype == w.dtype and g.shape == w.shape, \
                f"{where}: parameter {k} state {i}: {g.dtype}{g.shape}, expected {w.dtype}{w.shape}"
            np.testing.assert_array_equal(g, w, err_msg=f"{where}: parameter {k} state {i}")


def _plain_attrs(opt) -> dict:
    """The optimizer's settings and counters that a states file carries (numbers, strings,
    the per-index update counts and multipliers), for comparing two optimizers."""
    counts = ("_index_update_count", "_all_index_update_counts", "lr_mult", "wd_mult")
    return {k: v for k, v in vars(opt).items() if isinstance(v, (bool, int, float, str, type(None))) or k in counts}


@pytest.mark.parametrize("optimizer", sorted(mx.optimizer.Optimizer.opt_registry))
@pytest.mark.parametrize("mp", [False, True], ids=["float32", "float16-multi-precision"])
def test_every_registered_optimizer_round_trips(tmp_path, optimizer, mp):
    """Trainer A steps, saves, then a fresh Trainer C over an identical network loads the file:
    C's states equal A's (values, dtypes, shapes, the multi-precision master weights included)
    and so do the optimizer's counters; the next step from the loaded states equals A's next
    step exactly, on the weights and on the states."""
    def trainer(net, lr):
        # GroupAdaGrad keeps one rate per row of a 2-D weight: give it the weight only
        params = [net.weight] if optimizer == "groupadagrad" else net.collect_params()
        return gluon.Trainer(params, optimizer, {"multi_precision": mp, "learning_rate": lr})

    def net_and_trainer():
        net = _net()
        if mp:
            net.cast("float16")
        return net, trainer(net, 0.1)

    x = mx.nd.array(np.linspace(-1, 1, 8).reshape(2, 4), dtype="float16" if mp else "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net_a, tr_a = net_and_trainer()
        net_b, tr_b = net_and_trainer()
        for net, tr in ((net_a, tr_a), (net_b, tr_b)):
            mx.random.seed(7)  # SGLD draws noise
            _step(net, tr, x)
        np.testing.assert_array_equal(net_b.weight.data().asnumpy(), net_a.weight.data().asnumpy())
        tr_a.save_states(str(tmp_path / "s"))
        saved = _all_states(tr_a)
        assert saved and all(saved.values())
        tr_c = trainer(net_b, 0.5)  # the file's learning rate must win
        tr_c.load_states(str(tmp_path / "s"))
        _assert_same_states(_all_states(tr_c), saved, f"{optimizer} after loading")
        assert type(tr_c._optimizer) is type(tr_a._optimizer)
        assert _plain_attrs(tr_c._optimizer) == _plain_attrs(tr_a._optimizer)
        assert tr_c.learning_rate == tr_a.learning_rate == 0.1
        for net, tr in ((net_a, tr_a), (net_b, tr_c)):
            mx.random.seed(8)
            _step(net, tr, x)
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(getattr(net_b, name).data().asnumpy(), getattr(net_a, name).data().asnumpy(),
                                      err_msg=f"{optimizer}: {name} after a step from the loaded states")
    _assert_same_states(_all_states(tr_c), _all_states(tr_a), f"{optimizer} one step after loading")


def test_codec_never_reads_past_the_blob():
    tree = {"kind": "states", "states": {0: np.ones((2, 2), np.float32)}}
    blob = _codec.dumps(tree)
    for cut in range(len(blob)):
        with pytest.raises(MXNetError):
            _codec.loads(blob[:cut], lambda node, dec: None)


def test_update_on_kvstore_path_is_checked_too(tmp_path):
    def trainer(units):
        net = _net(units=units)
        return net, gluon.Trainer(net.collect_params(), "adam", kvstore=mx.kv.create("local"),
                                  update_on_kvstore=True)
    net, tr = trainer(3)
    _step(net, tr)
    assert tr._update_on_kvstore
    tr.save_states(str(tmp_path / "kv.states"))
    tr.load_states(str(tmp_path / "kv.states"))
    _step(net, tr)
    net5, tr5 = trainer(5)
    with pytest.raises(MXNetError, match=r"'dense_bias' \(index 0\) state\[0\]: saved state has shape \(3,\)"):
        tr5.load_states(str(tmp_path / "kv.states"))


@pytest.mark.parametrize("make", [
    lambda: mx.lr_scheduler.FactorScheduler(1, 0.1, base_lr=0.1, warmup_steps=1, warmup_begin_lr=0.05),
    lambda: mx.lr_scheduler.MultiFactorScheduler([1, 2], 0.1, base_lr=0.1, warmup_steps=1, warmup_begin_lr=0.05),
    lambda: mx.lr_scheduler.PolyScheduler(4, base_lr=0.1, warmup_steps=1, warmup_begin_lr=0.05),
    lambda: mx.lr_scheduler.CosineScheduler(4, base_lr=0.1, warmup_steps=1, warmup_begin_lr=0.05),
])
def test_decayed_schedulers_round_trip(tmp_path, make):
    """Schedules decay base_lr below warmup_begin_lr: a legitimate file, which must load and
    then give the same learning rates as the uninterrupted run."""
    net_a, net_b = _net(), _net()
    tr_a = gluon.Trainer(net_a.collect_params(), "sgd", {"lr_scheduler": make(), "learning_rate": 0.1})
    tr_b = gluon.Trainer(net_b.collect_params(), "sgd", {"lr_scheduler": make(), "learning_rate": 0.1})
    for _ in range(6):
        _step(net_a, tr_a)
        _step(net_b, tr_b)
    assert tr_a._optimizer.lr_scheduler.base_lr < 0.05
    tr_a.save_states(str(tmp_path / "s"))
    tr_b.load_states(str(tmp_path / "s"))
    for _ in range(2):
        _step(net_a, tr_a)
        _step(net_b, tr_b)
        assert tr_a.learning_rate == tr_b.learning_rate
    np.testing.assert_allclose(net_a.weight.data().asnumpy(), net_b.weight.data().asnumpy(), rtol=1e-6)
