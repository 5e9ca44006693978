"""gluon.contrib.nn: Concurrent, HybridConcurrent, Identity, SparseEmbedding, SyncBatchNorm,
PixelShuffle1D/2D/3D -- numbers against NumPy, eager == hybridized, names, export round trips."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, nd
from hybridnet.gluon import nn
from hybridnet.gluon.contrib import nn as cnn


def _run(net, x_np, head_np=None, grad_x=True):
    """Training-mode forward + backward of sum(out * head): (out, x.grad, {param: grad})."""
    x = nd.array(x_np)
    if grad_x:
        x.attach_grad()
    with autograd.record():
        y = net(x)
        if head_np is None:
            head_np = np.random.RandomState(5).randn(*y.shape).astype(np.float32)
        loss = (y * nd.array(head_np)).sum()
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req != "null"}
    return y.asnumpy(), (x.grad.asnumpy().copy() if grad_x else None), grads, head_np


def _eager_vs_hybrid(net, x_np, grad_x=True):
    y_e, gx_e, g_e, head = _run(net, x_np, grad_x=grad_x)
    net.hybridize()
    y_h, gx_h, g_h, _ = _run(net, x_np, head, grad_x=grad_x)
    np.testing.assert_allclose(y_h, y_e, rtol=1e-5, atol=1e-6)
    if grad_x:
        assert np.abs(gx_e).sum() > 0
        np.testing.assert_allclose(gx_h, gx_e, rtol=1e-5, atol=1e-6)
    assert sorted(g_e) == sorted(g_h)
    for k in g_e:
        np.testing.assert_allclose(g_h[k], g_e[k], rtol=1e-5, atol=1e-6, err_msg=k)
    return y_e, gx_e, g_e, head


def _export_nodes(net, x_np, tmp_path):
    net.hybridize()
    y = net(nd.array(x_np)).asnumpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net.export(str(tmp_path / "m"))
        sym_file, params_file = str(tmp_path / "m-symbol.json"), str(tmp_path / "m-0000.params")
        imported = mx.gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(imported(nd.array(x_np)).asnumpy(), y, rtol=1e-6, atol=1e-6)
    with open(sym_file) as f:
        nodes = json.load(f)["nodes"]
    return [(n["op"], n["name"], n.get("attrs", {})) for n in nodes if n["op"] != "null"]


def test_namespace():
    for name in ("Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
                 "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"):
        assert getattr(mx.gluon.contrib.nn, name) is getattr(cnn, name)


# ---- Concurrent / HybridConcurrent / Identity -------------------------------------------------
def _concurrent(cls, axis):
    with mx.name.NameManager():
        net = cls(axis=axis)
        with net.name_scope():
            net.add(nn.Dense(3, activation="tanh"), nn.Dense(2, in_units=4), cnn.Identity())
    mx.random.seed(1)
    net.initialize(mx.init.Uniform(0.5))
    return net


def _concurrent_ref(net, x):
    d0, d1 = net[0], net[1]
    a = np.tanh(x @ d0.weight.data().asnumpy().T + d0.bias.data().asnumpy())
    b = x @ d1.weight.data().asnumpy().T + d1.bias.data().asnumpy()
    return np.concatenate([a, b, x], axis=-1)


def test_hybrid_concurrent(tmp_path):
    net = _concurrent(cnn.HybridConcurrent, 1)
    assert net.prefix == "hybridconcurrent0_"
    assert list(net.collect_params().keys()) == [
        "hybridconcurrent0_dense0_weight", "hybridconcurrent0_dense0_bias",
        "hybridconcurrent0_dense1_weight", "hybridconcurrent0_dense1_bias"]
    assert net[2].prefix == "hybridconcurrent0_identity0_"
    x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
    y = net(nd.array(x)).asnumpy()
    assert y.shape == (5, 9)
    np.testing.assert_allclose(y, _concurrent_ref(net, x), rtol=1e-5, atol=1e-6)
    _, gx, g, head = _eager_vs_hybrid(net, x)
    # the identity branch passes its slice of the head gradient straight through
    W1 = net[1].weight.data().asnumpy()
    a = np.tanh(x @ net[0].weight.data().asnumpy().T + net[0].bias.data().asnumpy())
    W0 = net[0].weight.data().asnumpy()
    expected_gx = ((head[:, :3] * (1 - a ** 2)) @ W0) + head[:, 3:5] @ W1 + head[:, 5:]
    np.testing.assert_allclose(gx, expected_gx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g["hybridconcurrent0_dense1_weight"], head[:, 3:5].T @ x, rtol=1e-4, atol=1e-5)
    nodes = _export_nodes(net, x, tmp_path)
    assert nodes[-1] == ("Concat", "hybridconcurrent0_concat0", {"dim": "1", "num_args": "3"})
    assert [n[1] for n in nodes[:-1]] == ["hybridconcurrent0_dense0_fwd", "hybridconcurrent0_dense0_tanh_fwd",
                                          "hybridconcurrent0_dense1_fwd"]


def test_concurrent_block():
    net = _concurrent(cnn.Concurrent, -1)
    assert net.prefix == "concurrent0_"
    x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
    np.testing.assert_allclose(net(nd.array(x)).asnumpy(), _concurrent_ref(net, x), rtol=1e-5, atol=1e-6)
    with pytest.warns(UserWarning, match="HybridSequential"):
        net.hybridize()
    np.testing.assert_allclose(net(nd.array(x)).asnumpy(), _concurrent_ref(net, x), rtol=1e-5, atol=1e-6)
    assert len(net) == 3 and isinstance(net[0:2], cnn.Concurrent)


def test_identity():
    net = cnn.Identity()
    net.initialize()
    x = nd.array(np.random.RandomState(0).randn(3, 2))
    np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())
    net.hybridize()
    np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())


# ---- SparseEmbedding --------------------------------------------------------------------------
def test_sparse_embedding():
    with mx.name.NameManager():
        net = cnn.SparseEmbedding(10, 4)
    assert list(net.collect_params().keys()) == ["sparseembedding0_weight"]
    assert repr(net) == "SparseEmbedding(10 -> 4, float32)"
    net.initialize(mx.init.Uniform(1.0))
    idx = np.array([[1, 3, 3], [0, 9, 1]], dtype=np.float32)
    W = net.weight.data().asnumpy()
    head = np.random.RandomState(2).randn(2, 3, 4).astype(np.float32)
    with autograd.record():
        y = net(nd.array(idx))
        (y * nd.array(head)).sum().backward()
    np.testing.assert_array_equal(y.asnumpy(), W[idx.astype(int)])
    expected = np.zeros_like(W)
    np.add.at(expected, idx.astype(int).ravel(), head.reshape(-1, 4))
    np.testing.assert_allclose(net.weight.grad().asnumpy(), expected, rtol=1e-6, atol=1e-6)


# ---- SyncBatchNorm ----------------------------------------------------------------------------
def test_sync_batchnorm_equals_batchnorm():
    with mx.name.NameManager():
        sbn = cnn.SyncBatchNorm(num_devices=1, momentum=0.8)
        bn = nn.BatchNorm(momentum=0.8)
    assert sbn.prefix == "syncbatchnorm0_"
    assert list(sbn.collect_params().keys()) == [
        "syncbatchnorm0_gamma", "syncbatchnorm0_beta", "syncbatchnorm0_running_mean", "syncbatchnorm0_running_var"]
    assert repr(sbn) == ("SyncBatchNorm(eps=1e-05, momentum=0.8, fix_gamma=False, use_global_stats=False, "
                         "ndev=1, key='syncbatchnorm0_', in_channels=None)")
    for net in (sbn, bn):
        mx.random.seed(4)
        net.initialize(mx.init.Uniform(0.5))
    x = (np.random.RandomState(0).randn(6, 3, 4) * 2 + 1).astype(np.float32)
    y_s, gx_s, g_s, head = _eager_vs_hybrid(sbn, x)
    y_b, gx_b, g_b, _ = _run(bn, x, head)
    np.testing.assert_allclose(y_s, y_b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx_s, gx_b, rtol=1e-5, atol=1e-6)
    for k in ("gamma", "beta"):
        np.testing.assert_allclose(g_s["syncbatchnorm0_" + k], g_b["batchnorm0_" + k], rtol=1e-5, atol=1e-6)
    # two training steps on sbn (eager + hybridized), one on bn: check the update rule directly
    mean = x.mean(axis=(0, 2))
    var = x.var(axis=(0, 2))
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.8 * 0 + 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sbn.running_mean.data().asnumpy(), 0.8 * (0.2 * mean) + 0.2 * mean, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(sbn.running_var.data().asnumpy(), 0.64 + 0.36 * var, rtol=1e-5, atol=1e-6)
    # predict mode uses the running statistics
    g, b = sbn.gamma.data().asnumpy(), sbn.beta.data().asnumpy()
    rm, rv = sbn.running_mean.data().asnumpy(), sbn.running_var.data().asnumpy()
    expected = (x - rm.reshape(1, 3, 1)) / np.sqrt(rv.reshape(1, 3, 1) + 1e-5) * g.reshape(1, 3, 1) + b.reshape(1, 3, 1)
    np.testing.assert_allclose(sbn(nd.array(x)).asnumpy(), expected, rtol=1e-5, atol=1e-5)


def test_sync_batchnorm_default_devices_warns():
    with pytest.warns(UserWarning, match="num_devices"):
        net = cnn.SyncBatchNorm()
    assert net._kwargs["ndev"] == max(mx.context.num_gpus(), 1)


def test_sync_batchnorm_node(tmp_path):
    with mx.name.NameManager():
        net = cnn.SyncBatchNorm(num_devices=1)
    net.initialize()
    nodes = _export_nodes(net, np.ones((2, 3), np.float32), tmp_path)
    assert nodes == [("_contrib_SyncBatchNorm", "syncbatchnorm0_fwd",
                      {"eps": "1e-05", "fix_gamma": "False", "key": "syncbatchnorm0_", "momentum": "0.9",
                       "ndev": "1", "use_global_stats": "False"})]


# ---- PixelShuffle -----------------------------------------------------------------------------
def _ps_ref(x, factors):
    """out[n, c, d*f1+i, h*f2+j, w*f3+k] = x[n, c*f1*f2*f3 + (i*f2 + j)*f3 + k, d, h, w] (any rank)."""
    N, Cin = x.shape[:2]
    sp = x.shape[2:]
    F = int(np.prod(factors))
    C = Cin // F
    out = np.zeros((N, C) + tuple(s * f for s, f in zip(sp, factors)), x.dtype)
    for c in range(C):
        for sub in np.ndindex(*factors):
            ch = c * F + int(np.ravel_multi_index(sub, factors))
            sl = tuple(slice(o, None, f) for o, f in zip(sub, factors))
            out[(slice(None), c) + sl] = x[:, ch]
    return out


@pytest.mark.parametrize("make,shape,factors,text", [
    (lambda: cnn.PixelShuffle1D(3), (2, 6, 4), (3,), "PixelShuffle1D(3)"),
    (lambda: cnn.PixelShuffle2D((2, 3)), (2, 12, 3, 2), (2, 3), "PixelShuffle2D((2, 3))"),
    (lambda: cnn.PixelShuffle2D(2), (1, 8, 2, 3), (2, 2), "PixelShuffle2D((2, 2))"),
    (lambda: cnn.PixelShuffle3D((2, 1, 3)), (1, 12, 2, 3, 2), (2, 1, 3), "PixelShuffle3D((2, 1, 3))"),
    (lambda: cnn.PixelShuffle3D(2), (2, 16, 2, 1, 2), (2, 2, 2), "PixelShuffle3D((2, 2, 2))"),
], ids=["1d", "2d", "2d_square", "3d", "3d_cube"])
def test_pixel_shuffle(make, shape, factors, text, tmp_path):
    net = make()
    assert repr(net) == text
    net.initialize()
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    ref = _ps_ref(x, factors)
    np.testing.assert_array_equal(net(nd.array(x)).asnumpy(), ref)
    y, gx, _, head = _eager_vs_hybrid(net, x)
    np.testing.assert_array_equal(y, ref)
    # a pure permutation: the input gradient is the head permuted back
    np.testing.assert_array_equal(_ps_ref(gx, factors), head)
    _export_nodes(net, x, tmp_path)


def test_pixel_shuffle_bad_factor():
    with pytest.raises(ValueError, match="PixelShuffle2D"):
        cnn.PixelShuffle2D((2, 2, 2))
