"""``mx.profiler`` (MXNet 1.9.1 ``python/mxnet/profiler.py``).

``set_config`` then ``set_state('run')`` records every operator (imperative calls, the nodes of
bound executors and hybridized blocks, by MXNet operator name), Gluon block forwards
(``dense0 forward``), Custom operators (``MyOp::pure_python``) and the user's own
Domain/Task/Frame/Event/Counter/Marker objects.  ``dump()`` writes a Chrome trace
(``chrome://tracing``, Perfetto) to ``filename``; with ``aggregate_stats=True`` ``dumps()``
returns MXNet's per-domain tables (count, total, min, max, avg) as text or JSON.

Spans are also ``torch.profiler.record_function`` labels while a ``torch.profiler`` session
is active, so a torch trace of hybridnet code is labelled with MXNet's operator and block names.
"""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional

from ..base import MXNetError
from . import recorder
from .recorder import now_us

__all__ = ["set_config", "set_state", "dump", "dumps", "pause", "resume", "Domain", "Task",
           "Frame", "Event", "Counter", "Marker", "scope", "profiler_set_config",
           "profiler_set_state", "dump_profile", "set_kvstore_handle"]

_CONFIG_KEYS = {"filename", "profile_all", "profile_symbolic", "profile_imperative",
                "profile_memory", "profile_api", "continuous_dump", "dump_period",
                "aggregate_stats", "profile_process"}
_state = {"state": "stop", "paused": False}


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _check_process(profile_process: str) -> None:
    if profile_process not in ("worker", "server"):
        raise MXNetError(f"profile_process must be 'worker' or 'server', got {profile_process!r}")
    if profile_process == "server":
        raise MXNetError("profile_process='server' profiles a distributed kvstore server; "
                         "hybridnet's kvstore has no separate server process. Profile the "
                         "worker (the default).")


def set_config(**kwargs: Any) -> None:
    """Configure the profiler (keywords only): ``filename``, ``profile_all``,
    ``profile_symbolic``, ``profile_imperative``, ``profile_memory``, ``profile_api``,
    ``continuous_dump``, ``dump_period``, ``aggregate_stats``, ``profile_process``.
    As in MXNet, the per-kind flags default to off once ``set_config`` is called and
    ``profile_all`` turns them all on."""
    unknown = sorted(set(kwargs) - _CONFIG_KEYS)
    if unknown:
        raise MXNetError(f"profiler.set_config: unknown option(s) {unknown}; "
                         f"valid options are {sorted(_CONFIG_KEYS)}")
    _check_process(kwargs.get("profile_process", "worker"))
    every = _flag(kwargs.get("profile_all", False))
    cfg = recorder.config
    for kind in ("profile_symbolic", "profile_imperative", "profile_memory", "profile_api"):
        cfg[kind] = every or _flag(kwargs.get(kind, False))
    cfg["aggregate_stats"] = _flag(kwargs.get("aggregate_stats", False))
    cfg["continuous_dump"] = _flag(kwargs.get("continuous_dump", False))
    if "filename" in kwargs:
        cfg["filename"] = os.fspath(kwargs["filename"])


def _update_running() -> None:
    recorder.running = _state["state"] == "run" and not _state["paused"]


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """Start ('run') or stop ('stop') recording; either ends a :func:`pause`."""
    if state not in ("run", "stop"):
        raise MXNetError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    _check_process(profile_process)
    _state["state"] = state
    _state["paused"] = False
    _update_running()


def pause(profile_process: str = "worker") -> None:
    """Stop recording until :func:`resume` (the state stays 'run')."""
    _check_process(profile_process)
    _state["paused"] = True
    _update_running()


def resume(profile_process: str = "worker") -> None:
    """Resume recording after :func:`pause`."""
    _check_process(profile_process)
    _state["paused"] = False
    _update_running()


_TRACE_TAIL = "\n]}"
# the file a continuous (finished=False) dump is extending, and how many bytes it holds
_open_trace: Dict[str, Any] = {"path": None, "size": 0}


def _trace_body(events: list) -> str:
    return json.dumps([recorder.chrome_event(e) for e in events])[1:-1]


def _write_fresh(path: str, events: list) -> None:
    """Write a complete trace file atomically (temporary file, then rename)."""
    head = json.dumps({"displayTimeUnit": "ms",
                       "otherData": {"producer": "hybridnet.profiler", "mxnet_api": "1.9.1"}})
    meta = json.dumps({"ph": "M", "name": "process_name", "pid": os.getpid(),
                       "args": {"name": "hybridnet"}})
    body = _trace_body(events)
    text = head[:-1] + ', "traceEvents": [\n' + meta + (",\n" + body if body else "") + _TRACE_TAIL
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".profile-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _open_trace.update(path=path, size=os.path.getsize(path))


def _extend(path: str, events: list) -> bool:
    """Append events to the trace a previous continuous dump wrote (the file stays valid JSON:
    its closing ``]}`` is overwritten by the new events and written again).  False when that
    file is not ours as we left it."""
    if _open_trace["path"] != path or not os.path.exists(path) \
            or os.path.getsize(path) != _open_trace["size"]:
        return False
    if events:
        with open(path, "r+") as f:
            f.seek(_open_trace["size"] - len(_TRACE_TAIL))
            f.write(",\n" + _trace_body(events) + _TRACE_TAIL)
            f.truncate()
        _open_trace["size"] = os.path.getsize(path)
    return True


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the Chrome trace (``{"traceEvents": [...]}``) of what was recorded to the
    configured ``filename``.  Repeated ``dump(finished=False)`` calls (continuous dumping) append
    only the events recorded since the last dump, so the file grows; ``finished=True`` completes
    the file, and the next dump starts a new one."""
    _check_process(profile_process)
    path = recorder.config["filename"]
    events = recorder.take_events(clear=True)
    if not _extend(path, events):
        _write_fresh(path, events)
    if finished:
        _open_trace.update(path=None, size=0)


def dump_profile() -> None:
    """Deprecated MXNet alias of ``dump(True)``."""
    dump(True)


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """Deprecated MXNet form: ``mode`` 'symbolic' or 'all'."""
    if mode not in ("symbolic", "all"):
        raise MXNetError(f"profiler_set_config: mode must be 'symbolic' or 'all', got {mode!r}")
    set_config(profile_symbolic=True, profile_all=(mode == "all"), filename=filename)


def profiler_set_state(state: str = "stop") -> None:
    """Deprecated MXNet alias of :func:`set_state`."""
    set_state(state)


def set_kvstore_handle(handle: Any) -> None:
    """MXNet routes server-process profiling through a kvstore handle; hybridnet profiles the
    worker only, so this only accepts the call."""
    del handle


_SORT_KEYS = {"total": 1, "min": 2, "max": 3, "count": 0}


def _rows(table: dict, domain: str, sort_by: str, ascending: bool, memory: bool) -> list:
    rows = [(name, v) for (dom, name), v in table.items() if dom == domain]

    def key(row: tuple) -> float:
        count, total, low, high = row[1]
        if sort_by == "avg":
            return total / count
        if sort_by == "total" and memory:
            return high  # memory samples have no meaningful total
        return row[1][_SORT_KEYS[sort_by]]
    return sorted(rows, key=key, reverse=not ascending)


def _ms(us: float) -> float:
    return round(us / 1000.0, 6)


def _stats_json(time_stats: dict, mem_stats: dict, sort_by: str, ascending: bool) -> str:
    out: Dict[str, Any] = {"Time": {}, "Memory": {}}
    for domain in sorted({d for d, _ in time_stats}):
        out["Time"][domain] = {
            name: {"Count": int(c), "Total": _ms(t), "Min": _ms(lo), "Max": _ms(hi),
                   "Avg": _ms(t / c)}
            for name, (c, t, lo, hi) in _rows(time_stats, domain, sort_by, ascending, False)}
    for domain in sorted({d for d, _ in mem_stats}):
        out["Memory"][domain] = {
            name: {"Count": int(c), "Min": round(lo, 4), "Max": round(hi, 4),
                   "Avg": round(t / c, 4)}
            for name, (c, t, lo, hi) in _rows(mem_stats, domain, sort_by, ascending, True)}
    out["Unit"] = {"Time": "ms", "Memory": "kB"}
    return json.dumps(out, indent=4)


def _stats_table(time_stats: dict, mem_stats: dict, sort_by: str, ascending: bool) -> str:
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    for domain in sorted({d for d, _ in mem_stats}):
        lines += [domain, "=================",
                  f"{'Name':<30}{'Total Count':>11}{'Min Use  (kB)':>17}{'Max Use  (kB)':>17}"
                  f"{'Avg Use  (kB)':>17}",
                  f"{'----':<30}{'-----------':>11}{'-------------':>17}{'-------------':>17}"
                  f"{'-------------':>17}"]
        for name, (c, t, lo, hi) in _rows(mem_stats, domain, sort_by, ascending, True):
            lines.append(f"{name:<30}{int(c):>11}{lo:>17.4f}{hi:>17.4f}{t / c:>17.4f}")
        lines.append("")
    for domain in sorted({d for d, _ in time_stats}):
        lines += [domain, "=================",
                  f"{'Name':<30}{'Total Count':>11}{'Time (ms)':>17}{'Min Time (ms)':>17}"
                  f"{'Max Time (ms)':>17}{'Avg Time (ms)':>17}",
                  f"{'----':<30}{'-----------':>11}{'---------':>17}{'-------------':>17}"
                  f"{'-------------':>17}{'-------------':>17}"]
        for name, (c, t, lo, hi) in _rows(time_stats, domain, sort_by, ascending, False):
            lines.append(f"{name:<30}{int(c):>11}{t / 1000:>17.4f}{lo / 1000:>17.4f}"
                         f"{hi / 1000:>17.4f}{t / c / 1000:>17.4f}")
        lines.append("")
    return "\n".join(lines) + "\n"


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total",
          ascending: bool = False) -> str:
    """The aggregate statistics (``set_config(aggregate_stats=True)``) as MXNet prints them:
    one table per domain (``format='table'``) or ``{"Time": {domain: {name: {Count, Total, Min,
    Max, Avg}}}, "Memory": {...}, "Unit": {...}}`` (``format='json'``), rows sorted by
    ``sort_by`` ('total', 'avg', 'min', 'max', 'count'); ``reset`` clears the statistics."""
    if format not in ("table", "json"):
        raise MXNetError(f"profiler.dumps: invalid format {format!r}; use 'table' or 'json'")
    if sort_by not in ("total", "avg", "min", "max", "count"):
        raise MXNetError(f"profiler.dumps: invalid sort_by {sort_by!r}; use 'total', 'avg', "
                         "'min', 'max' or 'count'")
    if ascending not in (True, False):
        raise MXNetError(f"profiler.dumps: ascending must be True or False, got {ascending!r}")
    time_stats, mem_stats = recorder.stats(reset)
    if format == "json":
        return _stats_json(time_stats, mem_stats, sort_by, ascending)
    return _stats_table(time_stats, mem_stats, sort_by, ascending)


# ---- user annotations ------------------------------------------------------------------------
class Domain:
    """A named category for the user's tasks, frames, counters and markers."""

    def __init__(self, name: str) -> None:
        self.name = str(name)

    def __str__(self) -> str:
        return self.name

    def new_task(self, name: str) -> "Task":
        return Task(self, name)

    def new_frame(self, name: str) -> "Frame":
        return Frame(self, name)

    def new_counter(self, name: str, value: Optional[int] = None) -> "Counter":
        return Counter(self, name, value)

    def new_marker(self, name: str) -> "Marker":
        return Marker(self, name)


class _Range:
    """A start()/stop() interval recorded as one span in ``_category`` (when profiling runs)."""
    _kind = "range"

    def __init__(self, category: str, name: str) -> None:
        self.name = str(name)
        self._category = category
        self._start: Optional[float] = None

    def start(self) -> None:
        """Start timing."""
        self._start = now_us()

    def stop(self) -> None:
        """Stop timing; the interval is recorded if the profiler is running."""
        if self._start is None:
            raise MXNetError(f"{type(self).__name__} {self.name!r}: stop() without start()")
        start, self._start = self._start, None
        if recorder.running:
            recorder.add_span(self._category, self.name, start, now_us())

    def __enter__(self) -> "_Range":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __str__(self) -> str:
        return self.name


class Task(_Range):
    """A logical unit of work in a domain (MXNet ``profiler.Task``)."""

    def __init__(self, domain: Domain, name: str) -> None:
        super().__init__(domain.name, name)
        self.domain = domain


class Frame(_Range):
    """A per-iteration interval in a domain (MXNet ``profiler.Frame``); recorded in the
    ``<domain>,frame`` category as MXNet does."""

    def __init__(self, domain: Domain, name: str) -> None:
        super().__init__(f"{domain.name},frame", name)
        self.domain = domain


class Event(_Range):
    """A free-standing interval (MXNet ``profiler.Event``), in the ``event`` category."""

    def __init__(self, name: str) -> None:
        super().__init__("event", name)


class Counter:
    """A named integer value in a domain, recorded at every change (Chrome counter track)."""

    def __init__(self, domain: Domain, name: str, value: Optional[int] = None) -> None:
        self.domain = domain
        self.name = str(name)
        self._value = 0
        if value is not None:
            self.set_value(value)

    @property
    def value(self) -> int:
        return self._value

    def _emit(self) -> None:
        if recorder.running:
            recorder.add_counter(self.domain.name, self.name, self._value)

    def set_value(self, value: int) -> None:
        self._value = int(value)
        self._emit()

    def increment(self, delta: int = 1) -> None:
        self._value += int(delta)
        self._emit()

    def decrement(self, delta: int = 1) -> None:
        self._value -= int(delta)
        self._emit()

    def __iadd__(self, delta: int) -> "Counter":
        self.increment(delta)
        return self

    def __isub__(self, delta: int) -> "Counter":
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return f"{self.name}={self._value}"


_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Marker:
    """An instant event in a domain (MXNet ``profiler.Marker``)."""

    def __init__(self, domain: Domain, name: str) -> None:
        self.domain = domain
        self.name = str(name)

    def mark(self, scope: str = "process") -> None:
        """Record the instant; ``scope`` is 'global', 'process', 'thread', 'task' or 'marker'."""
        if scope not in _MARKER_SCOPES:
            raise MXNetError(f"Marker.mark: scope must be one of {sorted(_MARKER_SCOPES)}, "
                             f"got {scope!r}")
        if recorder.running:
            recorder.add_instant(f"{self.domain.name},instant_marker", self.name,
                                 _MARKER_SCOPES[scope])


@contextmanager
def scope(name: str = "<unk>:", append_mode: bool = True) -> Iterator[None]:
    """Prefix the names of operators run inside the block with ``name`` (MXNet 2.0's
    ``profiler.scope``); with ``append_mode`` nested scopes accumulate."""
    name = str(name)
    if not name.endswith(":"):
        name += ":"
    old = recorder.prefix()
    recorder.set_prefix(old + name if append_mode else name)
    try:
        yield
    finally:
        recorder.set_prefix(old)
