"""Threads: per-thread autograd flags and scopes (as in MXNet), a hybridized block's first call
built once under concurrent callers, and training beside inference threads.

Each test runs 8 threads started together on a barrier and compares every result with the one
computed serially."""
import threading
import time

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import autograd, gluon, nd
from hybridnet.attribute import AttrScope
from hybridnet.gluon import nn
from hybridnet.name import NameManager

N_THREADS = 8


def run_threads(fn, n=N_THREADS, timeout=120):
    """Run ``fn(i)`` in ``n`` threads released together; return the results (re-raise errors)."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def body(i):
        try:
            barrier.wait()
            results[i] = fn(i)
        except BaseException as e:  # noqa: B902 - reported in the main thread
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


# ---- per-thread state ------------------------------------------------------------------------
def test_autograd_flags_are_per_thread():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def other():
        inside.wait(10)
        seen["other"] = (autograd.is_recording(), autograd.is_training(), torch.is_grad_enabled())
        with autograd.train_mode():
            seen["other_train"] = autograd.is_training()
            release.set()
            time.sleep(0.05)
    t = threading.Thread(target=other)
    t.start()
    with autograd.record(train_mode=True):
        inside.set()
        release.wait(10)
        seen["main"] = (autograd.is_recording(), autograd.is_training())
    t.join()
    assert seen["other"] == (False, False, True)  # a new thread: not recording, predict mode
    assert seen["other_train"] is True
    assert seen["main"] == (True, True)  # the other thread's train_mode() did not leak here
    assert (autograd.is_recording(), autograd.is_training()) == (False, False)


def test_set_recording_and_set_training_stay_in_their_thread():
    def worker(i):
        assert autograd.set_recording(i % 2 == 0) is False
        assert autograd.set_training(i % 3 == 0) is False
        time.sleep(0.02)
        state = (autograd.is_recording(), autograd.is_training(), torch.is_grad_enabled())
        autograd.set_recording(False)
        autograd.set_training(False)
        return state
    res = run_threads(worker)
    assert res == [(i % 2 == 0, i % 3 == 0, True) for i in range(N_THREADS)]


def test_autograd_state_view_reads_the_calling_thread():
    def worker(i):
        with autograd.record(train_mode=bool(i % 2)):
            time.sleep(0.02)
            return autograd.STATE.recording, autograd.STATE.training
    assert run_threads(worker) == [(True, bool(i % 2)) for i in range(N_THREADS)]


def test_dropout_and_batchnorm_follow_the_calling_threads_mode():
    x = nd.array(np.random.RandomState(0).rand(4, 6))
    gamma, beta = nd.ones((6,)), nd.zeros((6,))
    mean, var = nd.array(np.full(6, 0.5)), nd.array(np.full(6, 2.0))
    expected_bn = (x.asnumpy() - 0.5) / np.sqrt(2.0 + 1e-3)

    def worker(i):
        if i == 0:
            with autograd.record():
                time.sleep(0.05)
                return None
        time.sleep(0.01)  # while thread 0 records in training mode
        d = nd.Dropout(x, p=0.9)
        bn = nd.BatchNorm(x, gamma, beta, mean.copy(), var.copy(), fix_gamma=False, eps=1e-3)
        return d.asnumpy(), bn.asnumpy()
    for res in run_threads(worker)[1:]:
        np.testing.assert_array_equal(res[0], x.asnumpy())
        np.testing.assert_allclose(res[1], expected_bn, rtol=1e-5, atol=1e-6)


def test_scopes_are_per_thread_and_shared_scope_objects_restore_exactly():
    shared_ctx = mx.cpu(7)
    shared_attr = AttrScope(group="shared")
    step = threading.Barrier(2)

    def worker(i):
        with mx.cpu(i + 1), AttrScope(group=f"t{i}"):
            step.wait()
            with shared_ctx, shared_attr:  # both threads inside the same scope objects
                step.wait()
                inside = (mx.current_context(), AttrScope.current.get(None)["group"])
                if i == 0:
                    step.wait()  # thread 0 leaves first, thread 1 is still inside
                else:
                    step.wait()
                    time.sleep(0.02)
            after = (mx.current_context(), AttrScope.current.get(None)["group"])
        return inside, after, mx.current_context()
    res = run_threads(worker, n=2)
    for i, (inside, after, outside) in enumerate(res):
        assert inside == (mx.cpu(7), "shared")
        assert after == (mx.cpu(i + 1), f"t{i}")  # exact restore, whatever the other thread did
        assert outside == mx.cpu(0)


def test_mxnet_style_class_properties_are_per_thread():
    got = {}

    def other():
        mx.Context.default_ctx = mx.cpu(3)
        NameManager.current = NameManager()
        got["name"] = NameManager.current.get(None, "spawned")
        got["ctx"] = mx.Context.default_ctx
    main_mgr = NameManager()
    old = NameManager.current
    NameManager.current = main_mgr
    try:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert got == {"name": "spawned0", "ctx": mx.cpu(3)}
        assert mx.Context.default_ctx == mx.cpu(0) and NameManager.current is main_mgr
        assert "spawned" not in main_mgr._counter
    finally:
        NameManager.current = old


def test_name_manager_counts_per_thread():
    def worker(i):
        with NameManager():
            return [nn.Dense(2).name for _ in range(3)]
    assert run_threads(worker) == [["dense0", "dense1", "dense2"]] * N_THREADS


# ---- concurrent first calls ------------------------------------------------------------------
class SlowTraced(gluon.HybridBlock):
    """Dense (deferred init) -> BatchNorm -> Dropout -> Dense; tracing sleeps so that the
    threads' first calls overlap; counts traces."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.fc1 = nn.Dense(16, activation="relu")
            self.bn = nn.BatchNorm()
            self.drop = nn.Dropout(0.5)
            self.fc2 = nn.Dense(3)
        self.traces = 0

    def hybrid_forward(self, F, x):
        if F is mx.sym:
            self.traces += 1
            time.sleep(0.05)
        return self.fc2(self.drop(self.bn(self.fc1(x))))


def _seeded_net(hybridize):
    mx.random.seed(42)
    with NameManager():
        net = SlowTraced()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    return net


@pytest.mark.parametrize("hybridize", [True, False])
def test_concurrent_first_calls_build_once_and_match_serial(hybridize):
    x = nd.array(np.random.RandomState(1).randn(5, 7))
    serial = _seeded_net(hybridize)
    expected = serial(x).asnumpy()
    net = _seeded_net(hybridize)  # same seed: the same initial weights if initialized once
    results = run_threads(lambda i: net(x).asnumpy())
    for r in results:
        np.testing.assert_allclose(r, expected, rtol=1e-6, atol=1e-6)
    # hybridized: traced once; eager: each Dense infers its own shapes, the container never traces
    assert net.traces == (1 if hybridize else 0)
    for (name, p), (_, q) in zip(sorted(serial.collect_params().items()), sorted(net.collect_params().items())):
        np.testing.assert_array_equal(p.data().asnumpy(), q.data().asnumpy(), err_msg=name)
    if hybridize:
        op = net._cached_op
        run_threads(lambda i: net(x))
        assert net._cached_op is op  # later calls reuse the one compiled graph


def test_concurrent_first_calls_of_blocks_sharing_a_child():
    mx.random.seed(3)
    shared = nn.Dense(4, in_units=6)
    shared.initialize()
    parents = []
    for _ in range(N_THREADS):
        p = nn.HybridSequential()
        p.add(shared)
        p.hybridize()
        parents.append(p)
    x = nd.array(np.random.RandomState(2).randn(3, 6))
    expected = shared(x).asnumpy()
    for r in run_threads(lambda i: parents[i](x).asnumpy()):
        np.testing.assert_allclose(r, expected, rtol=1e-6)


# ---- training beside serving -----------------------------------------------------------------
def _model(seed):
    mx.random.seed(seed)
    with NameManager():
        net = nn.HybridSequential()
        net.add(nn.Dense(12, activation="relu", in_units=5), nn.BatchNorm(in_channels=12),
                nn.Dropout(0.5), nn.Dense(2, in_units=12))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    return net


def _train(net, data, label, steps):
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    mx.random.seed(7)
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        losses.append(loss.asnumpy())
        time.sleep(0.002)  # let the serving threads interleave
    return losses


def test_training_thread_beside_serving_threads_matches_serial():
    rs = np.random.RandomState(5)
    data, label = nd.array(rs.randn(8, 5)), nd.array(rs.randint(0, 2, 8))
    queries = nd.array(rs.randn(4, 5))
    steps = 25

    # serial reference: predictions of the served model, then training of the trained one
    served = _model(11)
    served_expected = served(queries).asnumpy()
    trained_serial = _model(12)
    losses_serial = _train(trained_serial, data, label, steps)
    weights_serial = {k: v.data().asnumpy() for k, v in trained_serial.collect_params().items()}

    served = _model(11)
    served(queries)  # built before the threads start (the first call is tested above)
    trained = _model(12)
    trained(data)
    done = threading.Event()

    def worker(i):
        if i == 0:
            try:
                return _train(trained, data, label, steps)
            finally:
                done.set()
        outs = []
        while not done.is_set() or not outs:
            outs.append(served(queries).asnumpy())
        return outs
    results = run_threads(worker)
    np.testing.assert_allclose(np.array(results[0]), np.array(losses_serial), rtol=1e-6)
    for k, v in trained.collect_params().items():
        np.testing.assert_allclose(v.data().asnumpy(), weights_serial[k], rtol=1e-6, atol=1e-7)
    n_preds = 0
    for outs in results[1:]:
        for o in outs:  # predict mode in every serving thread: Dropout identity, BN running stats
            np.testing.assert_allclose(o, served_expected, rtol=1e-6, atol=1e-7)
        n_preds += len(outs)
    assert n_preds >= N_THREADS - 1


def test_one_block_trained_and_served_at_once():
    """One compiled graph called by a training thread (record, backward, step) and 7 predicting
    threads; training changes nothing predictions read (lr 0, BatchNorm momentum 1), so every
    prediction must equal the serial one (predict mode in the serving threads)."""
    rs = np.random.RandomState(6)
    mx.random.seed(0)
    net = nn.HybridSequential()
    net.add(nn.Dense(10, activation="relu", in_units=5), nn.BatchNorm(momentum=1.0, in_channels=10),
            nn.Dropout(0.5), nn.Dense(3, in_units=10))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    data, queries = nd.array(rs.randn(6, 5)), nd.array(rs.randn(4, 5))
    expected = net(queries).asnumpy()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.0})
    done = threading.Event()

    def worker(i):
        if i == 0:
            try:
                for _ in range(20):
                    with autograd.record():
                        out = net(data)
                    out.backward()
                    trainer.step(6)
                    time.sleep(0.002)
                return autograd.is_recording()
            finally:
                done.set()
        outs = []
        while not done.is_set() or not outs:
            outs.append(net(queries).asnumpy())
        return outs
    results = run_threads(worker)
    assert results[0] is False
    for outs in results[1:]:
        for o in outs:
            np.testing.assert_allclose(o, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(net(queries).asnumpy(), expected, rtol=1e-6, atol=1e-7)
