"""MXNet 1.9.1 NumPy-interface behaviour that the registry samples do not cover: samplers'
parameter domains and gradients, front-end keywords, traced namespaces, error classes, and
results that depend on NumPy-shape semantics (each from a test_numpy_op.py case of MXNet's)."""
import numpy as onp
import pytest

import hybridnet as mx
from hybridnet import autograd, np, npx
from hybridnet.gluon import HybridBlock


@pytest.fixture
def np_mode():
    npx.set_np()
    yield


def _both(block_cls, *args, **kwargs):
    """The block eager and hybridized."""
    eager, hyb = block_cls(*args, **kwargs), block_cls(*args, **kwargs)
    hyb.hybridize()
    return eager, hyb


@pytest.mark.parametrize("call", [
    lambda: np.random.exponential(scale=-1), lambda: np.random.rayleigh(scale=-1),
    lambda: np.random.pareto(a=0), lambda: np.random.weibull(a=-1), lambda: np.random.power(a=0),
    lambda: np.random.gamma(1, 0), lambda: np.random.gamma(np.array(0.0), np.array(1.0)),
    lambda: np.random.lognormal(sigma=-1), lambda: npx.random.bernoulli(prob=np.array([0.5, 1.5])),
    lambda: npx.random.bernoulli(prob=0.5, logit=0.0)])
def test_sampler_parameters_out_of_their_domain_raise_value_error(np_mode, call):
    with pytest.raises(ValueError):
        call().asnumpy()


@pytest.mark.parametrize("name, params", [("exponential", ("scale",)), ("rayleigh", ("scale",)),
                                          ("logistic", ("loc", "scale")), ("gumbel", ("loc", "scale"))])
def test_samplers_are_reparameterized_in_array_parameters(np_mode, name, params):
    class Draw(HybridBlock):
        def hybrid_forward(self, F, *ps):
            return getattr(F.np.random, name)(*ps, size=(4, 3))
    for block in _both(Draw):
        arrays = [np.ones((4, 3)) for _ in params]
        for a in arrays:
            a.attach_grad()
        with autograd.record():
            out = block(*arrays)
        out.backward()
        assert out.shape == (4, 3)
        if params[0] == "loc":  # d out / d loc = 1
            onp.testing.assert_allclose(arrays[0].grad.asnumpy(), onp.ones((4, 3)))
        # scale-only samplers are linear in scale: d out / d scale = out / scale
        if params == ("scale",):
            onp.testing.assert_allclose(arrays[0].grad.asnumpy(), out.asnumpy(), rtol=1e-5)


def test_random_keywords_seed_and_scalar_shapes(np_mode):
    assert np.random.pareto(a=2.0, size=(2, 3)).shape == (2, 3)
    assert np.random.randint(5).shape == ()           # an empty size is a zero-dim array in np mode
    assert np.random.randint(0, 5, size=()).shape == ()
    npx.random.seed(seed=11)
    a = np.random.uniform(size=(3,))
    npx.random.seed(seed=11)
    onp.testing.assert_array_equal(a.asnumpy(), np.random.uniform(size=(3,)).asnumpy())


def test_beta_chisquare_and_sample_n_trace(np_mode):
    class Draws(HybridBlock):
        def hybrid_forward(self, F, a, b):
            return (F.np.random.beta(a, b, size=(2, 1)), F.np.random.chisquare(a, size=(2, 1)),
                    F.npx.random.uniform_n(a, b, batch_shape=(3,)))
    for block in _both(Draws):
        beta, chi, un = block(np.ones((1,)), np.full((1,), 2.0))
        assert beta.shape == chi.shape == (2, 1) and un.shape == (3, 1)
        assert ((beta.asnumpy() > 0) & (beta.asnumpy() < 1)).all()


def test_symbol_as_np_ndarray_and_np_internal_names(np_mode):
    x = mx.sym.Variable("x").as_np_ndarray()
    assert isinstance(x, mx.sym.np._Symbol)
    y = mx.sym.np.sum(x, axis=0).as_nd_ndarray()
    assert not isinstance(y, mx.sym.np._Symbol)
    out = y.eval(x=mx.nd.array([[1.0, 2.0], [3.0, 4.0]]))[0]
    onp.testing.assert_array_equal(out.asnumpy(), [4.0, 6.0])
    # MXNet's _npi module names operators without their prefix
    assert np._internal.boolean_mask_assign_scalar is np._internal._npi_boolean_mask_assign_scalar


def test_boolean_mask_assign_writes_in_place(np_mode):
    a = np.zeros((2, 3, 2))
    mask = np.array([True, False, True])
    np._internal.boolean_mask_assign_scalar(a, mask, 5.0, start_axis=1, out=a)
    ref = onp.zeros((2, 3, 2))
    ref[:, [True, False, True]] = 5.0
    onp.testing.assert_array_equal(a.asnumpy(), ref)
    np._internal.boolean_mask_assign_tensor(a, mask, np.ones((2, 1, 2)), start_axis=1, out=a)
    ref[:, [True, False, True]] = 1.0
    onp.testing.assert_array_equal(a.asnumpy(), ref)


def test_constraint_check_raises_value_error_eager_and_hybridized(np_mode):
    class Check(HybridBlock):
        def hybrid_forward(self, F, x):
            return F.npx.constraint_check(x, "must hold")
    for block in _both(Check):
        with pytest.raises(ValueError, match="must hold"):
            block(np.zeros((2,), dtype="bool")).asnumpy()
        assert bool(block(np.ones((2,), dtype="bool")))


def test_front_end_arguments(np_mode):
    a = np.array([[-2.0, 0.5], [3.0, 1.0]])
    onp.testing.assert_array_equal(a.clip(min=0, max=1).asnumpy(), [[0, 0.5], [1, 1]])
    full = np.full((2, 3), np.array([1.5, 2.5, 3.5]), dtype="int8")
    assert full.dtype == onp.int8 and full.asnumpy().tolist() == [[1, 2, 3], [1, 2, 3]]
    assert np.eye(4, 0).shape == (4, 0)
    with pytest.raises(mx.MXNetError):
        np.eye(-1)
    assert np.arange(0, 5, None).shape == (5,)
    xv, yv, zv = np.meshgrid(np.arange(3), np.arange(2), np.ones(()))
    assert xv.shape == yv.shape == zv.shape == (2, 3, 1)
    onp.testing.assert_array_equal(np.broadcast_to(np.arange(5), (3, 4, -2)).asnumpy(),
                                   onp.broadcast_to(onp.arange(5, dtype="float32"), (3, 4, 5)))
    onp.testing.assert_array_equal(np.around(np.array([15, 25, -35], dtype="int32"), -1).asnumpy(), [20, 20, -40])
    assert np.squeeze(np.ones(()), -1).shape == ()
    assert np.tril(np.arange(3)).shape == (3, 3)
    onp.testing.assert_array_equal(np.delete(np.arange(4), np.array([-1, 1, 9])).asnumpy(), [0, 2, 3])
    parts = np.split(np.zeros((0, 3)), [1, 2])
    assert [p.shape for p in parts] == [(0, 3), (0, 3), (0, 3)]


def test_reductions_and_bool_arithmetic(np_mode):
    x = np.array([5, 0, 252], dtype="uint8")
    assert np.any(x, axis=()).dtype == onp.bool_ and np.all(x).dtype == onp.bool_
    v = np.var(np.array([[1.0, 2.0], [3.0, 5.0]]), axis=(), ddof=1)
    assert onp.isnan(v.asnumpy()).all()
    onp.testing.assert_array_equal((np.array([True, False]) - np.array([0.5, 0.5])).asnumpy(), [0.5, -0.5])
    onp.testing.assert_array_equal(np.cumsum(np.array([True, True, False])).asnumpy(), [1, 2, 2])


def test_attach_grad_null_keeps_no_buffer(np_mode):
    a = np.ones((2,))
    a.attach_grad(grad_req="null")
    assert a.grad is None
