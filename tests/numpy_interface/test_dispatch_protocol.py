"""NumPy's dispatch protocols on mx.np arrays (MXNet 1.9.1's numpy_dispatch_protocol): official
NumPy functions and ufuncs called on mx.np.ndarray run mx.np (results are mx.np arrays, gradients
flow), functions outside MXNet's lists run on the values (no recording), and the results match
official NumPy's, including the sequence types the running NumPy returns."""
import numpy as onp
import pytest

import hybridnet as mx
from hybridnet import autograd, np, npx
from hybridnet.numpy_dispatch_protocol import _NUMPY_ARRAY_FUNCTION_LIST, _NUMPY_ARRAY_UFUNC_LIST

RS = onp.random.RandomState(3)
A = RS.uniform(-1, 1, (3, 4)).astype("float32")
B = RS.uniform(-1, 1, (3, 4)).astype("float32")


def test_lists_are_mxnets_and_exist_in_both():
    assert "concatenate" in _NUMPY_ARRAY_FUNCTION_LIST and "linalg.norm" in _NUMPY_ARRAY_FUNCTION_LIST
    assert "add" in _NUMPY_ARRAY_UFUNC_LIST and "matmul" in _NUMPY_ARRAY_UFUNC_LIST
    assert "unique" in _NUMPY_ARRAY_FUNCTION_LIST and "zeros" not in _NUMPY_ARRAY_FUNCTION_LIST
    for name in _NUMPY_ARRAY_FUNCTION_LIST + _NUMPY_ARRAY_UFUNC_LIST:
        mod_o, mod_m = onp, np
        for part in name.split("."):
            mod_o, mod_m = getattr(mod_o, part), getattr(mod_m, part)
        assert callable(mod_o) and callable(mod_m)


@pytest.mark.parametrize("call", [
    lambda m: onp.sum(m(A), axis=1),
    lambda m: onp.concatenate([m(A), m(B)], axis=0),
    lambda m: onp.linalg.norm(m(A), 2),
    lambda m: onp.linalg.norm(m(A), "nuc"),
    lambda m: onp.linalg.norm(m(A), onp.inf, axis=1),
    lambda m: onp.roll(m(A), 1, axis=(0, 1)),
    lambda m: onp.diff(m(A)[:1, :1], n=2),
    lambda m: onp.where(m(A) > 0, m(A), m(B)),
    lambda m: onp.add(m(A), m(B)),
    lambda m: onp.maximum(m(A), 0.25),
    lambda m: onp.exp(m(A)),
    lambda m: m(A) @ m(B).T,
])
def test_dispatched_results_are_mx_np_and_match(call):
    npx.set_np()
    got = call(np.array)
    want = call(lambda x: x)
    assert isinstance(got, np.ndarray), type(got)
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_official_ufunc_with_numpy_array_operand():
    npx.set_np()
    got = onp.multiply(A, np.array(B))
    assert isinstance(got, np.ndarray)
    onp.testing.assert_allclose(got.asnumpy(), A * B, rtol=1e-6)


def test_sequence_types_follow_running_numpy():
    npx.set_np()
    a, b = np.array(A[0]), np.array(B[:, :1])
    for name, args in (("broadcast_arrays", (a, b)), ("meshgrid", (a, a)), ("atleast_2d", (a, b))):
        got, want = getattr(onp, name)(*args), getattr(onp, name)(A[0], B[:, :1]) if name != "meshgrid" \
            else onp.meshgrid(A[0], A[0])
        assert type(got) is type(want), name
        for g, w in zip(got, want):
            onp.testing.assert_allclose(g.asnumpy(), w)
    s = (A[:3, :3] + A[:3, :3].T).astype("float64")
    got, want = onp.linalg.eigh(np.array(s)), onp.linalg.eigh(s)
    assert type(got) is type(want)
    onp.testing.assert_allclose(got[0].asnumpy(), want[0], rtol=1e-6)


def test_gradients_flow_through_dispatched_functions():
    npx.set_np()
    x = np.array(A)
    x.attach_grad()
    with autograd.record():
        y = onp.sum(onp.exp(x) * 2)
    y.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), 2 * onp.exp(A), rtol=1e-5)


def test_unlisted_functions_fall_back_to_official_numpy():
    npx.set_np()
    x = np.array(A)
    got = onp.cumprod(x, axis=1)  # not in MXNet's list: computed by NumPy, handed back as mx.np
    assert isinstance(got, np.ndarray)
    onp.testing.assert_allclose(got.asnumpy(), onp.cumprod(A, axis=1), rtol=1e-6)
    assert bool(onp.allclose(x, x))
    x.attach_grad()
    with autograd.record():
        with pytest.raises(ValueError, match="autograd"):
            onp.cumprod(x)


def test_pinv_with_an_array_rcond_and_tensorsolve_shapes():
    npx.set_np()
    a = RS.uniform(-1, 1, (2, 3, 4)).astype("float32")
    r = onp.array([0.01, 0.3], dtype="float32")
    onp.testing.assert_allclose(np.linalg.pinv(np.array(a), np.array(r)).asnumpy(), onp.linalg.pinv(a, r),
                                rtol=1e-4, atol=1e-5)
    one = onp.array([[2.0]], dtype="float32")
    assert np.linalg.tensorsolve(np.array(one), np.array(one)).shape == onp.linalg.tensorsolve(one, one).shape


def test_split_errors_as_numpy():
    npx.set_np()
    with pytest.raises(ValueError, match="equal division"):
        np.split(np.arange(10), 3)
    with pytest.raises(ValueError, match="dimensions"):
        np.vsplit(np.array([1, 2, 3, 4]), 2)
    assert [p.shape for p in np.array_split(np.arange(10), 3)] == [(4,), (3,), (3,)]


def test_out_of_range_python_ints_wrap_as_numpy_1():
    npx.set_np()
    assert np.array([1621], dtype=onp.uint8).item() == 1621 % 256


def test_inf_attributes_round_trip_through_symbol_json():
    x = mx.sym.var("x")
    y = mx.sym.np.linalg.norm(x.as_np_ndarray(), onp.inf, axis=1)
    back = mx.sym.load_json(y.tojson())
    assert "inf" in back.tojson()
