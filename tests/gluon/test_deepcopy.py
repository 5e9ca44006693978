"""copy.deepcopy of hybridized blocks (a teacher or EMA copy of a model): an independent block
that compiles again; MXNet 1.9.1 refuses (its CachedOp handle cannot be copied)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon


def _net(**flags):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, in_channels=2), gluon.nn.BatchNorm(in_channels=4), gluon.nn.Activation("relu"),
            gluon.nn.Flatten(), gluon.nn.Dense(3, in_units=4 * 4 * 4))
    net.initialize(mx.init.Xavier())
    net.hybridize(**flags)
    return net


def _grads(net, x):
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    return {k.split("_", 1)[1]: p.grad().asnumpy() for k, p in net.collect_params().items()
            if p.grad_req != "null"}


@pytest.mark.parametrize("flags", [{}, {"static_alloc": True}, {"static_alloc": True, "static_shape": True}])
def test_deepcopy_of_a_hybridized_block_is_independent_and_equal(flags):
    x = mx.nd.array(np.random.RandomState(0).rand(2, 2, 6, 6))
    net = _net(**flags)
    want = net(x).asnumpy()
    twin = copy.deepcopy(net)
    assert twin._cached_op is None and twin._options == net._options
    np.testing.assert_array_equal(twin(x).asnumpy(), want)
    got = _grads(twin, x)
    for name, g in _grads(net, x).items():
        np.testing.assert_allclose(got[name], g, rtol=1e-6, atol=1e-7)
    # parameters are copies: writing the copy's leaves the original alone
    want = net(x).asnumpy()  # the training-mode calls above moved BatchNorm's running statistics
    np.testing.assert_array_equal(twin(x).asnumpy(), want)
    for p in twin.collect_params().values():
        p.set_data(mx.nd.zeros(p.shape))
    np.testing.assert_array_equal(net(x).asnumpy(), want)
    assert not np.array_equal(twin(x).asnumpy(), want)


def test_deepcopy_of_an_imported_symbol_block(tmp_path):
    x = mx.nd.array(np.random.RandomState(1).rand(2, 2, 6, 6))
    net = _net()
    net(x)
    net.export(str(tmp_path / "m"))
    block = gluon.SymbolBlock.imports(str(tmp_path / "m-symbol.json"), ["data"], str(tmp_path / "m-0000.params"))
    block.hybridize()
    want = block(x).asnumpy()
    twin = copy.deepcopy(block)
    np.testing.assert_array_equal(twin(x).asnumpy(), want)
    assert twin._cached_graph.in_format == block._cached_graph.in_format


def test_deepcopy_of_an_array_keeps_its_gradient_buffer_and_grad_req():
    a = mx.nd.array([1.0, 2.0])
    a.attach_grad("add")
    with autograd.record():
        (a * 3).backward()
    b = copy.deepcopy(a)
    np.testing.assert_array_equal(b.grad.asnumpy(), [3, 3])
    with autograd.record():
        (b * 2).backward()
    np.testing.assert_array_equal(b.grad.asnumpy(), [5, 5])  # 'add' accumulates into the copied buffer
    np.testing.assert_array_equal(a.grad.asnumpy(), [3, 3])
