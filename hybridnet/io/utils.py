"""Helpers shared by the Python data iterators (MXNet 1.9.1's ``mxnet.io.utils``).

Sources are kept in MXNet's canonical form: a list of ``(name, NDArray)`` pairs sorted by name.
"""
from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np

from ..ndarray.ndarray import NDArray
from ..ndarray.ndarray import array as _nd_array

__all__ = ["_init_data", "_has_instance", "_getdata_by_idx"]

Source = List[Tuple[str, NDArray]]


def _init_data(data: Any, allow_empty: bool, default_name: str, who: str = "NDArrayIter") -> Source:
    """Canonical ``[(name, NDArray), ...]`` sorted by name, as MXNet's ``_init_data``.

    An array gives ``[(default_name, a)]``; a list of one array the same; a list of several
    ``[('_0_<default_name>', a0), ('_1_<default_name>', a1), ...]``; a dict keeps its keys.
    Values that are not NDArrays are converted with ``nd.array`` (float32, as in MXNet).
    """
    if data is None:
        if not allow_empty:
            raise ValueError(f"{who}: data is required (got None); pass an array, a list of arrays "
                             f"or a dict name -> array")
        data = []
    if isinstance(data, (np.ndarray, NDArray)) or (hasattr(data, "shape") and hasattr(data, "__getitem__")
                                                   and not isinstance(data, (list, tuple, dict))):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not allow_empty and len(data) == 0:
            raise ValueError(f"{who}: data is an empty list; pass at least one array")
        if len(data) == 1:
            items = {default_name: data[0]}
        else:
            items = {"_%d_%s" % (i, default_name): d for i, d in enumerate(data)}
    elif isinstance(data, dict):
        items = dict(data)  # do not modify the caller's dict
    else:
        raise TypeError(f"{who}: input must be an NDArray, a numpy.ndarray, a list of them or a dict "
                        f"with them as values; got {type(data).__name__}")
    for k, v in items.items():
        if not isinstance(k, str):
            raise TypeError(f"{who}: dict keys must be str names, got {k!r}")
        if type(v).__module__.startswith("scipy.sparse"):
            from ..ndarray.sparse import csr_matrix
            items[k] = csr_matrix(v)  # a scipy.sparse matrix is a CSRNDArray source, as in MXNet
        elif not isinstance(v, NDArray):
            try:
                items[k] = _nd_array(v)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{who}: invalid type {type(v).__name__} for {k!r}; should be an "
                                f"NDArray or a numpy.ndarray ({e})") from None
        if len(items[k].shape) == 0:
            raise ValueError(f"{who}: {k!r} is a 0-d array; the first axis must be the batch axis")
    return sorted(items.items(), key=lambda kv: kv[0])


def _has_instance(data: Source, dtype: type) -> bool:
    """True when some array of the canonical list ``data`` is an instance of ``dtype``."""
    return any(isinstance(arr, dtype) for _, arr in data)


def _getdata_by_idx(data: Source, idx: np.ndarray) -> Source:
    """Rows of every source taken in the order ``idx``; like MXNet, the result is rebuilt with
    ``nd.array`` from NumPy, hence float32 whatever the input dtype."""
    from ..ndarray.sparse import CSRNDArray, csr_matrix
    return [(k, csr_matrix(*_csr_rows(v, idx), ctx=v.context) if isinstance(v, CSRNDArray)
             else _nd_array(v.asnumpy()[idx], ctx=v.context)) for k, v in data]


def _csr_rows(v: Any, idx: np.ndarray) -> tuple:
    """(data, indices, indptr, shape) of the rows ``idx`` of a CSRNDArray (shuffling keeps it
    sparse, as MXNet's scipy round trip does)."""
    data, indices, indptr = v.data.asnumpy(), v.indices.asnumpy(), v.indptr.asnumpy()
    starts, ends = indptr[idx], indptr[np.asarray(idx) + 1]
    take = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)]) if len(idx) else \
        np.zeros(0, dtype=np.int64)
    new_ptr = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)
    return (data[take], indices[take], new_ptr), (len(idx), v.shape[1])
