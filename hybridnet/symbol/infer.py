"""Shape and type inference over the IR (MXNet's ``infer_shape`` / ``infer_type``).

Forward over the nodes in order: a node whose input shapes are known is run on torch's "meta"
device (or its explicit ``infer_shape`` rule); parameter inputs with unknown shapes are filled
by the operator's ``param_shapes`` rule from the data shape (this drives Gluon's deferred
initialization). Unknown dimensions are 0, as in MXNet 1.x.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, cast

import torch

from ..base import MXNetError, dtype_from_flag, dtype_name, dtype_np, dtype_torch
from ..ir.graph import Graph, Node
from ..ops.attrs import parse_value
from ..ops.registry import OpDef

__all__ = ["infer_graph", "infer_shape", "infer_type", "InferResult"]


def _hint_shape(node: Node) -> Optional[tuple]:
    s = node.attrs.get("__shape__")
    if s is None:
        return None
    try:
        # the bounded attribute parser: hostile file text gives MXNetError, not MemoryError
        v = parse_value(s, "shape", where=f"{node.name}.__shape__") if isinstance(s, str) else s
        return tuple(int(d) for d in v)
    except (ValueError, SyntaxError, TypeError):
        raise MXNetError(f"variable {node.name!r}: invalid __shape__ {s!r}") from None


def _hint_dtype(node: Node) -> Optional[str]:
    d = node.attrs.get("__dtype__")
    if d is None:
        return None
    try:
        return dtype_from_flag(int(d))
    except ValueError:
        raise MXNetError(f"variable {node.name!r}: invalid __dtype__ {d!r}") from None


def _merge(name: str, old: Optional[tuple], new: Optional[tuple], where: str) -> Optional[tuple]:
    if new is None:
        return old
    if old is None:
        return tuple(new)
    if len(old) != len(new):
        if all(d == 0 for d in old):
            return tuple(new)
        raise MXNetError(f"shape inconsistent for {name!r} at {where}: {old} vs {new}")
    out = []
    for a, b in zip(old, new):
        if a and b and a != b:
            raise MXNetError(f"shape inconsistent for {name!r} at {where}: known {old}, inferred {new}. "
                             f"Check the input shape and the layer's in_units/in_channels")
        out.append(a or b)
    return tuple(out)


class InferResult:
    """Per-node output shapes/dtypes and per-variable shapes/dtypes after inference."""

    def __init__(self) -> None:
        self.out_shapes: dict = {}   # id(node) -> list of shapes (None when unknown)
        self.out_dtypes: dict = {}   # id(node) -> list of dtype names (None when unknown)
        self.var_shapes: dict = {}   # id(var) -> shape or None
        self.var_dtypes: dict = {}   # id(var) -> dtype name or None
        self.out_hints: dict = {}    # (id(node), k) -> shape a consumer requires (backward inference)


def _fully_known(s: Optional[tuple]) -> bool:
    return s is not None and all(d > 0 for d in s)


def infer_graph(graph: Graph, shapes: dict, dtypes: Optional[dict] = None, partial: bool = True) -> InferResult:
    """Infer every node's output shapes and dtypes from variable ``shapes``/``dtypes`` (by name)."""
    dtypes = dtypes or {}
    res = InferResult()
    nodes = graph.nodes
    for n in nodes:
        if n.op is None:
            s = shapes.get(n.name)
            hint = _hint_shape(n)
            s = _merge(n.name, hint, tuple(s) if s is not None else None, "the given shapes") if s is not None else hint
            res.var_shapes[id(n)] = s
            dt = dtypes.get(n.name)
            res.var_dtypes[id(n)] = dtype_name(dt) if dt is not None else _hint_dtype(n)
    # forward sweeps, with a backward sweep in between when some shape is still unknown: shapes
    # required by a consumer (param_shapes, infer_inputs rules) flow back to their producers
    for sweep in range(4):
        for n in nodes:
            if n.op is None:
                res.out_shapes[id(n)] = [res.var_shapes[id(n)]]
                res.out_dtypes[id(n)] = [res.var_dtypes[id(n)]]
                continue
            _infer_node(n, res)
        if sweep == 3 or all(_fully_known(s) for n in nodes for s in res.out_shapes[id(n)] if s != ()):
            break
        if not _backward_sweep(nodes, res) and sweep >= 1:
            break
    return res


def _require(res: InferResult, src: Node, idx: int, shape: tuple, where: str) -> bool:
    """Record that output ``idx`` of ``src`` must have ``shape``; True if that taught us something."""
    if src.op is None:
        old = res.var_shapes[id(src)]
        merged = _merge(src.name, old, shape, where)
        res.var_shapes[id(src)] = merged
        res.out_shapes[id(src)] = [merged]
        return merged != old
    key = (id(src), idx)
    if res.out_hints.get(key) == shape or _fully_known(res.out_shapes.get(id(src), [None] * (idx + 1))[idx]):
        return False
    res.out_hints[key] = shape
    return True


def _backward_sweep(nodes: list, res: InferResult) -> bool:
    changed = False
    for n in reversed(nodes):
        rule = None if n.op is None else n.op.infer_inputs_rule
        if rule is None:
            continue
        outs = [s if s is not None else res.out_hints.get((id(n), k)) for k, s in enumerate(res.out_shapes[id(n)])]
        if not all(_fully_known(s) for s in outs):
            continue
        ins = [res.out_shapes.get(id(src), [None] * (k + 1))[k] for src, k in n.inputs]
        new = rule(n.kernel_attrs(), list(ins), outs)
        for (src, k), old, shape in zip(n.inputs, ins, new):
            if shape is not None and shape != old and _fully_known(tuple(shape)):
                changed |= _require(res, src, k, tuple(shape), f"node {n.name!r} ({n.op.name})")
    return changed


def _infer_node(n: Node, res: InferResult) -> None:
    in_shapes = [res.out_shapes.get(id(src), [None] * (k + 1))[k] for src, k in n.inputs]
    in_dtypes = [res.out_dtypes.get(id(src), [None] * (k + 1))[k] for src, k in n.inputs]
    op = cast(OpDef, n.op)  # called for operator nodes only
    if op.param_shapes is not None and in_shapes and _fully_known(in_shapes[0]):
        try:
            filled = list(op.param_shapes(n.kernel_attrs(), list(in_shapes)))
        except (ValueError, TypeError, IndexError, ZeroDivisionError) as e:
            raise MXNetError(f"shape inference for node {n.name!r} ({op.name}) failed: {e}; "
                             f"input shapes {in_shapes}") from None
        for k, ((src, idx), new) in enumerate(zip(n.inputs, filled)):
            if new is None:
                continue
            if src.op is None:
                merged = _merge(src.name, res.var_shapes[id(src)], tuple(new), f"node {n.name!r} ({op.name})")
                res.var_shapes[id(src)] = merged
                res.out_shapes[id(src)] = [merged]
                in_shapes[k] = merged
            elif in_shapes[k] is None and _fully_known(tuple(new)):
                res.out_hints[(id(src), idx)] = tuple(new)  # an operator output this node needs
    # dtype: parameters follow the data dtype when unknown
    first = next((d for d in in_dtypes if d is not None), None)
    for k, ((src, idx), d) in enumerate(zip(n.inputs, in_dtypes)):
        if d is None and first is not None and src.op is None:
            res.var_dtypes[id(src)] = first
            res.out_dtypes[id(src)] = [first]
            in_dtypes[k] = first
    nout = n.num_outputs()
    if not all(_fully_known(s) or (s is not None and len(s) == 0) for s in in_shapes):
        res.out_shapes[id(n)] = [None] * nout
        res.out_dtypes[id(n)] = _dtypes_without_shapes(n, in_dtypes, first, nout)
        return
    attrs = n.kernel_attrs()
    if op.infer_shape_rule is not None:
        try:
            outs = op.infer_shape_rule(attrs, in_shapes)
        except (ValueError, TypeError, IndexError) as e:
            raise MXNetError(f"shape inference for node {n.name!r} ({op.name}) failed: {e}; "
                             f"input shapes {in_shapes}") from None
        res.out_shapes[id(n)] = [tuple(s) if s is not None else None for s in outs]
        res.out_dtypes[id(n)] = _dtypes_without_shapes(n, in_dtypes, first or "float32", nout)
        return
    metas = [torch.empty(s, dtype=dtype_torch(d or "float32"), device="meta") for s, d in zip(in_shapes, in_dtypes)]
    if op.train_aware:
        attrs["is_train"] = False
    try:
        with torch.no_grad():
            out = op.kernel(*metas, **attrs)
    except MXNetError as e:
        raise MXNetError(f"shape inference for node {n.name!r} ({op.name}): {e}") from None
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise MXNetError(f"shape inference failed at node {n.name!r} (operator {op.name}): {msg}\n"
                         f"  input shapes: {dict(zip(n.input_names(), in_shapes))}\n"
                         f"  attributes: {attrs}") from None
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    res.out_shapes[id(n)] = [tuple(o.shape) for o in outs]
    res.out_dtypes[id(n)] = [dtype_name(o.dtype) for o in outs]


def _dtypes_without_shapes(n: Node, in_dtypes: list, first: Optional[str], nout: int) -> list:
    """Output dtypes when shapes are unknown (no meta run possible): the operator's own rule,
    else its ``dtype`` attribute (Cast, creation ops...), else the first known input dtype."""
    op = cast(OpDef, n.op)  # called for operator nodes only
    if op.infer_type_rule is not None:
        return list(op.infer_type_rule(n.kernel_attrs(), in_dtypes))
    dt = n.attrs.get("dtype")
    if isinstance(dt, str) and op.name != "Embedding":
        return [dtype_name(dt)] * nout
    return [first] * nout


def _collect_known(sym: Any, args: Sequence, kwargs: dict, what: str) -> dict:
    known: dict = {}
    if args:
        names = sym.list_arguments()
        if len(args) > len(names):
            raise MXNetError(f"{what}: {len(args)} positional values for {len(names)} arguments {names}")
        for n, s in zip(names, args):
            if s is not None:
                known[n] = s
    inputs = set(sym.list_inputs())
    for k, v in kwargs.items():
        if k not in inputs:
            raise MXNetError(f"{what}: {k!r} is not an input of the symbol; inputs are {sorted(inputs)}")
        if v is not None:
            known[k] = v
    return known


def infer_shape(sym: Any, args: Sequence, kwargs: dict, partial: bool) -> tuple:
    """(arg_shapes, out_shapes, aux_shapes); unknown dims are 0; all None if not partial and unknown."""
    known = _collect_known(sym, args, kwargs, "infer_shape")
    known = {k: tuple(v) for k, v in known.items()}
    g = sym._graph()
    res = infer_graph(g, known)
    arg_shapes = [res.var_shapes[id(v)] for v in g.arguments()]
    aux_shapes = [res.var_shapes[id(v)] for v in g.aux_variables()]
    out_shapes = [res.out_shapes[id(n)][k] for n, k in g.outputs]
    if partial:
        fix = lambda s: s if s is not None else ()  # noqa: E731
        return [fix(s) for s in arg_shapes], [fix(s) for s in out_shapes], [fix(s) for s in aux_shapes]
    if not all(_fully_known(s) or s == () for s in arg_shapes + out_shapes + aux_shapes):
        unknown = [v.name for v, s in zip(g.arguments(), arg_shapes) if not _fully_known(s)]
        if unknown:
            return None, None, None
    return arg_shapes, out_shapes, aux_shapes


def infer_type(sym: Any, args: Sequence, kwargs: dict, partial: bool) -> tuple:
    known = _collect_known(sym, args, kwargs, "infer_type")
    g = sym._graph()
    shapes = {v.name: _hint_shape(v) for v in g.variables()}
    # types need shapes to run kernels on meta; fall back to propagation when shapes unknown
    res = infer_graph(g, {k: v for k, v in shapes.items() if _fully_known(v)}, known)
    dt = lambda d: dtype_np(d) if d is not None else None  # noqa: E731
    arg_t = [dt(res.var_dtypes[id(v)]) for v in g.arguments()]
    aux_t = [dt(res.var_dtypes[id(v)]) for v in g.aux_variables()]
    out_t = [dt(res.out_dtypes[id(n)][k]) for n, k in g.outputs]
    if not partial and any(t is None for t in arg_t + out_t + aux_t):
        return None, None, None
    return arg_t, out_t, aux_t
