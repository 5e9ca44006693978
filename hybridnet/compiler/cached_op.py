"""The compiled graph a hybridized block calls (MXNet's CachedOp).

``CachedGraph`` is the one object a HybridBlock or SymbolBlock holds after its first hybridized
call: the traced graph, which of the block's inputs and parameters it reads, their formats, and
compiled variants (``CachedOp``) keyed by the input signature: dtypes and devices, plus shapes
under ``static_shape=True``. A miss compiles a new variant, says which input changed (logging;
one warning per block when it keeps missing) and keeps at most ``max_cached`` variants (LRU).

A ``CachedOp`` is one variant: the graph after the training pipeline compiled to a Python
function, plus the predict-mode functions the predict pipeline builds for it; which one serves
a call is ``pipeline.serving_order``'s decision (see ``pipeline``). A call passes data tensors
then parameter tensors; outside ``autograd.record()`` it
runs with torch's grad mode off so nothing is recorded. Outputs own their memory as eager
results do (``aliasing``). Neither object holds per-call state: threads may call one at once.
"""
from __future__ import annotations

import ast
import functools
import logging
import re
import threading
import warnings
from collections import OrderedDict
from typing import Any, Callable, Optional, Protocol, Sequence, cast

import torch

from ..ir.graph import Graph, Node
from ..ir.interpreter import Interpreter
from ..profiler import recorder as _profiler
from .aliasing import OutputOwnership
from .codegen import CompiledGraph, compile_graph
from .host_memory import keep_freed_memory
from .pipeline import (PassContext, PredictOptions, Serve, Target, lowering_backend, predict_graph,
                       serving_order, training_graph)
from .predict import PredictPlan
from .tiers import TierRefused, TierRunner

__all__ = ["CachedGraph", "CachedOp", "DEFAULT_MAX_CACHED", "AUTOMATIC_TIER_AFTER_CALLS", "compile_predict_function", "lowering_backend"]

_log = logging.getLogger("hybridnet.hybridize")
DEFAULT_MAX_CACHED = 8
# how much faster than what serves otherwise (the predict plan, else the generated function) an
# automatically chosen tier must run, measured when it is built, to replace it
_AUTOMATIC_MIN_SPEEDUP = 1.1
#: predict-mode calls of one signature an automatically chosen tier lets pass before it starts
#: its background build: a build costs tens of predictions' CPU (and slows calls in other
#: threads while it holds the GIL) and pays back only over many more, so it waits until the
#: signature is hot (``tiers.TierRunner``)
AUTOMATIC_TIER_AFTER_CALLS = 20

_set_grad = torch._C._set_grad_enabled
_is_grad = torch.is_grad_enabled


class Mode(Protocol):
    """What a call reads of the calling thread's autograd flags (``autograd.current_mode()``)."""
    recording: bool
    training: bool


class CachedOp:
    """One compiled variant of a graph, inputs ordered ``data_nodes + param_nodes``.

    ``compiled`` is the graph after the training pipeline (``pipeline.TRAINING_PIPELINE``),
    compiled: every call may run it. Predict-mode calls (not recording, not training) may
    instead run what the predict pipeline builds: the lowered tier (``tier``, for ``backend``:
    frozen TorchScript/oneDNN or Inductor, built in the background, see ``tiers``), the predict
    plan (``predict_plan``: BatchNorm folded, identities removed, parameter-only work computed
    once per parameter change, see ``predict``; shape-generic, so variants on one device share
    one: its oneDNN weight reorders fit the first call's input size best) or the in-place
    function (``_predict_function``: convolution activations channels-last, BatchNorm, residual
    additions and activations in place). ``pipeline.serving_order`` decides which, once per
    variant (again when an op hook is set or removed); all give the default function's results
    to float rounding."""

    def __init__(self, graph: Graph, data_nodes: Sequence[Node], param_nodes: Sequence[Node],
                 predict: Optional[PredictPlan] = None, backend: Optional[str] = None,
                 automatic: bool = False):
        self.graph = training_graph(graph)
        order = list(data_nodes) + list(param_nodes)
        present = {id(v) for v in self.graph.variables()}
        self._keep = [i for i, v in enumerate(order) if id(v) in present]
        self._all = len(self._keep) == len(order)
        inputs = [order[i] for i in self._keep]
        self._inputs = inputs
        self.compiled = compile_graph(self.graph, inputs, "hybrid_forward")
        ownership = OutputOwnership(self.graph, inputs)
        self._own = ownership.apply if ownership else None
        self.predict_plan = predict
        self.tier: Optional[TierRunner] = None
        self.tier_refused: Optional[str] = None  # why ``backend`` could not lower this graph
        n_data = self._n_data = sum(1 for i in self._keep if i < len(data_nodes))
        if backend is not None:
            baseline = predict if predict is not None and self._all else None
            try:
                # chosen automatically, it must beat what serves otherwise (the predict plan) and
                # waits until this signature is hot; while it serves, the plan's folded weights go
                self.tier = TierRunner(backend, self.graph, inputs, n_data,
                                       min_speedup=_AUTOMATIC_MIN_SPEEDUP if automatic else 0.0,
                                       baseline=baseline,
                                       defer_calls=AUTOMATIC_TIER_AFTER_CALLS if automatic else 0,
                                       on_serving=predict.release if predict is not None else None)
            except TierRefused as e:
                self.tier_refused = str(e)
                _log.info("the %s tier is not used: %s", backend, e)
        self._hook: Optional[Callable[..., tuple]] = None  # the interpreter while an op hook is set
        self._route()

    def _route(self) -> None:
        """Bind ``pipeline.serving_order``'s answers for this variant's predict-mode calls, other
        calls and profiled calls."""
        runners = {Serve.TIER: self._run_tier, Serve.PLAN: self._run_plan, Serve.IN_PLACE: self._run_in_place,
                   Serve.COMPILED: functools.partial(self._run, self.compiled, self.compiled.fn),
                   Serve.TIMED: self._run_timed}
        if self._hook is not None:
            runners[Serve.HOOK] = functools.partial(self._run, self.compiled, self._hook)

        def route(recording: bool, training: bool, profiling: bool = False) -> tuple:
            return tuple(runners[s] for s in serving_order(
                recording, training, profiling=profiling, hooked=self._hook is not None,
                tier=self.tier is not None, plan=self.predict_plan is not None))
        self._predict_route = route(False, False)
        self._train_route = route(False, True)  # recording or training: the same answer
        self._profiled_route = route(False, False, profiling=True)

    def serving(self, mode: Mode) -> tuple:
        """What may serve a call in ``mode`` now (``pipeline.Serve`` names, first choice first)."""
        return serving_order(mode.recording, mode.training, profiling=_profiler.running,
                             hooked=self._hook is not None, tier=self.tier is not None,
                             plan=self.predict_plan is not None)

    def set_op_hook(self, callback: Optional[Callable[[str, str, Any], Any]], monitor_all: bool = False) -> None:
        """Call ``callback(name, op_name, tensor)`` on every operator output (``<node>_output``)
        and, with ``monitor_all``, first on its inputs (``<node>_<input>``), as MXNet's op hooks
        do. The graph then runs node by node (``ir.interpreter``), never through a predict-mode
        tier; ``None`` restores the generated function."""
        if callback is None:
            self._hook = None
            self._route()
            return
        interpreter = Interpreter(self.graph, self._inputs)

        def on_node(node: Node, ins: list, outs: tuple) -> None:
            name = node.op.name if node.op is not None else "null"
            if monitor_all:
                for slot, t in zip(node.monitor_input_names(), ins):
                    callback(f"{node.name}_{slot}", name, t)
            for out_name, t in zip(node.output_names(), outs):
                callback(out_name, name, t)

        def run(*tensors: Any, _train: bool = False) -> tuple:
            return interpreter.run(*tensors, _train=_train, hook=on_node)
        self._hook = run
        self._route()

    @property
    def source(self) -> str:
        """The generated Python source of the default function (what runs unless a predict-mode
        tier serves the call)."""
        return self.compiled.source

    def __call__(self, tensors: list, mode: Mode) -> tuple:
        """Run on ``tensors`` under ``mode`` (the caller's ``autograd.current_mode()``)."""
        if _profiler.running:
            route = self._profiled_route
        elif mode.recording or mode.training:
            route = self._train_route
        else:
            route = self._predict_route
        for run in route:  # the last one always serves
            outs = run(tensors, mode)
            if outs is not None:
                break
        return outs

    @functools.cached_property
    def _predict_function(self) -> Optional[CompiledGraph]:
        """The in-place function (``compile_predict_function``: convolution activations
        channels-last, BatchNorm, residual additions and activations in place), made on the
        first predict-mode call that reaches it (None: the passes change nothing): results equal
        to float rounding. Recording and training keep ``compiled``, so gradients and batch
        statistics are exactly eager mode's (a BatchNorm over a few values in training mode
        turns rounding differences into visible ones)."""
        return compile_predict_function(self.graph, self._inputs, "hybrid_forward")

    # the runners below serve only where ``_route`` put them: ``tier`` and ``predict_plan`` are set

    def _run_tier(self, tensors: list, mode: Mode) -> Optional[tuple]:
        return cast(TierRunner, self.tier)(tensors if self._all else [tensors[i] for i in self._keep])

    def _run_plan(self, tensors: list, mode: Mode) -> tuple:
        plan = cast(PredictPlan, self.predict_plan)
        try:
            return plan(tensors)
        except (RuntimeError, ValueError, IndexError, TypeError) as e:
            raise explain_failure(self.graph, [v.name for v in plan.data_nodes + plan.param_nodes],
                                  tensors, e, plan.source, len(plan.data_nodes)) from e

    def _run_in_place(self, tensors: list, mode: Mode) -> Optional[tuple]:
        compiled = self._predict_function
        return None if compiled is None else self._run(compiled, compiled.fn, tensors, mode)

    def _run_timed(self, tensors: list, mode: Mode) -> tuple:
        return self._run(self.compiled, _profiler.timed_graph(self.compiled), tensors, mode)

    def _run(self, compiled: CompiledGraph, fn: Callable[..., tuple], tensors: list, mode: Mode) -> tuple:
        """``fn`` (``compiled``'s function, or one standing in for it) on the tensors the graph
        reads; outside recording without gradients; outputs owned as eager results are."""
        if not self._all:
            tensors = [tensors[i] for i in self._keep]
        try:
            if mode.recording or not _is_grad():
                outs = fn(*tensors, _train=mode.training)
            else:
                _set_grad(False)
                try:
                    outs = fn(*tensors, _train=mode.training)
                finally:
                    _set_grad(True)
        except (RuntimeError, ValueError, IndexError, TypeError) as e:
            raise explain_failure(self.graph, compiled.input_names, tensors, e, compiled.source,
                                  self._n_data) from e
        return outs if self._own is None else self._own(outs, tensors)

    def wait_for_tier(self, timeout: Optional[float] = None) -> None:
        """Block until a lowered tier being built in the background is ready (or failed)."""
        if self.tier is not None:
            self.tier.wait(timeout)


Signature = tuple  # per data input: (dtype, device index) or (dtype, device index, shape)


class CachedGraph:
    """A block's traced graph with its compiled variants, keyed by the input signature.

    ``data_names`` are all of the block's data inputs (``data``, ``data1``...), ``param_names``
    the parameters the graph reads, in the order the caller appends their tensors; ``params``
    are the caller's objects for them (opaque here: the block gathers their tensors). A call
    passes the tensors of the data inputs at ``data_pos`` (the ones the graph uses) and then
    the parameter tensors.

    ``static_alloc`` and ``static_shape`` keep MXNet's meanings (buffers reused from call to
    call: ``host_memory``; a compiled variant per input shape). Which predict-mode functions
    the variants build is ``predict`` (``pipeline.PredictOptions``: the predict plan, the
    lowered tier), by default what those flags and ``backend`` switch on
    (``PredictOptions.from_flags``)."""

    def __init__(self, graph: Graph, data_names: Sequence[str], param_names: Sequence[str],
                 params: Sequence[Any] = (), in_format: Any = None, out_format: Any = 0,
                 owner: str = "graph", static_alloc: bool = False, static_shape: bool = False,
                 max_cached: int = DEFAULT_MAX_CACHED, verify: int = 0, created: Sequence = (),
                 backend: Optional[str] = None, predict: Optional[PredictOptions] = None):
        by_name = {v.name: v for v in graph.variables()}
        self.graph = graph
        self.owner = owner
        self.data_names = list(data_names)
        self.data_pos = [i for i, n in enumerate(self.data_names) if n in by_name]
        self.param_names = list(param_names)
        self.params = list(params)
        self.in_format = in_format if in_format is not None else [0] * len(self.data_names)
        self.out_format = out_format
        self.single_output = out_format == 0
        self.verify_left = verify
        self.fast_arity = self._fast_arity()
        self.static_alloc = static_alloc
        if static_alloc:
            keep_freed_memory()  # MXNet's static allocation: buffers are reused, not re-faulted
        self.static_shape = static_shape
        self.predict = predict if predict is not None else \
            PredictOptions.from_flags(static_alloc, static_shape, backend)
        self.max_cached = max_cached
        self.created = list(created)  # where each traced node was created (for verify)
        self.input_nodes = [by_name[self.data_names[i]] for i in self.data_pos] + \
            [by_name[p] for p in self.param_names]
        self._n_data = len(self.data_pos)
        self._variants: "OrderedDict[Signature, CachedOp]" = OrderedDict()
        self._lock = threading.Lock()
        self._last_signature: Optional[Signature] = None
        self._warned = False
        self.compiles = 0
        self._op_hook: Optional[tuple] = None
        self._plans: dict = {}  # device index -> PredictPlan shared by that device's variants

    def _fast_arity(self) -> int:
        """How many inputs forward()'s fast path takes: all of them when they are flat NDArrays
        (no None, no nesting) and verify has no calls left to check, else -1 (no fast path)."""
        n = len(self.data_names)
        return n if self.in_format == [0] * n and not self.verify_left else -1

    def count_verified_call(self) -> None:
        """One call of ``hybridize(verify=N)`` checked; after the last, the fast path opens."""
        self.verify_left -= 1
        self.fast_arity = self._fast_arity()

    def signature(self, tensors: Sequence[torch.Tensor]) -> Signature:
        """The cache key of a call: each data tensor's dtype and device, and its shape when
        ``static_shape`` (the compiled code itself is shape-generic)."""
        if self._n_data == 1:  # the common case, without a generator (this is the hot path)
            t = tensors[0]
            return ((t.dtype, t.get_device(), t.shape),) if self.static_shape else ((t.dtype, t.get_device()),)
        if self.static_shape:
            return tuple([(t.dtype, t.get_device(), t.shape) for t in tensors[:self._n_data]])
        return tuple([(t.dtype, t.get_device()) for t in tensors[:self._n_data]])

    def variant(self, tensors: Sequence[torch.Tensor]) -> "CachedOp":
        """The compiled variant for the signature of ``tensors`` (compiled on a miss)."""
        key = self.signature(tensors)
        op = self._variants.get(key)
        if op is not None:
            if len(self._variants) > 1:
                try:
                    self._variants.move_to_end(key)
                except KeyError:  # another thread's compile just evicted it: the op still runs
                    pass
            return op
        with self._lock:  # concurrent misses compile once; the others wait for it
            op = self._variants.get(key)
            if op is None:
                op = self._compile(key)
        return op

    def __call__(self, tensors: list, mode: "Mode") -> tuple:
        return self.variant(tensors)(tensors, mode)

    @property
    def source(self) -> str:
        """The generated source of the most recently compiled variant (what runs)."""
        return self.latest().source

    def latest(self) -> "CachedOp":
        """The most recently used variant (compiled on first use with no signature: shape-generic)."""
        if not self._variants:
            with self._lock:
                if not self._variants:
                    return self._compile(())
        return next(reversed(self._variants.values()))

    def set_op_hook(self, callback: Optional[Callable[[str, str, Any], Any]], monitor_all: bool = False) -> None:
        """Route every variant through ``CachedOp.set_op_hook`` (``None`` removes the hook)."""
        self._op_hook = None if callback is None else (callback, monitor_all)
        for op in list(self._variants.values()):
            op.set_op_hook(callback, monitor_all)

    def _compile(self, key: Signature) -> "CachedOp":
        if self._variants and key:
            self._report_miss(key)
        op = CachedOp(self.graph, self.input_nodes[:self._n_data], self.input_nodes[self._n_data:],
                      predict=self._plan_for(key), backend=self.predict.tier,
                      automatic=self.predict.tier_automatic)
        if self._op_hook is not None:
            op.set_op_hook(*self._op_hook)
        self.compiles += 1
        if key:
            self._last_signature = key
        self._variants[key] = op
        while len(self._variants) > self.max_cached:
            self._variants.popitem(last=False)
        return op

    def _plan_for(self, key: Signature) -> Optional[PredictPlan]:
        """The predict plan of variants on the device of ``key`` (with ``predict.plan``): one per
        device, so its folded parameters are held once, not once per input shape."""
        if not self.predict.plan:
            return None
        device = key[0][1] if key else -1
        plan = self._plans.get(device)
        if plan is None:
            plan = self._plans[device] = PredictPlan(self.graph, self.input_nodes[:self._n_data],
                                                     self.input_nodes[self._n_data:])
        return plan

    def _report_miss(self, key: Signature) -> None:
        """Log which input changed; warn once when the cache keeps missing (it is full)."""
        old = self._last_signature or ()
        names = [self.data_names[i] for i in self.data_pos]
        changes = []
        for name, a, b in zip(names, old, key):
            for what, i, fmt in (("dtype", 0, _dtype_text), ("device", 1, _device_text),
                                 ("shape", 2, tuple)):
                if i < len(a) and a[i] != b[i]:
                    changes.append(f"input {name!r} {what} {fmt(a[i])} -> {fmt(b[i])}")
        what = "; ".join(changes) or "a new input signature"
        msg = (f"{self.owner}: compiling the hybridized graph again ({len(self._variants) + 1} "
               f"signatures so far): {what}")
        _log.info(msg)
        if len(self._variants) >= self.max_cached and not self._warned:
            self._warned = True
            hint = ("with static_shape=True every new input shape compiles a variant; pass "
                    "static_shape=False for varying shapes, pad batches to a few sizes, or raise "
                    "hybridize(max_cached=N)" if self.static_shape else
                    "keep input dtypes and devices fixed, or raise hybridize(max_cached=N)")
            warnings.warn(f"{msg}. It keeps recompiling: more than max_cached={self.max_cached} "
                          f"signatures, so older ones are dropped; {hint}", stacklevel=5)


def compile_predict_function(graph: Graph, inputs: Sequence[Node], fn_name: str,
                             ctx: PassContext = PassContext()) -> Optional[CompiledGraph]:
    """The in-place function: ``graph`` (the training pipeline's) after the predict pipeline's
    ``IN_PLACE`` stages, compiled for calls that neither record nor train (of a hybridized
    block or a bound executor): convolution activations channels-last (``passes.layout``),
    BatchNorm, residual additions and activations written over the convolution outputs they
    read (``passes.inference.compute_in_place``); None where the stages change nothing."""
    rewritten = predict_graph(graph, Target.IN_PLACE, ctx)
    return None if rewritten is graph else compile_graph(rewritten, inputs, fn_name)


def _dtype_text(d: Any) -> str:
    return str(d).replace("torch.", "")


def _device_text(index: int) -> str:
    return "cpu" if index < 0 else f"gpu({index})"


def explain_failure(graph: Graph, names: Sequence[str], tensors: Sequence[Any], err: Exception,
                    source: str = "", n_data: Optional[int] = None) -> Exception:
    """Turn a kernel error inside a compiled graph into an MXNetError naming the node and shapes,
    by running shape inference with the actual input shapes (only on the failure path); when
    inference passes, the node is the one on the generated line where the kernel failed.

    ``names``/``tensors`` are the graph's inputs, the first ``n_data`` of them data (None: all).
    The message shows the shapes of the data inputs and of the failing node's inputs (parameters
    it reads; outputs of other nodes as inference found them), not every parameter of the graph
    (a resnet has a hundred)."""
    from ..base import MXNetError, dtype_name
    from .infer import infer_graph
    shapes = {n: tuple(t.shape) for n, t in zip(names, tensors)}
    dtypes = {n: dtype_name(t.dtype) for n, t in zip(names, tensors)}
    data = list(names) if n_data is None else list(names[:n_data])
    try:
        inferred = infer_graph(graph, shapes, dtypes)
    except MXNetError as e:
        shown = _shown_shapes(graph, shapes, data, _node_named_in(str(e)), None)
        return MXNetError(f"{e}\n  (while running the hybridized graph; input shapes {shown})")
    except Exception:  # inference itself could not say more: keep the original error
        inferred = None
    node = _failing_node(err, source)
    shown = _shown_shapes(graph, shapes, data, _literal(node) if node else None, inferred)
    at = f" at node {node}" if node else ""
    if isinstance(err, MXNetError):
        # an MXNetError that is also a ValueError/IndexError/TypeError (MXNet's error registry
        # maps those) keeps its class, so callers catch it the same eager or hybridized
        cls = type(err) if isinstance(err, (ValueError, IndexError, TypeError)) else MXNetError
        return cls(f"{err}\n  (while running the hybridized graph{at}; input shapes {shown})")
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return MXNetError(f"the hybridized graph failed{at}: {msg}\n  input shapes: {shown}")


_NODE_IN_MESSAGE = re.compile(r"node ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


def _node_named_in(message: str) -> Optional[str]:
    """The node an inference error names (``node 'x'``, as ``repr`` writes it), or None."""
    m = _NODE_IN_MESSAGE.search(message)
    return _literal(m.group(1)) if m else None


def _literal(text: str) -> Optional[str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def _shown_shapes(graph: Graph, shapes: dict, data: Sequence[str], node_name: Optional[str],
                  inferred: Any) -> dict:
    """The shapes an error message lists: the data inputs, then the inputs of the node named
    ``node_name`` (graph inputs by name; other nodes' outputs by output name, with the shape
    ``inferred`` found, when it ran)."""
    shown = {n: shapes[n] for n in data if n in shapes}
    node = next((n for n in graph.nodes if n.name == node_name), None) if node_name else None
    if node is None:
        return shown
    for src, k in node.inputs:
        if src.op is None:
            if src.name in shapes:
                shown[src.name] = shapes[src.name]
        elif inferred is not None:
            outs = inferred.out_shapes.get(id(src))
            if outs is not None and k < len(outs) and outs[k] is not None:
                shown[src.output_names()[k]] = tuple(outs[k])
    return shown


def _failing_node(err: Exception, source: str) -> str:
    """The node name commented on the generated line that raised ``err`` ('' if not found).

    The comment is the code generator's ``ascii()`` of the name, so it is shown as it is."""
    tb = err.__traceback__
    lineno = 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<hybridnet graph"):
            lineno = tb.tb_lineno
        tb = tb.tb_next
    lines = source.splitlines()
    if not 0 < lineno <= len(lines):
        return ""
    _, sep, comment = lines[lineno - 1].partition("  # ")
    return comment if sep else ""
