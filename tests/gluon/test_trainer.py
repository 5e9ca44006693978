"""gluon.Trainer: updates vs formulas, eager == hybridized trajectories, grad_req='add',
stale-gradient error, learning rate control, state save/load."""
import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon, nd
from hybridnet.gluon import nn


@pytest.fixture(autouse=True)
def fresh_names(monkeypatch):
    import hybridnet.name as _name
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="tanh"), nn.Dense(3))
    return net


def _data(seed=0):
    r = np.random.RandomState(seed)
    return nd.array(r.randn(6, 5)), nd.array(r.randint(0, 3, 6))


def _train(hybrid, steps=4, optimizer="sgd", opt_params=None):
    mx.random.seed(3)
    net = _mlp()
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), optimizer, opt_params or {"learning_rate": 0.1, "momentum": 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = _data()
    traj = []
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        traj.append([p.data().asnumpy().copy() for p in net.collect_params().values()])
    return traj


@pytest.mark.parametrize("opt,params", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                        ("adam", {"learning_rate": 0.01})])
def test_eager_and_hybridized_trajectories_agree(opt, params):
    eager, hyb = _train(False, optimizer=opt, opt_params=params), _train(True, optimizer=opt, opt_params=params)
    for step_e, step_h in zip(eager, hyb):
        for a, b in zip(step_e, step_h):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert not np.allclose(eager[0][0], eager[-1][0])  # parameters moved


def test_sgd_step_matches_formula():
    w = gluon.Parameter("w", shape=(3,))
    w.initialize(mx.init.Constant(1.0))
    trainer = gluon.Trainer([w], "sgd", {"learning_rate": 0.5, "wd": 0.1})
    x = nd.array([1.0, 2.0, 3.0])
    with autograd.record():
        y = (w.data() * x).sum()
    y.backward()
    trainer.step(2)
    # w -= lr * (grad / batch + wd * w)
    expected = 1.0 - 0.5 * (np.array([1.0, 2.0, 3.0]) / 2 + 0.1 * 1.0)
    np.testing.assert_allclose(w.data().asnumpy(), expected, rtol=1e-6)


def test_gradient_accumulation_with_grad_req_add():
    w = gluon.Parameter("w", shape=(2,), grad_req="add")
    w.initialize(mx.init.Constant(0.0))
    for k in range(3):
        with autograd.record():
            y = (w.data() * nd.array([1.0, 2.0])).sum() * (k + 1)
        y.backward()
    np.testing.assert_allclose(w.grad().asnumpy(), [6.0, 12.0])
    trainer = gluon.Trainer([w], "sgd", {"learning_rate": 1.0})
    trainer.step(6)
    np.testing.assert_allclose(w.data().asnumpy(), [-1.0, -2.0])
    w.zero_grad()
    np.testing.assert_allclose(w.grad().asnumpy(), [0.0, 0.0])


def test_stale_gradient_error_and_ignore():
    a = gluon.Parameter("a", shape=(2,))
    b = gluon.Parameter("b", shape=(2,))
    for p in (a, b):
        p.initialize(mx.init.Constant(1.0))
    trainer = gluon.Trainer([a, b], "sgd", {"learning_rate": 1.0})
    with autograd.record():
        y = a.data().sum()
    y.backward()
    with pytest.raises(UserWarning, match="Gradient of Parameter `b` on context cpu\\(0\\) has not been updated"):
        trainer.step(1)
    with autograd.record():
        y = a.data().sum()
    y.backward()
    trainer.step(1, ignore_stale_grad=True)
    np.testing.assert_allclose(b.data().asnumpy(), [1.0, 1.0])


def test_learning_rate_and_states(tmp_path):
    net = _mlp()
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    assert trainer.learning_rate == 0.01
    trainer.set_learning_rate(0.05)
    assert trainer.learning_rate == 0.05
    x, y = _data()
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(x), y)
    loss.backward()
    trainer.step(6)
    f = str(tmp_path / "t.states")
    trainer.save_states(f)
    assert b"pickle" not in open(f, "rb").read()[:100]
    t2 = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    t2.load_states(f)
    s1 = trainer._updaters[0].states
    s2 = t2._updaters[0].states
    assert set(s1) == set(s2)
    k = sorted(s1)[0]
    m1 = s1[k][0] if isinstance(s1[k], (tuple, list)) else s1[k]
    m2 = s2[k][0] if isinstance(s2[k], (tuple, list)) else s2[k]
    np.testing.assert_allclose(m1.asnumpy(), m2.asnumpy())


def test_trainer_rejects_bad_params():
    with pytest.raises(ValueError, match="list or dict of Parameters"):
        gluon.Trainer("nope", "sgd")
    with pytest.raises(ValueError, match="list or dict of Parameters"):
        gluon.Trainer([1, 2], "sgd")


def _two_ctx_param(**kwargs):
    x = gluon.Parameter("x", shape=(10,), **kwargs)
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    return x


def _backward_plus_one(x, rows=None):
    with autograd.record():
        for w in (x.list_data() if rows is None else x.list_row_sparse_data(rows)):
            (w + 1).backward()


@pytest.mark.parametrize("update_on_kvstore", [None, False])
def test_lr_schedule_counts_one_update_per_step_on_two_devices(update_on_kvstore):
    # MXNet keeps update counters per device: two copies of one parameter are one update
    x = _two_ctx_param()
    sched = mx.lr_scheduler.FactorScheduler(2, factor=0.1, base_lr=1.0)
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "lr_scheduler": sched},
                            update_on_kvstore=update_on_kvstore)
    seen = []
    for _ in range(5):
        _backward_plus_one(x)
        trainer.step(1)
        seen.append(trainer.learning_rate)
    assert trainer._update_on_kvstore is (update_on_kvstore is None)
    np.testing.assert_allclose(seen, [1.0, 1.0, 0.1, 0.1, 0.01])


def test_sparse_storage_kvstore_policy():
    # row_sparse weights always live on a kvstore that runs the optimizer (even on one device)
    w = gluon.Parameter("w", shape=(4, 1), stype="row_sparse", grad_stype="row_sparse")
    w.initialize(ctx=[mx.cpu(0)], init="zeros")
    trainer = gluon.Trainer([w], "sgd", {"learning_rate": 0.1})
    _backward_plus_one(w, rows=nd.arange(0, 4))
    trainer.step(1)
    assert trainer._update_on_kvstore is True and trainer._kvstore is not None
    np.testing.assert_allclose(w.row_sparse_data(nd.arange(0, 4)).asnumpy(), -0.1)
    bad = gluon.Parameter("b", shape=(4, 1), stype="row_sparse")
    bad.initialize(init="zeros")
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        gluon.Trainer([bad], "sgd", update_on_kvstore=False)._init_kvstore()
    # dense weight, sparse gradient, one machine: updates on the workers
    g = _two_ctx_param(grad_stype="row_sparse")
    t2 = gluon.Trainer([g], "sgd", {"learning_rate": 0.1})
    _backward_plus_one(g)
    t2.step(1)
    assert t2._update_on_kvstore is False
    np.testing.assert_allclose(g.data(mx.cpu(1)).asnumpy(), -0.2)


def test_parameter_trainer_association_and_internals():
    x = gluon.Parameter("x", shape=(10,), stype="row_sparse")
    x.initialize()
    with pytest.raises(mx.base.MXNetError, match="no Trainer"):
        x.row_sparse_data(nd.arange(0, 10))
    t0 = gluon.Trainer([x], "sgd")
    assert x._trainer is t0
    x._set_trainer(None)
    assert x._trainer is None
    x._set_trainer(t0)
    with pytest.raises(RuntimeError, match="More than one trainers"):
        gluon.Trainer([x], "sgd")
    d = gluon.Parameter("d", shape=(2, 3))
    d.initialize(ctx=[mx.cpu(0), mx.cpu(2)], init="ones")
    assert d._ctx_map == [[], [0, None, 1]]  # [gpu ids, cpu ids] by device_typeid & 1, as MXNet
    assert d._check_and_get(d._data, list) is d._data
    assert d._check_and_get(d._data, mx.cpu(2)) is d._data[1]
    assert [g.shape for g in d._grad] == [(2, 3), (2, 3)]
    d.grad_req = "null"
    assert d._grad is None
    d.grad_req = "write"
    assert np.all(d._grad[1].asnumpy() == 0)
    lazy = gluon.Parameter("lazy", shape=(0, 3), allow_deferred_init=True)
    lazy.initialize()
    with pytest.raises(gluon.parameter.DeferredInitializationError):
        lazy._check_and_get(lazy._data, None)


def test_trainer_contexts_and_param_index_like_mxnet():
    x = _two_ctx_param()
    t = gluon.Trainer([x], "sgd")
    assert t._contexts == [mx.cpu(0), mx.cpu(1)]
    assert t._param2idx == {"x": 0}


def test_loading_parameters_resets_a_kvstore_that_holds_them(tmp_path):
    # MXNet's test_trainer_reset_kv: the store is dropped at load time, the next step
    # continues from the loaded values
    params = gluon.ParameterDict()
    x = params.get("x", shape=(10,), lr_mult=1.0)
    params.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore="local")
    fname = str(tmp_path / "x.params")
    params.save(fname)
    _backward_plus_one(x)
    trainer.step(1)
    assert trainer._update_on_kvstore and trainer._kvstore.type == "local"
    params.load(fname)
    assert trainer._kvstore is None and trainer._kv_initialized is False
    _backward_plus_one(x)
    trainer.step(1)
    np.testing.assert_allclose(x.data(mx.cpu(0)).asnumpy(), -0.2)
