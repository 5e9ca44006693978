"""Array plumbing for gluon Parameters: zero buffers, gradient buffers, per-context copies in a
storage type, in-place value writes and casts.

These touch the tensors behind NDArrays (device placement, sparse layouts, autograd-free
copies); they live here so that ``gluon`` works on NDArrays only and never imports torch.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from ..base import dtype_name, dtype_torch
from ..context import Context
from ..ops import storage as _storage
from . import sparse as _sparse
from .ndarray import NDArray, placed

__all__ = ["zeros_on", "zero_grad_buffer", "is_inexact", "stored_copy", "clear_grad",
           "write_values", "cast_copy", "mean_on_cpu", "detached_copy", "dtype_of"]


def zeros_on(shape: tuple, dtype: Any, ctx: Context) -> NDArray:
    """A dense zero array on ``ctx`` (any shape, including () and zero-size ones)."""
    return NDArray(torch.zeros(shape, dtype=dtype_torch(dtype), device=ctx.torch_device))


def zero_grad_buffer(arr: NDArray, stype: str = "default") -> NDArray:
    """A zero gradient buffer for ``arr``: its shape, dtype and device, storage ``stype``."""
    t = arr._t
    return _sparse.wrap(_sparse.zeros_tensor(stype, t.shape, t.dtype, t.device))


def is_inexact(arr: NDArray) -> bool:
    """Whether ``arr`` holds floating-point or complex values (gradients can flow into it)."""
    t = arr._t
    return t.is_floating_point() or t.is_complex()


def _in_storage(t: torch.Tensor, stype: str) -> NDArray:
    """``t`` as an array of storage ``stype``; a row_sparse parameter holds every row (as MXNet's
    initialized row_sparse weights do), so in-place updates can write any row."""
    if stype == "row_sparse":
        return _sparse.wrap(_storage.full_rows(_storage.to_rsp(t)))
    return _sparse.wrap(_storage.cast(t, stype))


def stored_copy(data: NDArray, ctx: Context, stype: str) -> NDArray:
    """A new copy of ``data``'s values on ``ctx`` in storage ``stype``, placed on ``ctx``."""
    src = _storage.to_dense(data._t.detach())
    return placed(_in_storage(src.to(ctx.torch_device, copy=True), stype), ctx)


def clear_grad(grad: NDArray) -> None:
    """Zero a gradient buffer in place; a sparse one becomes empty (MXNet's zero_grad)."""
    g = grad._t
    with torch.no_grad():
        if g.layout is torch.strided:
            g.zero_()
        else:
            grad._t = _sparse.zeros_tensor(grad.stype, g.shape, g.dtype, g.device)


def write_values(dst: NDArray, src: NDArray, stype: str) -> None:
    """Overwrite ``dst``'s values with ``src``'s (cast to dst's dtype and device), keeping
    ``dst``'s storage ``stype``; no autograd history."""
    with torch.no_grad():
        s = src._t.detach().to(device=dst._t.device, dtype=dst._t.dtype)
        if dst._t.layout is not torch.strided:
            dst[:] = _in_storage(_storage.to_dense(s), stype)
        else:
            dst._t.copy_(_storage.to_dense(s))


def cast_copy(arr: NDArray, dtype: Any) -> NDArray:
    """A detached copy of ``arr`` in ``dtype`` (storage kept), placed on arr's context."""
    return placed(_sparse.wrap(arr._t.detach().to(dtype_torch(dtype_name(dtype)))), arr.context)


def mean_on_cpu(arrays: Sequence[NDArray], stype: str) -> NDArray:
    """The element-wise mean of ``arrays`` on CPU in storage ``stype`` (one array: itself,
    detached, on CPU)."""
    if len(arrays) == 1:
        return _sparse.wrap(arrays[0]._t.detach().cpu())
    acc = sum(_storage.to_dense(d._t.detach().cpu()) for d in arrays) / len(arrays)
    return _in_storage(acc, stype)


def detached_copy(arr: NDArray) -> NDArray:
    """A new array with ``arr``'s values and no autograd link."""
    return NDArray(arr._t.detach().clone())


def dtype_of(arr: NDArray) -> str:
    """MXNet's name of ``arr``'s dtype ('float32', 'bfloat16', ...)."""
    return dtype_name(arr._t.dtype)
