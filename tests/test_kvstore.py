"""Local KVStore (mx.kv) and the Trainer's kvstore paths, in one process (MXNet 1.9.1 semantics)."""
import os

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon
from hybridnet.base import MXNetError
from hybridnet.kvstore import launch

SHAPE = (4, 3)


def _vals(*scales, shape=SHAPE):
    return [mx.nd.ones(shape) * s for s in scales]


# -- creation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["local", "device", "Local", "nccl", "local_allreduce_cpu"])
def test_create_local_kinds(kind):
    kv = mx.kv.create(kind)
    assert isinstance(kv, mx.kv.KVStore)
    assert kv.type == kind.lower()
    assert (kv.rank, kv.num_workers) == (0, 1)
    assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
    kv.barrier()  # no-op without workers
    kv._barrier()


def test_create_errors():
    with pytest.raises(MXNetError, match="unknown KVStore type 'nope'"):
        mx.kv.create("nope")
    with pytest.raises(TypeError, match="name must be a string"):
        mx.kv.create(3)
    with pytest.raises(ValueError, match="Unknown capability"):
        mx.kv.create("local").is_capable("telepathy")
    with pytest.raises(MXNetError, match="Gradient compression is not supported"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit", "threshold": 0.5})


def test_dist_kind_without_environment_raises(monkeypatch):
    if launch.is_initialized():
        pytest.skip("a process group already exists in this process")
    for var in ("WORLD_SIZE", "DMLC_NUM_WORKER", "RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    for kind in ("dist_sync", "dist_device_sync", "horovod"):
        with pytest.raises(MXNetError, match="WORLD_SIZE"):
            mx.kv.create(kind)
    assert not launch.is_initialized()


# -- init / push / pull -------------------------------------------------------------------------
def test_init_push_pull_single_key_multi_device():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones(SHAPE) * 2)
    out = [mx.nd.zeros(SHAPE) for _ in range(3)]
    kv.pull(3, out=out)
    for o in out:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 2.0))
    kv.push(3, _vals(1, 2, 4))  # one value per "device": summed, replaces the stored value
    kv.pull(3, out=out)
    for o in out:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 7.0))
    kv.push(3, mx.nd.ones(SHAPE) * 5)  # a single array replaces too
    kv.pull(3, out=out[0])
    np.testing.assert_array_equal(out[0].asnumpy(), np.full(SHAPE, 5.0))


def test_list_keys_and_str_keys():
    kv = mx.kv.create("device")
    keys = ["a", "b", "c"]
    kv.init(keys, [mx.nd.zeros(SHAPE), mx.nd.zeros((2,)), mx.nd.zeros(SHAPE)])
    kv.push(keys, [_vals(1, 1), [mx.nd.array([1.0, 2.0])], mx.nd.ones(SHAPE) * 3])
    outs = [[mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)], mx.nd.zeros((2,)), mx.nd.zeros(SHAPE)]
    kv.pull(keys, out=outs)
    np.testing.assert_array_equal(outs[0][0].asnumpy(), np.full(SHAPE, 2.0))
    np.testing.assert_array_equal(outs[0][1].asnumpy(), np.full(SHAPE, 2.0))
    np.testing.assert_array_equal(outs[1].asnumpy(), [1.0, 2.0])
    np.testing.assert_array_equal(outs[2].asnumpy(), np.full(SHAPE, 3.0))
    # the same key twice in one push: values are grouped and summed
    kv.push(["a", "a"], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE) * 10])
    kv.pull("a", out=outs[2])
    np.testing.assert_array_equal(outs[2].asnumpy(), np.full(SHAPE, 11.0))


def test_pushpull_sums_over_devices():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros(SHAPE))
    vals = _vals(1, 2, 3)
    kv.pushpull(0, vals)  # out=None: the sum is written back into the values
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), np.full(SHAPE, 6.0))
    src = [mx.nd.array(np.arange(12.0).reshape(SHAPE)), mx.nd.ones(SHAPE)]
    out = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)]
    kv.pushpull(0, src, out=out)
    for o in out:
        np.testing.assert_array_equal(o.asnumpy(), np.arange(12.0).reshape(SHAPE) + 1)
    np.testing.assert_array_equal(src[1].asnumpy(), np.ones(SHAPE))  # inputs untouched
    # without an updater MXNet's pushpull needs no init
    fresh = _vals(2, 3)
    kv.pushpull(99, fresh)
    np.testing.assert_array_equal(fresh[0].asnumpy(), np.full(SHAPE, 5.0))
    # several keys at once, one value list each
    a, b = _vals(1, 1), [mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 4.0])]
    kv.pushpull([0, 99], [a, b])
    np.testing.assert_array_equal(a[1].asnumpy(), np.full(SHAPE, 2.0))
    np.testing.assert_array_equal(b[0].asnumpy(), [4.0, 6.0])


def test_broadcast_and_row_sparse_pull():
    kv = mx.kv.create("local")
    out = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)]
    kv.broadcast("w", mx.nd.ones(SHAPE) * 4, out=out)
    for o in out:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 4.0))
    dst = mx.nd.zeros(SHAPE)
    with pytest.raises(MXNetError, match="must be row_sparse"):  # MXNet refuses dense outputs
        kv.row_sparse_pull("w", out=dst, row_ids=mx.nd.array([0, 2]))
    kv.pull("w", out=dst)
    np.testing.assert_array_equal(dst.asnumpy(), np.full(SHAPE, 4.0))
    with pytest.raises(ValueError, match="row_ids"):
        kv.row_sparse_pull("w", out=dst)


def test_init_copies_value():
    kv = mx.kv.create("local")
    v = mx.nd.ones(SHAPE)
    kv.init(1, v)
    v[:] = 9
    out = mx.nd.zeros(SHAPE)
    kv.pull(1, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones(SHAPE))


def test_errors_for_keys_values_and_shapes():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="duplicate init of key 3"):
        kv.init(3, mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="key 7 has not been initialized"):
        kv.pull(7, out=mx.nd.zeros(SHAPE))
    with pytest.raises(MXNetError, match="init takes one NDArray per key"):
        kv.init(4, _vals(1, 2))
    with pytest.raises(TypeError, match="keys must be int or str"):
        kv.push(3.5, mx.nd.zeros(SHAPE))
    with pytest.raises(TypeError, match="keys must be int or str"):
        kv.init(None, mx.nd.zeros(SHAPE))
    with pytest.raises(TypeError, match="must be an NDArray"):
        kv.push(3, np.zeros(SHAPE))
    with pytest.raises(TypeError, match="inconsistent types of keys"):
        kv.push([3, "a"], [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)])
    with pytest.raises(TypeError, match="Do not mix int and str keys"):
        kv.init("s", mx.nd.zeros(SHAPE))
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        kv.push([3, 5], [mx.nd.zeros(SHAPE)])
    with pytest.raises(MXNetError, match=r"different shapes \(4, 3\) and \(3, 4\)"):
        kv.push(3, [mx.nd.zeros(SHAPE), mx.nd.zeros((3, 4))])
    with pytest.raises(MXNetError, match=r"holds shape \(4, 3\) but the output array has shape \(2,\)"):
        kv.pull(3, out=mx.nd.zeros((2,)))
    with pytest.raises(ValueError, match="out is required"):
        kv.pull(3)


# -- updater / optimizer --------------------------------------------------------------------
def test_custom_updater():
    kv = mx.kv.create("local")
    kv.init("k", mx.nd.ones(SHAPE))
    seen = []

    def updater(key, recv, stored):
        seen.append(key)
        stored[:] = stored + 2 * recv

    kv._set_updater(updater)
    kv.push("k", _vals(1, 2))
    out = mx.nd.zeros(SHAPE)
    kv.pull("k", out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 1 + 2 * 3.0))
    assert seen == ["k"]
    with pytest.raises(MXNetError, match="has not been initialized"):
        kv.push("other", mx.nd.ones(SHAPE))  # an updater needs a stored value
    with pytest.raises(MXNetError, match="plain function"):
        kv.save_optimizer_states("unused")


def test_set_optimizer_updates_stored_weight():
    kv = mx.kv.create("device")
    w0 = np.random.RandomState(0).randn(*SHAPE).astype(np.float32)
    kv.init(0, mx.nd.array(w0))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, wd=0.01, rescale_grad=0.5))
    g = [mx.nd.array(np.full(SHAPE, 1.0)), mx.nd.array(np.full(SHAPE, 3.0))]
    out = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)]
    kv.pushpull(0, g, out=out)
    expected = w0 - 0.1 * (0.5 * 4.0 + 0.01 * w0)
    for o in out:
        np.testing.assert_allclose(o.asnumpy(), expected, rtol=1e-6)
    assert kv._updater.optimizer is kv._optimizer
    with pytest.raises(TypeError, match="Optimizer"):
        kv.set_optimizer("sgd")


def test_save_load_optimizer_states(tmp_path):
    def make():
        kv = mx.kv.create("local")
        kv.init([0, 1], [mx.nd.ones(SHAPE), mx.nd.zeros((5,))])
        kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.05))
        return kv

    rng = np.random.RandomState(1)
    grads = [[mx.nd.array(rng.randn(*SHAPE)), mx.nd.array(rng.randn(5))] for _ in range(4)]
    kv = make()
    for g in grads[:2]:
        kv.push([0, 1], g)
    fname = str(tmp_path / "kv.states")
    kv.save_optimizer_states(fname, dump_optimizer=True)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    for g in grads[2:]:
        kv.push([0, 1], g)
    want = [mx.nd.zeros(SHAPE), mx.nd.zeros((5,))]
    kv.pull([0, 1], out=want)

    kv2 = make()
    for g in grads[:2]:  # same weights, then states from the file
        kv2.push([0, 1], g)
    kv2._updater.states.clear()
    kv2.load_optimizer_states(fname)
    assert kv2._optimizer.num_update == kv._updater.optimizer.num_update - 2
    for g in grads[2:]:
        kv2.push([0, 1], g)
    got = [mx.nd.zeros(SHAPE), mx.nd.zeros((5,))]
    kv2.pull([0, 1], out=got)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6, atol=1e-7)

    with pytest.raises(MXNetError, match="no optimizer is set"):
        mx.kv.create("local").save_optimizer_states(fname)
    with pytest.raises(MXNetError, match="no optimizer is set"):
        mx.kv.create("local").load_optimizer_states(fname)


# -- registry -----------------------------------------------------------------------------------
def test_registry_and_teststore():
    kv = mx.kv.create("teststore")
    assert kv.type == "teststore" and not kv.is_capable("optimizer")
    vals = _vals(1, 2)
    kv.pushpull(0, vals)
    np.testing.assert_array_equal(vals[0].asnumpy(), np.full(SHAPE, 3.0))

    @mx.kv.KVStoreBase.register
    class MyStore(mx.kv.TestStore):
        pass

    try:
        assert isinstance(mx.kv.create("MyStore"), MyStore)
    finally:
        mx.kv.KVStoreBase.kv_registry.pop("mystore")


# -- Trainer with a local kvstore (two copies of each parameter, like two devices) -------------
def _two_copy_param(name="x", shape=(10,)):
    x = gluon.Parameter(name, shape=shape)
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    a, b = x.list_data()
    assert a._t.data_ptr() != b._t.data_ptr()  # one copy per context, never aliased
    return x


def _backward_ones(x, scale=1.0):
    with mx.autograd.record():
        for i, w in enumerate(x.list_data()):
            y = w * scale + 1
            y.backward()


@pytest.mark.parametrize("opt_params,update_on_kvstore,expect_uok", [
    # MXNet 1.9.1: two devices and 'device' -> updates on the kvstore (MXNET_UPDATE_ON_KVSTORE=1),
    # whatever the optimizer's aggregate_num (the aggregate_num rule is MXNet 2.0's)
    ({"learning_rate": 1.0, "momentum": 0.5}, None, True),
    ({"learning_rate": 1.0, "momentum": 0.5}, False, False),
    ({"learning_rate": 1.0, "momentum": 0.5}, True, True),
    ({"learning_rate": 1.0, "momentum": 0.5, "aggregate_num": 1}, None, True),
    ({"learning_rate": 1.0, "momentum": 0.5, "aggregate_num": 1}, True, True),
])
def test_trainer_multi_context_matches_mxnet(opt_params, update_on_kvstore, expect_uok):
    # MXNet's test_trainer: grads of both copies are summed (2), lr 1 -> -2; momentum 0.5 and
    # lr_mult 0.5 on the next step -> -4
    x = _two_copy_param()
    trainer = gluon.Trainer([x], "sgd", dict(opt_params), update_on_kvstore=update_on_kvstore)
    _backward_ones(x)
    trainer.step(1)
    assert trainer._update_on_kvstore is expect_uok
    assert isinstance(trainer._kvstore, mx.kv.KVStore) and trainer._kvstore.type == "device"
    for d in x.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.full(10, -2.0))
    x.lr_mult = 0.5
    _backward_ones(x)
    trainer.step(1)
    for d in x.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.full(10, -4.0))
    if expect_uok:
        with pytest.raises(AssertionError, match="update_on_kvstore"):
            trainer.allreduce_grads()
        with pytest.raises(AssertionError, match="update_on_kvstore"):
            trainer.update(1)


def test_trainer_allreduce_then_update():
    x = _two_copy_param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, update_on_kvstore=False)
    with mx.autograd.record():
        for i, w in enumerate(x.list_data()):
            (w * i).backward()
    g = [a.asnumpy().copy() for a in x.list_grad()]
    assert (g[0] != g[1]).all()
    trainer.allreduce_grads()
    np.testing.assert_array_equal(x.list_grad()[0].asnumpy(), x.list_grad()[1].asnumpy())
    trainer.update(1)
    for d in x.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.full(10, -1.0))


def test_trainer_update_on_kvstore_option_errors():
    x = _two_copy_param()
    t = gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, kvstore=mx.kv.create("teststore"))
    _backward_ones(x)
    t.step(1)
    assert t._update_on_kvstore is False
    for d in x.list_data():
        np.testing.assert_array_equal(d.asnumpy(), np.full(10, -2.0))
    bad = gluon.Trainer([x], "adam", kvstore=mx.kv.create("teststore"), update_on_kvstore=True)
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        bad._init_kvstore()
    y = gluon.Parameter("y", shape=(3,))
    y.initialize(init="zeros")
    one = gluon.Trainer([y], "adam", update_on_kvstore=True)
    with pytest.raises(ValueError, match="no kvstore"):
        one._init_kvstore()
    with pytest.raises(TypeError, match="kvstore must be"):
        gluon.Trainer([y], "adam", kvstore=3)._init_kvstore()


def test_trainer_env_update_on_kvstore(monkeypatch):
    x = _two_copy_param()
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    t = gluon.Trainer([x], "adam", {"learning_rate": 0.1})
    _backward_ones(x)
    t.step(1)
    assert t._update_on_kvstore is False
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "1")
    t2 = gluon.Trainer([x], "adam", {"learning_rate": 0.1})
    _backward_ones(x)
    t2.step(1)
    assert t2._update_on_kvstore is True


def _adam_reference(steps, grad_sum, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, w0=0.0, t0=0):
    """``steps`` Adam steps from fresh moments; ``t0`` earlier updates count for bias correction."""
    w, m, v = w0, 0.0, 0.0
    for t in range(t0 + 1, t0 + steps + 1):
        m = beta1 * m + (1 - beta1) * grad_sum
        v = beta2 * v + (1 - beta2) * grad_sum ** 2
        lr_t = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        w = w - lr_t * m / (np.sqrt(v) + eps)
    return w


def test_trainer_update_on_kvstore_save_load_states(tmp_path):
    x = _two_copy_param()
    trainer = gluon.Trainer([x], "adam", {"learning_rate": 0.1})
    for _ in range(2):
        _backward_ones(x, scale=2.0)  # d(2w+1)/dw = 2 per copy, 4 summed
        trainer.step(1)
    assert trainer._update_on_kvstore is True
    np.testing.assert_allclose(x.data().asnumpy(), np.full(10, _adam_reference(2, 4.0)), rtol=1e-5)
    fname = str(tmp_path / "t.states")
    trainer.save_states(fname)
    states = {k: [s.asnumpy().copy() for s in v] for k, v in trainer._kvstore._updater.states.items()}
    trainer._kvstore._updater.states.clear()
    trainer.load_states(fname)
    assert trainer._optimizer is trainer._kvstore._updater.optimizer
    for k, v in states.items():
        for a, b in zip(trainer._kvstore._updater.states[k], v):
            np.testing.assert_array_equal(a.asnumpy(), b)
    x.lr_mult = 2.0  # param_dict is re-attached after load
    assert trainer._kvstore._updater.optimizer._get_lr(0) == pytest.approx(0.2)
    x.lr_mult = 1.0
    _backward_ones(x, scale=2.0)
    trainer.step(1)
    np.testing.assert_allclose(x.data().asnumpy(), np.full(10, _adam_reference(3, 4.0)), rtol=1e-5)


def test_trainer_set_data_resets_local_kvstore():
    # MXNet: changing a parameter that lives on the kvstore resets the store, so the next step
    # starts from the new value with fresh optimizer states (the optimizer keeps its counts)
    x = _two_copy_param()
    trainer = gluon.Trainer([x], "adam", {"learning_rate": 0.1})
    _backward_ones(x)
    trainer.step(1)
    first_store = trainer._kvstore
    x.set_data(mx.nd.ones((10,)) * 5)
    _backward_ones(x)
    trainer.step(1)
    assert trainer._kvstore is not first_store
    for d in x.list_data():
        np.testing.assert_allclose(d.asnumpy(), np.full(10, _adam_reference(1, 2.0, w0=5.0, t0=1)), rtol=1e-6)
    # an ordinary step keeps the store
    store = trainer._kvstore
    _backward_ones(x)
    trainer.step(1)
    assert trainer._kvstore is store


def test_trainer_single_device_has_no_kvstore():
    y = gluon.Parameter("y", shape=(3,))
    y.initialize(init="zeros")
    t = gluon.Trainer([y], "sgd", {"learning_rate": 1.0})
    with mx.autograd.record():
        (y.data() * 3).backward()
    t.step(1)
    assert t._kvstore is None and t._update_on_kvstore is None
    np.testing.assert_array_equal(y.data().asnumpy(), np.full(3, -3.0))


# -- launch helpers (no processes) --------------------------------------------------------------
def test_dist_env_parsing():
    assert launch.dist_env({}) is None
    env = launch.dist_env({"WORLD_SIZE": "4", "RANK": "2", "MASTER_ADDR": "10.0.0.1",
                           "MASTER_PORT": "1234", "LOCAL_RANK": "1"})
    assert env == launch.DistEnv(2, 4, "10.0.0.1", 1234, 1)
    env = launch.dist_env({"DMLC_NUM_WORKER": "2", "RANK": "1", "DMLC_PS_ROOT_URI": "127.0.0.1",
                           "DMLC_PS_ROOT_PORT": "9000"})
    assert env == launch.DistEnv(1, 2, "127.0.0.1", 9000, 0)
    with pytest.raises(MXNetError, match="RANK, MASTER_PORT are not"):
        launch.dist_env({"WORLD_SIZE": "2", "MASTER_ADDR": "h"})
    with pytest.raises(MXNetError, match=r"RANK=5 must lie in \[0, WORLD_SIZE=2\)"):
        launch.dist_env({"WORLD_SIZE": "2", "RANK": "5", "MASTER_ADDR": "h", "MASTER_PORT": "1"})
    with pytest.raises(MXNetError, match="not an integer"):
        launch.dist_env({"WORLD_SIZE": "two", "RANK": "0", "MASTER_ADDR": "h", "MASTER_PORT": "1"})


def test_worker_env_and_free_port():
    port = launch.find_free_port()
    assert 0 < port < 65536
    env = launch.worker_env(1, 3, "127.0.0.1", port, base={"PATH": "/bin"})
    assert env["RANK"] == "1" and env["WORLD_SIZE"] == "3" and env["LOCAL_RANK"] == "1"
    assert env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"] == str(port)
    assert env["PATH"] == "/bin"
    assert launch.dist_env(env) == launch.DistEnv(1, 3, "127.0.0.1", port, 1)
    assert launch.rank() == 0 and launch.num_workers() == 1
    with pytest.raises(TypeError, match="list of arguments"):
        launch.launch("python x.py", 2)
    with pytest.raises(ValueError, match="num_workers"):
        launch.launch(["true"], 0)
