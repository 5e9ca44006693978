"""The autograd engine under the front-ends: per-thread flags, variables, recorded history and
backward over torch tensors (``autograd.py`` is MXNet's ``mx.autograd`` API on top of it).

* Nothing is recorded outside ``record()``: eager operators on arrays with attached gradients
  run with torch's grad mode off unless recording, so no graph (and no memory) is kept.
* ``register_variable`` makes an array a variable: its tensor becomes a torch leaf whose
  ``.grad`` *is* the gradient buffer the user sees (``x.grad``). ``run_backward`` runs torch's
  engine, which accumulates into ``.grad`` in place; a hook on each leaf applies the variable's
  ``grad_req`` when the engine reaches it: 'write' clears the buffer first (overwrite), 'add'
  accumulates across backward calls, 'null' variables are not leaves at all. Only the variables
  a head depends on are touched; nothing scans the set of live variables.
* ``run_grad`` returns gradients as new tensors (``create_graph=True`` for higher order) and
  leaves the buffers alone.
* Integer variables (MXNet differentiates integer arrays; torch only floating ones) get a
  float64 *twin*: a torch leaf with the same values (``make_twin``). Operators recorded on
  integer arrays that have twins run a second time on the twins (``ndarray.invoke``), their
  integer outputs keep the twin result as theirs, and a backward from an integer head starts at
  its twin; the twin leaf's gradient is cast into the integer buffer per grad_req.
"""
from __future__ import annotations

import contextvars
import warnings
import weakref
from typing import Any, Optional, Sequence

import torch

from .base import MXNetError
from .ir.graph import Node

__all__ = ["Mode", "Scope", "STATE", "current_mode", "record", "pause", "train_mode", "predict_mode",
           "is_recording", "is_training", "set_recording", "set_training", "register_variable",
           "live_variables", "check_head", "run_backward", "run_grad", "history_entry",
           "record_history", "record_graph_history", "note_zero_grad", "TWIN", "twin_of", "int_variables",
           "engine_backward", "engine_grad"]


class Mode:
    """One thread's autograd flags (immutable: a change installs another ``Mode``)."""

    __slots__ = ("recording", "training")

    def __init__(self, recording: bool, training: bool) -> None:
        self.recording = recording
        self.training = training

    def __repr__(self) -> str:
        return f"Mode(recording={self.recording}, training={self.training})"


_MODES = {(r, t): Mode(r, t) for r in (False, True) for t in (False, True)}
# The flags are per thread, as in MXNet (and as torch's grad mode is): a ContextVar is per
# thread (a new thread starts from the default: not recording, predict mode), and reading it
# costs about as much as an attribute read, so the imperative hot path stays fast.
_MODE: "contextvars.ContextVar[Mode]" = contextvars.ContextVar("hybridnet_autograd_mode",
                                                               default=_MODES[False, False])
current_mode = _MODE.get
"""The calling thread's ``Mode`` (hot paths read ``current_mode().recording``)."""


def _set_mode(recording: bool, training: bool) -> None:
    _MODE.set(_MODES[recording, training])


class _ThreadState:
    """Read-only view of the calling thread's flags (``STATE.recording``/``STATE.training``)."""

    __slots__ = ()

    @property
    def recording(self) -> bool:
        return _MODE.get().recording

    @property
    def training(self) -> bool:
        return _MODE.get().training


STATE = _ThreadState()
# id -> weak reference of every live variable: for introspection only, backward never scans
# it. (Not a WeakSet: weakref equality would call NDArray.__eq__, which is elementwise.)
_VARIABLES: "dict[int, weakref.ref]" = {}
# >0 while autograd.backward() runs: leaf hooks apply grad_req only then (not during grad()).
_ACTIVE_BACKWARD = 0


def is_recording() -> bool:
    """Whether operators are being recorded for differentiation (in the calling thread)."""
    return _MODE.get().recording


def is_training() -> bool:
    """Whether Dropout/BatchNorm behave as in training (in the calling thread)."""
    return _MODE.get().training


def set_recording(is_recording: bool) -> bool:  # noqa: F811 - MXNet's parameter name
    """Set the calling thread's recording flag; returns the previous one."""
    mode = _MODE.get()
    _set_mode(bool(is_recording), mode.training)
    if is_recording:
        torch.set_grad_enabled(True)  # torch's grad mode is per thread too
    # Turning recording off leaves torch's grad mode alone: eager operators already keep no
    # graph when not recording, and torch code of the user keeps its default behaviour.
    return mode.recording


def set_training(train_mode: bool) -> bool:  # noqa: F811
    """Set the calling thread's training flag; returns the previous one."""
    mode = _MODE.get()
    _set_mode(mode.recording, bool(train_mode))
    return mode.training


class Scope:
    """``with`` scope setting the calling thread's flags and restoring them on exit."""

    __slots__ = ("_rec", "_train", "_prev")

    def __init__(self, recording: Optional[bool], training: Optional[bool]):
        self._rec, self._train = recording, training
        self._prev: tuple = ()

    def __enter__(self) -> "Scope":
        mode = _MODE.get()
        self._prev = (mode, torch.is_grad_enabled())
        rec = mode.recording if self._rec is None else self._rec
        train = mode.training if self._train is None else self._train
        _MODE.set(_MODES[rec, train])
        if self._rec is not None:
            torch.set_grad_enabled(self._rec)
        return self

    def __exit__(self, *exc: Any) -> None:
        mode, grad_enabled = self._prev
        _MODE.set(mode)
        torch.set_grad_enabled(grad_enabled)


def record(train_mode: bool = True) -> Scope:  # noqa: F811
    """Record operators for differentiation; ``train_mode`` sets the Dropout/BatchNorm flag."""
    return Scope(True, train_mode)


def pause(train_mode: bool = False) -> Scope:  # noqa: F811
    """Stop recording inside a ``record()`` block."""
    return Scope(False, train_mode)


def train_mode() -> Scope:
    """Training behaviour (Dropout active...) without changing the recording flag."""
    return Scope(None, True)


def predict_mode() -> Scope:
    """Inference behaviour without changing the recording flag."""
    return Scope(None, False)


# ---- integer variables: float64 twins ---------------------------------------------------------
TWIN = "_hybridnet_twin"  # attribute of an integer tensor: the float64 tensor its gradient flows through
_TWIN_VERSION = "_hybridnet_twin_of_version"  # on a twin leaf: the integer tensor's version it copies
# How many integer variables were ever made: the operators look for twins only once there is one.
int_variables = 0


def _make_twin(t: torch.Tensor) -> torch.Tensor:
    global int_variables
    leaf = t.detach().to(torch.float64).requires_grad_(True)
    setattr(leaf, _TWIN_VERSION, t._version)
    setattr(t, TWIN, leaf)
    int_variables += 1
    return leaf


def twin_of(t: torch.Tensor) -> Optional[torch.Tensor]:
    """The float64 tensor the gradient of integer tensor ``t`` flows through (None: it has none).
    A variable's twin follows the variable's values when they were written in place since."""
    tw = getattr(t, TWIN, None)
    if tw is not None and tw.is_leaf:
        seen = getattr(tw, _TWIN_VERSION, None)
        if seen is not None and seen != t._version:
            with torch.no_grad():
                tw.copy_(t)
            setattr(tw, _TWIN_VERSION, t._version)
    return tw


# ---- variables -------------------------------------------------------------------------------
def _leaf_hook(arr_ref: "weakref.ref", leaf_ref: "weakref.ref") -> Any:
    def hook(g: torch.Tensor) -> None:
        if not _ACTIVE_BACKWARD:
            return None  # autograd.grad() or a raw torch call: buffers untouched
        arr = arr_ref()
        leaf = leaf_ref()
        if arr is None or leaf is None:
            return None
        buf = arr._grad._t
        if leaf.grad is not buf:  # someone detached the buffer (e.g. set .grad = None): relink
            leaf.grad = buf
            buf.zero_()
        elif arr._grad_req == "write":
            buf.zero_()
        arr._fresh = True
        return None
    return hook


def _storage_cast_hook(arr_ref: "weakref.ref") -> Any:
    """For variables whose array or gradient is sparse: torch accumulated the gradient of this
    backward on the leaf; move it into the gradient buffer in the buffer's storage type
    (overwritten for 'write', added for 'add'), as MXNet's backward writes sparse gradients."""
    def hook(leaf: torch.Tensor) -> None:
        g = leaf.grad
        leaf.grad = None
        arr = arr_ref()
        if g is None or arr is None or not _ACTIVE_BACKWARD:
            return
        from .ops import storage as _storage
        buf = arr._grad
        stype = _storage.stype_of(buf._t)
        g = g.detach()
        if arr._grad_req == "add":
            if stype == "row_sparse":
                g = (_storage.to_rsp(buf._t) + _storage.to_rsp(g)).coalesce()
            else:
                g = _storage.to_dense(buf._t) + _storage.to_dense(g)
        new = _storage.cast(g, stype)
        if stype == "default":
            with torch.no_grad():
                buf._t.copy_(new)
        else:
            buf._t = new if new is not g or arr._grad_req == "add" else new.clone()
        arr._fresh = True
    return hook


def register_variable(arr: Any) -> None:
    """Make ``arr`` (already holding ``_t``, ``_grad``, ``_grad_req``) a variable for backward."""
    key = id(arr)

    def _forget(ref: "weakref.ref", key: int = key) -> None:
        if _VARIABLES.get(key) is ref:
            del _VARIABLES[key]
    _VARIABLES[key] = weakref.ref(arr, _forget)
    t = getattr(arr, "_leaf", None)  # a sparse array differentiates through its dense leaf
    if t is None:
        t = arr._t
        if not (t.is_floating_point() or t.is_complex()):  # an integer variable: its float twin
            if arr._grad_req == "null":
                return
            t = _make_twin(t)
    if arr._grad_req == "null" or not t.requires_grad:
        return
    buf = arr._grad._t
    if t is not arr._t or buf.layout is not torch.strided:
        t.register_post_accumulate_grad_hook(_storage_cast_hook(weakref.ref(arr)))
        return
    try:
        t.grad = buf
    except RuntimeError as e:
        raise MXNetError(f"cannot use the given gradient buffer for this variable: {e}") from None
    t.register_hook(_leaf_hook(weakref.ref(arr), weakref.ref(t)))


def live_variables() -> list:
    """The arrays currently marked as variables (attach_grad / mark_variables) and still alive."""
    return [a for a in (r() for r in list(_VARIABLES.values())) if a is not None]


# ---- backward / grad -------------------------------------------------------------------------
_NOT_RECORDED = ("Cannot differentiate: head {i} (shape {shape}) is not in a computational graph. "
                 "Call x.attach_grad() on the inputs and compute the head inside "
                 "`with autograd.record():`; operators run outside record() keep no graph.")


# Outputs that cannot carry a gradient (the bool results of comparisons, integer results) computed
# under record() from inputs that do: MXNet records such operators with zero gradients
# (MakeZeroGradNodes), so a backward from one writes zeros into the variables upstream (grad_req
# 'write'; 'add' adds nothing) where torch would find no graph. The output tensor keeps, under this
# attribute, the input tensors the zeros flow into.
_ZERO_GRAD_FROM = "_hybridnet_zero_grad_from"


def note_zero_grad(outputs: Sequence[torch.Tensor], inputs: Sequence[Any]) -> None:
    """Called while recording: outputs without a gradient of an operator whose ``inputs`` (tensors)
    have one become heads whose backward sends zeros to those inputs (to an integer input's
    float64 twin: MXNet's zero gradient of integer mod reaches the integer variable as zeros)."""
    srcs = [x for x in inputs if x is not None and x.requires_grad]
    if int_variables:
        for x in inputs:
            tw = None if x is None or x.requires_grad else twin_of(x)
            if tw is not None and tw.requires_grad:
                srcs.append(tw)
    if srcs:
        for o in outputs:
            if not o.requires_grad:
                setattr(o, _ZERO_GRAD_FROM, srcs)


def _expand_zero_heads(heads: list, head_grads: list) -> tuple:
    """Heads without a gradient of their own replaced by their inputs with zero gradients (and
    whether any was)."""
    ts, gs = [], []
    zeros = False
    for t, g in zip(heads, head_grads):
        if not t.requires_grad:
            tw = getattr(t, TWIN, None)
            if tw is not None and tw.requires_grad:  # an integer head: backward from its twin
                ts.append(tw)
                gs.append(g.to(tw.dtype))
                continue
        srcs = None if t.requires_grad else getattr(t, _ZERO_GRAD_FROM, None)
        if srcs is None:
            ts.append(t)
            gs.append(g)
        else:
            ts.extend(srcs)
            gs.extend(torch.zeros_like(s) for s in srcs)
            zeros = True
    return ts, gs, zeros


def check_head(i: int, t: torch.Tensor, g: Any) -> torch.Tensor:
    """Check that head ``i`` (its tensor ``t``) can be differentiated and return its gradient:
    ``g`` (a tensor, dense or sparse, or what ``torch.as_tensor`` takes) on the head's device
    and dtype, or ones where ``g`` is None."""
    if not t.requires_grad:
        tw = getattr(t, TWIN, None)
        if tw is not None and tw.requires_grad:  # an integer head (its gradient in its dtype)
            return torch.ones_like(t) if g is None else torch.as_tensor(g).detach().to(t.device, t.dtype)
        if getattr(t, _ZERO_GRAD_FROM, None) is not None:
            return torch.zeros((), dtype=torch.float32)  # unused: run_backward sends zeros upstream
        raise MXNetError(_NOT_RECORDED.format(i=i, shape=tuple(t.shape)))
    if t.grad_fn is not None and t.grad_fn.metadata.get(_FREED):
        raise MXNetError(_GRAPH_FREED.format(where="backward"))
    if g is None:
        return torch.ones_like(t)
    gt = torch.as_tensor(g)
    if gt.layout is not torch.strided:  # a sparse head gradient
        from .ops.storage import to_dense
        gt = to_dense(gt)
    if tuple(gt.shape) != tuple(t.shape):
        if gt.numel() <= t.numel():
            raise MXNetError(f"backward: head gradient {i} has shape {tuple(gt.shape)} but the head "
                             f"has shape {tuple(t.shape)}")
        # MXNet does not check: its backward kernels read the head's number of elements from the
        # start of the gradient's memory. Do the same, and say so.
        warnings.warn(f"backward: head gradient {i} has shape {tuple(gt.shape)}, larger than the head "
                      f"{tuple(t.shape)}; its first {t.numel()} elements are used, as MXNet does",
                      stacklevel=3)
        gt = gt.reshape(-1)[:t.numel()].reshape(t.shape)
    return gt.detach().to(device=t.device, dtype=t.dtype)


# Marks (in torch's per-node metadata) a head whose graph a backward without retain_graph
# released: MXNet refuses a second backward through it even where torch kept nothing to free.
_FREED = "hybridnet_graph_freed"
_GRAPH_FREED = ("{where}: the graph of this head was freed by a previous backward(); pass "
                "retain_graph=True to the first backward() to differentiate the same graph twice, "
                "or recompute the head under autograd.record()")


def _mark_freed(heads: list) -> None:
    for t in heads:
        if t.grad_fn is not None:
            t.grad_fn.metadata[_FREED] = True


def _engine_error(e: RuntimeError, where: str) -> MXNetError:
    msg = str(e)
    if "backward through the graph a second time" in msg or "have already been freed" in msg:
        return MXNetError(_GRAPH_FREED.format(where=where))
    if "modified by an inplace operation" in msg:
        return MXNetError(f"{where}: an array needed for the gradient was modified in place after it "
                          f"was used inside autograd.record(); compute new arrays instead of "
                          f"x[...] = v / x += y on recorded values. ({msg.splitlines()[0]})")
    return MXNetError(f"{where} failed: {msg.splitlines()[0] if msg else type(e).__name__}")


try:  # torch's engine entry point below torch.autograd.backward/grad (private; checked by tests)
    from torch.autograd.graph import _engine_run_backward as _ENGINE_RUN
except ImportError:  # pragma: no cover - a torch without it: the public functions serve
    _ENGINE_RUN = None


def engine_backward(heads: Sequence[torch.Tensor], head_grads: Sequence[torch.Tensor], retain_graph: bool,
                    create_graph: bool = False) -> None:
    """``torch.autograd.backward(heads, head_grads, ...)`` without its argument preparation,
    whose first use in a process imports torch.fx's symbolic shapes and sympy (0.3-0.7 s, the
    cost of a first training step many times over) to check what callers here have checked:
    one head gradient per head, of its shape (the engine itself still checks and casts them)."""
    if _ENGINE_RUN is None:
        torch.autograd.backward(list(heads), list(head_grads), retain_graph=retain_graph, create_graph=create_graph)
        return
    _ENGINE_RUN(tuple(heads), tuple(head_grads), retain_graph, create_graph, (), True, accumulate_grad=True)


def engine_grad(heads: Sequence[torch.Tensor], variables: Sequence[torch.Tensor],
                head_grads: Sequence[torch.Tensor], retain_graph: bool, create_graph: bool = False) -> tuple:
    """``torch.autograd.grad(heads, variables, head_grads, allow_unused=True, ...)`` the same way
    (see :func:`engine_backward`): None for a variable the heads do not reach."""
    if _ENGINE_RUN is None:
        return torch.autograd.grad(list(heads), list(variables), list(head_grads), retain_graph=retain_graph,
                                   create_graph=create_graph, allow_unused=True)
    return _ENGINE_RUN(tuple(heads), tuple(head_grads), retain_graph, create_graph, tuple(variables), True,
                       accumulate_grad=False)


def run_backward(heads: Sequence[torch.Tensor], head_grads: Sequence[torch.Tensor],
                 retain_graph: bool) -> None:
    """Backward from checked heads (``check_head``) into the variables' buffers per grad_req."""
    global _ACTIVE_BACKWARD
    ts, head_grads, zeros = _expand_zero_heads(list(heads), list(head_grads))
    _ACTIVE_BACKWARD += 1
    try:
        # zeros sent upstream of a gradient-less head leave the graph there usable
        engine_backward(ts, head_grads, retain_graph=retain_graph or zeros)
    except RuntimeError as e:
        raise _engine_error(e, "backward") from e
    finally:
        _ACTIVE_BACKWARD -= 1
    if not retain_graph:
        _mark_freed(list(heads))


def run_grad(heads: Sequence[torch.Tensor], head_grads: Sequence[torch.Tensor],
             variables: Sequence[torch.Tensor], retain_graph: bool, create_graph: bool) -> list:
    """Gradients of checked heads w.r.t. the variables' tensors, as new tensors (buffers untouched)."""
    ts, head_grads, zeros = _expand_zero_heads(list(heads), list(head_grads))
    try:
        with torch.enable_grad() if create_graph else torch.no_grad():
            out = engine_grad(ts, list(variables), head_grads, retain_graph=retain_graph or zeros,
                              create_graph=create_graph)
    except RuntimeError as e:
        raise _engine_error(e, "grad") from e
    if not retain_graph:
        _mark_freed(list(heads))
    return [_gradient_tensor(v, g, create_graph) for v, g in zip(variables, out)]


def _gradient_tensor(var: torch.Tensor, g: Optional[torch.Tensor], create_graph: bool) -> torch.Tensor:
    """A gradient as an ordinary tensor: zeros where nothing flowed (torch's None or its lazy
    ZeroTensor); with ``create_graph`` always part of the graph, so differentiating it again gives
    zeros where it does not depend on the variable (MXNet's behaviour) instead of an error."""
    if g is None or g._is_zerotensor():
        g = torch.zeros_like(var)
    if create_graph and not g.requires_grad:
        g = g + var * 0
    return g


# ---- recorded history (get_symbol) -------------------------------------------------------------
# Under record(), every registry operator with a variable upstream leaves on its outputs the IR
# entry that computed them: small Node objects holding no tensors. Arrays computed otherwise
# (NDArray methods outside the registry, constants) appear as variables of the graph.
_HIST_COUNT = {"var": 0, "op": 0}  # names for the recorded nodes: var0, var1..., <op>0, <op>1...


def record_graph_history(graph: Any, input_nodes: Sequence, inputs: Sequence, outputs: Sequence) -> None:
    """Remember (on ``outputs``) the operators of ``graph`` as having computed them from
    ``inputs`` (the arrays bound to ``input_nodes``): a hybridized call recorded inline, operator
    by operator, as MXNet records a CachedOp of at most ``inline_limit`` operators."""
    made: dict = {id(node): history_entry(x) for node, x in zip(input_nodes, inputs)}  # (node, index)
    for node in graph.nodes:
        if node.is_variable:
            continue
        n = _HIST_COUNT["op"]
        _HIST_COUNT["op"] = n + 1
        copied = Node(node.op, f"{node.op.hint}{n}", node.attrs,
                      [_mapped(made, e) for e in node.inputs], node.subgraphs)
        made[id(node)] = (copied, None)  # None: the entry's own output index
    for out, entry in zip(outputs, graph.outputs):
        out._hist = _mapped(made, entry)


def _mapped(made: dict, entry: tuple) -> tuple:
    node, index = made[id(entry[0])]
    return (node, entry[1]) if index is None else (node, index)


def history_entry(arr: Any) -> tuple:
    try:
        return arr._hist
    except AttributeError:
        pass
    entry = (Node(None, f"var{_HIST_COUNT['var']}"), 0)
    _HIST_COUNT["var"] += 1
    arr._hist = entry
    return entry


def record_history(op: Any, attrs: dict, inputs: Sequence, outputs: Sequence, subgraphs: Sequence = ()) -> None:
    """Remember (on ``outputs``) that ``op`` computed them from ``inputs`` (called while recording)."""
    ins = []
    for x in inputs:
        if x is not None:
            try:
                ins.append(x._hist)
            except AttributeError:
                ins.append(history_entry(x))
    if "is_train" in attrs:
        attrs = {k: v for k, v in attrs.items() if k != "is_train"}
    n = _HIST_COUNT["op"]
    _HIST_COUNT["op"] = n + 1
    node = Node(op, f"{op.hint}{n}", attrs, ins, subgraphs)
    if len(outputs) == 1:
        outputs[0]._hist = (node, 0)
    else:
        for k, o in enumerate(outputs):
            o._hist = (node, k)
