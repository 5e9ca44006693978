"""mx.np.ndarray: NumPy semantics over NDArray's storage, checked against values real MXNet 1.9.1
prints for the same expressions (recorded by running it beside hybridnet)."""
import threading

import numpy as onp
import pytest

import hybridnet as mx
from hybridnet import autograd, np, npx

from finite_differences import central_differences


def test_class_and_zero_copy_conversions():
    npx.set_np()
    a = np.array([1.0, 2.0])
    assert isinstance(a, mx.nd.NDArray) and type(a) is np.ndarray
    legacy = a.as_nd_ndarray()
    assert type(legacy) is mx.nd.NDArray
    legacy[0] = 7.0  # the same memory
    assert a[0].item() == 7.0
    back = mx.nd.array([1.0, 2.0, 3.0]).as_np_ndarray()
    assert type(back) is np.ndarray and back.shape == (3,)
    with pytest.raises(ValueError, match="as_np_ndarray"):
        np.array(mx.nd.ones((2,)))


@pytest.mark.parametrize("expr, text", [
    ("np.array([1, 2])", "array([1., 2.])"),                           # lists default to float32
    ("np.array([1, 2], dtype='int32')", "array([1, 2], dtype=int32)"),
    ("np.array([1, 2], dtype='int32') + np.array([1., 2.])", "array([2., 4.])"),
    ("np.array([1, 2], dtype='int32') / 2", "array([0.5, 1. ])"),
    ("np.array([1, 2], dtype='int32') * 2", "array([2, 4], dtype=int32)"),
    ("np.array([1, 2], dtype='int32') + 1.5", "array([2, 3], dtype=int32)"),
    ("np.array([1, 2], dtype='int32') + np.array([1, 2], dtype='int64')", "array([2, 4], dtype=int64)"),
    ("np.array([1., 2.]) > 1", "array([False,  True])"),
    ("np.array([1, 2], dtype='bool') + 1", "array([2, 2], dtype=int64)"),
    ("-np.array([1, 2], dtype='int32')", "array([-1, -2], dtype=int32)"),
    ("np.array([1, 2], dtype='int32') % 2", "array([1, 0], dtype=int32)"),
    ("2 ** np.array([1., 2.])", "array([2., 4.])"),
    ("np.array([1.5], dtype='float16') + np.array([1.], dtype='float64')", "array([2.5], dtype=float64)"),
    ("np.array([1., 2.])[0]", "array(1.)"),                            # zero-dim, not shape (1,)
    ("np.zeros((2, 0))", "array([], shape=(2, 0))"),
    ("np.array(3.)", "array(3.)"),
    ("np.sum(np.array([1, 2], dtype='int32'))", "array(3, dtype=int32)"),
    ("np.mean(np.array([1, 2], dtype='int32'))", "array(1.5)"),
    ("np.arange(3)", "array([0., 1., 2.])"),
    ("np.linspace(0, 1, 3)", "array([0. , 0.5, 1. ])"),
    ("np.ones((2, 3)).argmax(axis=1)", "array([0, 0], dtype=int64)"),
    ("np.array([[1., 2.], [3., 4.]]) @ np.array([[1., 2.], [3., 4.]])", "array([[ 7., 10.],\n       [15., 22.]])"),
    ("np.linalg.norm(np.array([1., 2.]))", "array(2.236068)"),
    ("npx.relu(np.array([1., 2.]) - 1.5)", "array([0. , 0.5])"),
])
def test_repr_and_promotion_match_mxnet(expr, text):
    npx.set_np()
    res = eval(expr)  # noqa: S307 - the table's expressions
    assert type(res) is np.ndarray
    assert repr(res) == text


def test_indexing_follows_numpy():
    npx.set_np()
    x = np.arange(24).reshape(2, 3, 4)
    ref = onp.arange(24, dtype=onp.float32).reshape(2, 3, 4)
    for key in [0, -1, (1, 2), (1, 2, 3), slice(None, None, -1), (Ellipsis, 1), (None, 0),
                onp.array([1, 0]), (slice(None), [0, 2]), ref > 10]:
        got = x[np.array(key) if isinstance(key, onp.ndarray) and key.dtype == bool else key]
        assert type(got) is np.ndarray
        onp.testing.assert_array_equal(got.asnumpy(), ref[key])
    view = x[1]
    view[0, 0] = -5.0  # basic indexing is a view
    assert x[1, 0, 0].item() == -5.0
    x[:, 0] = 0
    assert float(x[:, 0].sum()) == 0.0
    with pytest.raises(IndexError):
        np.array(1.0)[0]


def test_python_protocol():
    npx.set_np()
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert a[1, 1].item() == 4.0 and float(a[0, 1]) == 2.0
    assert onp.asarray(a).dtype == onp.float32 and len(a) == 2
    assert [r.shape for r in a] == [(2,), (2,)]
    assert str(a[0]) == "[1. 2.]"
    assert a.T.shape == (2, 2) and a.T[0, 1].item() == 3.0
    assert a.reshape(4).shape == (4,) and a.reshape((1, 4)).shape == (1, 4) and a.reshape(-1, 1).shape == (4, 1)
    assert a.astype("int32").dtype == onp.int32 and a.copy() is not a
    assert a.ndim == 2 and a.size == 4 and a.shape == (2, 2)
    onp.testing.assert_allclose(a.sum(axis=0).asnumpy(), [4.0, 6.0])
    onp.testing.assert_allclose(a.mean().asnumpy(), 2.5)
    onp.testing.assert_allclose(a.max(axis=1).asnumpy(), [2.0, 4.0])
    onp.testing.assert_allclose(a.std().asnumpy(), onp.std([1.0, 2.0, 3.0, 4.0]), rtol=1e-6)
    b = np.ones((2,))
    b += 1
    assert b.tolist() == [2.0, 2.0]
    mixed = a + mx.nd.ones((2, 2))  # MXNet raises TypeError; hybridnet reads the NDArray as np
    assert type(mixed) is np.ndarray and mixed.tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert "{:.2f}".format(a[0, 0]) == "1.00" and "{}".format(a[0]) == "[1. 2.]"
    with pytest.raises(TypeError):
        "{:30}".format(a)
    assert a.dtype == onp.dtype("float32") and type(a.dtype) is type(onp.dtype("float32"))
    with pytest.raises(AttributeError, match="no attribute exp"):
        a.exp()  # a legacy NDArray method MXNet 1.9.1's np arrays refuse
    assert a[0].shape == () or a[0].shape == (2,)


def test_set_np_switches_per_thread_and_dtype():
    assert not npx.is_np_array()
    npx.set_np()
    assert npx.is_np_array() and npx.is_np_shape()
    seen = []
    t = threading.Thread(target=lambda: seen.append(npx.is_np_array()))
    t.start()
    t.join()
    assert seen == [False]
    assert np.ones(2).dtype == onp.float32 and np.array([1.0]).dtype == onp.float32
    npx.set_np(dtype=True)
    assert np.ones(2).dtype == onp.float64 and np.array([1.0]).dtype == onp.float64
    assert np.zeros((1,)).dtype == onp.float64 and np.arange(3).dtype == onp.int64
    npx.reset_np()
    assert not npx.is_np_array() and not mx.util.is_np_default_dtype()


def test_autograd_on_np_arrays_matches_finite_differences():
    npx.set_np()
    x0 = onp.random.RandomState(0).uniform(0.5, 2.0, size=(3, 4))

    def f(v):
        return float(onp.sum(onp.tanh(v) * onp.log(v) + v ** 2 / 3.0))
    x = np.array(x0, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = (np.tanh(x) * np.log(x) + x ** 2 / 3.0).sum()
    y.backward()
    assert type(x.grad) is np.ndarray and type(y) is np.ndarray and y.shape == ()
    onp.testing.assert_allclose(x.grad.asnumpy(), central_differences(f, x0), rtol=1e-5, atol=1e-7)


def test_np_and_nd_results_agree():
    npx.set_np()
    rs = onp.random.RandomState(1)
    a, b = rs.uniform(-1, 1, (3, 4)).astype("float32"), rs.uniform(-1, 1, (4, 5)).astype("float32")
    na, nb = mx.nd.array(a), mx.nd.array(b)
    pa, pb = np.array(a), np.array(b)
    pairs = [
        (np.dot(pa, pb), mx.nd.dot(na, nb)),
        (npx.relu(pa), mx.nd.relu(na)),
        (npx.sigmoid(pa), mx.nd.sigmoid(na)),
        (npx.softmax(pa, axis=-1), mx.nd.softmax(na, axis=-1)),
        (npx.log_softmax(pa), mx.nd.log_softmax(na)),
        (np.exp(pa), mx.nd.exp(na)),
        (np.maximum(pa, 0.1), mx.nd.maximum(na, 0.1)),
        (npx.batch_dot(pa.reshape(1, 3, 4), pb.reshape(1, 4, 5)), mx.nd.batch_dot(na.reshape((1, 3, 4)),
                                                                             nb.reshape((1, 4, 5)))),
        (npx.one_hot(np.array([0, 2], dtype="int32"), 3), mx.nd.one_hot(mx.nd.array([0, 2]), 3)),
        (npx.pick(pa, np.array([0, 1, 3], dtype="int32"), axis=1), mx.nd.pick(na, mx.nd.array([0, 1, 3]), axis=1)),
        (npx.topk(pa, k=2, ret_typ="value"), mx.nd.topk(na, k=2, ret_typ="value")),
        (npx.reshape(pa, (-2, -1)), mx.nd.reshape(na, (0, -1))),
    ]
    for p, n in pairs:
        assert type(p) is np.ndarray and type(n) is mx.nd.NDArray
        onp.testing.assert_allclose(p.asnumpy(), n.asnumpy(), rtol=1e-6, atol=1e-7)
