"""``mx.npx``: MXNet 1.9.1's NumPy extensions (operators NumPy lacks, the mode switches).

``npx.set_np()`` switches this thread to NumPy semantics (``np_semantics``); ``npx.relu``,
``npx.convolution``, ``npx.batch_norm``... are the registry's ``_npx_*`` operators and MXNet's
``_npx_*`` aliases of the older ones (``ops/numpy_ops.py``), returning ``mx.np.ndarray``.
"""
from __future__ import annotations

import sys
import types
from typing import Any

from .. import random as _mx_random
from ..context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus  # noqa: F401
from ..ndarray.ndarray import NDArray, waitall  # noqa: F401
from ..np_semantics import is_np_array, is_np_shape, reset_np, set_np  # noqa: F401
from ..numpy import _FUNCS, _GENERATED, _fill, as_np
from ..util import get_cuda_compute_capability  # noqa: F401

_this = sys.modules[__name__]


def _submodule(name: str, doc: str) -> types.ModuleType:
    full = f"{__name__}.{name}"
    mod = sys.modules.get(full)
    if mod is None:
        mod = types.ModuleType(full, doc)
        sys.modules[full] = mod
    setattr(_this, name, mod)
    return mod


image = _submodule("image", "mx.npx.image: the image operators (_npx__image_*) on mx.np arrays")
random = _submodule("random", "mx.npx.random: seed and the samplers MXNet adds to NumPy's")
_fill(_this, _FUNCS["npx"], _GENERATED["npx"])
_fill(image, _GENERATED["npx.image"])


def _np_results(fn: Any) -> Any:
    """One of mx.image's functions, returning mx.np arrays under ``npx.set_np()``."""
    import functools

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        res = fn(*[a.as_nd_ndarray() if isinstance(a, NDArray) else a for a in args], **kwargs)
        return as_np(res) if is_np_array() else res
    return wrapped


# MXNet's npx.image also holds mx.image's functions and classes (augmenters, ImageIter)
from .. import image as _mx_image  # noqa: E402
for _n in [n for n in getattr(_mx_image, "__all__", dir(_mx_image)) if not n.startswith("_")]:
    _obj = getattr(_mx_image, _n, None)
    if _obj is None or hasattr(image, _n) or isinstance(_obj, types.ModuleType):
        continue
    setattr(image, _n, _obj if isinstance(_obj, type) or not callable(_obj) else _np_results(_obj))


def _seed(seed: int, ctx: Any = "all") -> None:
    """``npx.random.seed(seed, ctx='all')``: seeds the random number generators (MXNet's
    ``mx.random.seed``, whose first parameter npx names ``seed``)."""
    _mx_random.seed(seed, ctx)


random.seed = _seed  # type: ignore[attr-defined]
_fill(random, _FUNCS["npx.random"], _GENERATED["npx.random"])


def save(file: str, arr: Any) -> None:
    """``npx.save``: MXNet's .params format (an array, a list or a dict of arrays)."""
    from ..ndarray.utils import save as _save
    _save(file, arr)


def load(file: str) -> Any:
    """``npx.load``: arrays saved by ``npx.save``/``nd.save``, as ``mx.np.ndarray``s."""
    from ..ndarray.utils import load as _load
    res = _load(file)
    if isinstance(res, dict):
        return {k: as_np(v) for k, v in res.items()}
    return as_np(res)


def gpu_memory_info(device_id: int = 0) -> tuple:
    """(free, total) bytes of GPU ``device_id`` (MXNet's ``npx.gpu_memory_info``)."""
    from ..util import get_gpu_memory
    return get_gpu_memory(device_id)
