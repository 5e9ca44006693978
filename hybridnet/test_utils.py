"""Testing helpers (MXNet's ``mx.test_utils``): tolerant comparisons with MXNet's messages,
random data, finite-difference gradient checks for Symbols, and small context managers.

Behaviour follows MXNet 1.9.1: default tolerances depend on the dtypes compared
(``default_rtols``/``default_atols``), ``assert_almost_equal`` reports the location of the
largest violation, ``check_numeric_gradient`` compares an executor's backward with central
finite differences of a random projection of the first output.
"""
from __future__ import annotations

import numbers
import os
import sys
import time
import traceback
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
           "get_cuda_compute_capability", "use_np", "Context", "current_context"]


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
        return tol
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
    """A random NDArray (standard normal, float32 unless ``dtype``); only dense storage."""
    if stype != "default":
        raise MXNetError(f"rand_ndarray(stype={stype!r}): sparse storage is not supported by hybridnet")
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
def getenv(name: str) -> Optional[str]:
    """The value of environment variable ``name`` (None if unset)."""
    return os.environ.get(name)


def setenv(name: str, value: Optional[str]) -> None:
    """Set environment variable ``name`` (unset it when ``value`` is None)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


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
    """Apply one update of two optimizers to the same weights/gradients and compare results."""
    if w_stype != "default" or g_stype != "default":
        raise MXNetError("compare_optimizer: sparse storage is not supported by hybridnet")
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


def get_cuda_compute_capability(ctx: Context) -> int:
    """Compute capability of a GPU context as major*10+minor."""
    import torch
    if ctx.device_type != "gpu":
        raise ValueError("get_cuda_compute_capability: expected a GPU context")
    major, minor = torch.cuda.get_device_capability(ctx.device_id)
    return major * 10 + minor


def use_np(func: Any) -> Any:
    """MXNet switches to its NumPy front-end here; hybridnet has only mx.nd, so this raises."""
    raise MXNetError("use_np: hybridnet implements the MXNet 1.x mx.nd API only (no mx.np)")
