"""Storage-type inference over a graph (MXNet's ``InferStorageType`` pass).

Graphs compute on dense tensors; which of their values MXNet would hold in sparse storage is a
separate fact that a bound Symbol needs for its output arrays (``dot(csr, w)`` is dense,
``elemwise_add(rsp, rsp)`` row_sparse, ``cast_storage(x, stype='csr')`` csr) and for the
gradient arrays ``simple_bind`` allocates (an ``Embedding(sparse_grad=True)`` weight's gradient
is row_sparse). The rules are the operators' (``ops.sparse.output_stypes`` and
``input_grad_stypes``, read from their OpDefs); this module only walks the graph.
"""
from __future__ import annotations

from typing import Any, Optional

from ..ir.graph import Graph
from ..ops.sparse import input_grad_stypes, output_stypes

__all__ = ["StorageResult", "infer_storage", "storage_may_change", "variable_stype"]

_FLAG_STYPE = {"0": "default", "1": "row_sparse", "2": "csr"}


def variable_stype(node: Any) -> str:
    """A variable's declared storage type (``Variable(stype=...)``'s ``__storage_type__``)."""
    flag = str(node.attrs.get("__storage_type__", "0"))
    return _FLAG_STYPE.get(flag, flag if flag in _FLAG_STYPE.values() else "default")


class StorageResult:
    """``entries``: (id(node), k) -> storage type of that output; ``outputs``: the graph
    outputs' storage types; ``grads``: argument name -> storage type of its gradient."""

    def __init__(self) -> None:
        self.entries: dict = {}
        self.outputs: list = []
        self.grads: dict = {}


def infer_storage(graph: Graph, var_stypes: dict, res: Any = None, var_shapes: Optional[dict] = None,
                  var_dtypes: Optional[dict] = None) -> StorageResult:
    """Storage types of every value of ``graph`` for variables of storage ``var_stypes`` (by
    name; a variable not named there has its declared storage type). Shapes let rules that
    depend on them run (without, they give dense): a variable's come from ``var_shapes`` /
    ``var_dtypes`` (by name), other values' from ``res``, an InferResult or a function that
    makes one (called only when a sparse value feeds an operator node). Raises MXNetError where
    an operator refuses its inputs' storage (MXNet's BatchNorm with fix_gamma and sparse data)."""
    out = StorageResult()
    grad_votes: dict = {}
    var_shapes, var_dtypes = var_shapes or {}, var_dtypes or {}
    for node in graph.nodes:
        if node.op is None:
            out.entries[(id(node), 0)] = var_stypes.get(node.name) or variable_stype(node)
            continue
        stypes = [out.entries.get((id(src), k), "default") for src, k in node.inputs]
        shapes: list = []
        dtypes: list = []
        sparse_in = any(st != "default" for st in stypes)
        for src, k in node.inputs:
            if src.op is None and src.name in var_shapes:
                shapes.append(var_shapes[src.name])
                dtypes.append(var_dtypes.get(src.name))
                continue
            if callable(res) and (sparse_in or node.op.sparse_from_dense):
                res = res()
            if res is None or callable(res):
                shapes.append(None)
                dtypes.append(None)
            elif src.op is None:
                shapes.append(res.var_shapes.get(id(src)))
                dtypes.append(res.var_dtypes.get(id(src)))
            else:
                shapes.append((res.out_shapes.get(id(src)) or [None] * (k + 1))[k])
                dtypes.append((res.out_dtypes.get(id(src)) or [None] * (k + 1))[k])
        attrs = node.kernel_attrs()
        for k, s in enumerate(output_stypes(node.op, stypes, shapes, dtypes, attrs)):
            out.entries[(id(node), k)] = s
        for (src, _), g in zip(node.inputs, input_grad_stypes(node.op, stypes, attrs)):
            if src.op is None:
                grad_votes.setdefault(src.name, []).append(g)
    out.outputs = [out.entries.get((id(n), k), "default") for n, k in graph.outputs]
    # a variable used by several nodes gets the sum of their gradients: sparse only when all are
    for name, votes in grad_votes.items():
        out.grads[name] = votes[0] if all(v == votes[0] for v in votes) else "default"
    return out


def storage_may_change(graph: Graph) -> bool:
    """Whether a graph of dense variables may still hold sparse values: one of its operators
    makes sparse arrays of dense ones (``cast_storage``)."""
    return any(n.op is not None and n.op.sparse_from_dense for n in graph.nodes)
