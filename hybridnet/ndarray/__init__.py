"""``mx.nd``: the imperative front-end, generated from the operator registry."""
from __future__ import annotations

import sys
import types

import numpy as _np

from .. import ops as _ops  # noqa: F401  (registers every operator)
from ..ops import frontend as _frontend
from ..recordio import _legacy_imdecode
from . import ndarray as _ndarray_mod
from .ndarray import NDArray, array, from_torch, invoke, waitall

_this = sys.modules[__name__]


def _submodule(name: str) -> types.ModuleType:
    full = f"{__name__}.{name}"
    mod = sys.modules.get(full)
    if mod is None:
        mod = types.ModuleType(full, f"mx.nd.{name}: generated operator functions")
        sys.modules[full] = mod
        setattr(_this, name, mod)
    return mod


from . import random, linalg, contrib, sparse  # noqa: E402  (hand-written parts, filled below)

_ndarray_mod.sparse_dispatch = sparse.sparse_invoke
_ndarray_mod.sparse_store = sparse.store_into
_spaces = {"": _this, "random": random, "linalg": linalg, "contrib": contrib,
           "image": _submodule("image"), "sparse": sparse,
           "_internal": _submodule("_internal")}
op = _submodule("op")
_FUNCS = _frontend.populate(_spaces, invoke, sparse.sparse_invoke)
_frontend.fill_op_module(op, _FUNCS)
_ndarray_mod._FN.update({k: v for k, v in _FUNCS.items()})
_ndarray_mod.install_operators(NDArray)
for _m in _frontend.OPERATOR_METHODS:
    if _m in _FUNCS and not hasattr(NDArray, _m):
        setattr(NDArray, _m, _frontend.method_from(_FUNCS[_m], _m))

from .utils import *  # noqa: E402,F401,F403  (creation, save/load, add/subtract/... on scalars too)
from .utils import __all__ as _utils_all  # noqa: E402

split_v2 = _frontend.make_split_v2(_FUNCS["_split_v2"])
histogram = _frontend.make_histogram(_FUNCS["_histogram"], lambda x: isinstance(x, NDArray))
NDArray.split_v2 = lambda self, *a, **k: split_v2(self, *a, **k)  # type: ignore[attr-defined]


def imdecode(str_img, clip_rect=(0, 0, 0, 0), out=None, index=0, channels=3, mean=None):  # type: ignore[no-untyped-def]
    """DEPRECATED (as in MXNet): decode to float32 CxHxW, OpenCV's channel order (BGR), cropped to
    ``clip_rect`` = (x0, y0, x1, y1) (all zeros: the whole image), minus ``mean``; with a 4-D
    ``out`` the result goes to ``out[index]``. Use ``mx.image.imdecode`` (HWC, RGB)."""
    chw = _legacy_imdecode(str_img.asnumpy() if isinstance(str_img, NDArray) else str_img, clip_rect, channels)
    if mean is not None:
        chw = chw - (mean.asnumpy() if isinstance(mean, NDArray) else _np.asarray(mean))
    if out is None:
        return array(chw, dtype=_np.float32 if mean is None else mean.dtype)
    target = out if out.ndim == 3 else out[index]
    target[:] = array(chw)
    return out
