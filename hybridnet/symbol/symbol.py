"""Symbol: MXNet 1.x's symbolic front-end over the graph IR (``hybridnet.ir``)."""
from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, ClassVar, Iterator, Optional, Sequence

import numpy as np

from .. import attribute as _attribute
from .. import name as _name
from ..base import MXNetError, NotImplementedForSymbol, dtype_flag, numeric_types
from ..ir.graph import Graph, Node, replace_inputs
from ..ops import registry as _reg
from ..ops.attrs import format_value
from ..ops.registry import OpDef
from ..np_semantics import is_np_shape

__all__ = ["Symbol", "var", "Variable", "Group", "sym_invoke", "load", "load_json", "fromjson"]


@dataclass(frozen=True)
class TraceState:
    """What the calling thread is tracing: ``depth``, how many HybridBlocks (indexing rules
    differ while tracing); ``created``, when a list, receives every operator node made, in
    order, with the user's line that made it (``hybridize(verify=N)`` matches them with the
    eager run). In a dry run (``HybridBlock.hybridize_report``) what cannot be captured is
    appended to ``report`` as (what, 'file:line', fix) and tracing goes on with a stand-in
    value; ``report_shapes`` (known input shapes) answer ``.shape``."""
    depth: int = 0
    created: Optional[list] = None
    report: Optional[list] = None
    report_shapes: Optional[dict] = None


class _Tracing(threading.local):
    """The calling thread's :class:`TraceState` (``TRACING.state``), changed only by ``tracing``."""
    state = TraceState()


@contextmanager
def tracing(enter_block: bool = False, **changes: Any) -> Iterator[TraceState]:
    """Trace with this thread's tracing state changed by ``changes`` (``TraceState`` fields)
    and, with ``enter_block``, one HybridBlock deeper; the state before is restored on exit,
    whatever was raised. Yields the state in force (its lists collect what the trace made)."""
    saved = TRACING.state
    if enter_block:
        changes["depth"] = saved.depth + 1
    TRACING.state = replace(saved, **changes)
    try:
        yield TRACING.state
    finally:
        TRACING.state = saved


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _reported(what: str, fix: str) -> bool:
    """In a dry run, note that ``what`` cannot be captured (with the user's line and ``fix``)
    and return True: the caller then returns a stand-in instead of raising."""
    report = TRACING.state.report
    if report is None:
        return False
    report.append((what, _user_site(), fix))
    return True


def _user_site() -> str:
    """'file:line' of the innermost caller outside hybridnet ('' when there is none)."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG_DIR):
        f = f.f_back  # type: ignore[assignment]
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else ""


TRACING = _Tracing()


class Symbol:
    """A list of output entries of an immutable graph (MXNet's Symbol)."""

    __slots__ = ("_entries", "_loaded", "__weakref__")
    _loaded: Graph  # set only by _of_graph: the loaded graph whose outputs these entries were
    __array_priority__ = 1000.0

    # Python operators, installed by _install_operators() below (declarations only, for type
    # checkers: a bare annotation creates no class attribute). The right operand is a Symbol or a
    # scalar; anything else gives NotImplemented.
    __add__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __radd__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __sub__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __rsub__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __mul__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __rmul__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __truediv__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __rtruediv__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __div__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __rdiv__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __mod__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __rmod__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __pow__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __rpow__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __eq__: ClassVar[Callable[[Symbol, Any], Symbol]]  # type: ignore[assignment]
    __ne__: ClassVar[Callable[[Symbol, Any], Symbol]]  # type: ignore[assignment]
    __gt__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __ge__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __lt__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __le__: ClassVar[Callable[[Symbol, Any], Symbol]]
    __neg__: ClassVar[Callable[[Symbol], Symbol]]
    __pos__: ClassVar[Callable[[Symbol], Symbol]]
    __abs__: ClassVar[Callable[[Symbol], Symbol]]

    def __init__(self, entries: Sequence[tuple]):
        self._entries = list(entries)

    @classmethod
    def _of_graph(cls, graph: Graph) -> "Symbol":
        """The symbol of ``graph``'s outputs, keeping ``graph`` (a loaded file's: its node order
        and lint already computed) for ``_graph`` while the entries are the graph's."""
        out = cls(graph.outputs)
        out._loaded = graph
        return out

    # -- identity & structure -------------------------------------------------------------
    @property
    def name(self) -> Optional[str]:
        if len(self._entries) != 1:
            return None
        return self._entries[0][0].name

    def __repr__(self) -> str:
        if len(self._entries) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(self.list_outputs())}]>"

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator["Symbol"]:
        return (Symbol([e]) for e in self._entries)

    def __getitem__(self, index: "int | str | slice") -> "Symbol":
        if isinstance(index, str):
            outs = self.list_outputs()
            matches = [i for i, n in enumerate(outs) if n == index]
            if not matches:
                raise ValueError(f"there is no output named {index!r}; outputs are {outs}")
            if len(matches) > 1:
                raise ValueError(f"there are several outputs named {index!r}")
            return Symbol([self._entries[matches[0]]])
        if isinstance(index, slice):
            return Symbol(self._entries[index])
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"Symbol index must be an int, str or slice, got {type(index).__name__}; "
                            "Symbols cannot be sliced like arrays: use F.slice_axis / F.slice")
        if TRACING.state.depth and len(self._entries) == 1 and not _control_flow_result(self, index):
            raise IndexError(
                f"x[{index}] on a Symbol selects an output of a multi-output node, not an element: "
                f"inside hybrid_forward use F.slice_axis(x, axis=0, begin={index}, end={index}+1) or "
                f"F.take / F.pick instead (NDArray indexing does not carry over to hybridize())")
        if not -len(self._entries) <= index < len(self._entries):
            raise IndexError(f"output index {index} out of range: the symbol has {len(self._entries)} outputs")
        return Symbol([self._entries[index]])

    def _graph(self) -> Graph:
        loaded = getattr(self, "_loaded", None)
        if loaded is not None and loaded.outputs == self._entries:  # entries compare by identity
            return loaded
        return Graph(self._entries)

    @property
    def graph(self) -> Graph:
        """The IR graph of this symbol's outputs."""
        return Graph(self._entries)

    def list_outputs(self) -> list:
        out = []
        for node, idx in self._entries:
            out.append(node.name if node.op is None else node.output_names()[idx])
        return out

    def list_arguments(self) -> list:
        return [n.name for n in self._graph().arguments()]

    def list_auxiliary_states(self) -> list:
        return [n.name for n in self._graph().aux_variables()]

    def list_inputs(self) -> list:
        return [n.name for n in self._graph().variables()]

    def get_internals(self) -> "Symbol":
        entries = []
        for n in self._graph().nodes:
            for k in range(n.num_outputs()):
                entries.append((n, k))
        return Symbol(entries)

    def get_children(self) -> Optional["Symbol"]:
        """The inputs of the head nodes (each node once, in order) as a group; None if none."""
        heads: dict = {}
        for node, _ in self._entries:
            heads.setdefault(id(node), node)
        ins = [e for node in heads.values() for e in node.inputs]
        return Symbol(ins) if ins else None

    # -- composition ----------------------------------------------------------------------
    def __call__(self, *args: "Symbol", **kwargs: Any) -> "Symbol":
        """A copy with arguments replaced by Symbols: ``net(data=x)`` or positionally in
        ``list_arguments()`` order; ``name=`` renames the head node (MXNet's composition)."""
        s = self.__copy__()
        s._compose(*args, **kwargs)
        return s

    def _compose(self, *args: "Symbol", **kwargs: Any) -> None:
        """Compose in place (see ``__call__``)."""
        name = kwargs.pop("name", None)
        if args and kwargs:
            raise TypeError("compose only accepts input Symbols either as positional or keyword "
                            "arguments, not both")
        for k, v in list(enumerate(args)) + list(kwargs.items()):
            if not isinstance(v, Symbol) or len(v._entries) != 1:
                raise TypeError(f"compose expects single-output Symbols as arguments; argument {k!r} "
                                f"is {type(v).__name__ if not isinstance(v, Symbol) else 'a group'}")
        variables = self._graph().arguments()
        if args:
            if len(args) > len(variables):
                raise MXNetError(f"compose: {len(args)} positional inputs for {len(variables)} arguments "
                                 f"{[v.name for v in variables]}")
            mapping = {id(v): a._entries[0] for v, a in zip(variables, args)}
        else:
            by_name = {v.name: v for v in variables}
            unknown = sorted(set(kwargs) - set(by_name))
            if unknown:
                raise MXNetError(f"compose: {unknown} are not arguments of the symbol; arguments are "
                                 f"{sorted(by_name)}")
            mapping = {id(by_name[k]): v._entries[0] for k, v in kwargs.items()}
        entries = replace_inputs(self._entries, mapping)
        if name:
            renamed: dict = {}
            for node, _ in entries:
                if node.op is not None and id(node) not in renamed:
                    renamed[id(node)] = Node(node.op, name, node.attrs, node.inputs, node.subgraphs)
            entries = [(renamed.get(id(n), n), k) for n, k in entries]
        self._entries = entries

    def _gen_atomic_symbol(self) -> "Symbol":
        """The head operator alone, on fresh variables named after its input slots (MXNet's
        atomic symbol: same operator and attributes, no upstream graph)."""
        node = self._entries[0][0]
        if node.op is None:
            raise MXNetError("_gen_atomic_symbol: the symbol is a variable, not an operator")
        ins = [(Node(None, f"{node.name}_{slot}"), 0) for slot in node.input_names()]
        atom = Node(node.op, node.name, node.attrs, ins, node.subgraphs)
        return Symbol([(atom, k) for k in range(atom.num_outputs())])

    # -- attributes -----------------------------------------------------------------------
    def attr(self, key: str) -> Optional[str]:
        if len(self._entries) != 1:
            raise MXNetError("attr() is only defined for single-output symbols")
        node = self._entries[0][0]
        for k in (key, f"__{key}__"):
            if k in node.attrs:
                return format_value(node.attrs[k])
        return None

    def list_attr(self, recursive: bool = False) -> dict:
        if recursive:
            raise DeprecationWarning("list_attr(recursive=True) is removed; use attr_dict()")
        node = self._entries[0][0]
        return {k: format_value(v) for k, v in node.attrs.items()}

    def attr_dict(self) -> dict:
        out = {}
        for n in self._graph().nodes:
            if n.attrs:
                out[n.name] = {k: format_value(v) for k, v in n.attrs.items()}
        return out

    def _set_attr(self, **kwargs: str) -> None:
        for node, _ in self._entries:
            for k, v in kwargs.items():
                node.attrs[k] = v

    # -- what a Symbol cannot do -----------------------------------------------------------
    def _probe_shape(self) -> tuple:
        """This symbol's shape as far as the dry run's input shapes tell (0: unknown)."""
        known = TRACING.state.report_shapes or {}
        try:
            inputs = set(self.list_inputs())
            out = self.infer_shape_partial(**{k: v for k, v in known.items() if k in inputs})[1][0]
            return tuple(out) if out else ()
        except Exception:  # noqa: BLE001 - a stand-in value only; the dry run goes on
            return ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in ("shape", "dtype", "context", "ctx", "size", "ndim") and _reported(
                f"x.{name} on a traced value",
                "use shape-free operators (F.reshape with 0/-1 codes, F.broadcast_like, "
                "F.reshape_like, F.shape_array, F.size_array) instead of Python values"):
            shape = self._probe_shape()
            return {"shape": shape, "size": int(np.prod(shape)) if shape else 0, "ndim": len(shape),
                    "dtype": np.float32}.get(name)
        if name == "shape":
            raise AttributeError(
                "'Symbol' object has no attribute 'shape': inside hybrid_forward the input is a "
                "Symbol with no concrete shape. Use shape-free operators (F.reshape with 0/-1 codes, "
                "F.broadcast_like, F.reshape_like, F.shape_array) or call infer_shape(...) on the "
                "symbol.")
        if name in ("dtype", "context", "ctx", "size", "ndim"):
            raise AttributeError(f"'Symbol' object has no attribute {name!r}: a Symbol is a graph node, "
                                 f"not an array; use infer_type()/infer_shape() to learn about it")
        raise AttributeError(f"'Symbol' object has no attribute {name!r}")

    def asnumpy(self) -> Any:
        if _reported("asnumpy()/asscalar() on a traced value",
                     "compute with F.* operators; a graph has no values while it is traced"):
            return np.zeros(self._probe_shape() or (1,), dtype=np.float32)
        raise MXNetError("a Symbol has no values: asnumpy() works on NDArrays only. Inside "
                         "hybrid_forward, compute with F.* operators, or call the block without "
                         "hybridize() to debug with NDArrays")

    def asscalar(self) -> Any:
        return self.asnumpy().reshape(-1)[0]

    def __bool__(self) -> bool:
        if _reported("Python `if`/`while`/`and`/`or` on a traced value",
                     "use F.where(cond, x, y) or compute both branches (or F.contrib.cond)"):
            return True
        raise NotImplementedForSymbol(self.__bool__, "bool", hint=(
            "The truth value of a Symbol is unknown while tracing: Python `if`/`while` on values "
            "cannot be hybridized. Use F.where(cond, x, y) or compute both branches, or keep this "
            "block un-hybridized"))

    def __int__(self) -> int:
        if _reported("float()/int()/index of a traced value",
                     "keep the value in the graph (F.* operators) instead of Python numbers"):
            return 1
        raise MXNetError("float() of a Symbol: it has no value while tracing")

    def __float__(self) -> float:
        return float(self.__int__())

    __index__ = __int__

    def __setitem__(self, key: Any, value: Any) -> None:
        if _reported("in-place assignment x[...] = v",
                     "build a new value (F.where(mask, v, x), or F.concat of slices)"):
            return
        raise NotImplementedError("in-place assignment `x[...] = v` is not supported on Symbols: "
                                  "build a new value instead (e.g. F.where(mask, v, x), or "
                                  "F.concat of slices)")

    def _inplace(self, other: Any) -> Any:
        if _reported("in-place operator (+=, -=, *=, /=)", "write `x = x + y` instead"):
            return NotImplemented  # Python then computes x = x + y
        raise NotImplementedError("in-place operators (+=, -=, *=, /=) are not supported on Symbols: "
                                  "write `x = x + y` instead")

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __imod__ = __ipow__ = _inplace

    __hash__ = object.__hash__

    def __copy__(self) -> "Symbol":
        return Symbol(list(self._entries))

    def __deepcopy__(self, memo: dict) -> "Symbol":
        return load_json(self.tojson())

    def copy(self) -> "Symbol":
        return self.__copy__()

    def __getstate__(self) -> dict:
        return {"json": self.tojson()}

    def __setstate__(self, state: dict) -> None:
        self._entries = load_json(state["json"])._entries

    # -- reshape (method with special codes) ----------------------------------------------
    def reshape(self, *shape: Any, **kwargs: Any) -> "Symbol":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = tuple(kwargs.pop("shape"))
        return _FN["reshape"](self, shape, **kwargs)

    def flatten(self, **kwargs: Any) -> "Symbol":
        return _FN["flatten"](self, **kwargs)

    def astype(self, dtype: Any) -> "Symbol":
        return _FN["cast"](self, dtype=dtype)

    # -- serialisation --------------------------------------------------------------------
    def tojson(self, remove_amp_cast: bool = True) -> str:
        from ..formats.symbol_json import graph_to_json
        return graph_to_json(self._graph(), is_np_shape=is_np_shape())

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        from ..formats.atomic import write_atomic
        write_atomic(fname, self.tojson(remove_amp_cast).encode("utf-8"))

    def debug_str(self) -> str:
        return self._graph().text()

    # -- inference ------------------------------------------------------------------------
    def infer_shape(self, *args: Any, **kwargs: Any) -> tuple:
        from ..compiler.infer import infer_shape
        return infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args: Any, **kwargs: Any) -> tuple:
        from ..compiler.infer import infer_shape
        return infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args: Any, **kwargs: Any) -> tuple:
        from ..compiler.infer import infer_type
        return infer_type(self, args, kwargs, partial=False)

    def infer_type_partial(self, *args: Any, **kwargs: Any) -> tuple:
        from ..compiler.infer import infer_type
        return infer_type(self, args, kwargs, partial=True)

    # -- execution ------------------------------------------------------------------------
    def bind(self, ctx: Any = None, args: Any = None, args_grad: Any = None, grad_req: Any = "write",
             aux_states: Any = None, group2ctx: Any = None, shared_exec: Any = None) -> Any:
        from .executor import Executor
        return Executor(self, ctx, args, args_grad, grad_req, aux_states)

    def simple_bind(self, ctx: Any = None, grad_req: Any = "write", type_dict: Any = None,
                    stype_dict: Any = None, group2ctx: Any = None, shared_arg_names: Any = None,
                    shared_exec: Any = None, shared_buffer: Any = None, **kwargs: Any) -> Any:
        from .executor import simple_bind
        return simple_bind(self, ctx, grad_req, type_dict, kwargs, stype_dict)

    def eval(self, ctx: Any = None, **kwargs: Any) -> list:
        exe = self.bind(ctx, kwargs)
        return exe.forward()

    def gradient(self, wrt: Any) -> Any:
        raise MXNetError("Symbol.gradient is not supported; bind an Executor and call backward()")

    def optimize_for(self, backend: str, *args: Any, **kwargs: Any) -> "Symbol":
        return self

    def get_backend_symbol(self, backend: str) -> "Symbol":
        return self

    def as_in_context(self, context: Any) -> "Symbol":
        """A graph has no context until it is bound: returns the symbol itself."""
        return self

    def as_nd_ndarray(self) -> "Symbol":
        return self

    def as_np_ndarray(self) -> "Symbol":
        raise MXNetError("NumPy-mode symbols (mx.np / npx.set_np) are not supported by hybridnet")

    @property
    def handle(self) -> Graph:
        """The IR graph (MXNet exposes a C handle here)."""
        return self._graph()

    def _array_only(self, *args: Any, **kwargs: Any) -> Any:
        raise MXNetError("this NDArray method has no meaning for a Symbol (MXNet raises "
                         "NotImplementedForSymbol too): bind the symbol and use the executor's arrays, "
                         "or call the block with NDArrays")

    backward = wait_to_read = detach = _array_only


def _control_flow_result(s: Symbol, index: Any) -> bool:
    """``s[0]`` on a single result of ``foreach``/``while_loop``/``cond``: those come back as a
    Symbol or a list, as the user's function shaped them, and MXNet code indexes either with
    ``[0]`` (MXNet's ``Symbol[0]`` is the symbol itself), so it is not the row-indexing mistake
    the tracing error is for."""
    node = s._entries[0][0]
    return index in (0, -1) and node.op is not None and node.op.num_subgraphs > 0


# Generated operator functions by name (filled by hybridnet.symbol at import).
_FN: dict = {}


def _entry_of(x: Any, op: OpDef, slot: str) -> tuple:
    if isinstance(x, Symbol):
        if len(x._entries) != 1:
            raise MXNetError(f"operator {op.name}: input {slot!r} is a group of {len(x._entries)} "
                             f"outputs; select one with sym[i]")
        return x._entries[0]
    raise TypeError(f"operator {op.name}: input {slot!r} is a {type(x).__name__}; all inputs must be "
                    f"Symbols when building a graph (mixing NDArray and Symbol is not allowed: "
                    f"inside hybrid_forward use F.* on the given inputs and parameters)")


# Attributes MXNet also keeps in their hidden ``__key__`` form when set by name (attr('lr_mult')
# and attr('__lr_mult__') both answer; -symbol.json files carry both).
_HIDDEN_KEYS = frozenset(("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage"))


def _hidden(attr: Optional[dict]) -> dict:
    """The scope's and ``attr``'s attributes as MXNet stores them: keys as given (strings),
    plus ``__key__`` for the hidden keys."""
    out = {}
    for k, v in _attribute.current().get(attr).items():
        out[k] = str(v)
        if k in _HIDDEN_KEYS:
            out[f"__{k}__"] = str(v)
    return out


def sym_invoke(op: OpDef, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
               hint: Any = None, attr: Any = None) -> Any:
    """Record ``op`` as a graph node (the symbolic twin of ``ndarray.invoke``). ``out`` is
    ignored, as MXNet's generated symbol functions drop it (a graph node owns its output)."""
    if op.num_subgraphs:
        front = op.name.lstrip("_")
        raise MXNetError(f"operator {op.name} needs subgraphs: build it with mx.sym.contrib.{front} "
                         f"(F.contrib.{front} inside hybrid_forward)")
    op.check_attrs({k: v for k, v in attrs.items() if k != "num_args"} if not op.variadic else attrs)
    node_name = _name.current().get(name, hint or op.hint)
    hidden = _hidden(attr)
    if op.variadic:
        entries = [_entry_of(x, op, f"{op.inputs[0]}[{i}]") for i, x in enumerate(inputs)]
        attrs = dict(attrs)
        attrs["num_args"] = len(entries)
    else:
        entries = []
        given = {n: x for n, x in zip(op.input_slots(attrs), inputs) if x is not None}
        active = op.active_inputs(attrs)
        # inputs given positionally in a slot the attributes switch off move to the next active
        # slot that has no value (e.g. RNN's sequence_length passed right after the state)
        extra = [x for n, x in given.items() if n not in active]
        for slot, x in zip([n for n in active if n not in given], extra):
            given[slot] = x
        if op.active_inputs_rule is None:
            # optional inputs only when given; trailing ones may be left off
            present = [n for n in op.inputs if n not in op.optional_inputs or given.get(n) is not None]
            last = max((i for i, n in enumerate(op.inputs) if n in present), default=-1)
            active = op.inputs[: last + 1]
        for slot in active:
            x = given.get(slot)
            if x is None:
                if slot in op.optional_inputs and op.active_inputs_rule is None:
                    raise MXNetError(f"operator {op.name}: optional input {slot!r} must be given when a "
                                     f"later input is given")
                # inputs made for the user carry the operator's attributes, as in MXNet
                entries.append((Node(None, f"{node_name}_{slot}", dict(hidden)), 0))
            else:
                entries.append(_entry_of(x, op, slot))
    node = Node(op, node_name, {**attrs, **hidden}, entries)
    if op.input_init:
        for slot, (src, _) in zip(op.input_slots(node.attrs) if not op.variadic else (), entries):
            init = op.input_init.get(slot)
            if init is not None and src.op is None and "__init__" not in src.attrs:
                src.attrs["__init__"] = init
    n = op.num_outputs(node.attrs)
    sym = Symbol([(node, k) for k in range(n)])
    created = TRACING.state.created
    if created is not None:
        created.append((node, _user_site()))
    return sym


def var(name: str, attr: Optional[dict] = None, shape: Any = None, lr_mult: Optional[float] = None,
        wd_mult: Optional[float] = None, dtype: Any = None, init: Any = None, stype: Optional[str] = None,
        **kwargs: Any) -> Symbol:
    """A variable (graph input); hidden attributes as MXNet stores them (spec B.5)."""
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    attrs = _hidden(attr)
    if shape is not None:  # an int is a 1-D shape (MXNet stores str(shape) and parses "1" so)
        attrs["__shape__"] = str((int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(dtype_flag(dtype))
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs["__storage_type__"] = str({"default": 0, "row_sparse": 1, "csr": 2}[stype])
    for k, v in kwargs.items():
        if k.startswith("__") and k.endswith("__"):
            attrs[k] = str(v)
        else:
            raise ValueError(f"Attribute name={k} is not supported. Additional attributes must "
                             f"start and end with double underscores, e.g. __yourattr__")
    return Symbol([(Node(None, name, attrs), 0)])


Variable = var


def Group(symbols: Sequence[Symbol], create_fn: Any = None) -> Symbol:
    """One symbol whose outputs are the outputs of ``symbols`` in order."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return Symbol([e for s in symbols for e in s._entries])


def load_json(json_str: str) -> Symbol:
    from ..formats.symbol_json import json_to_graph
    return Symbol._of_graph(json_to_graph(json_str))


fromjson = load_json


def load(fname: str) -> Symbol:
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError("fname must be a string")
    try:
        with open(fname, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read symbol file {fname}: {e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MXNetError(f"{fname} is not UTF-8 JSON: {e}") from None
    try:
        return load_json(text)
    except MXNetError as e:
        raise MXNetError(f"{os.fspath(fname)}: {e}") from None


# ---- Python operators -----------------------------------------------------------------------
def _is_scalar(x: Any) -> bool:
    return isinstance(x, numeric_types) or (isinstance(x, np.ndarray) and x.ndim == 0)


def _scalar(x: Any) -> Any:
    return x.item() if isinstance(x, (np.generic, np.ndarray)) else x


def _sym_binary(array_op: str, scalar_op: str, hint: str, scalar_hint: str) -> Any:
    def fn(self: Symbol, other: Any) -> Any:
        if isinstance(other, Symbol):
            return sym_invoke(_reg.get(array_op), (self, other), {}, hint=hint)
        if _is_scalar(other):
            return sym_invoke(_reg.get(scalar_op), (self,), {"scalar": _scalar(other)}, hint=scalar_hint)
        return NotImplemented
    return fn


def _sym_rbinary(array_op: str, rscalar_op: str, hint: str, scalar_hint: str) -> Any:
    def fn(self: Symbol, other: Any) -> Any:
        if isinstance(other, Symbol):
            return sym_invoke(_reg.get(array_op), (other, self), {}, hint=hint)
        if _is_scalar(other):
            return sym_invoke(_reg.get(rscalar_op), (self,), {"scalar": _scalar(other)}, hint=scalar_hint)
        return NotImplemented
    return fn


# python name, array op, scalar op, reflected scalar op, node hint, scalar hint, reflected hint
_SYM_OPERATORS = [
    ("add", "elemwise_add", "_plus_scalar", "_plus_scalar", "_plus", "_plusscalar", "_plusscalar"),
    ("sub", "elemwise_sub", "_minus_scalar", "_rminus_scalar", "_minus", "_minusscalar", "_rminusscalar"),
    ("mul", "elemwise_mul", "_mul_scalar", "_mul_scalar", "_mul", "_mulscalar", "_mulscalar"),
    ("truediv", "elemwise_div", "_div_scalar", "_rdiv_scalar", "_div", "_divscalar", "_rdivscalar"),
    ("mod", "broadcast_mod", "_mod_scalar", "_rmod_scalar", "_mod", "_modscalar", "_rmodscalar"),
    ("pow", "broadcast_power", "_power_scalar", "_rpower_scalar", "_power", "_powerscalar", "_rpowerscalar"),
]
_SYM_COMPARISONS = [
    ("eq", "broadcast_equal", "_equal_scalar", "_equal", "_equalscalar"),
    ("ne", "broadcast_not_equal", "_not_equal_scalar", "_notequal", "_notequalscalar"),
    ("gt", "broadcast_greater", "_greater_scalar", "_greater", "_greaterscalar"),
    ("ge", "broadcast_greater_equal", "_greater_equal_scalar", "_greaterequal", "_greaterequalscalar"),
    ("lt", "broadcast_lesser", "_lesser_scalar", "_lesser", "_lesserscalar"),
    ("le", "broadcast_lesser_equal", "_lesser_equal_scalar", "_lesserequal", "_lesserequalscalar"),
]


def _install_operators() -> None:
    for py, aop, sop, rsop, hint, shint, rhint in _SYM_OPERATORS:
        setattr(Symbol, f"__{py}__", _sym_binary(aop, sop, hint, shint))
        setattr(Symbol, f"__r{py}__", _sym_rbinary(aop, rsop, hint, rhint))
    Symbol.__div__ = Symbol.__truediv__
    Symbol.__rdiv__ = Symbol.__rtruediv__
    for py, aop, sop, hint, shint in _SYM_COMPARISONS:
        setattr(Symbol, f"__{py}__", _sym_binary(aop, sop, hint, shint))
    Symbol.__neg__ = lambda self: sym_invoke(_reg.get("_mul_scalar"), (self,), {"scalar": -1.0},
                                             hint="_mulscalar")
    Symbol.__pos__ = lambda self: self
    Symbol.__abs__ = lambda self: sym_invoke(_reg.get("abs"), (self,), {}, hint="abs")
