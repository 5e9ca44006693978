"""MXNet's sparse storage types at the tensor level (no NDArray here; ``ndarray.sparse`` wraps these).

* ``row_sparse`` (MXNet ``kRowSparseStorage``): ``data`` holds the kept rows, ``indices`` (int64,
  sorted, unique) their row numbers. Held as a coalesced ``torch.sparse_coo`` tensor with one
  sparse dimension (``_indices()`` of shape ``(1, k)``, ``_values()`` of shape ``(k,) + shape[1:]``).
* ``csr`` (MXNet ``kCSRStorage``, 2-D only): ``data``, column ``indices`` and row pointers
  ``indptr`` (int64). Held as a ``torch.sparse_csr`` tensor (``values``, ``col_indices``,
  ``crow_indices``).
* ``default``: a strided (dense) tensor.

Casts between them follow MXNet's ``cast_storage``: dense -> row_sparse keeps every row with a
non-zero element, dense -> csr every non-zero element.
"""
from __future__ import annotations

import warnings
from typing import Optional, Sequence

import torch
from torch import Tensor

from ..base import MXNetError

__all__ = ["StorageFormatError", "check_rsp", "check_csr", "STYPES", "csr_tensor", "stype_of", "is_sparse", "rsp", "csr", "to_rsp", "to_csr", "to_dense", "cast",
           "rsp_parts", "csr_parts", "full_rows", "rows_view", "map_values", "zeros"]

# torch labels its csr support "beta" on first use; the kernels used here are the stable ones
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state", category=UserWarning)

class StorageFormatError(MXNetError, ValueError):
    """Arrays that do not describe a valid sparse array (MXNet raises MXNetError from its format
    checks and ValueError from its Python constructors; this is both)."""


STYPES = ("default", "row_sparse", "csr")
_COO, _CSR, _STRIDED = torch.sparse_coo, torch.sparse_csr, torch.strided


def csr_tensor(indptr: Tensor, indices: Tensor, data: Tensor, shape: Sequence[int]) -> Tensor:
    """torch's csr tensor from trusted parts (``csr`` checks untrusted ones)."""
    return torch.sparse_csr_tensor(indptr, indices, data, tuple(shape), check_invariants=False)


def stype_of(t: Tensor) -> str:
    """MXNet's storage type name of a tensor held as described in the module docstring."""
    lay = t.layout
    if lay is _STRIDED:
        return "default"
    if lay is _COO:
        return "row_sparse"
    if lay is _CSR:
        return "csr"
    raise MXNetError(f"tensors with layout {lay} have no MXNet storage type")


def is_sparse(t: Optional[Tensor]) -> bool:
    return t is not None and t.layout is not _STRIDED


def rsp(data: Tensor, indices: Tensor, shape: Sequence[int]) -> Tensor:
    """A row_sparse tensor from its rows ``data`` and their row numbers ``indices``. Like MXNet's
    constructor this checks only that the parts fit together; ``check_rsp`` checks the indices
    (MXNet's ``check_format``)."""
    shape = tuple(int(d) for d in shape)
    idx = indices.reshape(-1).to(torch.int64)
    if len(shape) < 1 or tuple(data.shape) != (idx.numel(),) + shape[1:]:
        raise StorageFormatError(f"row_sparse: data of shape {tuple(data.shape)} does not fit "
                                 f"{idx.numel()} row indices of an array of shape {shape}; data "
                                 f"must have shape {(idx.numel(),) + shape[1:]}")
    if idx.numel() > 1 and not bool((idx[1:] > idx[:-1]).all()):
        # kept as given (MXNet does; check_format reports it); kernels coalesce when they read it
        return torch.sparse_coo_tensor(idx.reshape(1, -1), data, shape, check_invariants=False)
    return torch.sparse_coo_tensor(idx.reshape(1, -1), data, shape, is_coalesced=True, check_invariants=False)


def check_rsp(t: Tensor) -> None:
    """Raise StorageFormatError unless the row indices are unique and within the rows."""
    idx = t._indices()[0]
    n = t.shape[0]
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise StorageFormatError(f"row_sparse: row indices must lie in [0, {n}), got "
                                 f"[{int(idx.min())}, {int(idx.max())}]")
    if idx.numel() > 1 and bool((idx[1:] <= idx[:-1]).any()):
        raise StorageFormatError("row_sparse: row indices must be unique and in ascending order")


def csr(data: Tensor, indices: Tensor, indptr: Tensor, shape: Sequence[int]) -> Tensor:
    """A csr tensor from values, column indices and row pointers. Like MXNet's constructor this
    checks only that the parts fit ``shape``; ``check_csr`` checks their contents."""
    shape = tuple(int(d) for d in shape)
    if len(shape) != 2:
        raise StorageFormatError(f"csr arrays are 2-D, got shape {shape}")
    indptr = indptr.reshape(-1).to(torch.int64)
    indices = indices.reshape(-1).to(torch.int64)
    data = data.reshape(-1)
    if indptr.numel() != shape[0] + 1:
        raise StorageFormatError(f"csr: indptr has {indptr.numel()} entries; an array with {shape[0]} "
                                 f"rows needs {shape[0] + 1}")
    if data.numel() != indices.numel():
        raise StorageFormatError(f"csr: {data.numel()} values but {indices.numel()} column indices")
    return csr_tensor(indptr, indices, data, shape)


def check_csr(t: Tensor, full_check: bool = True) -> None:
    """Raise StorageFormatError unless indptr starts at 0, never decreases and ends at the number
    of values, and (``full_check``) column indices are in range and ascending within each row."""
    _, indices, indptr = csr_parts(t)
    if int(indptr[0]) != 0 or int(indptr[-1]) != indices.numel() or bool((indptr[1:] < indptr[:-1]).any()):
        raise StorageFormatError("csr: indptr must start at 0, never decrease and end at the number "
                                 "of values")
    if not full_check or indices.numel() == 0:
        return
    if int(indices.min()) < 0 or int(indices.max()) >= t.shape[1]:
        raise StorageFormatError(f"csr: column indices must lie in [0, {t.shape[1]})")
    rows = torch.repeat_interleave(torch.arange(t.shape[0], device=t.device), indptr[1:] - indptr[:-1])
    same_row = rows[1:] == rows[:-1]
    if bool((same_row & (indices[1:] <= indices[:-1])).any()):
        raise StorageFormatError("csr: column indices must be ascending (and unique) within each row")


def rsp_parts(t: Tensor) -> tuple:
    """(data, indices) of a row_sparse tensor (views, not copies)."""
    return t._values(), t._indices()[0]


def csr_parts(t: Tensor) -> tuple:
    """(data, indices, indptr) of a csr tensor (views, not copies)."""
    return t.values(), t.col_indices(), t.crow_indices()


def to_dense(t: Tensor) -> Tensor:
    """The dense form (``t`` itself when dense). Row_sparse tensors scatter their rows with one
    ``index_copy`` (torch's COO ``to_dense`` is much slower on small arrays with many threads)."""
    if t.layout is _STRIDED:
        return t
    if t.layout is _COO and t.sparse_dim() == 1:
        r = t if t.is_coalesced() else t.coalesce()
        out = torch.zeros(tuple(t.shape), dtype=t.dtype, device=t.device)
        return out.index_copy_(0, r._indices()[0], r._values()) if r._nnz() else out
    return t.to_dense()


def to_rsp(t: Tensor) -> Tensor:
    """Row_sparse form: every row with a non-zero element is kept (MXNet's cast_storage)."""
    if t.layout is _COO and t.sparse_dim() == 1:
        return t if t.is_coalesced() else t.coalesce()
    d = to_dense(t)
    if d.dim() == 0:
        raise MXNetError("row_sparse arrays need at least one dimension")
    nz = (d != 0).reshape(d.shape[0], -1).any(1) if d.numel() else torch.zeros(d.shape[0], dtype=torch.bool)
    idx = nz.nonzero().reshape(-1)
    return torch.sparse_coo_tensor(idx.reshape(1, -1), d[idx], tuple(d.shape), is_coalesced=True, check_invariants=False)


def to_csr(t: Tensor) -> Tensor:
    """Csr form: every non-zero element is kept (MXNet's cast_storage)."""
    if t.layout is _CSR:
        return t
    d = to_dense(t)
    if d.dim() != 2:
        raise StorageFormatError(f"csr arrays are 2-D; cannot cast an array of shape {tuple(d.shape)} to csr")
    mask = d != 0
    rows, cols = mask.nonzero(as_tuple=True)
    counts = torch.bincount(rows, minlength=d.shape[0]) if rows.numel() else \
        torch.zeros(d.shape[0], dtype=torch.int64, device=d.device)
    indptr = torch.zeros(d.shape[0] + 1, dtype=torch.int64, device=d.device)
    torch.cumsum(counts, 0, out=indptr[1:])
    return csr_tensor(indptr, cols, d[rows, cols], tuple(d.shape))


def cast(t: Tensor, stype: str) -> Tensor:
    """``t`` in storage ``stype`` ('default', 'row_sparse' or 'csr'); ``t`` itself if it already is."""
    if stype == "default":
        return to_dense(t)
    if stype == "row_sparse":
        return to_rsp(t)
    if stype == "csr":
        return to_csr(t)
    raise StorageFormatError(f"unknown storage type {stype!r}; expected one of {list(STYPES)}")


def full_rows(t: Tensor) -> Tensor:
    """A row_sparse tensor holding every row (MXNet fills a state or weight this way before an
    in-place sparse update); ``t`` itself when it already does."""
    if t.layout is _STRIDED:
        return t
    r = to_rsp(t)
    if r._nnz() == r.shape[0]:
        return r
    d = to_dense(r)
    idx = torch.arange(d.shape[0], device=d.device)
    return torch.sparse_coo_tensor(idx.reshape(1, -1), d, tuple(d.shape), is_coalesced=True, check_invariants=False)


def rows_view(t: Tensor) -> Tensor:
    """The dense-shaped storage of a dense tensor or a full-rows row_sparse tensor (writes to it
    change ``t``)."""
    if t.layout is _STRIDED:
        return t
    v = t._values()
    if tuple(v.shape) != tuple(t.shape):
        raise MXNetError("internal: in-place sparse update on a row_sparse array without every row")
    return v


def map_values(t: Tensor, fn) -> Tensor:  # type: ignore[no-untyped-def]
    """``fn`` applied to the stored values of a sparse tensor, keeping its sparsity pattern (the
    sparse kernel of an operator with f(0) = 0)."""
    if t.layout is _COO:
        data, idx = rsp_parts(to_rsp(t))
        return torch.sparse_coo_tensor(idx.reshape(1, -1), fn(data), tuple(t.shape), is_coalesced=True, check_invariants=False)
    data, indices, indptr = csr_parts(t)
    return csr_tensor(indptr, indices, fn(data), tuple(t.shape))


def zeros(stype: str, shape: Sequence[int], dtype: torch.dtype, device: "torch.device | str" = "cpu") -> Tensor:
    """An all-zero tensor of storage ``stype`` (sparse ones store nothing)."""
    shape = tuple(int(d) for d in shape)
    if stype == "default":
        return torch.zeros(shape, dtype=dtype, device=device)
    if stype == "row_sparse":
        if not shape:
            raise StorageFormatError("row_sparse arrays need at least one dimension")
        return rsp(torch.zeros((0,) + shape[1:], dtype=dtype, device=device),
                   torch.zeros(0, dtype=torch.int64, device=device), shape)
    if stype == "csr":
        if len(shape) != 2:
            raise StorageFormatError(f"csr arrays are 2-D, got shape {shape}")
        z = torch.zeros(shape[0] + 1, dtype=torch.int64, device=device)
        return csr_tensor(z, z[:0], torch.zeros(0, dtype=dtype, device=device), shape)
    raise StorageFormatError(f"unknown storage type {stype!r}; expected one of {list(STYPES)}")
