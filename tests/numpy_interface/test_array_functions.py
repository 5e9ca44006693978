"""mx.np functions MXNet 1.9.1 computes with operators of its own (pad, percentile, unique, insert,
delete...): the front-end functions against official NumPy, their gradients, tracing, and the
np-mode autograd/indexing/Gluon behaviours MXNet's own tests check (zero gradients through a
comparison, boolean scalar indices, empty reversed slices, mixed classic/np block outputs)."""
import numpy as onp
import pytest

import hybridnet as mx
from hybridnet import gluon, np, npx

RS = onp.random.RandomState(11)
A = RS.uniform(-1, 1, (3, 4)).astype("float32")
V = onp.array([3.0, 1.0, 2.0, 3.0, 1.0, 7.0], dtype="float32")
I = onp.array([0, 1, 1, 3, 2, 1, 7], dtype="int64")


@pytest.mark.parametrize("mine, ref", [
    (lambda: np.pad(np.array(A), ((1, 2), (2, 0))), lambda: onp.pad(A, ((1, 2), (2, 0)))),
    (lambda: np.pad(np.array(A), ((1, 1),), mode="constant", constant_values=2.5),
     lambda: onp.pad(A, ((1, 1),), constant_values=2.5)),
    (lambda: np.pad(np.array(A), ((2, 3), (5, 1)), mode="reflect"), lambda: onp.pad(A, ((2, 3), (5, 1)), "reflect")),
    (lambda: np.pad(np.array(A), ((2, 3), (5, 1)), mode="symmetric"),
     lambda: onp.pad(A, ((2, 3), (5, 1)), "symmetric")),
    (lambda: np.pad(np.array(A), ((2, 1), (0, 3)), mode="edge"), lambda: onp.pad(A, ((2, 1), (0, 3)), "edge")),
    (lambda: np.pad(np.array(A), ((1, 1), (2, 2)), mode="maximum"), lambda: onp.pad(A, ((1, 1), (2, 2)), "maximum")),
    (lambda: np.pad(np.array(A), ((1, 1), (2, 2)), mode="minimum"), lambda: onp.pad(A, ((1, 1), (2, 2)), "minimum")),
    (lambda: np.percentile(np.array(A), 30), lambda: onp.percentile(A, 30)),
    (lambda: np.percentile(np.array(A), np.array([10.0, 50.0, 95.0]), axis=1, keepdims=True),
     lambda: onp.percentile(A, [10.0, 50.0, 95.0], axis=1, keepdims=True)),
    (lambda: np.percentile(np.array(A), 40, axis=0, interpolation="nearest"),
     lambda: onp.percentile(A, 40, axis=0, method="nearest")),
    (lambda: np.quantile(np.array(A), 0.25, axis=(0, 1), interpolation="midpoint"),
     lambda: onp.quantile(A, 0.25, axis=(0, 1), method="midpoint")),
    (lambda: np.quantile(np.array(A), np.array([0.1, 0.9])), lambda: onp.quantile(A, [0.1, 0.9])),
    (lambda: np.nan_to_num(np.array([1.0, onp.nan, onp.inf, -onp.inf]), nan=3.0, posinf=9.0),
     lambda: onp.nan_to_num(onp.array([1.0, onp.nan, onp.inf, -onp.inf], "float32"), nan=3.0, posinf=9.0)),
    (lambda: np.unique(np.array(V)), lambda: onp.unique(V)),
    (lambda: np.unique(np.array(V), return_index=True)[1], lambda: onp.unique(V, return_index=True)[1]),
    (lambda: np.unique(np.array(V), return_inverse=True)[1], lambda: onp.unique(V, return_inverse=True)[1]),
    (lambda: np.unique(np.array(V), return_counts=True)[1], lambda: onp.unique(V, return_counts=True)[1]),
    (lambda: np.unique(np.array([[1, 2], [1, 2], [0, 5]]), axis=0),
     lambda: onp.unique(onp.array([[1, 2], [1, 2], [0, 5]], "float32"), axis=0)),
    (lambda: np.bincount(np.array(I)), lambda: onp.bincount(I)),
    (lambda: np.bincount(np.array(I), weights=np.array(V.tolist() + [0.5]), minlength=10),
     lambda: onp.bincount(I, weights=V.tolist() + [0.5], minlength=10)),
    (lambda: np.polyval(np.array([1.0, -2.0, 3.0]), np.array(A)), lambda: onp.polyval([1.0, -2.0, 3.0], A)),
    (lambda: np.ediff1d(np.array(A), to_begin=np.array([5.0, 6.0]), to_end=-1.0),
     lambda: onp.ediff1d(A, to_begin=[5.0, 6.0], to_end=-1.0)),
    (lambda: np.indices((2, 3)), lambda: onp.indices((2, 3))),
    (lambda: np.diag_indices_from(np.ones((3, 3)))[1], lambda: onp.diag_indices_from(onp.ones((3, 3)))[1]),
    (lambda: np.unravel_index(np.array([22, 41, 37], dtype="int64"), (7, 6))[0],
     lambda: onp.unravel_index([22, 41, 37], (7, 6))[0]),
    (lambda: np.resize(np.array(A), (5, 5)), lambda: onp.resize(A, (5, 5))),
    (lambda: np.delete(np.array(A), 1, axis=1), lambda: onp.delete(A, 1, axis=1)),
    (lambda: np.delete(np.array(A), slice(0, None, 2)), lambda: onp.delete(A, slice(0, None, 2))),
    (lambda: np.delete(np.array(A), [0, 2], axis=0), lambda: onp.delete(A, [0, 2], axis=0)),
    (lambda: np.insert(np.array(A), 1, 5.0, axis=1), lambda: onp.insert(A, 1, 5.0, axis=1)),
    (lambda: np.insert(np.array(A), [3, 0, 3], np.array([7.0, 8.0, 9.0])), lambda: onp.insert(A, [3, 0, 3], [7, 8, 9])),
    (lambda: np.insert(np.array(A), slice(0, 4, 2), np.array([1.0, 2.0]), axis=1),
     lambda: onp.insert(A, slice(0, 4, 2), [1.0, 2.0], axis=1)),
    (lambda: np.insert(np.array(A), 2, np.array([[1.0, 2.0, 3.0]]), axis=1),
     lambda: onp.insert(A, 2, [[1.0, 2.0, 3.0]], axis=1)),
    (lambda: np.hamming(6), lambda: onp.hamming(6).astype("float32")),
    (lambda: np.blackman(1), lambda: onp.blackman(1).astype("float32")),
])
def test_operator_functions_against_numpy(mine, ref):
    npx.set_np()
    got, want = mine(), onp.asarray(ref())
    assert type(got) is np.ndarray
    assert got.shape == want.shape
    if want.dtype.kind in "iub":
        assert got.dtype.kind in "iub"
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_function_results_and_errors_as_mxnet():
    npx.set_np()
    u = np.unique(np.array(V), return_index=True, return_counts=True)
    assert isinstance(u, tuple) and len(u) == 3 and u[1].dtype == onp.int64
    assert np.indices((2, 2)).dtype == onp.int32  # MXNet's default, not NumPy's int64
    assert np.hanning(4).dtype == onp.float32 and np.hanning(4, dtype="float64").dtype == onp.float64
    x = np.array([1.0, onp.nan])
    assert np.nan_to_num(x, copy=False) is x and x.tolist() == [1.0, 0.0]
    ints = np.array([1, 2], dtype="int32")
    assert np.nan_to_num(ints) is ints
    assert np.percentile(np.arange(5, dtype="float64"), 50).dtype == onp.float64
    with pytest.raises(TypeError, match="pad_width"):
        np.pad(np.ones((2,)), [(1, 1)])
    with pytest.raises(ValueError, match="wrap"):
        np.pad(np.ones((2,)), ((1, 1),), mode="wrap")
    with pytest.raises(mx.MXNetError, match="bincount"):
        np.bincount(np.array([0.5, 1.0]))
    with pytest.raises(NotImplementedError):
        np.unravel_index(np.array([1], dtype="int64"), (2, 2), order="F")
    with pytest.raises(mx.MXNetError, match="out of bounds"):
        np.delete(np.ones((3,)), 5)


def test_gradients_flow_through_the_operators():
    npx.set_np()
    x = np.array(A)
    x.attach_grad()
    with mx.autograd.record():
        y = (np.pad(x, ((1, 1), (2, 0)), mode="reflect") * 2.0).sum() + np.percentile(x, 50) \
            + np.insert(x, 1, 3.0, axis=0).sum() + np.delete(x, 0, axis=1).sum()
    y.backward()
    want = onp.zeros_like(A)
    # reflect: each source element counted as often as it appears in the padded array, times 2
    rows = [1, 0, 1, 2, 1]
    cols = [2, 1, 0, 1, 2, 3]
    for r in rows:
        for c in cols:
            want[r, c] += 2.0
    flat = onp.argsort(A.reshape(-1), kind="stable")
    lo, hi = flat[5], flat[6]  # median of 12 values: the mean of the 6th and 7th smallest
    want.reshape(-1)[lo] += 0.5
    want.reshape(-1)[hi] += 0.5
    want += 1.0
    want[:, 1:] += 1.0
    onp.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_traced_functions_equal_eager():
    npx.set_np()

    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.np.pad(x, ((1, 1), (0, 2)), mode="edge") + 1.0, F.np.percentile(x, 25, axis=1)

    net = Net()
    x = np.array(A)
    eager = net(x)
    net.hybridize()
    traced = net(x)
    for e, t in zip(eager, traced):
        onp.testing.assert_allclose(t.asnumpy(), e.asnumpy(), rtol=1e-6)
    onp.testing.assert_allclose(traced[0].asnumpy(), onp.pad(A, ((1, 1), (0, 2)), "edge") + 1.0, rtol=1e-6)


@pytest.mark.parametrize("hybridize", [False, True])
def test_backward_through_a_comparison_gives_zero_gradients(hybridize):
    npx.set_np()

    class Cmp(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a > b

    net = Cmp()
    if hybridize:
        net.hybridize()
    a, b = np.array(A), np.array(A[::-1].copy())
    a.attach_grad()
    b.attach_grad()
    a.grad[:] = 5.0
    with mx.autograd.record():
        out = net(a, b * 2.0)
    assert out.dtype == onp.bool_
    out.backward()
    assert (a.grad.asnumpy() == 0).all() and (b.grad.asnumpy() == 0).all()
    y = np.ones((2,))
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        (y > 0).backward()


def test_boolean_scalar_indices_follow_numpy():
    npx.set_np()
    a = np.array(A)
    assert a[True].shape == (1, 3, 4) and a[False].shape == (0, 3, 4)
    assert a[np.array(True, dtype="bool")].shape == (1, 3, 4)
    onp.testing.assert_array_equal(a[1, True].asnumpy(), A[1, True])
    b = a.copy()
    b[False, 1] = 8.0
    onp.testing.assert_array_equal(b.asnumpy(), A)
    b[0, True, 1] = 8.0
    want = A.copy()
    want[0, True, 1] = 8.0
    onp.testing.assert_array_equal(b.asnumpy(), want)
    with pytest.raises(IndexError, match="boolean scalars"):
        mx.nd.array(A)[True]


def test_reversed_empty_slice_in_np_mode():
    npx.set_np()

    class Slice(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x[2:-1:-1] + 1.0

    net = Slice()
    net.hybridize()
    assert net(np.ones((6, 2))).shape == onp.ones((6, 2))[2:-1:-1].shape == (0, 2)


def test_mixed_classic_and_np_outputs_are_refused():
    @mx.util.use_np
    class Mixed(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.as_nd_ndarray() + 1, F.np.multiply(x, x)

    class Classic(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.as_nd_ndarray() + 1, x.as_nd_ndarray() * 2

    x = np.ones((2, 3))
    for hybridize in (False, True):
        net = Mixed()
        if hybridize:
            net.hybridize()
        with pytest.raises(TypeError, match="classic"):
            net(x)
        out = Classic()
        if hybridize:
            out.hybridize()
        assert all(type(o) is mx.nd.NDArray for o in out(x))
