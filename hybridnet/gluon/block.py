"""Blocks (MXNet 1.x Gluon): Block, HybridBlock with hybridize(), and SymbolBlock.

A ``HybridBlock`` runs ``hybrid_forward(F, x, ...)`` with ``F = nd`` eagerly. After
``hybridize()`` its first call traces ``hybrid_forward`` once with ``F = sym`` into a graph,
completes deferred parameter initialization from inferred shapes, compiles the graph
(``hybridnet.compiler``) and caches it; later calls run the compiled function directly.
"""
from __future__ import annotations

import copy
import os
import re
import threading
import traceback
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from .. import autograd as _ag
from .. import autograd_engine as _engine
from ..autograd_engine import note_zero_grad as _note_zero_grad
from .. import name as _name
from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError, dtype_name
from ..compiler.cached_op import CachedGraph
from ..context import Context
from ..ndarray import ndarray as _ndarray_mod
from ..np_semantics import is_np_array
from ..numpy import symbolic as _np_symbolic
from ..numpy.multiarray import as_np, ndarray as _np_ndarray
from ..ndarray.ndarray import NDArray
from ..ndarray.sparse import dense_tensor
from ..ops.registry import get as _get_op
from ..nesting import flatten as _nest_flatten
from ..nesting import regroup as _regroup
from ..profiler import recorder as _profiler
from ..compiler.infer import infer_graph
from ..symbol.symbol import Symbol, tracing
from ..thread_scope import ThreadScope
from .hybridize_options import HybridizeOptions, check_flags
from .hybridize_report import HybridizeReport, Issue, first_trace_difference
from .parameter import DeferredInitializationError, Parameter, ParameterDict, reading
from .utils import HookHandle, _indent

__all__ = ["Block", "HybridBlock", "SymbolBlock"]

_mode = _ag.current_mode  # the calling thread's autograd flags
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _BlockScope:
    """Scope for naming children and parameters (MXNet 1.x ``_BlockScope``).

    The current scope is per thread (as in MXNet), and what entering replaced is kept on the
    entering thread's stack, so threads tracing blocks that share a child do not mix scopes."""
    _current = ThreadScope(lambda: None)

    def __init__(self, block: "Block"):
        self._block = block
        self._counter: dict = {}

    @staticmethod
    def create(prefix: Optional[str], params: Optional[ParameterDict], hint: str) -> tuple:
        current = _BlockScope._current.value
        if current is None:
            if prefix is None:
                prefix = _name.current().get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self) -> "_BlockScope":
        if self._block._empty_prefix:
            return self
        _BlockScope._current.enter(self)
        _name.Prefix(self._block.prefix).__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._block._empty_prefix:
            return
        _name.current().__exit__(*exc)  # the Prefix entered above
        _BlockScope._current.exit()


# ---- nested input/output structures (MXNet's _flatten / _regroup) ---------------------------
class TracedGraph(tuple):
    """A HybridBlock's traced graph, ``block._cached_graph`` (``()`` before the first trace):
    ``(data input Symbols, output Symbol)`` as MXNet keeps it, so ``inputs, out = ...`` reads
    it; plus the nesting formats of the inputs and outputs it was traced with, where each traced
    node was created (``TraceState.created``; for ``hybridize(verify=N)``) and ``in_shapes``,
    the data shapes of the call that built the compiled graph (what ``export()`` writes).

    This is the block's only copy of the trace; the compiled ``CachedGraph`` is built from it."""

    in_format: Any
    out_format: Any
    created: list
    in_shapes: Optional[dict]

    def __new__(cls, inputs: list, output: Any, in_format: Any, out_format: Any,
                created: Any = ()) -> "TracedGraph":
        self = super().__new__(cls, (inputs, output))
        self.in_format, self.out_format, self.created = in_format, out_format, list(created)
        self.in_shapes = None
        return self

    def __reduce__(self) -> tuple:  # copy/deepcopy: the extra fields travel with the tuple
        return (_restore_traced_graph, (self[0], self[1], self.in_format, self.out_format, self.created,
                                        self.in_shapes))

    @property
    def inputs(self) -> list:
        return self[0]

    @property
    def output(self) -> Symbol:
        return self[1]


def _restore_traced_graph(inputs: list, output: Any, in_format: Any, out_format: Any, created: list,
                          in_shapes: Optional[dict]) -> TracedGraph:
    traced = TracedGraph(inputs, output, in_format, out_format, created)
    traced.in_shapes = in_shapes
    return traced


def _io_leaf(arg: Any) -> Optional[tuple]:
    if isinstance(arg, Symbol):
        n = len(arg)  # a grouped symbol stands for n outputs
        return [arg], n if n > 1 else 0
    if isinstance(arg, NDArray):
        return [arg], 0
    if arg is None:
        return [None], -1
    return None


def _flatten(args: Any, inout_str: str) -> tuple:
    return _nest_flatten(args, _io_leaf, lambda bad: ValueError(
        f"When hybridized, the {inout_str} of HybridBlock must be (nested) list of Symbol or "
        f"NDArray, but got {bad!r} of type {type(bad).__name__}"))


def _input_kinds(args: Any) -> tuple:
    """(has Symbol, has NDArray) anywhere in nested lists/tuples; other values (None, Python
    numbers) are ignored, so an un-hybridized HybridBlock takes what a Block takes (MXNet)."""
    if isinstance(args, NDArray):
        return False, True
    if isinstance(args, Symbol):
        return True, False
    if isinstance(args, (list, tuple)):
        kinds = [_input_kinds(a) for a in args]
        return any(k[0] for k in kinds), any(k[1] for k in kinds)
    return False, False


def _formats_match_but_trailing_none(fmt: list, stored: list) -> bool:
    """MXNet accepts a call whose input structure differs from the traced one only by trailing
    None arguments (defaults left out or passed explicitly)."""
    short, long_ = (fmt, stored) if len(fmt) < len(stored) else (stored, fmt)
    if len(short) == len(long_):
        return False
    return long_[:len(short)] == short and all(f == -1 for f in long_[len(short):])


def _user_frame(tb: Any) -> Optional[traceback.FrameSummary]:
    """The innermost frame of the traceback outside hybridnet (the user's line)."""
    frames = [f for f in traceback.extract_tb(tb) if not os.path.abspath(f.filename).startswith(_PKG_DIR)]
    return frames[-1] if frames else None


class _BuildLock:
    """A block's lock for its first call (trace, deferred init, compile).

    Held only while building; what is built is published by one attribute store at the end, so
    later calls read it without locking. Re-entrant (building infers shapes, which traces). A
    copied block gets a fresh lock (``copy.deepcopy`` of a block works, as in MXNet)."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> "_BuildLock":
        self._lock.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()

    def __deepcopy__(self, memo: dict) -> "_BuildLock":
        return _BuildLock()

    def __reduce__(self) -> tuple:
        return (_BuildLock, ())


# thread id -> {id(Parameter): NDArray}: the threads running the eager side of a
# ``hybridize(verify=N)`` call, where every HybridBlock runs eagerly and those parameters read as
# the given copies. Each thread touches only its own entry: the blocks and their parameters are
# left as they are for every other thread.
# the array classes a hybridized call takes its fast path for (mx.nd and mx.np arrays)
_DENSE = (NDArray, _np_ndarray)
_EAGER_RUNS: dict = {}


def _check_output_kinds(outs: list) -> None:
    """MXNet 1.9.1 refuses a block output that mixes classic arrays or symbols (mx.nd, mx.sym)
    with NumPy-interface ones (mx.np, mx.sym.np): they cannot form one graph (its
    ``_check_same_symbol_type``). An output of classic arrays only is read as mx.np in np mode
    (Gluon's blocks written for F = nd), so only the mixture is an error."""
    classic = numpy = False
    stack = list(outs)
    while stack:
        o = stack.pop()
        if isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, (_np_ndarray, _np_symbolic.NpSymbol)):
            numpy = True
        elif isinstance(o, (NDArray, Symbol)):
            classic = True
    if classic and numpy:
        raise TypeError("Found both classic (mx.nd.NDArray / mx.sym.Symbol) and numpy (mx.np.ndarray / "
                        "mx.sym.np._Symbol) outputs; they cannot be grouped into one computation graph. "
                        "Convert them to one kind: as_np_ndarray() on the classic ones for numpy outputs, or "
                        "as_nd_ndarray() on the numpy ones for classic outputs")


@contextmanager
def _eager_run(stand_ins: dict) -> Iterator[None]:
    """Run this thread's HybridBlocks eagerly, parameters read from ``stand_ins``, until exit."""
    tid = threading.get_ident()
    outer = _EAGER_RUNS.get(tid)
    _EAGER_RUNS[tid] = stand_ins
    try:
        yield
    finally:
        if outer is None:
            del _EAGER_RUNS[tid]
        else:
            _EAGER_RUNS[tid] = outer


def _verify_stand_ins() -> Optional[dict]:
    """This thread's parameter stand-ins when it runs a verify call's eager side, else None."""
    return _EAGER_RUNS.get(threading.get_ident()) if _EAGER_RUNS else None


def _in_layer(err: MXNetError, block: "Block") -> MXNetError:
    """``err`` with the innermost layer it happened in named first (added once, not per parent)."""
    where = f"{type(block).__name__} '{block.name}'"
    if getattr(err, "_hybridnet_layer", False) or str(err).startswith(where):
        return err
    try:
        new = type(err)(f"{where}: {err}")
    except Exception:  # error types with other constructors: keep the original
        return err
    new._hybridnet_layer = True  # type: ignore[attr-defined]
    return new.with_traceback(err.__traceback__)


class Block:
    """Base class of all layers and models (MXNet 1.x ``gluon.Block``)."""

    def __init__(self, prefix: Optional[str] = None, params: Optional[ParameterDict] = None):
        object.__setattr__(self, "_children", OrderedDict())
        object.__setattr__(self, "_reg_params", OrderedDict())
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._forward_hooks: "OrderedDict[int, Callable]" = OrderedDict()
        self._forward_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()

    def _alias(self) -> str:
        return self.__class__.__name__.lower()

    def __repr__(self) -> str:
        s = "{name}(\n{modstr}\n)"
        modstr = "\n".join(f"  ({key}): {_indent(repr(block), 2)}" for key, block in self._children.items())
        return s.format(name=self.__class__.__name__, modstr=modstr)

    def __setattr__(self, name: str, value: Any) -> None:
        """Registers child Blocks and Parameters assigned as attributes."""
        existing = self.__dict__.get(name)
        if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
            raise TypeError(f"Changing attribute type for {name} from {type(existing)} to {type(value)} "
                            f"is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params and self._reg_params[name] is not value:
                raise MXNetError(f"Overriding Parameter attribute {name} is not allowed. If you want to "
                                 f"share parameters between blocks, please set 'params' at Block construction "
                                 f"instead.")
            self._reg_params[name] = value
        object.__setattr__(self, name, value)

    def _check_container_with_block(self) -> None:
        children = set(self._children.values())

        def _find(data: Any) -> bool:
            if isinstance(data, (list, tuple)):
                return any(_find(x) for x in data)
            if isinstance(data, dict):
                return any(_find(x) for x in data.values())
            return isinstance(data, Block) and data not in children

        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith("__") or k == "_children"):
                if _find(v):
                    warnings.warn(f'"{self.name}.{k}" is an unregistered container with Blocks. Note that '
                                  f"Blocks inside the list, tuple or dict will not be registered "
                                  f"automatically. Make sure to register them using register_child() or "
                                  f"switching to nn.Sequential/nn.HybridSequential instead.", stacklevel=3)

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def name(self) -> str:
        return self._name

    def name_scope(self) -> _BlockScope:
        """Scope in which children and parameters get this block's prefix."""
        return self._scope

    @property
    def params(self) -> ParameterDict:
        """This block's own parameter dictionary (not its children's)."""
        return self._params

    def collect_params(self, select: Optional[str] = None) -> ParameterDict:
        """Own and children's parameters, optionally filtered by regex ``select`` on names."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret._params.update((n, v) for n, v in self.params.items() if pattern.match(n))
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix: str = "") -> "OrderedDict[str, Parameter]":
        if prefix:
            prefix += "."
        ret: "OrderedDict[str, Parameter]" = OrderedDict((prefix + k, v) for k, v in self._reg_params.items())
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename: str, deduplicate: bool = False) -> None:
        """Save parameters under structural names (``0.weight``, ``conv1.bias``)."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            seen: dict = {}
            params = OrderedDict((k, v) for k, v in params.items() if seen.setdefault(id(v), k) == k)
        with reading(params.values()):  # one whole Trainer step, if another thread is training
            arg_dict = OrderedDict((k, v._reduce()) for k, v in params.items())
            nd.save(filename, arg_dict)

    def save_params(self, filename: str) -> None:
        warnings.warn("save_params is deprecated. Please use save_parameters.", stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_parameters(self, filename: str, ctx: Any = None, allow_missing: bool = False,
                        ignore_extra: bool = False, cast_dtype: bool = False,
                        dtype_source: str = "current") -> None:
        """Load parameters saved by ``save_parameters`` (or, legacy, by ``collect_params().save``)."""
        loaded = nd.load(filename)
        if isinstance(loaded, list):
            if loaded:
                raise MXNetError(f"{filename}: the file holds unnamed arrays, not parameters")
            loaded = {}
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in k for k in loaded.keys()):
            # legacy loading: names are full parameter names without the block prefix
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            # a shared parameter is saved once (deduplicate=True): any of its names will do
            loaded_ids = {id(params[n]) for n in loaded if n in params}
            missing = [n for n, p in params.items() if id(p) not in loaded_ids]
            if missing:
                raise MXNetError(f"Parameter(s) {missing} are missing in file {filename!r}, which contains "
                                 f"parameters: {_brief(list(loaded))}. Set allow_missing=True to ignore "
                                 f"missing parameters.")
        for name in loaded:
            if not ignore_extra and name not in params:
                raise MXNetError(f"Parameter {name!r} loaded from file {filename!r} is not present in this "
                                 f"block, which contains parameters {_brief(list(params))}. Set "
                                 f"ignore_extra=True to ignore.")
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def load_params(self, filename: str, ctx: Any = None, allow_missing: bool = False,
                    ignore_extra: bool = False) -> None:
        warnings.warn("load_params is deprecated. Please use load_parameters.", stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def register_child(self, block: "Block", name: Optional[str] = None) -> None:
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook: Callable) -> "HookHandle":
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook: Callable) -> "HookHandle":
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn: Callable) -> "Block":
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """Initialize all parameters (deferred where shapes are unknown)."""
        if init is None:
            from ..initializer import Uniform
            init = Uniform()
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridize HybridBlock children (a plain Block itself cannot be hybridized)."""
        check_flags(type(self).__name__, kwargs)
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def save(self, prefix: str) -> None:
        """Save the block tree (with traced graphs of hybridized blocks) to
        ``prefix-model.json`` and the parameters to ``prefix-model.params`` (MXNet 1.9.1)."""
        from .block_structure import save_structure
        save_structure(self, prefix)

    def load(self, prefix: str) -> None:
        """Load what :meth:`save` wrote into a model built the same way (MXNet 1.9.1): blocks
        get their saved names back, hybridized ones their traced graphs, then the parameters."""
        from .block_structure import load_structure
        load_structure(self, prefix)

    def cast(self, dtype: Any) -> None:
        for child in self._children.values():
            child.cast(dtype)
        for p in self.params.values():
            p.cast(dtype)

    def zero_grad(self) -> None:
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx: Any) -> None:
        self.collect_params().reset_ctx(ctx)

    def __call__(self, *args: Any) -> Any:
        for hook in self._forward_pre_hooks.values():
            hook(self, args)
        out = self.forward(*args) if not _profiler.running else \
            _profiler.block_call(self, self.forward, args)
        if is_np_array():  # npx.set_np(): blocks return mx.np.ndarrays (np symbols), as MXNet's
            if out.__class__ is list or out.__class__ is tuple:
                _check_output_kinds(out)
            out = _np_symbolic.as_np_symbol(as_np(out))
        for hook in self._forward_hooks.values():
            hook(self, args, out)
        return out

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def summary(self, *inputs: Any) -> None:
        """Print each layer's output shape and parameter count for ``inputs`` (runs a forward pass)."""
        from .summary import summary
        summary(self, *inputs)

    def register_op_hook(self, callback: Callable, monitor_all: bool = False) -> None:
        """Install ``callback(name, op_name, NDArray)`` on every hybridized graph below this
        block (see ``HybridBlock.register_op_hook``)."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def share_parameters(self, shared: ParameterDict) -> "Block":
        raise MXNetError("share_parameters is a Gluon 2.0 API; in MXNet 1.x share through the "
                         "params= constructor argument")


def _input_names(flat: list) -> list:
    """The graph's names for the non-None inputs: ``data``, or ``data0``, ``data1``..."""
    n = sum(a is not None for a in flat)
    return ["data"] if n == 1 else [f"data{i}" for i in range(n)]


def _input_symbols(flat: list, names: list) -> list:
    """A variable per non-None input (named by ``names``), None where the input is None."""
    it = iter(names)
    return [sym.var(next(it)) if a is not None else None for a in flat]


def _brief(names: list, n: int = 20) -> str:
    return str(names) if len(names) <= n else str(names[:n])[:-1] + f", ... ({len(names)} in all)]"


def _casts_to_integer(cached: CachedGraph) -> bool:
    """Whether a node of the graph has an integer ``dtype`` attribute (asked once per graph)."""
    known = getattr(cached, "_hn_int_dtype_nodes", None)
    if known is None:
        known = False
        for node in cached.graph.nodes:
            dt = node.attrs.get("dtype") if node.attrs else None
            if isinstance(dt, str) and dt.startswith(("int", "uint", "bool")):
                known = True
                break
        try:
            cached._hn_int_dtype_nodes = known  # type: ignore[attr-defined]
        except AttributeError:
            pass
    return bool(known)


def _int_twins(cached: CachedGraph, tensors: list, mode: Any, outs: Any) -> Any:
    """A recorded hybridized call with integer inputs that carry gradients (the engine's float64
    twins, as for eager operators): the graph runs again so gradients reach the integer
    variables, as MXNet differentiates integer arrays."""
    if not (_engine.int_variables and any(_engine.twin_of(t) is not None for t in tensors)):
        # float inputs with gradients: only a graph casting to an integer dtype= needs the re-run
        if not any(not (o.is_floating_point() or o.is_complex()) for o in outs) \
                or not _casts_to_integer(cached) or not any(t.requires_grad for t in tensors):
            return outs
    return _ndarray_mod.run_graph_with_twins(cached.graph, cached.input_nodes, tensors, mode.training)

class HybridBlock(Block):
    """A Block whose ``hybrid_forward(F, x, ...)`` works with F = nd and F = sym.

    Its hybridize state, for the modules that read it: ``_options`` (a frozen
    :class:`HybridizeOptions`, what the last ``hybridize()`` asked for), ``_cached_graph`` (the
    trace, a :class:`TracedGraph`, ``()`` before it) and ``_cached_op`` (the ``CachedGraph``
    compiled from them, None until the first hybridized call)."""

    def __init__(self, prefix: Optional[str] = None, params: Optional[ParameterDict] = None):
        super().__init__(prefix=prefix, params=params)
        # MXNet's names: the traced graph (a TracedGraph once traced) and the compiled graph
        self._cached_graph: Any = ()
        self._cached_op: Optional[CachedGraph] = None
        self._options = HybridizeOptions()  # the last hybridize() call's; the compiled graph's
        self._build_lock = _BuildLock()
        self._op_hook: Optional[tuple] = None

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block: Block, name: Optional[str] = None) -> None:
        if not isinstance(block, HybridBlock):
            raise ValueError(f"Children of HybridBlock must also be HybridBlock, but {block!s:.80} has type "
                             f"{type(block)}. If you are using Sequential, please try HybridSequential "
                             f"instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def _clear_cached_op(self) -> None:
        self._cached_graph = ()
        self._cached_op = None

    def __deepcopy__(self, memo: dict) -> "HybridBlock":
        """An independent block: parameters, children and options copied; the compiled graph is
        not (it holds generated code and packed weights bound to the original's parameters), so
        a hybridized copy compiles again on its first call. (MXNet 1.9.1 cannot deep-copy a
        hybridized block: its CachedOp handle refuses.)"""
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        for name, value in self.__dict__.items():
            if name != "_cached_op":
                object.__setattr__(copied, name, copy.deepcopy(value, memo))
        object.__setattr__(copied, "_cached_op", None)
        copied._clear_cached_op()
        return copied

    def register_op_hook(self, callback: Callable, monitor_all: bool = False) -> None:
        """Call ``callback(name, op_name, array)`` on every operator output of this block's
        hybridized graph (names ``<node>_output``), and with ``monitor_all`` first on each
        operator's inputs (``<node>_<input>``), as MXNet does. A hooked graph runs node by node
        (slower); the hook applies to children too, for when they run on their own."""
        def on_tensor(name: str, op_name: str, t: Any) -> None:
            callback(name, op_name, NDArray(t.detach()))
        self._op_hook = (on_tensor, bool(monitor_all))
        if self._cached_op is not None:
            self._cached_op.set_op_hook(*self._op_hook)
        super().register_op_hook(callback, monitor_all)

    def hybridize(self, active: bool = True, backend: Any = None, backend_opts: Any = None,
                  static_alloc: bool = False, static_shape: bool = False, clear: bool = True,
                  verify: int = 0, **kwargs: Any) -> None:
        """Trace and compile on the next call (``clear=False`` keeps a graph already built).

        MXNet 1.9.1's flags are accepted (``static_alloc``, ``static_shape``, ``inline_limit``,
        ``forward_bulk_size``, ``backward_bulk_size``...); the compiled function is shape-generic,
        so they do not change results. An unknown flag (a misspelling) is an error.

        ``verify=N`` (hybridnet): the next N calls also run eagerly and through the traced graph
        on copies of the parameters, and raise :class:`VerificationError` naming the first graph
        node (and the line that created it) where outputs, auxiliary-state updates or, under
        ``autograd.record()``, parameter gradients differ (see ``compiler.verify``).

        The options are checked and kept as one :class:`HybridizeOptions` (``self._options``);
        children get ``active``, ``static_alloc``, ``static_shape`` and the other keyword flags,
        not ``backend``, ``backend_opts``, ``clear`` or ``verify`` (as in MXNet)."""
        self._options = HybridizeOptions.parse(type(self).__name__, active, backend, backend_opts,
                                               static_alloc, static_shape, verify, **kwargs)
        if clear:
            self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self}" is being hybridized while still having forward hook/pre-hook. '
                          f'If "{self}" is a child of HybridBlock, the hooks will not take effect.',
                          stacklevel=2)
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape, **kwargs)

    def cast(self, dtype: Any) -> None:
        self._clear_cached_op()
        super().cast(dtype)

    def hybridize_report(self, *args: Any) -> HybridizeReport:
        """Every construct in this block's ``hybrid_forward`` (and its children's) that a
        hybridized graph cannot capture (``.shape``, ``asnumpy()``, ``if`` on a value, in-place
        updates, graphs that change between traces), each with the user's line and the fix.

        A dry run: it traces with Symbols twice for inputs like ``args`` (NDArrays, used for
        their shapes only), computes nothing, changes no parameter and does not hybridize."""
        flat, in_format = _flatten(list(args), "input")
        names = _input_names(flat)
        real = [a for a in flat if a is not None]
        shapes = {n: a.shape for n, a in zip(names, real) if isinstance(a, NDArray)}

        def dry_trace() -> tuple:
            inputs = _input_symbols(flat, names)
            with tracing(report=[], report_shapes=shapes, created=[]) as state:
                try:
                    self._trace(*_regroup(inputs, in_format)[0])
                    stopped = None
                except Exception as e:  # noqa: BLE001 - reported: the dry run must finish
                    frame = _user_frame(e.__traceback__)
                    site = f"{frame.filename}:{frame.lineno}" if frame else ""
                    first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    stopped = Issue(f"tracing stopped: {type(e).__name__}: {first_line}", site,
                                    "see the error; run the block without hybridize() to debug it")
            return state.report, state.created, stopped

        found, created, stopped = dry_trace()
        issues = [Issue(*i) for i in found]
        if stopped is not None:
            issues.append(stopped)
        else:
            _, again, _ = dry_trace()
            changed = first_trace_difference(created, again)
            if changed is not None:
                issues.append(changed)
        return HybridizeReport(f"{type(self).__name__} '{self.name}'", issues)

    def infer_shape(self, *args: Any) -> None:
        """Infer and set parameter shapes from the inputs (deferred initialization)."""
        self._infer_attrs(*args)

    def infer_type(self, *args: Any) -> None:
        self._infer_attrs(*args)

    # -- tracing --------------------------------------------------------------------------
    def _trace(self, *args: Any) -> Any:
        params = {k: v.var() for k, v in self._reg_params.items()}
        if is_np_array():  # new NpSymbols over the same entries (the callers' objects stay as they are)
            params = {k: _np_symbolic.as_np_symbol(Symbol(v._entries)) for k, v in params.items()}
            args = tuple(_np_symbolic.as_np_symbol(Symbol(a._entries)) if a.__class__ is Symbol else a for a in args)
        with self.name_scope(), tracing(enter_block=True):
            try:
                return self.hybrid_forward(sym, *args, **params)
            except (AttributeError, MXNetError, NotImplementedError, TypeError, ValueError, IndexError) as e:
                if getattr(e, "_hybridnet_traced", False):
                    raise
                frame = _user_frame(e.__traceback__)
                where = (f"\n  while tracing {type(self).__name__} '{self.name}' for hybridize(), at "
                         f"{frame.filename}:{frame.lineno}: {frame.line}") if frame else ""
                hint = ("\n  (hybrid_forward runs with Symbols after hybridize(): call the block "
                        "without hybridize() to debug with NDArrays)")
                try:
                    new = type(e)(f"{e}{where}{hint}")
                except Exception:  # exception types with other constructors: keep the original
                    new = e
                new._hybridnet_traced = True  # type: ignore[attr-defined]
                raise new.with_traceback(e.__traceback__) from None

    def _get_graph(self, *args: Any) -> tuple:
        if self._cached_graph:
            return self._cached_graph
        with self._build_lock:  # concurrent first calls: one thread traces, the others wait
            if not self._cached_graph:
                flat, in_format = _flatten(list(args), "input")
                inputs = _input_symbols(flat, _input_names(flat))
                if is_np_array():  # hybrid_forward sees MXNet's np symbols (x + y is _npi_add)
                    inputs = _np_symbolic.as_np_symbol(inputs)
                grouped, _ = _regroup(inputs, in_format)
                with tracing(created=[] if self._options.verify else None) as state:
                    out = self._trace(*grouped)
                out_flat, out_format = _flatten(out, "output")
                _check_output_kinds(out_flat)
                self._cached_graph = TracedGraph([i for i in inputs if i is not None],
                                                 sym.Group(out_flat) if len(out_flat) > 1 else out_flat[0],
                                                 in_format, out_format, state.created or ())
        return self._cached_graph

    def _infer_attrs(self, *args: Any) -> None:
        inputs, out = self._get_graph(*args)
        flat = [a for a in _flatten(list(args), "input")[0] if a is not None]
        shapes = {i.name: a.shape for i, a in zip(inputs, flat)}
        dtypes = {i.name: dtype_name(a._t.dtype) for i, a in zip(inputs, flat)}
        try:
            res = infer_graph(out._graph(), shapes, dtypes)
        except MXNetError as e:
            raise MXNetError(f"Deferred initialization failed because shape cannot be inferred. {e}") from None
        params = self.collect_params()
        for v in out._graph().variables():
            if v.name in params:
                s = res.var_shapes[id(v)]
                if s is not None:
                    params[v.name].shape = s

    def _deferred_infer_shape(self, *args: Any) -> None:
        self._infer_attrs(*args)

    # -- execution ------------------------------------------------------------------------
    def _build_cache(self, *args: Any) -> None:
        trace = self._get_graph(*args)
        data, out = trace
        data_names = [d.name for d in data]
        params = self.collect_params()
        graph = out._graph()
        var_nodes = graph.variables()
        by_name = {v.name: v for v in var_nodes}
        for v in var_nodes:
            if v.name not in params and v.name not in data_names:
                raise MXNetError(f"Unknown input to HybridBlock: {v.name!r} is neither a data input "
                                 f"({data_names}) nor a parameter of {self.name}")
        unused = [n for n in data_names if n not in by_name]
        if unused:
            warnings.warn(f"The {', '.join(unused)} input to HybridBlock is not used by any computation. "
                          f"Is this intended?", stacklevel=4)
        unused_p = [n for n in params.keys() if n not in by_name]
        if unused_p:
            warnings.warn(f"Parameter {', '.join(unused_p)} is not used by any computation. "
                          f"Is this intended?", stacklevel=4)
        # graph variables are matched by ParameterDict key (load() may rename keys, not Parameters)
        used_names = [n for n in params.keys() if n in by_name]
        used_params = [params[n] for n in used_names]
        if any(p._data is None and not _shape_complete(p.shape) for p in used_params):
            self._deferred_infer_shape(*args)
        for p in used_params:
            p._finish_deferred_init()
            p._check_initialized()
        flat = _flatten(list(args), "input")[0]
        trace.in_shapes = {d: a.shape for d, a in zip(data_names, [a for a in flat if a is not None])}
        options = self._options
        cached = CachedGraph(graph, data_names, used_names, used_params, trace.in_format, trace.out_format,
                             owner=f"{type(self).__name__} '{self.name}'",
                             static_alloc=options.static_alloc, static_shape=options.static_shape,
                             max_cached=options.max_cached, verify=options.verify,
                             created=trace.created, backend=options.backend)
        if self._op_hook is not None:
            cached.set_op_hook(*self._op_hook)
        # MXNet's CachedOp records a call in autograd history operator by operator (inline) where
        # the graph has at most inline_limit operators and static_alloc is off, else as one node
        n_ops = sum(1 for n in graph.nodes if not n.is_variable)
        limit = options.inline_limit
        cached.inline_history = not options.static_alloc and isinstance(limit, int) and n_ops <= limit
        self._cached_op = cached  # published last: lock-free callers see a complete build

    def _call_cached_op(self, *args: Any) -> Any:
        """A hybridized call with any input structure (the general path; see ``_run_fast``)."""
        if self._cached_op is None:
            with self._build_lock:  # concurrent first calls build once; the others wait for it
                if self._cached_op is None:
                    self._build_cache(*args)
        cached = self._cached_op
        assert cached is not None
        flat, fmt = _flatten(list(args), "input")
        if fmt != cached.in_format and not _formats_match_but_trailing_none(fmt, cached.in_format):
            raise ValueError(f"The argument structure of HybridBlock does not match the cached version: "
                             f"{self.name} was traced with input structure {cached.in_format} but called "
                             f"with {fmt} (-1 stands for None); call hybridize() again to re-trace")
        real = [a for a in flat if a is not None]
        if len(real) != len(cached.data_names):
            raise ValueError(f"{self.name} expects {len(cached.data_names)} inputs, got {len(real)}")
        contexts = {a.context for a in real if isinstance(a, NDArray)}
        if len(contexts) > 1:
            raise ValueError(f"{self.name}: the inputs are on several contexts {sorted(map(str, contexts))}; "
                             f"a hybridized block runs on one context. Copy them to one with "
                             f"x.as_in_context(ctx) (MXNet raises here too)")
        tensors = self._graph_inputs(cached, real, next(iter(contexts)) if contexts else None)
        if cached.verify_left:
            outs = self._verify_call(cached, args, tensors)
        else:
            mode = _mode()
            outs = cached(tensors, mode)
            if mode.recording:
                outs = _int_twins(cached, tensors, mode, outs)
                _note_zero_grad(outs, tensors)
        outs = [NDArray(o) for o in outs]
        if _engine.is_recording():
            _record_call(cached, [real[i] for i in cached.data_pos], tensors, outs)
        if _ndarray_mod._labelled:
            _ndarray_mod._carry_context(real, outs)
        return _regroup(outs, cached.out_format)[0]

    def _graph_inputs(self, cached: CachedGraph, real: list, ctx: Optional[Context]) -> list:
        """The tensors a call of ``cached`` takes: the used data inputs among ``real`` (the
        flattened non-None arguments), then the parameters on context ``ctx``."""
        tensors = []
        for i in cached.data_pos:
            a = real[i]
            if not isinstance(a, NDArray):
                raise TypeError(f"{self.name}: input {i} must be an NDArray, got {type(a).__name__}")
            tensors.append(dense_tensor(a))  # graphs compute on dense storage (MXNet's fallback)
        stand_ins = _verify_stand_ins()
        for p in cached.params:
            s = stand_ins.get(id(p)) if stand_ins else None
            tensors.append(_param_tensor(p, ctx) if s is None else s._t)
        return tensors

    def _verify_call(self, cached: CachedGraph, args: tuple, tensors: list) -> tuple:
        """One call checked against the eager code (``hybridize(verify=N)``)."""
        from ..compiler.verify import verify_call
        variant = cached.variant(tensors)
        cached.count_verified_call()
        mode = _mode()
        n_data = len(cached.data_pos)
        holders = _param_holders(cached, tensors)  # (for their context labels)

        def run_eager(param_copies: list) -> tuple:
            # this thread only: every block eager, the parameters read as the copies
            stand_ins = {id(p): _stand_in(h, c) for p, h, c in zip(cached.params, holders, param_copies)}
            flat, fmt = _flatten(list(args), "input")
            detached = [NDArray(a._t.detach()) if isinstance(a, NDArray) else a for a in flat]
            with _eager_run(stand_ins), _ndarray_mod.recording_ops() as recorder:
                res = self.forward(*_regroup(detached, fmt)[0])
            return tuple(o._t for o in _flatten(res, "output")[0]), recorder.records

        return verify_call(f"{type(self).__name__} '{self.name}'",
                           lambda: variant(tensors, mode), cached.graph, cached.input_nodes, cached.created,
                           tensors[:n_data], tensors[n_data:], [p.name for p in cached.params],
                           mode.training, mode.recording, run_eager)

    def _run_fast(self, x: NDArray, args: tuple) -> Any:
        """The hot path of a hybridized call with flat NDArray inputs on one context."""
        cached = self._cached_op
        assert cached is not None
        tensors = [x._t]
        for a in args:
            tensors.append(a._t)
        for p in cached.params:
            data = p._data
            if data is None or len(data) != 1 or (
                    p.__class__ is not Parameter and type(p).data is not Parameter.data):
                return self._call_cached_op(x, *args)
            tensors.append(data[0]._t)
        n = cached.fast_arity
        if len(cached.data_pos) != n:
            tensors = [tensors[i] for i in cached.data_pos] + tensors[n:]
        mode = _mode()
        outs = cached(tensors, mode)
        if mode.recording:
            outs = _int_twins(cached, tensors, mode, outs)
            _note_zero_grad(outs, tensors)
            results = [NDArray(o) for o in outs]
            data = (x,) + args
            _record_call(cached, [data[i] for i in cached.data_pos], tensors, results)
        elif _ndarray_mod._labelled or not cached.single_output:
            results = [NDArray(o) for o in outs]
        else:
            return NDArray(outs[0])
        if _ndarray_mod._labelled:  # some array lives on cpu(i): results keep the input's label
            _ndarray_mod._carry_context((x,), results)
        return results[0] if cached.single_output else _regroup(results, cached.out_format)[0]

    def forward(self, x: Any, *args: Any) -> Any:
        """Eager (NDArray), cached-graph (hybridized) or symbolic (Symbol inputs) forward."""
        cached = self._cached_op
        if cached is not None and self._options.active and len(args) + 1 == cached.fast_arity \
                and not _EAGER_RUNS and x.__class__ in _DENSE and all(a.__class__ in _DENSE for a in args):
            return self._run_fast(x, args)
        has_sym, has_nd = _input_kinds([x, *args])
        if has_sym and has_nd:
            raise ValueError("In HybridBlock, we do not support mixed NDArrays and Symbols types for the "
                             "input. Please check the type of the args.")
        if not has_sym and not has_nd:
            raise ValueError("In HybridBlock, there must be one NDArray or one Symbol in the input. "
                             "Please check the type of the args.")
        if has_sym:
            return self._trace(x, *args)
        stand_ins = _verify_stand_ins()
        if self._options.active and stand_ins is None:
            return self._call_cached_op(x, *args)
        ctx = x.context if isinstance(x, NDArray) else None  # MXNet reads parameters on x's context
        try:
            params = self._eager_params(ctx, stand_ins)
        except DeferredInitializationError:
            with self._build_lock:  # concurrent first calls initialize once
                self._deferred_infer_shape(x, *args)
                for p in self.params.values():
                    p._finish_deferred_init()
            params = self._eager_params(ctx, stand_ins)
        try:
            return self.hybrid_forward(nd, x, *args, **params)
        except MXNetError as e:
            raise _in_layer(e, self) from None

    def _eager_params(self, ctx: Optional[Context], stand_ins: Optional[dict]) -> dict:
        """``hybrid_forward``'s parameter arguments on ``ctx`` (a verify call's copies in its eager run)."""
        if stand_ins is None:
            return {k: v.data(ctx) for k, v in self._reg_params.items()}
        return {k: stand_ins[id(v)] if id(v) in stand_ins else v.data(ctx) for k, v in self._reg_params.items()}

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement hybrid_forward(self, F, x, ...)")

    # -- export ---------------------------------------------------------------------------
    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True) -> None:
        """Write ``path-symbol.json`` and ``path-%04d.params`` exactly as MXNet 1.9.1 does
        (and, as there, return None: the file names follow from ``path`` and ``epoch``)."""
        trace = self._cached_graph
        if not trace:
            raise RuntimeError("Please first call block.hybridize() and then run forward with this block "
                               "at least once before calling export.")
        from ..compiler.passes import export_graph
        from ..formats.atomic import write_atomic
        from ..formats.symbol_json import graph_to_json
        graph = export_graph(trace.output._graph(), trace.in_shapes or {}, remove_amp_cast)
        sym_file = f"{path}-symbol.json"
        write_atomic(sym_file, graph_to_json(graph).encode("utf-8"))
        arg_names = {v.name for v in graph.arguments()}
        aux_names = {v.name for v in graph.aux_variables()}
        params = self.collect_params()
        for name in params.keys():
            if name not in arg_names and name not in aux_names:
                warnings.warn(f'Parameter "{name}" is not found in the graph. ', stacklevel=2)
        with reading(params.values()):  # one whole Trainer step, if another thread is training
            arg_dict: "OrderedDict[str, NDArray]" = OrderedDict()
            for v in graph.variables():
                if v.name not in params:
                    continue
                prefix = "arg:" if v.name in arg_names else "aux:"
                arg_dict[prefix + v.name] = params[v.name]._reduce()
            nd.save(f"{path}-{epoch:04d}.params", arg_dict)

    def to_torch(self, *example_inputs: Any, copy: bool = False) -> Any:
        """This block as a ``torch.nn.Module`` (``compiler.torch_module``), for torch.export,
        torch.jit and TorchServe: its parameters are the block's (shared, or copied with
        ``copy``; ``mxnet_names`` maps torch names to MXNet's), its forward the compiled graph
        a hybridized call runs, taking the flattened data inputs. Not an MXNet API. Give
        ``example_inputs`` (NDArrays) unless the block has been called already; the module
        comes back in eval mode (MXNet's predict mode)."""
        from ..compiler.torch_module import graph_module
        if example_inputs:
            with _ag.predict_mode(), _ag.pause():
                self(*example_inputs)  # finishes deferred initialization, traces when hybridized
            trace = self._get_graph(*example_inputs)
        else:
            trace = self._cached_graph
            if not trace:
                raise RuntimeError(f"to_torch: {self.name} has not been called yet; pass example inputs "
                                   f"(block.to_torch(x)) so its graph can be traced")
        data, out = trace
        graph = out._graph()
        names = {v.name for v in graph.variables()}
        params = {n: p for n, p in self.collect_params().items() if n in names}
        examples = None
        if example_inputs:
            examples = [dense_tensor(a) for a in _flatten(list(example_inputs), "input")[0] if a is not None]
        with reading(params.values()):
            return graph_module(graph, [d.name for d in data], {n: _param_tensor(p, None) for n, p in params.items()},
                                {n: p.grad_req != "null" for n, p in params.items()}, copy=copy,
                                examples=examples, where=f"{type(self).__name__} '{self.name}'")

    def optimize_for(self, x: Any, *args: Any, backend: Any = None, clear: bool = True,
                     **kwargs: Any) -> None:
        """Hybridize with ``backend`` and build the compiled graph for inputs like ``x`` now
        (MXNet 1.9.1). Here the lowered tier (``'ONEDNN'``/``'MKLDNN'``: frozen TorchScript with
        oneDNN fusion; ``'inductor'``: torch.compile) is also built for ``x``'s signature before
        returning, by one predict-mode call, so the next predictions use it."""
        if not backend:
            raise ValueError('Must specify "backend" to optimize_for (one of '
                             "'ONEDNN', 'MKLDNN', 'inductor', 'default')")
        self.hybridize(True, backend=backend, clear=clear, **kwargs)
        with _ag.predict_mode(), _ag.pause():
            self(x, *args)
        cached = self._cached_op
        if cached is not None:
            real = [a for a in _flatten([x, *args], "input")[0] if a is not None]
            tensors = self._graph_inputs(cached, real, real[0].context if real else None)
            cached.variant(tensors).wait_for_tier()


def _declared_shape(hint: Any) -> Optional[tuple]:
    """A variable's ``__shape__`` when fully known (no 0 = unknown dimension), else None."""
    from ..ops.attrs import parse_value
    try:
        shape = tuple(int(d) for d in parse_value(hint, "shape", where="__shape__"))
    except (MXNetError, TypeError, ValueError):
        return None
    return shape if shape and all(d > 0 for d in shape) else None


def _check_loaded_shapes(outputs: Symbol, block: "SymbolBlock", symbol_file: str, param_file: str) -> None:
    """Refuse, at ``imports``, parameters whose shapes the graph cannot take (partial shape
    inference with the loaded shapes and unknown data shapes), instead of failing at the first
    forward. A graph whose inference fails even without the parameters is left to forward."""
    from ..formats.symbol_json import check_param_shapes
    shapes = {p.name: p.shape for p in block.collect_params().values() if p._data is not None}
    if not shapes:
        return
    where = f"SymbolBlock.imports: the parameters in {param_file!r} do not fit the graph in {symbol_file!r}"
    graph = outputs._graph()
    check_param_shapes(graph, shapes, where)
    for v in graph.variables():
        hint, got = v.attrs.get("__shape__"), shapes.get(v.name)
        if hint is None or got is None:
            continue
        declared = _declared_shape(hint)
        if declared is not None and tuple(got) != declared:
            raise MXNetError(f"{where}: {v.name!r} has shape {tuple(got)}, but the graph declares "
                             f"{declared} (its __shape__ attribute)")
    try:
        outputs.infer_shape_partial(**shapes)
    except MXNetError as e:
        try:
            outputs.infer_shape_partial()
        except MXNetError:
            return
        raise MXNetError(f"{where}: {e}") from None


class SymbolBlock(HybridBlock):
    """A HybridBlock running a given graph (e.g. loaded with ``imports``)."""

    @staticmethod
    def imports(symbol_file: str, input_names: Any, param_file: Optional[str] = None, ctx: Any = None,
                allow_missing: bool = False, ignore_extra: bool = False) -> "SymbolBlock":
        """Load ``-symbol.json`` (and ``.params``) written by ``export`` (ours or MXNet's)."""
        outputs = sym.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        known = set(outputs.list_inputs())
        unknown = [n for n in input_names if n not in known]
        if unknown:
            raise MXNetError(f"imports: input name(s) {unknown} are not variables of {symbol_file}; "
                             f"its inputs are {outputs.list_inputs()}")
        inputs = [sym.var(i, dtype="float32") if param_file is None else sym.var(i) for i in input_names]
        ret = SymbolBlock(outputs, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra, cast_dtype=True,
                                      dtype_source="saved")
            _check_loaded_shapes(outputs, ret, symbol_file, param_file)
        elif ctx is not None:
            ret.collect_params().initialize(ctx=ctx)
        return ret

    def __repr__(self) -> str:
        """MXNet's form: ``SymbolBlock(\n<output symbol> : n_inputs -> n_outputs\n)``."""
        inputs, out = self._cached_graph
        return f"{type(self).__name__}(\n{out} : {len(inputs)} -> {len(out.list_outputs())}\n)"

    def __init__(self, outputs: Any, inputs: Any, params: Optional[ParameterDict] = None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, in_format = _flatten(inputs, "input")
        out, out_format = _flatten(outputs, "output")
        out = sym.Group(out) if len(out) > 1 else out[0]
        input_names = []
        for i in syms:
            if len(i.get_internals().list_outputs()) != 1 or i._entries[0][0].op is not None:
                raise MXNetError(f"Input symbols must be variable, but {i} is an output of operators")
            input_names.append(i.name)
        graph = out._graph()
        dtypes = _var_dtypes(graph)
        for v in graph.variables():
            if v.attrs.get("__storage_type__") == "1":  # MXNet: no row_sparse parameters here
                raise AssertionError(f"SymbolBlock doesn't support Parameter '{v.name}' because its "
                                     f"storage type is 'row_sparse'.")
        for v in graph.arguments():
            if v.name not in input_names:
                self.params.get(v.name, allow_deferred_init=True, dtype=dtypes.get(v.name, "float32"))
        for v in graph.aux_variables():
            if v.name not in input_names:
                self.params.get(v.name, grad_req="null", allow_deferred_init=True,
                                dtype=dtypes.get(v.name, "float32"))
        # data inputs of the loaded graph are its variables with the given names
        by_name = {v.name: v for v in graph.variables()}
        data = [Symbol([(by_name[n], 0)]) if n in by_name else sym.var(n) for n in input_names]
        self._cached_graph = TracedGraph(data, out, in_format, out_format)
        common = os.path.commonprefix(list(self._params.keys()))
        object.__setattr__(self, "_reg_params", OrderedDict(
            (k[len(common):], v) for k, v in self._params.items()))

    def forward(self, x: Any, *args: Any) -> Any:
        cached = self._cached_op
        if cached is not None and len(args) + 1 == cached.fast_arity and not _EAGER_RUNS \
                and x.__class__ is NDArray and all(a.__class__ is NDArray for a in args):
            return self._run_fast(x, args)
        flat = _flatten([x, *args], "input")[0]
        if any(isinstance(a, NDArray) for a in flat):
            return self._call_cached_op(x, *args)
        from ..ir.graph import replace_inputs
        if not all(isinstance(a, Symbol) for a in flat if a is not None):
            raise TypeError("SymbolBlock inputs must be NDArrays or Symbols")
        trace = self._cached_graph
        data, out = trace
        mapping = {id(d._entries[0][0]): a._entries[0] for d, a in zip(data, [a for a in flat if a is not None])}
        entries = replace_inputs(out._entries, mapping)
        return _regroup([Symbol([e]) for e in entries], trace.out_format)[0]

    def _clear_cached_op(self) -> None:
        self._cached_op = None  # the graph is given, never re-traced

    def hybridize(self, active: bool = True, verify: int = 0, **kwargs: Any) -> None:
        if verify:
            raise MXNetError("hybridize(verify=...) compares a block's hybrid_forward code with its "
                             "traced graph; a SymbolBlock has only the graph. Verify the block that "
                             "was exported, before export()")
        super().hybridize(active, **kwargs)

    def _get_graph(self, *args: Any) -> tuple:
        return self._cached_graph

    def cast(self, dtype: Any) -> None:
        self._clear_cached_op()
        for p in self.params.values():
            p.cast(dtype)

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _param_tensor(p: Parameter, ctx: Optional[Context]) -> Any:
    """The tensor of parameter ``p`` on context ``ctx`` (its only copy when it lives on one); a
    Parameter subclass that overrides ``data()`` (GluonNLP's WeightDropParameter) gets it called,
    as MXNet's cached op takes ``param.data()``."""
    if p.__class__ is not Parameter and type(p).data is not Parameter.data:
        return p.data(ctx)._t
    data = p._data
    if data is None:
        p._check_initialized()
        raise AssertionError("unreachable: _check_initialized raises for uninitialized parameters")
    if len(data) == 1 or ctx is None:
        return data[0]._t
    return data[p._index(ctx)]._t


_CACHED_OP = _get_op("_CachedOp")


def _param_holders(cached: CachedGraph, tensors: list) -> list:
    """The NDArray each parameter tensor of a call (``tensors``: data, then parameters) came
    from; a tensor none of its parameter's arrays holds (a Parameter subclass whose ``data()``
    computes it) gets an NDArray of its own."""
    holders = []
    for p, t in zip(cached.params, tensors[len(cached.data_pos):]):
        held = p._data or ()
        holder = held[0] if len(held) == 1 and held[0]._t is t else next((a for a in held if a._t is t), None)
        holders.append(NDArray(t) if holder is None else holder)
    return holders


def _record_call(cached: CachedGraph, data: list, tensors: list, outs: list) -> None:
    """Leave this call in autograd history for ``autograd.get_symbol`` (MXNet's
    ``CachedOp::Forward``): the graph's operators, inline, or one ``_CachedOp`` node whose
    inputs are the graph's data inputs (``data``), then the parameter values it ran on."""
    arrays = list(data) + _param_holders(cached, tensors)
    if getattr(cached, "inline_history", False):
        _engine.record_graph_history(cached.graph, cached.input_nodes, arrays, outs)
    else:
        _engine.record_history(_CACHED_OP, {"num_outputs": len(outs)}, arrays, outs, (cached.graph,))


def _stand_in(holder: NDArray, t: Any) -> NDArray:
    """An NDArray of tensor ``t`` in place of parameter array ``holder`` (same context label)."""
    arr = NDArray(t)
    ctx = getattr(holder, "_cpuctx", None)
    if ctx is not None:
        arr._cpuctx = ctx
    return arr


def _shape_complete(shape: Optional[tuple]) -> bool:
    return shape is not None and all(d > 0 for d in shape)


def _var_dtypes(graph: Any) -> dict:
    from ..base import dtype_from_flag
    out = {}
    for v in graph.variables():
        d = v.attrs.get("__dtype__")
        if d is not None:
            try:
                out[v.name] = dtype_from_flag(int(d))
            except (ValueError, MXNetError):
                pass
    return out
