"""NumPy 1.x names that NumPy 2 removed, put back for MXNet-era programs run through the alias.

Code written for MXNet 1.x uses ``np.NaN``, ``np.float``, ``np.product``, ``np.asscalar``...; on
NumPy 2 it stops at the first one although nothing else in it needs NumPy 1. :func:`install`
(called by :func:`hybridnet.compat.alias_mxnet`, hence by ``python -m hybridnet``) answers those
names again through NumPy's module ``__getattr__``: the first read of each name warns once
(:class:`NumPy1NameWarning`) and then binds it on ``numpy``. Only names the running NumPy lacks
are served, so nothing NumPy still defines (``np.bool`` is back in NumPy 2) is shadowed.

Off switch: ``alias_mxnet(numpy1_names=False)``, ``python -m hybridnet --no-numpy1-names``, or
the environment variable ``HYBRIDNET_NUMPY1_NAMES=0``. Plain ``import hybridnet`` never calls this.
"""
from __future__ import annotations

import builtins
import os
import warnings
from typing import Any, Callable, Dict, Optional

import numpy as np

__all__ = ["ENV_VAR", "NumPy1NameWarning", "REMOVED_NAMES", "install", "uninstall", "is_installed",
           "enabled_by_env"]

ENV_VAR = "HYBRIDNET_NUMPY1_NAMES"


class NumPy1NameWarning(UserWarning):
    """A NumPy 1.x name removed in NumPy 2 was used; hybridnet's compat layer supplied it."""


def _asscalar(a: Any) -> Any:
    return np.asarray(a).item()


def _asfarray(a: Any, dtype: Any = np.float64) -> np.ndarray:
    dtype = np.dtype(dtype)
    return np.asarray(a, dtype=dtype if np.issubdtype(dtype, np.inexact) else np.float64)


def _in1d(ar1: Any, ar2: Any, assume_unique: bool = False, invert: bool = False) -> np.ndarray:
    return np.isin(np.ravel(ar1), ar2, assume_unique=assume_unique, invert=invert)


def _msort(a: Any) -> np.ndarray:
    return np.sort(a, axis=0)


# name -> (what it was, what to write instead); each makes its value lazily.
REMOVED_NAMES: Dict[str, tuple] = {
    # builtin aliases removed in NumPy 1.24 (np.bool and np.long came back in NumPy 2)
    "float": (lambda: builtins.float, "float"),
    "int": (lambda: builtins.int, "int"),
    "bool": (lambda: builtins.bool, "bool"),
    "object": (lambda: builtins.object, "object"),
    "str": (lambda: builtins.str, "str"),
    "complex": (lambda: builtins.complex, "complex"),
    "unicode": (lambda: builtins.str, "str"),
    "long": (lambda: builtins.int, "int"),
    # constants removed in NumPy 2.0
    "NaN": (lambda: np.nan, "np.nan"),
    "NAN": (lambda: np.nan, "np.nan"),
    "Inf": (lambda: np.inf, "np.inf"),
    "Infinity": (lambda: np.inf, "np.inf"),
    "infty": (lambda: np.inf, "np.inf"),
    "PINF": (lambda: np.inf, "np.inf"),
    "NINF": (lambda: -np.inf, "-np.inf"),
    "PZERO": (lambda: 0.0, "0.0"),
    "NZERO": (lambda: -0.0, "-0.0"),
    # scalar type aliases removed in NumPy 2.0
    "float_": (lambda: np.float64, "np.float64"),
    "complex_": (lambda: np.complex128, "np.complex128"),
    "cfloat": (lambda: np.complex128, "np.complex128"),
    "singlecomplex": (lambda: np.complex64, "np.complex64"),
    "longfloat": (lambda: np.longdouble, "np.longdouble"),
    "longcomplex": (lambda: np.clongdouble, "np.clongdouble"),
    "clongfloat": (lambda: np.clongdouble, "np.clongdouble"),
    "string_": (lambda: np.bytes_, "np.bytes_"),
    "unicode_": (lambda: np.str_, "np.str_"),
    # functions removed in NumPy 1.23 / 2.x
    "asscalar": (lambda: _asscalar, "a.item()"),
    "product": (lambda: np.prod, "np.prod"),
    "cumproduct": (lambda: np.cumprod, "np.cumprod"),
    "alltrue": (lambda: np.all, "np.all"),
    "sometrue": (lambda: np.any, "np.any"),
    "round_": (lambda: np.round, "np.round"),
    "asfarray": (lambda: _asfarray, "np.asarray(a, dtype=np.float64)"),
    "msort": (lambda: _msort, "np.sort(a, axis=0)"),
    "mat": (lambda: np.asmatrix, "np.asmatrix"),
    "in1d": (lambda: _in1d, "np.isin"),
    "row_stack": (lambda: np.vstack, "np.vstack"),
    "trapz": (lambda: getattr(np, "trapezoid"), "np.trapezoid"),
    "typeDict": (lambda: np.sctypeDict, "np.sctypeDict"),
}

_ORIGINAL_GETATTR: Optional[Callable[[str], Any]] = None
_SERVED: set = set()


def enabled_by_env() -> bool:
    """False when ``HYBRIDNET_NUMPY1_NAMES`` is ``0``/``false``/``no``/``off``."""
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def _getattr(name: str) -> Any:
    entry = REMOVED_NAMES.get(name)
    if entry is not None and name not in np.__dict__:
        make, instead = entry
        value = make()
        warnings.warn(f"numpy.{name} was removed in NumPy 2 (running {np.__version__}); "
                      f"hybridnet's MXNet compat layer supplies it for this program. Write "
                      f"{instead} instead (set {ENV_VAR}=0 to turn this off).",
                      NumPy1NameWarning, stacklevel=2)
        setattr(np, name, value)  # later reads are plain attribute reads: one warning per name
        _SERVED.add(name)
        return value
    if _ORIGINAL_GETATTR is not None:
        return _ORIGINAL_GETATTR(name)
    raise AttributeError(f"module 'numpy' has no attribute {name!r}")


def install() -> None:
    """Serve the removed names from now on (idempotent); see the module docstring."""
    global _ORIGINAL_GETATTR
    current = np.__dict__.get("__getattr__")
    if current is _getattr:
        return
    _ORIGINAL_GETATTR = current
    np.__getattr__ = _getattr  # type: ignore[attr-defined]


def uninstall() -> None:
    """Restore NumPy's own ``__getattr__`` and remove the names served so far."""
    global _ORIGINAL_GETATTR
    if np.__dict__.get("__getattr__") is not _getattr:
        return
    if _ORIGINAL_GETATTR is None:
        del np.__getattr__  # type: ignore[attr-defined]
    else:
        np.__getattr__ = _ORIGINAL_GETATTR  # type: ignore[attr-defined]
    _ORIGINAL_GETATTR = None
    for name in _SERVED:
        np.__dict__.pop(name, None)
    _SERVED.clear()


def is_installed() -> bool:
    """Whether NumPy currently serves the removed names."""
    return np.__dict__.get("__getattr__") is _getattr
