"""Matrix products and linear algebra: dot, batch_dot, khatri_rao and MXNet's ``_linalg_*``
operators (``nd.linalg.*``).

``dot`` follows MXNet's N-D rule: the last axis of ``lhs`` is contracted with the first axis of
``rhs`` (``transpose_a`` contracts lhs's first axis instead, ``transpose_b`` rhs's last axis);
two vectors give shape ``(1,)``. The ``_linalg_*`` operators work on the last two axes (batched
over the leading ones); gemm/gemm2 take ``axis``, the axis holding the matrix rows. Triangular
operators read only the triangle named by ``lower``, as LAPACK does.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ..base import MXNetError
from ..np_semantics import is_np_shape
from .registry import Sample, register

_rng = np.random.RandomState(2)


def _u(*shape: int) -> np.ndarray:
    return _rng.uniform(-1, 1, size=shape)


# ---- dot / batch_dot -------------------------------------------------------------------------
def _size(dims: tuple) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _dot_shape(attrs: dict, shapes: list) -> Optional[list]:
    """dot's output: lhs's kept axes then rhs's (``(1,)`` for two vectors), as the kernel
    contracts them; None when the contracted sizes differ."""
    ls, rs = tuple(shapes[0]), tuple(shapes[1])
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if not ls or not rs:
        return None
    if len(ls) == 1 and len(rs) == 1:
        return None if ta or tb or ls != rs else [(1,)]
    if len(ls) == 1:
        k, keep_l = ls[0], ()
    elif ta:
        k, keep_l = ls[0], ls[1:]
    else:
        k, keep_l = ls[-1], ls[:-1]
    if len(rs) == 1:
        k2, keep_r = rs[0], ()
    elif tb:
        k2, keep_r = rs[-1], rs[:-1]
    else:
        k2, keep_r = rs[0], rs[1:]
    if k != k2:
        return None
    return [(keep_l + keep_r) or (1,)]


@register("dot", infer_shape=_dot_shape, samples=lambda: [
    Sample((_u(3, 4), _u(4, 5)), ref=_np_dot),
    Sample((_u(4, 3), _u(4, 5)), {"transpose_a": True}, ref=_np_dot),
    Sample((_u(3, 4), _u(5, 4)), {"transpose_b": True}, ref=_np_dot),
    Sample((_u(4, 3), _u(5, 4)), {"transpose_a": True, "transpose_b": True}, ref=_np_dot),
    Sample((_u(4), _u(4)), ref=_np_dot),
    Sample((_u(4), _u(4, 3)), ref=_np_dot),
    Sample((_u(3, 4), _u(4)), ref=_np_dot),
    Sample((_u(2, 3, 4), _u(4, 2, 2)), ref=_np_dot),
    Sample((_u(4, 2, 3), _u(2, 5, 4)), {"transpose_a": True, "transpose_b": True}, ref=_np_dot)])
def dot(lhs, rhs, *, transpose_a: bool = False, transpose_b: bool = False,
        forward_stype: str = None):  # type: ignore[assignment]
    """MXNet dot: contract lhs's last axis (first if ``transpose_a``) with rhs's first axis
    (last if ``transpose_b``); output shape is the remaining lhs axes then the remaining rhs axes."""
    if lhs.dim() == 2 and rhs.dim() == 2 and not transpose_a:
        # the common matrix case goes straight to one BLAS call (x W^T is F.linear)
        k = rhs.shape[1] if transpose_b else rhs.shape[0]
        if lhs.shape[1] != k:
            raise MXNetError(f"dot: shape mismatch lhs {tuple(lhs.shape)} x rhs {tuple(rhs.shape)} "
                             f"(transpose_b={transpose_b}): contracted sizes {lhs.shape[1]} != {k}")
        return torch.nn.functional.linear(lhs, rhs) if transpose_b else torch.mm(lhs, rhs)
    if lhs.dim() == 1 and rhs.dim() == 1:
        if transpose_a or transpose_b:
            raise MXNetError("dot: cannot transpose vectors (both inputs are 1-D)")
        if lhs.shape[0] != rhs.shape[0]:
            raise MXNetError(f"dot: shape mismatch {tuple(lhs.shape)} x {tuple(rhs.shape)}")
        return torch.dot(lhs, rhs).reshape(1)
    ls, rs = tuple(lhs.shape), tuple(rhs.shape)
    if lhs.dim() == 1:
        a2, keep_l = lhs.reshape(1, -1), ()
    elif transpose_a:
        a2, keep_l = lhs.reshape(ls[0], -1).t(), ls[1:]
    else:
        a2, keep_l = lhs.reshape(-1, ls[-1]), ls[:-1]
    if rhs.dim() == 1:
        b2, keep_r = rhs.reshape(-1, 1), ()
    elif transpose_b:
        b2, keep_r = rhs.reshape(-1, rs[-1]).t(), rs[:-1]
    else:
        b2, keep_r = rhs.reshape(rs[0], -1), rs[1:]
    if a2.shape[1] != b2.shape[0]:
        raise MXNetError(f"dot: shape mismatch lhs {ls} x rhs {rs} (transpose_a={transpose_a}, "
                         f"transpose_b={transpose_b}): contracted sizes {a2.shape[1]} != {b2.shape[0]}")
    out_shape: tuple[int, ...] = tuple(keep_l) + tuple(keep_r)
    return torch.matmul(a2, b2).reshape(out_shape if out_shape else (1,))


def _np_dot(a: np.ndarray, b: np.ndarray, transpose_a: bool = False, transpose_b: bool = False) -> np.ndarray:
    if a.ndim == 1 and b.ndim == 1:
        return np.array([np.sum(a * b)])
    if transpose_a and a.ndim > 1:
        a = np.moveaxis(a, 0, -1)          # contract the first axis
    if transpose_b and b.ndim > 1:
        b = np.moveaxis(b, -1, 0)          # contract the last axis
    out = np.tensordot(a, b, axes=([a.ndim - 1], [0]))
    return out.reshape(1) if out.ndim == 0 else out


def _batch_dot_shape(attrs: dict, shapes: list) -> Optional[list]:
    """batch_dot's output: the shared batch axes, then lhs's rows and rhs's columns."""
    ls, rs = tuple(shapes[0]), tuple(shapes[1])
    if len(ls) < 3 or len(rs) != len(ls) or ls[:-2] != rs[:-2]:
        return None
    rows, k = (ls[-1], ls[-2]) if attrs["transpose_a"] else (ls[-2], ls[-1])
    k2, cols = (rs[-1], rs[-2]) if attrs["transpose_b"] else (rs[-2], rs[-1])
    return [ls[:-2] + (rows, cols)] if k == k2 else None


@register("batch_dot", infer_shape=_batch_dot_shape, samples=lambda: [
    Sample((_u(2, 3, 4), _u(2, 4, 5)), ref=_np_batch_dot),
    Sample((_u(2, 4, 3), _u(2, 5, 4)), {"transpose_a": True, "transpose_b": True}, ref=_np_batch_dot),
    Sample((_u(2, 2, 3, 4), _u(2, 2, 5, 4)), {"transpose_b": True}, ref=_np_batch_dot)])
def batch_dot(lhs, rhs, *, transpose_a: bool = False, transpose_b: bool = False,
              forward_stype: str = None):  # type: ignore[assignment]
    """Batched matrix product over the last two axes; leading (batch) axes must match."""
    if lhs.dim() < 3 or rhs.dim() != lhs.dim():
        raise MXNetError(f"batch_dot: inputs must have the same number (>= 3) of dimensions, got "
                         f"{tuple(lhs.shape)} and {tuple(rhs.shape)}")
    if lhs.shape[:-2] != rhs.shape[:-2]:
        raise MXNetError(f"batch_dot: batch dimensions differ: {tuple(lhs.shape)} vs {tuple(rhs.shape)}")
    a = lhs.transpose(-1, -2) if transpose_a else lhs
    b = rhs.transpose(-1, -2) if transpose_b else rhs
    if a.shape[-1] != b.shape[-2]:
        raise MXNetError(f"batch_dot: shape mismatch {tuple(lhs.shape)} x {tuple(rhs.shape)} "
                         f"(transpose_a={transpose_a}, transpose_b={transpose_b})")
    return torch.matmul(a, b)


def _np_batch_dot(a: np.ndarray, b: np.ndarray, transpose_a: bool = False, transpose_b: bool = False) -> np.ndarray:
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.einsum("...ij,...jk->...ik", a, b)


@register("khatri_rao", samples=lambda: [
    Sample((_u(2, 3), _u(4, 3)), ref=_np_khatri_rao),
    Sample((_u(2, 2), _u(3, 2), _u(2, 2)), ref=_np_khatri_rao)])
def khatri_rao(*args):
    """Column-wise Kronecker product of matrices with the same number of columns."""
    out = args[0]
    for m in args[1:]:
        if m.dim() != 2 or m.shape[1] != out.shape[1]:
            raise MXNetError(f"khatri_rao: inputs must be matrices with the same number of columns, "
                             f"got {[tuple(a.shape) for a in args]}")
        out = (out.unsqueeze(1) * m.unsqueeze(0)).reshape(-1, out.shape[1])
    return out


def _np_khatri_rao(*mats: np.ndarray) -> np.ndarray:
    cols = []
    for r in range(mats[0].shape[1]):
        c = mats[0][:, r]
        for m in mats[1:]:
            c = np.kron(c, m[:, r])
        cols.append(c)
    return np.stack(cols, axis=1)


# ---- _linalg_* -------------------------------------------------------------------------------
def _rows_last(t: torch.Tensor, axis: int) -> tuple[torch.Tensor, int]:
    nd = t.dim()
    if nd < 2:
        raise MXNetError(f"linalg: inputs must have at least 2 dimensions, got shape {tuple(t.shape)}")
    a = axis + nd if axis < 0 else axis
    if not 0 <= a < nd - 1:
        raise MXNetError(f"linalg: invalid row axis {axis} for an input with {nd} dimensions")
    return (t if a == nd - 2 else t.movedim(a, -2)), a


def _restore(t: torch.Tensor, a: int) -> torch.Tensor:
    return t if a == t.dim() - 2 else t.movedim(-2, a)


def _tr(t: torch.Tensor, flag: bool) -> torch.Tensor:
    return t.transpose(-1, -2) if flag else t


def _check_same_batch(op: str, *ts: torch.Tensor) -> None:
    if len({t.dim() for t in ts}) != 1:
        raise MXNetError(f"{op}: inputs must have the same number of dimensions, got "
                         f"{[tuple(t.shape) for t in ts]}")


@register("_linalg_gemm", samples=lambda: [
    Sample((_u(3, 4), _u(4, 2), _u(3, 2)), {"alpha": 1.5, "beta": 0.5}, ref=_np_gemm),
    Sample((_u(2, 4, 3), _u(2, 2, 4), _u(2, 3, 2)), {"transpose_a": True, "transpose_b": True}, ref=_np_gemm),
    Sample((_u(3, 2, 4), _u(4, 2, 5), _u(3, 2, 5)), {"axis": 0}, ref=_np_gemm)])
def _linalg_gemm(A, B, C, *, transpose_a: bool = False, transpose_b: bool = False, alpha: float = 1.0,
                 beta: float = 1.0, axis: int = -2):
    """alpha * op(A) op(B) + beta * C over the last two axes (``axis``: the matrix-row axis)."""
    _check_same_batch("linalg.gemm", A, B, C)
    a, ax = _rows_last(A, axis)
    b, _ = _rows_last(B, axis)
    c, _ = _rows_last(C, axis)
    return _restore(alpha * torch.matmul(_tr(a, transpose_a), _tr(b, transpose_b)) + beta * c, ax)


def _np_mm(A: np.ndarray, B: np.ndarray, ta: bool, tb: bool, axis: int) -> tuple[np.ndarray, int]:
    nd = A.ndim
    ax = axis % nd
    a, b = np.moveaxis(A, ax, -2), np.moveaxis(B, ax, -2)
    if ta:
        a = np.swapaxes(a, -1, -2)
    if tb:
        b = np.swapaxes(b, -1, -2)
    return np.einsum("...ij,...jk->...ik", a, b), ax


def _np_gemm(A: np.ndarray, B: np.ndarray, C: np.ndarray, transpose_a: bool = False, transpose_b: bool = False,
             alpha: float = 1.0, beta: float = 1.0, axis: int = -2) -> np.ndarray:
    p, ax = _np_mm(A, B, transpose_a, transpose_b, axis)
    return np.moveaxis(alpha * p, -2, ax) + beta * C


@register("_linalg_gemm2", samples=lambda: [
    Sample((_u(3, 4), _u(4, 2)), {"alpha": 2.0}, ref=_np_gemm2),
    Sample((_u(2, 4, 3), _u(2, 2, 4)), {"transpose_a": True, "transpose_b": True}, ref=_np_gemm2),
    Sample((_u(3, 2, 4), _u(4, 2, 5)), {"axis": 0}, ref=_np_gemm2)])
def _linalg_gemm2(A, B, *, transpose_a: bool = False, transpose_b: bool = False, alpha: float = 1.0,
                  axis: int = -2):
    """alpha * op(A) op(B) over the last two axes (``axis``: the matrix-row axis)."""
    _check_same_batch("linalg.gemm2", A, B)
    a, ax = _rows_last(A, axis)
    b, _ = _rows_last(B, axis)
    return _restore(alpha * torch.matmul(_tr(a, transpose_a), _tr(b, transpose_b)), ax)


def _np_gemm2(A: np.ndarray, B: np.ndarray, transpose_a: bool = False, transpose_b: bool = False,
              alpha: float = 1.0, axis: int = -2) -> np.ndarray:
    p, ax = _np_mm(A, B, transpose_a, transpose_b, axis)
    return np.moveaxis(alpha * p, -2, ax)


def _spd(*batch: int, n: int = 3) -> np.ndarray:
    m = _rng.uniform(-1, 1, size=batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _lowtri(*batch: int, n: int = 3) -> np.ndarray:
    m = np.tril(_rng.uniform(-1, 1, size=batch + (n, n)))
    idx = np.arange(n)
    m[..., idx, idx] = _rng.uniform(1.0, 2.0, size=batch + (n,))
    return m


def _tri(A: torch.Tensor, lower: bool) -> torch.Tensor:
    return torch.tril(A) if lower else torch.triu(A)


def _sym_from(A: torch.Tensor, lower: bool) -> torch.Tensor:
    """The symmetric matrix whose ``lower`` (or upper) triangle is A's (LAPACK reads only that)."""
    t = _tri(A, lower)
    off = torch.tril(A, -1) if lower else torch.triu(A, 1)
    return t + off.transpose(-1, -2)


def _square(op: str, A: torch.Tensor) -> None:
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise MXNetError(f"{op}: input must be a (batch of) square matrices, got shape {tuple(A.shape)}")


@register("_linalg_potrf", samples=lambda: [
    Sample((_spd(),), ref=lambda A, lower=True: np.linalg.cholesky(A)),
    Sample((_spd(2),), {"lower": False}, ref=lambda A, lower=True: np.swapaxes(np.linalg.cholesky(A), -1, -2))])
def _linalg_potrf(A, *, lower: bool = True):
    """Cholesky factor of symmetric positive-definite A (lower L with A = L L^T, or upper U)."""
    _square("linalg.potrf", A)
    return torch.linalg.cholesky(_sym_from(A, lower), upper=not lower)


@register("_linalg_potri", samples=lambda: [
    Sample((_lowtri(),), ref=lambda L, lower=True: np.linalg.inv(L @ np.swapaxes(L, -1, -2))),
    Sample((np.swapaxes(_lowtri(2), -1, -2),), {"lower": False},
           ref=lambda U, lower=True: np.linalg.inv(np.swapaxes(U, -1, -2) @ U))])
def _linalg_potri(A, *, lower: bool = True):
    """Inverse of L L^T (or U^T U) from its Cholesky factor A."""
    _square("linalg.potri", A)
    return torch.cholesky_inverse(_tri(A, lower), upper=not lower)


def _np_trmm(A: np.ndarray, B: np.ndarray, transpose: bool = False, rightside: bool = False,
             lower: bool = True, alpha: float = 1.0) -> np.ndarray:
    t = np.tril(A) if lower else np.triu(A)
    if transpose:
        t = np.swapaxes(t, -1, -2)
    return alpha * (B @ t if rightside else t @ B)


@register("_linalg_trmm", samples=lambda: [
    Sample((_u(3, 3), _u(3, 2)), {"alpha": 2.0}, ref=_np_trmm),
    Sample((_u(2, 3, 3), _u(2, 4, 3)), {"rightside": True, "transpose": True}, ref=_np_trmm),
    Sample((_u(3, 3), _u(3, 2)), {"lower": False}, ref=_np_trmm)])
def _linalg_trmm(A, B, *, transpose: bool = False, rightside: bool = False, lower: bool = True,
                 alpha: float = 1.0):
    """alpha * op(A) B (or B op(A) with ``rightside``), A triangular (only its triangle is read)."""
    _square("linalg.trmm", A)
    t = _tr(_tri(A, lower), transpose)
    return alpha * (torch.matmul(B, t) if rightside else torch.matmul(t, B))


def _np_trsm(A: np.ndarray, B: np.ndarray, transpose: bool = False, rightside: bool = False,
             lower: bool = True, alpha: float = 1.0) -> np.ndarray:
    t = np.tril(A) if lower else np.triu(A)
    if transpose:
        t = np.swapaxes(t, -1, -2)
    inv = np.linalg.inv(t)
    return alpha * (B @ inv if rightside else inv @ B)


@register("_linalg_trsm", samples=lambda: [
    Sample((_lowtri(), _u(3, 2)), {"alpha": 2.0}, ref=_np_trsm),
    Sample((_lowtri(2), _u(2, 4, 3)), {"rightside": True, "transpose": True}, ref=_np_trsm),
    Sample((np.swapaxes(_lowtri(), -1, -2), _u(3, 2)), {"lower": False}, ref=_np_trsm)])
def _linalg_trsm(A, B, *, transpose: bool = False, rightside: bool = False, lower: bool = True,
                 alpha: float = 1.0):
    """Solve op(A) X = alpha B (or X op(A) = alpha B with ``rightside``), A triangular."""
    _square("linalg.trsm", A)
    t = _tri(A, lower)
    upper = not lower
    if transpose:
        t, upper = t.transpose(-1, -2), lower
    return torch.linalg.solve_triangular(t, alpha * B, upper=upper, left=not rightside)


@register("_linalg_syrk", samples=lambda: [
    Sample((_u(3, 4),), {"alpha": 2.0}, ref=lambda A, transpose=False, alpha=1.0: alpha * A @ A.T),
    Sample((_u(2, 3, 4),), {"transpose": True},
           ref=lambda A, transpose=False, alpha=1.0: alpha * np.swapaxes(A, -1, -2) @ A)])
def _linalg_syrk(A, *, transpose: bool = False, alpha: float = 1.0):
    """alpha * A A^T (or alpha * A^T A with ``transpose``)."""
    at = A.transpose(-1, -2)
    return alpha * (torch.matmul(at, A) if transpose else torch.matmul(A, at))


def _to_scalar_shape(out: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    # one matrix: shape (1,) in MXNet's legacy shapes, a zero-dim array under NumPy shapes
    return out.reshape(1) if A.dim() == 2 and not is_np_shape() else out


def _np_batch_scalar(out: np.ndarray) -> np.ndarray:
    out = np.asarray(out)
    return out.reshape(1) if out.ndim == 0 else out


@register("_linalg_sumlogdiag", samples=lambda: [
    Sample((_spd(),), ref=lambda A: _np_batch_scalar(np.sum(np.log(np.diagonal(A, 0, -2, -1)), -1))),
    Sample((_spd(2),), ref=lambda A: _np_batch_scalar(np.sum(np.log(np.diagonal(A, 0, -2, -1)), -1)))])
def _linalg_sumlogdiag(A):
    """Sum of the logarithms of the diagonal of each square matrix."""
    _square("linalg.sumlogdiag", A)
    return _to_scalar_shape(torch.log(torch.diagonal(A, 0, -2, -1)).sum(-1), A)


@register("_linalg_extractdiag", returns_view=True, samples=lambda: [
    Sample((_u(3, 3),), ref=lambda A, offset=0: np.diagonal(A, offset, -2, -1).copy()),
    Sample((_u(2, 4, 4),), {"offset": 1}, ref=lambda A, offset=0: np.diagonal(A, offset, -2, -1).copy()),
    Sample((_u(4, 4),), {"offset": -2}, ref=lambda A, offset=0: np.diagonal(A, offset, -2, -1).copy())])
def _linalg_extractdiag(A, *, offset: int = 0):
    """The ``offset`` diagonal of each square matrix."""
    _square("linalg.extractdiag", A)
    if abs(offset) >= A.shape[-1]:
        raise MXNetError(f"linalg.extractdiag: offset {offset} is out of range for {A.shape[-1]}x{A.shape[-1]} matrices")
    return torch.diagonal(A, offset, -2, -1)


def _np_makediag(A: np.ndarray, offset: int = 0) -> np.ndarray:
    n = A.shape[-1] + abs(offset)
    out = np.zeros(A.shape[:-1] + (n, n), dtype=A.dtype)
    for idx in np.ndindex(*A.shape[:-1]):
        out[idx] = np.diag(A[idx], offset)
    return out


@register("_linalg_makediag", samples=lambda: [
    Sample((_u(3),), ref=_np_makediag),
    Sample((_u(2, 3),), {"offset": 1}, ref=_np_makediag),
    Sample((_u(3),), {"offset": -2}, ref=_np_makediag)])
def _linalg_makediag(A, *, offset: int = 0):
    """Square matrices with A's last axis on the ``offset`` diagonal."""
    return torch.diag_embed(A, offset, -2, -1)


def _trian_index(n: int, offset: int, lower: bool, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    if offset > 0 or (offset == 0 and not lower):
        rows, cols = torch.triu_indices(n, n, offset, device=device)
    else:
        rows, cols = torch.tril_indices(n, n, offset, device=device)
    return rows, cols


def _np_trian_index(n: int, offset: int, lower: bool) -> tuple:
    if offset > 0 or (offset == 0 and not lower):
        return np.triu_indices(n, offset)
    return np.tril_indices(n, offset)


@register("_linalg_extracttrian", samples=lambda: [
    Sample((_u(3, 3),), ref=lambda A, offset=0, lower=True: A[(...,) + _np_trian_index(3, offset, lower)]),
    Sample((_u(2, 3, 3),), {"offset": 1}, ref=lambda A, offset=0, lower=True: A[(...,) + _np_trian_index(3, offset, lower)]),
    Sample((_u(3, 3),), {"lower": False}, ref=lambda A, offset=0, lower=True: A[(...,) + _np_trian_index(3, offset, lower)])])
def _linalg_extracttrian(A, *, offset: int = 0, lower: bool = True):
    """The (row-major packed) triangle of each square matrix: lower for offset < 0, upper for
    offset > 0, chosen by ``lower`` for offset 0."""
    _square("linalg.extracttrian", A)
    rows, cols = _trian_index(A.shape[-1], offset, lower, A.device)
    return A[..., rows, cols]


def _maketrian_n(m: int, offset: int) -> int:
    k = int(np.floor(0.5 + (np.sqrt(8 * m + 1) - 1.0) * 0.5))
    if k * (k + 1) // 2 != m:
        raise MXNetError(f"linalg.maketrian: last axis size {m} is not a triangular number k*(k+1)/2")
    return k + abs(offset)


@register("_linalg_maketrian", samples=lambda: [
    Sample((_u(6),), ref=lambda A, offset=0, lower=True: _np_maketrian(A, offset, lower)),
    Sample((_u(2, 3),), {"offset": 1}, ref=lambda A, offset=0, lower=True: _np_maketrian(A, offset, lower)),
    Sample((_u(6),), {"lower": False}, ref=lambda A, offset=0, lower=True: _np_maketrian(A, offset, lower))])
def _linalg_maketrian(A, *, offset: int = 0, lower: bool = True):
    """Square triangular matrices from packed triangles (inverse of extracttrian)."""
    n = _maketrian_n(A.shape[-1], offset)
    rows, cols = _trian_index(n, offset, lower, A.device)
    return _scatter_tri(A.new_zeros(A.shape[:-1] + (n, n)), A, rows, cols, n)


def _scatter_tri(out: torch.Tensor, A: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, n: int) -> torch.Tensor:
    flat = out.reshape(out.shape[:-2] + (n * n,))
    idx = (rows * n + cols).expand(A.shape)
    return flat.scatter(-1, idx, A).reshape(out.shape)


def _np_maketrian(A: np.ndarray, offset: int, lower: bool) -> np.ndarray:
    m = A.shape[-1]
    k = int(round((np.sqrt(8 * m + 1) - 1) / 2))
    n = k + abs(offset)
    out = np.zeros(A.shape[:-1] + (n, n))
    out[(...,) + _np_trian_index(n, offset, lower)] = A
    return out


@register("_linalg_inverse", samples=lambda: [
    Sample((_spd(),), ref=lambda A: np.linalg.inv(A)),
    Sample((_spd(2),), ref=lambda A: np.linalg.inv(A))])
def _linalg_inverse(A):
    """Inverse of each square matrix."""
    _square("linalg.inverse", A)
    return torch.linalg.inv(A)


@register("_linalg_det", total_outputs=3, samples=lambda: [
    Sample((_spd(),), ref=lambda A: _np_batch_scalar(np.linalg.det(A))),
    Sample((_u(2, 3, 3) + 2 * np.eye(3),), ref=lambda A: _np_batch_scalar(np.linalg.det(A)))])
def _linalg_det(A):
    """Determinant of each square matrix (shape (1,) for a single matrix)."""
    _square("linalg.det", A)
    return _to_scalar_shape(torch.linalg.det(A), A)


@register("_linalg_slogdet", num_outputs=2, total_outputs=4, output_names=("sign", "logdet"), samples=lambda: [
    Sample((_spd(),), ref=lambda A: tuple(_np_batch_scalar(o) for o in np.linalg.slogdet(A))),
    Sample((_u(2, 3, 3) - 2 * np.eye(3),), ref=lambda A: tuple(_np_batch_scalar(o) for o in np.linalg.slogdet(A)))])
def _linalg_slogdet(A):
    """Sign and log of the absolute determinant of each square matrix."""
    _square("linalg.slogdet", A)
    sign, logdet = torch.linalg.slogdet(A)
    return _to_scalar_shape(sign, A), _to_scalar_shape(logdet, A)


# ---- LQ and symmetric eigen decompositions ---------------------------------------------------
def _np_gelqf(A: np.ndarray) -> tuple:
    q, r = np.linalg.qr(np.swapaxes(A, -1, -2))
    return np.swapaxes(q, -1, -2), np.swapaxes(r, -1, -2)


@register("_linalg_gelqf", num_outputs=2, output_names=("Q", "L"), samples=lambda: [
    Sample((_u(2, 3),), ref=_np_gelqf),
    Sample((_u(2, 3, 4),), ref=_np_gelqf)])
def _linalg_gelqf(A):
    """LQ factorization A = L Q of each (x, y) matrix with x <= y: Q (x, y) has orthonormal rows,
    L (x, x) is lower triangular (LAPACK gelqf signs). Outputs (Q, L)."""
    if A.dim() < 2 or A.shape[-2] > A.shape[-1]:
        raise MXNetError(f"linalg.gelqf: input must be (a batch of) (x, y) matrices with x <= y, got "
                         f"shape {tuple(A.shape)}")
    q, r = torch.linalg.qr(A.transpose(-1, -2))
    return q.transpose(-1, -2), r.transpose(-1, -2)


def _eigvec_signs(u: torch.Tensor) -> torch.Tensor:
    """Flip each row of ``u`` so that its entry of largest magnitude is positive (MXNet)."""
    k = u.abs().argmax(dim=-1, keepdim=True)
    sign = torch.where(torch.gather(u, -1, k) < 0, -1.0, 1.0).to(u.dtype)
    return u * sign


class _Syevd(torch.autograd.Function):
    """Symmetric eigendecomposition with MXNet's backward (a symmetric gradient)."""

    @staticmethod
    def forward(ctx, A):  # type: ignore[no-untyped-def,override]
        lam, v = torch.linalg.eigh(A)
        u = _eigvec_signs(v.transpose(-1, -2))
        ctx.save_for_backward(u, lam)
        return u, lam

    @staticmethod
    def backward(ctx, gu, gl):  # type: ignore[no-untyped-def,override]
        u, lam = ctx.saved_tensors
        temp = gu @ u.transpose(-1, -2)
        denom = 2 * (lam.unsqueeze(-1) - lam.unsqueeze(-2))
        off = (temp - temp.transpose(-1, -2)) / torch.where(denom == 0, torch.ones_like(denom), denom)
        eye = torch.eye(lam.shape[-1], dtype=torch.bool, device=lam.device)
        mid = torch.where(eye, torch.diag_embed(gl), off)
        return u.transpose(-1, -2) @ mid @ u


def _np_syevd(A: np.ndarray) -> tuple:
    lam, v = np.linalg.eigh(A)
    u = np.swapaxes(v, -1, -2)
    k = np.argmax(np.abs(u), axis=-1)[..., None]
    u = u * np.where(np.take_along_axis(u, k, -1) < 0, -1.0, 1.0)
    return u, lam


@register("_linalg_syevd", num_outputs=2, output_names=("U", "L"), samples=lambda: [
    Sample((_spd(),), ref=_np_syevd, grad=False),
    Sample((_spd(2),), ref=_np_syevd, grad=False)])
def _linalg_syevd(A):
    """Eigendecomposition A = U^T diag(L) U of each symmetric matrix: rows of U are the
    eigenvectors (largest-magnitude entry positive), L the eigenvalues in ascending order."""
    _square("linalg.syevd", A)
    if A.device.type == "meta":
        return torch.empty_like(A), A.new_empty(A.shape[:-1])
    return _Syevd.apply(A)
