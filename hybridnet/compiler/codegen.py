"""Graph -> Python source of one straight-line function, then ``compile()``.

The generated function takes the graph's variables as torch tensors (in a given order) plus
``_train`` and returns the graph outputs as a tuple. Every operator node becomes one direct call
of its registry kernel with literal keyword attributes; intermediates are deleted right after
their last use so memory is released early. The subgraphs of a control-flow node become
functions of their own, generated the same way into the same source (before the function that
uses them) and handed to the node's kernel, which calls them in its loop. The source is kept
(``CompiledGraph.source``) so users and tests can read exactly what runs.

In training (``_train``) a view a node returns (``OpDef.returns_view``: a slice, split,
swapaxes, broadcast...) is handed on in the memory layout eager mode hands on: eager operators
return new memory (a copy of a view keeps a dense view's strides and packs any other), and a
kernel reduces a strided view in another order than the packed copy, so training through the
compiled graph would round differently from eager training.
"""
from __future__ import annotations

import keyword
import math
import re
from typing import Any, Callable, Optional, Sequence

from ..ir.graph import Graph, Node, collector_paused

__all__ = ["CompiledGraph", "compile_graph", "eager_layout"]


def _packed(t: Any) -> bool:
    """Whether ``t`` covers its memory without gaps or overlaps (a permutation of a contiguous
    array, e.g. a transpose): then eager mode's copy keeps its strides."""
    expected = 1
    for stride, size in sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def eager_layout(t: Any) -> Any:
    """A view in the layout eager mode gives it (``NDArray`` copies a view, ``clone`` keeping a
    packed view's strides and packing any other): the view itself when the copy would have its
    strides (contiguous or packed: a transpose), else the packed copy (a slice with gaps, a
    broadcast)."""
    return t if t.is_contiguous() or _packed(t) else t.clone()


_EAGER_LAYOUT = "_eager_layout"


def _is_literal(v: Any) -> bool:
    """Whether ``repr(v)`` is a Python literal that evaluates back to ``v`` (exact types only:
    a subclass could override ``__repr__``)."""
    t = type(v)
    if v is None or t in (bool, int, str):
        return True
    if t is float:
        return math.isfinite(v)
    if t in (tuple, list):
        return all(_is_literal(x) for x in v)
    return False


def _comment(name: str) -> str:
    """A node name as it may appear in the source: ``ascii()`` of it, inside a comment.

    ``ascii`` escapes every control and non-ASCII character, so no line break (``\\n``,
    ``\\r``, form feed, U+2028...) can end the comment and start code."""
    return "# " + ascii(name)[:120]


_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")
_MAX_IDENT = 48


def _ident(name: str, used: set, prefix: str = "v") -> str:
    """A fresh ASCII identifier derived from ``name`` (which may come from a file).

    Only ``[A-Za-z0-9_]`` survives, so Unicode look-alikes that Python would fold together
    under NFKC, control characters and quotes can never reach the source or merge two values.
    """
    if len(name) <= _MAX_IDENT and name.isascii() and name.isidentifier() \
            and not name.startswith("__") and not keyword.iskeyword(name):
        base = name  # already what the rule below makes of it (the common case, checked fast)
    else:
        base = _NOT_IDENT.sub("_", name)[:_MAX_IDENT]
        if not base or base[0].isdigit() or keyword.iskeyword(base) or base.startswith("__"):
            base = f"{prefix}_{base}"
    cand, k = base, 1
    while cand in used:
        cand = f"{base}_{k}"
        k += 1
    used.add(cand)
    return cand


class CompiledGraph:
    """A graph compiled to a Python function ``fn(*tensors, _train=False) -> tuple``."""

    def __init__(self, graph: Graph, input_names: Sequence[str], fn: Callable, source: str):
        self.graph = graph
        self.input_names = list(input_names)
        self.fn = fn
        self.source = source

    def __call__(self, *tensors: Any, _train: bool = False) -> tuple:
        return self.fn(*tensors, _train=_train)

    def __repr__(self) -> str:
        return f"<CompiledGraph {len(self.graph.nodes)} nodes>\n{self.source}"


def compile_graph(graph: Graph, input_order: Optional[Sequence[Node]] = None,
                  fn_name: str = "graph_fn") -> CompiledGraph:
    """Compile ``graph``; arguments follow ``input_order`` (default: the graph's variables)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", fn_name) or keyword.iskeyword(fn_name):
        raise ValueError(f"compile_graph: fn_name must be an ASCII identifier, got {fn_name!r}")
    variables = list(input_order) if input_order is not None else graph.variables()
    used: set = {"_train", fn_name, _EAGER_LAYOUT}
    g: dict[str, Any] = {_EAGER_LAYOUT: eager_layout}
    functions: list = []
    with collector_paused():  # lines and syntax trees by the hundred thousand on large graphs
        _emit_function(graph, variables, fn_name, used, g, {}, functions)
        src = "\n".join(functions)
        code = compile(src, f"<hybridnet graph {fn_name}>", "exec")
    exec(code, g)  # noqa: S102 - source generated above from the graph
    fn = g[fn_name]
    fn.__source__ = src
    return CompiledGraph(graph, [v.name for v in variables], fn, src)


def _emit_function(graph: Graph, variables: Sequence[Node], fn_name: str, used: set, g: dict,
                   kernels: dict, functions: list) -> None:
    """Append the source of ``fn_name`` computing ``graph`` (and, first, of the functions of its
    subgraphs) to ``functions``; constants and kernels go into the module globals ``g``.
    ``used`` holds every identifier taken in the module (kernels, constants, functions, values)."""
    nodes = graph.nodes
    names: dict = {}
    params = []
    for v in variables:
        ident = _ident(v.name, used)
        names[(id(v), 0)] = ident
        params.append(ident)
    missing = [v.name for v in graph.variables() if (id(v), 0) not in names]
    if missing:
        raise ValueError(f"compile_graph: no argument given for variables {missing}")

    # the values whose last use is each node, for early release
    last_use: dict = {}
    for i, n in enumerate(nodes):
        for src, k in n.inputs:
            last_use[(id(src), k)] = i
    for n, k in graph.outputs:
        last_use.pop((id(n), k), None)
    dies_at: dict = {}
    for key, i in last_use.items():
        dies_at.setdefault(i, []).append(key)

    lines = []
    for i, n in enumerate(nodes):
        op = n.op
        if op is None:
            continue
        kname = kernels.get(id(op.kernel))
        if kname is None:
            kname = _ident(op.name, used, "op")
            kernels[id(op.kernel)] = kname
            g[kname] = op.kernel
        args = [names[(id(src), k)] for src, k in n.inputs]
        kw = []
        declared = op.attrs
        open_attrs: dict = {}
        for key, val in op.kernel_attrs(n.attrs).items():
            if key not in declared:
                open_attrs[key] = val
            elif _is_literal(val):
                kw.append(f"{key}={val!r}")
            else:
                cname = _ident(f"c{i}_{key}", used, "c")
                g[cname] = val
                kw.append(f"{key}={cname}")
        if open_attrs:
            # undeclared attribute names (Custom's kwargs, possibly from a file) never become
            # source text: they travel as one dict constant under a name made here
            cname = _ident(f"c{i}_params", used, "c")
            g[cname] = open_attrs
            kw.append(f"**{cname}")
        if n.subgraphs:
            subs = []
            for k, sub in enumerate(n.subgraphs):
                sname = _ident(f"{n.name}_subgraph{k}", used, "f")
                _emit_function(sub, sub.variables(), sname, used, g, kernels, functions)
                subs.append(sname)
            kw.append(f"subgraphs=({', '.join(subs)},)")
        if op.train_aware:
            kw.append("is_train=_train")
        call = f"{kname}({', '.join(args + kw)})"
        nout = n.num_outputs()
        outs = []
        for k in range(nout):
            o = _ident(n.name if nout == 1 else f"{n.name}_{k}", used)
            names[(id(n), k)] = o
            outs.append(o)
        lines.append(f"    {', '.join(outs)} = {call}  {_comment(n.name)}")
        if op.returns_view and not n.subgraphs:
            lines.append("    if _train:")
            lines.extend(f"        {o} = {_EAGER_LAYOUT}({o})" for o in outs)
        dying = dies_at.get(i)
        if dying:
            lines.append(f"    del {', '.join(sorted([names[key] for key in dying]))}")
    ret = [names[(id(n), k)] for n, k in graph.outputs]
    lines.append(f"    return ({', '.join(ret)}{',' if len(ret) == 1 else ''})")
    functions.append(f"def {fn_name}({', '.join(params + ['_train=False'])}):\n" + "\n".join(lines) + "\n")
