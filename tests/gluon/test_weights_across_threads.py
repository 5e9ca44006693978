"""Reads of weights in one thread never see a half-applied ``Trainer.step`` of another thread.

MXNet's engine orders every read of an array after the writes pending on it; here a training
thread updates weights in place while a second thread reads them (``data().asnumpy()``) and
saves them (``save_parameters``, ``export``). Every value it sees must equal the weights after
some whole step.
"""
from __future__ import annotations

import hashlib
import threading

import numpy as np

import hybridnet as mx
from hybridnet import autograd, gluon, nd


def _digest(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


def _net() -> gluon.HybridBlock:
    net = gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(gluon.nn.Dense(384, in_units=384, activation="relu"), gluon.nn.Dense(4, in_units=384))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    return net


def test_reads_and_saves_in_another_thread_see_whole_steps(tmp_path):
    net = _net()
    params = net._collect_params_with_prefix()  # structural names, as save_parameters writes them
    names = list(params.keys())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    x = nd.array(np.random.RandomState(0).randn(8, 384))
    y = nd.array(np.random.RandomState(1).randn(8, 4))
    loss_fn = gluon.loss.L2Loss()
    # the weights after each step, as the training thread sees them between steps
    steps = [{n: _digest(params[n].data().asnumpy()) for n in names}]
    weight = params[names[0]]
    stop = threading.Event()
    seen: list = []
    saved: list = []
    failures: list = []

    def reader() -> None:
        try:
            k = 0
            while not stop.is_set():
                seen.append(_digest(weight.data().asnumpy()))
                if k % 10 == 0:
                    path = str(tmp_path / f"save{k}.params")
                    net.save_parameters(path)
                    saved.append(path)
                k += 1
        except BaseException as e:  # surfaced in the main thread
            failures.append(e)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(200):
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(8)
            steps.append({n: _digest(params[n].data().asnumpy()) for n in names})
    finally:
        stop.set()
        t.join()
    assert not failures, failures
    whole = {s[names[0]] for s in steps}
    torn = [h for h in seen if h not in whole]
    assert seen and not torn, f"{len(torn)} of {len(seen)} reads saw a half-applied step"
    by_step = {tuple(s[n] for n in names) for s in steps}
    assert saved
    for path in saved:
        loaded = nd.load(path)
        got = tuple(_digest(loaded[n].asnumpy()) for n in names)
        assert got in by_step, f"{path} mixes weights of different steps"


def test_a_guarded_block_still_deep_copies():
    import copy
    net = _net()
    gluon.Trainer(net.collect_params(), "sgd")
    twin = copy.deepcopy(net)
    a, b = net[0].weight, twin[0].weight
    assert a._writer is not None and b._writer is not None and a._writer is not b._writer
    assert b._writer is twin[1].weight._writer  # the copies stay one group
    np.testing.assert_array_equal(a.data().asnumpy(), b.data().asnumpy())
