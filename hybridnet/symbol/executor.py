"""Executor: a bound Symbol (MXNet's ``bind``/``simple_bind``) running the compiled graph.

Forward runs the graph's generated function; backward uses torch autograd through it and
writes gradients per ``grad_req`` ('write', 'add', 'null'). Outputs own their memory (an output
that is an argument, or a view of one, is copied; see ``compiler.aliasing``).
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from ..base import MXNetError
from ..compiler.aliasing import OutputOwnership
from ..compiler.codegen import compile_graph
from ..context import Context, current_context
from ..ndarray.ndarray import NDArray
from .infer import infer_graph

__all__ = ["Executor", "simple_bind"]


def _as_list(values: Any, names: list, what: str) -> list:
    if values is None:
        return [None] * len(names)
    if isinstance(values, dict):
        unknown = set(values) - set(names)
        if unknown:
            raise MXNetError(f"bind: {what} has unknown names {sorted(unknown)}; expected {names}")
        return [values.get(n) for n in names]
    values = list(values)
    if len(values) != len(names):
        raise MXNetError(f"bind: {what} has {len(values)} entries for {len(names)} names {names}")
    return values


class Executor:
    """Runs a Symbol with bound argument, gradient and auxiliary arrays."""

    def __init__(self, sym: Any, ctx: Optional[Context], args: Any, args_grad: Any, grad_req: Any,
                 aux_states: Any):
        self._symbol = sym
        self._ctx = ctx or current_context()
        g = sym._graph()
        self._graph = g
        self._arg_names = [v.name for v in g.arguments()]
        self._aux_names = [v.name for v in g.aux_variables()]
        arg_list = _as_list(args, self._arg_names, "args")
        missing = [n for n, a in zip(self._arg_names, arg_list) if a is None]
        if missing:
            raise MXNetError(f"bind: no value for arguments {missing}")
        self.arg_arrays = arg_list
        aux_list = _as_list(aux_states, self._aux_names, "aux_states")
        missing = [n for n, a in zip(self._aux_names, aux_list) if a is None]
        if missing:
            raise MXNetError(f"bind: no value for auxiliary states {missing}")
        self.aux_arrays = aux_list
        if isinstance(grad_req, str):
            reqs = {n: grad_req for n in self._arg_names}
        elif isinstance(grad_req, dict):
            reqs = {n: grad_req.get(n, "null") for n in self._arg_names}
        else:
            reqs = dict(zip(self._arg_names, grad_req))
        grads = _as_list(args_grad, self._arg_names, "args_grad")
        self.grad_arrays = grads
        # an argument without a gradient array gets no gradient, whatever grad_req says
        self._grad_req = {n: (reqs.get(n, "null") if g_ is not None else "null")
                          for n, g_ in zip(self._arg_names, grads)}
        order = g.arguments() + g.aux_variables()
        self._compiled = compile_graph(g, order)
        self._ownership = OutputOwnership(g, order)
        self.outputs: list = []
        self._out_tensors: tuple = ()
        self._leaves: list = []

    @property
    def arg_dict(self) -> dict:
        return dict(zip(self._arg_names, self.arg_arrays))

    @property
    def grad_dict(self) -> dict:
        return dict(zip(self._arg_names, self.grad_arrays))

    @property
    def aux_dict(self) -> dict:
        return dict(zip(self._aux_names, self.aux_arrays))

    @property
    def output_dict(self) -> dict:
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    @property
    def source(self) -> str:
        """The generated Python source this executor runs."""
        return self._compiled.source

    def debug_str(self) -> str:
        return self._compiled.source

    def forward(self, is_train: bool = False, **kwargs: Any) -> list:
        for k, v in kwargs.items():
            if k not in self._arg_names:
                raise MXNetError(f"forward: {k!r} is not an argument; arguments are {self._arg_names}")
            target = self.arg_arrays[self._arg_names.index(k)]
            src = v._t if isinstance(v, NDArray) else torch.as_tensor(v)
            if tuple(src.shape) != target.shape:
                raise MXNetError(f"forward: {k} has shape {tuple(src.shape)}, bound shape {target.shape}; "
                                 f"use reshape() to change shapes")
            with torch.no_grad():
                target._t.copy_(src)
        need_grad = is_train and any(r != "null" for r in self._grad_req.values())
        args = []
        self._leaves = []
        for n, a in zip(self._arg_names, self.arg_arrays):
            t = a._t
            if need_grad and self._grad_req[n] != "null":
                t = t.detach().requires_grad_(True)
                self._leaves.append((n, t))
            args.append(t)
        args += [a._t for a in self.aux_arrays]
        with torch.set_grad_enabled(need_grad):
            outs = self._compiled.fn(*args, _train=is_train)
            if self._ownership:
                outs = self._ownership.apply(outs, args)
        self._out_tensors = outs
        self.outputs = [NDArray(o.detach()) for o in outs]
        return self.outputs

    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        if not self._leaves:
            raise MXNetError("backward: call forward(is_train=True) first, with args_grad bound "
                             "and grad_req other than 'null'")
        outs = [o for o in self._out_tensors]
        if out_grads is None:
            grads = [torch.ones_like(o) for o in outs]
        else:
            if isinstance(out_grads, NDArray):
                out_grads = [out_grads]
            grads = [g._t if isinstance(g, NDArray) else torch.as_tensor(g) for g in out_grads]
        pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
        if not pairs:
            raise MXNetError("backward: no output depends on an argument with a gradient")
        res = torch.autograd.grad([p[0] for p in pairs], [t for _, t in self._leaves],
                                  [p[1] for p in pairs], allow_unused=True)
        with torch.no_grad():
            for (n, _), g in zip(self._leaves, res):
                buf = self.grad_arrays[self._arg_names.index(n)]
                if g is None:
                    if self._grad_req[n] == "write":
                        buf._t.zero_()
                    continue
                if self._grad_req[n] == "add":
                    buf._t.add_(g)
                else:
                    buf._t.copy_(g)

    def copy_params_from(self, arg_params: dict, aux_params: Optional[dict] = None,
                         allow_extra_params: bool = False) -> None:
        for name, arr in arg_params.items():
            if name in self._arg_names:
                self.arg_dict[name]._t.copy_(arr._t)
            elif not allow_extra_params:
                raise MXNetError(f"copy_params_from: {name!r} is not an argument of the executor")
        for name, arr in (aux_params or {}).items():
            if name in self._aux_names:
                self.aux_dict[name]._t.copy_(arr._t)
            elif not allow_extra_params:
                raise MXNetError(f"copy_params_from: {name!r} is not an auxiliary state")

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False, **kwargs: Any) -> "Executor":
        shapes = {n: a.shape for n, a in self.arg_dict.items()}
        shapes.update({k: tuple(v) for k, v in kwargs.items()})
        new = simple_bind(self._symbol, self._ctx, {n: r for n, r in self._grad_req.items()}, None, shapes)
        for n, a in self.arg_dict.items():
            if new.arg_dict[n].shape == a.shape:
                new.arg_dict[n]._t.copy_(a._t)
        for n, a in self.aux_dict.items():
            if new.aux_dict[n].shape == a.shape:
                new.aux_dict[n]._t.copy_(a._t)
        return new


def simple_bind(sym: Any, ctx: Optional[Context], grad_req: Any, type_dict: Optional[dict], shapes: dict) -> Executor:
    """Allocate arguments (zeros), gradients and aux states from inferred shapes, then bind."""
    ctx = ctx or current_context()
    g = sym._graph()
    res = infer_graph(g, {k: tuple(v) for k, v in shapes.items()}, type_dict or {})
    device = ctx.torch_device
    from ..base import dtype_torch

    def alloc(v: Any) -> NDArray:
        s = res.var_shapes[id(v)]
        if s is None or not all(d > 0 for d in s):
            raise MXNetError(f"simple_bind: cannot infer the shape of {v.name!r} (got {s}); "
                             f"pass it, e.g. simple_bind(ctx, {v.name}=(...))")
        return NDArray(torch.zeros(s, dtype=dtype_torch(res.var_dtypes[id(v)] or "float32"), device=device))

    args = {v.name: alloc(v) for v in g.arguments()}
    aux = {v.name: alloc(v) for v in g.aux_variables()}
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in args}
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in args}
    else:
        reqs = dict(zip(args, grad_req))
    grads = {n: NDArray(torch.zeros_like(a._t)) for n, a in args.items() if reqs[n] != "null"}
    return Executor(sym, ctx, args, grads, reqs, aux)
