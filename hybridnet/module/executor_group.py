"""DataParallelExecutorGroup: one bound Executor per context, each running a slice of the
batch (MXNet 1.9.1's ``mxnet.module.executor_group``).

The batch axis of every input and output is found from its layout (``DataDesc.layout`` for
inputs, the ``__layout__`` attribute for outputs; default ``'N'`` first). Each executor gets
``slices[i]`` of the batch, proportional to ``workload``. Parameters live once per executor
(``param_arrays[p][i]``); the Module keeps them equal through a kvstore or identical updates.
Inputs (data, labels, states and any argument that is not a parameter) are allocated from
``shared_data_arrays[i]``, a per-context buffer that executor groups built with
``shared_group`` reuse, so bucketing and reshaping do not reallocate them.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch

from ..base import MXNetError, dtype_from_flag, dtype_np, dtype_torch
from ..context import Context
from ..io import DataDesc
from ..compiler.infer import infer_graph
from ..compiler.storage import infer_storage, variable_stype
from ..ndarray.ndarray import NDArray, placed
from ..ndarray.sparse import BaseSparseNDArray, CSRNDArray, store_into, wrap
from ..ops import storage as _storage
from ..symbol.executor import Executor

__all__ = ["DataParallelExecutorGroup", "split_input_slice"]


def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> List[slice]:
    """Cut ``range(batch_size)`` into one slice per device, proportional to the workloads
    (MXNet's ``executor_manager._split_input_slice``: rounded shares, the rest to the last)."""
    total = float(sum(work_load_list))
    counts = [int(round(w * batch_size / total)) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices = []
    end = 0
    for n in counts:
        begin = min(end, batch_size)
        end = min(begin + n, batch_size)
        if begin >= end:
            raise ValueError(f"cannot split a batch of {batch_size} over workloads {list(work_load_list)}: "
                             f"some devices would get no examples; use a larger batch or fewer contexts")
        slices.append(slice(begin, end))
    return slices


def _tensor(x: Any) -> torch.Tensor:
    if isinstance(x, NDArray):
        return x._t
    if isinstance(x, torch.Tensor):
        return x
    return torch.as_tensor(np.asarray(x))


def _copy_slice(src: Any, dst: NDArray, axis: int, sl: slice) -> None:
    """Copy ``src`` (or its ``sl`` part along ``axis``) into ``dst`` (of any storage type)."""
    if isinstance(src, BaseSparseNDArray) or isinstance(dst, BaseSparseNDArray):
        if axis >= 0 and (sl.start != 0 or src.shape[axis] != sl.stop):
            src = src[sl] if isinstance(src, CSRNDArray) and axis == 0 else \
                NDArray(_storage.to_dense(_tensor(src))).slice_axis(axis=axis, begin=sl.start, end=sl.stop)
        if tuple(src.shape) != tuple(dst.shape):
            raise MXNetError(f"executor group: input of shape {tuple(src.shape)} does not fit the bound "
                             f"shape {tuple(dst.shape)}; reshape the module for the new shapes")
        store_into(dst, _tensor(src).to(device=dst._t.device, dtype=dst._t.dtype))
        return
    t = _tensor(src)
    if axis >= 0 and (sl.start != 0 or t.shape[axis] != sl.stop):
        t = t.narrow(axis, sl.start, sl.stop - sl.start)
    if tuple(t.shape) != tuple(dst.shape):
        raise MXNetError(f"executor group: input of shape {tuple(t.shape)} does not fit the bound "
                         f"shape {tuple(dst.shape)}; reshape the module for the new shapes")
    with torch.no_grad():
        dst._t.copy_(t.to(device=dst._t.device, dtype=dst._t.dtype))


def _load(sources: Sequence, targets: Sequence, axes: Sequence[int]) -> None:
    """Load one batch's arrays into the per-device (slice, array) targets."""
    for src, dsts, axis in zip(sources, targets, axes):
        for sl, dst in dsts:
            _copy_slice(src, dst, axis, sl)


def _merge(arrays: Sequence[Sequence[NDArray]], axes: Sequence[int]) -> List[NDArray]:
    """Concatenate per-device arrays along their batch axis (the first device's when none)."""
    merged = []
    for parts, axis in zip(arrays, axes):
        if axis >= 0 and len(parts) > 1:
            dev = parts[0]._t.device
            merged.append(NDArray(torch.cat([p._t.to(dev) for p in parts], dim=axis)))
        else:
            merged.append(parts[0])
    return merged


def _prepare_group2ctxs(group2ctxs: Any, n: int) -> List[Optional[dict]]:
    """One ``{ctx_group: Context}`` per device (MXNet's ``_prepare_group2ctxs``)."""
    if group2ctxs is None:
        return [None] * n
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != n:
            raise ValueError(f"group2ctxs has {len(group2ctxs)} entries for {n} contexts; give one "
                             f"dict per context or a single dict")
        return group2ctxs
    per_dev: List[dict] = [{} for _ in range(n)]
    for group, ctxs in group2ctxs.items():
        ctxs = ctxs if isinstance(ctxs, list) else [ctxs]
        if len(ctxs) not in (1, n):
            raise ValueError(f"group2ctxs[{group!r}] has {len(ctxs)} contexts; give 1 or {n}")
        for i in range(n):
            per_dev[i][group] = ctxs[0] if len(ctxs) == 1 else ctxs[i]
    return per_dev


class DataParallelExecutorGroup:
    """Executors for ``symbol`` on ``contexts``, splitting each batch by ``workload``."""

    def __init__(self, symbol: Any, contexts: List[Context], workload: Optional[List[float]],
                 data_shapes: Sequence, label_shapes: Optional[Sequence], param_names: List[str],
                 for_training: bool, inputs_need_grad: bool, shared_group: Optional["DataParallelExecutorGroup"] = None,
                 logger: Any = logging, fixed_param_names: Optional[List[str]] = None,
                 grad_req: Any = "write", state_names: Optional[List[str]] = None,
                 group2ctxs: Any = None):
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload) if workload is not None else [1] * len(self.contexts)
        self.group2ctxs = _prepare_group2ctxs(group2ctxs, len(self.contexts))
        self._check_group2ctxs()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self._total_exec_bytes = 0
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        if not for_training:
            grad_req = "null"
        data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
        if label_shapes is not None:
            label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        self.grad_req = self._grad_reqs(grad_req, [x.name for x in data_shapes])
        self.shared_data_arrays: List[Dict[str, NDArray]] = (
            shared_group.shared_data_arrays if shared_group is not None else [{} for _ in self.contexts])
        self.batch_size: Optional[int] = None
        self.slices: Optional[List[slice]] = None
        self.execs: List[Executor] = []
        self.data_arrays: Any = None
        self.label_arrays: Any = None
        self.param_arrays: Any = None
        self.state_arrays: Any = None
        self.grad_arrays: Any = None
        self.aux_arrays: Any = None
        self.input_grad_arrays: Any = None
        self.data_shapes: Any = None
        self.label_shapes: Any = None
        self.data_names: Any = None
        self.label_names: Any = None
        self.data_layouts: Any = None
        self.label_layouts: Any = None
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [DataDesc.get_batch_axis(symbol[i].attr("__layout__"))
                               for i in range(self.num_outputs)]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # -- setup -----------------------------------------------------------------------------
    def _check_group2ctxs(self) -> None:
        """Model-parallel placement (ctx_group on different devices) is not supported: every
        group must map to a context on the same device as the executor's."""
        for ctx, mapping in zip(self.contexts, self.group2ctxs):
            for group, gctx in (mapping or {}).items():
                if Context(gctx).torch_device != Context(ctx).torch_device:
                    raise MXNetError(f"group2ctxs: ctx_group {group!r} -> {gctx} is on another device "
                                     f"than the executor's {ctx}; hybridnet runs a bound graph on one "
                                     f"device (use data parallelism with context=[...] instead)")

    def _grad_reqs(self, grad_req: Any, data_names: List[str]) -> Dict[str, str]:
        """Per-argument grad_req (MXNet's rules: parameters get ``grad_req`` unless fixed,
        data only when ``inputs_need_grad``, labels and states never)."""
        def default(name: str, req: str) -> str:
            if name in self.param_names:
                return "null" if name in self.fixed_param_names else req
            if name in data_names:
                return req if self.inputs_need_grad else "null"
            return "null"

        if isinstance(grad_req, str):
            return {k: default(k, grad_req) for k in self.arg_names}
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ValueError(f"grad_req has {len(grad_req)} entries for {len(self.arg_names)} "
                                 f"arguments {self.arg_names}")
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            reqs = {k: default(k, "write") for k in self.arg_names}
            reqs.update(grad_req)
            return reqs
        raise ValueError(f"grad_req must be a str, list, tuple or dict, got {type(grad_req).__name__}")

    def decide_slices(self, data_shapes: Sequence[DataDesc]) -> List[int]:
        """Batch axis of each input; sets ``batch_size`` and ``slices`` (all inputs with a
        batch axis must agree on its size)."""
        if not data_shapes:
            raise ValueError("decide_slices: no input shapes given")
        axes = [DataDesc.get_batch_axis(x.layout) for x in data_shapes]
        for desc, axis in zip(data_shapes, axes):
            if axis == -1:
                continue
            size = desc.shape[axis]
            if self.batch_size is not None:
                if size != self.batch_size:
                    raise ValueError(f"all inputs must have the same batch size: batch_size = "
                                     f"{self.batch_size}, but {desc.name} has shape {desc.shape}")
            else:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
        return axes

    def _sliced_shape(self, shapes: Sequence[DataDesc], i: int, axes: Sequence[int]) -> List[DataDesc]:
        out = []
        for desc, axis in zip(shapes, axes):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            out.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return out

    def bind_exec(self, data_shapes: Sequence[DataDesc], label_shapes: Optional[Sequence[DataDesc]],
                  shared_group: Optional["DataParallelExecutorGroup"] = None, reshape: bool = False) -> None:
        """Bind one executor per context (or rebind them for new shapes, keeping parameters)."""
        if not reshape and self.execs:
            raise MXNetError("bind_exec: executors are already bound; use reshape()")
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = self.decide_slices(label_shapes) if label_shapes is not None else None
        old = self.execs
        self.execs = []
        for i in range(len(self.contexts)):
            dshapes = self._sliced_shape(data_shapes, i, self.data_layouts)
            lshapes = (self._sliced_shape(label_shapes, i, self.label_layouts)
                       if label_shapes is not None else [])
            like = old[i] if reshape else (shared_group.execs[i] if shared_group is not None else None)
            ex = self._bind_ith_exec(i, dshapes, lshapes, like, share_all=reshape)
            if reshape and like is not None:  # MXNet's reshaped executors keep the monitor callback
                ex._monitor = like._monitor
            self.execs.append(ex)
        self.data_shapes = list(data_shapes)
        self.label_shapes = list(label_shapes) if label_shapes is not None else None
        self.data_names = [d.name for d in self.data_shapes]
        self.label_names = [d.name for d in self.label_shapes] if self.label_shapes is not None else None
        self._collect_arrays()

    def reshape(self, data_shapes: Sequence[DataDesc], label_shapes: Optional[Sequence[DataDesc]]) -> None:
        """Rebind for new input shapes; parameters, gradients and aux states are kept."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _bind_ith_exec(self, i: int, data_shapes: List[DataDesc], label_shapes: List[DataDesc],
                       like: Optional[Executor], share_all: bool) -> Executor:
        """Allocate and bind executor ``i``. Parameters (all arguments with ``share_all``) and
        aux states come from ``like`` when it has them with the same shape; other inputs come
        from the shared buffer."""
        ctx = Context(self.contexts[i])
        device = ctx.torch_device
        buffer = self.shared_data_arrays[i]
        input_shapes = {d.name: tuple(d.shape) for d in data_shapes + label_shapes}
        input_types = {d.name: d.dtype for d in data_shapes + label_shapes}
        attrs = self.symbol.attr_dict()
        for name in list(input_types):
            dt = attrs.get(name, {}).get("__dtype__")
            if dt is not None and dt != "-1" and name in [d.name for d in data_shapes]:
                input_types[name] = dtype_np(dtype_from_flag(int(dt)))
        unknown = set(input_shapes) - set(self.symbol.list_inputs())
        if unknown:
            raise MXNetError(f"bind: {sorted(unknown)} are not inputs of the symbol; inputs are "
                             f"{self.symbol.list_inputs()}")
        # shapes and dtypes in one inference pass over the graph (binding an unrolled RNN's
        # graph of thousands of nodes is dominated by inference)
        graph = self.symbol._graph()
        inferred = infer_graph(graph, {k: tuple(int(d) for d in v) for k, v in input_shapes.items()},
                               {k: v for k, v in input_types.items() if v is not None})
        arg_shapes = [inferred.var_shapes[id(v)] or () for v in graph.arguments()]
        aux_shapes = [inferred.var_shapes[id(v)] or () for v in graph.aux_variables()]
        arg_types = [inferred.var_dtypes[id(v)] for v in graph.arguments()]
        aux_types = [inferred.var_dtypes[id(v)] for v in graph.aux_variables()]

        # storage types: an argument's declared one (Variable(stype=...)), a gradient's inferred
        arg_stypes = {v.name: variable_stype(v) for v in graph.arguments()}
        grad_stypes = infer_storage(graph, arg_stypes).grads

        def fresh(shape: tuple, dtype: Any, stype: str = "default") -> NDArray:
            if stype != "default":
                return wrap(_storage.zeros(stype, shape, dtype_torch(dtype or np.float32), device))
            return NDArray(torch.zeros(shape, dtype=dtype_torch(dtype or np.float32), device=device))

        def from_buffer(name: str, shape: tuple, dtype: Any) -> NDArray:
            if arg_stypes.get(name, "default") != "default":
                return fresh(shape, dtype, arg_stypes[name])
            have = buffer.get(name)
            want = torch.Size(shape)
            if have is not None and have._t.dtype == dtype_torch(dtype or np.float32):
                if tuple(have.shape) == tuple(shape):
                    return have
                if have._t.numel() >= want.numel() and have._t.is_contiguous():
                    return NDArray(have._t.view(-1)[:want.numel()].view(want))
            arr = fresh(shape, dtype)
            buffer[name] = arr
            return arr

        args: Dict[str, NDArray] = {}
        grads: Dict[str, Optional[NDArray]] = {}
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types):
            shape = tuple(shape)
            if any(d <= 0 for d in shape):
                raise MXNetError(f"bind: cannot infer the shape of argument {name!r} (got {shape}); "
                                 f"give it in data_shapes/label_shapes or as Variable(shape=...)")
            shared = like is not None and (share_all or name in self.param_names) and name in like.arg_dict
            if shared and tuple(like.arg_dict[name].shape) == shape:
                args[name] = like.arg_dict[name]
            elif name in self.param_names:
                args[name] = fresh(shape, dtype, arg_stypes.get(name, "default"))
            else:
                args[name] = from_buffer(name, shape, dtype)
            if self.grad_req[name] == "null":
                grads[name] = None
            elif shared and like.grad_dict.get(name) is not None and \
                    tuple(like.grad_dict[name].shape) == shape:
                grads[name] = like.grad_dict[name]
            else:
                grads[name] = fresh(shape, dtype, grad_stypes.get(name, "default"))
        aux: Dict[str, NDArray] = {}
        for name, shape, dtype in zip(self.aux_names, aux_shapes, aux_types):
            if like is not None and name in like.aux_dict and tuple(like.aux_dict[name].shape) == tuple(shape):
                aux[name] = like.aux_dict[name]
            else:
                aux[name] = fresh(tuple(shape), dtype)
        mapping = self.group2ctxs[i] if i < len(self.group2ctxs) else None
        if mapping:  # arrays of a ctx_group's variables live on the group's context (same device)
            for name in args:
                gctx = mapping.get(attrs.get(name, {}).get("__ctx_group__"))
                if gctx is not None:
                    for arr in (args[name], grads.get(name)):
                        if arr is not None:
                            placed(arr, Context(gctx))
        exe = Executor(self.symbol, ctx, args, grads, self.grad_req, aux)
        self._total_exec_bytes += sum(a._t.numel() * a._t.element_size()
                                      for a in list(args.values()) + list(aux.values()))
        return exe

    def _collect_arrays(self) -> None:
        self.data_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(self.execs)]
                            for name in self.data_names]
        self.state_arrays = [[e.arg_dict[name] for e in self.execs] for name in self.state_names]
        if self.label_shapes is not None:
            self.label_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(self.execs)]
                                 for name in self.label_names]
        else:
            self.label_arrays = None
        self.param_arrays = [[e.arg_arrays[i] for e in self.execs]
                             for i, name in enumerate(self.arg_names) if name in self.param_names]
        if self.for_training:
            self.grad_arrays = [[e.grad_arrays[i] for e in self.execs]
                                for i, name in enumerate(self.arg_names) if name in self.param_names]
        else:
            self.grad_arrays = None
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_arrays[self.arg_names.index(name)] for e in self.execs]
                                      for name in self.data_names if name in self.arg_names]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in self.execs] for i in range(len(self.aux_names))]

    # -- parameters --------------------------------------------------------------------------
    def set_params(self, arg_params: Dict[str, NDArray], aux_params: Optional[Dict[str, NDArray]],
                   allow_extra: bool = False) -> None:
        """Copy parameter values into every executor (extra names are an error unless
        ``allow_extra``)."""
        if not allow_extra:
            extra = [k for k in arg_params if k not in self.arg_names]
            extra += [k for k in (aux_params or {}) if k not in self.aux_names]
            if extra:
                raise ValueError(f"set_params: {sorted(extra)} are not parameters of the symbol; pass "
                                 f"allow_extra=True to ignore them")
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=True)

    def get_params(self, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray]) -> None:
        """Write the device average of each parameter and aux state into the given dicts."""
        with torch.no_grad():
            for name, block in zip(self.param_names, self.param_arrays):
                avg = sum(_storage.to_dense(w._t).to("cpu", torch.float64) for w in block) / len(block)
                if isinstance(arg_params[name], BaseSparseNDArray):
                    store_into(arg_params[name], avg.to(arg_params[name]._t.dtype))
                    continue
                arg_params[name]._t.copy_(avg.to(arg_params[name]._t.dtype))
            for name, block in zip(self.aux_names, self.aux_arrays):
                avg = sum(w._t.to("cpu", torch.float64) for w in block) / len(block)
                aux_params[name]._t.copy_(avg.to(aux_params[name]._t.dtype))

    # -- computation ---------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: Optional[bool] = None) -> None:
        """Load the batch's data (and labels, when bound with labels) and run every executor."""
        _load(data_batch.data, self.data_arrays, self.data_layouts)
        if is_train is None:
            is_train = self.for_training
        label = getattr(data_batch, "label", None)
        if self.label_arrays is not None and label:
            _load(label, self.label_arrays, self.label_layouts)
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def get_output_shapes(self) -> List[tuple]:
        """``[(name, shape)]`` of the merged outputs (batch axis = the full batch size)."""
        shapes = []
        for name, out, axis in zip(self.output_names, self._output_shapes_of(self.execs[0]),
                                   self.output_layouts):
            shape = list(out)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def _output_shapes_of(self, exe: Executor) -> List[tuple]:
        if exe.outputs:
            return [tuple(o.shape) for o in exe.outputs]
        shapes = {n: tuple(a.shape) for n, a in exe.arg_dict.items()}
        _, out_shapes, _ = self.symbol.infer_shape(**shapes)
        return [tuple(s) for s in out_shapes]

    def get_outputs(self, merge_multi_context: bool = True, begin: int = 0, end: Optional[int] = None) -> list:
        """Outputs ``[begin, end)`` of the last forward, merged over devices or per device."""
        end = self.num_outputs if end is None else end
        if not self.execs[0].outputs:
            raise MXNetError("get_outputs: call forward() first")
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return _merge(outputs, self.output_layouts[begin:end])
        return outputs

    def get_states(self, merge_multi_context: bool = True) -> list:
        """The state arrays, per device (merging is not supported, as in MXNet)."""
        if merge_multi_context:
            raise MXNetError("get_states: merge_multi_context=True is not supported; pass False")
        return self.state_arrays

    def set_states(self, states: Any = None, value: Any = None) -> None:
        """Set states from per-device arrays ``[[s1_dev1, s1_dev2], ...]`` or to a scalar."""
        if (states is None) == (value is None):
            raise ValueError("set_states: give exactly one of states and value")
        with torch.no_grad():
            for i, dsts in enumerate(self.state_arrays):
                for j, dst in enumerate(dsts):
                    if states is not None:
                        dst._t.copy_(_tensor(states[i][j]).to(dst._t.device, dst._t.dtype))
                    else:
                        dst._t.fill_(value)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """Gradients of the data inputs from the last backward."""
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads: bind with inputs_need_grad=True")
        if merge_multi_context:
            return _merge(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def backward(self, out_grads: Any = None) -> None:
        """Backward on every executor with its slice of ``out_grads``."""
        if not self.for_training:
            raise MXNetError("backward: re-bind with for_training=True to run backward")
        if all(req == "null" for req in self.grad_req.values()):
            return  # nothing to differentiate (e.g. a graph without parameters), as in MXNet
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        for exe, sl in zip(self.execs, self.slices):
            parts = []
            for grad, axis in zip(out_grads, self.output_layouts):
                t = _tensor(grad)
                if axis >= 0:
                    t = t.narrow(axis, sl.start, sl.stop - sl.start)
                parts.append(NDArray(t))
            exe.backward(out_grads=parts if parts else None)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Update ``eval_metric`` with each device's outputs and its slice of ``labels``."""
        label_names = self.label_names or []
        for i, (exe, sl) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                part = labels[i]
            else:
                part = []
                axes = self.label_layouts or [0] * len(labels)
                for label, axis in zip(labels, axes):
                    if axis >= 0:
                        part.append(NDArray(_tensor(label).narrow(axis, sl.start, sl.stop - sl.start)))
                    else:
                        part.append(label)
            eval_metric.update_dict(OrderedDict(zip(label_names, part)),
                                    OrderedDict(zip(self.output_names, exe.outputs)))

    def install_monitor(self, mon: Any) -> None:
        """Install a ``mx.mon.Monitor`` on every executor."""
        for exe in self.execs:
            mon.install(exe)
