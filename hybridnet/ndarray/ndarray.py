"""NDArray: an eager array with MXNet 1.x semantics over a torch.Tensor (wrapped, not subclassed).

Semantics kept from MXNet 1.9.1 (legacy ``mx.nd``, not ``mx.np``):

* there are no 0-d results: ``x[i]`` on a 1-D array and ``x[i, j]`` on a 2-D array have shape
  ``(1,)``; ``asscalar()`` gives the Python/NumPy scalar;
* memory sharing: basic indexing that selects a contiguous block (``x[1]``, ``x[1:3]``), the
  ``reshape`` method and ``detach`` return *views* (writes go through both ways); everything
  else (operators, non-contiguous slices, advanced indexing, ``T``) returns new memory, so an
  in-place write on a result never changes its inputs (and vice versa);
* Python operators map to MXNet's operators (``x + y`` -> ``broadcast_add``, ``x + 1`` ->
  ``_plus_scalar``...); comparisons return 0/1 arrays of the input dtype; scalar operators
  on integer arrays compute in the array's dtype (the scalar is cast, as MXNet does);
* autograd: nothing is recorded outside ``autograd.record()``; see ``hybridnet.autograd``.

Not in MXNet, ours: ``nd.from_torch(t)`` and ``x.to_torch()`` share memory with torch tensors.
"""
from __future__ import annotations

import copy
import ctypes as _ctypes
import operator as _operator
import threading
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np
import torch

from .. import autograd_engine as _ag
from ..base import (DeferredError, MXNetError, ShapeError, dtype_name, dtype_np, dtype_torch, numeric_types,
                    tensor_from_handle, tensor_handle)
from ..context import Context, current_context
from ..ir.interpreter import Interpreter
from ..ops import registry as _reg
from ..ops.numpy_ops import twin_run as _twin_scope
from ..ops.registry import OpDef
from ..profiler import recorder as _profiler

__all__ = ["NDArray", "invoke", "array", "from_torch", "from_numpy", "from_dlpack",
           "to_dlpack_for_read", "to_dlpack_for_write", "waitall"]

_mode = _ag.current_mode  # the calling thread's autograd flags

# MXNet's storage-type and grad_req codes (``mxnet.ndarray.ndarray`` internals libraries read)
_STORAGE_TYPE_UNDEFINED, _STORAGE_TYPE_DEFAULT, _STORAGE_TYPE_ROW_SPARSE, _STORAGE_TYPE_CSR = -1, 0, 1, 2
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}
_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}
py_slice = slice  # MXNet shadows ``slice`` with the operator and keeps the builtin under this name
_set_grad = torch._C._set_grad_enabled
_is_grad = torch.is_grad_enabled
_Tensor = torch.Tensor
_no_grad = torch.no_grad

# Set by hybridnet.symbol at import: called when an operator receives a Symbol input.
symbolic_dispatch: Optional[Callable] = None
# Set by hybridnet.ndarray.sparse at import: called when an operator receives a sparse array,
# and to write a result into a sparse out= array.
sparse_dispatch: Optional[Callable] = None
sparse_store: Optional[Callable] = None
_strided = torch.strided


# ---- devices ---------------------------------------------------------------------------------
def _device(ctx: Optional[Context]) -> torch.device:
    """torch device of ``ctx`` (None: the current context); a clear error for absent GPUs."""
    if ctx is None:
        ctx = current_context()
    elif not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a Context such as mx.cpu() or mx.gpu(0), got {ctx!r}")
    if ctx.device_typeid == 2:
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if ctx.device_id >= n:
            have = "no CUDA device is available (torch.cuda.is_available() is False)" if n == 0 \
                else f"only {n} GPU(s) are visible"
            raise MXNetError(f"cannot use context {ctx}: {have}; use mx.cpu() or a valid mx.gpu(i)")
    return ctx.torch_device


def placed(arr: "NDArray", ctx: Optional[Context]) -> "NDArray":
    """``arr`` labelled with ``ctx`` when torch's device cannot say it (a CPU context other than
    cpu(0): MXNet keeps cpu(1), cpu_pinned(0), cpu_shared(0) apart, and so must ``.context``)."""
    global _labelled
    if ctx is not None and ctx.device_typeid != 2 and (ctx.device_typeid != 1 or ctx.device_id != 0):
        arr._cpuctx = ctx
        _labelled = True
    return arr


# Whether any array was ever labelled by ``placed``: until then operators skip looking for labels
_labelled = False


def _carry_context(inputs: Sequence, outs: Sequence["NDArray"]) -> None:
    """Label operator results with their first input's CPU context (cpu(1) in, cpu(1) out)."""
    for x in inputs:
        ctx = getattr(x, "_cpuctx", None)
        if ctx is not None:
            for o in outs:
                o._cpuctx = ctx
            return


# ---- MXNet's asynchronous errors ---------------------------------------------------------------
# MXNet runs operators on an asynchronous engine: an error an operator finds while computing
# values (base.DeferredError: an index out of range under mode='raise', a sampler's invalid
# parameter) is kept with the operator's outputs and raised by the first read of one of them
# (wait_to_read, asnumpy, asscalar, bool()/float()/int(), waitall), once: the read that raises it
# clears it for every array that shares it. Operators given an input that still holds an error
# pass it on to their outputs (MXNet's var exceptions), and waitall raises the oldest error
# still pending and clears them all (its global exception list). Errors in shapes, types or
# attributes raise at the call, as in MXNet.
#
# The error box rides on the output tensors (attribute _PENDING_ATTR); a view finds its base's.
# Nothing is looked at while no error is pending (_PENDING empty), so the common path pays one
# truth test of a list.


class _Pending:
    """One operator's error, shared by its outputs (MXNet's ExceptionRef); ``exc`` None once raised."""
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc: Optional[BaseException] = exc


_PENDING: list = []  # errors not raised yet, oldest first
# The samplers share one random-number state, which each of them writes (MXNet's random
# resource, a variable every sampler mutates): after a sampler fails, every later sampler
# inherits its error until that error is raised.
_rng_box: Optional[_Pending] = None
_PENDING_ATTR = "_hybridnet_pending"
_pending_lock = threading.Lock()


def _pending_of(t: Any) -> Optional[_Pending]:
    """The error tensor ``t`` (or the tensor it views) still holds, if any."""
    box = getattr(t, _PENDING_ATTR, None)
    if box is None:
        base = getattr(t, "_base", None)
        if base is not None:
            box = getattr(base, _PENDING_ATTR, None)
    return box if box is not None and box.exc is not None else None


def _fail_rng(box: _Pending) -> None:
    global _rng_box
    _rng_box = box


def _hold_error(tensors: Sequence, box: _Pending) -> None:
    for t in tensors:
        if t is not None:
            setattr(t, _PENDING_ATTR, box)


def _new_pending(exc: BaseException) -> _Pending:
    box = _Pending(exc)
    with _pending_lock:
        _PENDING.append(box)
    return box


def _carry_pending(src: torch.Tensor, dst: torch.Tensor) -> None:
    """``dst`` was computed from ``src`` outside ``invoke`` (a copy, a cast, an indexed copy)."""
    box = _pending_of(src)
    if box is not None:
        setattr(dst, _PENDING_ATTR, box)


def _raise_pending(t: torch.Tensor) -> None:
    """Raise the error ``t`` holds (clearing it: the next read succeeds), as MXNet's WaitToRead."""
    box = _pending_of(t)
    if box is not None:
        _raise_box(box)


def _raise_box(box: _Pending) -> None:
    exc, box.exc = box.exc, None
    with _pending_lock:
        _PENDING[:] = [b for b in _PENDING if b.exc is not None]
    raise exc  # type: ignore[misc]


def pending_errors() -> int:
    """How many operator errors are waiting to be raised by a read (MXNet's asynchronous errors)."""
    return sum(1 for b in _PENDING if b.exc is not None)


def _deferred_outputs(op: OpDef, err: DeferredError, out: Any) -> Any:
    """The outputs a failed operator hands back: what its kernel computed anyway."""
    ph = err.placeholder
    if ph is None:  # the kernel could say nothing about its outputs: the error stays synchronous
        raise err
    return ph if isinstance(ph, torch.Tensor) else list(ph)


def _with_pending(res: Any, out: Any, box: _Pending) -> Any:
    """Mark an operator's results (and its ``out=`` arrays) as holding ``box``'s error."""
    if out is not None:
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        _hold_error([o._t for o in outs], box)
    _hold_error([res] if res.__class__ is _Tensor else res, box)
    return res


# ---- the imperative dispatch path ------------------------------------------------------------
def _describe(x: Any) -> str:
    if isinstance(x, NDArray):
        return f"{x.shape} {dtype_name(x._t.dtype)} @{x.context}"
    if x is None:
        return "None"
    return type(x).__name__


def _op_error(op: OpDef, inputs: Sequence, attrs: dict, err: Exception) -> MXNetError:
    names = op.inputs if not op.variadic else [f"{op.inputs[0]}[{i}]" for i in range(len(inputs))]
    ins = ", ".join(f"{n}={_describe(x)}" for n, x in zip(names, inputs) if x is not None)
    shown = {k: v for k, v in attrs.items() if k not in ("is_train", "out")}
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return MXNetError(f"operator {op.name} failed: {msg}\n  inputs: {ins}\n  attributes: {shown}")


def _owned(res: torch.Tensor, tensors: list) -> torch.Tensor:
    """Operators return new memory in MXNet: copy a kernel result that aliases an input."""
    if res._is_view():
        return res.clone()
    for t in tensors:
        if res is t:
            return res.clone()
    return res


class OpRecorder:
    """Every operator one thread runs eagerly, with its outputs, inside ``recording_ops()``
    (``hybridize(verify=N)`` compares them with the graph's nodes)."""

    def __init__(self) -> None:
        self.records: list = []

    def add(self, op: OpDef, outs: tuple) -> None:
        self.records.append((op, tuple(o._t for o in outs)))


# thread id -> the OpRecorder of that thread's innermost recording_ops(); each thread touches
# only its own entry, so threads verifying at once do not see each other's operators
_op_recorders: dict = {}


@contextmanager
def recording_ops() -> Iterator[OpRecorder]:
    """Record the operators the calling thread runs eagerly until exit (other threads' are not)."""
    tid = threading.get_ident()
    outer = _op_recorders.get(tid)
    rec = _op_recorders[tid] = OpRecorder()
    try:
        yield rec
    finally:
        if outer is None:
            del _op_recorders[tid]
        else:
            _op_recorders[tid] = outer


def _record(op: OpDef, outs: tuple) -> None:
    rec = _op_recorders.get(threading.get_ident())
    if rec is not None:
        rec.add(op, outs)


# mx.np.ndarray (numpy/multiarray.py sets it): a dense NDArray subclass over the same tensors that
# takes invoke's fast path as NDArray does (an isinstance and a layout check cost an np operator
# ~20% more than the same nd one)
_np_class: Any = None


def invoke(op: OpDef, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
           hint: Any = None, attr: Any = None) -> Any:
    """Run ``op`` eagerly on NDArrays (or hand it to the Symbol front-end for Symbol inputs).

    ``attrs`` holds the attributes the caller passed (kernel defaults apply to the rest); ``out``
    (an NDArray or a list of them) receives the result in place, as MXNet's ``out=`` does.
    """
    tensors = []
    guard = False
    for x in inputs:
        c = x.__class__
        if c is NDArray or c is _np_class:
            t = x._t
            if t.requires_grad:
                guard = True
            tensors.append(t)
        elif x is None:
            tensors.append(None)
        elif isinstance(x, NDArray):
            t = x._t
            if t.layout is not _strided:  # a sparse array (ndarray.sparse): its own dispatch
                return sparse_dispatch(op, inputs, attrs, out, name, hint, attr)  # type: ignore[misc]
            guard = guard or t.requires_grad
            tensors.append(t)
        elif symbolic_dispatch is not None and hasattr(x, "_entries"):
            return symbolic_dispatch(op, inputs, attrs, out, name, hint, attr)
        else:
            raise TypeError(f"operator {op.name}: expected NDArray inputs, got {type(x).__name__} "
                            f"({x!r:.60}); wrap Python/NumPy data with mx.nd.array(...)")
    if op.train_aware:
        attrs["is_train"] = _mode().training
    if op.writes_out and out is not None:
        attrs = {**attrs, "out": _out_tensors(out)}
    kernel = op.kernel if not _profiler.running else _profiler.timed_kernel(op)
    box = None
    if _PENDING:  # an input may still hold an operator's error: the outputs inherit it
        for t in tensors:
            if t is not None:
                box = _pending_of(t)
                if box is not None:
                    break
        if box is None and op.random and _rng_box is not None and _rng_box.exc is not None:
            box = _rng_box
    try:
        if guard and not _mode().recording and _is_grad():
            # An input has an attached gradient but we are not recording: keep no graph.
            _set_grad(False)
            try:
                res = kernel(*tensors, **attrs)
                if out is None:
                    res = _owned(res, tensors) if res.__class__ is _Tensor else \
                        [_owned(r, tensors) for r in res]
            finally:
                _set_grad(True)
        else:
            res = kernel(*tensors, **attrs)
            if out is None:
                res = _owned(res, tensors) if res.__class__ is _Tensor else [_owned(r, tensors) for r in res]
    except DeferredError as e:
        res = _deferred_outputs(op, e, out)
        box = box or _new_pending(MXNetError(f"operator {op.name} failed: {e}"))
        if op.random:
            _fail_rng(box)
        guard = False  # the stand-in outputs have no history
    except MXNetError:
        if box is not None:  # it ran on an input that holds an error: that error comes first
            _raise_box(box)
        raise
    except (RuntimeError, ValueError, TypeError, IndexError, AssertionError, NotImplementedError) as e:
        if box is not None:
            _raise_box(box)
        raise _op_error(op, inputs, attrs, e) from e
    if box is not None:
        res = _with_pending(res, out, box)
    elif (_ag.int_variables or (guard and attrs.get("dtype") is not None)) and _mode().recording:
        res = _twin_run(op.kernel, tensors, attrs, res)
        # integer inputs whose gradient flows through float64 twins: recorded like variables
        guard = guard or any(t is not None and _ag.twin_of(t) is not None for t in tensors)
    if res.__class__ is _Tensor:
        if out is not None:
            if out.__class__ is not NDArray and isinstance(out, (list, tuple)):
                out = out[0]
            res = _write_out(out, res)
        else:
            res = NDArray(res)
            if _labelled:
                _carry_context(inputs, (res,))
        if guard and _mode().recording:
            _ag.record_history(op, attrs, inputs, [res])
            if not res._t.requires_grad:
                _ag.note_zero_grad((res._t,), tensors)
        if _op_recorders:
            _record(op, (res,))
        return res
    if out is not None:
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        _write_outs(outs, res)
    else:
        outs = [NDArray(r) for r in res]
        if _labelled:
            _carry_context(inputs, outs)
    if guard and _mode().recording:
        _ag.record_history(op, attrs, inputs, outs)
        _ag.note_zero_grad([o._t for o in outs], tensors)
    if _op_recorders:
        _record(op, tuple(outs))
    return out if out is not None else outs


def run_graph_with_twins(graph: Any, input_nodes: Sequence, tensors: Sequence[_Tensor], training: bool) -> tuple:
    """``graph``'s outputs for ``tensors`` (bound to ``input_nodes``), operator by operator as
    eager calls under record() run them: each operator with integer operands gets float64 twins
    of its own (``_twin_run``), so MXNet's per-operator rules hold inside a hybridized block
    (integer mod passes no gradient), an integer dtype= its float64 result."""
    def call(op: Any, args: list, attrs: dict) -> Any:
        return _twin_run(op.kernel, list(args), attrs, op.kernel(*args, **attrs))
    with torch.enable_grad():
        return Interpreter(graph, input_nodes).run(*tensors, _train=training, call=call)


def _twin_run(kernel: Callable, tensors: list, attrs: dict, res: Any) -> Any:
    """Under record(), an operator with integer inputs that have float twins (integer variables
    and what was computed from them: autograd_engine's twins) runs again on the twins: integer
    results keep that run's result as their twin, floating results are replaced by it (cast
    back), so gradients flow to the integer variables as in MXNet. An operator that cannot run on
    the twins passes no gradient."""
    twins = [None if t is None else _ag.twin_of(t) for t in tensors]
    op = getattr(kernel, "opdef", None)
    if op is not None and op.random:
        return res  # a second run would draw other numbers: its results would not be these
    if op is not None and op.integer_zero_gradient and any(
            t is not None and not (t.is_floating_point() or t.is_complex()) for t in tensors):
        return res  # MXNet's gradient of it is 0 for integer operands: nothing flows back
    if all(tw is None for tw in twins):
        # an integer dtype= on inputs with gradients (np.mean(x, dtype='int8')): MXNet's gradient
        # passes through the cast, so the integer result gets the float64 result as its twin
        if attrs.get("dtype") is None or not any(t is not None and t.requires_grad for t in tensors) or all(
                r.is_floating_point() or r.is_complex() for r in ([res] if res.__class__ is _Tensor else res)):
            return res
    ins = [t if tw is None else tw for t, tw in zip(tensors, twins)]
    try:
        try:
            with _twin_scope():  # integer dtype= reductions compute in float64 on the twins
                fres = kernel(*ins, **attrs)
        except RuntimeError:
            if attrs.get("dtype") is None:
                raise
            fres = None
        if attrs.get("dtype") is not None and (fres is None or not any(
                isinstance(f, _Tensor) and f.requires_grad for f in ([fres] if isinstance(fres, _Tensor) else fres))):
            fres = kernel(*ins, **{**attrs, "dtype": "float64"})  # an integer dtype= cuts the twin's graph
    except Exception:  # noqa: BLE001 - e.g. a kernel that takes integer inputs only
        return res
    single = res.__class__ is _Tensor
    rs = [res] if single else list(res)
    fs = [fres] if isinstance(fres, _Tensor) else list(fres)
    if len(fs) != len(rs):
        return res
    outs = []
    for r, f in zip(rs, fs):
        if isinstance(f, _Tensor) and f.requires_grad and f.shape == r.shape:
            if r.is_floating_point() or r.is_complex():
                r = f.to(r.dtype)
            else:
                # MXNet keeps an integer array's gradient in an integer buffer: what flows back
                # through it is truncated toward zero, as that cast does (a float head gradient
                # below 1 on an integer output is 0)
                f.register_hook(torch.trunc)
                setattr(r, _ag.TWIN, f)
        outs.append(r)
    return outs[0] if single else outs


def _whole_array_key(key: Any, t: torch.Tensor) -> bool:
    """Whether ``x[key] = v`` assigns the whole array (``x[:]``, ``x[...]``, ``x[None]``, slices
    covering every axis forward): MXNet copies into the array then, recorded like ``copyto``."""
    parts = key if isinstance(key, tuple) else (key,)
    if not all(k is None or k is Ellipsis or isinstance(k, slice) for k in parts):
        return False
    if any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in parts):
        return False
    try:
        view = t.detach()[key]
    except (IndexError, TypeError, ValueError, RuntimeError):
        return False
    return view.numel() == t.numel()


def _inplace_check(arr: "NDArray", what: str) -> torch.Tensor:
    t = arr._t
    if _mode().recording and t.requires_grad and t.is_leaf:
        raise MXNetError(f"{what}: the array is a variable with an attached gradient and is being "
                         f"modified in place inside autograd.record(); compute a new array instead "
                         f"(y = x + 1) or modify it outside record()")
    return t


def _write_out(out: "NDArray", t: torch.Tensor) -> "NDArray":
    if not isinstance(out, NDArray):
        raise TypeError(f"out= must be an NDArray, got {type(out).__name__}")
    dst = _inplace_check(out, "out=")
    if t is dst:  # the kernel updated ``out`` in place (optimizer updates)
        return out
    if dst.layout is not _strided:  # a sparse out= array: the result is cast to its storage
        return sparse_store(out, t)  # type: ignore[misc]
    if dst.shape != t.shape:
        raise MXNetError(f"out= has shape {out.shape} but the result has shape {tuple(t.shape)}")
    if _mode().recording and (t.requires_grad or dst.requires_grad):
        dst.copy_(t)
    else:
        with _no_grad():
            dst.copy_(t)
    return out


def _out_tensors(out: Any) -> Any:
    """The tensors behind ``out=`` for a kernel that may write them in place (``OpDef.writes_out``):
    a tensor or a list of them; None when any is sparse or autograd is recording (then the
    result is copied in as usual)."""
    if _mode().recording:
        return None
    if out.__class__ is NDArray:
        t = out._t
        return t if t.layout is _strided else None
    ts = [o._t for o in out if o.__class__ is NDArray]
    if len(ts) != len(out) or any(t.layout is not _strided for t in ts):
        return None
    return ts


def _write_outs(outs: list, res: list) -> None:
    """``_write_out`` for each output; plain dense arrays outside ``record()`` (the fused
    optimizer updates writing many weights) are copied with one multi-tensor kernel."""
    if not _mode().recording and all(o.__class__ is NDArray for o in outs) and len(outs) == len(res):
        dsts = [o._t for o in outs]
        if all(d.layout is _strided and d.shape == r.shape for d, r in zip(dsts, res)):
            pairs = [(d, r) for d, r in zip(dsts, res) if d is not r]
            if pairs:
                with _no_grad():
                    torch._foreach_copy_([d for d, _ in pairs], [r for _, r in pairs])
            return
    for o, r in zip(outs, res):
        _write_out(o, r)


# ---- indexing --------------------------------------------------------------------------------
_INT_KINDS = (int, np.integer)


def _index_tensor(value: Any, device: torch.device) -> torch.Tensor:
    """An index array (NDArray, NumPy, list, torch) as a torch bool mask or int64 indices."""
    if isinstance(value, NDArray):
        t = value._t.detach()
    elif isinstance(value, torch.Tensor):
        t = value.detach()
    else:
        a = np.asarray(value)
        if a.dtype == object:
            raise IndexError(f"cannot index an NDArray with {value!r}: ragged or non-numeric index list")
        if a.dtype != np.bool_ and a.dtype.kind not in "iuf":
            raise IndexError(f"cannot index an NDArray with an array of dtype {a.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(a))
    if t.dtype != torch.bool and t.dtype != torch.int64:
        # MXNet casts index arrays (often float32, as nd.array defaults) to integers.
        t = t.to(torch.int64)
    if t.device != device:
        t = t.to(device)
    return t


def _convert_key(key: Any, t: torch.Tensor, numpy: bool = False) -> tuple:
    """MXNet index -> (torch index tuple, source dims to flip, basic?).

    ``numpy``: mx.np indexing, where a boolean scalar is a zero-dim mask (``a[True]`` is
    ``a[None]``, ``a[False]`` its empty selection) as in NumPy; mx.nd refuses it.

    torch has no negative slice steps: such a slice on source dim ``d`` becomes a positive
    slice on ``t.flip(d)``. ``basic`` is False when the key has index arrays (a copy results).
    """
    if not isinstance(key, tuple):
        key = (key,)
    out: list = []
    basic = True
    consumed = 0
    ell_at = -1
    for k in key:
        if k is None:
            out.append(None)
        elif k is Ellipsis:
            if ell_at >= 0:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ell_at = len(out)
            out.append(Ellipsis)
        elif isinstance(k, slice):
            out.append(k)
            consumed += 1
        elif isinstance(k, (bool, np.bool_)):
            if not numpy:
                raise IndexError("boolean scalars are not supported as NDArray indices")
            basic = False
            out.append(torch.tensor(bool(k), device=t.device))
        elif isinstance(k, _INT_KINDS):
            out.append(int(k))
            consumed += 1
        elif isinstance(k, (NDArray, np.ndarray, list, torch.Tensor, tuple)):
            it = _index_tensor(k, t.device)
            if it.dim() == 0 and it.dtype != torch.bool:
                out.append(int(it))
            else:
                basic = False
                out.append(it)
            consumed += it.dim() if it.dtype == torch.bool else 1
        else:
            raise IndexError(f"NDArray does not support indexing with {type(k).__name__} ({k!r:.40}); "
                             f"use ints, slices, None, Ellipsis, or integer/boolean index arrays")
    ndim = t.dim()
    if consumed > ndim:
        raise IndexError(f"too many indices for an array of shape {tuple(t.shape)}: "
                         f"{consumed} dimensions indexed")
    flips: list = []
    dim = 0
    for i, k in enumerate(out):
        if k is None:
            continue
        if k is Ellipsis:
            dim += ndim - consumed
            continue
        if isinstance(k, slice):
            start, stop, step = (None if v is None else _operator.index(v) for v in (k.start, k.stop, k.step))
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step is not None and step < 0:
                n = t.shape[dim]
                r = range(*slice(start, stop, step).indices(n))
                if len(r) == 0:
                    out[i] = slice(0, 0)
                elif len(r) == 1:  # one element: no flip, so the result can stay a view
                    out[i] = slice(r[0], r[0] + 1)
                else:
                    out[i] = slice(n - 1 - r[0], n - r[-1], -step)
                    flips.append(dim)
            elif not (k.start is None or type(k.start) is int) or not (k.stop is None or type(k.stop) is int):
                out[i] = slice(start, stop, step)
            dim += 1
        elif isinstance(k, torch.Tensor) and k.dtype == torch.bool:
            dim += k.dim()
        else:
            dim += 1
    return tuple(out), flips, basic


def _nograd_needed(t: torch.Tensor) -> bool:
    return t.requires_grad and not _mode().recording and _is_grad()


class NDArray:
    """An n-dimensional array on a device, with MXNet 1.x behaviour (wraps ``torch.Tensor`` ``_t``)."""

    # _t: the tensor. Optional (unset unless used): _grad, _grad_req (autograd variables),
    # _fresh (gradient written since the Trainer last looked), _view (shares memory by MXNet's rules),
    # _hist (the graph entry that computed it under autograd.record(); see autograd.get_symbol).
    # _cpuctx: the Context of an array placed on a CPU context torch cannot tell apart from
    # cpu(0) (cpu(1), cpu_pinned, cpu_shared); unset for everything else
    # _writer (unset on most arrays): the write guard of a weight (ndarray.write_guard)
    __slots__ = ("_t", "_grad", "_grad_req", "_fresh", "_view", "_hist", "_cpuctx", "_writer", "__weakref__")
    # NumPy defers binary operators with an NDArray on the right to our reflected operators.
    __array_priority__ = 1000.0
    _numpy_indexing = False  # mx.np.ndarray: NumPy's indexing rules where they differ (see _convert_key)

    def __init__(self, data: Any = None, writable: bool = True, handle: Any = None):
        if data.__class__ is not _Tensor:
            if data is None or isinstance(data, (_ctypes.c_void_p, int)):
                # MXNet's NDArray(handle, writable=...): an array a handle was given out for
                data = tensor_from_handle(handle if data is None else data)
        self._t = data

    @property
    def _as_parameter_(self) -> int:
        """The array as a C handle (``ctypes.cast(arr, NDArrayHandle)``, as MXNet code does with
        the arrays its monitor callbacks receive); ``NDArray(handle)`` gives it back."""
        return tensor_handle(self._t)

    # -- properties -----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        """Shape as a tuple of ints."""
        return tuple(self._t.shape)

    @property
    def size(self) -> int:
        return self._t.numel()

    @property
    def ndim(self) -> int:
        return self._t.dim()

    @property
    def dtype(self) -> Any:
        """NumPy type object (``numpy.float32``...), as MXNet returns; bfloat16 is MXNet's struct dtype."""
        return dtype_np(self._t.dtype)

    @property
    def context(self) -> Context:
        try:
            return self._cpuctx
        except AttributeError:
            return Context.from_torch(self._t.device)

    ctx = context

    @property
    def stype(self) -> str:
        return "default"

    @property
    def handle(self) -> torch.Tensor:
        return self._t

    @property
    def writable(self) -> bool:
        return True

    @property
    def T(self) -> "NDArray":
        """Axes reversed (a new array; ``self`` itself when ndim < 2, as in MXNet)."""
        t = self._t
        if t.dim() < 2:
            return self
        if _nograd_needed(t):
            t = t.detach()
        r = t.permute(*reversed(range(t.dim())))
        return NDArray(r.clone(memory_format=torch.contiguous_format))

    @property
    def grad(self) -> Optional["NDArray"]:
        """The gradient buffer attached by ``attach_grad``/``mark_variables`` (None otherwise)."""
        try:
            return self._grad
        except AttributeError:
            return None

    @property
    def _fresh_grad(self) -> bool:
        try:
            return self._fresh
        except AttributeError:
            return False

    @_fresh_grad.setter
    def _fresh_grad(self, value: bool) -> None:
        self._fresh = bool(value)

    # -- conversion -----------------------------------------------------------------------
    def asnumpy(self) -> np.ndarray:
        """A NumPy copy (bfloat16 arrays come back as float32). A weight being updated by
        another thread's ``Trainer.step`` is read after the step (MXNet's read-after-write)."""
        guard = getattr(self, "_writer", None)
        if guard is not None:
            with guard:
                return self._copy_to_numpy()
        return self._copy_to_numpy()

    def _copy_to_numpy(self) -> np.ndarray:
        if _PENDING:
            _raise_pending(self._t)
        t = self._t.detach()
        if t.dtype == torch.bfloat16:
            t = t.float()
        elif t.is_mkldnn:  # a weight in oneDNN's blocked layout (``nd._onednn_conv_weight``)
            t = t.to_dense()
        if t.device.type != "cpu":
            return t.cpu().numpy()
        return t.numpy().copy()

    def asscalar(self) -> Any:
        """The single element as a NumPy scalar (MXNet: ValueError unless size is 1)."""
        if self.size != 1:
            raise ValueError(f"asscalar: the array has shape {self.shape}; only arrays with exactly "
                             f"one element convert to a scalar")
        return self.asnumpy().reshape(())[()]

    def item(self) -> Any:
        """The single element as a Python scalar."""
        return self.asscalar().item()

    def tolist(self) -> list:
        return self.asnumpy().tolist()

    def astype(self, dtype: Any, copy: bool = True) -> "NDArray":
        """Cast to ``dtype`` (a new array; ``self`` when ``copy=False`` and the dtype matches)."""
        dt = dtype_torch(dtype)
        t = self._t
        if dt == t.dtype:
            if not copy:
                return self
            return self.copy()
        if _nograd_needed(t):
            t = t.detach()
        r = NDArray(t.to(dt))
        if _PENDING:
            _carry_pending(self._t, r._t)
        if _ag.int_variables and _mode().recording:
            tw = _ag.twin_of(self._t)
            if tw is not None:  # from an integer array with a gradient: through its twin
                if r._t.is_floating_point() or r._t.is_complex():
                    r._t = tw.to(dt)
                else:
                    setattr(r._t, _ag.TWIN, tw)
        return r

    def copy(self) -> "NDArray":
        """A copy on the same device (recorded under autograd.record)."""
        t = self._t
        if _nograd_needed(t):
            t = t.detach()
        r = NDArray(t.clone())
        if _PENDING:
            _carry_pending(self._t, r._t)
        return r

    def copyto(self, other: "NDArray | Context") -> Any:
        """Copy into the NDArray ``other`` (returned), or to a new array on Context ``other``."""
        if isinstance(other, NDArray):
            if other._t is self._t:
                warnings.warn("You are attempting to copy an array to itself", RuntimeWarning, stacklevel=2)
                return False
            dst = _inplace_check(other, "copyto")
            if dst.layout is not _strided:  # into a sparse array: cast to its storage
                if dst.shape != self._t.shape:
                    raise MXNetError(f"copyto: shape mismatch, source {self.shape} vs target {other.shape}")
                return sparse_store(other, self._t.detach().clone())  # type: ignore[misc]
            if dst.shape != self._t.shape:
                raise MXNetError(f"copyto: shape mismatch, source {self.shape} vs target {other.shape}")
            src = self._t
            if _mode().recording and (src.requires_grad or dst.requires_grad):
                dst.copy_(src)
            else:
                with _no_grad():
                    dst.copy_(src)
            if _PENDING:
                _carry_pending(src, dst)
            return other
        if isinstance(other, Context):
            dev = _device(other)
            t = self._t
            if _nograd_needed(t):
                t = t.detach()
            r = placed(NDArray(t.to(dev, copy=True)), other)
            if _PENDING:
                _carry_pending(self._t, r._t)
            return r
        raise TypeError(f"copyto does not support type {type(other).__name__}; pass an NDArray or a Context")

    def as_in_context(self, context: Context) -> "NDArray":
        """``self`` when already on ``context``, else a copy there."""
        if self.context == context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def to_device(self, context: Context) -> "NDArray":
        return self.as_in_context(context)

    def detach(self) -> "NDArray":
        """Same memory, cut from the autograd graph."""
        r = NDArray(self._t.detach())
        r._view = True
        if _PENDING:
            _carry_pending(self._t, r._t)
        return r

    def wait_to_read(self) -> None:
        """Block until the array is computed (torch on CPU is synchronous); raises the error of
        the operator that computed it, if it failed on its values (MXNet's asynchronous errors)."""
        if _PENDING:
            _raise_pending(self._t)
        if self._t.device.type == "cuda":
            torch.cuda.synchronize(self._t.device)

    wait_to_write = wait_to_read

    def tostype(self, stype: str) -> "NDArray":
        """A copy in storage ``stype`` ('default', 'row_sparse' or 'csr'), as MXNet's cast_storage."""
        if stype == "default":
            return self.copy()
        from .sparse import wrap
        from ..ops.storage import cast
        return placed(wrap(cast(self._t.detach(), stype)), getattr(self, "_cpuctx", None))

    def as_nd_ndarray(self) -> "NDArray":
        return self

    def as_np_ndarray(self) -> Any:
        raise MXNetError("as_np_ndarray: hybridnet implements the MXNet 1.x mx.nd API only (no mx.np)")

    def to_dlpack_for_read(self) -> Any:
        """A DLPack capsule sharing this array's memory."""
        return torch.utils.dlpack.to_dlpack(self._t.detach())

    def to_dlpack_for_write(self) -> Any:
        """A DLPack capsule sharing this array's memory (writes are visible here)."""
        return torch.utils.dlpack.to_dlpack(self._t.detach())

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._t.detach().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._t.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """NumPy view of CPU arrays (``np.asarray(x)``); a copy if asked or on other devices."""
        t = self._t.detach()
        if t.dtype == torch.bfloat16 or t.device.type != "cpu" or copy:
            a = self.asnumpy()
        else:
            a = t.numpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            a = a.astype(dtype)
        return a

    def to_torch(self) -> torch.Tensor:
        """The underlying torch tensor, sharing memory (hybridnet extension, not in MXNet)."""
        return self._t

    # -- autograd -------------------------------------------------------------------------
    def attach_grad(self, grad_req: str = "write", stype: Optional[str] = None) -> None:
        """Attach a zero gradient buffer; ``backward`` fills it per ``grad_req``.

        'write' overwrites the buffer at each backward, 'add' accumulates across backward
        calls, 'null' computes no gradient. Re-attaching makes the array a fresh variable.
        """
        t = self._t
        if stype not in (None, "default"):
            from .sparse import wrap, zeros_tensor
            self._mark(wrap(zeros_tensor(stype, t.shape, t.dtype, t.device)), grad_req)
            return
        self._mark(NDArray(torch.zeros(t.shape, dtype=t.dtype, device=t.device)), grad_req)

    def _mark(self, grad: "NDArray", grad_req: str) -> None:
        if grad_req not in ("write", "add", "null"):
            raise ValueError(f"grad_req must be 'write', 'add' or 'null', got {grad_req!r}")
        t = self._t
        if grad is None and grad_req == "null":
            pass
        elif not isinstance(grad, NDArray):
            raise TypeError(f"the gradient buffer must be an NDArray, got {type(grad).__name__}")
        if grad_req != "null" and (grad._t.shape != t.shape or grad._t.dtype != t.dtype
                                   or grad._t.device != t.device):
            raise MXNetError(f"gradient buffer {grad.shape} {dtype_name(grad._t.dtype)} @{grad.context} "
                             f"does not match the variable {self.shape} {dtype_name(t.dtype)} @{self.context}")
        # an integer variable stays integer: its gradient flows through a float twin
        # (autograd_engine.register_variable), as MXNet differentiates integer arrays
        self._t = t.detach().requires_grad_(grad_req != "null" and (t.is_floating_point() or t.is_complex()))
        if hasattr(self, "_hist"):
            del self._hist  # a new variable: no recorded history
        self._grad = grad
        self._grad_req = grad_req
        self._fresh = False
        _ag.register_variable(self)

    def backward(self, out_grad: Optional["NDArray"] = None, retain_graph: bool = False,
                 train_mode: bool = True) -> None:
        """Gradients of this array into every variable it depends on (``autograd.backward``)."""
        t = self._t
        g = _ag.check_head(0, t, out_grad._t if isinstance(out_grad, NDArray) else out_grad)
        _ag.run_backward([t], [g], retain_graph)

    # -- Python protocol ------------------------------------------------------------------
    def __repr__(self) -> str:
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape_info} @{self.context}>"

    __str__ = __repr__

    def __len__(self) -> int:
        if self._t.dim() == 0:
            raise TypeError("len() of a 0-d array")
        return self._t.shape[0]

    def __iter__(self) -> Iterator["NDArray"]:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        if _PENDING:
            _raise_pending(self._t)
        n = self._t.numel()
        if n == 1:
            return bool(self._t.detach().reshape(()).item())
        if n == 0:
            return False
        raise ValueError(f"The truth value of an NDArray with {n} elements is ambiguous; "
                         f"use (x != 0).sum() or compare elements explicitly")

    __nonzero__ = __bool__

    def __float__(self) -> float:
        if self.size != 1:
            raise TypeError(f"only size-1 NDArrays convert to a Python float; shape is {self.shape}")
        if _PENDING:
            _raise_pending(self._t)
        return float(self._t.detach().reshape(()).item())

    def __int__(self) -> int:
        if self.size != 1:
            raise TypeError(f"only size-1 NDArrays convert to a Python int; shape is {self.shape}")
        if _PENDING:
            _raise_pending(self._t)
        return int(self._t.detach().reshape(()).item())

    def __index__(self) -> int:
        if self._t.is_floating_point() or self.size != 1:
            raise TypeError("only integer NDArrays with one element can be used as an index")
        return int(self._t.reshape(()).item())

    def __hash__(self) -> int:
        return id(self) // 16

    def __deepcopy__(self, memo: dict) -> "NDArray":
        """A copy of the values on the same device, of the same class, with an attached
        gradient buffer (same ``grad_req``, same values) where this array has one: a deep-copied
        parameter or model trains on its own. (Without this, deepcopy would go through the
        pickle form: values only, on the CPU.)"""
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        copied._t = self._t.detach().clone()
        ctx = getattr(self, "_cpuctx", None)
        if ctx is not None:
            copied._cpuctx = ctx
        grad = getattr(self, "_grad", None)
        if grad is not None:  # the copy's gradient buffer is the buffer's copy (one per memo)
            copied._mark(copy.deepcopy(grad, memo), self._grad_req)
            copied._fresh = getattr(self, "_fresh", False)
        return copied

    def __getstate__(self) -> dict:
        """Pickled as MXNet does: ``{'handle': <one array record of the .params format>}``."""
        from ..formats import params as _params
        from .utils import _to_numpy_for_save
        return {"handle": bytearray(_params.dump_record(_to_numpy_for_save(self)))}

    def __setstate__(self, state: dict) -> None:
        """Restore from ``__getstate__`` (or MXNet's) record bytes; arrays come back on the CPU.
        The record is parsed by the checked .params reader, never unpickled."""
        from ..formats import params as _params
        from .utils import _from_numpy_loaded
        handle = state.get("handle") if isinstance(state, dict) else None
        if handle is None:
            raise MXNetError("NDArray.__setstate__: expected {'handle': <array record bytes>} as "
                             "written by NDArray.__getstate__")
        loaded = _from_numpy_loaded(_params.load_record(bytes(handle), sparse=True))
        # the class comes from the pickle stream, the storage from the record: a pickle written
        # by __getstate__ always agrees; anything else would give an array whose methods fail
        from .sparse import BaseSparseNDArray
        if not isinstance(self, type(loaded)) or (
                isinstance(self, BaseSparseNDArray) and not isinstance(loaded, BaseSparseNDArray)):
            raise MXNetError(f"NDArray.__setstate__: the record holds a {loaded.stype} array, but the "
                             f"pickle restores it as a {type(self).__name__}; NDArray.__getstate__ "
                             f"never writes such a pickle (the record or the class was altered)")
        self._t = loaded._t

    # -- indexing -------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> "NDArray":
        """MXNet indexing: basic (ints, slices with any step, None, Ellipsis) and advanced (index
        arrays, boolean masks). Contiguous basic results are views; the rest are copies. A result
        with no dimensions left has shape (1,), as in MXNet 1.x."""
        t = self._t
        if _nograd_needed(t):
            # a view made under no_grad of a variable would still report requires_grad
            with _no_grad():
                r = self._getitem(t.detach(), key)
        else:
            r = self._getitem(t, key)
        if _PENDING:
            _carry_pending(t, r._t)
        if _ag.int_variables and _mode().recording:
            tw = _ag.twin_of(t)
            if tw is not None:  # an integer array with a gradient: index its twin too
                setattr(r._t, _ag.TWIN, self._getitem(tw, key)._t)
        return r

    def _getitem(self, t: torch.Tensor, key: Any) -> "NDArray":
        kc = key.__class__
        if kc is int:
            if t.dim() == 0:
                raise IndexError("a 0-d NDArray can only be indexed with () or ...")
            n = t.shape[0]
            k = key + n if key < 0 else key
            if not 0 <= k < n:
                raise IndexError(f"index {key} is out of bounds for axis 0 with size {n}")
            r = NDArray(t[k:k + 1] if t.dim() == 1 else t[k])
            r._view = True
            return r
        if kc is slice and (key.step is None or key.step == 1) and \
                (key.start is None or key.start.__class__ is int) and \
                (key.stop is None or key.stop.__class__ is int):
            if t.dim() == 0:
                raise IndexError("a 0-d NDArray can only be indexed with () or ...")
            r = NDArray(t[key])
            r._view = True
            return r
        if kc is tuple and len(key) == 0:
            return self
        idx, flips, basic = _convert_key(key, t)
        src = t.flip(flips) if flips else t
        try:
            res = src[idx]
        except IndexError as e:
            raise IndexError(f"{e} (indexing an NDArray of shape {self.shape} with {key!r:.80})") from None
        except RuntimeError as e:
            raise IndexError(f"cannot index an NDArray of shape {self.shape} with {key!r:.80}: {e}") from None
        if res.dim() == 0:
            res = res.reshape(1)
        if basic and not flips and res.is_contiguous():
            r = NDArray(res)
            r._view = True
            return r
        if res._is_view() or res is t:
            res = res.clone()
        return NDArray(res)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[key] = value`` in place (views of ``x`` see it); ``value`` broadcasts to ``x[key]``."""
        t = _inplace_check(self, "x[...] = value")
        v = self._value_tensor(value, t)
        if _mode().recording and (t.requires_grad or (isinstance(v, torch.Tensor) and v.requires_grad)
                                  or (isinstance(value, NDArray) and value._t.requires_grad)):
            if not _whole_array_key(key, t):
                raise MXNetError("Inplace operations (+=, -=, x[:]=, etc) are not supported when recording "
                                 "with autograd (as in MXNet): x[key] = value writes part of an array that "
                                 "the recorded graph reads; compute a new array instead (concat, where, "
                                 "slice_assign's result...) or assign outside autograd.record()")
            if not (t.is_floating_point() or t.is_complex()):
                raise MXNetError(f"Inplace operations (+=, -=, x[:]=, etc) are not supported when recording "
                                 f"with autograd (as in MXNet) where the value carries a gradient and the "
                                 f"array is {dtype_name(t.dtype)}: the cast would drop the gradient; assign "
                                 f"to a floating-point array, or outside autograd.record()")
            self._setitem(t, key, v)
        else:
            with _no_grad():
                self._setitem(t, key, v)

    def _setitem(self, t: torch.Tensor, key: Any, v: Any) -> None:
        if key.__class__ is slice and key.start is None and key.stop is None and key.step is None:
            if isinstance(v, torch.Tensor):
                if v.dim() > t.dim():  # MXNet drops leading unit dimensions of the value
                    v = v.reshape(v.shape[v.dim() - t.dim():]) if all(
                        d == 1 for d in v.shape[:v.dim() - t.dim()]) else v
                try:
                    t.copy_(v)
                except RuntimeError as e:
                    raise ValueError(f"cannot assign a value of shape {tuple(v.shape)} to an NDArray "
                                     f"of shape {self.shape}: {e}") from None
            else:
                t.fill_(v)
            return
        idx, flips, _ = _convert_key(key, t, self._numpy_indexing)
        try:
            if flips:
                tmp = t.flip(flips)
                tmp[idx] = v
                t.copy_(tmp.flip(flips))
            else:
                t[idx] = v
        except IndexError as e:
            raise IndexError(f"{e} (assigning into an NDArray of shape {self.shape} at {key!r:.80})") from None
        except RuntimeError as e:
            raise ValueError(f"cannot assign into an NDArray of shape {self.shape} at {key!r:.80}: {e}") from None

    @staticmethod
    def _value_tensor(value: Any, like: torch.Tensor) -> Any:
        if isinstance(value, NDArray):
            v = value._t
            if v.layout is not _strided:  # a sparse value: its dense form
                from ..ops.storage import to_dense
                v = to_dense(v)
        elif isinstance(value, (bool, int, float)):
            return value
        elif isinstance(value, np.generic):
            return value.item()
        elif isinstance(value, torch.Tensor):
            v = value
        else:
            try:
                a = np.asarray(value)
            except (ValueError, TypeError) as e:
                raise TypeError(f"NDArray does not support assignment with {type(value).__name__}: {e}") from None
            if a.dtype == object:
                raise TypeError(f"NDArray does not support assignment with non-array-like {value!r:.60}")
            if a.dtype == np.bool_:
                a = a.astype(np.uint8)
            v = torch.from_numpy(np.ascontiguousarray(a))
        if v.device != like.device or v.dtype != like.dtype:
            v = v.to(device=like.device, dtype=like.dtype)
        elif v.untyped_storage().data_ptr() == like.untyped_storage().data_ptr():
            v = v.clone()  # x[1:] = x[:-1]: read the source before writing
        return v

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key: Sequence[slice], shape: Sequence[int]) -> bool:
        """Whether slicing a C-contiguous array of ``shape`` with one slice per axis gives a
        contiguous block (then ``x[key]`` is a view): every axis that keeps more than one element
        must step by exactly the number of elements kept to its right (NumPy's rule)."""
        if len(slc_key) != len(shape):
            raise ValueError(f"need one slice per axis: {len(slc_key)} slices for shape {tuple(shape)}")
        spans = [(len(range(*k.indices(n))), k.indices(n)[2]) for k, n in zip(slc_key, shape)]
        if any(m == 0 for m, _ in spans):
            return True
        kept_right, full_right = 1, 1
        for (m, step), n in zip(reversed(spans), reversed(list(shape))):
            if m > 1 and full_right * step != kept_right:
                return False
            kept_right *= m
            full_right *= n
        return True

    # -- MXNet methods written by hand -----------------------------------------------------
    def reshape(self, *shape: Any, **kwargs: Any) -> "NDArray":
        """A view with a new shape; MXNet's special codes 0, -1, -2, -3, -4 and ``reverse=True``.

        Accepts ``x.reshape((2, 3))``, ``x.reshape(2, 3)`` and ``x.reshape(shape=(2, 3))``.
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            if shape:
                raise TypeError("reshape: pass the shape either positionally or as shape=, not both")
            shape = tuple(kwargs.pop("shape"))
        reverse = kwargs.pop("reverse", False)
        if kwargs:
            raise TypeError(f"reshape() got unexpected keyword arguments {sorted(kwargs)}")
        fn = _FN.get("Reshape") or _FN.get("reshape")
        if fn is None:
            raise MXNetError("NDArray.reshape needs the Reshape operator (hybridnet.ops.shape)")
        t = self._t
        op = fn.opdef
        attrs = {"shape": tuple(shape)}
        if reverse:
            attrs["reverse"] = True
        try:
            if _nograd_needed(t):
                with _no_grad():
                    res = op.kernel(t.detach(), **attrs)
            else:
                res = op.kernel(t, **attrs)
        except MXNetError as e:
            # MXNet's method raises ValueError for a shape that does not fit (still an MXNetError)
            raise ShapeError(str(e)) from None
        except (RuntimeError, ValueError, TypeError, IndexError) as e:
            raise _op_error(op, [self], attrs, e) from e
        r = NDArray(res)
        r._view = True
        return r

    # Shape methods with MXNet's ``inplace=True``: a view (``reshape``) instead of a new array.
    def flatten(self, inplace: bool = False) -> "NDArray":
        """Collapse all axes but the first: a new array, or a view when ``inplace``."""
        if inplace:
            return self.reshape((0, -1))
        return _FN["Flatten"](self)

    def expand_dims(self, axis: int, inplace: bool = False) -> "NDArray":
        """Insert a size-1 axis at ``axis``: a new array, or a view when ``inplace``."""
        if not inplace:
            return _FN["expand_dims"](self, axis=axis)
        shape = list(self.shape)
        if not -len(shape) - 1 <= axis <= len(shape):
            raise MXNetError(f"expand_dims: axis {axis} is out of range for a {len(shape)}-d array")
        shape.insert(axis % (len(shape) + 1), 1)
        return self.reshape(shape)

    def squeeze(self, axis: "int | Sequence[int] | None" = None, inplace: bool = False) -> "NDArray":
        """Drop size-1 axes (all, or those in ``axis``); a (1,) array stays (1,), as in MXNet.
        A new array, or a view when ``inplace``."""
        if not inplace:
            return _FN["squeeze"](self, axis=axis)
        shape = list(self.shape)
        if axis is None:
            drop = {i for i, d in enumerate(shape) if d == 1}
        else:
            axes = (axis,) if isinstance(axis, int) else tuple(axis)
            for a in axes:
                if not -len(shape) <= a < len(shape):
                    raise MXNetError(f"squeeze: axis {a} is out of range for a {len(shape)}-d array")
                if shape[a] != 1:
                    raise MXNetError(f"squeeze: axis {a} has size {shape[a]}, not 1")
            drop = {a % len(shape) for a in axes}
        new = [d for i, d in enumerate(shape) if i not in drop]
        return self.reshape(new or [1])

    def broadcast_to(self, shape: Any) -> "NDArray":
        """Broadcast to ``shape`` (leading dimensions may be added, as MXNet's method allows)."""
        shape = tuple(shape)
        cur = self.shape
        if len(shape) < len(cur):
            raise ValueError(f"broadcast_to: cannot broadcast shape {cur} to {shape}")
        x = self
        if len(shape) > len(cur):
            x = self.reshape((1,) * (len(shape) - len(cur)) + cur)
        fn = _FN.get("broadcast_to")
        if fn is None:
            raise MXNetError("NDArray.broadcast_to needs the broadcast_to operator (hybridnet.ops)")
        return fn(x, shape=shape)

    def zeros_like(self, *args: Any, **kwargs: Any) -> "NDArray":
        return NDArray(torch.zeros_like(self._t))

    def ones_like(self, *args: Any, **kwargs: Any) -> "NDArray":
        return NDArray(torch.ones_like(self._t))

    def slice_assign(self, rhs: Any, begin: Sequence, end: Sequence, step: Sequence = ()) -> "NDArray":
        """``self[begin:end:step] = rhs`` over the leading axes; returns ``self``."""
        step = list(step) + [None] * (len(begin) - len(step))
        self[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))] = rhs
        return self

    def slice_assign_scalar(self, value: float, begin: Sequence, end: Sequence, step: Sequence = ()) -> "NDArray":
        return self.slice_assign(float(value), begin, end, step)


# Generated functions by name; filled by hybridnet.ndarray at import (methods call through it).
_FN: dict[str, Callable] = {}


# ---- creation --------------------------------------------------------------------------------
def from_torch(t: torch.Tensor) -> NDArray:
    """Wrap a torch tensor without copying (hybridnet extension, not in MXNet)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"from_torch expects a torch.Tensor, got {type(t).__name__}")
    dtype_name(t.dtype)  # raises TypeError for dtypes hybridnet does not support
    r = NDArray(t)
    r._view = True
    return r


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True, array_cls: Any = None) -> NDArray:
    """An NDArray from a NumPy array, keeping its dtype; ``zero_copy`` shares the memory (the NumPy
    array is made read-only, as MXNet does) and needs a C-contiguous array."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(ndarray).__name__}")
    dtype_name(ndarray.dtype)
    if not zero_copy:
        return NDArray(torch.from_numpy(np.array(ndarray, copy=True, order="C")))
    if not ndarray.flags.c_contiguous:
        raise ValueError("from_numpy(zero_copy=True) needs a C-contiguous array; pass "
                         "np.ascontiguousarray(a) or zero_copy=False")
    with warnings.catch_warnings():  # torch warns about read-only arrays; MXNet shares them anyway
        warnings.simplefilter("ignore", UserWarning)
        r = NDArray(torch.from_numpy(ndarray))
    # as in MXNet, the NumPy array becomes read-only: the NDArray now owns writes to the memory
    ndarray.flags.writeable = False
    r._view = True
    return r


def from_dlpack(dlpack: Any) -> NDArray:
    """An NDArray sharing memory with a DLPack capsule or any object with ``__dlpack__``."""
    r = NDArray(torch.utils.dlpack.from_dlpack(dlpack))
    r._view = True
    return r


def to_dlpack_for_read(data: NDArray) -> Any:
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data: NDArray) -> Any:
    return data.to_dlpack_for_write()


def array(source_array: Any, ctx: Optional[Context] = None, dtype: Any = None) -> NDArray:
    """An NDArray copied from a list, NumPy array, NDArray or anything array-like.

    As in MXNet: the dtype is ``source_array.dtype`` for an NDArray and float32 for anything
    else (NumPy arrays included) unless ``dtype`` is given.
    """
    device = _device(ctx)
    if isinstance(source_array, NDArray) and source_array._t.layout is not _strided:
        from .sparse import array as sparse_array  # MXNet: a sparse source gives a sparse copy
        return sparse_array(source_array, ctx, dtype)
    if type(source_array).__module__.startswith("scipy.sparse"):
        from .sparse import csr_matrix
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, NDArray):
        src = source_array._t.detach()
        dt = dtype_torch(dtype) if dtype is not None else src.dtype
        return placed(NDArray(src.to(device=device, dtype=dt, copy=True)), ctx)
    name = dtype_name(dtype) if dtype is not None else "float32"
    if isinstance(source_array, torch.Tensor):
        return placed(NDArray(source_array.detach().to(device=device, dtype=dtype_torch(name), copy=True)), ctx)
    np_dt = np.float32 if name == "bfloat16" else name
    try:
        a = np.array(source_array, dtype=np_dt, copy=True, order="C")
    except (ValueError, TypeError) as e:
        raise TypeError(f"array: cannot convert {type(source_array).__name__} to an array of "
                        f"{name}: {e}") from None
    t = torch.from_numpy(a)
    if name == "bfloat16":
        t = t.to(torch.bfloat16)
    return placed(NDArray(t.to(device) if device.type != "cpu" else t), ctx)


def waitall() -> None:
    """Wait for all pending computation (CUDA streams; CPU work is synchronous). Raises the
    oldest operator error no read has raised yet and forgets the others, as MXNet's waitall
    (a second waitall raises nothing)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    if _PENDING:
        with _pending_lock:
            boxes, _PENDING[:] = list(_PENDING), []
        first = next((b.exc for b in boxes if b.exc is not None), None)
        for b in boxes:
            b.exc = None
        if first is not None:
            raise first


# ---- Python operators ------------------------------------------------------------------------
def _scalar(v: Any) -> Any:
    return v.item() if isinstance(v, (np.generic, np.ndarray)) else v


def scalar_invoke(op: OpDef, x: "NDArray", scalar: Any) -> "NDArray":
    """``op(x, scalar=...)`` with MXNet's rule for integer arrays: the scalar is cast to the
    array's dtype and the result keeps it (``int32 array / 2`` is an int32 array)."""
    t = x._t
    if t.is_floating_point() or t.dtype == torch.bool:
        return invoke(op, (x,), {"scalar": scalar})
    s = int(scalar) if isinstance(scalar, float) else scalar
    res = invoke(op, (x,), {"scalar": s})
    if res._t.dtype != t.dtype:
        res._t = res._t.to(t.dtype)
    return res


def _binary(ndop: str, sop: str, inplace: bool = False) -> Callable:
    """``x <op> y`` for an NDArray: array-array and array-scalar forms, as MXNet maps them."""
    nd_op, s_op = _reg.get(ndop), _reg.get(sop)

    def fn(self: "NDArray", other: Any) -> Any:
        oc = other.__class__
        if oc is NDArray or isinstance(other, NDArray):
            res = invoke(nd_op, (self, other), {})
        elif (oc is float or oc is int) and self._t.is_floating_point():
            res = invoke(s_op, (self,), {"scalar": other})
        elif isinstance(other, numeric_types) or (isinstance(other, np.ndarray) and other.ndim == 0):
            res = scalar_invoke(s_op, self, _scalar(other))
        else:
            return NotImplemented
        if not inplace:
            return res
        dst = _inplace_check(self, "in-place operator")
        if res._t.shape != dst.shape:
            raise MXNetError(f"in-place operator: the result has shape {res.shape}, the target "
                             f"{self.shape}; write x = x <op> y instead")
        if _mode().recording and (res._t.requires_grad or dst.requires_grad):
            dst.copy_(res._t)
        else:
            with _no_grad():
                dst.copy_(res._t)
        return self
    fn.__name__ = f"__{'i' if inplace else ''}{ndop}__"
    return fn


def _rbinary(rsop: str, ndop: str) -> Callable:
    """``scalar <op> x`` (reflected): MXNet's ``_r*_scalar`` operators."""
    nd_op, s_op = _reg.get(ndop), _reg.get(rsop)

    def fn(self: "NDArray", other: Any) -> Any:
        if isinstance(other, numeric_types) or (isinstance(other, np.ndarray) and other.ndim == 0):
            return scalar_invoke(s_op, self, _scalar(other))
        if isinstance(other, NDArray):
            return invoke(nd_op, (other, self), {})
        return NotImplemented
    return fn


# (python op, array op, scalar op, reflected scalar op): MXNet's NDArray.__add__ & co.
_OPERATORS = [
    ("add", "broadcast_add", "_plus_scalar", "_plus_scalar"),
    ("sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    ("mul", "broadcast_mul", "_mul_scalar", "_mul_scalar"),
    ("truediv", "broadcast_div", "_div_scalar", "_rdiv_scalar"),
    ("mod", "broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    ("pow", "broadcast_power", "_power_scalar", "_rpower_scalar"),
]
_COMPARISONS = [
    ("eq", "broadcast_equal", "_equal_scalar"),
    ("ne", "broadcast_not_equal", "_not_equal_scalar"),
    ("gt", "broadcast_greater", "_greater_scalar"),
    ("ge", "broadcast_greater_equal", "_greater_equal_scalar"),
    ("lt", "broadcast_lesser", "_lesser_scalar"),
    ("le", "broadcast_lesser_equal", "_lesser_equal_scalar"),
]


def install_operators(cls: type) -> None:
    """Attach Python operators to NDArray (called once the operator modules are loaded)."""
    for pyname, ndop, sop, rsop in _OPERATORS:
        setattr(cls, f"__{pyname}__", _binary(ndop, sop))
        setattr(cls, f"__r{pyname}__", _rbinary(rsop, ndop))
        setattr(cls, f"__i{pyname}__", _binary(ndop, sop, inplace=True))
    cls.__div__ = cls.__truediv__
    cls.__rdiv__ = cls.__rtruediv__
    cls.__idiv__ = cls.__itruediv__
    for pyname, ndop, sop in _COMPARISONS:
        setattr(cls, f"__{pyname}__", _binary(ndop, sop))
    neg, absop = _reg.get("negative"), _reg.get("abs")
    cls.__neg__ = lambda self: invoke(neg, (self,), {})
    cls.__abs__ = lambda self: invoke(absop, (self,), {})
