"""Sparse rules (MXNet's ``FComputeEx``) of operators that keep or exploit sparsity, and the
operators that only exist for sparse arrays (``_sparse_retain``).

Each rule is registered on its operator with ``registry.sparse_rule`` and returns
``NotImplemented`` for storage combinations MXNet has no sparse kernel for: the front-end then
computes on the dense forms (MXNet's storage fallback). Output storage follows MXNet 1.9.1's
storage inference, e.g. ``dot(csr, dense) = dense``, ``dot(csr.T, dense) = row_sparse``,
``elemwise_add(rsp, rsp) = rsp``, ``elemwise_mul(rsp, dense) = rsp``, unary operators with
f(0) = 0 keep the input's storage.

Graphs compute densely; which of their values MXNet holds sparse is storage-type inference
(``compiler.storage``), asking ``output_stypes`` and ``input_grad_stypes`` here: an operator's
``storage``/``grad_storage`` fact (``registry.storage_rule``: cast_storage's result, BatchNorm's
refusal of sparse inputs with fix_gamma, the row_sparse weight gradient of Embedding with
sparse_grad, SparseEmbedding and dot(csr, w)), else what its sparse rule returns for inputs of
the same storage types that store nothing, so eager calls and bound Symbols agree.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
from torch import Tensor

from ..base import MXNetError, dtype_torch
from . import storage as S
from .attrs import Axis
from .reduce import _reduce_shape
from .registry import Sample, get, register, sparse_rule, storage_rule

__all__ = ["output_stypes", "input_grad_stypes"]

_COO, _CSR, _STRIDED = torch.sparse_coo, torch.sparse_csr, torch.strided


# ---- unary operators with f(0) = 0: the kernel runs on the stored values ------------------------
ZERO_PRESERVING = ("abs", "sign", "round", "rint", "ceil", "floor", "trunc", "fix", "square", "sqrt",
                   "expm1", "log1p", "sin", "tan", "arcsin", "arctan", "sinh", "tanh", "arcsinh",
                   "arctanh", "degrees", "radians", "relu", "negative", "cbrt", "_copy",
                   "_mul_scalar", "_div_scalar")


def _values_rule(opname: str) -> Callable:
    kernel = get(opname).kernel

    def rule(data: Tensor, **attrs: Any) -> Any:
        if data.layout is _STRIDED:
            return NotImplemented
        return S.map_values(data, lambda v: kernel(v, **attrs))
    rule.__name__ = f"{opname}_sparse"
    return rule


for _name in ZERO_PRESERVING:
    sparse_rule(_name)(_values_rule(_name))


def _scalar_rule(opname: str) -> Callable:
    """Scalar operators on a sparse array: the storage is kept when f(0, scalar) == 0 (``x * 2``,
    ``x == 1``), else the result is dense (``x + 1``, ``x == 0``), as MXNet's kernels give."""
    kernel = get(opname).kernel

    def rule(data: Tensor, **attrs: Any) -> Any:
        if data.layout is _STRIDED:
            return NotImplemented
        zero = kernel(torch.zeros(1, dtype=data.dtype, device=data.device), **attrs)
        if bool((zero == 0).all()):
            return S.map_values(data, lambda v: kernel(v, **attrs))
        return kernel(S.to_dense(data), **attrs)
    rule.__name__ = f"{opname}_sparse"
    return rule


for _name in ("_plus_scalar", "_minus_scalar", "_rminus_scalar", "_equal_scalar", "_not_equal_scalar",
              "_greater_scalar", "_greater_equal_scalar", "_lesser_scalar", "_lesser_equal_scalar",
              "_maximum_scalar", "_minimum_scalar", "_power_scalar"):
    sparse_rule(_name)(_scalar_rule(_name))


@sparse_rule("take")
def _take_sparse(a: Tensor, indices: Tensor, *, axis: int = 0, mode: str = "clip") -> Any:
    """take of csr rows (axis 0) is csr, as MXNet's kernel."""
    if a.layout is not _CSR or axis != 0:
        return NotImplemented
    return S.to_csr(get("take").kernel(S.to_dense(a), S.to_dense(indices), axis=axis, mode=mode))


@sparse_rule("clip")
def _clip_sparse(data: Tensor, *, a_min: float, a_max: float) -> Any:
    """clip keeps the storage when 0 lies in [a_min, a_max] (zeros stay zeros)."""
    if data.layout is _STRIDED or not a_min <= 0 <= a_max:
        return NotImplemented
    return S.map_values(data, lambda v: v.clamp(a_min, a_max))


@sparse_rule("zeros_like")
def _zeros_like_sparse(data: Tensor) -> Any:
    """An all-zero array of the input's storage (no stored values)."""
    if data.layout is _STRIDED:
        return NotImplemented
    if data.layout is _COO:
        return S.rsp(data._values()[:0], torch.zeros(0, dtype=torch.int64, device=data.device), data.shape)
    z = torch.zeros(data.shape[0] + 1, dtype=torch.int64, device=data.device)
    return S.csr_tensor(z, z[:0], data.values()[:0], tuple(data.shape))


@sparse_rule("cast_storage", from_dense=True)
def _cast_storage_sparse(data: Tensor, *, stype: str) -> Tensor:
    r = S.cast(data, stype)
    return r.clone() if r is data else r


# ---- binary elementwise -----------------------------------------------------------------------
def _same_shape(op: str, a: Tensor, b: Tensor) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise MXNetError(f"{op}: sparse inputs must have the same shape, got {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")


def _rsp_sum(terms: list) -> Tensor:
    """Sum of row_sparse tensors as a row_sparse tensor (union of their rows)."""
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out.coalesce()


def _add_sub(name: str, sign: float) -> Callable:
    def rule(lhs: Tensor, rhs: Tensor) -> Any:
        _same_shape(name, lhs, rhs)
        la, ra = lhs.layout, rhs.layout
        if la is _COO and ra is _COO:
            return _rsp_sum([S.to_rsp(lhs), S.to_rsp(rhs) * sign])
        if la is _CSR and ra is _CSR:
            return S.to_csr(S.to_dense(lhs) + sign * S.to_dense(rhs))
        if la is _STRIDED or ra is _STRIDED:  # dense with sparse: dense (MXNet's kernel, no fallback)
            return S.to_dense(lhs) + sign * S.to_dense(rhs)
        return NotImplemented
    rule.__name__ = f"{name}_sparse"
    return rule


sparse_rule("elemwise_add")(_add_sub("elemwise_add", 1.0))
sparse_rule("elemwise_sub")(_add_sub("elemwise_sub", -1.0))


def _rows_times_dense(sp: Tensor, dense: Tensor) -> Tensor:
    """sparse * dense keeping the sparse pattern (elemwise_mul(rsp, dense) = rsp, csr likewise)."""
    if sp.layout is _COO:
        data, idx = S.rsp_parts(S.to_rsp(sp))
        return torch.sparse_coo_tensor(idx.reshape(1, -1), data * dense[idx], tuple(sp.shape),
                                       is_coalesced=True, check_invariants=False)
    data, indices, indptr = S.csr_parts(sp)
    rows = torch.repeat_interleave(torch.arange(sp.shape[0], device=sp.device), indptr[1:] - indptr[:-1])
    return S.csr_tensor(indptr, indices, data * dense[rows, indices], tuple(sp.shape))


@sparse_rule("elemwise_mul")
def _elemwise_mul_sparse(lhs: Tensor, rhs: Tensor) -> Any:
    _same_shape("elemwise_mul", lhs, rhs)
    la, ra = lhs.layout, rhs.layout
    if la is _COO and ra is _COO:
        return (S.to_rsp(lhs) * S.to_rsp(rhs)).coalesce()
    if la is _CSR and ra is _CSR:
        return S.to_csr(S.to_dense(lhs) * S.to_dense(rhs))
    if ra is _STRIDED:
        return _rows_times_dense(lhs, rhs)
    if la is _STRIDED:
        return _rows_times_dense(rhs, lhs)
    return NotImplemented


def _union_rule(opname: str) -> Callable:
    """Binary operators with f(0, 0) = 0 (maximum, minimum, hypot): two row_sparse inputs give
    a row_sparse result on the union of their rows, two csr inputs a csr result; any other mix
    falls back to dense (MXNet's kernels)."""
    kernel = get(opname).kernel

    def rule(lhs: Tensor, rhs: Tensor) -> Any:
        if tuple(lhs.shape) != tuple(rhs.shape):
            return NotImplemented
        if lhs.layout is _COO and rhs.layout is _COO:
            rows = torch.unique(torch.cat([S.rsp_parts(S.to_rsp(lhs))[1], S.rsp_parts(S.to_rsp(rhs))[1]]))
            return S.rsp(kernel(S.to_dense(lhs)[rows], S.to_dense(rhs)[rows]), rows, lhs.shape)
        if lhs.layout is _CSR and rhs.layout is _CSR:
            return S.to_csr(kernel(S.to_dense(lhs), S.to_dense(rhs)))
        return NotImplemented
    rule.__name__ = f"{opname}_sparse"
    return rule


for _name in ("_maximum", "_minimum", "_hypot"):
    sparse_rule(_name)(_union_rule(_name))


@sparse_rule("add_n")
def _add_n_sparse(*args: Tensor) -> Any:
    """add_n of row_sparse arrays is row_sparse; any other mix is dense."""
    if all(a.layout is _COO for a in args):
        return _rsp_sum([S.to_rsp(a) for a in args])
    out = S.to_dense(args[0])
    for a in args[1:]:
        out = out + S.to_dense(a)
    return out


# ---- dot ----------------------------------------------------------------------------------------
def _mm(a: Tensor, b: Tensor) -> Tensor:
    """a @ b for a 2-D csr/row_sparse/dense ``a`` and a dense ``b`` (torch's sparse kernels)."""
    if a.layout is _STRIDED:
        return a @ b
    return torch.sparse.mm(a if a.layout is _CSR else S.to_rsp(a), b)


@sparse_rule("dot")
def _dot_sparse(lhs: Tensor, rhs: Tensor, *, transpose_a: bool = False, transpose_b: bool = False,
                forward_stype: Any = None) -> Any:
    """MXNet's sparse dot: dot(csr, dense|rsp) = dense, dot(csr.T, dense|rsp) = row_sparse,
    dot(dense, csr) = csr, dot(dense, rsp) = dense; ``forward_stype`` overrides the result's
    storage. Other combinations (and non-2-D inputs) fall back to dense."""
    if lhs.dim() != 2 or rhs.dim() != 2:
        return NotImplemented
    la, ra = lhs.layout, rhs.layout
    k_l = lhs.shape[0] if transpose_a else lhs.shape[1]
    k_r = rhs.shape[1] if transpose_b else rhs.shape[0]
    if k_l != k_r:
        raise MXNetError(f"dot: shape mismatch lhs {tuple(lhs.shape)} x rhs {tuple(rhs.shape)} "
                         f"(transpose_a={transpose_a}, transpose_b={transpose_b})")
    if la is _CSR:
        r = S.to_dense(rhs)
        r = r.t() if transpose_b else r
        if not transpose_a:
            out = _mm(lhs, r)
            stype = "default"
        else:
            data, indices, indptr = S.csr_parts(lhs)
            rows = torch.repeat_interleave(torch.arange(lhs.shape[0], device=lhs.device), indptr[1:] - indptr[:-1])
            t_coo = torch.sparse_coo_tensor(torch.stack([indices, rows]), data, (lhs.shape[1], lhs.shape[0]),
                                            check_invariants=False)
            out = torch.sparse.mm(t_coo, r)
            kept = torch.unique(indices)
            res = S.rsp(out[kept], kept, out.shape)
            return res if forward_stype in (None, "row_sparse") else S.cast(res, forward_stype)
    elif la is _STRIDED and ra is _CSR:
        out = lhs.t() @ S.to_dense(rhs).t() if transpose_a and transpose_b else \
            (lhs.t() if transpose_a else lhs) @ (S.to_dense(rhs).t() if transpose_b else S.to_dense(rhs))
        stype = "csr"
    elif la is _STRIDED and ra is _COO:
        r = S.to_dense(rhs)
        out = (lhs.t() if transpose_a else lhs) @ (r.t() if transpose_b else r)
        stype = "default"
    else:
        return NotImplemented
    stype = forward_stype or stype
    return out if stype == "default" else S.cast(out, stype)


# ---- reductions -------------------------------------------------------------------------------
def _csr_reduce(opname: str) -> Callable:
    kernel = get(opname).kernel

    def rule(data: Tensor, **attrs: Any) -> Any:
        """sum/mean of a csr array over axis 0 or 1 give a dense array (MXNet's csr kernel)."""
        axis = attrs.get("axis")
        axis = axis[0] if isinstance(axis, (tuple, list)) and len(axis) == 1 else axis
        if data.layout is not _CSR or axis not in (0, 1, -1, -2) or attrs.get("exclude"):
            return NotImplemented
        return kernel(S.to_dense(data), **attrs)
    rule.__name__ = f"{opname}_sparse"
    return rule


sparse_rule("sum")(_csr_reduce("sum"))
sparse_rule("mean")(_csr_reduce("mean"))


@sparse_rule("slice")
def _slice_sparse(data: Tensor, *, begin: Any, end: Any, step: Any = ()) -> Any:
    """slice of a csr array (no step) is csr, as in MXNet."""
    begin, end = ((v,) if isinstance(v, int) else tuple(v) for v in (begin, end))
    step = (step,) if isinstance(step, int) else tuple(step or ())
    if data.layout is not _CSR or any(s not in (None, 1) for s in step):
        return NotImplemented
    idx = []
    for ax, n in enumerate(data.shape):
        b = begin[ax] if ax < len(begin) and begin[ax] is not None else 0
        e = end[ax] if ax < len(end) and end[ax] is not None else n
        b, e, _ = slice(b, e).indices(n)
        idx.append(slice(b, max(b, e)))
    return S.to_csr(S.to_dense(data)[tuple(idx)].contiguous())


# ---- operators of sparse arrays ------------------------------------------------------------------
def _np_retain(data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    out = np.zeros_like(data)
    keep = indices.astype(np.int64)
    out[keep] = data[keep]
    return out


@register("_sparse_retain", differentiable=False, samples=lambda: [
    Sample((np.arange(12.0).reshape(4, 3), np.array([0.0, 2.0])), ref=_np_retain, grad=False)])
def sparse_retain(data: Tensor, indices: Tensor) -> Tensor:
    """The rows of ``data`` whose numbers are in ``indices``; the other rows become zero
    (MXNet's ``sparse.retain``; a row_sparse input gives a row_sparse result)."""
    if indices is None:
        raise MXNetError("sparse.retain: the indices input (row ids to keep) is required")
    keep = torch.zeros(data.shape[0], dtype=torch.bool, device=data.device)
    keep[indices.reshape(-1).to(torch.int64)] = True
    shape = (-1,) + (1,) * (data.dim() - 1)
    return torch.where(keep.reshape(shape), data, torch.zeros((), dtype=data.dtype, device=data.device))


@sparse_rule("_sparse_retain")
def _retain_sparse(data: Tensor, indices: Tensor) -> Any:
    if data.layout is not _COO:
        return NotImplemented
    values, rows = S.rsp_parts(S.to_rsp(data))
    want = S.to_dense(indices).reshape(-1).to(torch.int64)
    mask = torch.isin(rows, want)
    return S.rsp(values[mask], rows[mask], data.shape)


def _np_getnnz(data: np.ndarray, axis: Any = None) -> np.ndarray:
    nz = data != 0
    return np.array([nz.sum()], dtype=np.int64) if axis is None else nz.sum(axis=axis).astype(np.int64)


@register("_contrib_getnnz", differentiable=False, samples=lambda: [
    Sample((np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]]),), ref=_np_getnnz, grad=False),
    Sample((np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]]),), {"axis": 1}, ref=_np_getnnz, grad=False),
    Sample((np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]]),), {"axis": 0}, ref=_np_getnnz, grad=False)])
def getnnz(data: Tensor, *, axis: Optional[int] = None) -> Tensor:
    """Number of stored values of a csr array (all, or per row with axis=1 / per column with
    axis=0), int64; for a dense array the number of non-zeros (MXNet's contrib.getnnz)."""
    nz = S.to_dense(data) != 0
    if axis is None:
        return nz.sum().reshape(1).to(torch.int64)
    return nz.sum(dim=axis).to(torch.int64)


@sparse_rule("_contrib_getnnz")
def _getnnz_sparse(data: Tensor, *, axis: Optional[int] = None) -> Any:
    if data.layout is not _CSR:
        return NotImplemented
    _, indices, indptr = S.csr_parts(data)
    if axis is None:
        return torch.tensor([indices.numel()], dtype=torch.int64, device=data.device)
    if axis in (1, -1):
        return (indptr[1:] - indptr[:-1]).to(torch.int64)
    return torch.bincount(indices, minlength=data.shape[1]).to(torch.int64)


# ---- more operators of sparse arrays --------------------------------------------------------------
def _np_square_sum(x: np.ndarray, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> np.ndarray:
    ax = None if axis is None else ((axis,) if np.isscalar(axis) else tuple(axis))
    if exclude and ax is not None:
        ax = tuple(i for i in range(x.ndim) if i not in tuple(a % x.ndim for a in ax))
    out = np.asarray((x * x).sum(axis=ax, keepdims=keepdims)).astype(x.dtype)
    return out.reshape(1) if out.ndim == 0 else out


@register("_square_sum", infer_shape=_reduce_shape("_square_sum"), samples=lambda: [
    Sample((np.random.RandomState(3).randn(4, 3),), {"axis": 1, "keepdims": True}, ref=_np_square_sum),
    Sample((np.random.RandomState(4).randn(4, 3),), {"axis": 0}, ref=_np_square_sum),
    Sample((np.random.RandomState(5).randn(2, 3, 2),), {}, ref=_np_square_sum)])
def square_sum(data: Tensor, *, axis: Axis = None, keepdims: bool = False, exclude: bool = False) -> Tensor:
    """``sum(data * data, axis)`` (MXNet's ``_square_sum``): a row_sparse input summed over
    axis 1 with ``keepdims`` keeps its rows (a row_sparse result), as MXNet's kernel."""
    return get("sum").kernel(data * data, axis=axis, keepdims=keepdims, exclude=exclude)


def _axis_is_1(axis: Any, exclude: bool) -> bool:
    ax = axis[0] if isinstance(axis, (tuple, list)) and len(axis) == 1 else axis
    return not exclude and ax in (1, -1)


@sparse_rule("_square_sum")
def _square_sum_sparse(data: Tensor, *, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> Any:
    if data.layout is not _COO or data.dim() != 2:
        return NotImplemented
    values, rows = S.rsp_parts(S.to_rsp(data))
    if _axis_is_1(axis, exclude) and keepdims:
        return S.rsp((values * values).sum(dim=1, keepdim=True), rows, (data.shape[0], 1))
    return square_sum(S.to_dense(data), axis=axis, keepdims=keepdims, exclude=exclude)


@storage_rule("_square_sum", grad=True)
def _square_sum_grad_storage(stypes: list, attrs: dict) -> list:
    """The gradient of a row_sparse input is row_sparse (its rows only)."""
    return ["row_sparse" if stypes[0] == "row_sparse" else "default"]


@register("_scatter_elemwise_div", samples=lambda: [
    Sample((np.random.RandomState(6).randn(3, 4), np.random.RandomState(7).uniform(0.5, 2.0, (3, 4))),
           ref=lambda a, b: a / b)])
def scatter_elemwise_div(lhs: Tensor, rhs: Tensor) -> Tensor:
    """``lhs / rhs`` computed only where ``lhs`` stores values (MXNet's
    ``_scatter_elemwise_div``): the result has ``lhs``'s storage and sparsity pattern."""
    return lhs / rhs


@sparse_rule("_scatter_elemwise_div")
def _scatter_div_sparse(lhs: Tensor, rhs: Tensor) -> Any:
    _same_shape("_scatter_elemwise_div", lhs, rhs)
    if lhs.layout is _STRIDED:
        return lhs / S.to_dense(rhs)
    dense = S.to_dense(rhs)
    if lhs.layout is _COO:
        values, rows = S.rsp_parts(S.to_rsp(lhs))
        return S.rsp(values / dense[rows], rows, lhs.shape)
    values, indices, indptr = S.csr_parts(lhs)
    rows = torch.repeat_interleave(torch.arange(lhs.shape[0], device=lhs.device), indptr[1:] - indptr[:-1])
    return S.csr_tensor(indptr, indices, values / dense[rows, indices], tuple(lhs.shape))


def _scatter_scalar(name: str, sign: float) -> None:
    def kernel(data: Tensor, *, scalar: float = 1.0) -> Tensor:
        return data + sign * scalar
    kernel.__name__ = name
    kernel.__doc__ = (f"``data {'+' if sign > 0 else '-'} scalar`` on the stored values only (MXNet's "
                      f"``{name}``): a sparse input keeps its storage and pattern.")
    register(name, samples=lambda: [Sample((np.random.RandomState(8).randn(3, 4),), {"scalar": 2.5},
                                           ref=lambda x, scalar=1.0: x + sign * scalar)])(kernel)

    def rule(data: Tensor, *, scalar: float = 1.0) -> Any:
        if data.layout is _STRIDED:
            return NotImplemented
        return S.map_values(data, lambda v: v + sign * scalar)
    rule.__name__ = f"{name}_sparse"
    sparse_rule(name)(rule)


_scatter_scalar("_scatter_plus_scalar", 1.0)
_scatter_scalar("_scatter_minus_scalar", -1.0)


@sparse_rule("_contrib_quadratic")
def _quadratic_sparse(data: Tensor, *, a: float = 0.0, b: float = 0.0, c: float = 0.0) -> Any:
    """With ``c == 0`` zeros stay zeros: a sparse input keeps its storage (MXNet's kernel)."""
    if data.layout is _STRIDED or c != 0:
        return NotImplemented
    return S.map_values(data, lambda v: a * v * v + b * v)


@sparse_rule("FullyConnected")
def _fc_sparse(data: Tensor, weight: Tensor, bias: Optional[Tensor] = None, *, num_hidden: int,
               no_bias: bool = False, flatten: bool = True) -> Any:
    """FullyConnected with csr data or row_sparse weight/bias gives a dense result (MXNet's
    FComputeEx and fallback); a csr input multiplies sparsely. A bias may be (num_hidden, 1)."""
    w = S.to_dense(weight)
    b = None if no_bias or bias is None else S.to_dense(bias).reshape(-1)
    if data.layout is _CSR:
        if w.shape[0] != num_hidden:
            raise MXNetError(f"FullyConnected: weight has shape {tuple(w.shape)}, but num_hidden="
                             f"{num_hidden} needs {num_hidden} rows")
        out = torch.sparse.mm(data, w.t().contiguous())
        return out + b if b is not None else out
    return get("FullyConnected").kernel(S.to_dense(data), w, b, num_hidden=num_hidden, no_bias=no_bias,
                                        flatten=flatten)


# ---- storage-type inference (MXNet's FInferStorageType) -----------------------------------------
@storage_rule("cast_storage")
def _cast_storage_storage(stypes: list, attrs: dict) -> list:
    return [attrs["stype"]]


def _batchnorm_storage(stypes: list, attrs: dict) -> list:
    if attrs.get("fix_gamma", True) and any(s not in (None, "default") for s in stypes):
        raise MXNetError("BatchNorm: fix_gamma=True is not supported for sparse inputs (as in MXNet "
                         "1.9.1); pass fix_gamma=False or dense arrays")
    return ["default"] * get("BatchNorm").num_outputs(attrs)


storage_rule("BatchNorm")(_batchnorm_storage)


@storage_rule("Embedding", grad=True)
def _embedding_grad_storage(stypes: list, attrs: dict) -> list:
    return ["default", "row_sparse" if attrs.get("sparse_grad") else "default"]


@storage_rule("_contrib_SparseEmbedding", grad=True)
def _sparse_embedding_grad_storage(stypes: list, attrs: dict) -> list:
    return ["default", "row_sparse"]


@storage_rule("dot", grad=True)
def _dot_grad_storage(stypes: list, attrs: dict) -> list:
    """dot(csr, rhs)'s rhs gradient is dot(csr.T, head) = row_sparse (MXNet's backward)."""
    if stypes[0] == "csr" and not attrs.get("transpose_a") and not attrs.get("transpose_b"):
        return ["default", "row_sparse"]
    return ["default", "default"]


def output_stypes(op: Any, stypes: Sequence[Optional[str]], shapes: Sequence[Any], dtypes: Sequence[Any],
                  attrs: dict) -> list:
    """The storage types of an operator's outputs for inputs of storage ``stypes`` (None: an
    absent optional input), as MXNet's storage inference gives them: the operator's
    ``storage`` fact where it has one, else what its sparse rule returns for inputs of these
    storage types that store nothing (no rule, or NotImplemented: dense, MXNet's fallback)."""
    n = op.num_outputs(attrs)
    if op.storage is not None:
        return list(op.storage(list(stypes), attrs))
    sparse_in = any(s not in (None, "default") for s in stypes)
    if op.sparse is None or not (sparse_in or op.sparse_from_dense):
        return ["default"] * n
    try:  # binding the same operator on the same kinds of arrays again asks the rule once
        key: Any = (op.name, tuple(stypes), tuple(None if s is None else tuple(s) for s in shapes),
                    tuple(str(d) for d in dtypes), tuple(sorted(attrs.items())))
        hit = _STYPE_MEMO.get(key)
    except TypeError:  # an unhashable attribute value
        key, hit = None, None
    if hit is not None:
        return list(hit)
    result = _rule_stypes(op, n, stypes, shapes, dtypes, attrs)
    if key is not None:
        if len(_STYPE_MEMO) > 4096:
            _STYPE_MEMO.clear()
        _STYPE_MEMO[key] = tuple(result)
    return result


_STYPE_MEMO: dict = {}


def _rule_stypes(op: Any, n: int, stypes: Sequence[Optional[str]], shapes: Sequence[Any],
                 dtypes: Sequence[Any], attrs: dict) -> list:
    """What the sparse rule returns for inputs of these storage types that store nothing."""
    tensors: list = []
    for s, shape, dt in zip(stypes, shapes, dtypes):
        if s is None:
            tensors.append(None)
            continue
        if shape is None or any(d < 0 for d in shape):
            return ["default"] * n
        tensors.append(S.zeros(s, shape, dtype_torch(dt or "float32")))
    kattrs = dict(attrs)
    if op.train_aware:
        kattrs["is_train"] = False
    try:
        with torch.no_grad():
            res = op.sparse(*tensors, **kattrs)
    except (MXNetError, RuntimeError, ValueError, TypeError, IndexError, NotImplementedError):
        return ["default"] * n
    if res is NotImplemented:
        return ["default"] * n
    res = list(res) if isinstance(res, (list, tuple)) else [res]
    return [S.stype_of(r) for r in res]


def input_grad_stypes(op: Any, stypes: Sequence[Optional[str]], attrs: dict) -> list:
    """The storage type of each input's gradient under a dense head gradient (MXNet's backward
    storage inference): the operator's ``grad_storage`` fact, else dense."""
    if op.grad_storage is not None:
        return list(op.grad_storage(list(stypes), attrs))
    return ["default"] * len(stypes)
