"""Hand-written ``mx.nd`` functions that MXNet implements in Python (creation, save/load)."""
from __future__ import annotations

import os
from typing import Any, Optional, Union

import numpy as np
import torch

from ..base import MXNetError, dtype_name
from ..context import Context, current_context
from ..ops import frontend as _frontend
from ..ops import registry as _reg
from .ndarray import NDArray, array, invoke

__all__ = ["zeros", "ones", "full", "empty", "arange", "eye", "linspace", "save", "load",
           "load_frombuffer", "concatenate", "moveaxis", "onehot_encode"] + list(_frontend.MIXED)


def _ctx(ctx: Optional[Context]) -> Context:
    return ctx if ctx is not None else current_context()


def _dt(dtype: Any) -> str:
    return dtype_name(dtype) if dtype is not None else "float32"


def zeros(shape: Any, ctx: Optional[Context] = None, dtype: Any = None, stype: Optional[str] = None,
          **kwargs: Any) -> NDArray:
    """Array of zeros (MXNet: ``nd.zeros(shape, ctx=None, dtype=None)``)."""
    return invoke(_reg.get("_zeros"), (), {"shape": shape, "ctx": _ctx(ctx), "dtype": _dt(dtype)})


def ones(shape: Any, ctx: Optional[Context] = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    return invoke(_reg.get("_ones"), (), {"shape": shape, "ctx": _ctx(ctx), "dtype": _dt(dtype)})


def full(shape: Any, val: float, ctx: Optional[Context] = None, dtype: Any = None, out: Any = None) -> NDArray:
    return invoke(_reg.get("_full"), (), {"shape": shape, "value": val, "ctx": _ctx(ctx), "dtype": _dt(dtype)}, out)


def empty(shape: Any, ctx: Optional[Context] = None, dtype: Any = None, stype: Optional[str] = None) -> NDArray:
    """Uninitialised memory in MXNet; zeros here (reproducible, and as cheap on torch)."""
    return zeros(shape, ctx, dtype)


def arange(start: float, stop: Optional[float] = None, step: float = 1.0, repeat: int = 1,
           infer_range: bool = False, ctx: Optional[Context] = None, dtype: Any = "float32") -> NDArray:
    return invoke(_reg.get("_arange"), (), {"start": start, "stop": stop, "step": step, "repeat": repeat,
                                            "ctx": _ctx(ctx), "dtype": _dt(dtype)})


def eye(N: int, M: int = 0, k: int = 0, ctx: Optional[Context] = None, dtype: Any = "float32") -> NDArray:
    return invoke(_reg.get("_eye"), (), {"N": N, "M": M, "k": k, "ctx": _ctx(ctx), "dtype": _dt(dtype)})


def linspace(start: float, stop: float, num: int, endpoint: bool = True, ctx: Optional[Context] = None,
             dtype: Any = "float32") -> NDArray:
    return invoke(_reg.get("_linspace"), (), {"start": start, "stop": stop, "num": num,
                                              "endpoint": endpoint, "ctx": _ctx(ctx), "dtype": _dt(dtype)})


def concatenate(arrays: list, axis: int = 0, always_copy: bool = True) -> NDArray:
    return NDArray(torch.cat([a._t for a in arrays], dim=axis))


def moveaxis(tensor: NDArray, source: int, destination: int) -> NDArray:
    return NDArray(torch.movedim(tensor._t, source, destination))


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    depth = out.shape[1]
    res = torch.nn.functional.one_hot(indices._t.long(), depth).to(out._t.dtype)
    with torch.no_grad():
        out._t.copy_(res)
    return out


def _to_numpy_for_save(a: NDArray) -> np.ndarray:
    from ..base import BFLOAT16_NP
    t = a._t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).view(BFLOAT16_NP)
    return t.numpy()


def _from_numpy_loaded(a: np.ndarray) -> NDArray:
    from ..base import BFLOAT16_NP
    if a.dtype == BFLOAT16_NP:
        t = torch.from_numpy(a.view(np.uint16).astype(np.int16)).view(torch.bfloat16)
        return NDArray(t)
    return NDArray(torch.from_numpy(np.ascontiguousarray(a)))


def save(fname: Union[str, os.PathLike], data: Any) -> None:
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray in MXNet's format (atomic)."""
    from ..formats import params as _params
    if isinstance(data, NDArray):
        names, arrays = None, [data]
    elif isinstance(data, dict):
        for k, v in data.items():
            if not isinstance(k, str) or not isinstance(v, NDArray):
                raise TypeError("save: a dict must map str to NDArray")
        names, arrays = list(data.keys()), list(data.values())
    elif isinstance(data, (list, tuple)):
        if not all(isinstance(v, NDArray) for v in data):
            raise TypeError("save: a list must contain only NDArrays")
        names, arrays = None, list(data)
    else:
        raise TypeError(f"save: data must be an NDArray, list or dict, got {type(data).__name__}")
    _params.save(fname, [_to_numpy_for_save(a) for a in arrays], names)


def _wrap_loaded(names: Optional[list], arrays: list, ctx: Optional[Context]) -> Any:
    nds = [_from_numpy_loaded(a) for a in arrays]
    if ctx is not None:
        nds = [a.as_in_context(ctx) for a in nds]
    if names is None:
        return nds
    return dict(zip(names, nds))


def load(fname: Union[str, os.PathLike], ctx: Optional[Context] = None) -> Any:
    """Load arrays saved by ``save`` or by MXNet: a list, or a dict when the file has names."""
    from ..formats import params as _params
    names, arrays = _params.load(fname)
    return _wrap_loaded(names, arrays, ctx)


def load_frombuffer(buf: bytes, ctx: Optional[Context] = None) -> Any:
    from ..formats import params as _params
    names, arrays = _params.loads(bytes(buf))
    return _wrap_loaded(names, arrays, ctx)


def _install_mixed() -> None:
    funcs = {name: _make(name) for name in {n for t in _frontend.MIXED.values() for n in t}}
    for fname in _frontend.MIXED:
        globals()[fname] = _frontend.make_mixed(fname, funcs, lambda x: isinstance(x, NDArray))


def _make(opname: str) -> Any:
    op = _reg.get(opname)
    if op.attrs.get("scalar") is not None:
        return lambda data, scalar: invoke(op, (data,), {"scalar": scalar})
    return lambda lhs, rhs: invoke(op, (lhs, rhs), {})


_install_mixed()
