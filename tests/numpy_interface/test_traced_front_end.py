"""mx.np functions that MXNet 1.9.1 computes with operators of their own so that they trace without
shapes (_npi_rot90, _npi_diff, _np_atleast_Nd, _npi_average, _npi_mvn_fallback, _npi_choice with an
array population, _npi_tensordot for inner, _npi_diag_indices_from): hybridized == eager == NumPy;
NumPy's ufunc keywords raise what MXNet's wrap_np_unary/binary_func raise; float16 mod rounds
once as NumPy; integer matrices in the eigen-solvers."""
import numpy as onp
import pytest

import hybridnet as mx
from hybridnet import gluon, np, npx

RS = onp.random.RandomState(5)
A = RS.uniform(-1, 1, (3, 4)).astype("float32")
W = RS.uniform(0.5, 1, (3, 4)).astype("float32")


class Fn(gluon.HybridBlock):
    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def hybrid_forward(self, F, *xs):
        return self._fn(F, *xs)


@pytest.mark.parametrize("fn, ref, args", [
    (lambda F, a: F.np.rot90(a, 1), lambda a: onp.rot90(a, 1), (A,)),
    (lambda F, a: F.np.rot90(a, -3, axes=(1, 0)), lambda a: onp.rot90(a, -3, axes=(1, 0)), (A,)),
    (lambda F, a: F.np.diff(a, 2, axis=1), lambda a: onp.diff(a, 2, axis=1), (A,)),
    (lambda F, a: F.np.diff(a[:, :1], 3), lambda a: onp.diff(a[:, :1], 3), (A,)),
    (lambda F, a: F.np.atleast_3d(a), lambda a: onp.atleast_3d(a), (A,)),
    (lambda F, a: F.np.atleast_2d(a[0]), lambda a: onp.atleast_2d(a[0]), (A,)),
    (lambda F, a, w: F.np.average(a, axis=1, weights=w), lambda a, w: onp.average(a, axis=1, weights=w), (A, W)),
    (lambda F, a, w: F.np.average(a, axis=0, weights=w[:, 0]),
     lambda a, w: onp.average(a, axis=0, weights=w[:, 0]), (A, W)),
    (lambda F, a: F.np.average(a), lambda a: onp.average(a), (A,)),
    (lambda F, a, w: F.np.inner(a, w), lambda a, w: onp.inner(a, w), (A, W)),
    (lambda F, a: F.np.diag_indices_from(a[:3, :3]),
     lambda a: onp.asarray(onp.diag_indices_from(a[:3, :3])), (A,)),
])
def test_traced_equals_eager_equals_numpy(fn, ref, args):
    npx.set_np()
    want = ref(*args)
    for hybridize in (False, True):
        blk = Fn(fn)
        if hybridize:
            blk.hybridize()
        got = blk(*[np.array(a) for a in args])
        got = onp.asarray([g.asnumpy() for g in got]) if isinstance(got, (tuple, list)) else got.asnumpy()
        onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_average_returned_and_gradients():
    npx.set_np()
    from hybridnet import autograd
    a, w = np.array(A), np.array(W)
    a.attach_grad()
    w.attach_grad()
    with autograd.record():
        avg, scl = np.average(a, axis=1, weights=w, returned=True)
        avg.sum().backward()
    onp.testing.assert_allclose(scl.asnumpy(), W.sum(1), rtol=1e-5)
    onp.testing.assert_allclose(a.grad.asnumpy(), W / W.sum(1, keepdims=True), rtol=1e-5)


def test_random_samplers_trace():
    npx.set_np()
    mvn = Fn(lambda F, m, c: F.np.random.multivariate_normal(m, c, (2, 5)))
    mvn.hybridize()
    out = mvn(np.zeros((3, 2)), np.array(onp.eye(2, dtype="float32")))
    assert out.shape == (2, 5, 3, 2)
    choice = Fn(lambda F, a: F.np.random.choice(a, (4,), False))
    choice.hybridize()
    pop = np.arange(10) * 3
    got = choice(pop).asnumpy()
    assert got.shape == (4,) and len(set(got.tolist())) == 4 and all(v % 3 == 0 for v in got)
    weighted = np.random.choice(np.arange(5), 6, True, np.array([0.0, 0.0, 1.0, 0.0, 0.0]))
    assert (weighted.asnumpy() == 2).all()


@pytest.mark.parametrize("call", [lambda x: np.sin(x, where=False), lambda x: np.fix(x, subok=False),
                                  lambda x: np.exp(x, dtype="int8"), lambda x: np.sqrt(x, casting="safe"),
                                  lambda x: np.add(x, x, order="C"), lambda x: np.isnan(x, where=False)])
def test_ufunc_keywords_not_implemented(call):
    npx.set_np()
    with pytest.raises(NotImplementedError):
        call(np.array(A))


@pytest.mark.parametrize("call", [lambda x: np.sin(x, dtype="abcdefg"), lambda x: np.add(x, x, casting="mxnet"),
                                  lambda x: np.cos(x, bogus=1), lambda x: np.isinf(x, out=np.empty_like(x))])
def test_ufunc_keywords_type_errors(call):
    npx.set_np()
    with pytest.raises(TypeError):
        call(np.array(A))


def test_ufunc_defaults_and_bool_out_pass():
    npx.set_np()
    x = np.array(A)
    onp.testing.assert_allclose(np.sin(x, where=True, casting="same_kind", order="K", dtype=None, subok=True).asnumpy(),
                                onp.sin(A), rtol=1e-6)
    out = np.empty_like(x).astype("bool")
    np.isfinite(x, out)
    assert out.asnumpy().all()


def test_float16_mod_rounds_once():
    a = RS.uniform(1, 10, (50,)).astype("float16")
    b = RS.uniform(1, 10, (50,)).astype("float16")
    npx.set_np()
    onp.testing.assert_array_equal(np.mod(np.array(a), np.array(b)).asnumpy(), onp.mod(a, b))


def test_eigen_solvers_take_integer_matrices():
    npx.set_np()
    m = onp.array([[2, 1], [1, 3]], dtype="int32")
    onp.testing.assert_allclose(np.linalg.eigvalsh(np.array(m)).asnumpy(), onp.linalg.eigvalsh(m), rtol=1e-5)
    onp.testing.assert_allclose(np.linalg.eigvals(np.array(m.astype("uint8"))).asnumpy(),
                                onp.sort(onp.linalg.eigvals(m)), rtol=1e-5)
    w, v = np.linalg.eigh(np.array(m.astype("int64")))
    onp.testing.assert_allclose(w.asnumpy(), onp.linalg.eigh(m)[0], rtol=1e-5)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_integer_gradients_eager_and_hybridized(dtype):
    """Integer np arrays carry gradients (the engine's float64 twins) through eager operators and
    hybridized blocks alike, as MXNet differentiates them."""
    from hybridnet import autograd
    npx.set_np()
    x = np.array(onp.arange(6).reshape(2, 3), dtype=dtype)
    for hybridize in (False, True):
        blk = Fn(lambda F, a: F.np.flip(F.np.expand_dims(a, 0), axis=2) * 3)
        if hybridize:
            blk.hybridize()
        x.attach_grad()
        with autograd.record():
            y = blk(x)
        y.backward()
        assert x.grad.dtype == onp.dtype(dtype)
        onp.testing.assert_array_equal(x.grad.asnumpy(), onp.full((2, 3), 3, dtype=dtype))
    x.attach_grad()
    with autograd.record():
        y = np.sum(x, axis=0, dtype=dtype)
    y.backward()
    onp.testing.assert_array_equal(x.grad.asnumpy(), onp.ones((2, 3), dtype=dtype))


def test_array_split_traces_and_transpose_checks_axes():
    npx.set_np()
    x = onp.arange(14, dtype="float32").reshape(7, 2)
    for hybridize in (False, True):
        blk = Fn(lambda F, a: F.np.array_split(a, 3, axis=0))
        if hybridize:
            blk.hybridize()
        got = blk(np.array(x))
        for g, w in zip(got, onp.array_split(x, 3, axis=0)):
            onp.testing.assert_array_equal(g.asnumpy(), w)
    parts = np.array_split(np.array(x), [2, 9])
    assert [p.shape for p in parts] == [(2, 2), (5, 2), (0, 2)]
    d = np.ones((3, 4, 5))
    with pytest.raises(ValueError, match="repeated axis"):
        d.transpose((0, 0, 1))
    with pytest.raises(mx.MXNetError):
        d.transpose((0, 1, 3))
    assert d.transpose((-1, 1, 0)).shape == (5, 4, 3)


def test_mean_with_a_dtype_as_numpy_and_its_gradient():
    from hybridnet import autograd
    npx.set_np()
    xi = onp.array([[100, 90, -120], [7, 8, 9]], dtype="int32")
    onp.testing.assert_array_equal(np.mean(np.array(xi), axis=1, dtype="int8").asnumpy(),
                                   onp.mean(xi, axis=1, dtype="int8"))
    xf = onp.random.RandomState(0).uniform(-1, 1, (3, 5))
    onp.testing.assert_array_equal(np.mean(np.array(xf), axis=1, dtype="float16").asnumpy(),
                                   onp.mean(xf, axis=1).astype("float16"))
    x = np.array(xf.astype("float16"))
    x.attach_grad()
    with autograd.record():
        y = np.mean(x, axis=1, dtype="int8")
    y.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), onp.full((3, 5), 0.2, dtype="float16"), rtol=1e-3)


def test_integer_np_indexing_carries_gradients():
    from hybridnet import autograd
    npx.set_np()
    x = np.array(onp.arange(24).reshape(2, 3, 4), dtype="int32")
    x.attach_grad()
    with autograd.record():
        y = x[1, 1:, ::2]
    y.backward()
    want = onp.zeros((2, 3, 4), dtype="int32")
    want[1, 1:, ::2] = 1
    onp.testing.assert_array_equal(x.grad.asnumpy(), want)


@pytest.mark.parametrize("hybridize", [False, True])
def test_integer_dtype_reductions_pass_gradients(hybridize):
    """np.sum/np.mean with an integer dtype= pass the gradient through the cast, as MXNet's, for
    integer and float inputs, eagerly and hybridized."""
    from hybridnet import autograd
    npx.set_np()
    for dtype, op, scale in (("int8", "sum", 1.0), ("float16", "mean", 0.5)):
        blk = Fn(lambda F, a, op=op: getattr(F.np, op)(a, axis=1, dtype="int8", keepdims=True))
        if hybridize:
            blk.hybridize()
        x = np.array(onp.arange(6).reshape(3, 2), dtype=dtype)
        x.attach_grad()
        with autograd.record():
            y = blk(x)
        assert y.dtype == onp.int8
        y.backward()
        onp.testing.assert_allclose(x.grad.asnumpy().astype("float64"), onp.full((3, 2), scale))
