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
    with pytest.raises(MXNetError):
        tu.rand_ndarray((2, 2), stype="csr")
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
