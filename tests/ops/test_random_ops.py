"""Sampling operators and ``nd.random``: moments, shapes, dtypes, seeding, dispatch."""
import math

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import symbol as sym
from hybridnet.base import MXNetError
from hybridnet.ops import registry

nd = mx.nd
N = 100_000


def _check_moments(x: np.ndarray, mean: float, var: float, n: int = N, var_rtol: float = 0.04) -> None:
    x = np.asarray(x, np.float64).ravel()
    assert x.size == n
    se = math.sqrt(var / n)
    assert abs(x.mean() - mean) < 5 * se + 1e-12, (x.mean(), mean)
    assert abs(x.var() - var) < var_rtol * var, (x.var(), var)


# ---- moments (scalar parameters -> _random_*) -------------------------------------------------
@pytest.mark.parametrize("fn,kwargs,mean,var", [
    ("uniform", {"low": -1.0, "high": 3.0}, 1.0, 16 / 12),
    ("normal", {"loc": 2.0, "scale": 3.0}, 2.0, 9.0),
    ("gamma", {"alpha": 2.0, "beta": 0.5}, 1.0, 0.5),
    ("exponential", {"scale": 2.0}, 2.0, 4.0),
    ("poisson", {"lam": 4.0}, 4.0, 4.0),
    ("negative_binomial", {"k": 3, "p": 0.4}, 3 * 0.6 / 0.4, 3 * 0.6 / 0.16),
    ("generalized_negative_binomial", {"mu": 2.0, "alpha": 0.3}, 2.0, 2.0 + 0.3 * 4.0),
    ("generalized_negative_binomial", {"mu": 3.0, "alpha": 0.0}, 3.0, 3.0),
])
def test_scalar_moments(fn, kwargs, mean, var):
    mx.random.seed(0)
    x = getattr(nd.random, fn)(shape=(N,), **kwargs)
    assert x.shape == (N,) and x.dtype == np.float32
    _check_moments(x.asnumpy(), mean, var)


def test_uniform_range_and_discrete_support():
    mx.random.seed(1)
    u = nd.random.uniform(-1, 3, shape=(N,)).asnumpy()
    assert u.min() >= -1 and u.max() < 3
    p = nd.random.poisson(2.5, shape=(N,)).asnumpy()
    assert np.all(p == np.round(p)) and p.min() >= 0
    nb = nd.random.negative_binomial(2, 0.5, shape=(1000,)).asnumpy()
    assert np.all(nb == np.round(nb)) and nb.min() >= 0


def test_randint_moments_bounds_dtype():
    mx.random.seed(2)
    r = nd.random.randint(-3, 5, shape=(N,))
    assert r.dtype == np.int32
    a = r.asnumpy()
    assert a.min() == -3 and a.max() == 4
    _check_moments(a, 0.5, (8 ** 2 - 1) / 12)
    assert nd.random.randint(0, 10, shape=(3,), dtype="int64").dtype == np.int64
    with pytest.raises(MXNetError):  # a value error: raised when the result is read, as in MXNet
        nd.random.randint(5, 5, shape=(2,)).asnumpy()
    with pytest.raises(MXNetError):
        nd.random.randint(0, 5, shape=(2,), dtype="float32")
    with pytest.raises(TypeError):
        nd.random.randint(nd.array([0]), nd.array([5]))


# ---- array parameters -> _sample_* ------------------------------------------------------------
def test_sample_ops_per_row_moments():
    mx.random.seed(3)
    n = 50_000
    x = nd.random.normal(nd.array([0.0, 10.0]), nd.array([1.0, 2.0]), shape=n).asnumpy()
    assert x.shape == (2, n)
    _check_moments(x[0], 0.0, 1.0, n)
    _check_moments(x[1], 10.0, 4.0, n)
    u = nd.random.uniform(nd.array([0.0, 5.0]), nd.array([1.0, 9.0]), shape=n).asnumpy()
    _check_moments(u[1], 7.0, 16 / 12, n)
    assert u[0].max() < 1 and u[1].min() >= 5
    g = nd.random.gamma(nd.array([1.0, 4.0]), nd.array([2.0, 0.5]), shape=n).asnumpy()
    _check_moments(g[0], 2.0, 4.0, n)
    _check_moments(g[1], 2.0, 1.0, n)
    e = nd.random.exponential(nd.array([0.5, 3.0]), shape=n).asnumpy()   # scales
    _check_moments(e[1], 3.0, 9.0, n)
    p = nd.random.poisson(nd.array([1.0, 6.0]), shape=n).asnumpy()
    _check_moments(p[1], 6.0, 6.0, n)
    nb = nd.random.negative_binomial(nd.array([2.0, 5.0]), nd.array([0.5, 0.8]), shape=n).asnumpy()
    _check_moments(nb[0], 2.0, 4.0, n)
    _check_moments(nb[1], 5 * 0.2 / 0.8, 5 * 0.2 / 0.64, n)
    gnb = nd.random.generalized_negative_binomial(nd.array([2.0, 4.0]), nd.array([0.5, 0.0]), shape=n).asnumpy()
    _check_moments(gnb[0], 2.0, 2.0 + 0.5 * 4.0, n)
    _check_moments(gnb[1], 4.0, 4.0, n)


def test_sample_shapes_and_dtypes():
    lo, hi = nd.zeros((2, 3)), nd.ones((2, 3))
    assert nd.random.uniform(lo, hi).shape == (2, 3)
    assert nd.random.uniform(lo, hi, shape=4).shape == (2, 3, 4)
    assert nd.random.uniform(lo, hi, shape=(4, 5)).shape == (2, 3, 4, 5)
    assert nd.random.uniform(lo, hi, shape=(4,)).dtype == np.float32
    assert nd.random.uniform(lo, hi, shape=(4,), dtype="float64").dtype == np.float64
    assert nd.sample_normal(lo, hi, shape=(2,), dtype="float16").dtype == np.float16
    # the generated operator functions take parameter arrays too
    assert nd.sample_poisson(nd.ones((3,)), shape=(2, 2)).shape == (3, 2, 2)
    assert nd.random.poisson(nd.ones((3,))).shape == (3,)
    with pytest.raises(MXNetError):
        nd.sample_uniform(nd.zeros((2,)), nd.ones((3,)), shape=(2,))
    with pytest.raises(TypeError):
        nd.random.uniform(nd.zeros((2,)), 1.0)
    with pytest.raises(ValueError):
        nd.random.uniform("a", "b")


def test_sample_ops_get_no_gradient():
    mu = nd.array([0.0, 1.0])
    mu.attach_grad()
    with mx.autograd.record():
        y = nd.random.normal(mu, nd.array([1.0, 1.0]), shape=3)
    assert not y._t.requires_grad


def test_scalar_shapes_dtypes_ctx_out():
    assert nd.random.uniform().shape == (1,)
    assert nd.random.uniform(0, 1).dtype == np.float32
    assert nd.random.normal(0, 1, shape=(2, 3), dtype="float64").dtype == np.float64
    assert nd.random.normal(0, 1, shape=(2, 3), dtype="float16").dtype == np.float16
    assert nd.random.uniform(shape=5).shape == (5,)
    assert nd.random.randn(2, 3).shape == (2, 3)
    assert nd.random.randn().shape == (1,)
    y = nd.random.randn(4, 5, loc=10, scale=0.01)
    assert np.all(np.abs(y.asnumpy() - 10) < 1)
    x = nd.random.uniform(0, 1, shape=(2, 2), ctx=mx.cpu(0))
    assert x.context == mx.cpu(0)
    assert nd.random.uniform(0, 1, shape=(2,), ctx="cpu(0)").context == mx.cpu(0)
    out = nd.zeros((3, 4), dtype="float64")
    r = nd.random.uniform(5, 6, out=out)
    assert r is out and out.dtype == np.float64
    a = out.asnumpy()
    assert a.min() >= 5 and a.max() < 6
    with pytest.raises(MXNetError):  # value errors: raised when the result is read, as in MXNet
        nd.random.normal(0, 0, shape=(2,)).asnumpy()
    with pytest.raises(MXNetError):
        nd.random.uniform(2, 1, shape=(2,)).wait_to_read()
    with pytest.raises(MXNetError):
        nd.random.uniform(0, 1, shape=(2,), dtype="int32")
    with pytest.raises(TypeError):
        nd.random.uniform(0, 1, shape=(2,), bogus=3)


def test_generated_aliases_and_like_ops():
    assert nd.random_uniform(low=0, high=1, shape=(2, 2)).shape == (2, 2)
    assert nd.uniform(low=0, high=1, shape=(3,)).shape == (3,)
    assert nd.normal(loc=0, scale=1, shape=(3,)).shape == (3,)
    assert nd.random_normal(shape=(3,)).shape == (3,)
    assert nd.random_randint(low=0, high=2, shape=(3,)).dtype == np.int32
    data = nd.ones((2, 5), dtype="float64")
    for fn in ("uniform_like", "normal_like", "gamma_like", "exponential_like", "poisson_like",
               "negative_binomial_like", "generalized_negative_binomial_like"):
        y = getattr(nd.random, fn)(data)
        assert y.shape == (2, 5) and y.dtype == np.float64, fn
    mx.random.seed(5)
    u = nd.random.uniform_like(nd.zeros((N,)), low=2, high=4).asnumpy()
    _check_moments(u, 3.0, 4 / 12)
    assert np.all(nd.random.poisson_like(data, lam=0).asnumpy() == 0)
    # mx.random forwards to nd.random
    assert mx.random.uniform(0, 1, shape=(2,)).shape == (2,)
    assert mx.random.normal(0, 1, shape=(2,)).shape == (2,)


# ---- seeding ----------------------------------------------------------------------------------
@pytest.mark.parametrize("draw", [
    lambda: nd.random.uniform(0, 1, shape=(5,)),
    lambda: nd.random.normal(0, 1, shape=(5,)),
    lambda: nd.random.gamma(2, 1, shape=(5,)),
    lambda: nd.random.poisson(3, shape=(5,)),
    lambda: nd.random.negative_binomial(3, 0.5, shape=(5,)),
    lambda: nd.random.randint(0, 100, shape=(5,)),
    lambda: nd.random.multinomial(nd.array([0.25, 0.25, 0.5]), shape=8),
    lambda: nd.random.shuffle(nd.arange(10)),
    lambda: nd.random.normal(nd.zeros((2,)), nd.ones((2,)), shape=3),
])
def test_seed_reproducible(draw):
    mx.random.seed(42)
    a = draw().asnumpy()
    b = draw().asnumpy()
    mx.random.seed(42)
    c = draw().asnumpy()
    np.testing.assert_array_equal(a, c)
    mx.random.seed(43)
    d = draw().asnumpy()
    assert not (np.array_equal(a, b) and np.array_equal(a, d))


# ---- multinomial ------------------------------------------------------------------------------
def test_multinomial_frequencies_and_shapes():
    mx.random.seed(7)
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    s = nd.random.multinomial(nd.array(probs), shape=N)
    assert s.shape == (N,) and s.dtype == np.int32
    freq = np.bincount(s.asnumpy(), minlength=4) / N
    np.testing.assert_allclose(freq, probs, atol=0.01)
    assert nd.random.multinomial(nd.array(probs)).shape == (1,)
    two = nd.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    assert nd.random.multinomial(two).shape == (2,)
    r = nd.random.multinomial(two, shape=(3, 4))
    assert r.shape == (2, 3, 4)
    assert np.all(r.asnumpy()[0] == 1) and set(np.unique(r.asnumpy()[1])) <= {0, 2}
    assert nd.random.multinomial(two, dtype="float32").dtype == np.float32
    with pytest.raises(MXNetError):
        nd.random.multinomial(two, dtype="int64")


def test_multinomial_get_prob_and_gradient():
    mx.random.seed(8)
    probs = nd.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dtype="float64")
    probs.attach_grad()
    with mx.autograd.record():
        s, logp = nd.random.multinomial(probs, shape=5, get_prob=True)
        logp.sum().backward()
    assert s.shape == (2, 5) and logp.shape == (2, 5) and logp.dtype == np.float64
    p = probs.asnumpy()
    idx = s.asnumpy()
    np.testing.assert_allclose(logp.asnumpy(), np.log(np.take_along_axis(p, idx, 1)))
    # d/dp sum(log p[sample]) = count / p
    counts = np.stack([np.bincount(row, minlength=3) for row in idx])
    np.testing.assert_allclose(probs.grad.asnumpy(), counts / p, rtol=1e-10)


# ---- shuffle ----------------------------------------------------------------------------------
def test_shuffle_rows_and_uniformity():
    mx.random.seed(9)
    x = nd.array(np.arange(12).reshape(4, 3))
    y = nd.random.shuffle(x).asnumpy()
    assert y.shape == (4, 3)
    np.testing.assert_array_equal(np.sort(y[:, 0]), [0, 3, 6, 9])
    np.testing.assert_array_equal(y[:, 1] - y[:, 0], 1)    # rows stay intact
    np.testing.assert_array_equal(x.asnumpy(), np.arange(12).reshape(4, 3))   # input unchanged
    first = np.array([nd.shuffle(nd.arange(3)).asnumpy()[0] for _ in range(3000)])
    np.testing.assert_allclose(np.bincount(first.astype(int), minlength=3) / 3000, [1 / 3] * 3, atol=0.04)
    assert nd.random.shuffle(nd.arange(5, dtype="int32")).dtype == np.int32


# ---- registry facts and meta shapes -----------------------------------------------------------
def test_registry_flags_and_meta_shapes():
    for name in ("_random_uniform", "_random_normal", "_random_gamma", "_random_exponential",
                 "_random_poisson", "_random_negative_binomial", "_random_generalized_negative_binomial",
                 "_random_randint", "_sample_uniform", "_sample_normal", "_sample_multinomial", "_shuffle"):
        assert registry.get(name).random, name
    assert not registry.get("_sample_normal").differentiable
    m = torch.empty(2, 3, device="meta")
    out = registry.get("_sample_gamma").kernel(m, m, shape=(4,))
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3, 4)
    out = registry.get("_sample_multinomial").kernel(m, shape=(5,), get_prob=True)
    assert [tuple(o.shape) for o in out] == [(2, 5), (2, 5)] and out[0].dtype == torch.int32
    assert tuple(registry.get("_shuffle").kernel(m).shape) == (2, 3)
    assert tuple(registry.get("_random_poisson_like").kernel(m).shape) == (2, 3)
    op = registry.get("_sample_multinomial")
    assert op.num_outputs({"get_prob": True}) == 2 and op.num_outputs({}) == 1
    assert op.infer_type_rule({"get_prob": True}, ["float64"]) == ["int32", "float64"]
    assert registry.get("_random_randint").infer_type_rule({}, []) == ["int32"]


def test_samples_table_runs():
    """Every sample of this family runs; deterministic ones match their references."""
    for name in ("_random_uniform", "_random_poisson", "_random_negative_binomial", "_random_randint",
                 "_sample_uniform", "_sample_normal", "_sample_poisson", "_sample_multinomial", "_shuffle",
                 "_random_uniform_like"):
        op = registry.get(name)
        for s in op.samples():
            outs = op.kernel(*[torch.tensor(a) for a in s.inputs], **s.attrs)
            if s.ref is None:
                continue
            ref = s.ref(*s.inputs, **s.attrs)
            outs = outs if isinstance(outs, tuple) else (outs,)
            refs = ref if isinstance(ref, tuple) else (ref,)
            for o, r in zip(outs, refs):
                np.testing.assert_allclose(o.numpy(), r, err_msg=name)


def test_symbol_parameters_build_sample_nodes():
    lo, hi = sym.var("lo"), sym.var("hi")
    s = nd.random.uniform(lo, hi, shape=(3,))
    assert isinstance(s, sym.Symbol)
    assert s.list_arguments() == ["lo", "hi"]
    _, out_shapes, _ = s.infer_shape(lo=(2,), hi=(2,))
    assert out_shapes == [(2, 3)]


# ---- _random_pdf_*: values from MXNet's documentation, gradients by finite differences --------
def test_pdf_values_from_mxnet_docs():
    a = nd.array
    np.testing.assert_allclose(nd.random_pdf_uniform(sample=a([[1, 2, 3, 4]]), low=a([0]), high=a([10])).asnumpy(),
                               [[0.1] * 4], rtol=1e-6)
    np.testing.assert_allclose(
        nd.random_pdf_normal(sample=a([[-2, -1, 0, 1, 2]] * 2), mu=a([0, 0]), sigma=a([1, 2])).asnumpy(),
        [[0.05399097, 0.24197073, 0.3989423, 0.24197073, 0.05399097],
         [0.12098537, 0.17603266, 0.19947115, 0.17603266, 0.12098537]], rtol=1e-5)
    np.testing.assert_allclose(
        nd.random_pdf_gamma(sample=a([[1, 2, 3, 4, 5], [2, 3, 4, 5, 6]]), alpha=a([5, 6]), beta=a([1, 1])).asnumpy(),
        [[0.01532831, 0.09022352, 0.16803136, 0.19536681, 0.17546739],
         [0.03608941, 0.10081882, 0.15629345, 0.17546739, 0.16062315]], rtol=1e-5)
    np.testing.assert_allclose(
        nd.random_pdf_exponential(sample=a([[1, 2, 3]] * 3), lam=a([1, 0.5, 0.25])).asnumpy(),
        [[0.36787945, 0.13533528, 0.04978707], [0.30326533, 0.18393973, 0.11156508],
         [0.1947002, 0.15163267, 0.11809164]], rtol=1e-5)
    np.testing.assert_allclose(
        nd.random_pdf_poisson(sample=a([[0, 1, 2, 3]] * 2), lam=a([1, 2])).asnumpy(),
        [[0.36787945, 0.36787945, 0.18393973, 0.06131324], [0.13533528, 0.27067056, 0.27067056, 0.18044704]],
        rtol=1e-5)
    np.testing.assert_allclose(
        nd.random_pdf_negative_binomial(sample=a([[1, 2, 3, 4]] * 2), k=a([1, 1.5]), p=a([0.5, 0.5])).asnumpy(),
        [[0.25, 0.125, 0.0625, 0.03125], [0.26516506, 0.16572815, 0.09667476, 0.05437956]], rtol=1e-5)
    np.testing.assert_allclose(
        nd.random_pdf_generalized_negative_binomial(sample=a([[1, 2, 3, 4]] * 2), mu=a([1, 1.5]),
                                                    alpha=a([1, 0.6666])).asnumpy(),
        [[0.25, 0.125, 0.0625, 0.03125], [0.26517063, 0.16573331, 0.09667706, 0.05437994]], rtol=1e-5)
    np.testing.assert_allclose(
        nd.random_pdf_dirichlet(sample=a([[1, 2], [2, 3], [3, 4]]), alpha=a([2.5, 2.5])).asnumpy(),
        [38.413498, 199.60245, 564.56085], rtol=1e-5)
    lp = nd.random_pdf_normal(sample=a([[0.5]]), mu=a([0]), sigma=a([1]), is_log=True).asscalar()
    assert abs(lp - (-0.125 - 0.5 * np.log(2 * np.pi))) < 1e-6
    with pytest.raises(MXNetError):
        nd.random_pdf_normal(sample=a([[1, 2]]), mu=a([0, 1]), sigma=a([1, 1]))


@pytest.mark.parametrize("name,inputs,grad_idx", [
    ("_random_pdf_normal", ([[0.3, -1.0], [2.0, 0.1]], [0.2, 1.0], [0.7, 1.5]), (0, 1, 2)),
    ("_random_pdf_gamma", ([[0.5, 2.0], [1.0, 3.0]], [1.5, 3.0], [0.8, 2.0]), (0, 1, 2)),
    ("_random_pdf_negative_binomial", ([[0.0, 3.0], [2.0, 1.0]], [1.5, 3.0], [0.3, 0.7]), (1, 2)),
    ("_random_pdf_dirichlet", ([[[0.2, 0.3, 0.5]], [[0.6, 0.1, 0.3]]], [[1.5, 2.0, 0.7], [3.0, 1.0, 2.0]]), (0, 1)),
])
def test_pdf_gradients_float64(name, inputs, grad_idx):
    op = registry.get(name)
    ts = [torch.tensor(np.array(v, np.float64), requires_grad=i in grad_idx) for i, v in enumerate(inputs)]
    for is_log in (False, True):
        def f(*g):
            args = list(ts)
            for i, t in zip(grad_idx, g):
                args[i] = t
            return op.kernel(*args, is_log=is_log)
        assert torch.autograd.gradcheck(f, [ts[i] for i in grad_idx])
    if name == "_random_pdf_negative_binomial":      # counts get no gradient, as in MXNet
        x = ts[0].detach().requires_grad_(True)
        op.kernel(x, ts[1], ts[2]).sum().backward()
        assert x.grad is None and ts[1].grad is not None
