"""Executor: a bound Symbol (MXNet's ``bind``/``simple_bind``) running the compiled graph.

MXNet semantics kept here: output arrays exist from bind on and are updated in place by every
forward; ``backward`` works after ``forward(is_train=False)`` or even without a forward (it
runs the graph itself); gradients follow ``grad_req`` per argument ('write', 'add', 'null'),
and arguments whose outputs do not depend on them get zero gradients under 'write'. An
operator that fails on its values (``base.DeferredError``: ``take(mode='raise')`` out of range, a
sampler's invalid parameter) does not make ``forward`` raise: the outputs, and the gradients of
a following ``backward``, hold the error and the first read raises it (MXNet's asynchronous
engine; see ``ndarray.ndarray``).
Forward runs the graph's generated function; backward uses torch autograd through it. Outputs
own their memory (an output that is an argument, or a view of one, is copied; see
``compiler.aliasing``).
"""
from __future__ import annotations

import functools
import os
from typing import Any, Callable, List, Optional

import numpy as np
import torch

from ..base import DeferredError, MXNetError, dtype_torch
from ..compiler.aliasing import OutputOwnership
from ..compiler.cached_op import compile_predict_function
from ..compiler.codegen import CompiledGraph, compile_graph
from ..compiler.memory import planned_bytes
from ..compiler.pipeline import PassContext, Serve, serving_order, training_graph
from ..context import Context, current_context
from ..ir.graph import Graph
from .. import autograd_engine as _ag
from ..ndarray import ndarray as _nd
from ..ndarray.ndarray import NDArray
from ..ops import storage as _storage
from ..profiler import recorder as _profiler
from ..compiler.infer import infer_graph, resolve_creation_shapes
from ..compiler.storage import infer_storage, storage_may_change, variable_stype
from .symbol import Symbol

__all__ = ["Executor", "simple_bind"]

_REQS = ("null", "write", "add", "inplace")


def _as_list(values: Any, names: list, what: str, allow_missing: bool) -> list:
    """Values in ``names`` order from a list or a name->value dict (extra dict keys ignored,
    as MXNet does)."""
    if values is None:
        return [None] * len(names)
    if isinstance(values, dict):
        out = [values.get(n) for n in names]
        if not allow_missing:
            missing = [n for n, v in zip(names, out) if v is None]
            if missing:
                kind = "auxiliary states" if what == "aux_states" else "arguments"
                raise MXNetError(f"bind: no value for {kind} {missing} in {what}; expected names {names}")
        return out
    values = list(values)
    if len(values) != len(names):
        raise MXNetError(f"bind: {what} has {len(values)} entries for {len(names)} names {names}")
    return values


def _grad_reqs(grad_req: Any, names: list) -> dict:
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        reqs = dict(zip(names, grad_req))
    for n, r in reqs.items():
        if r not in _REQS:
            raise MXNetError(f"bind: invalid grad_req {r!r} for {n!r}; expected one of {list(_REQS)}")
    return {n: ("write" if r == "inplace" else r) for n, r in reqs.items()}


def _tensor(x: Any, like: torch.Tensor) -> torch.Tensor:
    t = _dense(x._t) if isinstance(x, NDArray) else torch.as_tensor(np.asarray(x))
    return t.to(dtype=like.dtype, device=like.device)


def _dense(t: torch.Tensor) -> torch.Tensor:
    """Graphs compute on dense storage: sparse arrays bound to an executor are densified
    (MXNet's storage fallback)."""
    return t if t.layout is torch.strided else _storage.to_dense(t)


def _write(buf: NDArray, g: torch.Tensor, add: bool) -> None:
    """A gradient into ``buf`` (overwritten, or added to for grad_req 'add'), in buf's storage."""
    if buf._t.layout is torch.strided:
        g = _dense(g)
        if add:
            buf._t.add_(g.to(buf._t.dtype))
        else:
            buf._t.copy_(g)
        return
    from ..ndarray.sparse import store_into
    store_into(buf, _dense(buf._t) + g if add else g)


def _output_stypes(g: Graph, bound: list) -> Optional[list]:
    """The storage types of the graph's outputs for the bound (name, array) pairs (MXNet's
    storage inference), or None when they are all dense (decided without inference when no
    bound array is sparse and no operator makes sparse arrays of dense ones)."""
    stypes = {n: getattr(a, "stype", "default") for n, a in bound}
    if all(st == "default" for st in stypes.values()) and not storage_may_change(g):
        return None
    shapes = {n: a.shape for n, a in bound}
    dtypes = {n: a.dtype for n, a in bound}

    def shape_inference() -> Any:  # only where a sparse value feeds an operator's output
        try:
            return infer_graph(g, shapes, dtypes)
        except MXNetError:
            return None
    out = infer_storage(g, stypes, shape_inference, shapes, dtypes).outputs
    return out if any(st != "default" for st in out) else None


def _check_gradients_exist(g: Graph, grad_names: set) -> None:
    """Raise where the backward pass would need the gradient of an operator MXNet registers none
    for (``OpDef.no_gradient``): a node that depends on an argument with a gradient and reaches
    an output through operators that pass gradients (MXNet's bind fails there)."""
    if not grad_names or not any(n.op is not None and n.op.no_gradient for n in g.nodes):
        return
    on_path = {id(v) for v in g.arguments() if v.name in grad_names}
    for n in g.nodes:
        if n.op is not None and (n.op.differentiable or n.op.no_gradient) and \
                any(id(src) in on_path for src, _ in n.inputs):
            on_path.add(id(n))
    reached: set = set()
    todo = [n for n, _ in g.outputs if id(n) in on_path]
    while todo:
        n = todo.pop()
        if id(n) in reached:
            continue
        reached.add(id(n))
        if n.op is not None and n.op.no_gradient:
            raise MXNetError(f"Operator {n.op.name} (node {n.name!r}) is non-differentiable because it "
                             f"didn't register FGradient attribute (as in MXNet): bind with grad_req "
                             f"'null' for the arguments it depends on, or cut the gradient after it "
                             f"with stop_gradient/BlockGrad")
        if n.op is not None and n.op.differentiable:
            todo.extend(src for src, _ in n.inputs if id(src) in on_path)


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
        self.arg_arrays = _as_list(args, self._arg_names, "args", allow_missing=False)
        self.aux_arrays = _as_list(aux_states, self._aux_names, "aux_states", allow_missing=False)
        for what, names, arrays in (("args", self._arg_names, self.arg_arrays),
                                    ("aux_states", self._aux_names, self.aux_arrays)):
            for n, a in zip(names, arrays):
                if not isinstance(a, NDArray):
                    raise MXNetError(f"bind: {what}[{n!r}] must be an NDArray, got {type(a).__name__}")
        bound = list(zip(self._arg_names + self._aux_names, self.arg_arrays + self.aux_arrays))
        g = resolve_creation_shapes(g, {n: a.shape for n, a in bound}, {n: a.dtype for n, a in bound})
        g = training_graph(g, PassContext(bound=True,
                                          eliminate_common=os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1") != "0"))
        self._graph = g
        self._out_stypes = _output_stypes(g, bound)
        reqs = _grad_reqs(grad_req, self._arg_names)
        self.grad_arrays = _as_list(args_grad, self._arg_names, "args_grad", allow_missing=True)
        # an argument without a gradient array gets no gradient, whatever grad_req says
        self._grad_req = {n: (reqs.get(n, "null") if g_ is not None else "null")
                          for n, g_ in zip(self._arg_names, self.grad_arrays)}
        _check_gradients_exist(g, {n for n, r in self._grad_req.items() if r != "null"})
        self._order = order = g.arguments() + g.aux_variables()  # the compiled functions' inputs
        self._compiled = compile_graph(g, order)
        self._ownership = OutputOwnership(g, order)
        self._outputs: Optional[list] = None  # allocated on first use (bind stays cheap)
        self._last_train = False
        self._out_tensors: Optional[tuple] = None
        self._leaves: list = []
        self._monitor: Optional[tuple] = None
        self._failed: Any = None  # the error the last forward's outputs hold (ndarray._Pending)

    def _allocate_outputs(self) -> list:
        """Zero output arrays of the inferred shapes (MXNet's executor owns them from bind)."""
        g = self._graph
        shapes = {n: a.shape for n, a in zip(self._arg_names + self._aux_names,
                                             self.arg_arrays + self.aux_arrays)}
        dtypes = {n: a.dtype for n, a in zip(self._arg_names + self._aux_names,
                                             self.arg_arrays + self.aux_arrays)}
        try:
            res = infer_graph(g, shapes, dtypes)
        except MXNetError:
            return []
        outs = []
        for node, k in g.outputs:
            s, d = res.out_shapes[id(node)][k], res.out_dtypes[id(node)][k]
            if s is None or any(x < 0 for x in s):
                return []
            outs.append(NDArray(torch.zeros(s, dtype=dtype_torch(d or "float32"),
                                            device=self._ctx.torch_device)))
        if self._out_stypes is not None:
            from ..ndarray.sparse import wrap
            outs = [o if st == "default" else wrap(_storage.cast(o._t, st))
                    for o, st in zip(outs, self._out_stypes)]
        return outs

    @property
    def outputs(self) -> list:
        """The output arrays: from bind on (zeros of the inferred shapes), updated by forward."""
        if self._outputs is None:
            self._outputs = self._allocate_outputs()
        return self._outputs

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

    def get_optimized_symbol(self) -> Any:
        """The Symbol this executor runs: the bound one after graph passes (common
        subexpressions merged unless ``MXNET_ELIMINATE_COMMON_EXPR=0``)."""
        return Symbol(self._graph.outputs)

    def debug_str(self) -> str:
        """The graph node by node (MXNet's layout), the memory a static plan allocates for it
        ("Total N MB allocated", beyond the bound arrays) and the generated source it runs."""
        g = self._graph
        lines = ["Symbol Outputs:"]
        lines += [f"\toutput[{i}]={n.name}({k})" for i, (n, k) in enumerate(g.outputs)]
        for n in g.nodes:
            if n.op is None:
                lines.append(f"Variable:{n.name}")
                continue
            lines += ["--------------------", f"Op:{n.op.name}, Name={n.name}", "Inputs:"]
            lines += [f"\targ[{i}]={src.name}({k})" for i, (src, k) in enumerate(n.inputs)]
        bound = list(zip(self._arg_names + self._aux_names, self.arg_arrays + self.aux_arrays))
        res = infer_graph(g, {n: a.shape for n, a in bound}, {n: a.dtype for n, a in bound})
        grad_vars = {id(v) for v in g.arguments() if self._grad_req.get(v.name, "null") != "null"}
        nbytes = planned_bytes(g, res.out_shapes, res.out_dtypes, grad_vars)
        lines += [f"Total {nbytes >> 20} MB allocated", "", "Generated source:", self._compiled.source]
        return "\n".join(lines)

    def set_monitor_callback(self, callback: Callable[[str, NDArray], Any], monitor_all: bool = False) -> None:
        """Call ``callback(name, array)`` after each forward for every operator output
        (``monitor_all``: before them every input, under its own name and as ``<node>_<input>``)."""
        self._monitor = (callback, bool(monitor_all))

    # -- running ------------------------------------------------------------------------------
    def _run(self, is_train: bool, need_grad: bool) -> tuple:
        if self._out_stypes is not None and not (is_train or need_grad or self._monitor is not None) and \
                self._run_sparse():
            return tuple(_dense(o._t) for o in self._outputs or ())
        args = []
        self._leaves = []
        for n, a in zip(self._arg_names, self.arg_arrays):
            t = _dense(a._t)
            # integer arguments (indices) have no gradient: backward leaves them zero
            if need_grad and self._grad_req[n] != "null" and (t.is_floating_point() or t.is_complex()):
                t = t.detach().requires_grad_(True)
                self._leaves.append((n, t))
            args.append(t)
        args += [_dense(a._t) for a in self.aux_arrays]
        self._failed = None
        try:
            with torch.set_grad_enabled(need_grad):
                outs = self._function(is_train, need_grad)(*args, _train=is_train)
                if self._ownership:
                    outs = self._ownership.apply(outs, args)
        except DeferredError as e:
            return self._fail(e, is_train)
        self._last_train = is_train
        if _nd._PENDING:  # a bound array still holds an operator's error: the outputs inherit it
            self._failed = next((b for b in (_nd._pending_of(a._t) for a in self.arg_arrays + self.aux_arrays)
                                 if b is not None), None)
        self._out_tensors = outs if need_grad else None
        held = self._outputs
        if self._out_stypes is not None:  # outputs MXNet holds in sparse storage
            from ..ndarray.sparse import store_into, wrap
            if held is None or len(held) != len(outs) or any(o.shape != t.shape for o, t in zip(held, outs)):
                held = self._outputs = [wrap(_storage.cast(torch.zeros_like(t.detach()), st))
                                        for t, st in zip(outs, self._out_stypes)]
            with torch.no_grad():
                for o, t in zip(held, outs):
                    store_into(o, t.detach().to(o._t.dtype))
        elif held is not None and len(held) == len(outs) and all(
                o.shape == t.shape and o._t.dtype == t.dtype for o, t in zip(held, outs)):
            with torch.no_grad():
                for o, t in zip(held, outs):
                    o._t.copy_(t.detach())
        else:
            self._outputs = [NDArray(t.detach()) for t in outs]
        if self._failed is not None:
            _nd._hold_error([o._t for o in self._outputs or ()], self._failed)
        if self._monitor is not None:
            self._run_monitor(args, is_train)
        return outs

    def _fail(self, err: DeferredError, is_train: bool) -> tuple:
        """A forward whose graph failed on its values: the outputs keep their shapes and hold
        the error until read."""
        self._last_train = is_train
        self._out_tensors = None
        box = self._failed = _nd._new_pending(MXNetError(f"forward failed: {err}"))
        _nd._hold_error([o._t for o in self.outputs], box)
        return ()

    def _run_sparse(self) -> bool:
        """A predict forward with sparse arguments: the graph's operators run one by one on the
        arrays, with their sparse kernels, as MXNet's do (sparse outputs hold exactly the values
        MXNet's kernels store). False when the graph cannot run so."""
        if not any(a.stype != "default" for a in self.arg_arrays + self.aux_arrays):
            return False
        from ..ndarray.sparse import evaluate_graph, store_into, wrap
        values = dict(zip(self._arg_names + self._aux_names, self.arg_arrays + self.aux_arrays))
        with torch.no_grad():
            outs = evaluate_graph(self._graph, values)
        if outs is None:
            return False
        outs = [o if o.stype == st else wrap(_storage.cast(o._t, st)) for o, st in zip(outs, self._out_stypes or ())]
        held = self._outputs
        if held is not None and len(held) == len(outs) and all(h.shape == o.shape for h, o in zip(held, outs)):
            for h, o in zip(held, outs):
                if h.stype == "default":
                    store_into(h, o._t)
                else:
                    h._set_storage(o._t if o._t.dtype == h._t.dtype else _storage.map_values(o._t, lambda v: v.to(h._t.dtype)))
        else:
            self._outputs = outs
        self._last_train = False
        self._out_tensors = None
        return True

    def _function(self, is_train: bool, need_grad: bool) -> Callable[..., tuple]:
        """The function a forward runs (``pipeline.serving_order``; a forward that keeps
        gradients records, as ``autograd.record()`` does)."""
        for serve in serving_order(need_grad, is_train, profiling=_profiler.running):
            if serve is Serve.TIMED:
                return _profiler.timed_graph(self._compiled)
            if serve is Serve.IN_PLACE and self._predict_function is not None:
                return self._predict_function.fn
            if serve is Serve.COMPILED:
                return self._compiled.fn
        raise AssertionError("serving_order ends with a function that always serves")

    @functools.cached_property
    def _predict_function(self) -> Optional[CompiledGraph]:
        """The bound graph for forwards that need no gradient and are not training, as a
        hybridized block's predict calls (``compile_predict_function``: convolution activations
        channels-last, BatchNorm, residual additions and activations in place), made on the
        first one (None: the passes change nothing); training keeps the plain function, eager
        mode's exact kernels."""
        return compile_predict_function(self._graph, self._order, "graph_fn", PassContext(bound=True))

    def _run_monitor(self, args: list, is_train: bool) -> None:
        callback, monitor_all = self._monitor  # type: ignore[misc]
        entries = [(n, k) for n in self._graph.nodes if n.op is not None for k in range(n.num_outputs())]
        if not entries:
            return
        internals = Graph(entries)
        with torch.no_grad():
            values = compile_graph(internals, self._order).fn(*args, _train=is_train)
        by_entry = {(id(n), k): v for (n, k), v in zip(entries, values)}
        var_values = {id(v): t for v, t in zip(self._order, args)}
        for node in self._graph.nodes:
            if node.op is None:
                continue
            if monitor_all:  # each input under its own name, then as this node's input slot
                for slot, (src, k) in zip(node.monitor_input_names(), node.inputs):
                    t = var_values[id(src)] if src.op is None else by_entry[(id(src), k)]
                    callback(src.output_names()[k], NDArray(t.detach()))
                    callback(f"{node.name}_{slot}", NDArray(t.detach()))
            for k, name in enumerate(node.output_names()):
                callback(name, NDArray(by_entry[(id(node), k)]))

    def forward(self, is_train: bool = False, **kwargs: Any) -> list:
        for k, v in kwargs.items():
            if k not in self._arg_names:
                raise MXNetError(f"forward: {k!r} is not an argument; arguments are {self._arg_names}")
            target = self.arg_arrays[self._arg_names.index(k)]
            src = _tensor(v, target._t)
            if tuple(src.shape) != target.shape:
                raise MXNetError(f"forward: {k} has shape {tuple(src.shape)}, bound shape {target.shape}; "
                                 f"use reshape() to change shapes")
            if target._t.layout is not torch.strided:
                from ..ndarray.sparse import store_into
                store_into(target, src.clone())
                continue
            with torch.no_grad():
                target._t.copy_(src)
        need_grad = is_train and any(r != "null" for r in self._grad_req.values())
        self._run(is_train, need_grad)
        return self.outputs

    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        """Gradients of the outputs (weighted by ``out_grads``, default ones) into the gradient
        arrays; runs the graph first when the last forward kept no record of it."""
        if not any(r != "null" for r in self._grad_req.values()):
            return
        if self._out_tensors is None and self._failed is None:
            self._run(self._last_train, True)
        if self._failed is not None:  # the gradients depend on a failed forward: they hold its error
            _nd._hold_error([g._t for g in self.grad_arrays if g is not None], self._failed)
            if self._out_tensors is None:
                return
        outs = list(self._out_tensors or ())
        if out_grads is None:
            grads = [torch.ones_like(o) for o in outs]
        else:
            if isinstance(out_grads, (NDArray, np.ndarray)):
                out_grads = [out_grads]
            elif isinstance(out_grads, dict):
                names = self._symbol.list_outputs()
                out_grads = [out_grads.get(n) for n in names]
            out_grads = list(out_grads)[: len(outs)]  # extra head gradients are ignored, as in MXNet
            if len(out_grads) != len(outs):
                raise MXNetError(f"backward: {len(out_grads)} output gradients for {len(outs)} outputs")
            grads = [torch.ones_like(o) if g is None else _tensor(g, o) for g, o in zip(out_grads, outs)]
            for g, o in zip(grads, outs):
                if o.requires_grad and g.shape != o.shape:
                    raise MXNetError(f"backward: output gradient of shape {tuple(g.shape)} for an output "
                                     f"of shape {tuple(o.shape)}")
        pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
        leaves = [t for _, t in self._leaves]
        res: tuple = (None,) * len(leaves)
        if pairs and leaves:
            res = _ag.engine_grad([p[0] for p in pairs], leaves, [p[1] for p in pairs], retain_graph=True)
        done = {n for n, _ in self._leaves}
        # integer arguments over every output; floating ones over the outputs that carry no
        # gradient of their own (an integer Cast of them): through float64 twins
        ints = [n for n, a in zip(self._arg_names, self.arg_arrays) if self._grad_req[n] != "null"
                and self.grad_arrays[self._arg_names.index(n)] is not None
                and not (a._t.is_floating_point() or a._t.is_complex())]
        int_grads = self._twin_grads(ints, out_grads, None) if ints else {}
        gradless = [i for i, o in enumerate(outs)
                    if not (o.requires_grad or o.is_floating_point() or o.is_complex())]
        float_extra = self._twin_grads([n for n, _ in self._leaves], out_grads, gradless) \
            if gradless and self._leaves else {}
        done |= set(int_grads)
        with torch.no_grad():
            for n, g in int_grads.items():
                buf = self.grad_arrays[self._arg_names.index(n)]
                _write(buf, g.to(buf._t.dtype), self._grad_req[n] == "add")
            for (n, _), g in zip(self._leaves, res):
                buf = self.grad_arrays[self._arg_names.index(n)]
                extra = float_extra.get(n)
                if extra is not None:
                    g = extra.to(buf._t.dtype) if g is None else g + extra.to(g.dtype)
                if g is None:
                    if self._grad_req[n] == "write":
                        _write(buf, torch.zeros(buf.shape, dtype=buf._t.dtype, device=buf._t.device), False)
                else:
                    _write(buf, g, self._grad_req[n] == "add")
            for n, buf in zip(self._arg_names, self.grad_arrays):
                if n not in done and buf is not None and self._grad_req[n] == "write":
                    # an integer argument: no gradient flows to it
                    _write(buf, torch.zeros(buf.shape, dtype=buf._t.dtype, device=buf._t.device), False)
        if self._monitor is not None:
            self._run_backward_monitor(out_grads)

    def _run_backward_monitor(self, out_grads: Any) -> None:
        """The monitor callback for the backward pass, as MXNet's executor calls it for its
        backward nodes: for each operator node, from the last to the first, the gradient it sends
        to each of its inputs, named ``<node>_backward_output`` (one input) or
        ``<node>_backward_output<i>``. The graph runs again node by node for it (a debugging
        aid: random operators draw again)."""
        from ..ir.interpreter import Interpreter
        callback, _ = self._monitor  # type: ignore[misc]
        env: dict = {}
        for v, a in zip(self._order, self.arg_arrays + self.aux_arrays):
            env[(id(v), 0)] = _dense(a._t).detach()
        taped = []
        for n in self._graph.nodes:
            if n.op is None:
                continue
            ins = [env[(id(src), k)].detach().requires_grad_(env[(id(src), k)].is_floating_point())
                   for src, k in n.inputs]
            attrs = n.kernel_attrs()
            if n.op.train_aware:
                attrs["is_train"] = self._last_train
            if n.subgraphs:
                attrs["subgraphs"] = tuple(Interpreter(sub).run for sub in n.subgraphs)
            with torch.enable_grad():
                res = n.op.kernel(*ins, **attrs)
            outs = (res,) if n.num_outputs() == 1 else tuple(res)
            for k, o in enumerate(outs):
                env[(id(n), k)] = o
            taped.append((n, ins, outs))
        grads: dict = {}
        given = list(out_grads) if isinstance(out_grads, (list, tuple)) else [out_grads]
        for i, (node, k) in enumerate(self._graph.outputs):
            o = env[(id(node), k)]
            g = given[i] if out_grads is not None and i < len(given) and given[i] is not None else None
            g = torch.ones_like(o) if g is None else _tensor(g, o)
            grads[(id(node), k)] = grads[(id(node), k)] + g if (id(node), k) in grads else g
        for n, ins, outs in reversed(taped):
            pairs = [(o, grads[(id(n), k)]) for k, o in enumerate(outs)
                     if (id(n), k) in grads and o.requires_grad]
            wrt = [t for t in ins if t.requires_grad]
            got = iter(_ag.engine_grad([p[0] for p in pairs], wrt, [p[1] for p in pairs], retain_graph=False)
                       if pairs and wrt else [None] * len(wrt))
            maybe = [next(got) if t.requires_grad else None for t in ins]
            in_grads: List[torch.Tensor] = [torch.zeros_like(t) if g is None else g for t, g in zip(ins, maybe)]
            for j, ((src, k), g) in enumerate(zip(n.inputs, in_grads)):
                name = f"{n.name}_backward_output" if len(ins) == 1 else f"{n.name}_backward_output{j}"
                callback(name, NDArray(g.detach()))
                if src.op is not None:
                    key = (id(src), k)
                    grads[key] = grads[key] + g if key in grads else g

    def _twin_grads(self, names: list, out_grads: Any, heads_at: Optional[list]) -> dict:
        """Gradients of arguments ``names`` that torch's graph of the forward cannot give: of
        integer arguments (MXNet differentiates integer arrays), or through integer outputs
        (MXNet's Cast passes gradients both ways). The graph runs node by node with float64
        twins of those arguments, as eager operators do (``ndarray._twin_run``), and the gradients
        of the outputs ``heads_at`` (all: None) flow back through the twins. Only arguments
        something flows to are returned."""
        tensors = []
        leaves = {}
        for v, a in zip(self._order, self.arg_arrays + self.aux_arrays):
            t = _dense(a._t).detach()
            if v.name in names:
                leaf = t.to(torch.float64).requires_grad_(True)
                setattr(t, _ag.TWIN, leaf)
                leaves[v.name] = leaf
            tensors.append(t)
        outs = _nd.run_graph_with_twins(self._graph, self._order, tensors, self._last_train)
        heads, grads = [], []
        given = list(out_grads) if isinstance(out_grads, (list, tuple)) else [out_grads]
        for i, o in enumerate(outs):
            if heads_at is not None and i not in heads_at:
                continue
            h = o if o.requires_grad else getattr(o, _ag.TWIN, None)
            if h is None or not h.requires_grad:
                continue
            g = given[i] if out_grads is not None and i < len(given) else None
            heads.append(h)
            grads.append(torch.ones_like(h) if g is None else _tensor(g, h).to(h.dtype))
        if not heads:
            return {}
        found = list(leaves)
        res = _ag.engine_grad(heads, [leaves[n] for n in found], grads, retain_graph=False)
        return {n: g for n, g in zip(found, res) if g is not None}

    def copy_params_from(self, arg_params: dict, aux_params: Optional[dict] = None,
                         allow_extra_params: bool = False) -> None:
        """Copy values into the bound arrays (cast to their dtypes, as MXNet's ``astype`` then
        ``copyto``); a value of another shape is refused, never broadcast into the array."""
        for kind, params, names, arrays in (("argument", arg_params, self._arg_names, self.arg_dict),
                                            ("auxiliary state", aux_params or {}, self._aux_names,
                                             self.aux_dict)):
            for name, arr in params.items():
                if name not in names:
                    if not allow_extra_params:
                        raise MXNetError(f"copy_params_from: {name!r} is not an {kind} of the executor")
                    continue
                dst = arrays[name]
                if dst._t.layout is not torch.strided:  # a sparse parameter keeps its storage
                    from ..ndarray.sparse import store_into
                    src_t = arr._t if isinstance(arr, NDArray) else torch.as_tensor(np.asarray(arr))
                    if tuple(src_t.shape) != tuple(dst.shape):
                        raise MXNetError(f"copy_params_from: {kind} {name!r} has shape {tuple(src_t.shape)}, "
                                         f"but the bound graph expects {tuple(dst.shape)}")
                    store_into(dst, src_t.to(device=dst._t.device, dtype=dst._t.dtype))
                    continue
                src = _tensor(arr, dst._t)
                if tuple(src.shape) != tuple(dst.shape):
                    raise MXNetError(f"copy_params_from: {kind} {name!r} has shape {tuple(src.shape)}, "
                                     f"but the bound graph expects {tuple(dst.shape)}; the parameters "
                                     f"do not belong to this network (or its input shapes differ)")
                dst._t.copy_(src)

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False, **kwargs: Any) -> "Executor":
        """A new executor for new input shapes. As MXNet's: arrays whose shapes are unchanged are
        shared, smaller ones are views of the old arrays' memory (outputs too: the old executor's
        outputs see the new one's forward), larger ones are new arrays and need
        ``allow_up_sizing=True``."""
        shapes = {n: a.shape for n, a in self.arg_dict.items()}
        shapes.update({k: tuple(v) for k, v in kwargs.items()})
        dtypes = {n: a.dtype for n, a in self.arg_dict.items()}
        new = simple_bind(self._symbol, self._ctx, dict(self._grad_req), dtypes,
                          {k: v for k, v in shapes.items() if k in kwargs or not partial_shaping})

        def shared(name: str, old: Optional[NDArray], fresh: Optional[NDArray]) -> Optional[NDArray]:
            if old is None or fresh is None:
                return fresh
            if old.shape == fresh.shape:
                return old
            n = fresh._t.numel()
            if n <= old._t.numel() and old._t.layout is torch.strided and old._t.is_contiguous() \
                    and old._t.dtype == fresh._t.dtype and fresh._t.layout is torch.strided:
                return NDArray(old._t.view(-1)[:n].view(fresh._t.shape))
            if not allow_up_sizing:
                raise MXNetError(f"reshape: new shape of {name!r} {fresh.shape} is larger than the "
                                 f"original {old.shape}; pass allow_up_sizing=True to allocate it "
                                 f"(binding the large shape first and reshaping down is cheaper)")
            return fresh

        for names, old_arrays, new_arrays in ((self._arg_names, self.arg_arrays, new.arg_arrays),
                                              (self._aux_names, self.aux_arrays, new.aux_arrays),
                                              (self._arg_names, self.grad_arrays, new.grad_arrays)):
            for i, (name, old, fresh) in enumerate(zip(names, old_arrays, new_arrays)):
                new_arrays[i] = shared(name, old, fresh)
        fresh_outs = new.outputs
        if fresh_outs and len(fresh_outs) == len(self.outputs):
            new._outputs = [shared(name, old, f) if old._t.numel() >= f._t.numel() else f
                            for name, old, f in zip(self._symbol.list_outputs(), self.outputs, fresh_outs)]
        new._monitor = self._monitor  # MXNet's reshaped executor keeps the monitor
        return new


def simple_bind(sym: Any, ctx: Optional[Context], grad_req: Any, type_dict: Optional[dict], shapes: dict,
                stype_dict: Optional[dict] = None) -> Executor:
    """Allocate arguments (zeros), gradients and aux states from inferred shapes, then bind.
    Arguments get the storage type ``stype_dict`` or their Variable declares, gradients the one
    storage inference gives them (an ``Embedding(sparse_grad=True)`` weight's is row_sparse)."""
    ctx = ctx or current_context()
    g = sym._graph()
    # keyword arguments that are not shapes are ignored, as MXNet's simple_bind does
    shapes = {k: tuple(v) for k, v in shapes.items() if isinstance(v, (tuple, list))}
    res = infer_graph(g, shapes, type_dict or {})
    device = ctx.torch_device

    def alloc(v: Any) -> NDArray:
        s = res.var_shapes[id(v)]
        if s is None or not all(d > 0 for d in s):
            raise MXNetError(f"simple_bind: cannot infer the shape of {v.name!r} (got {s}); "
                             f"pass it, e.g. simple_bind(ctx, {v.name}=(...))")
        return NDArray(torch.zeros(s, dtype=dtype_torch(res.var_dtypes[id(v)] or "float32"), device=device))

    args = {v.name: alloc(v) for v in g.arguments()}
    aux = {v.name: alloc(v) for v in g.aux_variables()}
    reqs = _grad_reqs(grad_req, list(args))
    grads = {n: NDArray(torch.zeros_like(a._t)) for n, a in args.items() if reqs[n] != "null"}
    declared = {v.name: variable_stype(v) for v in g.arguments()}
    declared.update(stype_dict or {})
    storage = infer_storage(g, declared, res)
    if any(st != "default" for st in list(declared.values()) + list(storage.grads.values())):
        from ..ndarray.sparse import wrap
        args = {n: a if declared.get(n, "default") == "default" else wrap(_storage.cast(a._t, declared[n]))
                for n, a in args.items()}
        grads = {n: a if storage.grads.get(n, "default") == "default" else
                 wrap(_storage.cast(a._t, storage.grads[n])) for n, a in grads.items()}
    return Executor(sym, ctx, args, grads, reqs, aux)
