"""``mx.sym.contrib`` (operators filled in from the registry at import) and the graph forms of
``foreach``, ``while_loop`` and ``cond`` (MXNet 1.9.1's python/mxnet/symbol/contrib.py).

The user's function is traced once with Symbols inside ``AttrScope(__subgraph_name__=...)``,
so every node it creates is tagged as part of the subgraph. The subgraph is then *cut* out, as
MXNet's ``MXSymbolCutSubgraph`` does: walking back from the function's results through tagged
nodes, every value from outside (a variable such as a parameter, or a node computed before the
loop) becomes a fresh variable of the subgraph and an extra input of the control-flow node.
The node's ``*_locs`` attributes say which of its inputs feeds which subgraph input.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Optional, Sequence

from .. import attribute as _attribute
from .. import name as _name
from ..attribute import AttrScope
from ..base import MXNetError
from ..ir.graph import Graph, Node
from ..nesting import flatten as _nest_flatten
from ..nesting import regroup as _regroup
from ..ops import registry as _reg
from .symbol import Symbol, _hidden, sym_invoke, var

__all__ = ["foreach", "while_loop", "cond", "ControlFlowError"]

_SUBGRAPH = "__subgraph_name__"


class ControlFlowError(MXNetError, AssertionError):
    """A loop or branch function that cannot become a subgraph. MXNet 1.9.1 raises
    AssertionError for these, so ``except AssertionError`` keeps working."""


# ---- nested lists of Symbols <-> flat lists (MXNet's _flatten/_regroup) -------------------------
def _symbol_leaf(arg: Any) -> Optional[tuple]:
    """A Symbol of n > 1 outputs stands for its n outputs, one Symbol each."""
    if not isinstance(arg, Symbol):
        return None
    n = len(arg._entries)
    if n == 1:
        return [arg], 0
    return [Symbol([e]) for e in arg._entries], n


def _flatten(args: Any, what: str) -> tuple:
    return _nest_flatten(args, _symbol_leaf, lambda bad: TypeError(
        f"{what} must be a Symbol or a (nested) list of Symbols, but got "
        f"{type(bad).__name__} {bad!r:.80}"))


def _unique_subgraph_name(name: str) -> str:
    """``name`` numbered per name (``AttrScope._subgraph_names``), under the enclosing
    subgraph's name when nested (``outer$inner0``), as MXNet names subgraphs."""
    outer = _attribute.current()._attr.get(_SUBGRAPH, "")
    if outer:
        name = f"{outer}${name}"
    counts = AttrScope._subgraph_names
    counts[name] += 1
    return f"{name}{counts[name] - 1}"


def _placeholder_name(s: Symbol, taken: set) -> str:
    """MXNet names the variable standing for a loop input ``<name>-<output index>``."""
    node, k = s._entries[0]
    base = f"{node.name}-{k}"
    name, n = base, 1
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    taken.add(name)
    return name


def _placeholders(flat: list) -> list:
    taken: set = set()
    return [var(_placeholder_name(s, taken)) for s in flat]


# ---- cutting a traced function out of the graph ------------------------------------------------
def _wrap_outputs(results: list, sub_name: str, also: Sequence = ()) -> list:
    """MXNet's rule for a subgraph's outputs: a result that is a variable, was computed outside
    the function, or repeats an entry in ``also``, is passed through ``identity`` (a node of the
    subgraph), so every output is a distinct node made inside. Call inside the scope."""
    seen = {_key(s._entries[0]) for s in also}
    out = []
    for s in results:
        node, _ = s._entries[0]
        if node.op is None or node.attrs.get(_SUBGRAPH) != sub_name or _key(s._entries[0]) in seen:
            s = sym_invoke(_reg.get("identity"), (s,), {}, hint="identity")
        out.append(s)
    return out


def _key(entry: tuple) -> tuple:
    return (id(entry[0]), entry[1])


class _Cut:
    """A subgraph cut out of a traced function: ``graph`` and, for each of its inputs in
    order, what feeds it: ``("placeholder", i)`` or ``("outside", entry)``."""

    def __init__(self, heads: list, sub_name: str, placeholders: Sequence[Node]):
        ph = {id(p): i for i, p in enumerate(placeholders)}
        inside = {id(p) for p in placeholders}
        taken = {p.name for p in placeholders}
        new: dict = {id(p): p for p in placeholders}
        cut_vars: dict = {}
        sources: dict = {}

        def is_inside(n: Node) -> bool:
            return id(n) in inside or (n.op is not None and n.attrs.get(_SUBGRAPH) == sub_name)

        def mapped(src: Node, k: int) -> tuple:
            if is_inside(src):
                return (new[id(src)], k)
            v = cut_vars.get((id(src), k))
            if v is None:
                base = src.name if src.op is None else src.output_names()[k]
                name, n = base, 1
                while name in taken:
                    name = f"{base}_{n}"
                    n += 1
                taken.add(name)
                v = Node(None, name)
                cut_vars[(id(src), k)] = v
                sources[id(v)] = (src, k)
            return (v, 0)

        for node in _inside_order([n for n, _ in heads], is_inside):
            if id(node) in new:
                continue
            inputs = [mapped(src, k) for src, k in node.inputs]
            same = all(a[0] is b[0] and a[1] == b[1] for a, b in zip(inputs, node.inputs))
            new[id(node)] = node if same else node.with_inputs(inputs)
        self.graph = Graph([(new[id(n)], k) for n, k in heads])
        self.inputs: list[tuple[str, Any]] = [
            ("placeholder", ph[id(v)]) if id(v) in ph else ("outside", sources[id(v)])
            for v in self.graph.variables()]

    def placeholder_locs(self, count: int) -> list:
        """Position among the subgraph's inputs of each placeholder (-1: unused)."""
        locs = [-1] * count
        for pos, (kind, what) in enumerate(self.inputs):
            if kind == "placeholder":
                locs[what] = pos
        return locs


def _inside_order(heads: list, is_inside: Callable[[Node], bool]) -> list:
    """Post-order of the nodes reachable from ``heads`` through inside nodes only."""
    order: list = []
    visited: set = set()
    for head in heads:
        if id(head) in visited or not is_inside(head):
            continue
        stack: list = [(head, 0)]
        visited.add(id(head))
        while stack:
            node, k = stack[-1]
            if k < len(node.inputs):
                stack[-1] = (node, k + 1)
                child = node.inputs[k][0]
                if id(child) not in visited and is_inside(child):
                    visited.add(id(child))
                    stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order


class _Inputs:
    """The control-flow node's inputs: fixed ones first, then outside values each once."""

    def __init__(self, fixed: Sequence[tuple] = ()):
        self.entries: list = list(fixed)
        self._outside: dict = {}

    def add(self, entry: tuple) -> int:
        key = _key(entry)
        pos = self._outside.get(key)
        if pos is None:
            pos = len(self.entries)
            self.entries.append(entry)
            self._outside[key] = pos
        return pos


def _control_node(opname: str, hint: str, inputs: list, attrs: dict, subgraphs: list) -> Symbol:
    op = _reg.get(opname)
    node_name = _name.current().get(None, hint)
    attrs = {"num_args": len(inputs) + len(subgraphs), **attrs, **_hidden(None)}
    node = Node(op, node_name, attrs, inputs, subgraphs)
    return Symbol([(node, k) for k in range(node.num_outputs())])


def _outputs(node: Symbol, start: int, count: int) -> list:
    """Outputs ``start .. start+count-1`` of a control-flow node, each a Symbol."""
    return [Symbol([e]) for e in node._entries[start:start + count]]


def _check_symbols(flat: list, what: str) -> None:
    for s in flat:
        if not isinstance(s, Symbol):
            raise TypeError(f"{what} should be a Symbol or a nested list of Symbols, but contains "
                            f"{type(s).__name__} {s!r:.60}")


# ---- foreach -----------------------------------------------------------------------------------
def foreach(body: Callable, data: Any, init_states: Any, name: str = "foreach") -> tuple:
    """Run ``body(data_slice, states) -> (outputs, new_states)`` over the first axis of ``data``,
    as one ``_foreach`` node (MXNet's ``sym.contrib.foreach``). Returns (outputs stacked along
    axis 0, the last states), each shaped like what the body returns."""
    flat_data, data_fmt = _flatten(data, "foreach data")
    _check_symbols(flat_data, "foreach data")
    flat_states, state_fmt = _flatten(init_states, "foreach init_states")
    _check_symbols(flat_states, "foreach init_states")
    if not flat_data:
        raise ValueError("foreach: data is empty; give at least one Symbol to iterate over")
    sub_name = _unique_subgraph_name(name)
    with AttrScope(**{_SUBGRAPH: sub_name}):
        data_ph = _placeholders(flat_data)
        state_ph = _placeholders(flat_states)
        result = body(_regroup(list(data_ph), data_fmt)[0], _regroup(list(state_ph), copy.deepcopy(state_fmt))[0])
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError(f"foreach: the body must return a pair (outputs, states), got "
                             f"{type(result).__name__} {result!r:.80}")
        out, new_states = result
        flat_out, out_fmt = _flatten(out, "foreach body outputs")
        flat_new, new_fmt = _flatten(new_states, "foreach body states")
        if new_fmt != state_fmt:
            raise ControlFlowError(f"foreach: the body returns states structured as {new_fmt}, but "
                                   f"init_states is {state_fmt}; return new states in the same (nested) "
                                   f"list structure as init_states")
        heads = _wrap_outputs(flat_out, sub_name) + _wrap_outputs(flat_new, sub_name, also=flat_out)
    cut = _Cut([h._entries[0] for h in heads], sub_name, [p._entries[0][0] for p in data_ph + state_ph])
    locs = cut.placeholder_locs(len(data_ph) + len(state_ph))
    for i, loc in enumerate(locs):
        if loc < 0:
            kind = "data array" if i < len(data_ph) else "state"
            j = i if i < len(data_ph) else i - len(data_ph)
            raise ControlFlowError(
                f"foreach: {kind} {j} is not used by the loop body; the {kind}s have to be used in the "
                f"loop body (MXNet's rule: a subgraph input must be read): use it, or leave it out")
    inputs = _Inputs([s._entries[0] for s in flat_data + flat_states])
    remain_locs = []
    for pos, (kind, what) in enumerate(cut.inputs):
        if kind == "outside":
            inputs.add(what)
            remain_locs.append(pos)
    n_out, n_states = len(flat_out), len(flat_new)
    ret = _control_node("_foreach", "_foreach", inputs.entries, {
        "num_outputs": n_out + n_states, "num_out_data": n_out,
        "in_state_locs": locs[len(data_ph):], "in_data_locs": locs[:len(data_ph)],
        "remain_locs": remain_locs}, [cut.graph])
    outs = _regroup(_outputs(ret, 0, n_out), out_fmt)[0]
    states = _regroup(_outputs(ret, n_out, n_states), state_fmt)[0]
    return outs, states


# ---- while_loop --------------------------------------------------------------------------------
def while_loop(cond: Callable, func: Callable, loop_vars: Any, max_iterations: Any = None,
               name: str = "while_loop") -> tuple:
    """``while cond(*vars): out, vars = func(*vars)`` at most ``max_iterations`` times, as one
    ``_while_loop`` node (MXNet's ``sym.contrib.while_loop``). Returns (step outputs stacked to
    ``max_iterations`` rows, the final loop variables)."""
    flat_vars, var_fmt = _flatten(loop_vars, "while_loop loop_vars")
    _check_symbols(flat_vars, "while_loop loop_vars")
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    try:
        max_iterations = int(max_iterations.asscalar() if hasattr(max_iterations, "asscalar") else max_iterations)
    except (TypeError, ValueError):
        raise ValueError(f"Cannot convert max_iteration to python int: {max_iterations!r}") from None
    if not flat_vars:
        raise ValueError("loop_vars should contain at least one element")

    def trace(fn: Callable, sub_name: str, wrap: Callable) -> tuple:
        with AttrScope(**{_SUBGRAPH: sub_name}):
            ph = _placeholders(flat_vars)
            # MXNet calls fn(*loop_vars): a single Symbol unpacks to itself
            heads, extra = wrap(fn(*_regroup(list(ph), var_fmt)[0]), sub_name)
        return _Cut([h._entries[0] for h in heads], sub_name, [p._entries[0][0] for p in ph]), extra

    def cond_heads(result: Any, sub_name: str) -> tuple:
        if not isinstance(result, Symbol):
            raise ValueError(f"Return of cond must be a Symbol, got {type(result).__name__} {result!r:.60}")
        if len(result._entries) != 1:
            raise ValueError(f"while_loop: cond must return one Symbol, got a group of {len(result._entries)}")
        return _wrap_outputs([result], sub_name), None

    def func_heads(result: Any, sub_name: str) -> tuple:
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError(f"while_loop: func must return a pair (step_output, new_loop_vars), got "
                             f"{type(result).__name__} {result!r:.80}")
        step_output, new_vars = ([] if r is None else list(r) if isinstance(r, tuple) else r for r in result)
        flat_out, out_fmt = _flatten(step_output, "while_loop step_output")
        flat_new, _ = _flatten(new_vars, "while_loop new_loop_vars")
        _check_symbols(flat_out + flat_new, "while_loop func results")
        if len(flat_new) != len(flat_vars):
            raise ValueError(f"The number of loop_vars should be consistent during the loop: func returns "
                             f"{len(flat_new)} loop variables for {len(flat_vars)}")
        return _wrap_outputs(flat_out + flat_new, sub_name), (len(flat_out), out_fmt)

    cond_cut, _ = trace(cond, _unique_subgraph_name(name + "_cond"), cond_heads)
    func_cut, (n_out, out_fmt) = trace(func, _unique_subgraph_name(name + "_func"), func_heads)
    # loop variables are the first inputs (in order, each its own, even if it is the same value as
    # a free variable: a free variable keeps its value while the loop variable changes)
    inputs = _Inputs()
    var_pos: dict = {}
    locs: dict = {}
    for label, cut in (("cond", cond_cut), ("func", func_cut)):
        locs[label] = []
        for kind, what in cut.inputs:
            if kind == "placeholder":
                if what not in var_pos:
                    var_pos[what] = len(inputs.entries)
                    inputs.entries.append(flat_vars[what]._entries[0])
                locs[label].append(var_pos[what])
            else:
                locs[label].append(inputs.add(what))
    func_var_locs = func_cut.placeholder_locs(len(flat_vars))
    for i, loc in enumerate(func_var_locs, 1):
        if loc == -1:
            raise ValueError(f"The {i}-th loop_var doesn't involve into the computation: func does not "
                             f"read loop variable {i - 1}; use it in func or leave it out of loop_vars")
    ret = _control_node("_while_loop", "_while_loop", inputs.entries, {
        "num_outputs": n_out + len(flat_vars), "num_out_data": n_out, "max_iterations": max_iterations,
        "cond_input_locs": locs["cond"], "func_input_locs": locs["func"], "func_var_locs": func_var_locs},
        [cond_cut.graph, func_cut.graph])
    outputs = _regroup(_outputs(ret, 0, n_out), out_fmt)[0]
    final = _regroup(_outputs(ret, n_out, len(flat_vars)), var_fmt)[0]
    return outputs, final


# ---- cond --------------------------------------------------------------------------------------
def cond(pred: Any, then_func: Callable, else_func: Callable, name: str = "cond") -> Any:
    """``then_func()`` if the scalar ``pred`` is nonzero else ``else_func()``, as one ``_cond``
    node (MXNet's ``sym.contrib.cond``); both functions read outside Symbols directly."""
    if not isinstance(pred, Symbol) or len(pred._entries) != 1:
        raise TypeError(f"cond: pred must be a single Symbol (a scalar condition), got "
                        f"{type(pred).__name__} {pred!r:.60}")

    def trace(fn: Callable, suffix: str) -> tuple:
        sub_name = _unique_subgraph_name(name + suffix)
        with AttrScope(**{_SUBGRAPH: sub_name}):
            flat, fmt = _flatten(fn(), f"cond {suffix[1:]} outputs")
            _check_symbols(flat, f"cond {suffix[1:]} outputs")
            heads = _wrap_outputs(flat, sub_name)
        return _Cut([h._entries[0] for h in heads], sub_name, []), len(flat), fmt

    pred_cut, _, _ = trace(lambda: pred, "_pred")
    then_cut, n_then, then_fmt = trace(then_func, "_then")
    else_cut, n_else, _ = trace(else_func, "_else")
    if n_then != n_else:
        raise ValueError(f"Number of outputs differs between then-branch and else-branch: {n_then} vs "
                         f"{n_else}; both branches must return the same structure")
    inputs = _Inputs()
    locs = [[inputs.add(what) for _, what in cut.inputs] for cut in (pred_cut, then_cut, else_cut)]
    ret = _control_node("_cond", "_cond", inputs.entries, {
        "num_outputs": n_then, "cond_input_locs": locs[0], "then_input_locs": locs[1],
        "else_input_locs": locs[2]}, [pred_cut.graph, then_cut.graph, else_cut.graph])
    return _regroup(_outputs(ret, 0, n_then), then_fmt)[0]

