"""Sparse gradients and updates: autograd with sparse arrays, Embedding(sparse_grad=True), lazy
optimizer updates vs NumPy references, Parameter(stype/grad_stype), Trainer and kvstore."""
import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon

nd = mx.nd
R = np.random.RandomState(5)


@pytest.mark.parametrize("stype", ["default", "row_sparse", "csr"])
@pytest.mark.parametrize("grad_stype", [None, "default", "row_sparse", "csr"])
def test_attach_grad_stype_and_backward(stype, grad_stype):
    a = R.randn(4, 3).astype(np.float32)
    x = nd.array(a).tostype(stype)
    x.attach_grad(stype=grad_stype)
    want = grad_stype or stype
    assert x.grad.stype == want and x.detach().stype == stype
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    assert x.grad.stype == want
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * a, rtol=1e-6)


def test_grad_req_add_accumulates_row_sparse():
    w = nd.array(R.randn(6, 2))
    w.attach_grad(grad_req="add", stype="row_sparse")
    for rows in ([1, 3], [3, 4]):
        with autograd.record():
            y = nd.Embedding(nd.array(rows), w, input_dim=6, output_dim=2, sparse_grad=True).sum()
        y.backward()
    g = w.grad
    assert g.stype == "row_sparse" and g.indices.asnumpy().tolist() == [1, 3, 4]
    exp = np.zeros((6, 2), np.float32)
    exp[[1, 4]] = 1
    exp[3] = 2
    np.testing.assert_array_equal(g.asnumpy(), exp)


def test_sparse_dot_gradient_matches_numpy():
    lhs = R.randn(3, 8).astype(np.float32)
    lhs[R.rand(3, 8) < 0.6] = 0
    w = nd.array(R.randn(8, 2))
    w.attach_grad(stype="row_sparse")
    csr = nd.array(lhs).tostype("csr")
    with autograd.record():
        y = nd.dot(csr, w)
    y.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_allclose(w.grad.asnumpy(), lhs.T @ np.ones((3, 2)), rtol=1e-6)


def test_embedding_sparse_grad_touches_only_looked_up_rows():
    for hybridize in (False, True):
        emb = gluon.nn.Embedding(20, 4, sparse_grad=True)
        emb.initialize()
        if hybridize:
            emb.hybridize()
        idx = nd.array([[3, 7], [7, 19]])
        with autograd.record():
            loss = (emb(idx) * nd.array(np.arange(4.0))).sum()
        loss.backward()
        g = emb.weight.grad()
        assert g.stype == "row_sparse"
        assert g.indices.asnumpy().tolist() == [3, 7, 19]
        np.testing.assert_allclose(g.data.asnumpy(), [[0, 1, 2, 3], [0, 2, 4, 6], [0, 1, 2, 3]])


def _np_lazy_sgd(w, rows, g, lr, wd, mom=None, momentum=0.0):
    w = w.copy()
    if mom is None:
        w[rows] = (1 - lr * wd) * w[rows] - lr * g
        return w, None
    mom = mom.copy()
    mom[rows] = momentum * mom[rows] - lr * wd * w[rows] - lr * g
    w[rows] += mom[rows]
    return w, mom


@pytest.mark.parametrize("w_stype", ["default", "row_sparse"])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_lazy_update_vs_numpy(w_stype, momentum):
    w0 = R.randn(6, 3).astype(np.float32)
    rows, gv = np.array([1, 4]), R.randn(2, 3).astype(np.float32)
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.01, momentum=momentum)
    w = nd.array(w0).tostype(w_stype)
    g = nd.sparse.row_sparse_array((gv, rows), shape=(6, 3))
    state = opt.create_state(0, w)
    ref_w, ref_m = w0, (np.zeros_like(w0) if momentum else None)
    for _ in range(2):
        opt.update(0, w, g, state)
        ref_w, ref_m = _np_lazy_sgd(ref_w, rows, gv, 0.1, 0.01, ref_m, momentum)
    assert w.stype == w_stype
    np.testing.assert_allclose(w.asnumpy(), ref_w, rtol=1e-5, atol=1e-6)
    untouched = [0, 2, 3, 5]
    np.testing.assert_array_equal(w.asnumpy()[untouched], w0[untouched])
    if momentum:
        np.testing.assert_allclose(state.asnumpy(), ref_m, rtol=1e-5, atol=1e-6)


def test_std_update_touches_every_row():
    w0 = R.randn(5, 2).astype(np.float32)
    g = nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), [2]), shape=(5, 2))
    w = nd.array(w0)
    mx.optimizer.SGD(learning_rate=0.5, wd=0.1, lazy_update=False).update(0, w, g, None)
    exp = 0.95 * w0
    exp[2] -= 0.5
    np.testing.assert_allclose(w.asnumpy(), exp, rtol=1e-6)


@pytest.mark.parametrize("name", ["adam", "adagrad", "ftrl"])
def test_lazy_updates_leave_other_rows(name):
    w0 = R.randn(6, 2).astype(np.float32)
    rows, gv = np.array([0, 5]), R.randn(2, 2).astype(np.float32)
    opt = mx.optimizer.create(name, learning_rate=0.1)
    w_sparse, w_dense = nd.array(w0), nd.array(w0)
    g = nd.sparse.row_sparse_array((gv, rows), shape=(6, 2))
    gd = g.tostype("default")
    s1, s2 = opt.create_state(0, w_sparse), mx.optimizer.create(name, learning_rate=0.1).create_state(0, w_dense)
    opt.update(0, w_sparse, g, s1)
    ref = mx.optimizer.create(name, learning_rate=0.1)
    ref.update(0, w_dense, gd, s2)
    got, exp = w_sparse.asnumpy(), w_dense.asnumpy()
    np.testing.assert_array_equal(got[[1, 2, 3, 4]], w0[[1, 2, 3, 4]])
    np.testing.assert_allclose(got[rows], exp[rows], rtol=1e-5, atol=1e-6)


def test_sparse_parameter_trainer_and_row_sparse_pull():
    p = gluon.Parameter("weight", shape=(6, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.One(), ctx=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(RuntimeError):
        p.data()
    with pytest.raises(RuntimeError):
        p.row_sparse_data(nd.array([0]))
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.5})
    got = p.row_sparse_data(nd.array([1, 3], ctx=mx.cpu(1)))
    assert got.stype == "row_sparse" and got.context == mx.cpu(1)
    assert got.indices.asnumpy().tolist() == [1, 3]
    for d in p.list_grad():
        d[:] = nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), [3]), shape=(6, 2))
    for d in p._data:
        d._fresh_grad = True
    trainer.step(1)
    full = p.row_sparse_data(nd.arange(0, 6))
    exp = np.ones((6, 2), np.float32)
    exp[3] -= 0.5 * 2  # gradients of both devices summed on the kvstore
    np.testing.assert_allclose(full.asnumpy(), exp)


def test_kvstore_row_sparse_pull():
    kv = mx.kv.create("local")
    w = nd.array(np.arange(12.0).reshape(6, 2)).tostype("row_sparse")
    kv.init("w", w)
    out = nd.sparse.zeros("row_sparse", (6, 2))
    kv.row_sparse_pull("w", out=out, row_ids=nd.array([4, 1, 4]))
    assert out.stype == "row_sparse" and out.indices.asnumpy().tolist() == [1, 4]
    np.testing.assert_array_equal(out.data.asnumpy(), [[2, 3], [8, 9]])
    kv.push("w", [nd.sparse.row_sparse_array(([[1.0, 1.0]], [0]), shape=(6, 2))] * 2)
    dense = nd.zeros((6, 2))
    kv.pull("w", out=dense)
    np.testing.assert_array_equal(dense.asnumpy()[0], [2, 2])


def test_sparse_params_save_load(tmp_path):
    net = gluon.nn.Embedding(8, 3)
    net.initialize()
    params = net.collect_params()
    path = str(tmp_path / "emb.params")
    p = gluon.ParameterDict("net_")
    p.get("w1", shape=(8, 3), stype="row_sparse")
    p.initialize()
    trainer = gluon.Trainer(p, "sgd")
    before = p.get("w1").row_sparse_data(nd.arange(0, 8)).asnumpy()
    p.save(path)
    assert mx.nd.load(path)["net_w1"].stype == "row_sparse"
    q = gluon.ParameterDict("net_")
    q.get("w1", shape=(8, 3))
    q.load(path)
    np.testing.assert_array_equal(q.get("w1").data().asnumpy(), before)
    del params, trainer
