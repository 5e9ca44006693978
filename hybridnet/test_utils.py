"""Testing helpers (MXNet's ``mx.test_utils``): tolerant comparisons with MXNet's messages,
random data, finite-difference gradient checks for Symbols, and small context managers.

Behaviour follows MXNet 1.9.1: default tolerances depend on the dtypes compared
(``default_rtols``/``default_atols``), ``assert_almost_equal`` reports the location of the
largest violation, ``check_numeric_gradient`` compares an executor's backward with central
finite differences of a random projection of the first output, ``check_gluon_hybridize_consistency``
compares a block's eager and hybridized outputs and gradients, ``chi_square_check`` /
``verify_generator`` test random generators (chi-square survival function computed here, scipy
is not needed). There is no network access: the dataset/model helpers use files already in
place and otherwise raise MXNetError naming the file to provide. Sparse storage and NumPy mode
are not supported (clear MXNetError).
"""
from __future__ import annotations

import errno
import json
import logging
import numbers
import os
import platform
import sys
import time
import traceback
import types
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

from .base import BFLOAT16_NP, MXNetError
from .context import Context, current_context
from .ndarray import ndarray as _ndm
from .ndarray.ndarray import NDArray, array
from .symbol import Symbol  # re-exported as mx.test_utils.Symbol, as in MXNet

mx = sys.modules[__name__.rpartition(".")[0]]  # the package, bound as ``mx`` like MXNet's module does

__all__ = ["default_context", "set_default_context", "default_dtype", "default_rtols", "default_atols",
           "default_numeric_eps", "effective_dtype", "get_tolerance", "get_tols", "get_atol", "get_rtol",
           "get_etol", "random_arrays", "random_uniform_arrays", "random_sample", "rand_shape_2d",
           "rand_shape_3d", "rand_shape_nd", "rand_coord_2d", "rand_ndarray", "np_reduce", "same",
           "same_array", "checkShapes", "almost_equal", "locationError", "assert_almost_equal",
           "assert_allclose", "assert_almost_equal_with_err", "almost_equal_ignore_nan",
           "assert_almost_equal_ignore_nan", "assert_exception", "assertRaises", "retry", "environment",
           "getenv", "setenv", "discard_stderr", "DummyIter", "simple_forward", "numeric_grad",
           "check_numeric_gradient", "check_symbolic_forward", "check_symbolic_backward",
           "check_consistency", "check_speed", "list_gpus", "collapse_sum_like", "compare_ndarray_tuple",
           "compare_optimizer", "is_op_runnable", "has_tvm_ops", "is_cd_run", "is_aarch64_run",
           "get_cuda_compute_capability", "use_np", "Context", "current_context", "Symbol", "np_symbol",
           "assign_each", "assign_each2", "create_vector", "create_2d_tensor", "get_identity_mat",
           "get_identity_mat_batch", "new_matrix_with_real_eigvals_2d", "new_matrix_with_real_eigvals_nd",
           "new_orthonormal_matrix_2d", "new_sym_matrix_with_real_eigvals_2d",
           "new_sym_matrix_with_real_eigvals_nd", "rand_sparse_ndarray", "create_sparse_array",
           "create_sparse_array_zd", "shuffle_csr_column_indices", "same_symbol_structure",
           "gen_buckets_probs_with_ppf", "mean_check", "var_check", "chi_square_check", "verify_generator",
           "check_gluon_hybridize_consistency", "Feature", "Features", "feature_list", "download",
           "download_model", "get_mnist", "get_mnist_pkl", "get_mnist_ubyte", "get_mnist_iterator",
           "get_cifar10", "get_zip_data", "get_bz2_data", "get_im2rec_path",
           # modules MXNet's test_utils imports at top level (it has no __all__, so
           # ``from mxnet.test_utils import *`` gives them to test files)
           "mx", "np", "npt", "rnd", "sys", "os", "time", "traceback", "numbers", "platform",
           "errno", "logging", "json", "OrderedDict", "contextmanager", "array", "MXNetError",
           "NDArray"]


# ---- contexts, dtypes and tolerances ---------------------------------------------------------
def default_context() -> Context:
    """The context tests run on: the current context."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` the current (default) context of this thread."""
    Context._local.value = ctx


def default_dtype() -> Any:
    """The dtype of generated test data: numpy.float32."""
    return np.float32


def default_rtols() -> dict:
    """Relative tolerance per dtype for comparisons (MXNet's table; bfloat16 added)."""
    return {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5,
            np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.uint8): 0, np.dtype(np.int16): 0,
            np.dtype(np.int32): 0, np.dtype(np.uint32): 0, np.dtype(np.int64): 0, np.dtype(np.uint64): 0,
            np.dtype(BFLOAT16_NP): 2e-2}


def default_atols() -> dict:
    """Absolute tolerance per dtype for comparisons (MXNet's table; bfloat16 added)."""
    return {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20,
            np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.uint8): 0, np.dtype(np.int16): 0,
            np.dtype(np.int32): 0, np.dtype(np.uint32): 0, np.dtype(np.int64): 0, np.dtype(np.uint64): 0,
            np.dtype(BFLOAT16_NP): 1e-1}


def default_numeric_eps() -> dict:
    """Finite-difference step per dtype (powers of two, as MXNet)."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def effective_dtype(dat: Any) -> np.dtype:
    """The dtype that decides tolerances for ``dat`` (its own dtype; TF32 is never enabled here)."""
    return np.dtype(dat.dtype)


def get_tolerance(dat: Any, tol: Any, default_tol: dict) -> float:
    """``tol`` if it is a number, else the entry for ``dat``'s dtype in ``tol`` or ``default_tol``."""
    if isinstance(tol, numbers.Number):
        return tol  # type: ignore[return-value]
    dtype = effective_dtype(dat)
    tol = {} if tol is None else tol
    try:
        return tol.get(dtype, default_tol[dtype])
    except KeyError:
        raise TypeError(f"no default tolerance for dtype {dtype}; pass rtol/atol explicitly") from None


def get_tols(x: Any, y: Any, rtol: Any, atol: Any) -> tuple:
    """(rtol, atol) for comparing ``x`` and ``y``: the larger default of their two dtypes."""
    if isinstance(x, numbers.Number):
        x = np.array(x)
    if isinstance(y, numbers.Number):
        y = np.array(y)
    rtol = max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols()))
    return rtol, atol


def get_atol(atol: Optional[float] = None, dtype: Any = np.dtype(np.float64)) -> float:
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol: Optional[float] = None, dtype: Any = np.dtype(np.float64)) -> float:
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol: Optional[float] = None) -> float:
    return 0 if etol is None else etol


# ---- random data -----------------------------------------------------------------------------
def random_arrays(*shapes: Sequence[int]) -> Any:
    """Standard-normal float32 NumPy arrays, one per shape (a single array for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes: Sequence[int], **kwargs: Any) -> list:
    """Uniform arrays in [low, high) (``low``/``high``/``dtype`` keywords)."""
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError(f"random_uniform_arrays got unexpected arguments {sorted(kwargs)}")
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population: list, k: int) -> list:
    """``k`` elements of ``population`` in random order, without replacement."""
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k={k} must be in [0, {len(population)}]")
    pop = list(population)
    np.random.shuffle(pop)
    return pop[:k]


def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False) -> tuple:
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10, allow_zero_size: bool = False) -> tuple:
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1), rnd.randint(low, dim2 + 1)


def rand_shape_nd(num_dim: int, dim: int = 10, allow_zero_size: bool = False) -> tuple:
    low = 0 if allow_zero_size else 1
    return tuple(int(d) for d in rnd.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low: int, x_high: int, y_low: int, y_high: int) -> tuple:
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def rand_ndarray(shape: Sequence[int], stype: str = "default", density: Optional[float] = None,
                 dtype: Any = None, modifier_func: Optional[Callable] = None,
                 shuffle_csr_indices: bool = False, distribution: Optional[str] = None,
                 ctx: Optional[Context] = None) -> NDArray:
    """A random NDArray (standard normal, float32 unless ``dtype``); for 'row_sparse'/'csr' a
    random sparse array (``rand_sparse_ndarray``)."""
    if stype != "default":
        return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype, modifier_func=modifier_func,
                                   shuffle_csr_indices=shuffle_csr_indices, distribution=distribution,
                                   ctx=ctx)[0]
    ctx = ctx if ctx else default_context()
    data = random_arrays(tuple(shape))
    if modifier_func is not None:
        data = np.vectorize(modifier_func)(data).astype(data.dtype)
    return array(data, ctx=ctx, dtype=dtype)


def np_reduce(dat: np.ndarray, axis: Any, keepdims: bool, numpy_reduce_func: Callable) -> np.ndarray:
    """Reduce ``dat`` over ``axis`` (int, list or None) one axis at a time, like MXNet's helper."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else range(len(dat.shape))
    ret = dat
    for i in reversed(sorted(axis)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        keepdims_shape = list(dat.shape)
        for i in axis:
            keepdims_shape[i] = 1
        ret = ret.reshape(tuple(keepdims_shape))
    return ret


# ---- comparisons -----------------------------------------------------------------------------
def _as_np(x: Any) -> Any:
    if isinstance(x, NDArray):
        return x.asnumpy()
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return x


def same(a: Any, b: Any) -> bool:
    """Whether two arrays (NumPy or NDArray) have equal shapes and elements."""
    return bool(np.array_equal(_as_np(a), _as_np(b)))


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """Whether two NDArrays share their memory (the same elements at the same addresses)."""
    t1, t2 = array1._t, array2._t
    if array1.stype != "default" or array2.stype != "default":  # sparse: the same storage
        return t1 is t2
    return t1.data_ptr() == t2.data_ptr() and t1.shape == t2.shape and t1.stride() == t2.stride()


def checkShapes(a: Any, b: Any) -> None:
    if a.shape != b.shape:
        msg = npt.build_err_msg([a, b], err_msg=f"a.shape = {a.shape} and b.shape = {b.shape} are not equal")
        raise AssertionError(msg)


def almost_equal(a: Any, b: Any, rtol: Optional[float] = None, atol: Optional[float] = None,
                 equal_nan: bool = False, use_broadcast: bool = True) -> bool:
    """``np.allclose`` on NumPy/NDArray/scalar inputs with default tolerances per dtype."""
    a, b = _as_np(a), _as_np(b)
    if not use_broadcast:
        checkShapes(np.asarray(a), np.asarray(b))
    if rtol is None or atol is None:
        r, t = get_tols(a if hasattr(a, "dtype") else np.asarray(a),
                        b if hasattr(b, "dtype") else np.asarray(b), rtol, atol)
        rtol, atol = r, t
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def locationError(a: np.ndarray, b: np.ndarray, index: tuple, names: Sequence[str],
                  maxError: bool = False) -> str:
    """'Location of [maximum ]error: (i, j), a=..., b=...' (MXNet's mismatch comment)."""
    maximum = "maximum " if maxError else ""
    return (f"Location of {maximum}error: {index}, {names[0]}={float(a[index]):.8f}, "
            f"{names[1]}={float(b[index]):.8f}")


def _find_max_violation(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> tuple:
    with np.errstate(invalid="ignore", over="ignore"):
        absdiff = np.where(np.equal(a, b), 0, np.abs(a - b))
        tol = atol + rtol * np.abs(b)
        violation = absdiff / (tol + 1e-20)
    violation = np.where(np.isnan(violation), np.inf, violation)
    loc = int(np.argmax(violation))
    idx = tuple(int(i) for i in np.unravel_index(loc, violation.shape))
    return idx, float(np.max(violation))


def _to_comparable(x: Any) -> np.ndarray:
    x = _as_np(x)
    if isinstance(x, (numbers.Number, np.generic)):
        return np.asarray(x)
    x = np.asarray(x)
    if x.dtype == BFLOAT16_NP:
        x = x.astype(np.float32)
    return x


def assert_almost_equal(a: Any, b: Any, rtol: Any = None, atol: Any = None, names: Sequence[str] = ("a", "b"),
                        equal_nan: bool = False, use_broadcast: bool = True,
                        mismatches: tuple = (10, 10)) -> None:
    """Raise AssertionError unless ``a`` and ``b`` are elementwise close (|a-b| <= atol + rtol*|b|).

    Inputs may be NDArrays, NumPy arrays or scalars. Default tolerances depend on both dtypes.
    The message gives the worst violation, the mismatch percentage, and the location and values
    of the maximum error, e.g. ``Location of maximum error: (1, 2), a=0.50000000, b=0.60000000``.
    """
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _to_comparable(a), _to_comparable(b)
    if not use_broadcast:
        checkShapes(a, b)
    try:
        bshape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise AssertionError(npt.build_err_msg(
            [a, b], err_msg=f"shapes {a.shape} ({names[0]}) and {b.shape} ({names[1]}) do not match")) from None
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a_full = np.array(np.broadcast_to(a, bshape), dtype=np.float64)
    b_full = np.array(np.broadcast_to(b, bshape), dtype=np.float64)
    if equal_nan:
        both = np.isnan(a_full) & np.isnan(b_full)
        a_full[both] = 0
        b_full[both] = 0
    index, rel = _find_max_violation(a_full, b_full, rtol, atol)
    if index != ():
        index_err, rel_err = index, rel
        a_tmp, b_tmp = a_full.copy(), b_full.copy()
        lines = []
        i = 1
        while i <= a_full.size:
            if i <= mismatches[0]:
                lines.append("%3d: Error %f  %s" % (i, rel, locationError(a_full, b_full, index, names)))
            a_tmp[index] = b_tmp[index] = 0
            if np.allclose(a_tmp, b_tmp, rtol=rtol, atol=atol, equal_nan=equal_nan):
                break
            i += 1
            if i <= mismatches[1] or mismatches[1] <= 0:
                index, rel = _find_max_violation(a_tmp, b_tmp, rtol, atol)
            else:
                break
        print(f"\n*** Maximum errors for vector of size {a_full.size}:  rtol={rtol}, atol={atol}\n")
        print("\n".join(lines))
        degree = "at least " if mismatches[1] > 0 and i > mismatches[1] else ""
        err_msg = "Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %s%f%%).\n%s" % (
            rel_err, rtol, atol, degree, 100 * i / a_full.size,
            locationError(a_full, b_full, index_err, names, maxError=True))
    else:
        err_msg = "Error %f exceeds tolerance rtol=%e, atol=%e.\n%s=%.8f, %s=%.8f" % (
            rel, rtol, atol, names[0], float(a_full), names[1], float(b_full))
    with np.printoptions(threshold=4, suppress=True):
        msg = npt.build_err_msg([a, b], err_msg=err_msg, names=tuple(names))
    raise AssertionError(msg)


def assert_allclose(a: Any, b: Any, rtol: float = 1e-07, atol: float = 0, equal_nan: bool = True) -> None:
    """``assert_almost_equal`` with NumPy's assert_allclose defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a: Any, b: Any, rtol: Any = None, atol: Any = None, etol: Optional[float] = None,
                                 names: Sequence[str] = ("a", "b"), equal_nan: bool = False,
                                 mismatches: tuple = (10, 10)) -> None:
    """Like assert_almost_equal, but tolerates a fraction ``etol`` of mismatching elements."""
    etol = get_etol(etol)
    if etol > 0:
        rtol, atol = get_tols(a, b, rtol, atol)
        a, b = _to_comparable(a), _to_comparable(b)
        equals = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        err = 1 - np.count_nonzero(equals) / equals.size
        if err > etol:
            assert_almost_equal(a, b, rtol, atol, names, equal_nan, mismatches=mismatches)
    else:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan, mismatches=mismatches)


def almost_equal_ignore_nan(a: Any, b: Any, rtol: Optional[float] = None, atol: Optional[float] = None) -> bool:
    """almost_equal after zeroing positions where either array is NaN."""
    a, b = np.array(_to_comparable(a), copy=True), np.array(_to_comparable(b), copy=True)
    nan_mask = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan_mask] = 0
    b[nan_mask] = 0
    return almost_equal(a, b, rtol, atol)


def assert_almost_equal_ignore_nan(a: Any, b: Any, rtol: Any = None, atol: Any = None,
                                   names: Sequence[str] = ("a", "b")) -> None:
    """assert_almost_equal after zeroing positions where either array is NaN."""
    a, b = np.array(_to_comparable(a), copy=True), np.array(_to_comparable(b), copy=True)
    nan_mask = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan_mask] = 0
    b[nan_mask] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f: Callable, exception_type: Any, *args: Any, **kwargs: Any) -> None:
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise {exception_type}")


def assertRaises(expected_exception: Any, func: Callable, *args: Any, **kwargs: Any) -> None:
    """Assert that ``func(*args, **kwargs)`` raises ``expected_exception`` (MXNet tests' helper)."""
    try:
        func(*args, **kwargs)
    except expected_exception:
        return
    name = getattr(expected_exception, "__name__", str(expected_exception))
    raise AssertionError(f"{getattr(func, '__name__', func)!s} did not raise {name}")


def retry(n: int) -> Callable:
    """Decorator: rerun a stochastic test up to ``n`` times before failing."""
    if n <= 0:
        raise ValueError("retry: n must be positive")

    def decorate(f: Callable) -> Callable:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            err: Optional[AssertionError] = None
            for _ in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError as e:
                    err = e
            assert err is not None
            raise err
        wrapper.__name__ = getattr(f, "__name__", "wrapper")
        return wrapper
    return decorate


# ---- environment -----------------------------------------------------------------------------
from .util import getenv, setenv  # noqa: E402,F401  (MXNet exposes both here too)


@contextmanager
def environment(*args: Any) -> Iterator[None]:
    """Set environment variables for the ``with`` body, restoring them afterwards.

    ``environment('NAME', 'value')`` or ``environment({'A': '1', 'B': None})`` (None unsets).
    """
    if len(args) == 2:
        specs = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], dict):
        specs = dict(args[0])
    else:
        raise ValueError("environment() takes (name, value) or a dict {name: value}")
    saved = {k: getenv(k) for k in specs}
    try:
        for k, v in specs.items():
            setenv(k, v)
        yield
    finally:
        for k, v in saved.items():
            setenv(k, v)


@contextmanager
def discard_stderr() -> Iterator[None]:
    """Discard output written to the stderr file descriptor inside the ``with`` body."""
    with open(os.devnull, "w") as bit_bucket:
        try:
            stderr_fileno = sys.stderr.fileno()
        except (AttributeError, ValueError, OSError):
            yield  # stderr is not a real file (captured): nothing to redirect
            return
        sys.stderr.flush()
        old = os.dup(stderr_fileno)
        try:
            os.dup2(bit_bucket.fileno(), stderr_fileno)
            yield
        finally:
            sys.stderr.flush()
            os.dup2(old, stderr_fileno)
            os.close(old)


class DummyIter:
    """An iterator that returns the first batch of ``real_iter`` forever (for speed tests)."""

    def __init__(self, real_iter: Any):
        self.real_iter = real_iter
        self.provide_data = getattr(real_iter, "provide_data", None)
        self.provide_label = getattr(real_iter, "provide_label", None)
        self.batch_size = getattr(real_iter, "batch_size", None)
        self.the_batch = next(iter(real_iter))

    def __iter__(self) -> "DummyIter":
        return self

    def __next__(self) -> Any:
        return self.the_batch

    def next(self) -> Any:
        return self.the_batch

    def reset(self) -> None:
        pass


# ---- Symbol checks ---------------------------------------------------------------------------
def _sorted_items(d: dict) -> list:
    return sorted(d.items(), key=lambda t: t[0])


def _parse_location(sym: Any, location: Any, ctx: Context, dtype: Any = default_dtype()) -> "OrderedDict":
    """name -> NDArray for every argument of ``sym`` from a list (argument order) or a dict."""
    if not isinstance(location, (dict, list, tuple)):
        raise TypeError("location must be a list of arrays (in list_arguments() order) or a dict")
    args = sym.list_arguments()
    if isinstance(location, dict):
        if set(location) != set(args):
            raise ValueError(f"Symbol arguments and keys of the given location do not match. "
                             f"symbol args: {sorted(args)}, location keys: {sorted(location)}")
    else:
        if len(location) != len(args):
            raise ValueError(f"location has {len(location)} arrays but the symbol has arguments {args}")
        location = dict(zip(args, location))
    out = {}
    for k, v in location.items():
        if isinstance(v, NDArray):
            out[k] = v.as_in_context(ctx) if dtype == "asnumpy" else v.astype(dtype).as_in_context(ctx)
        else:
            v = np.asarray(v)
            out[k] = array(v, ctx=ctx, dtype=v.dtype if dtype == "asnumpy" else dtype)
    return OrderedDict(_sorted_items(out))


def _parse_aux_states(sym: Any, aux_states: Any, ctx: Context, dtype: Any = default_dtype()) -> Optional[dict]:
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError(f"Symbol aux_states names and given aux_states do not match: "
                             f"{sorted(names)} vs {sorted(aux_states)}")
    else:
        aux_states = dict(zip(names, aux_states))
    out = {}
    for k, v in aux_states.items():
        v = v.asnumpy() if isinstance(v, NDArray) else np.asarray(v)
        out[k] = array(v, ctx=ctx, dtype=v.dtype if dtype == "asnumpy" else dtype)
    return out


def _grad_reqs(sym: Any, grad_req: Any) -> dict:
    args = sym.list_arguments()
    if isinstance(grad_req, str):
        return {k: grad_req for k in args}
    if isinstance(grad_req, (list, tuple)):
        return dict(zip(args, grad_req))
    return {k: grad_req.get(k, "null") for k in args}


def simple_forward(sym: Any, ctx: Optional[Context] = None, is_train: bool = False, **inputs: Any) -> Any:
    """Run ``sym`` once on NumPy inputs; NumPy outputs (one array if the symbol has one output)."""
    ctx = ctx or default_context()
    args = {k: array(v, ctx=ctx) for k, v in inputs.items()}
    exe = sym.bind(ctx, args=args)
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def _set_args(exe: Any, values: dict) -> None:
    for k, v in values.items():
        exe.arg_dict[k][:] = v


def numeric_grad(executor: Any, location: dict, aux_states: Optional[dict] = None, eps: float = 1e-4,
                 use_forward_train: bool = True, dtype: Any = default_dtype(),
                 projection: Optional[np.ndarray] = None) -> dict:
    """Central finite differences of ``sum(projection * output0)`` for every float argument.

    ``location`` maps argument names to NumPy arrays; the executor's arguments are restored
    afterwards. Without ``projection`` the plain sum of the first output is differentiated.
    """
    approx = {k: np.zeros(v.shape, dtype=np.float64) for k, v in location.items()}
    location = {k: np.array(v, copy=True, order="C") for k, v in location.items()}
    _set_args(executor, {k: array(v, dtype=dtype) for k, v in location.items()})

    def f() -> float:
        if aux_states is not None:
            for key, val in aux_states.items():
                executor.aux_dict[key][:] = val
        executor.forward(is_train=use_forward_train)
        out = executor.outputs[0].asnumpy().astype(np.float64)
        return float((out * projection).sum()) if projection is not None else float(out.sum())

    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        flat = v.reshape(-1)
        target = executor.arg_dict[k]
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2.0
            target[:] = array(v, dtype=dtype)
            f_peps = f()
            flat[i] = old - eps / 2.0
            target[:] = array(v, dtype=dtype)
            f_neps = f()
            approx[k].reshape(-1)[i] = (f_peps - f_neps) / eps
            flat[i] = old
        target[:] = array(v, dtype=dtype)
    return approx


def check_numeric_gradient(sym: Any, location: Any, aux_states: Any = None, numeric_eps: Any = None,
                           rtol: Any = None, atol: Any = None, grad_nodes: Any = None,
                           use_forward_train: bool = True, ctx: Optional[Context] = None,
                           grad_stype_dict: Any = None, dtype: Any = default_dtype()) -> None:
    """Check a Symbol's backward against central finite differences (MXNet semantics).

    The first output is projected on a random array ``P`` (elements in [0.1, 1.1)); the
    executor's backward with head gradient ``P`` must match the finite differences of
    ``sum(P * output)`` for every node in ``grad_nodes`` (all arguments by default; a dict maps
    names to grad_req 'write'/'add'/'null').
    """
    if dtype not in (np.float16, np.float32, np.float64):
        raise ValueError(f"check_numeric_gradient: dtype must be float16/32/64, got {dtype}")
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = {k: v.asnumpy() for k, v in aux.items()} if aux is not None else None
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, (list, tuple)):
        grad_nodes = list(grad_nodes)
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
        grad_nodes = list(grad_nodes.keys())
    else:
        raise ValueError("grad_nodes must be None, a list of names or a dict name -> grad_req")
    full_req = {k: grad_req.get(k, "null") for k in sym.list_arguments()}
    args_grad_npy = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_nodes}
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in args_grad_npy.items()
                 if full_req[k] != "null"}
    for k, st in (grad_stype_dict or {}).items():  # sparse gradient arrays start empty, as MXNet's
        if k in args_grad and st not in (None, "default"):
            args_grad[k] = _sparse_zeros(st, args_grad[k])
    executor = sym.bind(ctx, args=dict(location), args_grad=args_grad, grad_req=full_req,
                        aux_states=aux)
    outputs = executor.forward(is_train=True)
    if len(outputs) < 1:
        raise MXNetError("check_numeric_gradient: the symbol has no outputs")
    out0 = outputs[0]
    eps = get_tolerance(out0, numeric_eps, default_numeric_eps())
    if dtype in (np.float32, np.float16) and eps < 1e-5:
        raise ValueError(f"numeric_eps={eps} is too small for {np.dtype(dtype).name} finite differences")
    proj = np.random.rand(*out0.shape) + 0.1
    head_grads = [array(proj, ctx=ctx, dtype=out0.dtype)]
    head_grads += [array(np.zeros(o.shape), ctx=ctx, dtype=o.dtype) for o in outputs[1:]]
    executor.backward(head_grads)
    symbolic = {k: (v.asnumpy() if v is not None else None) for k, v in executor.grad_dict.items()}
    numeric = numeric_grad(executor, location_npy, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype, projection=proj)
    for name in grad_nodes:
        fd_grad = numeric[name]
        sym_grad = symbolic.get(name)
        req = grad_req[name]
        if req == "write":
            assert_almost_equal(fd_grad.astype(dtype), sym_grad, rtol, atol,
                                (f"NUMERICAL_{name}", f"BACKWARD_{name}"))
        elif req == "add":
            assert_almost_equal(fd_grad.astype(dtype), sym_grad - args_grad_npy[name].astype(dtype), rtol, atol,
                                (f"NUMERICAL_{name}", f"BACKWARD_{name}"))
        elif req == "null":
            if sym_grad is not None:
                raise AssertionError(f"grad_req 'null' for {name} but a gradient array was bound")
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")


def _sparse_zeros(stype: str, like: NDArray) -> NDArray:
    from .ndarray import sparse as _sparse
    return _sparse.zeros(stype, like.shape, ctx=like.context, dtype=like.dtype)


def check_symbolic_forward(sym: Any, location: Any, expected: Any, rtol: Any = None, atol: Any = None,
                           aux_states: Any = None, ctx: Optional[Context] = None, equal_nan: bool = False,
                           dtype: Any = default_dtype()) -> list:
    """Compare a Symbol's forward outputs (is_train=False) with ``expected``; returns the outputs."""
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    executor = sym.bind(ctx, args=dict(location), aux_states=aux, grad_req="null")
    outputs = executor.forward(is_train=False)
    for name, expect, output in zip(sym.list_outputs(), expected, outputs):
        assert_almost_equal(expect, output, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym: Any, location: Any, out_grads: Any, expected: Any, rtol: Any = None,
                            atol: Any = None, aux_states: Any = None, grad_req: Any = "write",
                            ctx: Optional[Context] = None, grad_stypes: Any = None,
                            equal_nan: bool = False, dtype: Any = default_dtype()) -> dict:
    """Compare a Symbol's gradients (forward is_train=True, backward(out_grads)) with ``expected``.

    Gradient buffers start with random values so that 'write' (overwrite), 'add' (accumulate)
    and 'null' (untouched) are all checked. Returns name -> gradient NDArray.
    """
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    args_grad_npy = {k: np.random.normal(size=np.shape(v)) for k, v in _sorted_items(expected)}
    args_grad = {}
    for k, v in args_grad_npy.items():
        edt = np.asarray(_as_np(expected[k])).dtype if dtype == "asnumpy" else dtype
        args_grad[k] = array(v, ctx=ctx, dtype=edt)
        st = (grad_stypes or {}).get(k)
        if st not in (None, "default"):  # a sparse gradient array starts empty, as MXNet's
            args_grad[k] = _sparse_zeros(st, args_grad[k])
    reqs = _grad_reqs(sym, grad_req)
    executor = sym.bind(ctx, args=dict(location), args_grad=args_grad, grad_req=reqs, aux_states=aux)
    executor.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        out_grads = [o if isinstance(o, NDArray) else
                     array(np.asarray(o), ctx=ctx, dtype=np.asarray(o).dtype if dtype == "asnumpy" else dtype)
                     for o in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = [out_grads[k] if isinstance(out_grads[k], NDArray) else
                     array(np.asarray(out_grads[k]), ctx=ctx, dtype=dtype) for k in sym.list_outputs()]
    elif isinstance(out_grads, NDArray):
        out_grads = [out_grads]
    elif out_grads is None:
        out_grads = None
    else:
        out_grads = [array(np.asarray(out_grads), ctx=ctx, dtype=dtype)]
    executor.backward(out_grads)
    for name in expected:
        req = reqs.get(name, "null")
        got = args_grad[name].asnumpy()
        if req == "write":
            assert_almost_equal(expected[name], got, rtol, atol, (f"EXPECTED_{name}", f"BACKWARD_{name}"),
                                equal_nan=equal_nan)
        elif req == "add":
            assert_almost_equal(expected[name], got - args_grad_npy[name].astype(got.dtype), rtol, atol,
                                (f"EXPECTED_{name}", f"BACKWARD_{name}"), equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(args_grad_npy[name].astype(got.dtype), got, rtol, atol,
                                (f"EXPECTED_{name}", f"BACKWARD_{name}"), equal_nan=equal_nan)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")
    return args_grad


def check_consistency(sym: Any, ctx_list: list, scale: float = 1.0, grad_req: Any = "write",
                      arg_params: Optional[dict] = None, aux_params: Optional[dict] = None,
                      rtol: Any = None, atol: Any = None, raise_on_err: bool = True,
                      ground_truth: Optional[dict] = None, equal_nan: bool = False,
                      use_uniform: bool = False, rand_type: Any = np.float64) -> dict:
    """Run ``sym`` under each entry of ``ctx_list`` ({'ctx': ..., shapes..., 'type_dict': ...})
    on the same random inputs and check that outputs (and gradients) agree with the most
    precise run. Returns the ground truth (name -> array)."""
    if len(ctx_list) < 2:
        raise ValueError("check_consistency needs at least two configurations")
    syms = sym if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    output_names = syms[0].list_outputs()
    syms[0].list_arguments()
    exes = []
    for s, spec in zip(syms, ctx_list):
        spec = dict(spec)
        c = spec.pop("ctx", None)
        type_dict = spec.pop("type_dict", None)
        exes.append(s.simple_bind(c, grad_req=grad_req, type_dict=type_dict, **spec))
    arg_params = {} if arg_params is None else dict(arg_params)
    aux_params = {} if aux_params is None else dict(aux_params)
    for n, arr in _sorted_items(exes[0].arg_dict):
        if n not in arg_params:
            if use_uniform:
                arg_params[n] = np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape).astype(rand_type)
            else:
                arg_params[n] = np.random.normal(size=arr.shape, scale=scale).astype(rand_type)
    for n in exes[0].aux_dict:
        aux_params.setdefault(n, 0)
    for exe in exes:
        for n, arr in exe.arg_dict.items():
            arr[:] = arg_params[n]
        for n, arr in exe.aux_dict.items():
            arr[:] = aux_params[n]
    dtypes = []
    for exe in exes:
        exe.forward(is_train=False)
        dtypes.append(np.dtype(exe.outputs[0].dtype))
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))
    gt = ground_truth if ground_truth is not None else \
        {n: o.asnumpy() for n, o in zip(output_names, exes[gt_idx].outputs)}
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for n, o in zip(output_names, exe.outputs):
            try:
                rt, at = get_tols(o, np.asarray(gt[n]).astype(o.dtype), rtol, atol)
                assert_almost_equal(o, gt[n], rtol=rt, atol=at, equal_nan=equal_nan)
            except AssertionError:
                print(f"Predict Err: ctx {i} vs ctx {gt_idx} at {n}")
                traceback.print_exc()
                if raise_on_err:
                    raise
    if grad_req != "null":
        for exe in exes:
            exe.forward(is_train=True)
        golden = [o.asnumpy() for o in exes[gt_idx].outputs]
        for exe in exes:
            exe.backward([array(g, ctx=o.context, dtype=o.dtype) for g, o in zip(golden, exe.outputs)])
        if ground_truth is None:
            gt = dict(gt)
            gt.update({n: (g.asnumpy() if g is not None else None)
                       for n, g in exes[gt_idx].grad_dict.items()})
        for i, exe in enumerate(exes):
            if i == gt_idx:
                continue
            for n, g in exe.grad_dict.items():
                if gt.get(n) is None or g is None:
                    continue
                try:
                    rt, at = get_tols(g, np.asarray(gt[n]).astype(g.dtype), rtol, atol)
                    assert_almost_equal(g, gt[n], rtol=rt, atol=at, equal_nan=equal_nan)
                except AssertionError:
                    print(f"Train Err: ctx {i} vs ctx {gt_idx} at {n}")
                    traceback.print_exc()
                    if raise_on_err:
                        raise
    return gt


def check_speed(sym: Any, location: Optional[dict] = None, ctx: Optional[Context] = None, N: int = 20,
                grad_req: Any = None, typ: str = "whole", **kwargs: Any) -> float:
    """Seconds per forward (``typ='forward'``) or forward+backward (``'whole'``) of ``sym``."""
    ctx = ctx or default_context()
    grad_req = grad_req or "write"
    if location is None:
        exe = sym.simple_bind(ctx, grad_req=grad_req, **kwargs)
        location = {k: np.random.normal(size=a.shape, scale=1.0) for k, a in exe.arg_dict.items()}
    else:
        exe = sym.simple_bind(ctx, grad_req=grad_req, **{k: v.shape for k, v in location.items()})
    for name, arr in location.items():
        exe.arg_dict[name][:] = arr
    if typ not in ("whole", "forward"):
        raise ValueError('typ can only be "whole" or "forward".')
    train = typ == "whole"
    exe.forward(is_train=train)
    if train:
        exe.backward(out_grads=exe.outputs)
    tic = time.time()
    for _ in range(N):
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)
    _ndm.waitall()
    return (time.time() - tic) / N


# ---- misc ------------------------------------------------------------------------------------
def list_gpus() -> range:
    """Indices of the visible GPUs."""
    from .context import num_gpus
    return range(num_gpus())


def collapse_sum_like(a: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Sum ``a`` over the axes that broadcasting to ``a.shape`` added or stretched from ``shape``."""
    shape = tuple(shape)
    if len(shape) > a.ndim:
        raise ValueError(f"collapse_sum_like: shape {shape} has more dimensions than {a.shape}")
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and a.shape[lead + i] != 1)
    return a.sum(axis=axes).reshape(shape) if axes else a.reshape(shape)


def compare_ndarray_tuple(t1: Any, t2: Any, rtol: Any = None, atol: Any = None) -> None:
    """assert_almost_equal over (nested) tuples of arrays; None entries must match None."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1: Any, opt2: Any, shapes: Sequence, dtype: Any, w_stype: str = "default",
                      g_stype: str = "default", rtol: float = 1e-4, atol: float = 1e-5,
                      compare_states: bool = True, ntensors: int = 1) -> None:
    """Apply one update of two optimizers to the same weights/gradients and compare results.
    Sparse ``w_stype``/``g_stype``: ``opt2`` gets the sparse arrays, ``opt1`` dense copies."""
    if w_stype != "default" or g_stype != "default":
        w2 = rand_ndarray(shapes, w_stype, density=1, dtype=dtype) if w_stype != "default" else \
            rand_ndarray(shapes, dtype=dtype)
        g2 = rand_ndarray(shapes, g_stype, dtype=dtype) if g_stype != "default" else rand_ndarray(shapes, dtype=dtype)
        w1, g1 = w2.tostype("default"), g2.tostype("default")
        s1 = opt1.create_state_multi_precision(0, w1)
        s2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(s1, s2)
        opt1.update_multi_precision(0, w1, g1, s1)
        opt2.update_multi_precision(0, w2, g2, s2)
        if compare_states:
            compare_ndarray_tuple(s1, s2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    if not isinstance(shapes, list) or ntensors == 1 and not isinstance(shapes[0], (list, tuple)):
        shapes = [shapes]
    for i, shape in enumerate(shapes):
        w1 = rand_ndarray(shape, dtype=dtype)
        g1 = rand_ndarray(shape, dtype=dtype)
        w2, g2 = w1.copy(), g1.copy()
        s1 = opt1.create_state_multi_precision(i, w1)
        s2 = opt2.create_state_multi_precision(i, w2)
        if compare_states:
            compare_ndarray_tuple(s1, s2)
        opt1.update_multi_precision(i, w1, g1, s1)
        opt2.update_multi_precision(i, w2, g2, s2)
        if compare_states:
            compare_ndarray_tuple(s1, s2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)


def is_op_runnable() -> bool:
    return True


def has_tvm_ops() -> bool:
    return False


def is_cd_run() -> bool:
    return os.environ.get("CD_JOB", "0") == "1"


def is_aarch64_run() -> bool:
    import platform
    return platform.machine() in ("aarch64", "arm64")


from .util import get_cuda_compute_capability, use_np  # noqa: E402,F401  (MXNet exposes both here too)


# ---- small array builders (MXNet's large-tensor and linalg test helpers) -----------------------
def assign_each(the_input: np.ndarray, function: Optional[Callable]) -> np.ndarray:
    """``function`` applied to every element of ``the_input`` (a float64 array of the same shape,
    as MXNet); a plain copy when ``function`` is None."""
    the_input = np.asarray(the_input)
    if function is None:
        return np.array(the_input)
    output = np.zeros(the_input.shape)
    for idx in np.ndindex(*the_input.shape):
        output[idx] = function(the_input[idx])
    return output


def assign_each2(input1: np.ndarray, input2: np.ndarray, function: Optional[Callable]) -> np.ndarray:
    """``function(a, b)`` over pairs of elements of two same-shaped arrays (float64 result, as
    MXNet); a copy of ``input1`` when ``function`` is None."""
    input1 = np.asarray(input1)
    if function is None:
        return np.array(input1)
    input2 = np.asarray(input2)
    if input1.shape != input2.shape:
        raise ValueError(f"assign_each2: the inputs must have the same shape, got {input1.shape} "
                         f"and {input2.shape}")
    output = np.zeros(input1.shape)
    for idx in np.ndindex(*input1.shape):
        output[idx] = function(input1[idx], input2[idx])
    return output


def create_vector(size: int, dtype: Any = np.int64) -> NDArray:
    """``nd.arange(0, size)`` with ``dtype`` (int64 by default), as MXNet's large-vector tests."""
    from . import ndarray as _nd
    return _nd.arange(0, size, dtype=dtype)  # type: ignore[attr-defined]  # generated op


def create_2d_tensor(rows: int, columns: int, dtype: Any = np.int64) -> NDArray:
    """A ``(rows, columns)`` NDArray whose row ``i`` is filled with ``i`` (int64 by default)."""
    from . import ndarray as _nd
    col = _nd.arange(0, rows, dtype=dtype).reshape(rows, 1)  # type: ignore[attr-defined]  # generated op
    return _nd.broadcast_to(col, shape=(rows, columns))


def get_identity_mat(size: int) -> NDArray:
    """A float32 ``(size, size)`` identity NDArray."""
    return array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size: int) -> NDArray:
    """A batch of two ``(size, size)`` identity matrices: shape ``(2, size, size)``, float32."""
    eye = np.eye(size, dtype=np.float32)
    return array(np.stack([eye, eye]))


def new_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A random ``(n, n)`` matrix ``Q^-1 D Q`` with real eigenvalues ``diag(D)`` in [-10, 10) and a
    well-conditioned ``Q`` (a Householder reflection times a diagonal, cond(Q) < 3)."""
    while True:
        d = np.diag(np.random.uniform(-1.0, 1.0, n))
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v = v / np.linalg.norm(v, axis=0, keepdims=True)
        householder = np.eye(n) - 2.0 * (v @ v.T)
        q = householder @ d
        if np.linalg.cond(q, 2) < 3:
            break
    eig = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.linalg.inv(q) @ eig @ q


def new_matrix_with_real_eigvals_nd(shape: Sequence[int]) -> np.ndarray:
    """A batch of :func:`new_matrix_with_real_eigvals_2d` matrices with shape ``(..., n, n)``."""
    shape = tuple(shape)
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(shape)


def new_orthonormal_matrix_2d(n: int) -> np.ndarray:
    """A random ``(n, n)`` orthonormal matrix (the Q factor of a random symmetric matrix)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A random symmetric ``(n, n)`` matrix ``Q^T D Q`` with eigenvalues in [-10, 10)."""
    q = new_orthonormal_matrix_2d(n)
    eig = np.diag(np.random.uniform(-10.0, 10.0, n))
    return q.T @ eig @ q


def new_sym_matrix_with_real_eigvals_nd(shape: Sequence[int]) -> np.ndarray:
    """A batch of :func:`new_sym_matrix_with_real_eigvals_2d` matrices with shape ``(..., n, n)``."""
    shape = tuple(shape)
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(shape)


# ---- sparse storage ----------------------------------------------------------------------------
def _powerlaw_csr(rows: int, cols: int, density: float, dtype: Any) -> Any:
    """A csr matrix whose row i+1 holds twice as many values as row i (until the nnz budget of
    ``density`` runs out), as MXNet's powerlaw generator."""
    total = max(1, int(rows * cols * density))
    dense = np.zeros((rows, cols), dtype=dtype)
    used, per_row = 0, 1
    for r in range(rows):
        take = min(per_row, cols, total - used)
        if take <= 0:
            break
        dense[r, :take] = np.random.rand(take)
        used += take
        per_row *= 2
    return dense


def rand_sparse_ndarray(shape: Sequence[int], stype: str, density: Optional[float] = None, dtype: Any = None,
                        distribution: Optional[str] = None, data_init: Any = None, rsp_indices: Any = None,
                        modifier_func: Optional[Callable] = None, shuffle_csr_indices: bool = False,
                        ctx: Optional[Context] = None) -> Any:
    """A random sparse array and its parts, as MXNet's: ``(rsp, (values, indices))`` for
    'row_sparse' (each row kept with probability ``density``, or the rows ``rsp_indices``),
    ``(csr, (indptr, indices, data))`` for 'csr' ('uniform' or 'powerlaw' distribution)."""
    from .ndarray import sparse as _sparse
    ctx = ctx if ctx else default_context()
    density = np.random.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    distribution = distribution or "uniform"
    if stype == "row_sparse":
        if distribution != "uniform":
            raise MXNetError(f"rand_sparse_ndarray: distribution {distribution!r} is not supported "
                             f"for row_sparse (use 'uniform')")
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
        else:
            indices = np.argwhere(np.random.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            return (_sparse.zeros("row_sparse", shape, ctx=ctx, dtype=dtype),
                    (np.array([], dtype=dtype), np.array([])))
        val = np.random.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = np.vectorize(modifier_func)(val).astype(val.dtype)
        arr = _sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (val, indices)
    if stype == "csr":
        if len(shape) != 2:
            raise MXNetError(f"rand_sparse_ndarray: csr arrays are 2-D, got shape {tuple(shape)}")
        if distribution == "uniform":
            m = _uniform_csr(int(shape[0]), int(shape[1]), density, dtype)
            if data_init is not None:
                m.data.fill(data_init)
            if shuffle_csr_indices:
                shuffle_csr_column_indices(m)
            arr = _sparse.csr_matrix((m.data, m.indices, m.indptr), shape=tuple(shape), dtype=dtype, ctx=ctx)
        elif distribution == "powerlaw":
            arr = _sparse.csr_matrix(_powerlaw_csr(shape[0], shape[1], density, dtype), ctx=ctx, dtype=dtype)
        else:
            raise MXNetError(f"rand_sparse_ndarray: unknown distribution {distribution!r}; use "
                             f"'uniform' or 'powerlaw'")
        return arr, (arr.indptr, arr.indices, arr.data)
    raise MXNetError(f"rand_sparse_ndarray: unknown storage type {stype!r}; use 'row_sparse' or 'csr'")


def create_sparse_array(shape: Sequence[int], stype: str, data_init: Any = None, rsp_indices: Any = None,
                        dtype: Any = None, modifier_func: Optional[Callable] = None, density: float = .5,
                        shuffle_csr_indices: bool = False) -> Any:
    """A random sparse array (``rand_sparse_ndarray`` without the parts; row indices sorted)."""
    if stype not in ("row_sparse", "csr"):
        raise AssertionError(f"Unknown storage type: {stype}")
    if stype == "row_sparse" and rsp_indices is not None:
        rsp_indices = np.sort(np.asarray(rsp_indices))
    return rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                               rsp_indices=rsp_indices if stype == "row_sparse" else None, dtype=dtype,
                               modifier_func=modifier_func, shuffle_csr_indices=shuffle_csr_indices)[0]


def create_sparse_array_zd(shape: Sequence[int], stype: str, density: float, data_init: Any = None,
                           rsp_indices: Any = None, dtype: Any = None, modifier_func: Optional[Callable] = None,
                           shuffle_csr_indices: bool = False) -> Any:
    """``create_sparse_array`` where a row_sparse array's rows are exactly ``rsp_indices``."""
    if stype == "row_sparse":
        density = 0.0
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices, dtype=dtype,
                               modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def _uniform_csr(rows: int, cols: int, density: float, dtype: Any) -> Any:
    """What ``scipy.sparse.rand(rows, cols, density, format='csr')`` gives, without SciPy:
    ``round(density * rows * cols)`` distinct positions drawn uniformly, values uniform in [0, 1)
    (cast to ``dtype`` afterwards, as MXNet's helper does)."""
    n = rows * cols
    k = int(round(density * n))
    picked = np.zeros(0, np.int64)
    while picked.size < k:  # distinct positions without an O(rows * cols) permutation
        picked = np.unique(np.concatenate([picked, np.random.randint(0, n, size=k - picked.size + 8)]))
    flat = np.sort(np.random.permutation(picked)[:k]) if k else picked
    row, col = flat // cols, flat % cols
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=rows))]).astype(np.int64)
    data = np.random.rand(k).astype(dtype)
    return types.SimpleNamespace(data=data, indices=col.astype(np.int64), indptr=indptr)


def shuffle_csr_column_indices(csr: Any) -> None:
    """Shuffle, in place, the column indices inside each row of a CSR matrix given as an object with
    NumPy ``indptr`` and ``indices`` arrays (e.g. a SciPy ``csr_matrix``), as MXNet does.""" 
    indptr = getattr(csr, "indptr", None)
    indices = getattr(csr, "indices", None)
    if not isinstance(indptr, np.ndarray) or not isinstance(indices, np.ndarray):
        raise MXNetError(f"shuffle_csr_column_indices: expected a CSR matrix with NumPy 'indptr' and "
                         f"'indices' arrays (e.g. scipy.sparse.csr_matrix), got {type(csr).__name__}")
    for row in range(len(indptr) - 1):
        start, end = int(indptr[row]), int(indptr[row + 1])
        segment = np.array(indices[start:end])
        np.random.shuffle(segment)
        indices[start:end] = segment


# ---- symbols -----------------------------------------------------------------------------------
class np_symbol:
    """MXNet's NumPy-mode symbol class (``mx.symbol.numpy._Symbol``).

    hybridnet implements only the MXNet 1.x ``mx.sym`` API, so ``isinstance(x, np_symbol)`` is
    always False and constructing one raises MXNetError.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "np_symbol":
        raise MXNetError("np_symbol: MXNet's NumPy mode (mx.np / mx.symbol.numpy) is not supported by "
                         "hybridnet; use mx.sym.Symbol (mx.sym.var, mx.sym.<op>) instead.")


def same_symbol_structure(sym1: Any, sym2: Any) -> bool:
    """Whether two Symbols have the same graph structure: the same number of nodes and the same
    operator at every node position of their JSON graphs (names and attributes are ignored)."""
    import json
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    if len(nodes1) != len(nodes2):
        return False
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


# ---- statistical checks of random generators -------------------------------------------------
def _upper_incomplete_gamma_ratio(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a): a power series for x < a + 1, else a continued fraction
    evaluated with Lentz's method."""
    import math
    if x <= 0.0:
        return 1.0
    log_prefactor = -x + a * math.log(x) - math.lgamma(a)
    eps, tiny = 1e-15, 1e-300
    if x < a + 1.0:
        term = total = 1.0 / a
        denom = a
        for _ in range(100000):
            denom += 1.0
            term *= x / denom
            total += term
            if abs(term) < abs(total) * eps:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefactor))
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return min(1.0, math.exp(log_prefactor) * h)


def _chi2_sf(stat: float, dof: int) -> float:
    """Survival function P(X > stat) of the chi-square distribution with ``dof`` degrees of freedom
    (what ``scipy.stats.chi2.sf`` computes; scipy is not required)."""
    if np.isnan(stat):
        return float("nan")
    if np.isinf(stat):
        return 0.0
    return _upper_incomplete_gamma_ratio(dof / 2.0, stat / 2.0)


def gen_buckets_probs_with_ppf(ppf: Callable, nbuckets: int) -> tuple:
    """``nbuckets`` equal-probability buckets ``(ppf(i/n), ppf((i+1)/n))`` and their probabilities
    ``1/n``, for :func:`chi_square_check` of a continuous distribution with quantile function ``ppf``."""
    if nbuckets <= 0:
        raise ValueError(f"gen_buckets_probs_with_ppf: nbuckets must be positive, got {nbuckets}")
    probs = [1.0 / nbuckets for _ in range(nbuckets)]
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator: Callable, mu: float, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the mean of ``generator(nsamples)`` lies within ``mu ± 3 sigma / sqrt(nsamples)``."""
    samples = np.asarray(_as_np(generator(nsamples)), dtype=np.float64)
    sample_mean = samples.mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < sample_mean < mu + bound)


def var_check(generator: Callable, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the sample variance (ddof=1) of ``generator(nsamples)`` lies within
    ``sigma^2 ± 3 sqrt(2 sigma^4 / (nsamples - 1))``."""
    samples = np.asarray(_as_np(generator(nsamples)), dtype=np.float64)
    sample_var = samples.var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < sample_var < sigma ** 2 + bound)


def chi_square_check(generator: Callable, buckets: list, probs: Sequence[float],
                     nsamples: int = 1000000) -> tuple:
    """Pearson's chi-square test of ``generator(nsamples)`` against bucket probabilities.

    ``buckets`` is a list of ``(low, high)`` ranges (ascending, non-overlapping; a continuous
    distribution: a sample falls in the bucket whose ``[low, high)`` contains it, samples below
    the first bucket count in the first one, as in MXNet) or a list of values (a discrete
    distribution: samples equal to each value are counted). Returns ``(p_value, obs_freq,
    expected_freq)``, where ``expected_freq = int(nsamples * probs)``; a high p-value means the
    samples are consistent with ``probs`` (MXNet tests ``p > 0.05``).
    """
    if not isinstance(buckets, list):
        raise TypeError(f"chi_square_check: buckets must be a list, got {type(buckets).__name__}")
    if len(probs) != len(buckets):
        raise ValueError(f"chi_square_check: {len(buckets)} buckets but {len(probs)} probabilities")
    if len(buckets) < 2:
        raise ValueError("chi_square_check: at least two buckets are needed (one degree of freedom)")
    samples = np.asarray(_as_np(generator(nsamples))).reshape(-1)
    expected_freq = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    obs_freq = np.zeros(len(buckets), dtype=np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.empty(2 * len(buckets), dtype=np.float64)
        for i, (low, high) in enumerate(buckets):
            if low > high:
                raise ValueError(f"chi_square_check: bucket {i} {buckets[i]} has low > high")
            if i + 1 < len(buckets) and high > buckets[i + 1][0]:
                raise ValueError(f"chi_square_check: buckets {i} {buckets[i]} and {i + 1} "
                                 f"{buckets[i + 1]} overlap or are not in ascending order")
            edges[2 * i], edges[2 * i + 1] = low, high
        ids = np.searchsorted(edges, samples.astype(np.float64), side="right") // 2
        for i in range(len(buckets)):
            obs_freq[i] = int(np.count_nonzero(ids == i))
    else:
        for i, value in enumerate(buckets):
            obs_freq[i] = int(np.count_nonzero(samples == value))
    exp = expected_freq.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = float(np.sum((obs_freq - exp) ** 2 / exp))
    p_value = _chi2_sf(stat, len(buckets) - 1)
    return p_value, obs_freq, expected_freq


def verify_generator(generator: Callable, buckets: list, probs: Sequence[float], nsamples: int = 1000000,
                     nrepeat: int = 5, success_rate: float = 0.2, alpha: float = 0.05) -> list:
    """Run :func:`chi_square_check` ``nrepeat`` times; raise AssertionError unless at least
    ``nrepeat * success_rate`` runs have a p-value above ``alpha``. Returns the p-values."""
    p_values, obs_l, exp_l = [], [], []
    for _ in range(nrepeat):
        p, obs, expected = chi_square_check(generator=generator, buckets=buckets, probs=probs,
                                            nsamples=nsamples)
        p_values.append(p)
        obs_l.append(obs)
        exp_l.append(expected)
    successes = int((np.array(p_values) > alpha).sum())
    if successes < nrepeat * success_rate:
        raise AssertionError(f"Generator test fails, Chi-square p={p_values}, obs_freq={obs_l}, "
                             f"expected_freq={exp_l}.\nbuckets={buckets}, probs={probs}")
    return p_values


# ---- Gluon ---------------------------------------------------------------------------------------
def _flatten_outputs(out: Any) -> list:
    if isinstance(out, (list, tuple)):
        flat: list = []
        for o in out:
            flat.extend(_flatten_outputs(o))
        return flat
    return [out]


def check_gluon_hybridize_consistency(net_builder: Callable, data_l: Sequence, numpy_func: Optional[Callable] = None,
                                      test_grad: bool = True, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    """Check that a HybridBlock gives the same outputs and gradients eagerly and hybridized.

    ``net_builder()`` is called for every run to build a fresh block; the first one is
    initialized with its default initializer and its parameter values are loaded into the
    later ones (matched by structural name, e.g. ``0.weight``). Runs: eager and hybridized,
    each without autograd (predict mode) and, when ``test_grad``, under ``autograd.record()``
    with ``backward(out)`` (head gradient = the output). Outputs are compared between the eager
    and hybridized runs of the same mode (so blocks like BatchNorm whose training output differs
    are fine), as are the gradients of the inputs ``data_l`` and of every parameter with a
    gradient. ``numpy_func(*inputs)``, when given, must match the eager predict-mode output.
    The block must not use random operators (e.g. Dropout in training mode).
    """
    from . import autograd
    inputs0 = []
    for d in data_l:
        if isinstance(d, NDArray):
            inputs0.append(d)
        else:
            d = np.asarray(d)
            inputs0.append(array(d, dtype=d.dtype))
    params_init: Optional[dict] = None
    reference: dict = {}
    modes = [False, True] if test_grad else [False]
    for hybridize in (False, True):
        for use_autograd in modes:
            net = net_builder()
            net.initialize()
            if params_init is not None:
                params = net._collect_params_with_prefix()
                for name, value in params_init.items():
                    if name not in params:
                        raise MXNetError(f"check_gluon_hybridize_consistency: net_builder() returned blocks "
                                         f"with different parameters: {name!r} is missing from "
                                         f"{sorted(params)}")
                    params[name]._load_init(array(value, dtype=value.dtype), None)
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in inputs0]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with autograd.record():
                    out = net(*inputs)
                outs = _flatten_outputs(out)
                autograd.backward(outs, [o.detach() for o in outs])
            else:
                out = net(*inputs)
                outs = _flatten_outputs(out)
            if params_init is None:  # deferred initialization has finished now
                params_init = {}
                for name, p in net._collect_params_with_prefix().items():
                    try:
                        params_init[name] = p.data().asnumpy()
                    except (MXNetError, RuntimeError):
                        pass  # a parameter the forward pass never used
            got: dict = {"out": [o.asnumpy() for o in outs]}
            if use_autograd:
                got["input_grad"] = [_as_np(x.grad) for x in inputs]
                got["param_grad"] = {name: p.grad().asnumpy()
                                     for name, p in net._collect_params_with_prefix().items()
                                     if p.grad_req != "null" and name in params_init}
            if use_autograd not in reference:
                reference[use_autograd] = got
                continue
            ref = reference[use_autograd]
            mode = "autograd.record()" if use_autograd else "predict mode"
            if len(got["out"]) != len(ref["out"]):
                raise AssertionError(f"check_gluon_hybridize_consistency ({mode}): the hybridized block "
                                     f"returned {len(got['out'])} outputs, the eager one {len(ref['out'])}")
            for i, (h, e) in enumerate(zip(got["out"], ref["out"])):
                assert_almost_equal(h, e, rtol=rtol, atol=atol,
                                    names=(f"hybridized_output{i} ({mode})", f"eager_output{i} ({mode})"))
            if use_autograd:
                for i, (h, e) in enumerate(zip(got["input_grad"], ref["input_grad"])):
                    assert_almost_equal(h, e, rtol=rtol, atol=atol,
                                        names=(f"hybridized_grad_data{i}", f"eager_grad_data{i}"))
                for name, e in ref["param_grad"].items():
                    assert_almost_equal(got["param_grad"][name], e, rtol=rtol, atol=atol,
                                        names=(f"hybridized_grad[{name}]", f"eager_grad[{name}]"))
    if numpy_func is not None:
        expected = numpy_func(*[x.asnumpy() for x in inputs0])
        expected_l = list(expected) if isinstance(expected, (list, tuple)) else [expected]
        eager = reference[False]["out"]
        if len(expected_l) != len(eager):
            raise AssertionError(f"check_gluon_hybridize_consistency: numpy_func returned {len(expected_l)} "
                                 f"outputs but the block returned {len(eager)}")
        for i, (e, n) in enumerate(zip(eager, expected_l)):
            assert_almost_equal(e, n, rtol=rtol, atol=atol, names=(f"eager_output{i}", f"numpy_output{i}"))


from .runtime import Feature, Features, feature_list  # noqa: E402,F401  (MXNet has them here too)


# ---- data downloads (no network: local files only) ------------------------------------------
def _makedirs(path: str) -> None:
    if path and not os.path.isdir(path):
        os.makedirs(path, exist_ok=True)


def download(url: str, fname: Optional[str] = None, dirname: Optional[str] = None, overwrite: bool = False,
             retries: int = 5) -> str:
    """MXNet's ``test_utils.download``: fetch ``url`` to ``fname`` (default: the URL's base name)
    inside ``dirname`` and return the file name; an existing file is kept unless ``overwrite``.

    hybridnet has no network access: local paths and ``file://`` URLs are copied; for other URLs
    the file must already be in place, else MXNetError names the file to put there.
    """
    from .gluon.utils import download as _gluon_download
    if retries < 0:
        raise ValueError(f"download: number of retries should be at least 0, got {retries}")
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    _makedirs(dirname)
    if not overwrite and os.path.exists(fname):
        return fname
    _gluon_download(url, path=fname, overwrite=True, retries=retries)
    return fname


_MODEL_URL = "http://data.mxnet.io/models/"
_DEFAULT_MODEL_INFO = {
    "imagenet1k-inception-bn": ("imagenet/inception-bn/Inception-BN-symbol.json",
                                "imagenet/inception-bn/Inception-BN-0126.params"),
    "imagenet1k-resnet-18": ("imagenet/resnet/18-layers/resnet-18-symbol.json",
                             "imagenet/resnet/18-layers/resnet-18-0000.params"),
    "imagenet1k-resnet-34": ("imagenet/resnet/34-layers/resnet-34-symbol.json",
                             "imagenet/resnet/34-layers/resnet-34-0000.params"),
    "imagenet1k-resnet-50": ("imagenet/resnet/50-layers/resnet-50-symbol.json",
                             "imagenet/resnet/50-layers/resnet-50-0000.params"),
    "imagenet1k-resnet-101": ("imagenet/resnet/101-layers/resnet-101-symbol.json",
                              "imagenet/resnet/101-layers/resnet-101-0000.params"),
    "imagenet1k-resnet-152": ("imagenet/resnet/152-layers/resnet-152-symbol.json",
                              "imagenet/resnet/152-layers/resnet-152-0000.params"),
    "imagenet1k-resnext-50": ("imagenet/resnext/50-layers/resnext-50-symbol.json",
                              "imagenet/resnext/50-layers/resnext-50-0000.params"),
    "imagenet1k-resnext-101": ("imagenet/resnext/101-layers/resnext-101-symbol.json",
                               "imagenet/resnext/101-layers/resnext-101-0000.params"),
    "imagenet1k-resnext-101-64x4d": ("imagenet/resnext/101-layers/resnext-101-64x4d-symbol.json",
                                     "imagenet/resnext/101-layers/resnext-101-64x4d-0000.params"),
    "imagenet11k-resnet-152": ("imagenet-11k/resnet-152/resnet-152-symbol.json",
                               "imagenet-11k/resnet-152/resnet-152-0000.params"),
    "imagenet11k-place365ch-resnet-152": ("imagenet-11k-place365-ch/resnet-152-symbol.json",
                                          "imagenet-11k-place365-ch/resnet-152-0000.params"),
    "imagenet11k-place365ch-resnet-50": ("imagenet-11k-place365-ch/resnet-50-symbol.json",
                                         "imagenet-11k-place365-ch/resnet-50-0000.params"),
}


def download_model(model_name: str, dst_dir: str = "./", meta_info: Optional[dict] = None) -> tuple:
    """MXNet's ``test_utils.download_model``: fetch ``<dst_dir>/<model_name>-symbol.json`` and
    ``-0000.params`` (URLs from ``meta_info[model_name] = {'symbol': url, 'params': url}``, default:
    MXNet's model zoo on data.mxnet.io) and return ``(path_prefix, 0)``; ``(None, 0)`` for an
    unknown model. Files already in place are used (no network access)."""
    if meta_info is None:
        meta_info = {k: {"symbol": _MODEL_URL + s, "params": _MODEL_URL + p}
                     for k, (s, p) in _DEFAULT_MODEL_INFO.items()}
    meta_info = dict(meta_info)
    if model_name not in meta_info:
        return (None, 0)
    _makedirs(dst_dir)
    meta = dict(meta_info[model_name])
    for key in ("symbol", "params"):
        if key not in meta:
            raise MXNetError(f"download_model: meta_info[{model_name!r}] has no {key!r} URL")
    prefix = os.path.join(dst_dir, model_name)
    download(meta["symbol"], prefix + "-symbol.json")
    download(meta["params"], prefix + "-0000.params")
    return (prefix, 0)


_MNIST_URL = "https://repo.mxnet.io/gluon/dataset/mnist/"
_MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _mnist_bytes(path: str, name: str) -> bytes:
    """The decompressed IDX file ``name`` from ``path/name.gz`` (fetched if absent) or, failing
    that, an already decompressed ``path/name``."""
    import gzip
    gz = os.path.join(path, name + ".gz")
    plain = os.path.join(path, name)
    if not os.path.exists(gz) and os.path.exists(plain):
        with open(plain, "rb") as f:
            return f.read()
    download(_MNIST_URL + name + ".gz", dirname=path)
    with gzip.open(gz, "rb") as f:
        return f.read()


def get_mnist(path: str = "data") -> dict:
    """MNIST as NumPy arrays (MXNet's ``test_utils.get_mnist``): ``{'train_data', 'train_label',
    'test_data', 'test_label'}`` with images float32 ``(N, 1, 28, 28)`` scaled to [0, 1] and labels
    int8. Reads ``<path>/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`` (or the decompressed
    files); without network access they must already be there."""
    import struct
    _makedirs(path)

    def read(label_name: str, image_name: str) -> tuple:
        raw_lab = _mnist_bytes(path, label_name)
        raw_img = _mnist_bytes(path, image_name)
        if len(raw_lab) < 8 or len(raw_img) < 16:
            raise MXNetError(f"get_mnist: {label_name!r} or {image_name!r} in {path!r} is not an MNIST IDX file")
        _, count = struct.unpack(">II", raw_lab[:8])
        label = np.frombuffer(raw_lab, dtype=np.int8, count=count, offset=8)
        _, n_img, rows, cols = struct.unpack(">IIII", raw_img[:16])
        if n_img != count:
            raise MXNetError(f"get_mnist: {image_name!r} holds {n_img} images but {label_name!r} {count} labels")
        pixels = np.frombuffer(raw_img, dtype=np.uint8, count=n_img * rows * cols, offset=16)
        image = pixels.reshape(n_img, 1, rows, cols).astype(np.float32) / 255
        return label, image

    train_lbl, train_img = read("train-labels-idx1-ubyte", "train-images-idx3-ubyte")
    test_lbl, test_img = read("t10k-labels-idx1-ubyte", "t10k-images-idx3-ubyte")
    return {"train_data": train_img, "train_label": train_lbl, "test_data": test_img, "test_label": test_lbl}


def get_mnist_pkl(path: str = "data") -> None:
    """Make sure ``<path>/mnist.pkl.gz`` exists (MXNet's ``test_utils.get_mnist_pkl``); the file
    is not read (hybridnet never unpickles). Without network access it must already be there."""
    _makedirs(path)
    if not os.path.exists(os.path.join(path, "mnist.pkl.gz")):
        download("http://deeplearning.net/data/mnist/mnist.pkl.gz", dirname=path)


def _atomic_write(fname: str, chunks: Any) -> None:
    import tempfile
    dirname = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(fname) + ".", suffix=".tmp", dir=dirname)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        os.replace(tmp, fname)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def get_mnist_ubyte(path: str = "data") -> None:
    """Make sure the four decompressed MNIST IDX files are in ``path`` (MXNet's
    ``test_utils.get_mnist_ubyte``), decompressing ``<name>.gz`` files found there."""
    _makedirs(path)
    if all(os.path.exists(os.path.join(path, f)) for f in _MNIST_FILES):
        return
    for name in _MNIST_FILES:
        target = os.path.join(path, name)
        if not os.path.exists(target):
            _atomic_write(target, [_mnist_bytes(path, name)])


def get_mnist_iterator(batch_size: int, input_shape: Sequence[int], num_parts: int = 1, part_index: int = 0,
                       path: str = "data") -> tuple:
    """``(train_iter, val_iter)`` of ``mx.io.MNISTIter`` over the MNIST files in ``path``; the
    data is flat ``(batch, 784)`` unless ``input_shape`` has three dimensions (MXNet semantics)."""
    from .io import MNISTIter
    get_mnist_ubyte(path)
    flat = len(input_shape) != 3
    train = MNISTIter(image=os.path.join(path, "train-images-idx3-ubyte"),
                      label=os.path.join(path, "train-labels-idx1-ubyte"),
                      batch_size=batch_size, shuffle=True, flat=flat, num_parts=num_parts,
                      part_index=part_index)
    val = MNISTIter(image=os.path.join(path, "t10k-images-idx3-ubyte"),
                    label=os.path.join(path, "t10k-labels-idx1-ubyte"),
                    batch_size=batch_size, flat=flat, num_parts=num_parts, part_index=part_index)
    return train, val


def _extract_zip(zip_path: str, dest: str) -> None:
    import zipfile
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(dest)


def get_cifar10(path: str = "data") -> None:
    """Make sure ``<path>/cifar/{train,test}.{rec,lst}`` exist (MXNet's ``test_utils.get_cifar10``),
    extracting ``<path>/cifar10-b9ac2870.zip`` when they do not; without network access that zip
    must already be there."""
    _makedirs(path)
    wanted = [os.path.join(path, "cifar", f) for f in ("train.rec", "test.rec", "train.lst", "test.lst")]
    if all(os.path.exists(f) for f in wanted):
        return
    from .gluon.utils import download as _gluon_download
    zip_path = _gluon_download("https://repo.mxnet.io/gluon/dataset/cifar10/cifar10-b9ac2870.zip", path=path,
                               sha1_hash="b9ac287012f2dad9dfb49d8271c39ecdd7db376c")
    _extract_zip(zip_path, path)


def get_zip_data(data_dir: str, url: str, data_origin_name: str) -> None:
    """Fetch the zip ``url`` to ``<data_dir>/<data_origin_name>`` and extract it into ``data_dir``
    (MXNet's ``test_utils.get_zip_data``; nothing happens when the zip is already there)."""
    zip_path = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(zip_path):
        download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
        _extract_zip(zip_path, data_dir)


def get_bz2_data(data_dir: str, data_name: str, url: str, data_origin_name: str) -> None:
    """Make sure ``<data_dir>/<data_name>`` exists: fetch ``url`` to ``<data_dir>/<data_origin_name>``,
    decompress it (bz2) to ``data_name`` and remove the compressed file (MXNet's
    ``test_utils.get_bz2_data``)."""
    import bz2
    target = os.path.join(data_dir, data_name)
    origin = os.path.join(data_dir, data_origin_name)
    if os.path.exists(target):
        return
    download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)

    def chunks() -> Iterator[bytes]:
        with bz2.BZ2File(origin, "rb") as f:
            while True:
                block = f.read(1 << 20)
                if not block:
                    return
                yield block

    _atomic_write(target, chunks())
    os.remove(origin)


class _ToolNotFoundError(MXNetError, IOError):
    """A required local file is missing (an MXNetError that is also the IOError MXNet raises)."""


def get_im2rec_path(home_env: str = "MXNET_HOME") -> str:
    """Path to ``tools/im2rec.py``: under ``$<home_env>`` if set, else next to the installed package
    (``<pkg>/tools`` or, for a source checkout, ``<pkg>/../../tools``), as MXNet looks for it."""
    base = os.environ.get(home_env) or os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(base, "tools", "im2rec.py"),
                  os.path.join(base, "..", "..", "tools", "im2rec.py")]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise _ToolNotFoundError(f"Could not find path to tools/im2rec.py (looked at {candidates}); hybridnet does "
                             f"not ship im2rec.py: put MXNet's tools/im2rec.py there or set ${home_env} to a "
                             f"folder that contains tools/im2rec.py.")
