"""CSRNDArray / RowSparseNDArray: construction, casts, operators vs NumPy/SciPy, storage fallback."""
import warnings

import numpy as np
import pytest

try:
    import scipy.sparse as spsp
except ImportError:  # SciPy is optional: only the SciPy interop checks need it
    spsp = None

import hybridnet as mx
from hybridnet.base import MXNetError

nd = mx.nd
R = np.random.RandomState(3)


def _sparse_dense(shape, density=0.4, rows_only=False):
    a = R.randn(*shape).astype(np.float32)
    if rows_only:
        a[R.rand(shape[0]) > density] = 0
    else:
        a[R.rand(*shape) > density] = 0
    return a


def _np_csr(a):
    """(indptr, indices, data) of a dense 2-D array, row by row."""
    rows, cols = np.nonzero(a)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=a.shape[0]))])
    return indptr, cols, a[rows, cols]


def test_csr_parts_match_a_numpy_reference():
    a = _sparse_dense((5, 7))
    c = nd.array(a).tostype("csr")
    indptr, indices, data = _np_csr(a)
    assert c.stype == "csr" and isinstance(c, nd.sparse.CSRNDArray) and isinstance(c, nd.sparse.BaseSparseNDArray)
    np.testing.assert_array_equal(c.indptr.asnumpy(), indptr)
    np.testing.assert_array_equal(c.indices.asnumpy(), indices)
    np.testing.assert_array_equal(c.data.asnumpy(), data)
    assert c.indices.dtype == np.int64 and c.shape == (5, 7) and c.dtype == np.float32
    np.testing.assert_array_equal(c.asnumpy(), a)
    if spsp is not None:
        np.testing.assert_array_equal(c.asscipy().toarray(), a)


def test_rsp_parts_and_roundtrip():
    a = _sparse_dense((6, 3), rows_only=True)
    r = nd.array(a).tostype("row_sparse")
    rows = np.nonzero(np.abs(a).sum(1))[0]
    np.testing.assert_array_equal(r.indices.asnumpy(), rows)
    np.testing.assert_array_equal(r.data.asnumpy(), a[rows])
    np.testing.assert_array_equal(r.tostype("default").asnumpy(), a)
    np.testing.assert_array_equal(r.tostype("csr").asnumpy(), a)
    np.testing.assert_array_equal(nd.cast_storage(r, stype="default").asnumpy(), a)
    assert "RowSparseNDArray 6x3" in repr(r)


def test_constructors():
    c = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [0, 2, 1], [0, 2, 2, 3]), shape=(3, 3))
    np.testing.assert_array_equal(c.asnumpy(), [[1, 0, 2], [0, 0, 0], [0, 3, 0]])
    coo = nd.sparse.csr_matrix(([5.0, 6.0], ([0, 2], [1, 0])), shape=(3, 2))
    np.testing.assert_array_equal(coo.asnumpy(), [[0, 5], [0, 0], [6, 0]])
    if spsp is not None:
        m = spsp.random(4, 6, density=0.3, format="csr", random_state=1)
        np.testing.assert_allclose(nd.sparse.array(m).asnumpy(), m.toarray(), rtol=1e-6)
    r = nd.sparse.row_sparse_array(([[1.0, 2.0], [3.0, 4.0]], [3, 1]), shape=(5, 2))
    assert r.indices.asnumpy().tolist() == [3, 1]  # kept as given, as MXNet
    np.testing.assert_array_equal(r.asnumpy()[[1, 3]], [[3, 4], [1, 2]])
    with pytest.raises(MXNetError, match="ascending"):
        r.check_format()
    assert r.tostype("row_sparse").indices.asnumpy().tolist() == [1, 3]
    assert nd.sparse.row_sparse_array(([[1.0]], [4])).shape == (5, 1)
    z = nd.sparse.zeros("csr", (2, 3), dtype="float64")
    assert z.dtype == np.float64 and z.data.shape == (0,) and z.indptr.asnumpy().tolist() == [0, 0, 0]
    assert nd.sparse.empty("row_sparse", (4, 2)).indices.shape == (0,)
    assert nd.zeros((3, 2), stype="row_sparse").stype == "row_sparse"
    with pytest.raises(ValueError, match="indptr"):  # parts that do not fit: refused at once
        nd.sparse.csr_matrix(([1.0], [0], [0, 1]), shape=(3, 3))
    # contents are checked by check_format, as in MXNet
    bad = nd.sparse.csr_matrix(([1.0, 2.0], [2, 1], [0, 2, 2]), shape=(2, 3))
    with pytest.raises(MXNetError, match="ascending"):
        bad.check_format()
    bad.check_format(full_check=False)
    with pytest.raises(MXNetError, match="indptr"):
        nd.sparse.csr_matrix(([1.0], [0], [0, 2, 1]), shape=(2, 3)).check_format()
    with pytest.raises(MXNetError, match="unique"):
        nd.sparse.row_sparse_array(([[1.0], [2.0]], [1, 1]), shape=(3, 1)).check_format()
    nd.sparse.row_sparse_array(([[1.0], [2.0]], [0, 2]), shape=(3, 1)).check_format()
    with pytest.raises(MXNetError, match="lie in"):
        nd.sparse.row_sparse_array(([[1.0]], [5]), shape=(3, 1)).check_format()
    with pytest.raises(ValueError):
        nd.array([1.0, 2.0]).tostype("csr")
    with pytest.raises(ValueError):
        nd.sparse.zeros("coo", (2, 2))


def test_copy_astype_context_and_setitem():
    a = _sparse_dense((4, 5))
    c = nd.array(a).tostype("csr")
    d = c.astype("float64")
    assert d.stype == "csr" and d.dtype == np.float64
    np.testing.assert_array_equal(d.asnumpy(), a)
    e = c.copyto(mx.cpu(1))
    assert e.context == mx.cpu(1) and e.stype == "csr"
    dense_out = nd.zeros((4, 5))
    c.copyto(dense_out)
    np.testing.assert_array_equal(dense_out.asnumpy(), a)
    r = nd.sparse.zeros("row_sparse", (4, 5))
    r[:] = nd.array(a)
    np.testing.assert_array_equal(r.asnumpy(), a)
    assert r.stype == "row_sparse"
    with pytest.raises(MXNetError):
        r[1] = 3


def test_csr_row_slicing():
    a = _sparse_dense((6, 4))
    c = nd.array(a).tostype("csr")
    for key in (slice(1, 4), slice(None, 2), slice(3, None), 2, -1):
        s = c[key]
        assert s.stype == "csr"
        np.testing.assert_array_equal(s.asnumpy(), a[key].reshape(-1, 4))
    sl = nd.slice(c, begin=(1, 1), end=(5, 3))
    assert sl.stype == "csr"
    np.testing.assert_array_equal(sl.asnumpy(), a[1:5, 1:3])


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("name,ref", [("sqrt", np.sqrt), ("square", np.square), ("abs", np.abs),
                                      ("negative", np.negative), ("relu", lambda x: np.maximum(x, 0)),
                                      ("sign", np.sign), ("tanh", np.tanh)])
def test_zero_preserving_unary_keeps_storage(stype, name, ref):
    a = np.abs(_sparse_dense((5, 4))) if name == "sqrt" else _sparse_dense((5, 4))
    x = nd.array(a).tostype(stype)
    y = getattr(nd, name)(x)
    assert y.stype == stype
    np.testing.assert_allclose(y.asnumpy(), ref(a), rtol=1e-6)
    assert (x * 2.5).stype == stype and (x / 2).stype == stype
    np.testing.assert_allclose((x * 2.5).asnumpy(), a * 2.5, rtol=1e-6)


def test_fallback_is_dense_and_warns_once(monkeypatch):
    a = _sparse_dense((3, 4))
    x = nd.array(a).tostype("row_sparse")
    monkeypatch.delenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", raising=False)
    from hybridnet.ndarray import sparse as sp
    sp._FALLBACK_SEEN.discard(("exp", ("row_sparse",)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = nd.exp(x)
        nd.exp(x)
    assert [str(m.message) for m in w if "fallback" in str(m.message)].__len__() == 1
    assert y.stype == "default"
    np.testing.assert_allclose(y.asnumpy(), np.exp(a), rtol=1e-6)
    np.testing.assert_allclose((x + 1).asnumpy(), a + 1, rtol=1e-6)


def test_elemwise_storage_rules():
    a, b = _sparse_dense((6, 3), rows_only=True), _sparse_dense((6, 3), rows_only=True)
    ra, rb = nd.array(a).tostype("row_sparse"), nd.array(b).tostype("row_sparse")
    s = ra + rb
    assert s.stype == "row_sparse"
    np.testing.assert_allclose(s.asnumpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose((ra - rb).asnumpy(), a - b, rtol=1e-6)
    for st in ("csr", "row_sparse"):
        z = nd.zeros_like(nd.array(a).tostype(st))
        assert z.stype == st and z.data.shape[0] == 0 and not z.asnumpy().any()
    cm = nd.elemwise_mul(nd.array(a).tostype("csr"), nd.array(b))
    assert cm.stype == "csr"
    np.testing.assert_allclose(cm.asnumpy(), a * b, rtol=1e-6)
    m = nd.elemwise_mul(ra, nd.array(b))
    assert m.stype == "row_sparse"
    np.testing.assert_allclose(m.asnumpy(), a * b, rtol=1e-6)
    assert nd.elemwise_add(ra, nd.array(b)).stype == "default"
    ca, cb = nd.array(a).tostype("csr"), nd.array(b).tostype("csr")
    assert (ca + cb).stype == "csr"
    np.testing.assert_allclose((ca + cb).asnumpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(nd.sparse.add(ca, cb).asnumpy(), a + b, rtol=1e-6)
    n = nd.add_n(ra, rb, ra)
    assert n.stype == "row_sparse"
    np.testing.assert_allclose(n.asnumpy(), 2 * a + b, rtol=1e-6)
    ra += rb
    assert ra.stype == "row_sparse"
    np.testing.assert_allclose(ra.asnumpy(), a + b, rtol=1e-6)


def test_dot_storage_rules():
    a = _sparse_dense((4, 6))
    w = R.randn(6, 3).astype(np.float32)
    v = R.randn(4, 3).astype(np.float32)
    c = nd.array(a).tostype("csr")
    out = nd.dot(c, nd.array(w))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), a @ w, rtol=1e-5, atol=1e-6)
    t = nd.dot(c, nd.array(v), transpose_a=True)
    assert t.stype == "row_sparse"
    np.testing.assert_allclose(t.asnumpy(), a.T @ v, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(t.indices.asnumpy(), np.unique(np.nonzero(a)[1]))
    wr = nd.array(w).tostype("row_sparse")
    np.testing.assert_allclose(nd.dot(c, wr).asnumpy(), a @ w, rtol=1e-5, atol=1e-6)
    d = nd.dot(nd.array(v.T), c)
    np.testing.assert_allclose(d.asnumpy(), v.T @ a, rtol=1e-5, atol=1e-6)
    assert d.stype == "csr"
    assert nd.dot(nd.array(v.T), c, forward_stype="default").stype == "default"
    np.testing.assert_allclose(nd.dot(nd.array(a), wr).asnumpy(), a @ w, rtol=1e-5, atol=1e-6)


def test_retain_sum_mean():
    a = _sparse_dense((6, 2), rows_only=True)
    a[[0, 2, 5]] += 1
    r = nd.array(a).tostype("row_sparse")
    kept = nd.sparse.retain(r, nd.array([0, 2, 3]))
    assert kept.stype == "row_sparse"
    exp = np.zeros_like(a)
    exp[[0, 2, 3]] = a[[0, 2, 3]]
    np.testing.assert_array_equal(kept.asnumpy(), exp)
    np.testing.assert_array_equal(kept.indices.asnumpy(), [0, 2] + ([3] if a[3].any() else []))
    c = nd.array(a).tostype("csr")
    for axis in (0, 1):
        np.testing.assert_allclose(nd.sum(c, axis=axis).asnumpy(), a.sum(axis), rtol=1e-6)
        np.testing.assert_allclose(nd.mean(c, axis=axis).asnumpy(), a.mean(axis), rtol=1e-6)


def test_dense_calls_untouched_by_sparse_rules():
    x = nd.array([[-1.0, 2.0]])
    assert nd.relu(x).__class__ is nd.NDArray
    with pytest.raises(TypeError, match="expected NDArray"):
        nd.cast_storage(np.ones(2), stype="csr")
