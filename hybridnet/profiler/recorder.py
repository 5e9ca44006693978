"""The profiler's event store and the timing wrappers the execution paths call.

This module sits below everything that runs operators (it needs only the standard library and
torch), so the imperative dispatch (``ndarray.invoke``), the compiled-graph runners (Executor,
CachedOp), ``Block.__call__`` and the Custom operator can all report to it.  Each of those reads
the one flag :data:`running` and takes its ordinary path when it is False, so an idle profiler
costs one attribute read per call.

Events are kept as compact tuples ``(ph, name, category, ts_us, value, tid, extra)`` and turned
into Chrome trace events (``chrome://tracing``: ``ph`` 'X' spans, 'C' counters, 'i' instants)
only when dumped (:func:`chrome_event`); when when aggregate statistics are on, as per-(domain, name) counts and times —
MXNet's ``dumps()`` tables.  When a ``torch.profiler`` session is active, every span is also a
``torch.profiler.record_function`` label, so torch's own traces show MXNet's names.
"""
from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

#: True while the profiler is in state 'run' and not paused: the only thing hot paths read.
running = False

_lock = threading.RLock()
_events: List[tuple] = []
_time_stats: Dict[Tuple[str, str], List[float]] = {}   # (domain, name) -> [count, total, min, max] us
_mem_stats: Dict[Tuple[str, str], List[float]] = {}    # (domain, name) -> [count, total, min, max] kB
_mem_in_use: Dict[str, int] = {}                       # device -> bytes held by profiled outputs
_local = threading.local()
_PID = os.getpid()
# perf_counter gives precise intervals; this offset turns it into wall-clock microseconds
_EPOCH_US = time.time_ns() / 1000.0 - time.perf_counter_ns() / 1000.0

config: Dict[str, Any] = {
    "filename": "profile.json", "profile_symbolic": True, "profile_imperative": True,
    "profile_memory": True, "profile_api": True, "aggregate_stats": False,
    "continuous_dump": False,
}


def now_us() -> float:
    """Wall-clock microseconds with perf_counter resolution (the trace's time base)."""
    return time.perf_counter_ns() / 1000.0 + _EPOCH_US


_tid = threading.get_ident


def prefix() -> str:
    """Name prefix of the current thread (``MyOp::`` inside a Custom operator, ``scope``)."""
    return getattr(_local, "prefix", "")


def set_prefix(value: str) -> str:
    """Set this thread's name prefix; returns the previous one (to restore)."""
    old = prefix()
    _local.prefix = value
    return old


def _add_stat(table: dict, key: Tuple[str, str], value: float) -> None:
    entry = table.get(key)
    if entry is None:
        table[key] = [1, value, value, value]
    else:
        entry[0] += 1
        entry[1] += value
        entry[2] = min(entry[2], value)
        entry[3] = max(entry[3], value)


def add_span(domain: str, name: str, start_us: float, end_us: float,
             args: Optional[dict] = None) -> None:
    """One completed span (Chrome 'X' event) in ``domain``; counted in the aggregate tables."""
    event = ("X", name, domain, start_us, max(end_us - start_us, 0.0), _tid(), args)
    with _lock:
        _events.append(event)
        if config["aggregate_stats"]:
            _add_stat(_time_stats, (domain, name), end_us - start_us)


def add_counter(domain: str, name: str, value: float) -> None:
    """A counter sample (Chrome 'C' event)."""
    event = ("C", name, domain, now_us(), value, _tid(), None)
    with _lock:
        _events.append(event)


def add_instant(domain: str, name: str, scope: str) -> None:
    """An instant marker (Chrome 'i' event) with scope 'g'lobal, 'p'rocess or 't'hread."""
    event = ("i", name, domain, now_us(), scope, _tid(), None)
    with _lock:
        _events.append(event)


class Span:
    """Times a region: ``with Span(domain, name):`` records it on exit, as a torch
    ``record_function`` label too when a torch profiler session is active."""
    __slots__ = ("domain", "name", "args", "_start", "_torch")

    def __init__(self, domain: str, name: str, args: Optional[dict] = None) -> None:
        self.domain, self.name, self.args = domain, name, args
        self._torch: Any = None
        self._start = 0.0

    def __enter__(self) -> "Span":
        if torch.autograd._profiler_enabled():
            self._torch = torch.profiler.record_function(self.name)
            self._torch.__enter__()
        self._start = now_us()
        return self

    def __exit__(self, *exc: Any) -> None:
        end = now_us()
        if self._torch is not None:
            self._torch.__exit__(*exc)
        add_span(self.domain, self.name, self._start, end, self.args)


# ---- memory ----------------------------------------------------------------------------------
def _device_name(t: torch.Tensor) -> str:
    dev = t.device
    return f"{'gpu' if dev.type == 'cuda' else dev.type}/{dev.index or 0}"


_live: Dict[Any, Tuple[str, int]] = {}  # weak reference to a tracked output -> (device, bytes)


def _release(ref: Any) -> None:
    """Weak-reference callback: a tracked output was freed."""
    with _lock:
        device, nbytes = _live.pop(ref, (None, 0))
        if device is None:
            return
        _mem_in_use[device] = _mem_in_use.get(device, 0) - nbytes
        if running and config["profile_memory"]:
            _memory_sample(device)


def _memory_sample(device: str) -> None:
    kb = _mem_in_use.get(device, 0) / 1000.0
    name = f"Memory: {device}"
    _events.append(("C", name, "Device Storage", now_us(), kb, _tid(), None))
    if config["aggregate_stats"]:
        _add_stat(_mem_stats, ("Device Storage", name), kb)


def track_outputs(result: Any) -> None:
    """Count the memory of an operator's new output tensors until they are freed."""
    tensors = [result] if isinstance(result, torch.Tensor) else \
        [r for r in result if isinstance(r, torch.Tensor)] if isinstance(result, (list, tuple)) else []
    for t in tensors:
        nbytes = t.numel() * t.element_size()
        if nbytes == 0:
            continue
        device = _device_name(t)
        with _lock:
            _mem_in_use[device] = _mem_in_use.get(device, 0) + nbytes
            _memory_sample(device)
            _live[weakref.ref(t, _release)] = (device, nbytes)


# ---- the wrappers the execution paths use ----------------------------------------------------
def _op_domain_and_name(op_name: str) -> Tuple[str, str]:
    pre = prefix()
    return ("Custom Operator" if pre.endswith("::") and pre else "operator"), pre + op_name


def run_kernel(kernel: Callable, op_name: str, /, *args: Any, **kwargs: Any) -> Any:
    """Run one operator kernel as a profiled span named after the MXNet operator.

    ``kernel`` and ``op_name`` are positional-only: operator attributes arrive as keywords and
    may be named ``kernel`` (Convolution's kernel shape) or ``op_name``."""
    domain, name = _op_domain_and_name(op_name)
    if torch.autograd._profiler_enabled():
        with Span(domain, name):
            result = kernel(*args, **kwargs)
    else:  # the same span without the record_function label, on the fast path
        start = time.perf_counter_ns()
        result = kernel(*args, **kwargs)
        end = time.perf_counter_ns()
        add_span(domain, name, start / 1000.0 + _EPOCH_US, end / 1000.0 + _EPOCH_US)
    if config["profile_memory"]:
        track_outputs(result)
    return result


def timed_kernel(op: Any) -> Callable:
    """``op.kernel`` wrapped by :func:`run_kernel` (imperative calls while profiling)."""
    if not config["profile_imperative"]:
        return op.kernel
    kernel, op_name = op.kernel, op.name

    def profiled(*args: Any, **kwargs: Any) -> Any:
        return run_kernel(kernel, op_name, *args, **kwargs)
    return profiled


_PROFILED_FN = "_hybridnet_profiled_fn"


def timed_graph(compiled: Any) -> Callable:
    """The compiled graph's function with every operator kernel profiled under its operator
    name: the same generated code run against a copy of its globals in which each kernel is
    wrapped (made once per compiled graph)."""
    if not config["profile_symbolic"]:
        return compiled.fn
    fn = getattr(compiled, _PROFILED_FN, None)
    if fn is None:
        names = {id(n.op.kernel): n.op.name for n in compiled.graph.nodes if n.op is not None}
        base = compiled.fn
        globs = dict(base.__globals__)
        for key, value in base.__globals__.items():
            op_name = names.get(id(value))
            if op_name is not None:
                globs[key] = _bind_kernel(value, op_name)
        fn = type(base)(base.__code__, globs, base.__name__, base.__defaults__, base.__closure__)
        fn.__kwdefaults__ = base.__kwdefaults__
        setattr(compiled, _PROFILED_FN, fn)
    return fn


def _bind_kernel(kernel: Callable, op_name: str) -> Callable:
    def profiled(*args: Any, **kwargs: Any) -> Any:
        return run_kernel(kernel, op_name, *args, **kwargs)
    return profiled


def block_call(block: Any, call: Callable, args: tuple) -> Any:
    """Run ``call(*args)`` (a Block's forward) as a span named ``<block name> forward``."""
    with Span("Gluon Block", f"{block.name} forward", {"class": type(block).__name__}):
        return call(*args)


def custom_call(what: str, op_type: str, fn: Callable, *args: Any) -> Any:
    """Run a Custom operator's Python ``forward``/``backward`` as ``<op_type>::pure_python``
    (``_backward_<op_type>::pure_python``); operators it calls are named ``<op_type>::<op>``,
    as MXNet's profiler names them."""
    label = op_type if what == "forward" else f"_backward_{op_type}"
    old = set_prefix(f"{op_type}::")
    try:
        with Span("Custom Operator", f"{label}::pure_python"):
            return fn(*args)
    finally:
        set_prefix(old)


# ---- reading and clearing --------------------------------------------------------------------
def chrome_event(event: tuple) -> dict:
    """The Chrome trace event of a stored event tuple."""
    ph, name, cat, ts, value, tid, extra = event
    out = {"name": name, "cat": cat, "ph": ph, "ts": ts, "pid": _PID, "tid": tid}
    if ph == "X":
        out["dur"] = value
        if extra:
            out["args"] = extra
    elif ph == "C":
        out["args"] = {name: value}
    else:
        out["s"] = value
    return out


def take_events(clear: bool) -> List[tuple]:
    with _lock:
        events = list(_events)
        if clear:
            _events.clear()
    return events


def stats(reset: bool) -> Tuple[dict, dict]:
    """Copies of the (time, memory) aggregate tables; ``reset`` clears them."""
    with _lock:
        time_stats = {k: list(v) for k, v in _time_stats.items()}
        mem_stats = {k: list(v) for k, v in _mem_stats.items()}
        if reset:
            _time_stats.clear()
            _mem_stats.clear()
    return time_stats, mem_stats
