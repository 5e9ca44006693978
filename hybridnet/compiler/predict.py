"""The predict-mode plan of a hybridized graph: the predict pipeline's ``PLAN`` stages
(``pipeline.PREDICT_PIPELINE``), a parameter prologue, two compiled functions.

Outside ``autograd.record()`` and ``train_mode()`` (MXNet's ``is_recording() == False`` and
``is_training() == False``) a graph may be rewritten in ways that would be wrong for training
(``passes.inference``), and whatever depends on the parameters only is computed once per
parameter change instead of once per call (``passes.constfold``): BatchNorm folded into the
Convolution before it costs nothing per call. Parameter changes are noticed by identity and
version counter (``param_guard.ParameterSnapshot``): ``Trainer.step``, ``p.data()[:] = ...``,
``p.set_data`` and ``load_parameters`` all show.

On CPU float32, 2-D convolutions are then fused with their activation or residual join on
oneDNN (``passes.onednn``), with weights reordered in the prologue for the input size of the
call that builds the plan (found by one interpreted run); calls of other sizes get the same
results through the plain weights.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, cast

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from ..ir.graph import Graph, Node
from ..ir.interpreter import Interpreter
from ..ops.fused import onednn_conv_ready
from .aliasing import OutputOwnership
from .codegen import CompiledGraph, compile_graph
from .host_memory import release_freed_memory
from .param_guard import ParameterSnapshot
from .passes.constfold import split_parameter_prologue
from .pipeline import PassContext, Target, predict_graph

__all__ = ["PredictPlan"]

_set_grad = torch._C._set_grad_enabled
_is_grad = torch.is_grad_enabled


class _Program:
    """The compiled prologue and main function for one set of parameter dtypes.

    ``prologue_pos`` are the positions (among the parameters) of those the prologue reads: only
    they can make its results stale (main reads its parameters afresh on every call)."""

    __slots__ = ("dtypes", "prologue", "prologue_pos", "main", "own")

    def __init__(self, dtypes: tuple, prologue: Optional[CompiledGraph], prologue_pos: tuple,
                 main: CompiledGraph,
                 own: Optional[Callable[[Sequence[torch.Tensor], Sequence[torch.Tensor]], tuple]]):
        self.dtypes = dtypes
        self.prologue = prologue
        self.prologue_pos = prologue_pos
        self.main = main
        self.own = own


class _Folded:
    """Prologue results for the parameters a snapshot describes (published as one object).

    ``values`` are all of them (None once dropped: computed again when needed). ``slim`` is
    what calls of the data signature ``slim_key`` get instead: the values their run never reads
    (a fused convolution reads its reordered weight at the size it was planned for, not the
    plain folded one it keeps for other sizes) replaced by shape-only placeholders on the meta
    device, found by watching the first call (``_UnreadValues``). ``watched``: that call ran."""

    __slots__ = ("snapshot", "values", "program", "slim", "slim_key", "watched")

    def __init__(self, snapshot: ParameterSnapshot, values: Optional[tuple], program: _Program,
                 slim: Optional[tuple] = None, slim_key: tuple = (), watched: bool = False):
        self.snapshot = snapshot
        self.values = values
        self.program = program
        self.slim = slim
        self.slim_key = slim_key
        self.watched = watched


#: the smallest prologue value (bytes) worth replacing by a placeholder when unread
_SLIM_MIN_BYTES = 1 << 16
#: tensor properties that read metadata only (a placeholder answers them as the value would)
_METADATA = frozenset({"dtype", "shape", "device", "layout", "requires_grad", "is_mkldnn", "ndim",
                       "is_sparse", "is_quantized", "is_meta", "is_cpu", "is_cuda", "names", "grad_fn",
                       "is_leaf"})


class _UnreadValues(TorchFunctionMode):
    """Records which tensors a run passes to torch (functions, methods, operators, properties
    other than metadata): the prologue values it never passes are unread at this signature."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set = set()

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        owner = getattr(func, "__self__", None)
        if getattr(func, "__name__", "") != "__get__" or getattr(owner, "__name__", "") not in _METADATA:
            for leaf in tree_flatten((args, kwargs or {}))[0]:
                if isinstance(leaf, torch.Tensor):
                    self.read.add(id(leaf))
        return func(*args, **(kwargs or {}))


def _data_key(data: Sequence[torch.Tensor]) -> tuple:
    return tuple((t.shape, t.dtype, t.device, t.layout) for t in data)


def _placeholder(t: torch.Tensor) -> torch.Tensor:
    """A tensor with ``t``'s shape and dtype and no memory: reading it raises (meta device)."""
    return torch.empty(t.shape, dtype=t.dtype, device="meta")


class PredictPlan:
    """A graph compiled for predict mode; ``plan(tensors) -> tuple`` of fresh output tensors.

    ``tensors`` are the data tensors then the parameter tensors, in the order of ``data_nodes``
    and ``param_nodes`` (CachedOp's convention; every variable of ``graph`` is one of them).
    The plan is built at the first call (folding needs the parameters' dtypes); the prologue
    reruns, and the plan is rebuilt if the dtypes changed, only when a parameter the prologue
    reads is replaced or written in place. It runs without gradients, so call it only when not
    recording and not training. Threads may call one plan at once: the only state is the
    prologue cache, replaced as a whole.
    """

    def __init__(self, graph: Graph, data_nodes: Sequence[Node], param_nodes: Sequence[Node]):
        order = list(data_nodes) + list(param_nodes)
        given = {id(v) for v in order}
        missing = [v.name for v in graph.variables() if id(v) not in given]
        if missing:
            raise ValueError(f"PredictPlan: graph variables {missing} are neither data nor parameter "
                             f"nodes; pass every variable of the graph in data_nodes or param_nodes")
        self.graph = graph
        self.data_nodes = list(data_nodes)
        self.param_nodes = list(param_nodes)
        self._n_data = len(self.data_nodes)
        self._folded: Optional[_Folded] = None
        self._program: Optional[_Program] = None  # the last one built (kept across ``release``)
        self._slimming = True  # unread prologue values are replaced by placeholders (``__call__``)
        self._trimmed = False  # the C heap was given back after the first watched call

    def _build(self, tensors: Sequence[torch.Tensor], dtypes: tuple) -> _Program:
        """The ``PLAN`` stages, prologue split and compilation for parameters of ``dtypes``
        (BatchNorm is folded where they share one dtype); ``tensors`` (this call's data then
        parameters) size the oneDNN weight reorders (``passes.onednn``)."""
        order = self.data_nodes + self.param_nodes
        ctx = PassContext(param_dtypes={v.name: d for v, d in zip(self.param_nodes, dtypes)},
                          onednn_shapes=(lambda g: _record_shapes(g, order, tensors))
                          if _onednn_ready(tensors) else None)
        graph = predict_graph(self.graph, Target.PLAN, ctx)
        split = split_parameter_prologue(graph, self.param_nodes)
        prologue: Optional[CompiledGraph] = None
        pos: tuple = ()
        if split.prologue is not None:
            read = {id(v) for v in split.prologue.variables()}
            pos = tuple(i for i, v in enumerate(self.param_nodes) if id(v) in read)
            prologue = compile_graph(split.prologue, [self.param_nodes[i] for i in pos], "predict_prologue")
        inputs = self.data_nodes + self.param_nodes + list(split.folded)
        main = compile_graph(split.main, inputs, "predict_main")
        ownership = OutputOwnership(split.main, inputs)
        return _Program(dtypes, prologue, pos, main, ownership.apply if ownership else None)

    def _refresh(self, tensors: Sequence[torch.Tensor]) -> _Folded:
        """Rebuild the program if the parameter dtypes changed, recompute the prologue's results
        for the parameters among ``tensors`` (data then parameters) and publish both as one
        object."""
        params = tensors[self._n_data:]
        dtypes = tuple(t.dtype for t in params)
        program = self._program
        if program is None or program.dtypes != dtypes:
            program = self._program = self._build(tensors, dtypes)
        read = [params[i] for i in program.prologue_pos]
        snapshot = ParameterSnapshot(read)  # taken first: a write during the run shows next call
        values: tuple = ()
        if program.prologue is not None:
            with torch.no_grad():
                values = program.prologue.fn(*read)
        folded = _Folded(snapshot, values, program)
        self._folded = folded
        return folded

    def _current(self, tensors: Sequence[torch.Tensor]) -> _Folded:
        """The published prologue results, refreshed first if the parameters among ``tensors``
        made them stale."""
        folded = self._folded
        if folded is None:
            return self._refresh(tensors)
        pos = folded.program.prologue_pos
        n = self._n_data
        if pos and not folded.snapshot.matches([tensors[n + i] for i in pos]):
            return self._refresh(tensors)
        return folded

    def __call__(self, tensors: Sequence[torch.Tensor]) -> tuple:
        """The graph's outputs for ``tensors`` (data then parameters), each a tensor the caller
        owns (copied where it would share memory with an input, a folded value or another
        output).

        The prologue values a call of the plan's signature does not read are not kept: the first
        call is watched (``_UnreadValues``), later calls of its data signature get shape-only
        placeholders for the unread ones, and calls of other signatures the full values
        (computed again then). A placeholder that is read after all raises (meta device) or
        makes a meta output: the call then reruns on the full values and the plan stops
        slimming."""
        folded = self._current(tensors)
        program = folded.program
        data = tensors[:self._n_data]
        args = list(tensors)
        slim = folded.slim is not None and _data_key(data) == folded.slim_key
        if slim:
            args.extend(cast(tuple, folded.slim))
            try:
                outs = self._run(program, args)
                if not any(o.is_meta for o in outs if isinstance(o, torch.Tensor)):
                    return outs if program.own is None else program.own(outs, args)
            except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError):
                pass
            self._slimming = False  # a placeholder was read: keep every value from now on
            folded = self._publish_full(folded, tensors, drop_slim=True)
            args = list(tensors)
        values = folded.values if folded.values is not None else self._publish_full(folded, tensors).values
        args.extend(cast(tuple, values))
        if folded.watched or not self._slimming or not values:
            outs = self._run(program, args)
        else:
            watch = _UnreadValues()
            with watch:
                outs = self._run(program, args)
            self._slim(folded, values, watch.read, _data_key(data), outs)
            owned = outs if program.own is None else program.own(outs, args)
            del values, args, folded
            if not self._trimmed:  # the plan's build and the dropped values: given back once
                self._trimmed = True
                release_freed_memory()
            return owned
        return outs if program.own is None else program.own(outs, args)

    @staticmethod
    def _run(program: _Program, args: list) -> tuple:
        if _is_grad():
            _set_grad(False)
            try:
                return program.main.fn(*args)
            finally:
                _set_grad(True)
        return program.main.fn(*args)

    def _slim(self, folded: _Folded, values: tuple, read: set, key: tuple, outs: tuple) -> None:
        """Publish ``folded`` with the values a watched run did not read (nor return) replaced by
        placeholders for calls of data signature ``key``, and the full values dropped."""
        returned = {id(o) for o in outs}
        unread = [i for i, v in enumerate(values)
                  if isinstance(v, torch.Tensor) and id(v) not in read and id(v) not in returned
                  and v.layout == torch.strided and not v.is_meta
                  and v.untyped_storage().nbytes() >= _SLIM_MIN_BYTES]
        if not unread or self._folded is not folded:
            folded.watched = True
            return
        drop = set(unread)
        slim = tuple(_placeholder(v) if i in drop else v for i, v in enumerate(values))
        self._folded = _Folded(folded.snapshot, None, folded.program, slim, key, watched=True)

    def _publish_full(self, folded: _Folded, tensors: Sequence[torch.Tensor], drop_slim: bool = False) -> _Folded:
        """``folded`` with its full prologue values computed again (for a call of another data
        signature, or after a placeholder was read), published."""
        program = folded.program
        params = tensors[self._n_data:]
        values: tuple = ()
        if program.prologue is not None:
            with torch.no_grad():
                values = program.prologue.fn(*[params[i] for i in program.prologue_pos])
        slim = None
        if not drop_slim and folded.slim is not None:  # share the values both read
            slim = tuple(old if isinstance(old, torch.Tensor) and old.is_meta else new
                         for old, new in zip(folded.slim, values))
        full = _Folded(folded.snapshot, values, program, slim, folded.slim_key, watched=True)
        if self._folded is folded:
            self._folded = full
        return full

    def release(self) -> None:
        """Drop the prologue's results (BatchNorm-folded, reordered weights: as much memory as
        the parameters they come from) while something else serves the calls (a lowered tier);
        the compiled program stays, and the next call of the plan computes them again."""
        self._folded = None

    @property
    def holds_folded(self) -> bool:
        """Whether the prologue's results are held now (computed, not released)."""
        return self._folded is not None

    def prologue_values(self, tensors: Sequence[torch.Tensor]) -> tuple:
        """All the prologue's results for ``tensors`` (data then parameters; computed again
        where the plan dropped them), for tests and inspection."""
        folded = self._current(tensors)
        if folded.values is None:
            folded = self._publish_full(folded, tensors)
        return cast(tuple, folded.values)

    def program_for(self, tensors: Sequence[torch.Tensor]) -> tuple:
        """(prologue, main) compiled graphs used for ``tensors`` (data then parameters; prologue
        None when nothing is hoisted): what runs, for tests and ``source`` listings."""
        program = self._current(tensors).program
        return program.prologue, program.main

    @property
    def source(self) -> str:
        """The generated source of the main function now in use ('' before the first call);
        ``cached_op.explain_failure`` reads the failing node's name off it."""
        program = self._program
        return "" if program is None else program.main.source

    def __repr__(self) -> str:
        state = "not built" if self._program is None else \
            f"main {len(self._program.main.graph.nodes)} nodes"
        return f"<PredictPlan {len(self.graph.nodes)} nodes, {state}>"


def _onednn_ready(tensors: Sequence[torch.Tensor]) -> bool:
    """Whether every input is a dense CPU float32 tensor oneDNN can take (``passes.onednn`` then
    rewrites the graph's 2-D convolutions)."""
    return all(isinstance(t, torch.Tensor) and t.layout == torch.strided and onednn_conv_ready(t) for t in tensors)


def _record_shapes(graph: Graph, inputs: Sequence[Node], tensors: Sequence[torch.Tensor]) -> dict:
    """Every operator output's shape when ``graph`` runs on ``tensors`` (one interpreted run)."""
    shapes: dict = {(id(v), 0): tuple(t.shape) for v, t in zip(inputs, tensors)}

    def record(node: Node, ins: list, outs: tuple) -> None:
        for k, t in enumerate(outs):
            if isinstance(t, torch.Tensor):
                shapes[(id(node), k)] = tuple(t.shape)
    with torch.no_grad():
        Interpreter(graph, inputs).run(*tensors, hook=record)
    return shapes
