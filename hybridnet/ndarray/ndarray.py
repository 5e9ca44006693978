"""NDArray: an eager array with MXNet 1.x semantics over a torch.Tensor (wrapped, not subclassed)."""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np
import torch

from .. import autograd as _ag
from ..base import MXNetError, dtype_name, dtype_np, dtype_torch, numeric_types
from ..context import Context, current_context
from ..ops import registry as _reg
from ..ops.registry import OpDef

__all__ = ["NDArray", "invoke", "array", "from_torch", "waitall"]

_STATE = _ag.STATE
_set_grad = torch._C._set_grad_enabled
_is_grad = torch.is_grad_enabled

# Set by hybridnet.symbol at import: called when an operator receives a Symbol input.
symbolic_dispatch: Optional[Callable] = None


def _describe(x: Any) -> str:
    if isinstance(x, NDArray):
        return f"{x.shape} {x.dtype.__name__ if hasattr(x.dtype, '__name__') else x.dtype}"
    if x is None:
        return "None"
    return type(x).__name__


def _op_error(op: OpDef, inputs: Sequence, attrs: dict, err: Exception) -> MXNetError:
    names = op.inputs if not op.variadic else [f"{op.inputs[0]}[{i}]" for i in range(len(inputs))]
    ins = ", ".join(f"{n}={_describe(x)}" for n, x in zip(names, inputs) if x is not None)
    shown = {k: v for k, v in attrs.items() if k != "is_train"}
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return MXNetError(f"operator {op.name} failed: {msg}\n  inputs: {ins}\n  attributes: {shown}")


def invoke(op: OpDef, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
           hint: Any = None, attr: Any = None) -> Any:
    """Run ``op`` eagerly (or hand it to the Symbol front-end if an input is a Symbol)."""
    tensors = []
    guard = False
    for x in inputs:
        if x.__class__ is NDArray:
            t = x._t
            if t.requires_grad:
                guard = True
            tensors.append(t)
        elif x is None:
            tensors.append(None)
        elif isinstance(x, NDArray):
            tensors.append(x._t)
            guard = guard or x._t.requires_grad
        elif symbolic_dispatch is not None and hasattr(x, "_entries"):
            return symbolic_dispatch(op, inputs, attrs, out, name, hint, attr)
        else:
            raise TypeError(f"operator {op.name}: expected NDArray inputs, got {type(x).__name__} "
                            f"({x!r:.60}); wrap NumPy data with mx.nd.array(...)")
    if op.train_aware:
        attrs["is_train"] = _STATE.training
    try:
        if guard and not _STATE.recording and _is_grad():
            _set_grad(False)
            try:
                res = op.kernel(*tensors, **attrs)
            finally:
                _set_grad(True)
        else:
            res = op.kernel(*tensors, **attrs)
    except MXNetError:
        raise
    except (RuntimeError, ValueError, TypeError, IndexError) as e:
        raise _op_error(op, inputs, attrs, e) from e
    if res.__class__ is torch.Tensor:
        if out is not None:
            return _write_out(out, res)
        return NDArray(res)
    outs = [NDArray(r) for r in res]
    if out is not None:
        for o, r in zip(out if isinstance(out, (list, tuple)) else [out], outs):
            _write_out(o, r._t)
        return out
    return outs


def _write_out(out: "NDArray", t: torch.Tensor) -> "NDArray":
    if tuple(out._t.shape) != tuple(t.shape):
        raise MXNetError(f"out= has shape {out.shape} but the result has shape {tuple(t.shape)}")
    with torch.no_grad():
        out._t.copy_(t)
    return out


def _as_tensor(value: Any, like: Optional[torch.Tensor] = None) -> Any:
    """Python scalars stay scalars; NDArray/NumPy/lists become tensors on ``like``'s device."""
    if isinstance(value, NDArray):
        return value._t
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    dev = like.device if like is not None else None
    dt = like.dtype if like is not None else None
    return torch.as_tensor(np.asarray(value), device=dev).to(dt) if dt is not None else torch.as_tensor(np.asarray(value))


def _index(key: Any) -> Any:
    """Convert an MXNet index (ints, slices, NDArrays, lists, tuples) into a torch index."""
    if isinstance(key, NDArray):
        return key._t.long() if key._t.dtype != torch.bool else key._t
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if isinstance(key, np.ndarray):
        return torch.from_numpy(key.astype(np.int64) if key.dtype != np.bool_ else key)
    if isinstance(key, list):
        return torch.as_tensor(key, dtype=torch.long)
    if isinstance(key, np.integer):
        return int(key)
    return key


class NDArray:
    """An n-dimensional array on a device, with MXNet 1.x behaviour."""

    __slots__ = ("_t", "_grad", "_grad_req", "__weakref__")
    # Make NumPy defer to our reflected operators (np_scalar * nd).
    __array_priority__ = 1000.0

    def __init__(self, data: torch.Tensor):
        self._t = data
        self._grad: Optional[NDArray] = None
        self._grad_req = "null"

    # -- properties -----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(self._t.shape)

    @property
    def size(self) -> int:
        return self._t.numel()

    @property
    def ndim(self) -> int:
        return self._t.dim()

    @property
    def dtype(self) -> Any:
        return dtype_np(self._t.dtype)

    @property
    def context(self) -> Context:
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
        return NDArray(self._t.permute(*reversed(range(self._t.dim()))))

    @property
    def grad(self) -> Optional["NDArray"]:
        return self._grad

    # -- conversion -----------------------------------------------------------------------
    def asnumpy(self) -> np.ndarray:
        """A NumPy copy (bfloat16 arrays come back as float32)."""
        t = self._t.detach()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.cpu().numpy().copy() if t.device.type == "cpu" else t.cpu().numpy()

    def asscalar(self) -> Any:
        if self.size != 1:
            raise ValueError(f"asscalar: the array has shape {self.shape}; only size-1 arrays "
                             f"convert to a scalar")
        return self.asnumpy().reshape(())[()]

    def item(self) -> Any:
        return self.asscalar().item()

    def astype(self, dtype: Any, copy: bool = True) -> "NDArray":
        dt = dtype_torch(dtype)
        if not copy and dt == self._t.dtype:
            return self
        return NDArray(self._t.to(dt, copy=True) if copy else self._t.to(dt))

    def copy(self) -> "NDArray":
        return NDArray(self._t.clone())

    def copyto(self, other: "NDArray | Context") -> "NDArray":
        if isinstance(other, NDArray):
            if other is self:
                return self
            if other.shape != self.shape:
                raise MXNetError(f"copyto: shape mismatch, source {self.shape} vs target {other.shape}")
            with torch.no_grad():
                other._t.copy_(self._t)
            return other
        if isinstance(other, Context):
            return NDArray(self._t.detach().to(other.torch_device, copy=True))
        raise TypeError(f"copyto does not support type {type(other).__name__}")

    def as_in_context(self, context: Context) -> "NDArray":
        if self.context == context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def to_device(self, context: Context) -> "NDArray":
        return self.as_in_context(context)

    def detach(self) -> "NDArray":
        return NDArray(self._t.detach())

    def wait_to_read(self) -> None:
        if self._t.device.type == "cuda":
            torch.cuda.synchronize(self._t.device)

    wait_to_write = wait_to_read

    def tostype(self, stype: str) -> "NDArray":
        if stype != "default":
            raise MXNetError(f"tostype({stype!r}): sparse storage is not supported; arrays are dense")
        return self

    def as_nd_ndarray(self) -> "NDArray":
        return self

    def to_dlpack_for_read(self) -> Any:
        return torch.utils.dlpack.to_dlpack(self._t.detach())

    to_dlpack_for_write = to_dlpack_for_read

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._t.detach().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._t.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.asnumpy()
        return a.astype(dtype) if dtype is not None else a

    def to_torch(self) -> torch.Tensor:
        """The underlying torch tensor (shared memory)."""
        return self._t

    # -- autograd -------------------------------------------------------------------------
    def attach_grad(self, grad_req: str = "write", stype: Optional[str] = None) -> None:
        """Allocate a gradient buffer and make this array a variable for ``backward``."""
        self._mark(NDArray(torch.zeros_like(self._t)), grad_req)

    def _mark(self, grad: "NDArray", grad_req: str) -> None:
        if grad_req not in ("write", "add", "null"):
            raise ValueError(f"grad_req must be 'write', 'add' or 'null', got {grad_req!r}")
        if grad_req != "null" and not (self._t.is_floating_point() or self._t.is_complex()):
            raise MXNetError(f"cannot attach a gradient to an array of dtype {dtype_name(self._t.dtype)}; "
                             f"cast it to a float type first")
        self._t = self._t.detach().requires_grad_(grad_req != "null")
        self._grad = grad if grad_req != "null" else None
        self._grad_req = grad_req
        _ag.register_variable(self)

    def backward(self, out_grad: Optional["NDArray"] = None, retain_graph: bool = False,
                 train_mode: bool = True) -> None:
        _ag.backward([self], [out_grad] if out_grad is not None else None, retain_graph, train_mode)

    # -- Python protocol ------------------------------------------------------------------
    def __repr__(self) -> str:
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape_info} @{self.context}>"

    __str__ = __repr__

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self) -> Iterator["NDArray"]:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        n = self.size
        if n == 1:
            return bool(self._t.reshape(()).item())
        if n == 0:
            return False
        raise ValueError(f"the truth value of an NDArray with {n} elements is ambiguous")

    def __float__(self) -> float:
        return float(self.asscalar())

    def __int__(self) -> int:
        return int(self.asscalar())

    def __index__(self) -> int:
        if self._t.is_floating_point():
            raise TypeError("only integer arrays can be used as an index")
        return int(self.asscalar())

    __hash__ = object.__hash__

    def __getitem__(self, key: Any) -> "NDArray":
        if isinstance(key, (int, np.integer)) and self.ndim == 1:
            return NDArray(self._t[int(key):int(key) + 1] if int(key) != -1 else self._t[-1:])
        return NDArray(self._t[_index(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        v = _as_tensor(value, self._t)
        guard = _STATE.recording
        if not guard:
            with torch.no_grad():
                self._t[_index(key)] = v
        else:
            self._t[_index(key)] = v

    def __getstate__(self) -> dict:
        return {"data": self.asnumpy()}

    def __setstate__(self, state: dict) -> None:
        self._t = torch.from_numpy(state["data"])
        self._grad, self._grad_req = None, "null"

    def reshape(self, *shape: Any, **kwargs: Any) -> "NDArray":
        """MXNet reshape with special codes 0, -1, -2, -3, -4 and ``reverse``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = tuple(kwargs.pop("shape"))
        return _FN["reshape"](self, shape, **kwargs)

    def flatten(self, inplace: bool = False) -> "NDArray":
        return _FN["flatten"](self)

    def zeros_like(self) -> "NDArray":
        return NDArray(torch.zeros_like(self._t))

    def ones_like(self) -> "NDArray":
        return NDArray(torch.ones_like(self._t))

    def broadcast_to(self, shape: Any) -> "NDArray":
        return _FN["broadcast_to"](self, shape=tuple(shape))

    def slice_assign(self, rhs: "NDArray", begin: Sequence, end: Sequence, step: Sequence = ()) -> "NDArray":
        idx = tuple(slice(b, e, s if s else None) for b, e, s in
                    zip(begin, end, list(step) + [None] * (len(begin) - len(step))))
        self[idx] = rhs
        return self

    def slice_assign_scalar(self, value: float, begin: Sequence, end: Sequence, step: Sequence = ()) -> "NDArray":
        return self.slice_assign(value, begin, end, step)  # type: ignore[arg-type]


# Generated functions by name; filled by hybridnet.ndarray at import (methods call through it).
_FN: dict[str, Callable] = {}


def from_torch(t: torch.Tensor) -> NDArray:
    """Wrap a torch tensor without copying."""
    return NDArray(t)


def array(source_array: Any, ctx: Optional[Context] = None, dtype: Any = None) -> NDArray:
    """An NDArray from a list, NumPy array or NDArray (float32 unless the source is NumPy/NDArray)."""
    device = (ctx or current_context()).torch_device
    if isinstance(source_array, NDArray):
        dt = dtype_torch(dtype) if dtype is not None else source_array._t.dtype
        return NDArray(source_array._t.detach().to(device=device, dtype=dt, copy=True))
    if isinstance(source_array, torch.Tensor):
        dt = dtype_torch(dtype) if dtype is not None else source_array.dtype
        return NDArray(source_array.detach().to(device=device, dtype=dt, copy=True))
    if isinstance(source_array, np.ndarray):
        np_dtype = dtype_name(dtype) if dtype is not None else dtype_name(source_array.dtype)
    else:
        np_dtype = dtype_name(dtype) if dtype is not None else "float32"
        try:
            source_array = np.array(source_array, dtype=np_dtype if np_dtype != "bfloat16" else "float32")
        except (ValueError, TypeError) as e:
            raise TypeError(f"array: cannot convert {type(source_array).__name__} to an array: {e}") from None
    if np_dtype == "bfloat16":
        t = torch.from_numpy(np.ascontiguousarray(source_array, dtype=np.float32)).to(torch.bfloat16)
    else:
        t = torch.from_numpy(np.array(source_array, dtype=np_dtype, copy=True, order="C"))
    return NDArray(t.to(device) if device.type != "cpu" else t)


def waitall() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _scalar(v: Any) -> Any:
    return v.item() if isinstance(v, (np.generic, np.ndarray)) else v


def _binary(ndop: str, sop: str, inplace: bool = False) -> Callable:
    """``x <op> y`` for an NDArray: array-array and array-scalar forms, as MXNet maps them."""
    nd_op, s_op = _reg.get(ndop), _reg.get(sop)

    def fn(self: "NDArray", other: Any) -> Any:
        if isinstance(other, numeric_types) or (isinstance(other, np.ndarray) and other.ndim == 0):
            res = invoke(s_op, (self,), {"scalar": _scalar(other)})
        elif isinstance(other, NDArray):
            res = invoke(nd_op, (self, other), {})
        else:
            return NotImplemented
        if not inplace:
            return res
        if res.shape != self.shape:
            raise MXNetError(f"in-place operator: the result has shape {res.shape}, the target "
                             f"{self.shape}; write x = x <op> y instead")
        if _STATE.recording:
            self._t.copy_(res._t)
        else:
            with torch.no_grad():
                self._t.copy_(res._t)
        return self
    return fn


def _rbinary(rsop: str, ndop: str) -> Callable:
    """``scalar <op> x`` (reflected): MXNet's ``_r*_scalar`` operators."""
    nd_op, s_op = _reg.get(ndop), _reg.get(rsop)

    def fn(self: "NDArray", other: Any) -> Any:
        if isinstance(other, numeric_types):
            return invoke(s_op, (self,), {"scalar": _scalar(other)})
        if isinstance(other, NDArray):
            return invoke(nd_op, (other, self), {})
        return NotImplemented
    return fn


# (python op, nd op, scalar op, reflected scalar op)
_OPERATORS = [
    ("add", "elemwise_add", "_plus_scalar", "_plus_scalar"),
    ("sub", "elemwise_sub", "_minus_scalar", "_rminus_scalar"),
    ("mul", "elemwise_mul", "_mul_scalar", "_mul_scalar"),
    ("truediv", "elemwise_div", "_div_scalar", "_rdiv_scalar"),
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
    cls.__neg__ = lambda self: invoke(_reg.get("_mul_scalar"), (self,), {"scalar": -1.0})
    cls.__pos__ = lambda self: self
    cls.__abs__ = lambda self: invoke(_reg.get("abs"), (self,), {})
