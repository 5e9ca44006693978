"""Control-flow operators: ``_foreach``, ``_while_loop`` and ``_cond`` (MXNet 1.9.1's
src/operator/control_flow.cc), graph operators whose nodes carry subgraphs; and ``_CachedOp``,
one call of a hybridized block as ``autograd.get_symbol`` shows it (src/imperative/cached_op.cc).

A node's subgraphs are graphs of their own. Their inputs (the subgraph's variables, in its node
order) are bound to the node's inputs by the ``*_locs`` attributes, as in MXNet:

* ``_foreach`` (one subgraph, the loop body): the node's inputs are the sequences, then the
  initial states, then everything else the body reads; ``in_data_locs[i]`` / ``in_state_locs[j]``
  / ``remain_locs[k]`` are the positions of those among the body's inputs. The body returns
  ``num_out_data`` per-step outputs (stacked along a new first axis) followed by the new states.
* ``_while_loop`` (``cond``, ``func``): ``cond_input_locs`` / ``func_input_locs`` pick each
  subgraph's inputs from the node's inputs; loop variable ``i`` is input ``func_var_locs[i]``
  of ``func``. ``func`` returns ``num_out_data`` step outputs, then the new loop variables.
  Step outputs are stacked to ``max_iterations`` rows; rows past the last step are zeros
  (MXNet leaves them uninitialized).
* ``_cond`` (``cond``, ``then``, ``else``): the branch picked by the scalar ``cond`` runs on the
  inputs its ``*_input_locs`` select.

The kernels are Python loops calling the compiled subgraphs (``subgraphs``: one callable per
subgraph, ``fn(*tensors, _train=...) -> tuple``), so torch autograd differentiates through
them. MXNet's ``num_args`` counts the subgraphs as inputs; it is kept as MXNet writes it.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import torch

from ..base import MXNetError
from .attrs import Shape
from .registry import register
from .shape_rules import _merged

__all__ = ["Solve"]

# (subgraph index, variable shapes, variable dtypes) -> (variable shapes, variable dtypes,
# output shapes, output dtypes): shape/type inference of one subgraph (compiler/infer.py).
Solve = Callable[[int, list, list], tuple]


def _bodies(subgraphs: Sequence[Callable], op: str, n: int, front: str) -> Sequence[Callable]:
    if len(subgraphs) != n:
        raise MXNetError(f"operator {op} runs {n} subgraph(s) and cannot be called on arrays alone: "
                         f"use mx.nd.contrib.{front} (eager) or mx.sym.contrib.{front} / "
                         f"F.contrib.{front} (graphs)")
    return subgraphs


def _as_bool(t: torch.Tensor, op: str, what: str) -> bool:
    """MXNet's ``as_bool_scalar``: the condition must hold exactly one element."""
    if t.numel() != 1:
        raise MXNetError(f"{op}: {what} must be a scalar (an array of one element), but it has "
                         f"shape {tuple(t.shape)}; reduce it, e.g. with .sum() or F.prod(...), "
                         f"or compare a single element")
    return bool(t.item())


def _meta_outputs(fn: Callable, args: Sequence[torch.Tensor], is_train: bool) -> tuple:
    """Outputs of ``fn`` with their shapes and dtypes (for loops that ran zero times, whose
    stacked outputs still need a shape): computed on the 'meta' device, without data; a body
    whose kernels need values runs once on the real inputs instead, its results unused."""
    with torch.no_grad():
        try:
            return fn(*[a.to("meta") for a in args], _train=is_train)
        except (RuntimeError, NotImplementedError, ValueError, TypeError, IndexError):
            return fn(*args, _train=is_train)


def _check_state(op: str, j: int, step: int, old: torch.Tensor, new: torch.Tensor, what: str) -> None:
    if old.shape != new.shape or old.dtype != new.dtype:
        raise MXNetError(
            f"{op}: {what} {j} changes from shape {tuple(old.shape)} ({old.dtype}) to "
            f"{tuple(new.shape)} ({new.dtype}) in iteration {step}; a loop {what} must keep its shape "
            f"and dtype across iterations (return a value shaped like the one the body received)")


def _result(outs: Sequence[torch.Tensor]) -> Any:
    """A kernel's result: the tensor itself for one output (as every kernel returns), else a tuple."""
    return outs[0] if len(outs) == 1 else tuple(outs)


def _stack(op: str, k: int, parts: list) -> torch.Tensor:
    first = parts[0].shape
    for step, p in enumerate(parts):
        if p.shape != first:
            raise MXNetError(f"{op}: output {k} of the loop body has shape {tuple(first)} in iteration 0 "
                             f"but {tuple(p.shape)} in iteration {step}; every iteration must return "
                             f"outputs of the same shape")
    return torch.stack(parts)


# ---- _foreach ----------------------------------------------------------------------------------
def _foreach_check(attrs: dict, n_inputs: int, subs: list) -> None:
    data, states, remain = (list(attrs.get(k, ())) for k in ("in_data_locs", "in_state_locs", "remain_locs"))
    n_sub_in, n_sub_out = subs[0]
    locs = data + states + remain
    if len(locs) != n_inputs:
        raise ValueError(f"in_data_locs, in_state_locs and remain_locs list {len(locs)} inputs, "
                         f"the node has {n_inputs}")
    if sorted(locs) != list(range(n_sub_in)):
        raise ValueError(f"the locations {locs} must name each of the body's {n_sub_in} inputs once")
    if not data:
        raise ValueError("in_data_locs is empty: foreach iterates over at least one array")
    nod, nout = attrs.get("num_out_data", 0), attrs.get("num_outputs", 0)
    if nout != n_sub_out or not 0 <= nod <= nout or nout - nod != len(states):
        raise ValueError(f"num_outputs={nout}, num_out_data={nod} and {len(states)} states do not fit "
                         f"a body with {n_sub_out} outputs")


def _slice_first(s: Optional[tuple]) -> Optional[tuple]:
    """Shape of one step of a sequence: its first axis dropped (a 1-D sequence gives (1,) steps)."""
    if s is None:
        return None
    return tuple(s[1:]) if len(s) > 1 else (1,)


def _prepend(n: int, s: Optional[tuple]) -> Optional[tuple]:
    return None if s is None else (n,) + tuple(s)


def _same(op: str, what: str, a: Optional[tuple], b: Optional[tuple]) -> Optional[tuple]:
    merged = _merged([a, b])
    if merged is None and a is not None and b is not None:
        raise MXNetError(f"{op}: {what}: shapes {a} and {b} disagree")
    return merged


def _same_dtype(op: str, what: str, a: Optional[str], b: Optional[str]) -> Optional[str]:
    if a is not None and b is not None and a != b:
        raise MXNetError(f"{op}: {what}: dtypes {a} and {b} disagree")
    return a or b


def _sync_states(op: str, sub_in: list, sub_dt: list, res: tuple, var_locs: Sequence[int],
                 first_state_out: int) -> bool:
    """Loop states: what the body returns for state ``j`` must fit what it receives. Both are
    merged into ``sub_in``/``sub_dt``; returns whether the body saw less than that (then it is
    inferred again)."""
    var_shapes, var_dtypes, out_shapes, out_dtypes = res
    changed = False
    for j, loc in enumerate(var_locs):
        out_shape, out_dtype = out_shapes[first_state_out + j], out_dtypes[first_state_out + j]
        shape = _same(op, f"loop state {j} comes in with shape {sub_in[loc]} but the body returns shape "
                      f"{out_shape}; a state must keep its shape across iterations", sub_in[loc], out_shape)
        dt = _same_dtype(op, f"loop state {j} comes in as {sub_dt[loc]} but the body returns {out_dtype}",
                         sub_dt[loc], out_dtype)
        changed = changed or shape != var_shapes[loc] or dt != var_dtypes[loc]
        sub_in[loc], sub_dt[loc] = shape, dt
    return changed


def _solve_loop(op: str, k: int, solve: Solve, sub_in: list, sub_dt: list, var_locs: Sequence[int],
                first_state_out: int) -> list:
    """Infer a loop body until its states agree with themselves; ``sub_in``/``sub_dt`` (the body's
    input shapes/dtypes) are refined in place. Returns the body's (output shapes, output dtypes)."""
    for _ in range(4):
        res = solve(k, sub_in, sub_dt)
        for i, (s, d) in enumerate(zip(res[0], res[1])):
            if s is not None:
                sub_in[i] = _merged([sub_in[i], s]) or s
            sub_dt[i] = sub_dt[i] or d
        if not _sync_states(op, sub_in, sub_dt, res, var_locs, first_state_out):
            break
    return [res[2], res[3]]


def _foreach_infer(attrs: dict, ins: list, in_dt: list, outs: list, out_dt: list, solve: Solve) -> tuple:
    data, states, remain = (list(attrs[k]) for k in ("in_data_locs", "in_state_locs", "remain_locs"))
    nod = attrs["num_out_data"]
    nd_, ns = len(data), len(states)
    n_sub = nd_ + ns + len(remain)
    length = ins[0][0] if ins[0] is not None and len(ins[0]) else 0
    sub_in: list = [None] * n_sub
    sub_dt: list = [None] * n_sub
    for i, loc in enumerate(data):
        sub_in[loc], sub_dt[loc] = _slice_first(ins[i]), in_dt[i]
    for j, loc in enumerate(states):
        what = f"loop state {j} comes in with shape {ins[nd_ + j]} but leaves the loop with {outs[nod + j]}"
        sub_in[loc] = _same("_foreach", what, ins[nd_ + j], outs[nod + j])
        sub_dt[loc] = in_dt[nd_ + j] or out_dt[nod + j]
    for r, loc in enumerate(remain):
        sub_in[loc], sub_dt[loc] = ins[nd_ + ns + r], in_dt[nd_ + ns + r]
    out_shapes, out_dtypes = _solve_loop("_foreach", 0, solve, sub_in, sub_dt, states, nod)
    new_ins = list(ins)
    new_dt = list(in_dt)
    for i, loc in enumerate(data):
        s = sub_in[loc]
        if s is not None:
            new_ins[i] = (length,) if ins[i] is not None and len(ins[i]) == 1 else _prepend(length, s)
        new_dt[i] = sub_dt[loc] or in_dt[i]
    for j, loc in enumerate(list(states) + list(remain)):
        new_ins[nd_ + j] = sub_in[loc] if sub_in[loc] is not None else ins[nd_ + j]
        new_dt[nd_ + j] = sub_dt[loc] or in_dt[nd_ + j]
    new_outs = [_prepend(length, out_shapes[k]) for k in range(nod)]
    new_outs += [sub_in[loc] for loc in states]
    return new_ins, new_dt, new_outs, list(out_dtypes)


@register("_foreach", num_outputs=lambda a: a.get("num_outputs", 1),
          num_subgraphs=1, check_subgraphs=_foreach_check, infer_subgraphs=_foreach_infer)
def _foreach(*data, num_outputs: int, num_out_data: int, in_state_locs: Shape, in_data_locs: Shape,
             remain_locs: Shape, subgraphs: Sequence[Callable] = (), is_train: bool = False):
    """Run the body subgraph over the first axis of the sequences (MXNet's ``_foreach``): step
    outputs stacked along a new first axis, then the last states."""
    (body,) = _bodies(subgraphs, "_foreach", 1, "foreach")
    nd_, ns = len(in_data_locs), len(in_state_locs)
    seqs, states = data[:nd_], list(data[nd_:nd_ + ns])
    n = seqs[0].shape[0] if seqs[0].dim() else 0
    for i, s in enumerate(seqs):
        if not s.dim() or s.shape[0] != n:
            raise MXNetError(f"_foreach: every sequence must have the same length along axis 0; "
                             f"sequence 0 has {n} steps, sequence {i} has shape {tuple(s.shape)}")
    args: list = [None] * (nd_ + ns + len(remain_locs))
    for loc, t in zip(remain_locs, data[nd_ + ns:]):
        args[loc] = t
    steps: list = [[] for _ in range(num_out_data)]
    for i in range(n):
        for loc, s in zip(in_data_locs, seqs):
            args[loc] = s[i] if s.dim() > 1 else s[i:i + 1]
        for loc, t in zip(in_state_locs, states):
            args[loc] = t
        res = body(*args, _train=is_train)
        for k in range(num_out_data):
            steps[k].append(res[k])
        new = res[num_out_data:]
        for j, (old, t) in enumerate(zip(states, new)):
            _check_state("_foreach", j, i, old, t, "state")
        states = list(new)
    if n:
        stacked = [_stack("_foreach", k, p) for k, p in enumerate(steps)]
    else:
        for loc, s in zip(in_data_locs, seqs):
            args[loc] = s.new_empty(_slice_first(tuple(s.shape)) or ())
        for loc, t in zip(in_state_locs, states):
            args[loc] = t
        metas = _meta_outputs(body, args, is_train)
        stacked = [torch.empty((0,) + tuple(m.shape), dtype=m.dtype, device=seqs[0].device)
                   for m in metas[:num_out_data]]
    return _result(stacked + states)


# ---- _while_loop -------------------------------------------------------------------------------
def _while_check(attrs: dict, n_inputs: int, subs: list) -> None:
    cond_locs, func_locs, var_locs = (list(attrs.get(k, ())) for k in
                                      ("cond_input_locs", "func_input_locs", "func_var_locs"))
    (n_cond_in, n_cond_out), (n_func_in, n_func_out) = subs
    if n_cond_out != 1:
        raise ValueError(f"the cond subgraph must have exactly 1 output, it has {n_cond_out}")
    for name, locs, n in (("cond_input_locs", cond_locs, n_cond_in), ("func_input_locs", func_locs, n_func_in)):
        if len(locs) != n or any(not 0 <= l < n_inputs for l in locs):
            raise ValueError(f"{name}={locs} must give one of the node's {n_inputs} inputs for each of "
                             f"the subgraph's {n} inputs")
    nod, nout = attrs.get("num_out_data", 0), attrs.get("num_outputs", 0)
    if nout != n_func_out or not 0 <= nod <= nout or nout - nod != len(var_locs):
        raise ValueError(f"num_outputs={nout}, num_out_data={nod} and {len(var_locs)} loop variables do not "
                         f"fit a func subgraph with {n_func_out} outputs")
    if any(not 0 <= v < n_func_in for v in var_locs) or len(set(var_locs)) != len(var_locs):
        raise ValueError(f"func_var_locs={var_locs} must name distinct inputs of func ({n_func_in})")
    if attrs.get("max_iterations", 0) < 1:
        raise ValueError(f"max_iterations={attrs.get('max_iterations')} must be at least 1")


def _check_scalar(op: str, what: str, shape: Optional[tuple]) -> None:
    if shape is not None and all(shape):
        size = 1
        for d in shape:
            size *= d
        if size != 1:
            raise MXNetError(f"{op}: {what} must be a scalar (an array of one element), but it has "
                             f"shape {shape}; reduce it, e.g. with .sum() or .prod(), or compare a "
                             f"single element")


def _refine_from(ins: list, in_dt: list, locs: Sequence[int], shapes: list, dtypes: list) -> None:
    for j, loc in enumerate(locs):
        if shapes[j] is not None:
            ins[loc] = _merged([ins[loc], shapes[j]]) or shapes[j]
        in_dt[loc] = in_dt[loc] or dtypes[j]


def _while_infer(attrs: dict, ins: list, in_dt: list, outs: list, out_dt: list, solve: Solve) -> tuple:
    cond_locs, func_locs, var_locs = (list(attrs[k]) for k in ("cond_input_locs", "func_input_locs", "func_var_locs"))
    nod, max_it = attrs["num_out_data"], attrs["max_iterations"]
    ins, in_dt = list(ins), list(in_dt)
    f_in = [ins[loc] for loc in func_locs]
    f_dt = [in_dt[loc] for loc in func_locs]
    for i, v in enumerate(var_locs):
        what = f"loop variable {i} comes in with shape {f_in[v]} but leaves the loop with {outs[nod + i]}"
        f_in[v] = _same("_while_loop", what, f_in[v], outs[nod + i])
        f_dt[v] = f_dt[v] or out_dt[nod + i]
    out_shapes, out_dtypes = _solve_loop("_while_loop", 1, solve, f_in, f_dt, var_locs, nod)
    _refine_from(ins, in_dt, func_locs, f_in, f_dt)
    c_shapes, c_dtypes, c_out, _ = solve(0, [ins[loc] for loc in cond_locs], [in_dt[loc] for loc in cond_locs])
    _check_scalar("_while_loop", "the value cond returns", c_out[0])
    _refine_from(ins, in_dt, cond_locs, c_shapes, c_dtypes)
    new_outs = [_prepend(max_it, out_shapes[k]) for k in range(nod)] + [f_in[v] for v in var_locs]
    return ins, in_dt, new_outs, list(out_dtypes)


@register("_while_loop", num_outputs=lambda a: a.get("num_outputs", 1), num_subgraphs=2,
          check_subgraphs=_while_check, infer_subgraphs=_while_infer, value_dependent_path=True)
def _while_loop(*data, num_outputs: int, num_out_data: int, max_iterations: int, cond_input_locs: Shape,
                func_input_locs: Shape, func_var_locs: Shape, subgraphs: Sequence[Callable] = (),
                is_train: bool = False):
    """Run ``func`` while ``cond`` holds, at most ``max_iterations`` times (MXNet's
    ``_while_loop``): step outputs stacked to ``max_iterations`` rows (zeros past the last step),
    then the final loop variables."""
    cond, func = _bodies(subgraphs, "_while_loop", 2, "while_loop")
    values = list(data)
    var_pos = [func_input_locs[v] for v in func_var_locs]
    steps: list = [[] for _ in range(num_out_data)]
    n = 0
    while n < max_iterations:
        c = cond(*[values[loc] for loc in cond_input_locs], _train=is_train)[0]
        if not _as_bool(c, "_while_loop", "the value cond returns"):
            break
        res = func(*[values[loc] for loc in func_input_locs], _train=is_train)
        for k in range(num_out_data):
            steps[k].append(res[k])
        for i, pos in enumerate(var_pos):
            _check_state("_while_loop", i, n, values[pos], res[num_out_data + i], "variable")
            values[pos] = res[num_out_data + i]
        n += 1
    if n:
        stacked = [_stack("_while_loop", k, p) for k, p in enumerate(steps)]
        if n < max_iterations:
            stacked = [torch.cat([s, s.new_zeros((max_iterations - n,) + tuple(s.shape[1:]))]) for s in stacked]
    else:
        metas = _meta_outputs(func, [values[loc] for loc in func_input_locs], is_train)
        device = data[0].device
        stacked = [torch.zeros((max_iterations,) + tuple(m.shape), dtype=m.dtype, device=device)
                   for m in metas[:num_out_data]]
    return _result(stacked + [values[pos] for pos in var_pos])


# ---- _cond -------------------------------------------------------------------------------------
def _cond_check(attrs: dict, n_inputs: int, subs: list) -> None:
    names = ("cond_input_locs", "then_input_locs", "else_input_locs")
    if subs[0][1] != 1:
        raise ValueError(f"the cond subgraph must have exactly 1 output, it has {subs[0][1]}")
    nout = attrs.get("num_outputs", 0)
    for k, name in enumerate(names):
        locs = list(attrs.get(name, ()))
        if len(locs) != subs[k][0] or any(not 0 <= l < n_inputs for l in locs):
            raise ValueError(f"{name}={locs} must give one of the node's {n_inputs} inputs for each of "
                             f"the subgraph's {subs[k][0]} inputs")
        if k and subs[k][1] != nout:
            raise ValueError(f"num_outputs={nout} but the {name[:4]} branch has {subs[k][1]} outputs")


def _cond_infer(attrs: dict, ins: list, in_dt: list, outs: list, out_dt: list, solve: Solve) -> tuple:
    ins, in_dt = list(ins), list(in_dt)
    outs, out_dt = list(outs), list(out_dt)
    for k, name in enumerate(("cond_input_locs", "then_input_locs", "else_input_locs")):
        locs = list(attrs[name])
        shapes, dtypes, sub_out, sub_dt = solve(k, [ins[loc] for loc in locs], [in_dt[loc] for loc in locs])
        _refine_from(ins, in_dt, locs, shapes, dtypes)
        if k == 0:
            _check_scalar("_cond", "the condition", sub_out[0])
            continue
        for j, (s, d) in enumerate(zip(sub_out, sub_dt)):
            what = f"output {j} has shape {outs[j]} in the then branch but {s} in the else branch"
            outs[j] = _same("_cond", what, outs[j], s) if k == 2 else _merged([outs[j], s]) or s
            out_dt[j] = _same_dtype("_cond", f"output {j} is {out_dt[j]} in the then branch but {d} in "
                                    f"the else branch", out_dt[j], d) if k == 2 else (d or out_dt[j])
    return ins, in_dt, outs, out_dt


@register("_cond", num_outputs=lambda a: a.get("num_outputs", 1), num_subgraphs=3,
          check_subgraphs=_cond_check, infer_subgraphs=_cond_infer, value_dependent_path=True)
def _cond(*data, num_outputs: int, cond_input_locs: Shape, then_input_locs: Shape, else_input_locs: Shape,
          subgraphs: Sequence[Callable] = (), is_train: bool = False):
    """Run the ``then`` or the ``else`` subgraph as the scalar ``cond`` subgraph says (MXNet's
    ``_cond``)."""
    cond, then_fn, else_fn = _bodies(subgraphs, "_cond", 3, "cond")
    pred = cond(*[data[loc] for loc in cond_input_locs], _train=is_train)[0]
    if _as_bool(pred, "_cond", "the condition"):
        return _result(then_fn(*[data[loc] for loc in then_input_locs], _train=is_train))
    return _result(else_fn(*[data[loc] for loc in else_input_locs], _train=is_train))


# ---- _CachedOp ---------------------------------------------------------------------------------
def _cachedop_check(attrs: dict, n_inputs: int, subs: list) -> None:
    if subs[0][0] != n_inputs:
        raise ValueError(f"the graph reads {subs[0][0]} inputs but the node has {n_inputs}")
    if attrs.get("num_outputs", 1) != subs[0][1]:
        raise ValueError(f"num_outputs={attrs.get('num_outputs', 1)} but the graph has {subs[0][1]} outputs")


def _cachedop_infer(attrs: dict, ins: list, in_dt: list, outs: list, out_dt: list, solve: Solve) -> tuple:
    shapes, dtypes, sub_out, sub_dt = solve(0, list(ins), list(in_dt))
    return (shapes, dtypes, [_merged([o, s]) or s for o, s in zip(outs, sub_out)],
            [o or d for o, d in zip(out_dt, sub_dt)])


@register("_CachedOp", num_outputs=lambda a: a.get("num_outputs", 1), num_subgraphs=1,
          check_subgraphs=_cachedop_check, infer_subgraphs=_cachedop_infer, hint="_cachedop")
def _CachedOp(*data, num_outputs: int = 1, subgraphs: Sequence[Callable] = (), is_train: bool = False):
    """A hybridized block's whole graph as one node (MXNet's ``_CachedOp``, what
    ``autograd.get_symbol`` shows for a call recorded with more operators than ``inline_limit``
    or with ``static_alloc``): its subgraph runs on the node's inputs (the graph's data inputs,
    then its parameters)."""
    (graph,) = _bodies(subgraphs, "_CachedOp", 1, "a hybridized block")
    return _result(graph(*data, _train=is_train))
