"""Predict-mode lowering tiers: the compiled graph handed to TorchScript or Inductor.

The predict pipeline's last, optional stage (``pipeline.PREDICT_PIPELINE``, ``Target.TIER``):
it lowers the training pipeline's graph; which backend, if any, is ``pipeline.PredictOptions``.

The default tier (``codegen``) calls the registry kernels one by one from generated Python. A
*lowered* tier runs the same generated function once under a compiler that sees every kernel's
torch calls, with the parameters baked in as constants, so it can fold, fuse and pre-pack:

``'MKLDNN'`` / ``'ONEDNN'`` (MXNet 1.9.1's backend names for its oneDNN graph pass; aliases,
case-insensitive)
    ``torch.jit.trace`` -> ``torch.jit.freeze`` -> ``torch.jit.optimize_for_inference``
    (Conv+BatchNorm folding, Conv+Add+ReLU fusion, oneDNN weight pre-packing on CPU). Builds in
    a fraction of a second to a few seconds.
``'inductor'``
    ``torch.compile(backend='inductor')`` with ``torch._inductor.config.freezing`` on CPU.
    Builds for seconds: run it through :class:`BackgroundLowering`.
``'default'``
    No lowering (``lower`` refuses it; the caller keeps the default tier).

A lowered program is specialised: to the parameter values (baked in), to the data signature
(shape, dtype, device, layout of each data tensor: traces bake shapes into some operators) and
to predict mode. :class:`LoweredGraph` therefore guards both on every call and returns
:data:`FALLBACK` (``None``) when either changed, never a result computed from stale weights or
for a shape it was not built for; the caller then runs the default tier. :class:`TierRunner`
adds the policy a compiled-graph object needs: it keeps a few lowered signatures, rebuilds in
the background after the parameters changed or a new data signature appeared, and stops
lowering (for good) after builds that keep going stale before they are used.

A build must not cost the process more than it gains (issue 27): it holds the GIL for much of
its run (tracing is Python, freezing is C++ under the GIL), so calls in other threads slow down
while it runs (benchmarks/first_calls.py --only neighbour: resnet18_v1 predictions 2.3x slower
while a LeNet tier builds). A lower thread priority does not help: the build then waits for CPU
while holding the GIL, and its window grows more than the per-call slowdown shrinks (nice 19 on
a loaded 2-core machine: 1.26x slower calls for 3.4 s instead of 2.3x for 0.25 s). So builds
run at the caller's priority but only where they are likely to pay: an automatically chosen
tier waits for a hot signature (``cached_op.AUTOMATIC_TIER_AFTER_CALLS``), decides in the build
thread whether its program pays and drops it there if not, and a dropped TorchScript program
frees its frozen weights (:class:`_FrozenProgram`).

Layout: ``channels_last=True`` runs 4-d data and convolution weights in channels-last memory
inside the program (transparent: same values, outputs contiguous). Measured on this 2-core CPU
(benchmarks/tiers.py) it did not pay for the oneDNN tier (resnet18_v1 / mobilenet1.0 at b32,
3x32x32: equal within noise; 3x224x224: 1.1x / 1.5x slower), so it is off by default.

Graphs that cannot be lowered are refused with :class:`TierRefused` (its message is the reason,
for the caller to log): control flow (``_foreach``, ``_while_loop``, ``_cond``), random
operators (``Dropout`` only in ``mode='always'``: in predict mode otherwise it is the identity),
``Custom`` (arbitrary Python), sparse tensors, graphs whose kernels read tensor *values* in
Python (``.item()``, ``.tolist()``, ``bool(t)``, data-dependent output shapes such as boolean
masks: a trace would freeze them; found by running the default function once under a
``TorchFunctionMode`` that records them, see :func:`value_reads`), and any program whose results
disagree with the default tier on the example data or on a probe (the example reversed along
its batch axis). Shape logic in kernels (``if x.shape[1] != n``) is fine: the data signature is
guarded exactly, so a shape-specialised trace is exact for every call it serves.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import warnings
import weakref
from types import FrameType
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.overrides import TorchFunctionMode

from ..base import MXNetError
from ..ir.graph import Graph, Node
from .aliasing import OutputOwnership
from .codegen import CompiledGraph, compile_graph
from .host_memory import release_freed_memory
from .param_guard import ParameterSnapshot

# Tracing our kernels warns where they branch on shapes (``if w.shape[0] != num_hidden``, or
# NumPy reducing a shape); the data signature is guarded exactly, so those warnings say nothing
# to a user: silence them where they are raised from hybridnet's kernels or NumPy only.
warnings.filterwarnings("ignore", category=torch.jit.TracerWarning, module=r"(hybridnet|numpy)\.")

__all__ = ["BACKENDS", "FALLBACK", "TierRefused", "TierNotFaster", "lower_thread_priority", "check_backend", "refusal_reason", "value_reads", "lower",
           "LoweredGraph", "BackgroundLowering", "TierRunner"]

# accepted names (case-insensitive) -> the canonical name ``check_backend`` returns
_CANONICAL = {"mkldnn": "MKLDNN", "onednn": "MKLDNN", "inductor": "inductor", "default": "default"}
BACKENDS: Tuple[str, ...] = ("MKLDNN", "ONEDNN", "inductor", "default")

FALLBACK = None  # what a lowered callable returns when the caller must run the default tier

# relative/absolute tolerance of the build-time check against the default tier (float32; oneDNN
# sums in another order)
_CHECK_RTOL = 1e-3
_CHECK_ATOL = 1e-4


class TierRefused(MXNetError):
    """A graph (or backend) that a lowered tier will not run; the message says why. The default
    tier keeps serving: this is information for a log, not a user error."""


class TierNotFaster(TierRefused):
    """A program built for an automatically chosen tier that did not run ``min_speedup`` times
    faster than what serves otherwise: dropped where it was built, and the tier disabled."""


def check_backend(name: str) -> str:
    """The canonical backend name for ``name`` (``'MKLDNN'`` for ``'ONEDNN'``, any case);
    MXNetError naming the accepted ones otherwise (MXNet's ``optimize_for`` raises on an
    unknown backend too)."""
    key = name.lower() if isinstance(name, str) else None
    if key not in _CANONICAL:
        raise MXNetError(f"unknown backend {name!r}: hybridnet accepts {', '.join(map(repr, BACKENDS))} "
                         "(case-insensitive; 'ONEDNN' is an alias of 'MKLDNN')")
    return _CANONICAL[key]


def refusal_reason(graph: Graph) -> Optional[str]:
    """Why ``graph`` cannot be lowered by a predict-mode tier, or None when nothing in its
    operators forbids it (the build still checks its results against the default tier)."""
    for n in graph.nodes:
        op = n.op
        if op is None:
            continue
        if op.num_subgraphs or n.subgraphs:  # control flow: its kernel loops over subgraph functions
            return f"node {n.name!r} is control flow ({op.name}): its loop runs in Python"
        if op.open_attrs or op.prepare_call is not None:
            return f"node {n.name!r} is a custom operator ({op.name}): it runs arbitrary Python"
        if op.int8_role is not None:  # MXNet's int8 operators read their ranges in Python
            return (f"node {n.name!r} is an int8 operator ({op.name}): the predict plan runs its layers fused "
                    "(passes/int8.py)")
        if op.random and not op.is_predict_identity(n.attrs):  # Dropout is random in training only
            shown = ", ".join(f"{k}={v!r}" for k, v in sorted(n.kernel_attrs().items()) if v != op.defaults.get(k))
            return f"node {n.name!r} is a random operator in predict mode: {op.name}({shown})"
    return None


# Tensor methods and functions whose result depends on tensor *values* in a way a trace freezes
# (a Python number or branch, or an output shape that follows the data)
_VALUE_READS = frozenset({"__bool__", "item", "tolist", "__int__", "__float__", "__index__",
                          "__complex__", "nonzero", "argwhere", "unique", "unique_consecutive",
                          "masked_select", "bincount", "numpy"})


class _ValueReadRecorder(TorchFunctionMode):
    """Records which graph nodes read tensor values in Python while the default function runs
    eagerly (shapes are plain ints then, so every such read is of data)."""

    def __init__(self, source: str):
        super().__init__()
        self._lines = source.splitlines()
        self.reads: Dict[str, str] = {}  # node name -> what it did

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        if name in _VALUE_READS or (name == "__getitem__" and len(args) > 1 and _has_bool_tensor(args[1])):
            self.reads.setdefault(self._node(), f"Tensor.{name}" if name != "__getitem__"
                                  else "boolean-mask indexing")
        return func(*args, **(kwargs or {}))

    def _node(self) -> str:
        frame: Optional[FrameType] = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename.startswith("<hybridnet graph"):
                line = self._lines[frame.f_lineno - 1] if 0 < frame.f_lineno <= len(self._lines) else ""
                _, sep, comment = line.partition("  # ")
                return comment if sep else "?"
            frame = frame.f_back
        return "?"


def _has_bool_tensor(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in items)


def value_reads(graph: Graph, input_nodes: Sequence[Node], tensors: Sequence[torch.Tensor]) -> Dict[str, str]:
    """``{node name: what}`` for the nodes whose kernels read tensor values in Python (or make
    shapes from them) when the default function runs on ``tensors``: a trace would freeze those."""
    return _run_recording(compile_graph(graph, input_nodes, "probe_graph"), tensors)[0]


def _run_recording(compiled: CompiledGraph, tensors: Sequence[torch.Tensor]) -> Tuple[Dict[str, str], tuple]:
    """The value reads of one predict-mode run of ``compiled``, and its outputs."""
    recorder = _ValueReadRecorder(compiled.source)
    with torch.no_grad(), recorder:
        outs = compiled.fn(*tensors, _train=False)
    return recorder.reads, outs


def _signature(tensors: Sequence[torch.Tensor]) -> tuple:
    return tuple((tuple(t.shape), t.dtype, t.device, t.layout) for t in tensors)


class LoweredGraph:
    """One lowered program, specialised to a data signature and to parameter values.

    ``lowered(tensors)`` takes the default function's arguments (data tensors, then parameter
    tensors) and returns fresh output tensors, or :data:`FALLBACK` when the data signature or
    any parameter (rebound, or written in place) differs from what was baked in."""

    def __init__(self, backend: str, program: Callable, n_data: int, signature: tuple,
                 snapshot: ParameterSnapshot, copy_outputs: Sequence[int], channels_last: bool,
                 build_seconds: float):
        self.backend = backend
        self.n_data = n_data
        self.signature = signature
        self.snapshot = snapshot
        self.channels_last = channels_last
        self.build_seconds = build_seconds
        # median seconds per call measured at build time on the example data, of what serves
        # otherwise (``lower``'s baseline, else the default function) and of this program
        # (0.0: not measured)
        self.default_seconds = 0.0
        self.lowered_seconds = 0.0
        self._program = program
        self._copy = tuple(copy_outputs)

    def matches(self, tensors: Sequence[torch.Tensor]) -> bool:
        """Whether ``tensors`` have the baked signature and parameters."""
        n = self.n_data
        return _signature(tensors[:n]) == self.signature and self.snapshot.matches(tensors[n:])

    def __call__(self, tensors: Sequence[torch.Tensor]) -> Optional[tuple]:
        if not self.matches(tensors):
            return FALLBACK
        return self.run(tensors[:self.n_data])

    def run(self, data: Sequence[torch.Tensor]) -> tuple:
        """Run on data tensors of the baked signature, unguarded (callers checked ``matches``)."""
        with torch.no_grad():
            outs = self._program(*data)
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        outs = [o if o.is_contiguous() else o.contiguous() for o in outs]
        for i in self._copy:
            outs[i] = outs[i].clone()
        return tuple(outs)


class _Baked(torch.nn.Module):
    """The default function with the parameters held as buffers (what freezing makes constant)."""

    def __init__(self, fn: Callable, params: Sequence[torch.Tensor], channels_last: bool):
        super().__init__()
        self._fn = fn
        self._n = len(params)
        self._channels_last = channels_last
        for i, p in enumerate(params):
            self.register_buffer(f"p{i}", p)

    def forward(self, *data: torch.Tensor) -> tuple:
        if self._channels_last:
            data = tuple(d.contiguous(memory_format=torch.channels_last) if d.dim() == 4 else d
                         for d in data)
        params = [getattr(self, f"p{i}") for i in range(self._n)]
        return tuple(self._fn(*data, *params, _train=False))


def _bake(params: Sequence[torch.Tensor], channels_last: bool) -> List[torch.Tensor]:
    """The parameters as the program bakes them in: the caller's tensors themselves (detached),
    4-d ones (convolution weights) copied to channels-last when asked. No private copy (a whole
    model's weights, at the build's peak): freezing and its optimizations make new tensors of
    what they fold or pre-pack and never write the ones they are given, and a program whose
    parameters were written since (in place: the same memory) is never run
    (``ParameterSnapshot``: it falls back and is dropped)."""
    out = []
    for p in params:
        q = p.detach()
        if channels_last and q.dim() == 4:
            q = q.contiguous(memory_format=torch.channels_last)
        out.append(q)
    return out


def _build_torchscript(module: torch.nn.Module, data: tuple) -> Callable:
    # TracerWarnings here are about shapes (``x.shape[0] != n`` in a kernel): the data signature
    # is guarded, so specialising them is exact; value reads were refused before tracing
    # (silenced by the module-level filter: catch_warnings would swap the process-wide filters
    # from this background thread under the caller's feet)
    with torch.no_grad():
        traced = torch.jit.trace(module, data, check_trace=False)
    _check_not_cancelled()
    frozen = torch.jit.freeze(traced.eval())
    try:
        return _FrozenProgram(torch.jit.optimize_for_inference(frozen))
    except RuntimeError:
        # torch 2.13's oneDNN fusion asserts on a clamp with integer bounds (``clip`` with
        # a_min=0, a_max=6 as in MobileNetV2's relu6): the frozen program still runs, unfused
        return _FrozenProgram(torch.jit.freeze(traced.eval()))


class _FrozenProgram:
    """A frozen TorchScript module's ``forward``, run through a function of its own, so that its
    memory goes when the program is dropped.

    Frozen weights (pre-packed for oneDNN by ``optimize_for_inference``) are constants of the
    method's graph, and a method lives in its class type, which TorchScript registers for the
    life of the process: a module that is dropped keeps them (a refused resnet18_v1 tier kept
    about 45 MB, every rebuild after a parameter change as much again). Run through the
    module's own method, its executor keeps them too. Run through a function made from that
    graph (``_create_function_from_graph``: its own compilation unit, the same executor
    optimizations) and emptied once the program is unreachable (no call can be running then),
    they are freed."""

    __slots__ = ("_self", "_fn", "__weakref__")

    def __init__(self, module: Any):
        graph = module.forward.graph
        fn = [torch._C._create_function_from_graph("lowered_graph", graph)]
        self._self = module._c
        self._fn = fn
        weakref.finalize(self, _discard_program, fn, graph).atexit = False

    def __call__(self, *data: torch.Tensor) -> Any:
        return self._fn[0](self._self, *data)


def _discard_program(fn: list, graph: Any) -> None:
    """Drop a frozen program's function, then empty its graph (freeing the constants)."""
    fn.clear()
    try:
        for _ in range(len(list(graph.outputs()))):
            graph.eraseOutput(0)
        for node in reversed(list(graph.nodes())):
            node.destroy()
    except RuntimeError:  # a graph torch will not empty keeps its memory, nothing else breaks
        pass


def _build_inductor(module: torch.nn.Module, data: tuple) -> Callable:
    import torch._inductor.config as inductor_config
    patch = {"freezing": True} if hasattr(inductor_config, "freezing") else {}
    compiled = torch.compile(module, backend="inductor", dynamic=False)
    with inductor_config.patch(patch), torch.no_grad():
        compiled(*data)  # compiles now, under the freezing flag
    return compiled


_BUILDERS: Dict[str, Callable[[torch.nn.Module, tuple], Callable]] = {
    "MKLDNN": _build_torchscript, "inductor": _build_inductor,
}


def _data_independent_outputs(graph: Graph, data_nodes: Sequence[Node]) -> List[int]:
    """Outputs computed from parameters alone: freezing turns them into constants, which the
    program would hand out (and let callers write into) on every call."""
    depends = {id(v) for v in data_nodes}
    for n in graph.nodes:
        if any(id(src) in depends for src, _ in n.inputs):
            depends.add(id(n))
    return [i for i, (n, _) in enumerate(graph.outputs) if id(n) not in depends]


def _probe(t: torch.Tensor) -> torch.Tensor:
    """Other valid values for ``t``: the same elements reversed along the batch axis (or the last
    axis for a batch of one), so indices stay in range and statistics stay alike."""
    if t.dim() == 0:
        return t.clone()
    axis = 0 if t.shape[0] > 1 else t.dim() - 1
    return t.flip(axis)


def _agree(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor]) -> Optional[str]:
    if len(got) != len(want):
        return f"{len(got)} outputs instead of {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {i} is {tuple(g.shape)} {g.dtype}, expected {tuple(w.shape)} {w.dtype}"
        if w.is_floating_point() or w.is_complex():
            ok = torch.allclose(g, w, rtol=_CHECK_RTOL, atol=_CHECK_ATOL, equal_nan=True)
        else:
            ok = torch.equal(g, w)
        if not ok:
            return f"output {i} differs from the default tier"
    return None


def lower(backend: str, graph: Graph, input_nodes: Sequence[Node], n_data: int,
          example_tensors: Sequence[torch.Tensor], channels_last: bool = False,
          timed: bool = False,
          baseline: Optional[Callable[[List[torch.Tensor]], Any]] = None) -> LoweredGraph:
    """Lower ``graph`` (predict mode) for ``backend``; see the module docstring.

    ``input_nodes`` are the graph variables in the order the callable receives tensors (the
    first ``n_data`` are data, the rest parameters), ``example_tensors`` one such list: the data
    signature and parameter values the program is specialised to (baked in as they are: the
    snapshot is taken first, so a write during the build or after makes the program stale,
    never wrong).
    ``channels_last`` runs 4-d data and weights in channels-last memory inside the program
    (results are returned contiguous, values unchanged); off by default because it measured
    slower or no faster on CPU for resnet18_v1 and mobilenet1.0 (benchmarks/tiers.py).
    Raises :class:`TierRefused` (with the reason) for graphs or backends it cannot lower and
    for programs whose results disagree with the default tier on the example and a probe.
    ``timed`` also measures both on the example (``default_seconds``, ``lowered_seconds``); the
    default side is ``baseline(tensors)`` when given (what serves the call otherwise: the predict
    plan), else the default function."""
    name = check_backend(backend)
    if name == "default":
        raise TierRefused("backend 'default' has no lowered tier")
    reason = refusal_reason(graph)
    if reason is not None:
        raise TierRefused(f"{name}: {reason}")
    tensors = list(example_tensors)
    if len(tensors) != len(input_nodes) or not 0 <= n_data <= len(tensors):
        raise ValueError(f"lower: {len(tensors)} example tensors for {len(input_nodes)} inputs "
                         f"({n_data} data)")
    bad = [v.name for v, t in zip(input_nodes, tensors)
           if not isinstance(t, torch.Tensor) or t.layout != torch.strided]
    if bad:
        raise TierRefused(f"{name}: inputs {bad} are not dense tensors")
    data, params = tensors[:n_data], tensors[n_data:]
    snapshot = ParameterSnapshot(params)
    t0 = time.perf_counter()
    compiled = compile_graph(graph, input_nodes, "lowered_graph")
    data_copy = tuple(d.detach().clone() for d in data)
    reads, want = _run_recording(compiled, list(data_copy) + params)
    _check_not_cancelled()
    if reads:
        listed = "; ".join(f"{node} ({what})" for node, what in list(reads.items())[:5])
        raise TierRefused(f"{name}: kernels read tensor values in Python, which a lowered program "
                          f"would freeze: {listed}")
    module = _Baked(compiled.fn, _bake(params, channels_last), channels_last).eval()
    program = _BUILDERS[name](module, data_copy)
    _check_not_cancelled()
    copy_outputs = sorted({i for i, *_ in OutputOwnership(graph, input_nodes).checks}
                          | set(_data_independent_outputs(graph, input_nodes[:n_data])))
    lowered = LoweredGraph(name, program, n_data, _signature(data), snapshot, copy_outputs,
                           channels_last, 0.0)
    with torch.no_grad():
        probe = tuple(_probe(d) for d in data_copy)
        for inputs, expected in ((data_copy, want), (probe, compiled.fn(*probe, *params, _train=False))):
            why = _agree(lowered.run(inputs), expected)
            if why is not None:
                raise TierRefused(f"{name}: the lowered program disagrees with the default tier: {why}")
    if timed:
        example = list(data_copy) + list(params)
        default = (lambda: baseline(example)) if baseline is not None else \
            (lambda: compiled.fn(*data_copy, *params, _train=False))
        lowered.default_seconds, lowered.lowered_seconds = _time_both(default, lambda: lowered.run(data_copy))
    lowered.build_seconds = time.perf_counter() - t0
    return lowered


def _time_both(default: Callable[[], Any], lowered: Callable[[], Any], rounds: int = 5) -> Tuple[float, float]:
    """Median seconds per call of ``default`` and ``lowered``, interleaved (after one warm call
    each), so that a tier that is not faster on this machine can be left out."""
    times: Tuple[List[float], List[float]] = ([], [])
    with torch.no_grad():
        default()
        lowered()
        for _ in range(rounds):
            for fn, out in ((default, times[0]), (lowered, times[1])):
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
    return sorted(times[0])[rounds // 2], sorted(times[1])[rounds // 2]


def _built() -> Callable:
    raise RuntimeError("a background build runs once")


def lower_thread_priority() -> bool:
    """Give the calling thread the lowest scheduling priority (nice 19), for background work that
    must use idle cores only; whether it did. Linux only (there ``setpriority`` on a thread id
    changes that thread alone, and threads it starts inherit it); elsewhere nothing changes."""
    if not sys.platform.startswith("linux") or not hasattr(os, "setpriority"):
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except OSError:
        return False
    return True


class LoweringCancelled(Exception):
    """A background build stopped between stages because the interpreter is exiting."""


# Background builds still running when the interpreter exits would be torn down inside torch's
# C++ code (the process aborts: "terminate called without an active exception"). At exit they
# are told to stop at their next stage boundary and joined first.
_EXITING = threading.Event()
_LIVE_BUILDS: "weakref.WeakSet[BackgroundLowering]" = weakref.WeakSet()


def _check_not_cancelled() -> None:
    if _EXITING.is_set():
        raise LoweringCancelled("the interpreter is exiting")


@atexit.register
def _stop_background_builds() -> None:
    _EXITING.set()
    for job in list(_LIVE_BUILDS):
        job.join()


class BackgroundLowering:
    """Run ``build()`` on a daemon thread; ``ready()`` returns its result once there.

    With ``low_priority`` the thread runs at the lowest scheduling priority (Linux: nice 19 for
    that thread alone, inherited by the OpenMP workers its kernels start). Off by default: a
    build holds the GIL for much of its run, and starved of CPU it holds it longer, so calls in
    other threads lose more in all than beside a build at their own priority (module
    docstring). Once the build is over, the C heap's freed memory (trace, freeze) goes back to
    the system (``host_memory.release_freed_memory``).

    A build that raises is kept: ``ready()`` then warns once (``warnings.warn``, naming the
    error) and returns None for good, so the default tier keeps serving. ``wait()`` blocks
    (tests, benchmarks)."""

    def __init__(self, build: Callable[[], Callable], name: str = "hybridnet-lowering",
                 low_priority: bool = False):
        self._build = build
        self._low_priority = low_priority
        self._result: Optional[Callable] = None
        self.error: Optional[BaseException] = None
        self._warned = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        _LIVE_BUILDS.add(self)
        self._thread.start()

    def _run(self) -> None:
        try:
            if self._low_priority:
                lower_thread_priority()
            _check_not_cancelled()
            self._result = self._build()
        except LoweringCancelled:
            pass  # exiting: nothing to report
        except BaseException as e:  # noqa: BLE001 - reported once by ready()
            self.error = e
        finally:
            self._build = _built  # drop the closure (its example tensors) before trimming
            release_freed_memory()
            self._done.set()
            _LIVE_BUILDS.discard(self)

    def done(self) -> bool:
        """Whether the build finished (successfully or not)."""
        return self._done.is_set()

    def ready(self) -> Optional[Callable]:
        """The built callable, or None while building or after a failed build (warned once)."""
        if not self._done.is_set():
            return None
        if self.error is not None and not self._warned:
            self._warned = True
            warnings.warn(f"hybridnet: lowering failed, the default tier keeps running: "
                          f"{type(self.error).__name__}: {self.error}", RuntimeWarning, stacklevel=2)
        return self._result

    def join(self, timeout: Optional[float] = None) -> bool:
        """Block until the build finished (or ``timeout``); whether it did. Reports nothing."""
        return self._done.wait(timeout)

    def wait(self, timeout: Optional[float] = None) -> Optional[Callable]:
        """Block until the build finished (or ``timeout``), then ``ready()``."""
        self.join(timeout)
        return self.ready()


class TierRunner:
    """The lowered tier of one compiled graph, as a compiled-graph object calls it.

    ``runner(tensors)`` (data tensors then parameter tensors, predict mode) returns the lowered
    program's outputs, or :data:`FALLBACK` (None) when no program fits these tensors yet: the
    caller runs the default tier. On such a miss the runner lowers for the current data
    signature and parameters, in the background by default (the default tier serves meanwhile)
    or at once with ``background=False``. It keeps up to ``max_signatures`` programs (one per data
    signature, least recently built dropped first), drops programs whose parameters changed, and
    disables itself (``disabled`` holds why) after ``max_unused_builds`` programs were dropped
    before serving a single call (weights or shapes that change between predictions), after a
    build failed (warned once), or, with ``min_speedup`` > 0 (the automatic choice), when the
    first program was not that many times faster than the default function (or ``baseline``,
    what serves predict calls otherwise) on its example (judged where it was built, so a
    background build that does not pay drops its program before it ends).

    When to build is a policy: the first ``defer_calls`` calls fall back without starting a
    build. The automatic choice defers (``cached_op.AUTOMATIC_TIER_AFTER_CALLS``): a build costs
    as much CPU as tens of predictions and pays only over many more, so as JIT compilers do it
    waits until the signature is hot; a process that predicts a few times never pays it, and the
    first predictions (the predict plan's build among them) run alone. ``on_serving()``, when given, is
    called once a program is kept: the caller may drop what only the fallback needs (the
    predict plan's folded weights, refolded if it serves again).

    Raises :class:`TierRefused` at construction for backends and graphs it cannot lower."""

    def __init__(self, backend: str, graph: Graph, input_nodes: Sequence[Node], n_data: int, *,
                 background: bool = True, max_signatures: int = 4, max_unused_builds: int = 3,
                 channels_last: bool = False, min_speedup: float = 0.0,
                 baseline: Optional[Callable[[List[torch.Tensor]], Any]] = None, defer_calls: int = 0,
                 on_serving: Optional[Callable[[], None]] = None):
        self.backend = check_backend(backend)
        if self.backend == "default":
            raise TierRefused("backend 'default' has no lowered tier")
        reason = refusal_reason(graph)
        if reason is not None:
            raise TierRefused(f"{self.backend}: {reason}")
        self.graph = graph
        self.input_nodes = list(input_nodes)
        self.n_data = n_data
        self.background = background
        self.max_signatures = max_signatures
        self.max_unused_builds = max_unused_builds
        self.channels_last = channels_last
        self.min_speedup = min_speedup
        self.baseline = baseline
        self._defer = defer_calls  # calls left to the fallback before the first build starts
        self.on_serving = on_serving
        self.disabled: Optional[str] = None
        self.builds = 0
        self._programs: List[LoweredGraph] = []  # most recently built first
        self._used: Dict[int, bool] = {}  # id(program) -> served a call
        self._pending: Optional[BackgroundLowering] = None
        self._unused_builds = 0
        self._lock = threading.Lock()

    def __call__(self, tensors: Sequence[torch.Tensor]) -> Optional[tuple]:
        for program in self._programs:
            if program.matches(tensors):
                self._used[id(program)] = True
                return program.run(tensors[:self.n_data])
        if self.disabled is not None:
            return FALLBACK
        return self._miss(tensors)

    def _miss(self, tensors: Sequence[torch.Tensor]) -> Optional[tuple]:
        with self._lock:
            self._collect()
            self._drop_stale(tensors[self.n_data:])
            if self.disabled is not None:
                return FALLBACK
            for program in self._programs:
                if program.matches(tensors):
                    self._used[id(program)] = True
                    return program.run(tensors[:self.n_data])
            if self._pending is not None:
                return FALLBACK  # one build at a time; the next miss schedules the next
            if self._defer > 0:
                self._defer -= 1
                return FALLBACK
            data = [t.detach().clone() for t in tensors[:self.n_data]]
            example = data + list(tensors[self.n_data:])
            self.builds += 1
            if self.background:
                self._pending = BackgroundLowering(lambda: self._build(example))
                return FALLBACK
            try:
                program = self._build(example)
            except Exception as e:  # noqa: BLE001 - the default tier keeps serving
                self._disable(e)
                return FALLBACK
            finally:
                del example
                release_freed_memory()
            self._add(program)
        return self(tensors) if program.matches(tensors) else FALLBACK

    def _build(self, example: List[torch.Tensor]) -> LoweredGraph:
        """Lower for ``example``; :class:`TierNotFaster` when ``min_speedup`` is not met."""
        program = lower(self.backend, self.graph, self.input_nodes, self.n_data, example,
                        channels_last=self.channels_last, timed=self.min_speedup > 0, baseline=self.baseline)
        if self.min_speedup > 0 and program.lowered_seconds * self.min_speedup > program.default_seconds:
            rival = "the predict plan" if self.baseline is not None else "the default tier"
            why = (f"not {self.min_speedup:g}x faster than {rival} on this machine "
                   f"({program.lowered_seconds * 1e3:.3f} ms vs {program.default_seconds * 1e3:.3f} ms per call)")
            del program  # not kept alive by the exception's traceback until someone collects it
            raise TierNotFaster(why)
        return program

    def _collect(self) -> None:
        pending = self._pending
        if pending is None or not pending.done():
            return
        self._pending = None
        if pending.error is not None:
            self._disable(pending.error)
        else:
            program = pending.ready()
            if isinstance(program, LoweredGraph):  # None: cancelled at exit
                self._add(program)

    def _add(self, program: LoweredGraph) -> None:
        self._keep(([program] + [p for p in self._programs
                                 if p.signature != program.signature])[:self.max_signatures])
        if self.on_serving is not None and self._programs:
            self.on_serving()

    def _drop_stale(self, params: Sequence[torch.Tensor]) -> None:
        self._keep([p for p in self._programs if p.snapshot.matches(params)])

    def _keep(self, programs: List[LoweredGraph]) -> None:
        """Keep ``programs``; count the dropped ones that never served a call, and disable the
        runner when too many did (weights or input shapes change between predictions)."""
        kept = {id(p) for p in programs}
        self._unused_builds += sum(1 for p in self._programs
                                   if id(p) not in kept and not self._used.get(id(p)))
        self._programs = programs
        self._used = {id(p): self._used.get(id(p), False) for p in programs}
        if self._unused_builds >= self.max_unused_builds and self.disabled is None:
            self.disabled = (f"{self._unused_builds} lowered programs were dropped before serving a "
                             "call: parameters or input shapes change between predictions")

    def _disable(self, error: BaseException) -> None:
        self._programs = []
        if isinstance(error, TierNotFaster):  # the automatic choice measured: nothing failed
            self.disabled = str(error)
            return
        self.disabled = f"{type(error).__name__}: {error}"
        warnings.warn(f"hybridnet: {self.backend} lowering failed, the default tier keeps running: "
                      f"{self.disabled}", RuntimeWarning, stacklevel=3)

    def wait(self, timeout: Optional[float] = None) -> None:
        """Block until a background build in flight finished (tests, benchmarks). A first build
        the policy still defers starts at the next call instead: whoever waits for the tier
        wants it settled, not deferred."""
        self._defer = 0
        pending = self._pending
        if pending is not None:
            pending.join(timeout)
        with self._lock:
            self._collect()
