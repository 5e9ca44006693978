"""Shape and type inference over the IR (MXNet's ``infer_shape`` / ``infer_type``).

Shapes may be *partial*, as in MXNet: ``None`` is a shape of unknown rank and a 0 inside a
shape is an unknown dimension (``mx.np_shape()`` spells those -1 at the API; see
``infer_shape``). Inference alternates sweeps until nothing changes:

* forward, per node: parameter inputs are filled from the data shape by the operator's
  ``param_shapes`` rule (this drives Gluon's deferred initialization; a given parameter shape
  that contradicts it is an error); inputs the operator's ``infer_inputs`` rule ties together
  (elementwise operands, Concat...) share what is known of them; the outputs come from the
  operator's ``infer_shape`` rule, else (no rule, a rule that returns None for inputs it does
  not fit, or inputs of several dtypes and no ``infer_type`` rule) from a run on torch's "meta"
  device, whose first use in a process imports torch's decompositions (over a second). With
  unknown dimensions the run is done twice with each unknown dimension replaced by a different odd
  size (a sentinel): an output dimension equal in both runs is known, one that follows an
  input's sentinel is that input dimension (plus a constant), everything else stays unknown;
* backward: an output dimension learnt downstream flows back to the input dimension it
  follows, and ``infer_inputs`` rules recover inputs from fully known outputs.

Control-flow nodes (``_foreach``, ``_while_loop``, ``_cond``) run their operator's
``infer_subgraphs`` rule, which infers each subgraph as a graph of its own (``infer_graph`` on
it, inputs bound as the node's ``*_locs`` say) and maps what it learns back to the node's inputs
and outputs, as MXNet's ``InferSubgraphShape`` does.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, cast

import torch

from ..base import MXNetError, dtype_from_flag, dtype_name, dtype_np, dtype_torch
from ..ir.graph import Graph, Node, transform
from ..np_semantics import is_np_shape
from ..ops.attrs import parse_value
from ..ops.registry import OpDef

__all__ = ["infer_graph", "infer_shape", "infer_type", "InferResult", "resolve_creation_shapes"]

Shape = Optional[tuple]
_MAX_SWEEPS = 8


def _primes(lo: int, n: int) -> list:
    out: list = []
    k = lo
    while len(out) < n:
        if all(k % p for p in range(2, int(k ** 0.5) + 1)):
            out.append(k)
        k += 1
    return out


# Two sets of sizes that stand in for unknown dimensions (primes: no accidental divisibility).
_SENTINELS_A = _primes(1009, 64)
_SENTINELS_B = _primes(2003, 64)


class _Conflict(Exception):
    pass


def _merge(old: Shape, new: Shape) -> Shape:
    """What two partial shapes of one value say together; _Conflict if they disagree."""
    if new is None:
        return old
    if old is None:
        return tuple(new)
    if len(old) != len(new):
        raise _Conflict()
    out = []
    for a, b in zip(old, new):
        if a and b and a != b:
            raise _Conflict()
        out.append(a or b)
    return tuple(out)


def _fully_known(s: Shape) -> bool:
    return s is not None and all(d > 0 for d in s)


def _parse_shape(text: Any, what: str) -> Shape:
    try:
        # the bounded attribute parser: hostile file text gives MXNetError, not MemoryError
        v = parse_value(text, "shape", where=what) if isinstance(text, str) else text
        return tuple(int(d) for d in v)
    except (ValueError, SyntaxError, TypeError):
        raise MXNetError(f"{what}: invalid shape {text!r}") from None


def _from_api(s: Any, what: str) -> Shape:
    """A shape as users write it -> internal form (None: unknown rank; 0: unknown dim).

    Legacy semantics: () is unknown and 0 an unknown dim. Under ``mx.np_shape()`` None is unknown
    and -1 an unknown dim (a zero-size dim is then indistinguishable from unknown here)."""
    if s is None:
        return None
    s = _parse_shape(s, what)
    if not is_np_shape() and len(s) == 0:
        return None
    return tuple(0 if d < 0 else d for d in s)


def _to_api(s: Shape) -> Any:
    if is_np_shape():
        return None if s is None else tuple(-1 if d == 0 else d for d in s)
    return () if s is None else s


def _hint_dtype(node: Node) -> Optional[str]:
    d = node.attrs.get("__dtype__")
    if d is None:
        return None
    try:
        return dtype_from_flag(int(d))
    except ValueError:
        raise MXNetError(f"variable {node.name!r}: invalid __dtype__ {d!r}") from None


class InferResult:
    """Per-node output shapes/dtypes and per-variable shapes/dtypes after inference."""

    def __init__(self) -> None:
        self.out_shapes: dict = {}   # id(node) -> list of shapes (None when the rank is unknown)
        self.out_dtypes: dict = {}   # id(node) -> list of dtype names (None when unknown)
        self.var_shapes: dict = {}   # id(var) -> shape or None
        self.var_dtypes: dict = {}   # id(var) -> dtype name or None
        self.subgraphs: dict = {}    # id(control-flow node) -> [InferResult of each subgraph]


class _Solver:
    """The shape (and dtype) of every entry ``(id(node), k)``, refined sweep after sweep."""

    def __init__(self, nodes: list) -> None:
        self.nodes = nodes
        self.shape: dict = {}
        self.dtype: dict = {}
        self.links: dict = {}    # id(node) -> [(out k, out dim, input i, input dim, offset)]
        self.done: set = set()   # ids of nodes whose inputs and outputs are all known
        self.subgraphs: dict = {}  # id(control-flow node) -> [InferResult per subgraph]

    def get(self, entry: tuple) -> Shape:
        return self.shape.get((id(entry[0]), entry[1]))

    def refine(self, key: tuple, new: Shape, where: str, what: str) -> bool:
        old = self.shape.get(key)
        try:
            merged = _merge(old, new)
        except _Conflict:
            raise MXNetError(f"shape inconsistent at {where}: {what} is known to be {old} but must be "
                             f"{tuple(new) if new is not None else None}. Check the input shapes and "
                             f"the layer's in_units/in_channels") from None
        if merged == old:
            return False
        self.shape[key] = merged
        return True

    def refine_input(self, n: Node, i: int, new: Shape, why: str) -> bool:
        src, k = n.inputs[i]
        ins = {nm: self.get(e) for nm, e in zip(n.input_names(), n.inputs)}
        slot = n.input_names()[i] if i < len(n.input_names()) else f"input {i}"
        what = f"input {slot!r} ({src.name!r})"
        where = f"node {n.name!r} (operator {n.opname}; {why}; input shapes {ins})"
        return self.refine((id(src), k), new, where, what)


def infer_graph(graph: Graph, shapes: dict, dtypes: Optional[dict] = None, partial: bool = True) -> InferResult:
    """Infer every node's output shapes and dtypes from variable ``shapes``/``dtypes`` (by name).

    ``shapes`` are internal partial shapes (None or 0 dims unknown); a given shape replaces the
    variable's own ``__shape__`` attribute, as in MXNet."""
    dtypes = dtypes or {}
    nodes = graph.nodes
    sv = _Solver(nodes)
    for n in nodes:
        if n.op is None:
            given = shapes.get(n.name)
            s: Shape
            if given is not None:
                s = tuple(int(d) for d in given)
            else:
                hint = n.attrs.get("__shape__")
                s = _from_api(hint, f"variable {n.name!r} __shape__") if hint is not None else None
            sv.shape[(id(n), 0)] = s
            dt = dtypes.get(n.name)
            sv.dtype[(id(n), 0)] = dtype_name(dt) if dt is not None else _hint_dtype(n)
    n_ops = sum(1 for n in nodes if n.op is not None)
    for _ in range(_MAX_SWEEPS):
        changed = False
        for n in nodes:
            if n.op is not None and id(n) not in sv.done:
                changed |= _forward(n, sv)
        if len(sv.done) == n_ops:  # every node computed from fully known inputs
            break
        changed |= _backward(nodes, sv)
        if not changed:
            break
    res = InferResult()
    for n in nodes:
        if n.op is None:
            res.var_shapes[id(n)] = sv.shape[(id(n), 0)]
            res.var_dtypes[id(n)] = sv.dtype[(id(n), 0)]
        nout = n.num_outputs()
        res.out_shapes[id(n)] = [sv.shape.get((id(n), k)) for k in range(nout)]
        res.out_dtypes[id(n)] = [sv.dtype.get((id(n), k)) for k in range(nout)]
    res.subgraphs = sv.subgraphs
    return res


def _forward(n: Node, sv: _Solver) -> bool:
    op = cast(OpDef, n.op)  # called for operator nodes only
    if op.infer_subgraphs_rule is not None:
        return _forward_subgraphs(n, sv)
    changed = False
    ins = [sv.get(e) for e in n.inputs]
    attrs = n.kernel_attrs()
    # 1. unknown parameter shapes from the data shape (a rule fills gaps: PReLU's gamma may
    #    be (1,) or (channels,), so a known parameter shape is the kernel's to check)
    if op.param_shapes is not None and ins and ins[0] is not None:
        try:
            filled = list(op.param_shapes(attrs, list(ins)))
        except (ValueError, TypeError, IndexError, ZeroDivisionError) as e:
            if _fully_known(ins[0]):
                raise MXNetError(f"shape inference for node {n.name!r} ({op.name}) failed: {e}; "
                                 f"input shapes {ins}") from None
            filled = []
        for i, new in enumerate(filled[1:], start=1):
            if new is not None and i < len(n.inputs):
                changed |= sv.refine_input(n, i, tuple(new), "parameter shapes from the data shape")
    # 2. inputs the operator ties together (elementwise operands...) share what is known of them
    rule = op.infer_inputs_rule
    outs = [sv.shape.get((id(n), k)) for k in range(n.num_outputs())]
    if rule is not None:
        ins = [sv.get(e) for e in n.inputs]
        if not all(_fully_known(s) for s in ins):
            try:
                new_ins = rule(attrs, list(ins), list(outs))
            except (ValueError, TypeError, IndexError, ZeroDivisionError):
                new_ins = ins
            for i, new in enumerate(new_ins):
                if new is not None and i < len(n.inputs):
                    changed |= sv.refine_input(n, i, tuple(new), "its inputs must agree")
    # 3. outputs
    ins = [sv.get(e) for e in n.inputs]
    in_dtypes = [sv.dtype.get((id(src), k)) for src, k in n.inputs]
    first = next((d for d in in_dtypes if d is not None), None)
    for (src, k), d in zip(n.inputs, in_dtypes):  # parameters follow the data dtype
        if d is None and first is not None and src.op is None:
            sv.dtype[(id(src), k)] = first
    in_dtypes = [d if d is not None else first for d in in_dtypes]
    nout = n.num_outputs()
    if all(_fully_known(s) for s in ins):
        new_outs, out_dtypes = _exact_outputs(n, ins, in_dtypes, first)
        sv.done.add(id(n))
    elif any(s is None for s in ins):
        new_outs, out_dtypes = [None] * nout, _dtypes_without_shapes(n, in_dtypes, first, nout)
    else:
        new_outs, out_dtypes = _partial_outputs(n, ins, in_dtypes, first, sv)
    for k in range(nout):
        if new_outs[k] is not None:
            changed |= sv.refine((id(n), k), new_outs[k], f"node {n.name!r} (operator {op.name})",
                                 f"output {k}")
        if out_dtypes[k] is not None or (id(n), k) not in sv.dtype:
            sv.dtype[(id(n), k)] = out_dtypes[k]
    if id(n) in sv.done and not all(_fully_known(sv.shape.get((id(n), k))) for k in range(nout)):
        sv.done.discard(id(n))
    return changed


def _forward_subgraphs(n: Node, sv: _Solver) -> bool:
    """A control-flow node: its operator's rule infers the subgraphs (see the module docstring)."""
    op = cast(OpDef, n.op)
    nout = n.num_outputs()
    ins = [sv.get(e) for e in n.inputs]
    in_dt = [sv.dtype.get((id(src), k)) for src, k in n.inputs]
    outs = [sv.shape.get((id(n), k)) for k in range(nout)]
    out_dt = [sv.dtype.get((id(n), k)) for k in range(nout)]
    results = sv.subgraphs.setdefault(id(n), [None] * len(n.subgraphs))

    def solve(k: int, shapes: list, dtypes: list) -> tuple:
        g = n.subgraphs[k]
        variables = g.variables()
        res = infer_graph(g, {v.name: s for v, s in zip(variables, shapes) if s is not None},
                          {v.name: d for v, d in zip(variables, dtypes) if d is not None})
        results[k] = res
        return ([res.var_shapes[id(v)] for v in variables], [res.var_dtypes[id(v)] for v in variables],
                [res.out_shapes[id(m)][j] for m, j in g.outputs], [res.out_dtypes[id(m)][j] for m, j in g.outputs])

    try:
        new_ins, new_in_dt, new_outs, new_out_dt = op.infer_subgraphs_rule(  # type: ignore[misc]
            n.kernel_attrs(), ins, in_dt, outs, out_dt, solve)
    except MXNetError as e:
        raise MXNetError(f"shape inference for node {n.name!r} ({op.name}): {e}") from None
    changed = False
    for i, (s, d) in enumerate(zip(new_ins, new_in_dt)):
        if s is not None:
            changed |= sv.refine_input(n, i, tuple(s), "what its subgraphs need")
        key = (id(n.inputs[i][0]), n.inputs[i][1])
        if d is not None and sv.dtype.get(key) is None:
            sv.dtype[key] = d
    where = f"node {n.name!r} (operator {op.name})"
    for k in range(nout):
        if new_outs[k] is not None:
            changed |= sv.refine((id(n), k), tuple(new_outs[k]), where, f"output {k}")
        if new_out_dt[k] is not None or (id(n), k) not in sv.dtype:
            sv.dtype[(id(n), k)] = new_out_dt[k]
    if all(_fully_known(sv.get(e)) for e in n.inputs) and \
            all(_fully_known(sv.shape.get((id(n), k))) for k in range(nout)):
        sv.done.add(id(n))
    return changed


def _run(n: Node, shapes: list, dtypes: list) -> tuple:
    """Output shapes and dtypes of ``n`` for fully known input shapes (its rule or a meta run)."""
    op = cast(OpDef, n.op)
    attrs = n.kernel_attrs()
    # a rule knows shapes, not type promotion: inputs of several dtypes (and no dtype rule) go
    # to the meta run, which promotes (or rejects) them as the kernel does
    if op.infer_shape_rule is not None and (op.infer_type_rule is not None or _one_dtype(dtypes)):
        outs = op.infer_shape_rule(attrs, list(shapes))
        if outs is not None:
            first = next((d for d in dtypes if d is not None), None)
            return ([tuple(s) if s is not None else None for s in outs],
                    _dtypes_without_shapes(n, dtypes, first or "float32", n.num_outputs()))
    key = None
    if not op.open_attrs and not n.subgraphs:
        try:
            key = (op.name, tuple(sorted((k, repr(v)) for k, v in attrs.items())),
                   tuple(tuple(s) for s in shapes), tuple(dtypes))
            hit = _META_RUNS.get(key)
        except TypeError:  # unhashable shapes: no caching
            key, hit = None, None
        if hit is not None:
            return list(hit[0]), list(hit[1])
    metas = [torch.empty(s, dtype=dtype_torch(d or "float32"), device="meta") for s, d in zip(shapes, dtypes)]
    if op.train_aware:
        attrs["is_train"] = False
    with torch.no_grad():
        out = op.kernel(*metas, **attrs)
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    res = ([tuple(o.shape) for o in outs], [dtype_name(o.dtype) for o in outs])
    if key is not None:
        if len(_META_RUNS) >= _META_RUNS_MAX:
            _META_RUNS.clear()
        _META_RUNS[key] = (tuple(res[0]), tuple(res[1]))
    return res


def _one_dtype(dtypes: list) -> bool:
    return len({d for d in dtypes if d is not None}) <= 1


# Meta runs by (operator, attributes, input shapes, dtypes): binding an unrolled RNN infers the
# same cell's operators hundreds of times, and a meta run costs about a millisecond.
_META_RUNS: dict = {}
_META_RUNS_MAX = 8192


def _exact_outputs(n: Node, ins: list, in_dtypes: list, first: Optional[str]) -> tuple:
    op = cast(OpDef, n.op)
    try:
        return _run(n, ins, in_dtypes)
    except MXNetError as e:
        raise MXNetError(f"shape inference for node {n.name!r} ({op.name}): {e}") from None
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError, ZeroDivisionError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise MXNetError(f"shape inference failed at node {n.name!r} (operator {op.name}): {msg}\n"
                         f"  input shapes: {dict(zip(n.input_names(), ins))}\n"
                         f"  attributes: {n.kernel_attrs()}") from None


def _partial_outputs(n: Node, ins: list, in_dtypes: list, first: Optional[str], sv: _Solver) -> tuple:
    """Outputs for inputs with unknown dims, from two sentinel runs (see the module docstring).

    Each unknown dim gets its own sentinel first; operators that need some of them equal
    (Concat's other axes...) get one shared sentinel instead, and then no dim is linked back."""
    unknown = [(i, d) for i, s in enumerate(ins) for d, v in enumerate(s) if v == 0]
    nout = n.num_outputs()
    if len(unknown) > len(_SENTINELS_A):
        return [None] * nout, _dtypes_without_shapes(n, in_dtypes, first, nout)
    for distinct in (True, False):
        sa = _SENTINELS_A if distinct else [_SENTINELS_A[0]] * len(unknown)
        sb = _SENTINELS_B if distinct else [_SENTINELS_B[0]] * len(unknown)
        try:
            oa, dts = _run(n, _substitute(ins, unknown, sa), in_dtypes)
            ob, _ = _run(n, _substitute(ins, unknown, sb), in_dtypes)
        except Exception:  # noqa: BLE001 - any failure on made-up sizes only means "not this way"
            continue
        outs: list = []
        links: list = []
        for k, (a, b) in enumerate(zip(oa, ob)):
            if a is None or b is None or len(a) != len(b):
                outs.append(None)
                continue
            dims = []
            for j, (x, y) in enumerate(zip(a, b)):
                if x == y:
                    dims.append(x)
                    continue
                dims.append(0)
                if distinct:
                    for u, (i, d) in enumerate(unknown):
                        if x - sa[u] == y - sb[u]:
                            links.append((k, j, i, d, x - sa[u]))
                            break
            outs.append(tuple(dims))
        sv.links[id(n)] = links
        op = cast(OpDef, n.op)
        if op.partial_outputs_rule is not None:
            outs = list(op.partial_outputs_rule(n.kernel_attrs(), list(ins), outs))
            sv.links[id(n)] = [lk for lk in links if outs[lk[0]] is not None and outs[lk[0]][lk[1]] == 0]
        return outs, dts
    return [None] * nout, _dtypes_without_shapes(n, in_dtypes, first, nout)


def _substitute(ins: list, unknown: list, sizes: list) -> list:
    out = [list(s) for s in ins]
    for (i, d), v in zip(unknown, sizes):
        out[i][d] = v
    return [tuple(s) for s in out]


def _backward(nodes: list, sv: _Solver) -> bool:
    """Known output dims flow back to the inputs they follow; ``infer_inputs`` rules run on
    fully known outputs."""
    changed = False
    for n in reversed(nodes):
        if n.op is None or id(n) in sv.done:
            continue
        outs = [sv.shape.get((id(n), k)) for k in range(n.num_outputs())]
        for k, j, i, d, offset in sv.links.get(id(n), ()):
            o, cur = outs[k], sv.get(n.inputs[i])
            if o is None or not o[j] or cur is None or cur[d] or o[j] - offset <= 0:
                continue
            new = list(cur)
            new[d] = o[j] - offset
            changed |= sv.refine_input(n, i, tuple(new), f"output {k} follows this input")
        rule = n.op.infer_inputs_rule
        if rule is None or not all(_fully_known(s) for s in outs):
            continue
        ins = [sv.get(e) for e in n.inputs]
        try:
            new_ins = rule(n.kernel_attrs(), list(ins), outs)
        except (ValueError, TypeError, IndexError, ZeroDivisionError):
            continue
        for i, (old, new) in enumerate(zip(ins, new_ins)):
            if new is not None and new != old:
                changed |= sv.refine_input(n, i, tuple(new), "from its output shapes")
    return changed


def _dtypes_without_shapes(n: Node, in_dtypes: list, first: Optional[str], nout: int) -> list:
    """Output dtypes when shapes are unknown (no meta run possible): the operator's own rule,
    else its ``dtype`` attribute (Cast, creation ops...), else the first known input dtype."""
    op = cast(OpDef, n.op)  # called for operator nodes only
    if op.infer_type_rule is not None:
        return list(op.infer_type_rule(n.kernel_attrs(), in_dtypes))
    dt = n.attrs.get("dtype")
    if isinstance(dt, str) and op.dtype_is_output:
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


def _unknown_creation_shape(n: Node) -> bool:
    op = n.op
    if op is None or n.inputs or op.sized_by_inference is None or op.infer_shape_rule is None:
        return False
    return 0 in op.infer_shape_rule(n.kernel_attrs(), [])[0]


def resolve_creation_shapes(graph: Graph, shapes: dict, dtypes: Optional[dict] = None) -> Graph:
    """``graph`` with the unknown dimensions of array-creating nodes (``sym.ones((-1, -1))``)
    replaced by what inference learns from the other inputs; ``graph`` itself when it has none.
    Raises MXNetError naming the node when a size stays unknown."""
    if not any(_unknown_creation_shape(n) for n in graph.nodes):
        return graph
    res = infer_graph(graph, shapes, dtypes)

    def visit(n: Node, inputs: tuple) -> Optional[list]:
        if not _unknown_creation_shape(n):
            return None
        s = res.out_shapes[id(n)][0]
        if not _fully_known(s):
            raise MXNetError(f"cannot infer the shape of node {n.name!r} ({n.opname}, attributes "
                             f"{n.kernel_attrs()}): its unknown dimensions stay unknown ({s}); give the "
                             f"full shape (or range) or connect it to arrays of known shape")
        sized = cast(OpDef, n.op).sized_by_inference
        return [(Node(n.op, n.name, sized(dict(n.attrs), tuple(s)), inputs), 0)]  # type: ignore[misc]

    return Graph(transform(graph.outputs, visit))


def infer_shape(sym: Any, args: Sequence, kwargs: dict, partial: bool) -> tuple:
    """(arg_shapes, out_shapes, aux_shapes) in MXNet's spelling of unknowns (see ``_to_api``);
    ``(None, None, None)`` when not ``partial`` and some shape stays unknown."""
    known = _collect_known(sym, args, kwargs, "infer_shape")
    shapes = {k: _from_api(v, f"infer_shape({k}=...)") for k, v in known.items()}
    g = sym._graph()
    res = infer_graph(g, {k: v for k, v in shapes.items() if v is not None})
    arg_shapes = [res.var_shapes[id(v)] for v in g.arguments()]
    aux_shapes = [res.var_shapes[id(v)] for v in g.aux_variables()]
    out_shapes = [res.out_shapes[id(n)][k] for n, k in g.outputs]
    if not partial and not all(_fully_known(s) for s in arg_shapes + out_shapes + aux_shapes):
        return None, None, None
    return ([_to_api(s) for s in arg_shapes], [_to_api(s) for s in out_shapes],
            [_to_api(s) for s in aux_shapes])


def infer_type(sym: Any, args: Sequence, kwargs: dict, partial: bool) -> tuple:
    known = _collect_known(sym, args, kwargs, "infer_type")
    g = sym._graph()
    res = infer_graph(g, {}, known)
    dt = lambda d: dtype_np(d) if d is not None else None  # noqa: E731
    arg_t = [dt(res.var_dtypes[id(v)]) for v in g.arguments()]
    aux_t = [dt(res.var_dtypes[id(v)]) for v in g.aux_variables()]
    out_t = [dt(res.out_dtypes[id(n)][k]) for n, k in g.outputs]
    if not partial and any(t is None for t in arg_t + out_t + aux_t):
        return None, None, None
    return arg_t, out_t, aux_t
