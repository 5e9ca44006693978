"""MXNet 1.9.1's NumPy fallbacks: ``mx.np`` functions it computes with official NumPy.

MXNet's ``numpy/fallback.py`` (and ``fallback_linalg.py``) list functions without operators of
their own; calling one converts its ``mx.np.ndarray`` arguments to NumPy, runs NumPy and turns
array results back into ``mx.np.ndarray`` (no gradient, as in MXNet). Names that NumPy no longer
has (``npv``, ``trapz``, ``msort``... removed in NumPy 2) are absent and listed in ``MISSING``.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as _onp

__all__ = ["FALLBACK", "FALLBACK_LINALG", "wrap", "functions", "MISSING"]

FALLBACK = (
    "allclose alltrue apply_along_axis apply_over_axes argpartition argwhere array_equal array_equiv choose "
    "compress corrcoef correlate count_nonzero cov digitize divmod extract flatnonzero float_power frexp heaviside "
    "histogram2d histogram_bin_edges histogramdd i0 in1d interp intersect1d isclose isin ix_ lexsort "
    "min_scalar_type mirr modf msort nanargmax nanargmin nancumprod nancumsum nanmax nanmedian nanmin "
    "nanpercentile nanprod nanquantile ndim npv partition piecewise packbits poly polyadd polydiv polyfit polyint "
    "polymul polysub positive ppmt promote_types ptp pv rate real result_type rollaxis roots searchsorted select "
    "setdiff1d setxor1d signbit size spacing take_along_axis trapz tril_indices_from trim_zeros "
    "triu_indices_from union1d unpackbits unwrap vander").split()
FALLBACK_LINALG = ("cond", "lstsq", "matrix_power", "matrix_rank", "multi_dot", "qr")
# NumPy 2 spellings of names it removed (same function, new name)
_RENAMED = {"alltrue": "all", "in1d": "isin", "trapz": "trapezoid", "msort": "sort"}
MISSING: list = []


def wrap(func: Callable, make_array: Callable[[Any], Any], is_array: Callable[[Any], bool]) -> Callable:
    """``func`` (official NumPy's) on ``mx.np`` arrays: arguments to NumPy, array results back."""
    def to_onp(x: Any) -> Any:
        if is_array(x):
            return x.asnumpy()
        if isinstance(x, (list, tuple)):
            return type(x)(to_onp(v) for v in x)
        return x

    def from_onp(y: Any) -> Any:
        if isinstance(y, _onp.ndarray):
            return make_array(y)
        if isinstance(y, tuple):
            return tuple(from_onp(v) for v in y)
        if isinstance(y, list):
            return [from_onp(v) for v in y]
        return y

    @functools.wraps(func)
    def fallback(*args: Any, **kwargs: Any) -> Any:
        return from_onp(func(*[to_onp(a) for a in args], **{k: to_onp(v) for k, v in kwargs.items()}))
    fallback.__doc__ = (f"NumPy's ``{func.__name__}`` computed by official NumPy on the arrays' values "
                        f"(MXNet 1.9.1's fallback; no gradient).\n\n" + (func.__doc__ or "")[:2000])
    return fallback


def functions(make_array: Callable[[Any], Any], is_array: Callable[[Any], bool]) -> tuple:
    """({name: fallback} for mx.np, {name: fallback} for mx.np.linalg)."""
    top, linalg = {}, {}
    for name in FALLBACK:
        func = getattr(_onp, name, None) or getattr(_onp, _RENAMED.get(name, ""), None)
        if func is None:
            if name not in MISSING:
                MISSING.append(name)
            continue
        top[name] = wrap(func, make_array, is_array)
    for name in FALLBACK_LINALG:
        linalg[name] = wrap(getattr(_onp.linalg, name), make_array, is_array)
    return top, linalg
