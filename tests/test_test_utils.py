"""mx.test_utils: comparisons and their messages, tolerances, random data, context managers,
and the Symbol checks (skipped while hybridnet.symbol is not importable)."""
import os
import sys

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import nd
from hybridnet import test_utils as tu
from hybridnet.base import MXNetError

try:
    from hybridnet import symbol as _sym  # noqa: F401
    HAVE_SYMBOL = hasattr(mx, "sym") and hasattr(mx.sym, "Variable")
except Exception:  # pragma: no cover - depends on the lead's progress
    HAVE_SYMBOL = False

needs_symbol = pytest.mark.skipif(not HAVE_SYMBOL, reason="hybridnet.symbol not importable yet")


def test_namespace():
    assert mx.test_utils is tu
    for name in ("assert_almost_equal", "same", "check_numeric_gradient", "rand_ndarray", "default_context"):
        assert callable(getattr(tu, name))


def test_assert_almost_equal_accepts_mixed_inputs():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    tu.assert_almost_equal(nd.array(a), a)
    tu.assert_almost_equal(a, nd.array(a) + 1e-6)
    tu.assert_almost_equal(nd.array([3.0]), 3.0)
    tu.assert_almost_equal(2.0, 2.0)
    tu.assert_almost_equal(nd.array(a), nd.array(a, dtype="float64"))
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    tu.assert_almost_equal(nd.array([1, 2], dtype="int32"), np.array([1, 2]))
    tu.assert_almost_equal(nd.array([1.0, 2.0], dtype="bfloat16"), np.array([1.0, 2.0]))


def test_assert_almost_equal_reports_location_of_max_error():
    a = np.zeros((2, 3))
    b = np.zeros((2, 3))
    b[1, 2] = 0.5
    b[0, 1] = 0.1
    with pytest.raises(AssertionError) as ei:
        tu.assert_almost_equal(a, b, rtol=1e-5, atol=1e-5, names=("mine", "ref"))
    msg = str(ei.value)
    assert "Location of maximum error: (1, 2)" in msg
    assert "mine=0.00000000" in msg and "ref=0.50000000" in msg
    assert "exceeds tolerance rtol=1.000000e-05, atol=1.000000e-05" in msg
    assert "mismatch 33.33" in msg


def test_default_tolerances_follow_dtype():
    tu.assert_almost_equal(np.float32(1.0), np.float32(1.00005))  # float32: rtol 1e-4
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1.0]), np.array([1.0001]))  # float64: rtol 1e-5
    tu.assert_almost_equal(np.array([1.0], dtype=np.float16), np.array([1.05], dtype=np.float16))
    assert tu.get_tols(np.zeros(1, np.float16), np.zeros(1, np.float64), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(np.zeros(1), np.zeros(1), 0.5, {np.dtype(np.float64): 0.25}) == (0.5, 0.25)
    assert tu.default_rtols()[np.dtype(np.float32)] == 1e-4
    assert tu.default_atols()[np.dtype(np.float64)] == 1e-20
    assert tu.effective_dtype(nd.zeros((1,), dtype="float16")) == np.dtype(np.float16)
    assert tu.get_rtol() == 1e-5 and tu.get_atol(0.1) == 0.1 and tu.get_etol() == 0


def test_equal_nan_and_ignore_nan():
    a = np.array([1.0, np.nan])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, a)
    tu.assert_almost_equal(a, a, equal_nan=True)
    tu.assert_allclose(a, a)  # equal_nan=True by default
    tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([1.0, 7.0]))
    assert tu.almost_equal_ignore_nan(np.array([np.nan, 2.0]), np.array([0.0, 2.0]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1.0]), np.array([np.nan]))


def test_shape_mismatch_and_allclose():
    with pytest.raises(AssertionError, match="shapes"):
        tu.assert_almost_equal(np.zeros(3), np.zeros(4))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.zeros((1, 3)), np.zeros(3), use_broadcast=False)
    with pytest.raises(AssertionError):
        tu.assert_allclose(np.array([1.0]), np.array([1.0 + 1e-6]))
    assert tu.almost_equal(np.array([1.0]), nd.array([1.0]))
    assert not tu.almost_equal(np.array([1.0]), np.array([2.0]))


def test_with_err():
    a = np.zeros(100)
    b = np.zeros(100)
    b[3] = 1
    tu.assert_almost_equal_with_err(a, b, rtol=1e-5, atol=1e-5, etol=0.05)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b, rtol=1e-5, atol=1e-5, etol=0.001)


def test_same_and_same_array():
    assert tu.same(np.array([1, 2]), nd.array([1, 2]))
    assert not tu.same(np.array([1, 2]), np.array([1, 3]))
    x = nd.array([1, 2, 3])
    assert tu.same_array(x, x[:])
    assert not tu.same_array(x, x.copy())


def test_random_helpers():
    np.random.seed(0)
    r = tu.rand_ndarray((3, 4))
    assert isinstance(r, nd.NDArray) and r.shape == (3, 4) and r.dtype is np.float32
    assert tu.rand_ndarray((2,), dtype="float64").dtype is np.float64
    assert tu.rand_ndarray((2, 2), stype="csr").stype == "csr"
    a, b = tu.random_arrays((2, 3), (4,))
    assert a.shape == (2, 3) and b.shape == (4,) and a.dtype == np.float32
    assert tu.random_arrays(()).shape == ()
    lo = tu.random_uniform_arrays((100,), low=2.0, high=3.0)[0]
    assert lo.min() >= 2.0 and lo.max() < 3.0
    s = tu.random_sample(list(range(10)), 4)
    assert len(s) == 4 and len(set(s)) == 4
    for _ in range(20):
        d0, d1 = tu.rand_shape_2d(3, 4)
        assert 1 <= d0 <= 3 and 1 <= d1 <= 4
        assert all(1 <= d <= 5 for d in tu.rand_shape_3d(5, 5, 5))
        nd_shape = tu.rand_shape_nd(4, 6)
        assert len(nd_shape) == 4 and all(1 <= d <= 6 for d in nd_shape)
    assert 0 in [tu.rand_shape_2d(1, 1, allow_zero_size=True)[0] for _ in range(50)]


def test_np_reduce():
    d = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(d, 1, False, np.sum), d.sum(axis=1))
    np.testing.assert_array_equal(tu.np_reduce(d, (0, 2), True, np.max), d.max(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(tu.np_reduce(d, None, False, np.sum), d.sum())


def test_contexts_and_dtype():
    assert tu.default_context() == mx.cpu()
    tu.set_default_context(mx.cpu(0))
    assert mx.current_context() == mx.cpu(0)
    assert tu.default_dtype() is np.float32
    assert list(tu.list_gpus()) == list(range(mx.num_gpus()))


def test_exception_helpers():
    tu.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError):
        tu.assert_exception(lambda: None, ValueError)
    tu.assertRaises(MXNetError, nd.zeros((2,)).reshape, 3)
    with pytest.raises(AssertionError):
        tu.assertRaises(ValueError, lambda: None)


def test_retry():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 3

    flaky()
    assert len(calls) == 3


def test_environment():
    os.environ.pop("HYBRIDNET_TEST_ENV", None)
    os.environ["HYBRIDNET_TEST_OTHER"] = "keep"
    with tu.environment("HYBRIDNET_TEST_ENV", "1"):
        assert os.environ["HYBRIDNET_TEST_ENV"] == "1"
    assert "HYBRIDNET_TEST_ENV" not in os.environ
    with pytest.raises(KeyError):
        with tu.environment({"HYBRIDNET_TEST_ENV": "2", "HYBRIDNET_TEST_OTHER": None}):
            assert os.environ["HYBRIDNET_TEST_ENV"] == "2"
            assert "HYBRIDNET_TEST_OTHER" not in os.environ
            raise KeyError("restored anyway")
    assert os.environ["HYBRIDNET_TEST_OTHER"] == "keep" and "HYBRIDNET_TEST_ENV" not in os.environ
    assert tu.getenv("HYBRIDNET_TEST_OTHER") == "keep"


def test_discard_stderr(capfd):
    with tu.discard_stderr():
        os.write(sys.stderr.fileno(), b"hidden\n")
    os.write(sys.stderr.fileno(), b"shown\n")
    err = capfd.readouterr().err
    assert "hidden" not in err and "shown" in err


def test_dummy_iter_and_misc():
    it = tu.DummyIter(iter([1, 2, 3]))
    assert [next(it) for _ in range(3)] == [1, 1, 1]
    np.testing.assert_array_equal(tu.collapse_sum_like(np.ones((2, 3, 4)), (3, 1)), np.full((3, 1), 8.0))
    tu.compare_ndarray_tuple((nd.array([1.0]), None), (np.array([1.0]), None))
    assert tu.is_op_runnable() and not tu.has_tvm_ops()


@needs_symbol
def test_check_symbolic_forward_and_backward():
    lhs, rhs = mx.sym.Variable("lhs"), mx.sym.Variable("rhs")
    s = mx.sym.elemwise_mul(lhs, rhs)
    m1, m2 = np.array([[1.0, 2], [3, 4]]), np.array([[5.0, 6], [7, 8]])
    outs = tu.check_symbolic_forward(s, [m1, m2], [m1 * m2])
    assert isinstance(outs[0], nd.NDArray)
    tu.check_symbolic_forward(s, {"lhs": m1, "rhs": m2}, {s.list_outputs()[0]: m1 * m2})
    with pytest.raises(AssertionError, match="EXPECTED_"):
        tu.check_symbolic_forward(s, [m1, m2], [m1 * m2 + 1])
    og = np.array([[1.0, 0.5], [2, 1]])
    g = tu.check_symbolic_backward(s, [m1, m2], [og], [og * m2, og * m1])
    np.testing.assert_allclose(g["lhs"].asnumpy(), og * m2)
    tu.check_symbolic_backward(s, [m1, m2], [og], [og * m2, og * m1], grad_req="add")
    tu.check_symbolic_backward(s, [m1, m2], [og], {"lhs": og * m2}, grad_req={"lhs": "write", "rhs": "null"})
    with pytest.raises(AssertionError, match="BACKWARD_lhs"):
        tu.check_symbolic_backward(s, [m1, m2], [og], [og * m1, og * m1])


@needs_symbol
def test_check_numeric_gradient():
    np.random.seed(1)
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    s = mx.sym.exp(x) * y + mx.sym.sin(x)
    loc = [np.random.uniform(-1, 1, (2, 3)), np.random.uniform(-1, 1, (2, 3))]
    tu.check_numeric_gradient(s, loc, dtype=np.float64, rtol=1e-5, atol=1e-7)
    tu.check_numeric_gradient(s, loc, rtol=1e-2, atol=1e-3)  # float32, MXNet's default eps
    tu.check_numeric_gradient(s, {"x": loc[0], "y": loc[1]}, grad_nodes={"x": "add", "y": "null"},
                              dtype=np.float64, rtol=1e-5, atol=1e-7)


@needs_symbol
def test_check_numeric_gradient_detects_wrong_gradients():
    # BlockGrad passes values but no gradient: finite differences must disagree with backward.
    x = mx.sym.Variable("x")
    s = mx.sym.BlockGrad(x) * x
    with pytest.raises(AssertionError, match="NUMERICAL_x"):
        tu.check_numeric_gradient(s, [np.random.uniform(1, 2, (3,))], dtype=np.float64)


@needs_symbol
def test_simple_forward():
    x = mx.sym.Variable("x")
    out = tu.simple_forward(mx.sym.relu(x), x=np.array([-1.0, 2.0]))
    np.testing.assert_array_equal(out, [0, 2])


@needs_symbol
def test_check_consistency():
    np.random.seed(2)
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    s = mx.sym.FullyConnected(x, w, num_hidden=3, no_bias=True, name="fc")
    ctx_list = [{"ctx": mx.cpu(), "x": (2, 4), "type_dict": {"x": np.float64, "w": np.float64}},
                {"ctx": mx.cpu(), "x": (2, 4), "type_dict": {"x": np.float32, "w": np.float32}}]
    gt = tu.check_consistency(s, ctx_list)
    assert set(gt) == {"fc_output", "x", "w"} and gt["fc_output"].shape == (2, 3)
    wrong = {k: np.asarray(v) + 1 for k, v in gt.items()}
    with pytest.raises(AssertionError):
        tu.check_consistency(s, ctx_list, ground_truth=wrong)
    assert tu.check_speed(mx.sym.relu(x), x=(2, 3), N=2) > 0


# ---- the rest of MXNet 1.9.1's test_utils ---------------------------------------------------
import bz2
import gzip
import json
import math
import statistics
import struct
import types
import zipfile

import torch

from hybridnet import gluon


def test_every_mxnet_name_exists():
    from fixture_paths import ROOT
    spec = os.path.join(os.path.dirname(ROOT), "spec", "mxnet-gluon-api.json")
    if not os.path.exists(spec):
        pytest.skip("shared/spec not found")
    with open(spec) as f:
        names = json.load(f)["test_utils"]
    missing = [n for n in names if not hasattr(tu, n)]
    assert missing == []
    assert tu.Symbol is mx.sym.Symbol


def test_assign_each():
    a = np.array([[1, 2], [3, 4]], dtype=np.int32)
    out = tu.assign_each(a, lambda v: v * 1.5)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [[1.5, 3.0], [4.5, 6.0]])
    same_copy = tu.assign_each(a, None)
    np.testing.assert_array_equal(same_copy, a)
    assert same_copy is not a
    out2 = tu.assign_each2(a, a.T, lambda x, y: x - y)
    np.testing.assert_array_equal(out2, a - a.T)
    with pytest.raises(ValueError):
        tu.assign_each2(a, np.zeros(3), lambda x, y: x)


def test_vector_tensor_identity():
    v = tu.create_vector(6)
    assert v.dtype is np.int64 and v.shape == (6,)
    np.testing.assert_array_equal(v.asnumpy(), np.arange(6))
    t = tu.create_2d_tensor(3, 4)
    assert t.dtype is np.int64
    np.testing.assert_array_equal(t.asnumpy(), np.repeat(np.arange(3)[:, None], 4, axis=1))
    assert tu.create_2d_tensor(2, 2, dtype=np.float32).dtype is np.float32
    eye = tu.get_identity_mat(3)
    assert isinstance(eye, nd.NDArray) and eye.dtype is np.float32
    np.testing.assert_array_equal(eye.asnumpy(), np.eye(3))
    batch = tu.get_identity_mat_batch(4)
    assert batch.shape == (2, 4, 4)
    np.testing.assert_array_equal(batch.asnumpy(), np.stack([np.eye(4)] * 2))


def test_random_matrices_with_real_eigenvalues():
    np.random.seed(3)
    m = tu.new_matrix_with_real_eigvals_2d(4)
    eig = np.linalg.eigvals(m)
    assert np.abs(eig.imag).max() < 1e-8 and np.abs(eig.real).max() <= 10
    batch = tu.new_matrix_with_real_eigvals_nd((2, 3, 4, 4))
    assert batch.shape == (2, 3, 4, 4)
    assert np.abs(np.linalg.eigvals(batch).imag).max() < 1e-8
    q = tu.new_orthonormal_matrix_2d(5)
    np.testing.assert_allclose(q.T @ q, np.eye(5), atol=1e-10)
    s = tu.new_sym_matrix_with_real_eigvals_2d(5)
    np.testing.assert_allclose(s, s.T, atol=1e-10)
    assert np.abs(np.linalg.eigvalsh(s)).max() <= 10
    sb = tu.new_sym_matrix_with_real_eigvals_nd((3, 4, 4))
    assert sb.shape == (3, 4, 4)
    np.testing.assert_allclose(sb, np.swapaxes(sb, -1, -2), atol=1e-10)


def test_sparse_helpers():
    csr, (indptr, indices, data) = tu.rand_sparse_ndarray((4, 5), "csr", density=0.5)
    assert csr.stype == "csr" and data.shape[0] == indices.shape[0] == int(indptr.asnumpy()[-1])
    rsp = tu.create_sparse_array((6, 2), "row_sparse", rsp_indices=[4, 1])
    assert rsp.stype == "row_sparse" and rsp.indices.asnumpy().tolist() == [1, 4]
    z = tu.create_sparse_array_zd((6, 2), "row_sparse", 0.9)
    assert z.indices.shape == (0,)
    with pytest.raises(MXNetError, match="storage type"):
        tu.rand_sparse_ndarray((3, 3), "coo")
    with pytest.raises(MXNetError, match="CSR"):
        tu.shuffle_csr_column_indices(nd.zeros((2, 2)))
    np.random.seed(0)
    indices = np.arange(10)
    csr = types.SimpleNamespace(indptr=np.array([0, 4, 4, 10]), indices=indices)
    tu.shuffle_csr_column_indices(csr)
    assert sorted(csr.indices[:4]) == [0, 1, 2, 3] and sorted(csr.indices[4:]) == list(range(4, 10))
    assert list(csr.indices) != list(range(10))


def test_np_symbol_and_symbol_structure():
    assert not isinstance(mx.sym.var("x"), tu.np_symbol)
    with pytest.raises(MXNetError, match="NumPy mode"):
        tu.np_symbol()
    x = mx.sym.var("x")
    a = mx.sym.relu(mx.sym.FullyConnected(x, num_hidden=3, name="fc_a"))
    b = mx.sym.relu(mx.sym.FullyConnected(mx.sym.var("y"), num_hidden=5, name="other"))
    c = mx.sym.sigmoid(mx.sym.FullyConnected(x, num_hidden=3))
    assert tu.same_symbol_structure(a, b)
    assert not tu.same_symbol_structure(a, c)
    assert not tu.same_symbol_structure(a, mx.sym.relu(a))


def test_chi2_survival_function_matches_closed_forms():
    for x in (0.1, 1.0, 3.0, 10.0, 40.0):
        assert math.isclose(tu._chi2_sf(x, 2), math.exp(-x / 2), rel_tol=1e-10)
        assert math.isclose(tu._chi2_sf(x, 1), math.erfc(math.sqrt(x / 2)), rel_tol=1e-9)
        assert math.isclose(tu._chi2_sf(x, 4), math.exp(-x / 2) * (1 + x / 2), rel_tol=1e-10)
    assert math.isclose(tu._chi2_sf(11.070497693516351, 5), 0.05, rel_tol=1e-9)
    assert tu._chi2_sf(0.0, 3) == 1.0


def _normal_ppf(p):
    if p <= 0:
        return -np.inf
    if p >= 1:
        return np.inf
    return statistics.NormalDist().inv_cdf(p)


def test_gen_buckets_and_chi_square_continuous():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: 2 * p, 4)
    assert buckets == [(0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.5, 2.0)] and probs == [0.25] * 4
    with pytest.raises(ValueError):
        tu.gen_buckets_probs_with_ppf(lambda p: p, 0)
    np.random.seed(5)
    buckets, probs = tu.gen_buckets_probs_with_ppf(_normal_ppf, 5)
    p, obs, expected = tu.chi_square_check(lambda n: np.random.normal(size=n), buckets, probs, nsamples=20000)
    assert obs.sum() == 20000 and list(expected) == [4000] * 5
    assert p > 0.001
    # a shifted distribution is rejected
    p_bad, obs_bad, _ = tu.chi_square_check(lambda n: np.random.normal(0.2, 1.0, size=n), buckets, probs,
                                            nsamples=20000)
    assert p_bad < 1e-6
    # the statistic is Pearson's: check against a hand computation
    exp = np.full(5, 4000.0)
    stat = ((obs_bad - exp) ** 2 / exp).sum()
    assert math.isclose(p_bad, tu._chi2_sf(stat, 4), rel_tol=1e-12, abs_tol=1e-300)


def test_chi_square_discrete_and_verify_generator():
    np.random.seed(7)
    values, probs = [0, 1, 2, 3], [0.1, 0.2, 0.3, 0.4]
    good = lambda n: np.random.choice(4, size=n, p=probs)  # noqa: E731
    bad = lambda n: np.random.choice(4, size=n)  # noqa: E731
    p, obs, _ = tu.chi_square_check(good, values, probs, nsamples=10000)
    assert p > 0.001 and obs.sum() == 10000
    ps = tu.verify_generator(good, values, probs, nsamples=5000, nrepeat=5)
    assert len(ps) == 5
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(bad, values, probs, nsamples=5000, nrepeat=3)
    # NDArray generators work too
    p_nd, _, _ = tu.chi_square_check(lambda n: nd.array(good(n)), values, probs, nsamples=5000)
    assert p_nd > 0.001
    with pytest.raises(ValueError):
        tu.chi_square_check(good, values, probs[:3], nsamples=10)


def test_mean_and_var_check():
    np.random.seed(11)
    gen = lambda n: np.random.normal(1.0, 2.0, size=n)  # noqa: E731
    assert tu.mean_check(gen, 1.0, 2.0, nsamples=20000)
    assert not tu.mean_check(gen, 1.2, 2.0, nsamples=20000)
    assert tu.var_check(gen, 2.0, nsamples=20000)
    assert not tu.var_check(gen, 2.3, nsamples=20000)


def _mlp_builder():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(4, activation="tanh"), gluon.nn.BatchNorm(), gluon.nn.Dense(3))
    return net


class _ForwardDiffers(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x * 2 if F is nd else x * 3


class _GradDiffers(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.BlockGrad(x) * x if F is not nd else x * x


class _ParamGradDiffers(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(3,))

    def hybrid_forward(self, F, x, w):
        return x * (F.BlockGrad(w) if F is not nd else w)


class _Affine(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b):
        return a * b + 1, F.relu(a)


def test_check_gluon_hybridize_consistency():
    np.random.seed(13)
    x = nd.array(np.random.randn(5, 6))
    tu.check_gluon_hybridize_consistency(_mlp_builder, [x])
    a, b = np.random.rand(2, 3), np.random.rand(2, 3)
    tu.check_gluon_hybridize_consistency(_Affine, [a, b], numpy_func=lambda a, b: (a * b + 1, np.maximum(a, 0)))
    with pytest.raises(AssertionError, match="numpy_output0"):
        tu.check_gluon_hybridize_consistency(_Affine, [a, b], numpy_func=lambda a, b: (a * b, a))
    with pytest.raises(AssertionError, match="hybridized_output0"):
        tu.check_gluon_hybridize_consistency(_ForwardDiffers, [x])
    with pytest.raises(AssertionError, match="hybridized_grad_data0"):
        tu.check_gluon_hybridize_consistency(_GradDiffers, [x])
    tu.check_gluon_hybridize_consistency(_GradDiffers, [x], test_grad=False)
    with pytest.raises(AssertionError, match=r"hybridized_grad\[w\]"):
        tu.check_gluon_hybridize_consistency(_ParamGradDiffers, [nd.ones((2, 3))])


def test_features():
    f = tu.Features()
    assert f is tu.Features()
    assert f.is_enabled("CUDA") == torch.cuda.is_available() == f["CUDA"].enabled
    assert f.is_enabled("mkldnn") == f.is_enabled("ONEDNN") == torch.backends.mkldnn.is_available()
    assert f.is_enabled("OPENMP") == torch.backends.openmp.is_available()
    with pytest.raises(RuntimeError, match="NO_SUCH_FEATURE.*known features are: CUDA"):
        f.is_enabled("NO_SUCH_FEATURE")  # MXNet raises for an unknown name
    assert f.is_enabled("TVM_OP") is False and f.is_enabled("INT64_TENSOR_SIZE") is True
    assert list(f)[:3] == ["CUDA", "CUDNN", "NCCL"] and len(tu.feature_list()) == len(f)
    r = repr(f)
    assert r.startswith("[") and ("✖ CUDA" in r or "✔ CUDA" in r)
    assert not tu.has_tvm_ops()


def test_download_local_files_and_no_network(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"hello")
    out = tu.download(str(src), fname="copy.bin", dirname=str(tmp_path / "d"))
    assert out == os.path.join(str(tmp_path / "d"), "copy.bin") and open(out, "rb").read() == b"hello"
    src.write_bytes(b"changed")
    assert open(tu.download(str(src), fname="copy.bin", dirname=str(tmp_path / "d")), "rb").read() == b"hello"
    out = tu.download("file://" + str(src), fname="copy.bin", dirname=str(tmp_path / "d"), overwrite=True)
    assert open(out, "rb").read() == b"changed"
    # a network URL works only when the file is already in place
    (tmp_path / "d" / "there.txt").write_text("x")
    assert tu.download("http://example.com/there.txt", dirname=str(tmp_path / "d")).endswith("there.txt")
    with pytest.raises(MXNetError, match="no network access") as ei:
        tu.download("http://example.com/missing.txt", dirname=str(tmp_path / "d"))
    assert "missing.txt" in str(ei.value)


def test_download_model(tmp_path):
    sym_file, params_file = tmp_path / "s.json", tmp_path / "p.params"
    sym_file.write_text("{}")
    params_file.write_bytes(b"\x00")
    meta = {"m": {"symbol": str(sym_file), "params": str(params_file)}}
    prefix, epoch = tu.download_model("m", dst_dir=str(tmp_path / "models"), meta_info=meta)
    assert epoch == 0 and prefix == os.path.join(str(tmp_path / "models"), "m")
    assert open(prefix + "-symbol.json").read() == "{}" and os.path.exists(prefix + "-0000.params")
    assert tu.download_model("unknown", dst_dir=str(tmp_path), meta_info=meta) == (None, 0)
    with pytest.raises(MXNetError, match="resnet-18-symbol.json"):
        tu.download_model("imagenet1k-resnet-18", dst_dir=str(tmp_path / "zoo"))


def _write_idx(folder, prefix, images, labels):
    n, rows, cols = images.shape
    with gzip.open(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, rows, cols) + images.astype(np.uint8).tobytes())
    with gzip.open(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels.astype(np.uint8).tobytes())


def test_mnist_helpers_on_local_files(tmp_path):
    folder = str(tmp_path)
    with pytest.raises(MXNetError, match="train-labels-idx1-ubyte.gz"):
        tu.get_mnist(folder)
    rng = np.random.RandomState(0)
    train = rng.randint(0, 256, size=(6, 28, 28))
    test = rng.randint(0, 256, size=(4, 28, 28))
    _write_idx(folder, "train", train, np.arange(6) % 10)
    _write_idx(folder, "t10k", test, np.array([9, 8, 7, 6]))
    d = tu.get_mnist(folder)
    assert d["train_data"].shape == (6, 1, 28, 28) and d["train_data"].dtype == np.float32
    np.testing.assert_allclose(d["train_data"][:, 0], train / 255.0, rtol=1e-6)
    assert d["test_label"].dtype == np.int8 and list(d["test_label"]) == [9, 8, 7, 6]
    tu.get_mnist_ubyte(folder)
    with open(os.path.join(folder, "t10k-images-idx3-ubyte"), "rb") as f:
        raw = f.read()
    assert raw[16:] == test.astype(np.uint8).tobytes()
    train_it, val_it = tu.get_mnist_iterator(2, (784,), path=folder)
    batch = next(iter(val_it))
    assert batch.data[0].shape == (2, 784)
    train_it, val_it = tu.get_mnist_iterator(2, (1, 28, 28), path=folder)
    assert next(iter(val_it)).data[0].shape == (2, 1, 28, 28)
    with pytest.raises(MXNetError, match="mnist.pkl.gz"):
        tu.get_mnist_pkl(folder)
    (tmp_path / "mnist.pkl.gz").write_bytes(b"")
    tu.get_mnist_pkl(folder)


def test_zip_bz2_cifar_im2rec(tmp_path, monkeypatch):
    zsrc = tmp_path / "src.zip"
    with zipfile.ZipFile(zsrc, "w") as zf:
        zf.writestr("inner/a.txt", "zipped")
    data_dir = str(tmp_path / "zipdata")
    tu.get_zip_data(data_dir, str(zsrc), "ds.zip")
    assert open(os.path.join(data_dir, "inner", "a.txt")).read() == "zipped"
    bsrc = tmp_path / "src.bz2"
    bsrc.write_bytes(bz2.compress(b"line1\nline2\n"))
    bz_dir = str(tmp_path / "bzdata")
    tu.get_bz2_data(bz_dir, "data.txt", str(bsrc), "data.txt.bz2")
    assert open(os.path.join(bz_dir, "data.txt"), "rb").read() == b"line1\nline2\n"
    assert not os.path.exists(os.path.join(bz_dir, "data.txt.bz2"))
    with pytest.raises(MXNetError, match="cifar10-b9ac2870.zip"):
        tu.get_cifar10(str(tmp_path / "c"))
    os.makedirs(tmp_path / "c2" / "cifar")
    for name in ("train.rec", "test.rec", "train.lst", "test.lst"):
        (tmp_path / "c2" / "cifar" / name).write_text("")
    tu.get_cifar10(str(tmp_path / "c2"))
    monkeypatch.setenv("HYBRIDNET_TEST_HOME", str(tmp_path / "home"))
    with pytest.raises(IOError, match="im2rec.py"):
        tu.get_im2rec_path("HYBRIDNET_TEST_HOME")
    with pytest.raises(MXNetError):
        tu.get_im2rec_path("HYBRIDNET_TEST_HOME")
    os.makedirs(tmp_path / "home" / "tools")
    (tmp_path / "home" / "tools" / "im2rec.py").write_text("")
    assert tu.get_im2rec_path("HYBRIDNET_TEST_HOME") == os.path.join(str(tmp_path / "home"), "tools", "im2rec.py")
