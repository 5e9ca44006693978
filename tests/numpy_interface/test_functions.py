"""mx.np / mx.npx front-end functions against official NumPy (the registry's own samples check
each operator; these check the Python front-end logic around them)."""
import numpy as onp
import pytest

import hybridnet as mx
from hybridnet import np, npx

RS = onp.random.RandomState(3)
A = RS.uniform(-1, 1, (3, 4)).astype("float32")
B = RS.uniform(-1, 1, (4, 2)).astype("float32")
S = (lambda m: m @ m.T + 3 * onp.eye(3))(RS.uniform(-1, 1, (3, 3))).astype("float32")


@pytest.mark.parametrize("mine, ref", [
    (lambda: np.concatenate([np.array(A), np.array(A)], axis=1), lambda: onp.concatenate([A, A], axis=1)),
    (lambda: np.concatenate([np.array(A), np.array(A)], axis=None), lambda: onp.concatenate([A, A], axis=None)),
    (lambda: np.stack([np.array(A), np.array(A)], axis=2), lambda: onp.stack([A, A], axis=2)),
    (lambda: np.vstack([np.array(A), np.array(A)]), lambda: onp.vstack([A, A])),
    (lambda: np.split(np.array(A), 2, axis=1)[1], lambda: onp.split(A, 2, axis=1)[1]),
    (lambda: np.split(np.array(A), [1, 3], axis=1)[2], lambda: onp.split(A, [1, 3], axis=1)[2]),
    (lambda: np.clip(np.array(A), None, 0.2), lambda: onp.clip(A, None, 0.2)),
    (lambda: np.where(np.array(A) > 0, np.array(A), 0.5), lambda: onp.where(A > 0, A, 0.5)),
    (lambda: np.where(np.array(A) > 0, 1.0, np.array(A)), lambda: onp.where(A > 0, 1.0, A)),
    (lambda: np.tensordot(np.array(A), np.array(B), 1), lambda: onp.tensordot(A, B, 1)),
    (lambda: np.tensordot(np.array(A), np.array(A), ([0, 1], [0, 1])), lambda: onp.tensordot(A, A, ([0, 1], [0, 1]))),
    (lambda: np.einsum("ij,jk->ki", np.array(A), np.array(B)), lambda: onp.einsum("ij,jk->ki", A, B)),
    (lambda: np.swapaxes(np.array(A), 0, 1), lambda: onp.swapaxes(A, 0, 1)),
    (lambda: np.moveaxis(np.array(A)[None], 0, 2), lambda: onp.moveaxis(A[None], 0, 2)),
    (lambda: np.expand_dims(np.array(A), 1), lambda: onp.expand_dims(A, 1)),
    (lambda: np.repeat(np.array(A), 2), lambda: onp.repeat(A, 2)),
    (lambda: np.tile(np.array(A), (2, 1)), lambda: onp.tile(A, (2, 1))),
    (lambda: np.transpose(np.array(A)), lambda: onp.transpose(A)),
    (lambda: np.array(A).transpose(1, 0), lambda: A.transpose(1, 0)),
    (lambda: np.sort(np.array(A)), lambda: onp.sort(A)),
    (lambda: np.argsort(np.array(A), axis=0), lambda: onp.argsort(A, axis=0)),
    (lambda: np.take(np.array(A), np.array([0, 5], dtype="int64")), lambda: onp.take(A, [0, 5])),
    (lambda: np.cumsum(np.array(A), axis=1), lambda: onp.cumsum(A, axis=1)),
    (lambda: np.round(np.array(A), 2), lambda: onp.round(A, 2)),
    (lambda: np.nonzero(np.array(A) > 0)[1], lambda: onp.nonzero(A > 0)[1]),
    (lambda: np.var(np.array(A), axis=1, ddof=1), lambda: onp.var(A, axis=1, ddof=1)),
    (lambda: np.amax(np.array(A), axis=0, keepdims=True), lambda: onp.amax(A, axis=0, keepdims=True)),
    (lambda: np.full((2, 2), 3.5), lambda: onp.full((2, 2), 3.5, dtype="float32")),
    (lambda: np.ones_like(np.array(A)), lambda: onp.ones_like(A)),
    (lambda: np.eye(3, 4, 1), lambda: onp.eye(3, 4, 1, dtype="float32")),
    (lambda: np.identity(2), lambda: onp.identity(2, dtype="float32")),
    (lambda: np.arange(2, 9, 3), lambda: onp.arange(2, 9, 3, dtype="float32")),
    (lambda: np.broadcast_to(np.array(A[:1]), (2, 4)), lambda: onp.broadcast_to(A[:1], (2, 4))),
    (lambda: np.linalg.norm(np.array(A), ord=1, axis=1), lambda: onp.linalg.norm(A, ord=1, axis=1)),
    (lambda: np.linalg.inv(np.array(S)), lambda: onp.linalg.inv(S)),
    (lambda: np.linalg.det(np.array(S)), lambda: onp.linalg.det(S)),
    (lambda: np.linalg.cholesky(np.array(S)), lambda: onp.linalg.cholesky(S)),
    (lambda: np.linalg.solve(np.array(S), np.array(A[:, :2].copy())), lambda: onp.linalg.solve(S, A[:, :2])),
    (lambda: np.linalg.pinv(np.array(A)), lambda: onp.linalg.pinv(A)),
    (lambda: np.linalg.eigvalsh(np.array(S)), lambda: onp.linalg.eigvalsh(S)),
    (lambda: np.linalg.svd(np.array(A))[1], lambda: onp.linalg.svd(A, compute_uv=False)),
    (lambda: np.linalg.qr(np.array(S))[1], lambda: onp.linalg.qr(S)[1]),     # a NumPy fallback
    (lambda: np.polyval if False else np.ptp(np.array(A), axis=0), lambda: onp.ptp(A, axis=0)),  # fallback
    (lambda: npx.reshape(np.ones((2, 3, 4)), (-6, 1, 2, -4)), lambda: onp.ones((1, 2, 3, 4), "float32")),
    (lambda: npx.reshape(np.ones((2, 3, 4)), (-1, 4), reverse=True), lambda: onp.ones((6, 4), "float32")),
])
def test_against_numpy(mine, ref):
    npx.set_np()
    got, want = mine(), onp.asarray(ref())
    assert type(got) is np.ndarray
    assert got.shape == want.shape
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_random_shapes_dtypes_and_seed():
    npx.set_np()
    np.random.seed(5)
    u = np.random.uniform(-1, 2, size=(200,))
    np.random.seed(5)
    assert (np.random.uniform(-1, 2, size=(200,)) == u).all().item()
    assert u.dtype == onp.float32 and -1 <= u.min().item() and u.max().item() < 2
    n = np.random.normal(1.0, 0.5, size=(2000,))
    assert abs(n.mean().item() - 1.0) < 0.1 and abs(n.std().item() - 0.5) < 0.1
    r = np.random.randint(0, 4, size=(100,))
    assert r.dtype == onp.int64 and set(onp.unique(r.asnumpy())) <= {0, 1, 2, 3}
    lo = np.zeros((3,))
    arr = np.random.uniform(lo, 1.0)
    assert arr.shape == (3,)
    assert np.random.rand(2, 3).shape == (2, 3) and np.random.randn(4).shape == (4,)
    x = np.arange(10)
    np.random.shuffle(x)
    assert sorted(x.asnumpy().tolist()) == list(range(10))


def test_errors_name_the_function():
    npx.set_np()
    with pytest.raises(mx.MXNetError, match="matmul"):
        np.matmul(np.array(1.0), np.ones((2,)))
    with pytest.raises(ValueError, match="both be None"):
        np.clip(np.ones((2,)), None, None)
    with pytest.raises(TypeError, match="invalid keyword to function .add."):
        np.add(np.ones((2,)), 1, bogus=3)


@pytest.mark.parametrize("mine, ref", [
    (lambda: np.rot90(np.array(A)), lambda: onp.rot90(A)),
    (lambda: np.rot90(np.array(A), 3), lambda: onp.rot90(A, 3)),
    (lambda: np.rot90(np.array(A), 2), lambda: onp.rot90(A, 2)),
    (lambda: np.diff(np.array(A), n=2, axis=1), lambda: onp.diff(A, n=2, axis=1)),
    (lambda: np.meshgrid(np.arange(2), np.arange(3))[1], lambda: onp.meshgrid(onp.arange(2.0), onp.arange(3.0))[1]),
    (lambda: np.meshgrid(np.arange(2), np.arange(3), indexing="ij")[0],
     lambda: onp.meshgrid(onp.arange(2.0), onp.arange(3.0), indexing="ij")[0]),
    (lambda: np.average(np.array(A), axis=1, weights=np.array([1.0, 2.0, 3.0, 4.0])),
     lambda: onp.average(A, axis=1, weights=[1, 2, 3, 4])),
    (lambda: np.atleast_3d(np.ones((2, 3))), lambda: onp.atleast_3d(onp.ones((2, 3), "float32"))),
    (lambda: np.atleast_2d(np.ones((3,))), lambda: onp.atleast_2d(onp.ones((3,), "float32"))),
    (lambda: np.inner(np.array(A), np.array(A)), lambda: onp.inner(A, A)),
    (lambda: np.outer(np.array(A[0]), np.array(B[:, 0])), lambda: onp.outer(A[0], B[:, 0])),
    (lambda: np.logspace(0, 2, 3), lambda: onp.logspace(0, 2, 3)),
    (lambda: np.fliplr(np.array(A)), lambda: onp.fliplr(A)),
    (lambda: np.hsplit(np.array(A), 2)[0], lambda: onp.hsplit(A, 2)[0]),
    (lambda: np.diagonal(np.array(A), 1), lambda: onp.diagonal(A, 1)),
    (lambda: np.diagflat(np.array(A[0])), lambda: onp.diagflat(A[0])),
    (lambda: np.hypot(np.array(A), 2.0), lambda: onp.hypot(A, 2.0)),
    (lambda: np.linalg.eig(np.array(S))[0].sort(), lambda: onp.sort(onp.linalg.eig(S)[0])),
    (lambda: np.hanning(5), lambda: onp.hanning(5).astype("float32")),
])
def test_compositions_against_numpy(mine, ref):
    npx.set_np()
    got, want = mine(), onp.asarray(ref())
    assert type(got) is np.ndarray and got.shape == want.shape
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_more_samplers_and_memory_queries():
    npx.set_np()
    np.random.seed(2)
    for name, args in [("exponential", (2.0,)), ("gumbel", (0.0, 1.0)), ("logistic", (0.0, 1.0)),
                       ("pareto", (3.0,)), ("power", (2.0,)), ("rayleigh", (1.0,)), ("weibull", (2.0,)),
                       ("gamma", (2.0, 1.0)), ("lognormal", (0.0, 1.0)), ("beta", (2.0, 3.0)), ("chisquare", (3.0,))]:
        x = getattr(np.random, name)(*args, size=(4000,))
        ref = getattr(onp.random.RandomState(0), name)(*args, size=(4000,))
        assert x.dtype == onp.float32 and x.shape == (4000,)
        assert abs(x.mean().item() - ref.mean()) < 0.15 * max(1.0, abs(ref.mean())), name
    counts = np.random.multinomial(10, [0.2, 0.8], size=(5,))
    assert counts.dtype == onp.int64 and (counts.sum(axis=1) == 10).all().item()
    picks = np.random.choice(5, size=(5,), replace=False)
    assert sorted(picks.asnumpy().tolist()) == [0, 1, 2, 3, 4]
    assert (np.random.choice(3, size=(6,), p=np.array([0.0, 0.0, 1.0])) == 2).all().item()
    b = npx.random.bernoulli(prob=1.0, size=(3,))
    assert b.tolist() == [1.0, 1.0, 1.0]
    assert npx.random.uniform_n(np.zeros((2,)), 1.0, batch_shape=(3,)).shape == (3, 2)
    a = np.ones((4,))
    assert np.shares_memory(a, a[1:]).item() is True and np.shares_memory(a, a.copy()).item() is False
