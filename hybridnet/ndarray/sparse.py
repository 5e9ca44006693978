"""``mx.nd.sparse``: MXNet 1.9.1's sparse NDArrays (``CSRNDArray``, ``RowSparseNDArray``).

A sparse NDArray is an NDArray whose tensor ``_t`` is a torch sparse tensor (see
``hybridnet.ops.storage``: row_sparse as a coalesced COO tensor with one sparse dimension, csr
as a torch CSR tensor), so ``shape``, ``dtype``, ``context`` and ``size`` work as for dense
arrays. Operators reach sparse arrays through ``invoke``'s non-NDArray branch (the dense hot
path never sees them) and land in ``sparse_invoke``:

* an operator with a sparse rule (``ops.registry.sparse_rule``) runs it: sparse results come
  back as sparse arrays (``dot(csr, dense)``, ``elemwise_add(rsp, rsp)``, ``sgd_update`` with a
  row_sparse gradient...);
* otherwise, as MXNet's *storage fallback*, the operator runs on dense copies and returns a
  dense array; a warning names the operator once (silenced by
  ``MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0``, as in MXNet).

Under ``autograd.record()``, operators whose inputs carry gradients run on dense forms (torch
differentiates dense kernels); a sparse array with ``attach_grad`` keeps a dense leaf tensor for
that, and its gradient is cast to the gradient's storage type after ``backward`` (so
``x.grad.stype`` is what was asked for, as in MXNet).
"""
from __future__ import annotations

import builtins
import os
import warnings
from typing import Any, Optional, Sequence

import numpy as np
import torch

from .. import autograd_engine as _ag
from ..base import MXNetError, dtype_torch, numeric_types
from ..context import Context, current_context
from ..ops import registry as _reg
from ..ops import storage as _S
from ..ops.registry import OpDef
from ..profiler import recorder as _profiler
from . import ndarray as _nd
from .ndarray import NDArray, _device, _mode, _op_error, _write_out, invoke, placed

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix", "row_sparse_array",
           "zeros", "empty", "array", "add", "subtract", "multiply", "divide", "current_context",
           "py_sum", "sparse_invoke", "evaluate_graph", "wrap", "zeros_tensor", "store_into", "sum_tensors", "retain_rows", "dense_tensor", "retain", "adagrad_update"]

_STRIDED = torch.strided
py_sum = builtins.sum  # MXNet's nd.sparse keeps the builtin under this name
_py_slice = builtins.slice  # ``slice`` in this module becomes the operator (ops.frontend.populate)
_FALLBACK_SEEN: set = set()


# ---- wrapping and dispatch --------------------------------------------------------------------
def wrap(t: torch.Tensor) -> NDArray:
    """The NDArray class for ``t``'s layout (dense, row_sparse or csr)."""
    lay = t.layout
    if lay is _STRIDED:
        return NDArray(t)
    if lay is torch.sparse_coo:
        return RowSparseNDArray(t if t.sparse_dim() == 1 else _S.to_rsp(t))
    if lay is torch.sparse_csr:
        return CSRNDArray(t)
    raise MXNetError(f"tensors with layout {lay} have no MXNet storage type")


def _is_sparse(x: Any) -> bool:
    return isinstance(x, NDArray) and x._t.layout is not _STRIDED


def _leaf_of(x: NDArray) -> Optional[torch.Tensor]:
    return getattr(x, "_leaf", None)


def _dense_operand(x: Any) -> Any:
    """A dense NDArray for ``x``: a sparse variable's dense leaf (so gradients reach it), a dense
    copy of any other sparse array, ``x`` itself otherwise."""
    if not _is_sparse(x):
        return x
    leaf = _leaf_of(x)
    if leaf is not None and leaf.requires_grad:
        return NDArray(leaf)
    return NDArray(_S.to_dense(x._t))


def dense_tensor(x: NDArray) -> torch.Tensor:
    """The tensor a compiled graph computes with for ``x``: its own for dense arrays, the dense
    form (a variable's differentiable leaf) for sparse ones."""
    t = x._t
    if t.layout is _STRIDED:
        return t
    return _dense_operand(x)._t


def _warn_fallback(op: OpDef, inputs: Sequence) -> None:
    stypes = tuple(x.stype if isinstance(x, NDArray) else "none" for x in inputs)
    key = (op.name, stypes)
    if key in _FALLBACK_SEEN or os.environ.get("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "1") == "0":
        return
    _FALLBACK_SEEN.add(key)
    warnings.warn(f"Storage type fallback detected: operator {op.name} has no sparse kernel for "
                  f"inputs of storage types {list(stypes)}; it runs on dense copies and returns a "
                  f"dense array (MXNet's storage fallback). Set MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 "
                  f"to silence this.", UserWarning, stacklevel=4)


def _store(dst: NDArray, t: torch.Tensor) -> NDArray:
    """Write the result ``t`` into ``dst`` (any storage types), as MXNet's ``out=``."""
    if dst._t is t:
        return dst
    if tuple(t.shape) != dst.shape:
        raise MXNetError(f"out= has shape {dst.shape} but the result has shape {tuple(t.shape)}")
    if isinstance(dst, BaseSparseNDArray):
        r = _S.cast(t.to(device=dst._t.device), dst.stype)
        if r.dtype != dst._t.dtype:
            r = _S.map_values(r, lambda v: v.to(dst._t.dtype)) if r.layout is not _STRIDED else r.to(dst._t.dtype)
        dst._set_storage(r.clone() if r is t else r)
        return dst
    return _write_out(dst, _S.to_dense(t))


store_into = _store  # for kvstore and gluon: write a result of any storage into an array


def sum_tensors(ts: Sequence[torch.Tensor]) -> torch.Tensor:
    """Sum of same-shape tensors: row_sparse when all are, else dense (kvstore aggregation)."""
    if all(t.layout is torch.sparse_coo for t in ts):
        out = _S.to_rsp(ts[0])
        for t in ts[1:]:
            out = out + _S.to_rsp(t)
        return out.coalesce()
    acc = _S.to_dense(ts[0]).clone()
    for t in ts[1:]:
        acc = acc + _S.to_dense(t)
    return acc


def retain_rows(t: torch.Tensor, row_ids: torch.Tensor) -> torch.Tensor:
    """The rows ``row_ids`` of ``t`` as a row_sparse tensor on ``row_ids``' device (kvstore's
    row_sparse_pull)."""
    rows = torch.unique(_S.to_dense(row_ids).reshape(-1).to(torch.int64).to(t.device))
    if t.layout is torch.sparse_coo:
        keep = torch.isin(t._indices()[0], rows)
        r = _S.rsp(t._values()[keep], t._indices()[0][keep], t.shape)
    else:
        d = _S.to_dense(t)
        r = _S.rsp(d[rows], rows, t.shape)
    return r.to(row_ids.device) if row_ids.device != t.device else r


def _fill_written_rows(op: OpDef, inputs: Sequence, attrs: dict, out: Any) -> None:
    """Row_sparse arrays an operator updates in place (its states, the ``out=`` array) get every
    row first, as MXNet fills uninitialized states before a sparse update."""
    written = [out] if isinstance(out, NDArray) else []
    if not op.variadic:
        aux = set(op.aux_inputs(attrs))
        written += [x for name, x in zip(op.inputs, inputs) if name in aux]
    for x in written:
        if isinstance(x, RowSparseNDArray):
            full = _S.full_rows(x._t)
            if full is not x._t:
                x._set_storage(full)


def sparse_invoke(op: OpDef, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
                  hint: Any = None, attr: Any = None) -> Any:
    """``invoke`` for calls with sparse inputs, or to operators with a sparse rule (see the module
    docstring)."""
    sparse_in, grads = False, False
    for x in inputs:
        if isinstance(x, NDArray):
            t = x._t
            if t.layout is not _STRIDED:
                sparse_in = True
                leaf = _leaf_of(x)
                grads = grads or (leaf is not None and leaf.requires_grad)
            else:
                grads = grads or t.requires_grad
        elif x is not None and _nd.symbolic_dispatch is not None and hasattr(x, "_entries"):
            return _nd.symbolic_dispatch(op, inputs, attrs, out, name, hint, attr)
        elif x is not None:
            raise TypeError(f"operator {op.name}: expected NDArray inputs, got {type(x).__name__} "
                            f"({x!r:.60}); wrap Python/NumPy data with mx.nd.array(...)")
    if isinstance(out, (list, tuple)) and len(out) == 1:
        out = out[0]
    recording = grads and _mode().recording
    if op.sparse is not None and not recording and (sparse_in or op.sparse_from_dense):
        _fill_written_rows(op, inputs, attrs, out)
        tensors = [x._t if isinstance(x, NDArray) else x for x in inputs]
        kattrs = dict(attrs)
        if op.train_aware:
            kattrs["is_train"] = _mode().training
        try:
            with torch.no_grad():  # sparse kernels are never recorded (see the module docstring)
                if _profiler.running and _profiler.config["profile_imperative"]:
                    res = _profiler.run_kernel(op.sparse, op.name, *tensors, **kattrs)
                else:
                    res = op.sparse(*tensors, **kattrs)
        except MXNetError:
            raise
        except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError) as e:
            raise _op_error(op, inputs, attrs, e) from e
        if res is not NotImplemented:
            if isinstance(res, (list, tuple)):
                return [wrap(r) for r in res]
            return wrap(res) if out is None else _store(out, res)
    if not sparse_in and not _is_sparse(out):
        return invoke(op, inputs, attrs, out, name, hint, attr)
    if sparse_in and op.sparse is None:  # (with a rule, dense is the differentiable path under record)
        _warn_fallback(op, inputs)
    dense = [_dense_operand(x) for x in inputs]
    if out is not None and not isinstance(out, (list, tuple)) and _is_sparse(out):
        res = invoke(op, dense, attrs, None, name, hint, attr)
        _store(out, res._t)
        result: Any = out
    else:
        result = invoke(op, dense, attrs, out, name, hint, attr)
    if not op.variadic:  # states a kernel updated in place on dense copies go back to the sparse arrays
        aux = set(op.aux_inputs(attrs))
        for nm, x, d in zip(op.inputs, inputs, dense):
            if nm in aux and _is_sparse(x) and d is not x:
                _store(x, d._t)
    return result


def evaluate_graph(graph: Any, values: dict) -> Optional[list]:
    """The outputs of ``graph`` (an ``ir`` Graph) computed node by node on NDArrays of any
    storage, each operator through ``sparse_invoke`` (its sparse rule where it has one, MXNet's
    FComputeEx, else the dense fallback), from variable values ``values`` (name -> NDArray).
    A bound Symbol's forward with sparse arguments runs so, keeping MXNet's sparse results
    (``_scatter_elemwise_div`` keeps its lhs's rows, not every row a dense division fills).
    None when some node cannot run so (control flow with subgraphs)."""
    done: dict = {}
    for node in graph.nodes:
        if node.op is None:
            done[(id(node), 0)] = values[node.name]
            continue
        if node.subgraphs:
            return None
        inputs = [done[(id(src), k)] for src, k in node.inputs]
        res = sparse_invoke(node.op, inputs, dict(node.kernel_attrs()))
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        for k, r in enumerate(res):
            done[(id(node), k)] = r
    return [done[(id(n), k)] for n, k in graph.outputs]


# ---- the classes ------------------------------------------------------------------------------
class BaseSparseNDArray(NDArray):
    """The base class of MXNet's sparse NDArrays (``mx.nd.sparse.BaseSparseNDArray``)."""

    # _leaf: the dense tensor autograd differentiates when the array has an attached gradient
    __slots__ = ("_leaf",)

    def __init__(self, data: torch.Tensor):
        self._t = data

    def _set_storage(self, t: torch.Tensor) -> None:
        """Replace the stored tensor (in-place writes of MXNet); a variable's leaf follows."""
        self._t = t
        leaf = _leaf_of(self)
        if leaf is not None:
            with torch.no_grad():
                leaf.copy_(_S.to_dense(t))

    @property
    def stype(self) -> str:
        return _S.stype_of(self._t)

    def __repr__(self) -> str:
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n<{type(self).__name__} {shape_info} @{self.context}>"

    __str__ = __repr__

    @property
    def _num_aux(self) -> int:
        """Number of auxiliary arrays (row_sparse: indices; csr: indptr, indices)."""
        return 1 if isinstance(self, RowSparseNDArray) else 2

    @property
    def _aux_types(self) -> list:
        return [np.int64] * self._num_aux

    def _aux_type(self, i: int) -> Any:
        return np.int64

    # -- conversion -------------------------------------------------------------------------
    def asnumpy(self) -> np.ndarray:
        """A dense NumPy copy."""
        d = _S.to_dense(self._t.detach())
        if d.dtype == torch.bfloat16:
            d = d.float()
        return d.cpu().numpy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.asnumpy()
        return a.astype(dtype) if dtype is not None and np.dtype(dtype) != a.dtype else a

    def astype(self, dtype: Any, copy: bool = True) -> NDArray:
        """The array with values cast to ``dtype`` (same storage type)."""
        dt = dtype_torch(dtype)
        if dt == self._t.dtype and not copy:
            return self
        return placed(wrap(_S.map_values(self._t, lambda v: v.to(dt))), getattr(self, "_cpuctx", None))

    def copy(self) -> NDArray:
        return placed(wrap(self._t.clone()), getattr(self, "_cpuctx", None))

    def copyto(self, other: "NDArray | Context") -> Any:
        """Copy into ``other`` (an NDArray of any storage type: the values are cast to it), or to
        a new array of this storage type on Context ``other``."""
        if isinstance(other, NDArray):
            if other is self or other._t is self._t:
                warnings.warn("You are attempting to copy an array to itself", RuntimeWarning, stacklevel=2)
                return False
            if other.shape != self.shape:
                raise MXNetError(f"copyto: shape mismatch, source {self.shape} vs target {other.shape}")
            return _store(other, self._t.clone())
        if isinstance(other, Context):
            return placed(wrap(self._t.to(_device(other), copy=True)), other)
        raise TypeError(f"copyto does not support type {type(other).__name__}; pass an NDArray or a Context")

    def as_in_context(self, context: Context) -> NDArray:
        if self.context == context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage ``stype`` ('default', 'row_sparse', or 'csr' for 2-D arrays)."""
        r = _S.cast(self._t, stype)
        return placed(wrap(r.clone() if r is self._t else r), getattr(self, "_cpuctx", None))

    def detach(self) -> NDArray:
        """The same storage, cut from autograd (MXNet keeps the storage type)."""
        return wrap(self._t)

    @property
    def T(self) -> NDArray:
        """The transpose (computed on the dense form; a dense array)."""
        return _nd._FN["transpose"](self)

    def zeros_like(self, *args: Any, **kwargs: Any) -> NDArray:
        return _nd._FN["zeros_like"](self)

    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        raise MXNetError(f"reshape is not supported for {type(self).__name__}; convert it first with "
                         f"x.tostype('default')")

    def _data(self) -> NDArray:
        """The stored values (MXNet's private accessor)."""
        return self.data

    def _aux_data(self, i: int) -> NDArray:
        """Auxiliary array ``i``: row_sparse 0 = indices; csr 0 = indptr, 1 = indices."""
        aux = self._aux_list()
        if not 0 <= i < len(aux):
            raise IndexError(f"{type(self).__name__} has {len(aux)} auxiliary arrays, got index {i}")
        return aux[i]

    def _aux_list(self) -> list:
        raise NotImplementedError

    # -- autograd -----------------------------------------------------------------------------
    def attach_grad(self, grad_req: str = "write", stype: Optional[str] = None) -> None:
        """Attach a zero gradient of storage ``stype`` (default: this array's); computations under
        record() use the array's dense form, whose gradient is cast to ``stype`` by backward."""
        gstype = stype or self.stype
        t = self._t
        self._mark(wrap(zeros_tensor(gstype, t.shape, t.dtype, t.device)), grad_req)

    def _mark(self, grad: NDArray, grad_req: str) -> None:
        if grad_req not in ("write", "add", "null"):
            raise ValueError(f"grad_req must be 'write', 'add' or 'null', got {grad_req!r}")
        t = self._t
        if grad_req != "null" and (grad is None or grad.shape != self.shape or grad._t.dtype != t.dtype):
            raise MXNetError(f"gradient buffer does not match the variable {self.shape}")
        self._leaf = _S.to_dense(t).detach().requires_grad_(grad_req != "null")
        self._grad = grad
        self._grad_req = grad_req
        self._fresh = False
        _ag.register_variable(self)

    # -- writes -------------------------------------------------------------------------------
    def __setitem__(self, key: Any, value: Any) -> None:
        """Only ``x[:] = value`` (MXNet): an NDArray of any storage, a NumPy array or a scalar."""
        if not (isinstance(key, _py_slice) and key == _py_slice(None)):
            raise MXNetError(f"{type(self).__name__} only supports x[:] = value assignment, got key {key!r}")
        if isinstance(value, NDArray):
            if value is self:
                return
            if value.shape != self.shape:
                raise MXNetError(f"cannot assign an array of shape {value.shape} to {type(self).__name__} "
                                 f"of shape {self.shape}")
            _store(self, value._t.clone())
        elif isinstance(value, numeric_types):
            _store(self, torch.full(self.shape, value, dtype=self._t.dtype, device=self._t.device))
        else:
            a = np.asarray(value)
            if a.shape != self.shape:
                raise MXNetError(f"cannot assign an array of shape {a.shape} to {type(self).__name__} "
                                 f"of shape {self.shape}")
            _store(self, torch.from_numpy(np.ascontiguousarray(a)).to(self._t.dtype))

    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError when the aux arrays do not describe a valid array of this shape."""
        if isinstance(self, RowSparseNDArray):
            _S.check_rsp(self._t)
        else:
            _S.check_csr(self._t, full_check)


def _binary_sparse(elem: str, fallback: str) -> Any:
    """``x <op> y`` on sparse arrays: same-shape arrays use MXNet's elemwise operator (which keeps
    sparsity), anything else the dense NDArray operator (scalar or broadcast forms)."""
    def fn(self: NDArray, other: Any) -> Any:
        if isinstance(other, NDArray) and other.shape == self.shape:
            return sparse_invoke(_reg.get(elem), (self, other), {})
        return getattr(NDArray, fallback)(self, other)
    return fn


def _rbinary_sparse(elem: str, fallback: str) -> Any:
    def fn(self: NDArray, other: Any) -> Any:
        if isinstance(other, NDArray) and other.shape == self.shape:
            return sparse_invoke(_reg.get(elem), (other, self), {})
        return getattr(NDArray, fallback)(self, other)
    return fn


def _inplace_sparse(pyop: str) -> Any:
    def fn(self: NDArray, other: Any) -> Any:
        res = getattr(self, f"__{pyop}__")(other)
        if res is NotImplemented:
            return res
        _store(self, res._t)
        return self
    return fn


for _py, _elem in (("add", "elemwise_add"), ("sub", "elemwise_sub"), ("mul", "elemwise_mul"),
                   ("truediv", "elemwise_div")):
    setattr(BaseSparseNDArray, f"__{_py}__", _binary_sparse(_elem, f"__{_py}__"))
    setattr(BaseSparseNDArray, f"__r{_py}__", _rbinary_sparse(_elem, f"__r{_py}__"))
    setattr(BaseSparseNDArray, f"__i{_py}__", _inplace_sparse(_py))
BaseSparseNDArray.__div__ = BaseSparseNDArray.__truediv__
BaseSparseNDArray.__rdiv__ = BaseSparseNDArray.__rtruediv__
BaseSparseNDArray.__idiv__ = BaseSparseNDArray.__itruediv__


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format: ``data``, column ``indices``, row ``indptr``."""

    __slots__ = ()

    @property
    def data(self) -> NDArray:
        """The stored values (shares memory)."""
        return _view(self._t.values())

    @property
    def indices(self) -> NDArray:
        """Column index of each stored value (int64, shares memory)."""
        return _view(self._t.col_indices())

    @property
    def indptr(self) -> NDArray:
        """Row i's values are data[indptr[i]:indptr[i+1]] (int64, shares memory)."""
        return _view(self._t.crow_indices())

    def _aux_list(self) -> list:
        return [self.indptr, self.indices]

    def __getitem__(self, key: Any) -> NDArray:
        """Row selection as MXNet: ``x[i]`` (a 1-row csr array), ``x[a:b]`` (step 1), ``x[:]``."""
        n = self.shape[0]
        if isinstance(key, (int, np.integer)):
            i = int(key)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for a CSRNDArray with {n} rows")
            begin, end = i % n, i % n + 1
        elif isinstance(key, _py_slice):
            if key.step not in (None, 1):
                raise ValueError(f"CSRNDArray only supports slices with step 1, got {key!r}")
            begin, end, _ = key.indices(n)
            end = max(begin, end)
        else:
            raise ValueError(f"CSRNDArray supports an int or a slice of rows as index, got "
                             f"{type(key).__name__} {key!r}; use x.tostype('default') for other indexing")
        data, indices, indptr = _S.csr_parts(self._t)
        lo, hi = int(indptr[begin]), int(indptr[end])
        return CSRNDArray(_S.csr_tensor(indptr[begin:end + 1] - lo, indices[lo:hi], data[lo:hi],
                                                  (end - begin, self.shape[1])))

    def asscipy(self) -> Any:
        """A ``scipy.sparse.csr_matrix`` with copies of data, indices and indptr (SciPy is an
        optional dependency: ``pip install scipy``)."""
        try:
            import scipy.sparse as spsp
        except ImportError:
            raise ImportError("CSRNDArray.asscipy() needs SciPy: pip install scipy (or use "
                              ".data/.indices/.indptr, or asnumpy() for a dense copy)") from None
        return spsp.csr_matrix((self.data.asnumpy(), self.indices.asnumpy(), self.indptr.asnumpy()),
                               shape=self.shape)


class RowSparseNDArray(BaseSparseNDArray):
    """An array of which only some rows are stored: ``data`` (the rows) and ``indices`` (their
    sorted row numbers); the other rows are zero."""

    __slots__ = ()

    @property
    def data(self) -> NDArray:
        """The stored rows (shares memory)."""
        return _view(self._t._values())

    @property
    def indices(self) -> NDArray:
        """Row number of each stored row (int64, sorted, shares memory)."""
        return _view(self._t._indices()[0])

    def _aux_list(self) -> list:
        return [self.indices]

    def __getitem__(self, key: Any) -> NDArray:
        """Only ``x[:]`` (the array itself), as MXNet."""
        if isinstance(key, _py_slice) and key == _py_slice(None):
            return self
        raise MXNetError(f"RowSparseNDArray only supports x[:] as index, got {key!r}; use "
                         f"nd.sparse.retain(x, rows) to select rows or x.tostype('default')")

    def retain(self, *args: Any, **kwargs: Any) -> NDArray:
        """``nd.sparse.retain(self, indices)``."""
        return sparse_invoke(_reg.get("_sparse_retain"), (self,) + args, kwargs)


def _view(t: torch.Tensor) -> NDArray:
    r = NDArray(t)
    r._view = True
    return r


# ---- creation -------------------------------------------------------------------------------
def zeros_tensor(stype: str, shape: Sequence[int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """An all-zero tensor of storage ``stype`` (sparse ones store nothing)."""
    shape = tuple(int(d) for d in shape)
    if stype == "default":
        return torch.zeros(shape, dtype=dtype, device=device)
    if stype == "row_sparse":
        return _S.rsp(torch.zeros((0,) + shape[1:], dtype=dtype, device=device),
                      torch.zeros(0, dtype=torch.int64, device=device), shape)
    if stype == "csr":
        if len(shape) != 2:
            raise _S.StorageFormatError(f"csr arrays are 2-D, got shape {shape}")
        z = torch.zeros(shape[0] + 1, dtype=torch.int64, device=device)
        return _S.csr_tensor(z, z[:0], torch.zeros(0, dtype=dtype, device=device), shape)
    raise _S.StorageFormatError(f"unknown storage type {stype!r}; expected 'default', 'row_sparse' or 'csr'")


def zeros(stype: str, shape: Any, ctx: Optional[Context] = None, dtype: Any = None,
          **kwargs: Any) -> NDArray:
    """An all-zero array of storage ``stype`` (MXNet's ``nd.sparse.zeros``; float32 by default)."""
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    out = kwargs.pop("out", None)
    if kwargs:
        raise TypeError(f"nd.sparse.zeros() got unexpected keyword arguments {sorted(kwargs)}")
    t = zeros_tensor(stype, shape, dtype_torch(dtype or "float32"), _device(ctx))
    if out is not None:
        return _store(out, t)
    return placed(wrap(t), ctx)


def empty(stype: str, shape: Any, ctx: Optional[Context] = None, dtype: Any = None) -> NDArray:
    """An array of storage ``stype`` with nothing stored (MXNet's ``nd.sparse.empty``)."""
    return zeros(stype, shape, ctx, dtype)


def _tensor(a: Any, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    if isinstance(a, NDArray):
        t = _S.to_dense(a._t.detach())
    elif isinstance(a, torch.Tensor):
        t = a.detach()
    else:
        t = torch.from_numpy(np.ascontiguousarray(np.asarray(a)))
    return t.to(dtype) if dtype is not None else t


def _dtype_of(src: Any, dtype: Any) -> torch.dtype:
    """MXNet's default: the dtype of a NumPy/NDArray source, else float32."""
    if dtype is not None:
        return dtype_torch(dtype)
    if isinstance(src, NDArray):
        return src._t.dtype
    if isinstance(src, np.ndarray):
        return dtype_torch(src.dtype)
    return torch.float32


def _is_scipy_sparse(x: Any) -> bool:
    return type(x).__module__.startswith("scipy.sparse")


def csr_matrix(arg1: Any, shape: Any = None, ctx: Optional[Context] = None, dtype: Any = None) -> CSRNDArray:
    """A CSRNDArray (MXNet's ``nd.sparse.csr_matrix``) from ``(data, indices, indptr)``, from
    ``(data, (row, col))`` (COO), from a ``scipy.sparse`` matrix, a dense 2-D array (NDArray,
    NumPy, list) or another CSRNDArray, or an empty ``(M, N)`` shape."""
    dev = _device(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        data, indices, indptr = arg1
        if shape is None:
            ind = _tensor(indices, torch.int64)
            if ind.numel() == 0:  # MXNet cannot infer the column count either
                raise ValueError("csr_matrix: cannot infer the shape from empty indices; pass shape=")
            shape = (_tensor(indptr).numel() - 1, int(ind.max()) + 1)
        t = _S.csr(_tensor(data, _dtype_of(data, dtype)), _tensor(indices, torch.int64),
                   _tensor(indptr, torch.int64), shape)
    elif isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
        data, (row, col) = arg1
        values = _tensor(data, _dtype_of(data, dtype))
        rc = torch.stack([_tensor(row, torch.int64).reshape(-1), _tensor(col, torch.int64).reshape(-1)])
        if shape is None:
            shape = tuple(int(d) + 1 for d in rc.max(dim=1).values) if rc.numel() else (0, 0)
        # duplicates are summed (SciPy's COO -> CSR rule, which MXNet follows)
        try:
            m = torch.sparse_coo_tensor(rc, values.reshape(-1), tuple(shape),
                                        check_invariants=True).coalesce().to_sparse_csr()
        except RuntimeError as e:
            raise MXNetError(f"csr_matrix: COO (row, col) indices do not fit shape {tuple(shape)}: "
                             f"{str(e).splitlines()[0]}") from None
        t = _S.csr(m.values(), m.col_indices(), m.crow_indices(), tuple(shape))
    elif isinstance(arg1, tuple) and len(arg1) == 2 and all(isinstance(d, (int, np.integer)) for d in arg1):
        t = zeros_tensor("csr", arg1, dtype_torch(dtype or "float32"), dev)
    elif _is_scipy_sparse(arg1):
        m = arg1.tocsr(copy=True)
        m.sum_duplicates()  # MXNet keeps scipy input canonical: sorted, no duplicates
        m.sort_indices()
        dt = dtype_torch(dtype) if dtype is not None else dtype_torch(m.dtype)
        t = _S.csr(torch.from_numpy(np.asarray(m.data)).to(dt), torch.from_numpy(m.indices.astype(np.int64)),
                   torch.from_numpy(m.indptr.astype(np.int64)), m.shape)
    elif isinstance(arg1, NDArray):
        t = _S.to_csr(arg1._t.detach()).clone()
        if dtype is not None:
            t = _S.map_values(t, lambda v: v.to(dtype_torch(dtype)))
    else:
        t = _S.to_csr(_tensor(arg1, _dtype_of(arg1, dtype)))
    if shape is not None and tuple(shape) != tuple(t.shape):
        raise ValueError(f"csr_matrix: the data describe shape {tuple(t.shape)}, not the given {tuple(shape)}")
    return placed(CSRNDArray(t.to(dev) if t.device != dev else t), ctx)


def row_sparse_array(arg1: Any, shape: Any = None, ctx: Optional[Context] = None,
                     dtype: Any = None) -> RowSparseNDArray:
    """A RowSparseNDArray (MXNet's ``nd.sparse.row_sparse_array``) from ``(data, indices)``, a
    dense array, another RowSparseNDArray, or an empty shape tuple."""
    dev = _device(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2 and not all(isinstance(d, (int, np.integer)) for d in arg1):
        data, indices = arg1
        d = _tensor(data, _dtype_of(data, dtype))
        idx = _tensor(indices, torch.int64).reshape(-1)
        if shape is None:
            if idx.numel() == 0:
                raise ValueError("row_sparse_array: pass shape= when there are no indices")
            shape = (int(idx.max()) + 1,) + tuple(d.shape[1:])
        t = _S.rsp(d, idx, shape)
    elif isinstance(arg1, tuple) and all(isinstance(d, (int, np.integer)) for d in arg1):
        t = zeros_tensor("row_sparse", arg1, dtype_torch(dtype or "float32"), dev)
    elif isinstance(arg1, NDArray):
        t = _S.to_rsp(arg1._t.detach()).clone()
        if dtype is not None:
            t = _S.map_values(t, lambda v: v.to(dtype_torch(dtype)))
    else:
        t = _S.to_rsp(_tensor(arg1, _dtype_of(arg1, dtype)))
    if shape is not None and tuple(shape) != tuple(t.shape):
        raise ValueError(f"row_sparse_array: the data describe shape {tuple(t.shape)}, not the "
                         f"given {tuple(shape)}")
    return placed(RowSparseNDArray(t.to(dev) if t.device != dev else t), ctx)


def array(source_array: Any, ctx: Optional[Context] = None, dtype: Any = None) -> NDArray:
    """A sparse array copied from a sparse NDArray or a ``scipy.sparse.csr_matrix``."""
    if isinstance(source_array, BaseSparseNDArray):
        r = source_array.copyto(ctx or source_array.context)
        return r.astype(dtype) if dtype is not None else r
    if _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise ValueError(f"nd.sparse.array: expected a sparse NDArray or a scipy.sparse csr_matrix, got "
                     f"{type(source_array).__name__}; use nd.array for dense data")


def _mixed(name: str, elem: str) -> Any:
    """MXNet's ``nd.sparse.add`` & co.: same-shape arrays use the elemwise operator (sparse
    results where MXNet has them), anything else the dense ``nd`` function (scalars, broadcasting)."""
    def fn(lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, NDArray) and isinstance(rhs, NDArray) and lhs.shape == rhs.shape:
            return sparse_invoke(_reg.get(elem), (lhs, rhs), {})
        from . import utils as _utils
        return getattr(_utils, name)(lhs, rhs)
    fn.__name__ = name
    fn.__doc__ = f"{name}(lhs, rhs) with MXNet's sparse rules (elemwise for equal shapes, else broadcast)."
    return fn


add = _mixed("add", "elemwise_add")
subtract = _mixed("subtract", "elemwise_sub")
multiply = _mixed("multiply", "elemwise_mul")
divide = _mixed("divide", "elemwise_div")
