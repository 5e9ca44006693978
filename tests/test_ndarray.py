"""mx.nd.NDArray against MXNet 1.9.1 behaviour: creation and dtype rules, conversion, Python
operators, indexing (basic/advanced, views vs copies), slice assignment, repr, interop."""
import copy
import pickle

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import autograd, nd
from hybridnet.base import MXNetError


# ---- creation --------------------------------------------------------------------------------
def test_array_dtype_rules():
    # MXNet: float32 unless the source is an NDArray or dtype is given -- NumPy arrays included.
    assert nd.array([1, 2, 3]).dtype is np.float32
    assert nd.array(np.arange(3)).dtype is np.float32
    assert nd.array(np.arange(3.0)).dtype is np.float32
    assert nd.array([True, False]).dtype is np.float32
    assert nd.array(np.arange(3), dtype=np.int64).dtype is np.int64
    assert nd.array([1, 2], dtype="float16").dtype is np.float16
    src = nd.array([1, 2], dtype="int32")
    assert nd.array(src).dtype is np.int32
    assert nd.array(src, dtype="float64").dtype is np.float64
    np.testing.assert_array_equal(nd.array([[1, 2], [3, 4]]).asnumpy(), [[1, 2], [3, 4]])


def test_array_copies_its_source():
    a = np.zeros(3, dtype=np.float32)
    x = nd.array(a)
    a[0] = 5
    assert x.asnumpy()[0] == 0
    y = nd.array(x)
    x[:] = 7
    assert y.asnumpy().tolist() == [0, 0, 0]


def test_array_bad_input():
    with pytest.raises(TypeError):
        nd.array([[1, 2], [3]])
    with pytest.raises(TypeError):
        nd.array([1, 2], dtype="complex64")
    with pytest.raises(TypeError):
        nd.zeros((2,), dtype="not_a_dtype")


def test_creation_functions():
    assert nd.zeros((2, 3)).asnumpy().tolist() == [[0] * 3] * 2
    assert nd.zeros(4).shape == (4,)
    assert nd.ones((2,), dtype="int32").asnumpy().tolist() == [1, 1]
    assert nd.ones((2,), dtype="int32").dtype is np.int32
    f = nd.full((2, 2), 3.5)
    assert f.dtype is np.float32 and f.asnumpy().tolist() == [[3.5, 3.5], [3.5, 3.5]]
    out = nd.zeros((2,))
    assert nd.full((2,), 2, out=out) is out and out.asnumpy().tolist() == [2, 2]
    assert nd.empty((3, 1)).shape == (3, 1)
    np.testing.assert_array_equal(nd.arange(5).asnumpy(), np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(nd.arange(1, 7, 2).asnumpy(), [1, 3, 5])
    np.testing.assert_array_equal(nd.arange(0, 3, repeat=2).asnumpy(), [0, 0, 1, 1, 2, 2])
    assert nd.arange(3, dtype="int64").dtype is np.int64
    np.testing.assert_array_equal(nd.eye(3, 4, 1).asnumpy(), np.eye(3, 4, 1))
    np.testing.assert_allclose(nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5), rtol=1e-6)
    z = nd.zeros((2, 2), stype="row_sparse")  # sparse storage: nothing stored
    assert z.stype == "row_sparse" and z.indices.shape == (0,) and z.asnumpy().tolist() == [[0, 0], [0, 0]]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool"])
def test_dtypes_roundtrip(dtype):
    a = np.array([[0, 1], [1, 0]]).astype(dtype)
    x = nd.array(a, dtype=dtype)
    assert x.dtype is np.dtype(dtype).type
    assert x.asnumpy().dtype == np.dtype(dtype)
    np.testing.assert_array_equal(x.asnumpy(), a)
    y = x.astype("float64")
    assert y.dtype is np.float64
    np.testing.assert_array_equal(y.asnumpy(), a.astype("float64"))
    assert x.astype(dtype, copy=False) is x
    assert x.astype(dtype) is not x


def test_bfloat16():
    x = nd.array([1.5, 2.25, -3.0], dtype="bfloat16")
    assert x.dtype == mx.base.BFLOAT16_NP
    assert x.asnumpy().dtype == np.float32  # NumPy has no bfloat16: values come back as float32
    np.testing.assert_array_equal(x.asnumpy(), [1.5, 2.25, -3.0])
    np.testing.assert_array_equal((x * 2).astype("float32").asnumpy(), [3.0, 4.5, -6.0])
    assert "NDArray 3" in repr(x)


def test_properties():
    x = nd.zeros((2, 3, 4))
    assert x.shape == (2, 3, 4) and x.size == 24 and x.ndim == 3 and len(x) == 2
    assert x.context == mx.cpu() and x.ctx == mx.cpu(0)
    assert x.stype == "default" and x.grad is None
    assert x.T.shape == (4, 3, 2)
    v = nd.array([1, 2])
    assert v.T is v  # ndim < 2: MXNet returns self
    t = nd.array([[1, 2, 3]]).T
    np.testing.assert_array_equal(t.asnumpy(), [[1], [2], [3]])


def test_scalar_conversions():
    x = nd.array([2.5])
    assert x.asscalar() == np.float32(2.5) and isinstance(x.asscalar(), np.float32)
    assert float(x) == 2.5 and int(nd.array([3.7])) == 3
    assert bool(nd.array([1])) and not bool(nd.array([0])) and not bool(nd.array(np.zeros((0,))))
    with pytest.raises(ValueError):
        bool(nd.array([1, 2]))
    with pytest.raises(ValueError):
        nd.array([1, 2]).asscalar()
    with pytest.raises(TypeError):
        float(nd.array([1, 2]))
    assert [int(v) for v in nd.array([4, 5, 6])] == [4, 5, 6]
    for row in nd.zeros((3, 2)):
        assert row.shape == (2,)


def test_repr_matches_mxnet():
    assert repr(nd.array([[1, 2]])) == "\n[[1. 2.]]\n<NDArray 1x2 @cpu(0)>"
    assert repr(nd.array([1, 2], dtype="int32")) == "\n[1 2]\n<NDArray 2 @cpu(0)>"
    assert repr(nd.array([1, 0], dtype="bool")) == "\n[ True False]\n<NDArray 2 @cpu(0)>"
    assert repr(nd.array([7])) == "\n[7.]\n<NDArray 1 @cpu(0)>"
    assert str(nd.array(np.zeros((2, 0)))) == "\n[]\n<NDArray 2x0 @cpu(0)>"


# ---- copies, contexts ------------------------------------------------------------------------
def test_copy_copyto_context():
    x = nd.array([1, 2, 3])
    c = x.copy()
    c[:] = 0
    assert x.asnumpy().tolist() == [1, 2, 3]
    dst = nd.zeros((3,))
    assert x.copyto(dst) is dst and dst.asnumpy().tolist() == [1, 2, 3]
    y = x.copyto(mx.cpu())
    assert y is not x and y.asnumpy().tolist() == [1, 2, 3]
    assert x.as_in_context(mx.cpu()) is x
    with pytest.raises(MXNetError):
        x.copyto(nd.zeros((2,)))
    with pytest.warns(RuntimeWarning):
        assert x.copyto(x) is False
    x.wait_to_read()
    nd.waitall()


def test_gpu_context_errors_clearly():
    if torch.cuda.is_available():
        pytest.skip("machine has a GPU")
    with pytest.raises(MXNetError, match="gpu"):
        nd.zeros((2,), ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match="CUDA"):
        nd.array([1, 2], ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match="gpu"):
        nd.ones((2,)).as_in_context(mx.gpu(1))


def test_context_scope():
    assert mx.current_context() == mx.cpu(0)
    with mx.Context("cpu", 0):
        assert nd.zeros((1,)).context == mx.cpu(0)
    with mx.cpu(0):
        assert mx.current_context() == mx.cpu(0)
    assert str(mx.gpu(1)) == "gpu(1)"


def test_context_default_ctx_class_property_is_the_current_context():
    # MXNet 1.9.1's deprecated Context.default_ctx: read and set at class level
    with pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.cpu(0)
    with mx.cpu(3), pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.cpu(3)
    try:
        with pytest.warns(DeprecationWarning):
            mx.Context.default_ctx = mx.cpu(5)
        assert mx.current_context() == mx.cpu(5)
    finally:
        mx.Context._local.value = mx.cpu(0)


def test_detach_shares_memory():
    x = nd.array([1, 2])
    d = x.detach()
    d[:] = 5
    assert x.asnumpy().tolist() == [5, 5]


# ---- operators ---------------------------------------------------------------------------------
def test_arithmetic_against_numpy():
    rng = np.random.RandomState(0)
    a, b = rng.uniform(0.5, 2, (2, 3)).astype(np.float32), rng.uniform(0.5, 2, (2, 3)).astype(np.float32)
    x, y = nd.array(a), nd.array(b)
    for got, want in [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b), (x % y, np.mod(a, b)),
                      (x ** y, a ** b), (x + 2, a + 2), (2 + x, 2 + a), (x - 2, a - 2), (2 - x, 2 - a),
                      (x * 3, a * 3), (3 * x, 3 * a), (x / 4, a / 4), (4 / x, 4 / a), (x ** 2, a ** 2),
                      (2 ** x, 2 ** a), (x % 0.7, np.mod(a, np.float32(0.7))), (3 % x, np.mod(3, a)),
                      (-x, -a), (abs(-x), a), (x + np.float32(1.5), a + 1.5), (np.float64(2) * x, 2 * a)]:
        assert isinstance(got, nd.NDArray)
        assert got.dtype is np.float32
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_broadcasting_operators():
    x = nd.array(np.arange(6).reshape(2, 3))
    y = nd.array([[10], [20]])
    np.testing.assert_array_equal((x + y).asnumpy(), np.arange(6).reshape(2, 3) + [[10], [20]])
    np.testing.assert_array_equal((x * nd.array([1, 0, 2])).asnumpy(), np.arange(6).reshape(2, 3) * [1, 0, 2])


def test_comparisons_return_same_dtype():
    x = nd.array([1, 2, 3])
    for got, want in [(x == 2, [0, 1, 0]), (x != 2, [1, 0, 1]), (x > 1, [0, 1, 1]), (x >= 2, [0, 1, 1]),
                      (x < 3, [1, 1, 0]), (x <= 1, [1, 0, 0]), (x == nd.array([1, 0, 3]), [1, 0, 1]),
                      (2 < x, [0, 0, 1])]:
        assert got.dtype is np.float32
        assert got.asnumpy().tolist() == want
    xi = nd.array([1, 2, 3], dtype="int32")
    assert (xi > 1).dtype is np.int32


def test_integer_scalar_rules():
    # MXNet computes scalar operators in the array's dtype: the scalar is cast to int.
    xi = nd.array([1, 2, 7], dtype="int32")
    for got, want in [(xi / 2, [0, 1, 3]), (xi + 1.7, [2, 3, 8]), (xi * 2, [2, 4, 14]), (xi > 1.5, [0, 1, 1])]:
        assert got.dtype is np.int32
        assert got.asnumpy().tolist() == want


def test_inplace_operators_modify_storage():
    base = nd.array([[1, 2], [3, 4]])
    row = base[1]  # a view in MXNet
    ident = id(row)
    row += 10
    assert id(row) == ident
    assert base.asnumpy().tolist() == [[1, 2], [13, 14]]
    x = nd.array([1.0, 2.0])
    t = x.to_torch()
    x -= 1
    x *= nd.array([2, 3])
    x /= 2
    assert x.to_torch() is t
    np.testing.assert_allclose(x.asnumpy(), [0.0, 1.5])
    x **= 2
    x %= 2
    np.testing.assert_allclose(x.asnumpy(), [0.0, 0.25])
    with pytest.raises(MXNetError):
        x += nd.ones((2, 2))


def test_operator_results_own_their_memory():
    # In MXNet operators return new arrays: writing into a result never changes the input.
    x = nd.array(np.arange(6).reshape(2, 3))
    t = nd.transpose(x)
    t[:] = 0
    assert x.asnumpy().sum() == 15
    r = nd.reshape(x, shape=(3, 2))
    x[:] = 1
    assert r.asnumpy().sum() == 15
    ident = nd.identity(x)
    ident += 1
    assert x.asnumpy().sum() == 6


def test_unsupported_operand():
    with pytest.raises(TypeError):
        nd.array([1]) + "a"
    with pytest.raises(TypeError):
        nd.relu(np.ones(3))


def test_mixed_functions():
    x = nd.array([1, 5])
    np.testing.assert_array_equal(nd.maximum(x, 3).asnumpy(), [3, 5])
    np.testing.assert_array_equal(nd.minimum(3, x).asnumpy(), [1, 3])
    np.testing.assert_array_equal(nd.add(x, x).asnumpy(), [2, 10])
    np.testing.assert_array_equal(nd.subtract(10, x).asnumpy(), [9, 5])
    assert nd.add(1, 2) == 3


def test_operator_methods():
    x = nd.array([[1.0, -2.0], [3.0, -4.0]])
    np.testing.assert_array_equal(x.relu().asnumpy(), [[1, 0], [3, 0]])
    np.testing.assert_array_equal(x.abs().asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_allclose(x.exp().asnumpy(), np.exp(x.asnumpy()), rtol=1e-6)
    np.testing.assert_array_equal(x.clip(-1, 1).asnumpy(), [[1, -1], [1, -1]])
    assert x.zeros_like().asnumpy().sum() == 0 and x.ones_like().asnumpy().sum() == 4
    np.testing.assert_array_equal(x.sum(axis=1).asnumpy(), [-1, -1])
    assert x.sum().shape == (1,)
    np.testing.assert_array_equal(x.transpose().asnumpy(), x.asnumpy().T)
    assert x.expand_dims(axis=0).shape == (1, 2, 2)


def test_reshape_method():
    x = nd.array(np.arange(24).reshape(2, 3, 4))
    assert x.reshape(6, 4).shape == (6, 4)
    assert x.reshape((6, 4)).shape == (6, 4)
    assert x.reshape(shape=(6, 4)).shape == (6, 4)
    assert x.reshape((0, -1)).shape == (2, 12)
    assert x.reshape((-2,)).shape == (2, 3, 4)
    assert x.reshape((-3, 4)).shape == (6, 4)
    assert x.reshape((-4, 1, 2, -2)).shape == (1, 2, 3, 4)
    assert x.reshape((-1, 0), reverse=True).shape == (6, 4)
    v = x.reshape(-1)
    v[0] = 100  # the reshape method returns a view, as in MXNet
    assert x.asnumpy()[0, 0, 0] == 100
    with pytest.raises(MXNetError):
        x.reshape(5, 5)


def test_broadcast_to_method():
    x = nd.array([1, 2, 3])
    np.testing.assert_array_equal(x.broadcast_to((2, 3)).asnumpy(), [[1, 2, 3], [1, 2, 3]])
    with pytest.raises(ValueError):
        nd.zeros((2, 3)).broadcast_to((3,))


# ---- indexing ----------------------------------------------------------------------------------
def test_int_index_keeps_a_dimension_on_1d():
    # MXNet 1.x has no 0-d arrays: x[i] on a 1-D array and x[i, j] on 2-D give shape (1,).
    x = nd.array([1, 2, 3])
    assert x[1].shape == (1,) and x[1].asscalar() == 2
    assert x[-1].asscalar() == 3
    m = nd.array([[1, 2], [3, 4]])
    assert m[1].shape == (2,)
    assert m[1, 0].shape == (1,) and m[1, 0].asscalar() == 3
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[-4]
    with pytest.raises(IndexError):
        m[0, 0, 0]


def test_basic_indexing_matches_numpy():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = nd.array(a)
    keys = [slice(1, 3), (slice(None), 2), (1, slice(None, None, 2)), (slice(None, None, -1),),
            (slice(None), slice(3, 0, -2), slice(None, None, -1)), (Ellipsis, 1), (None, 1),
            (slice(None), None, 2), (Ellipsis, None), (1, Ellipsis, slice(1, 4)), (slice(-2, None), -1, 3),
            (slice(10, 20),), (np.int64(2),), (slice(np.int64(0), np.int32(2)), 1)]
    for k in keys:
        got = x[k].asnumpy()
        want = a[k]
        want = want.reshape(1) if want.ndim == 0 else want
        np.testing.assert_array_equal(got, want, err_msg=str(k))


def test_advanced_indexing_matches_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = nd.array(a)
    cases = [([1, 0],), (np.array([1, 1, 0]),), (slice(None), [0, 2]), (slice(1, None), [0, 1]),
             ([0, 1], [1, 2]), ([0, 1], slice(None), [3, 0]), (1, [0, 2], [1, 3]), (a > 10,),
             (slice(None), a[0] > 5), (Ellipsis, [3, 1])]
    for k in cases:
        np.testing.assert_array_equal(x[k].asnumpy(), a[k], err_msg=str(k))
    # NDArray index arrays (float32 by default, as MXNet's nd.array makes them) are cast to ints
    np.testing.assert_array_equal(x[nd.array([1, 0])].asnumpy(), a[[1, 0]])
    np.testing.assert_array_equal(x[:, nd.array([2, 2], dtype="int32")].asnumpy(), a[:, [2, 2]])
    np.testing.assert_array_equal(x[nd.array(a > 10, dtype="bool")].asnumpy(), a[a > 10])


def test_views_and_copies_follow_mxnet():
    x = nd.array(np.arange(12).reshape(3, 4))
    row = x[1]
    blk = x[0:2]
    row[:] = -1
    assert x.asnumpy()[1].tolist() == [-1] * 4
    blk[0] = 9
    assert x.asnumpy()[0].tolist() == [9] * 4
    col = x[:, 1]  # not contiguous: a copy in MXNet
    col[:] = 100
    assert (x.asnumpy() == 100).sum() == 0
    x[:] = 0
    assert col.asnumpy().tolist() == [100] * 3
    adv = x[[0, 2]]
    adv[:] = 5
    assert x.asnumpy().sum() == 0


def test_setitem_forms():
    x = nd.zeros((2, 3))
    x[:] = 1
    assert x.asnumpy().tolist() == [[1] * 3] * 2
    x[:, 1:2] = 2
    x[1:2, 1:] = 3
    assert x.asnumpy().tolist() == [[1, 2, 1], [1, 3, 3]]
    x[1:, 0:2] = nd.zeros((1, 2))
    x[1, 2] = 4
    assert x.asnumpy().tolist() == [[1, 2, 1], [0, 0, 4]]
    x[[0], [1, 2]] = 5
    assert x.asnumpy().tolist() == [[1, 5, 5], [0, 0, 4]]
    x[::-1, 0:2:2] = [6]
    assert x.asnumpy().tolist() == [[6, 5, 5], [6, 0, 4]]
    x[:] = np.array([7, 8, 9])  # broadcast a NumPy row
    assert x.asnumpy().tolist() == [[7, 8, 9], [7, 8, 9]]
    x[0] = nd.array([[1, 1, 1]])  # leading unit dims of the value are dropped
    x[1] = np.float64(0.5)
    assert x.asnumpy().tolist() == [[1, 1, 1], [0.5, 0.5, 0.5]]
    x[x > 0.7] = -1  # float mask from a comparison is an index array in MXNet; use bool for masks
    m = nd.array([[1, 0, 1], [0, 0, 0]], dtype="bool")
    y = nd.zeros((2, 3))
    y[m] = 3
    assert y.asnumpy().tolist() == [[3, 0, 3], [0, 0, 0]]
    z = nd.array([1, 2, 3, 4])
    z[1:] = z[:-1]  # overlapping source and target
    assert z.asnumpy().tolist() == [1, 1, 2, 3]
    z[::-1] = nd.array([4, 3, 2, 1])
    assert z.asnumpy().tolist() == [1, 2, 3, 4]
    xi = nd.zeros((3,), dtype="int32")
    xi[:] = 2.7
    assert xi.dtype is np.int32 and xi.asnumpy().tolist() == [2, 2, 2]
    with pytest.raises(ValueError):
        x[:] = nd.ones((3, 3))
    with pytest.raises(IndexError):
        x[5] = 1


def test_slice_assign_methods():
    x = nd.zeros((3, 4))
    assert x.slice_assign(nd.ones((2, 2)), (0, 1), (2, 3)) is x
    x.slice_assign_scalar(7, (2, None), (None, None), (1, 2))
    np.testing.assert_array_equal(x.asnumpy(), [[0, 1, 1, 0], [0, 1, 1, 0], [7, 0, 7, 0]])


# ---- interop ---------------------------------------------------------------------------------
def test_numpy_interop():
    x = nd.array([[1, 2], [3, 4]])
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.tolist() == [[1, 2], [3, 4]]
    c = x.asnumpy()
    c[0, 0] = 99
    assert x.asnumpy()[0, 0] == 1  # asnumpy copies
    np.testing.assert_array_equal(np.array(x, dtype=np.float64), [[1, 2], [3, 4]])
    b = nd.from_numpy(np.arange(3, dtype=np.int64))
    assert b.dtype is np.int64


def test_torch_interop_shares_memory():
    t = torch.arange(4, dtype=torch.float32)
    x = nd.from_torch(t)
    x[0] = 10
    assert t[0].item() == 10
    x.to_torch()[1] = 20
    assert x.asnumpy()[1] == 20
    assert nd.from_torch(torch.zeros(2, dtype=torch.float64)).dtype is np.float64
    with pytest.raises(TypeError):
        nd.from_torch(np.zeros(2))


def test_dlpack_roundtrip():
    x = nd.array([1, 2, 3])
    y = nd.from_dlpack(x.to_dlpack_for_read())
    np.testing.assert_array_equal(y.asnumpy(), [1, 2, 3])
    z = nd.from_dlpack(nd.to_dlpack_for_write(x))
    z[0] = 42
    assert x.asnumpy()[0] == 42
    w = nd.from_dlpack(x)  # objects with __dlpack__
    assert w.asnumpy()[0] == 42


def test_concatenate_and_moveaxis():
    a, b = nd.array([[1, 2]]), nd.array([[3, 4]])
    np.testing.assert_array_equal(nd.concatenate([a, b]).asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(nd.concatenate([a, b], axis=1).asnumpy(), [[1, 2, 3, 4]])
    assert nd.concatenate([a], always_copy=False) is a
    with pytest.raises(MXNetError):
        nd.concatenate([a, nd.zeros((1, 3))])
    assert nd.moveaxis(nd.zeros((2, 3, 4)), 0, 2).shape == (3, 4, 2)


def test_pickle_and_deepcopy():
    x = nd.array([[1.5, 2]], dtype="float64")
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is np.float64 and y.asnumpy().tolist() == [[1.5, 2]]
    b = nd.array([1.5, -2], dtype="bfloat16")
    assert copy.deepcopy(b).asnumpy().tolist() == [1.5, -2]
    assert copy.deepcopy(b).dtype == mx.base.BFLOAT16_NP


def test_operator_error_names_op_and_shapes():
    with pytest.raises(MXNetError, match=r"(?s)broadcast_add.*\(2, 3\).*\(4,\)"):
        nd.ones((2, 3)) + nd.ones((4,))


def test_hash_and_identity():
    x = nd.array([1, 2])
    d = {x: 1}
    assert d[x] == 1


def test_no_graph_outside_record():
    x = nd.array([[1.0, 2.0]])
    x.attach_grad()
    ys = [x * 2, x[0], x[0, 1], x[:, 1], x[[0]], x[0:1], x.T, x.astype("float64"), x.copy(), -x, x + x,
          nd.concatenate([x, x]), x.detach(), x.copyto(mx.cpu()), nd.transpose(x), x.reshape(-1)]
    for y in ys:
        assert y.to_torch().grad_fn is None and not y.to_torch().requires_grad


def test_out_argument_writes_in_place():
    x = nd.array([-1.0, 2.0])
    out = nd.zeros((2,))
    ident = out.to_torch()
    assert nd.relu(x, out=out) is out
    assert out.to_torch() is ident and out.asnumpy().tolist() == [0, 2]
    with pytest.raises(MXNetError, match="shape"):
        nd.relu(x, out=nd.zeros((3,)))


def test_training_flag_reaches_operators():
    x = nd.ones((1000,))
    assert (nd.Dropout(x, p=0.5).asnumpy() == 1).all()  # predict mode: identity
    with autograd.train_mode():
        y = nd.Dropout(x, p=0.5).asnumpy()
    assert 0.3 < (y == 0).mean() < 0.7 and set(np.unique(y)) <= {0.0, 2.0}
    with autograd.record(train_mode=False):
        assert (nd.Dropout(x, p=0.5).asnumpy() == 1).all()


def test_split_v2():
    a = np.arange(12.0).reshape(3, 4)
    x = nd.array(a)
    parts = x.split_v2(2, axis=1)
    for p, w in zip(parts, np.split(a, 2, axis=1)):
        np.testing.assert_array_equal(p.asnumpy(), w)
    parts = nd.split_v2(x, (1,), axis=0)
    assert [p.shape for p in parts] == [(1, 4), (2, 4)]
    with pytest.raises((ValueError, MXNetError)):
        nd.split_v2(x, 5, axis=1)


def test_histogram():
    data = np.array([0.5, 1.5, 1.6, 3.0, -1.0])
    h, e = nd.histogram(nd.array(data), bins=3, range=(0, 3))
    wh, we = np.histogram(data, bins=3, range=(0, 3))
    np.testing.assert_array_equal(h.asnumpy(), wh)
    np.testing.assert_allclose(e.asnumpy(), we)
    h2, _ = nd.histogram(nd.array(data), bins=nd.array([0.0, 1.0, 4.0]))
    np.testing.assert_array_equal(h2.asnumpy(), np.histogram(data, bins=[0, 1, 4])[0])


# ---- MXNet 1.9.1 details found by its own test suite ----------------------------------------
def test_pickle_state_is_mxnet_raw_record():
    x = nd.array([[1.5, -2.0, 3.25]], dtype="float64")
    state = x.__getstate__()
    assert set(state) == {"handle"} and isinstance(state["handle"], bytearray)
    assert bytes(state["handle"][:4]) == b"\xc9\xfa\x93\xf9"  # a V2 array record, as MXNet pickles
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    assert y.dtype is np.float64
    # the state MXNet itself writes for mx.nd.arange(1, ctx=mx.gpu()) loads on the CPU
    gpu_state = {"handle": bytearray(b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00"
                                     b"\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                                     b"\x00\x00\x80\x3f")}
    z = nd.zeros((3,))
    z.__setstate__(gpu_state)
    assert z.shape == (1,) and z.asnumpy()[0] == 1.0 and z.context == mx.cpu()
    with pytest.raises(MXNetError):
        z.__setstate__({"handle": bytearray(b"\xc9\xfa\x93")})  # truncated: a clear error
    with pytest.raises(MXNetError):
        z.__setstate__({"data": [1, 2]})


def test_setstate_refuses_a_record_whose_storage_does_not_match_the_class():
    """The class of a pickle comes from the pickle stream, the storage from the record; the two
    disagree only in an altered pickle, which used to give an array whose methods failed (a
    row_sparse record restored as a CSRNDArray: torch's 'col_indices expected sparse row
    compressed tensor layout'; a sparse record in a plain NDArray reporting stype 'default')."""
    rsp = nd.sparse.row_sparse_array((np.ones((2, 3), "f4"), [1, 4]), shape=(6, 3))
    csr = nd.sparse.csr_matrix(np.eye(3, 4, dtype="f4"))
    dense = nd.array([1.0, 2.0])
    for cls, source, stype in ((nd.sparse.CSRNDArray, rsp, "row_sparse"), (nd.NDArray, csr, "csr"),
                               (nd.NDArray, rsp, "row_sparse"), (nd.sparse.RowSparseNDArray, dense, "default")):
        a = cls.__new__(cls)
        with pytest.raises(MXNetError, match=f"holds a {stype} array, but the pickle restores it as "
                                             f"a {cls.__name__}"):
            a.__setstate__(source.__getstate__())
    # matching pickles round-trip and stay sparse
    for x in (rsp, csr, dense):
        y = pickle.loads(pickle.dumps(x))
        assert type(y) is type(x) and y.stype == x.stype
        np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())


def test_from_numpy_zero_copy_semantics():
    a = np.array([[1, 2], [3, 4]], dtype=np.float32)
    x = nd.from_numpy(a)
    with pytest.raises(ValueError):
        a[0, 0] = 5  # the NumPy array became read-only
    x[1, 1] = 100
    assert a[1, 1] == 100  # memory is shared
    with pytest.raises(ValueError, match="C-contiguous"):
        nd.from_numpy(np.arange(6.0).reshape(2, 3).T)
    c = np.arange(6.0).reshape(2, 3).T
    y = nd.from_numpy(c, zero_copy=False)
    y[0, 0] = 42
    assert c[0, 0] == 0 and c.flags.writeable
    assert nd.from_numpy(np.array(7.0)).shape == ()


def test_inplace_shape_methods_are_views():
    x = nd.arange(30).reshape(2, 3, 5)
    copy_, view = x.flatten(), x.flatten(inplace=True)
    assert copy_.shape == view.shape == (2, 15)
    x[0] = -1
    assert view.asnumpy()[0, 0] == -1 and copy_.asnumpy()[0, 0] == 0
    y = nd.ones((1, 4, 1))
    sq = y.squeeze(axis=(0, 2), inplace=True)
    ex = y.expand_dims(axis=-1, inplace=True)
    assert sq.shape == (4,) and ex.shape == (1, 4, 1, 1)
    y[:] = 3
    assert sq.asnumpy().tolist() == [3, 3, 3, 3] and ex.asnumpy().sum() == 12
    assert nd.ones((1, 1)).squeeze(inplace=True).shape == (1,)
    with pytest.raises(MXNetError, match="size 4"):
        y.squeeze(axis=1, inplace=True)


def test_reshape_to_another_size_is_value_error():
    x = nd.arange(30).reshape(2, 3, 5)
    with pytest.raises(ValueError, match="30"):
        x.reshape((2, 3))
    with pytest.raises(MXNetError):  # also an MXNetError
        x.reshape((7,))


def test_moveaxis_sequences_and_errors():
    x = nd.array(np.arange(24).reshape(4, 1, 2, 3))
    for src, dst in [([0, 1], [2, 3]), ([3, 0], [1, 0]), (range(4), range(4)), (-1, 0)]:
        np.testing.assert_array_equal(nd.moveaxis(x, src, dst).asnumpy(),
                                      np.moveaxis(x.asnumpy(), list(src) if isinstance(src, range) else src,
                                                  list(dst) if isinstance(dst, range) else dst))
    for src, dst in [(4, 0), (-5, 0), ([0, 0], [0, 1]), (0, [0, 1])]:
        with pytest.raises(ValueError):
            nd.moveaxis(x, src, dst)


def test_basic_indexing_slice_is_contiguous_matches_numpy():
    import itertools
    shape = (4, 3, 5)
    base = np.arange(60).reshape(shape)
    slices = [slice(None), slice(1, 3), slice(None, None, 2), slice(0, 1), slice(None, None, -1),
              slice(2, 3, -1), slice(3, 1, -1)]
    x = nd.array(base)
    for key in itertools.product(slices, repeat=3):
        pred = nd.NDArray._basic_indexing_slice_is_contiguous(key, shape)
        assert pred == base[key].flags.c_contiguous, key
        if pred and base[key].size:
            y = x.copy()
            y[key][:] = -7  # a contiguous result is a view
            assert (y.asnumpy()[key] == -7).all(), key


def test_cached_op_runs_a_symbol_with_gradients():
    data, w = mx.sym.var("data"), mx.sym.var("w")
    op = nd.CachedOp(mx.sym.FullyConnected(data, w, num_hidden=3, no_bias=True) * 2)
    x = nd.array(np.random.RandomState(0).randn(2, 4))
    wv = nd.array(np.random.RandomState(1).randn(3, 4))
    expect = 2 * x.asnumpy() @ wv.asnumpy().T
    np.testing.assert_allclose(op(x, wv).asnumpy(), expect, rtol=1e-5)
    out = nd.zeros((2, 3))
    assert op(x, wv, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), expect, rtol=1e-5)
    wv.attach_grad()
    with autograd.record():
        y = op(x, wv)
    y.backward()
    np.testing.assert_allclose(wv.grad.asnumpy(), 2 * np.ones((2, 3)).T @ x.asnumpy(), rtol=1e-5)
    with pytest.raises(MXNetError, match="1 inputs given, the symbol has 2"):
        op(x)


def test_creation_out_and_off_matrix_eye():
    out = nd.zeros((2, 2))
    assert nd.ones((2, 2), out=out) is out and out.asnumpy().sum() == 4
    nd.zeros((2, 2), out=out)
    assert out.asnumpy().sum() == 0
    for n, m, k in [(5, 5, 7), (3, 4, -5), (2, 6, 3)]:
        np.testing.assert_array_equal(nd.eye(n, m, k).asnumpy(), np.eye(n, m, k))


def test_integer_division_truncates_in_dtype():
    a = np.array([7, -7, 9, 100], dtype=np.int32)
    b = np.array([2, 2, -4, 7], dtype=np.int32)
    r = (nd.array(a, dtype="int32") / nd.array(b, dtype="int32"))
    assert r.dtype is np.int32
    np.testing.assert_array_equal(r.asnumpy(), np.trunc(a / b).astype(np.int32))
    u = nd.array([200, 7], dtype="uint8") / nd.array([3, 2], dtype="uint8")
    assert u.dtype is np.uint8 and u.asnumpy().tolist() == [66, 3]


def test_save_load_np_shape_semantics(tmp_path):
    fname = str(tmp_path / "arrays")
    zero_size = [nd.array(np.zeros((2, 0, 1))), nd.ones((3,))]
    with mx.np_shape(True):
        scalar = nd.array(np.array(5.0))
        nd.save(fname, zero_size + [scalar])
        back = nd.load(fname)
        assert [a.shape for a in back] == [(2, 0, 1), (3,), ()]
        assert back[2].asscalar() == 5.0
    with pytest.raises(MXNetError, match="np_shape"):
        nd.load(fname)  # saved under NumPy shape semantics
    nd.save(fname, zero_size)
    assert [a.shape for a in nd.load(fname)] == [(2, 0, 1), (3,)]
    with mx.np_shape(True):
        with pytest.raises(MXNetError, match="unknown"):
            nd.load(fname)  # a 0 dim meant "unknown" when it was saved


def test_cpu_contexts_other_than_cpu0_are_kept():
    """MXNet keeps cpu(1), cpu_pinned(0) and cpu_shared(0) apart although they share memory."""
    a = nd.zeros((1, 2), ctx=mx.cpu(1))
    assert a.context == mx.cpu(1) and nd.ones((2,), ctx=mx.cpu(1)).context == mx.cpu(1)
    assert nd.array([1.0], ctx=mx.cpu_pinned(0)).context == mx.cpu_pinned(0)
    assert nd.zeros((1,), ctx=mx.Context("cpu_shared", 0)).context == mx.Context("cpu_shared", 0)
    b = a.as_in_context(mx.cpu(0))
    assert b.context == mx.cpu(0) and b is not a
    assert a.as_in_context(mx.cpu(1)) is a
    assert nd.zeros((1,)).context == mx.cpu(0)
    p = mx.gluon.Parameter("w", shape=(2, 2))
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert [d.context for d in p.list_data()] == [mx.cpu(0), mx.cpu(1)]
