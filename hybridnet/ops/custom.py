"""MXNet's ``Custom`` operator: a graph node whose computation is a user's Python ``CustomOp``.

Everything about the node comes from the ``CustomOpProp`` registered under its ``op_type``
attribute (``mx.operator.register``): input slots (``list_arguments`` then
``list_auxiliary_states``), outputs (``list_outputs``), shapes (``infer_shape``) and dtypes
(``infer_type``). The user's keyword arguments are open attributes, stored as the strings MXNet
stores and passed to the prop's constructor as strings, as MXNet does.

The kernel runs the user's ``forward`` on NDArrays inside a ``torch.autograd.Function`` whose
backward runs the user's ``backward``, so the node works eagerly under ``autograd.record()``,
in compiled graphs (hybridize, Executor) and in exported ``-symbol.json`` files alike.
NDArrays live above this layer: ``hybridnet.operator`` installs the array bridge
(``install_runtime``) that wraps tensors for the user's code.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

import numpy as np
import torch

from ..base import MXNetError, dtype_name, dtype_np, dtype_torch
from ..profiler import recorder as _profiler
from .registry import Sample, register

__all__ = ["register_prop", "registered_types", "install_runtime", "prop_of", "Runtime"]


class Runtime(Protocol):
    """What the kernel needs from the NDArray layer (installed by ``hybridnet.operator``)."""

    def wrap(self, t: torch.Tensor) -> Any: ...          # tensor -> NDArray sharing its memory
    def unwrap(self, a: Any) -> torch.Tensor: ...        # NDArray -> tensor
    def context(self, device: torch.device) -> Any: ...  # torch device -> mx Context
    def is_input(self, value: Any) -> bool: ...          # NDArray or Symbol (not a parameter)
    def paused(self, is_train: bool) -> Any: ...         # autograd.pause(train_mode=is_train)


_PROPS: dict[str, type] = {}
_PROP_CACHE: dict = {}
_RUNTIME: Optional[Runtime] = None
_SELF_ATTRS = ("op_type", "is_train")


def register_prop(op_type: str, prop_cls: type) -> None:
    """Make ``prop_cls`` the CustomOpProp of ``op_type`` (a later registration replaces it)."""
    if not isinstance(op_type, str) or not op_type:
        raise MXNetError(f"mx.operator.register: the name must be a non-empty string, got {op_type!r}")
    _PROPS[op_type] = prop_cls
    _PROP_CACHE.clear()


def registered_types() -> list:
    """The registered op_type names, sorted."""
    return sorted(_PROPS)


def install_runtime(runtime: Runtime) -> None:
    global _RUNTIME
    _RUNTIME = runtime


def _runtime() -> Runtime:
    if _RUNTIME is None:
        raise MXNetError("the Custom operator needs hybridnet.operator to be imported "
                         "(import hybridnet does it)")
    return _RUNTIME


def _params(attrs: dict) -> dict:
    return {k: v for k, v in attrs.items() if k not in _SELF_ATTRS and not k.startswith("__")}


def prop_of(op_type: Any, params: dict) -> Any:
    """The CustomOpProp instance for ``op_type`` built from string ``params`` (cached)."""
    cls = _PROPS.get(op_type) if isinstance(op_type, str) else None
    if cls is None:
        known = ", ".join(registered_types()) or "none"
        raise MXNetError(f"Custom: op_type {op_type!r} is not registered; registered op_types: "
                         f"{known}. Register a CustomOpProp with @mx.operator.register({op_type!r})")
    key = (op_type, cls, tuple(sorted(params.items())))
    prop = _PROP_CACHE.get(key)
    if prop is None:
        try:
            prop = cls(**params)
        except MXNetError:
            raise
        except Exception as e:
            raise MXNetError(f"Custom op_type {op_type!r}: {cls.__name__}(**{params!r}) failed: "
                             f"{type(e).__name__}: {e}") from e
        if len(_PROP_CACHE) > 512:
            _PROP_CACHE.clear()
        _PROP_CACHE[key] = prop
    return prop


def _prop(attrs: dict) -> Any:
    return prop_of(attrs.get("op_type"), _params(attrs))


def _call_user(what: str, op_type: str, fn: Any, *args: Any) -> Any:
    """Run user code; anything it raises becomes MXNetError (MXNet reports them so)."""
    try:
        if _profiler.running:
            return _profiler.custom_call(what, op_type, fn, *args)
        return fn(*args)
    except MXNetError as e:
        raise MXNetError(f"Custom op_type {op_type!r}: error in {what}: {e}") from e
    except Exception as e:
        raise MXNetError(f"Custom op_type {op_type!r}: error in {what}: {type(e).__name__}: {e}") from e


# ---- the facts of the node ------------------------------------------------------------------
def _arguments(attrs: dict) -> list:
    return list(_prop(attrs).list_arguments())


def _aux_names(attrs: dict) -> list:
    return list(_prop(attrs).list_auxiliary_states())


def _slots(attrs: dict) -> list:
    return _arguments(attrs) + _aux_names(attrs)


def _outputs(attrs: dict) -> list:
    return list(_prop(attrs).list_outputs())


def _split_result(ret: Any, what: str, op_type: str) -> tuple:
    """(inputs, outputs, aux) from a prop's infer_shape/infer_type result (aux optional)."""
    if not isinstance(ret, (tuple, list)) or len(ret) not in (2, 3):
        raise MXNetError(f"Custom op_type {op_type!r}: {what} must return (in, out) or (in, out, aux) "
                         f"lists, got {ret!r}")
    return list(ret[0]), list(ret[1]), list(ret[2]) if len(ret) == 3 else []


def _user_shapes(attrs: dict, in_shapes: list) -> tuple:
    prop = _prop(attrs)
    op_type = attrs["op_type"]
    n_args = len(prop.list_arguments())
    shapes = [list(s) if s is not None else [] for s in in_shapes[:n_args]]
    ret = _call_user("infer_shape", op_type, prop.infer_shape, shapes)
    ins, outs, aux = _split_result(ret, "infer_shape", op_type)
    n_out = len(prop.list_outputs())
    if len(outs) != n_out:
        raise MXNetError(f"Custom op_type {op_type!r}: infer_shape returned {len(outs)} output shapes "
                         f"for {n_out} outputs {prop.list_outputs()}")
    as_shape = lambda s: tuple(int(d) for d in s) if s is not None else None  # noqa: E731
    return [as_shape(s) for s in ins], [as_shape(s) for s in outs], [as_shape(s) for s in aux]


def _infer_shape(attrs: dict, in_shapes: list) -> list:
    return _user_shapes(attrs, in_shapes)[1]


def _param_shapes(attrs: dict, in_shapes: list) -> list:
    """Input (argument and aux) shapes the prop's infer_shape fills in from the known ones."""
    try:
        ins, _, aux = _user_shapes(attrs, in_shapes)
    except MXNetError:
        return [None] * len(in_shapes)  # the user's rule needs every input shape
    filled = (ins + aux + [None] * len(in_shapes))[: len(in_shapes)]
    return [s if s else None for s in filled]


def _infer_type(attrs: dict, in_dtypes: list) -> list:
    prop = _prop(attrs)
    op_type = attrs["op_type"]
    n_args = len(prop.list_arguments())
    n_out = len(prop.list_outputs())
    first = next((d for d in in_dtypes if d is not None), None) or "float32"
    types = [np.dtype(dtype_np(d or first)) for d in in_dtypes[:n_args]]
    try:
        ret = prop.infer_type(types)
    except Exception as e:
        if not types:  # the default rule copies the first input's type: no input, float32
            return ["float32"] * n_out
        raise MXNetError(f"Custom op_type {op_type!r}: error in infer_type: {type(e).__name__}: {e}") from e
    _, outs, _ = _split_result(ret, "infer_type", op_type)
    if len(outs) != n_out:
        raise MXNetError(f"Custom op_type {op_type!r}: infer_type returned {len(outs)} output types "
                         f"for {n_out} outputs {prop.list_outputs()}")
    return [dtype_name(np.dtype(t)) for t in outs]


def prepare_call(inputs: tuple, kwargs: dict) -> tuple:
    """(inputs in slot order, attributes) for ``Custom(*inputs, op_type=..., **kwargs)``.

    As in MXNet, keyword arguments that are arrays or symbols are inputs named by the prop's
    ``list_arguments``/``list_auxiliary_states``; every other keyword argument is a parameter,
    passed to the prop's constructor as ``str(value)``.
    """
    rt = _runtime()
    op_type = kwargs.pop("op_type", None)
    if op_type is None:
        raise MXNetError(f"Custom: op_type is required (registered op_types: "
                         f"{', '.join(registered_types()) or 'none'})")
    named = {k: v for k, v in kwargs.items() if rt.is_input(v)}
    params = {k: str(v) for k, v in kwargs.items() if k not in named and v is not None}
    attrs = {"op_type": str(op_type), **params}
    slots = _slots(attrs)
    if len(inputs) > len(slots):
        raise MXNetError(f"Custom op_type {op_type!r}: {len(inputs)} inputs given, but the operator "
                         f"takes {len(slots)} ({', '.join(slots) or 'none'})")
    unknown = [k for k in named if k not in slots]
    if unknown:
        raise MXNetError(f"Custom op_type {op_type!r}: {unknown} are not inputs of the operator; its "
                         f"inputs are {slots}")
    ordered = list(inputs) + [None] * (len(slots) - len(inputs))
    for k, v in named.items():
        i = slots.index(k)
        if ordered[i] is not None:
            raise MXNetError(f"Custom op_type {op_type!r}: input {k!r} given twice")
        ordered[i] = v
    return tuple(ordered), attrs


# ---- execution ------------------------------------------------------------------------------
class _Call:
    """One application of a user operator: what its torch Function needs to run both passes."""
    __slots__ = ("op_type", "op", "is_train", "n_args", "aux", "out_specs")

    def __init__(self, op_type: str, op: Any, is_train: bool, n_args: int, aux: list, out_specs: list):
        self.op_type, self.op, self.is_train = op_type, op, is_train
        self.n_args, self.aux, self.out_specs = n_args, aux, out_specs


class _CustomFunction(torch.autograd.Function):
    """Forward and backward through the user's CustomOp."""

    @staticmethod
    def forward(ctx: Any, call: _Call, *args: torch.Tensor) -> tuple:  # type: ignore[override]
        rt = _runtime()
        device = args[0].device if args else (call.aux[0].device if call.aux else torch.device("cpu"))
        outs = [torch.zeros(s, dtype=d, device=device) for s, d in call.out_specs]
        in_data = [rt.wrap(a.detach()) for a in args]
        out_data = [rt.wrap(o) for o in outs]
        aux = [rt.wrap(a) for a in call.aux]
        with rt.paused(call.is_train):
            _call_user("forward", call.op_type, call.op.forward, call.is_train,
                       ["write"] * len(outs), in_data, out_data, aux)
        ctx.call = call
        ctx.save_for_backward(*args, *outs)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *out_grads: torch.Tensor) -> tuple:  # type: ignore[override]
        rt = _runtime()
        call: _Call = ctx.call
        saved = ctx.saved_tensors
        args, outs = saved[: call.n_args], saved[call.n_args:]
        needs = ctx.needs_input_grad[1:]
        in_grads = [torch.zeros_like(a) for a in args]
        req = ["write" if n else "null" for n in needs]
        ograds = [g if g is not None else torch.zeros_like(o) for g, o in zip(out_grads, outs)]
        with torch.no_grad(), rt.paused(call.is_train):
            _call_user("backward", call.op_type, call.op.backward, req,
                       [rt.wrap(g.detach()) for g in ograds], [rt.wrap(a.detach()) for a in args],
                       [rt.wrap(o.detach()) for o in outs], [rt.wrap(g) for g in in_grads],
                       [rt.wrap(a) for a in call.aux])
        return (None,) + tuple(g if n else None for g, n in zip(in_grads, needs))


# ---- the registry's sample: a duck-typed prop (CustomOpProp lives above this layer) -----------
class _SampleSquare:
    """y = scale * x * x + w, dy/dx = 2 * scale * x, dy/dw = 1 (registered for the op tests)."""

    def __init__(self, scale: str = "1") -> None:
        self.scale = float(scale)

    def list_arguments(self) -> list:
        return ["data", "bias"]

    def list_outputs(self) -> list:
        return ["output"]

    def list_auxiliary_states(self) -> list:
        return []

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, [in_shape[0]], []

    def infer_type(self, in_type: list) -> tuple:
        return in_type, [in_type[0]], []

    def create_operator(self, ctx: Any, shapes: list, dtypes: list) -> "_SampleSquare":
        return self

    def forward(self, is_train: bool, req: list, in_data: list, out_data: list, aux: list) -> None:
        out_data[0][:] = in_data[0] * in_data[0] * self.scale + in_data[1]

    def backward(self, req: list, out_grad: list, in_data: list, out_data: list, in_grad: list,
                 aux: list) -> None:
        in_grad[0][:] = out_grad[0] * in_data[0] * (2 * self.scale)
        in_grad[1][:] = out_grad[0]


_SAMPLE_TYPE = "_hybridnet_sample_square"


def _samples() -> list:
    register_prop(_SAMPLE_TYPE, _SampleSquare)
    r = np.random.RandomState(17)
    return [Sample((r.randn(2, 3), r.randn(2, 3)), {"op_type": _SAMPLE_TYPE, "scale": "1.5"},
                   ref=lambda x, b, op_type, scale: float(scale) * x * x + b),
            Sample((r.randn(4), r.randn(4)), {"op_type": _SAMPLE_TYPE},
                   ref=lambda x, b, op_type: x * x + b)]


@register("Custom", samples=_samples, num_outputs=lambda a: len(_outputs(a)), output_names=_outputs,
          active_inputs=_slots, aux=_aux_names, infer_shape=_infer_shape, infer_type=_infer_type,
          param_shapes=_param_shapes, prepare_call=prepare_call, hint="custom")
def custom(*inputs: torch.Tensor, op_type: str, is_train: bool = False, **params: str) -> Any:
    """Apply the user operator registered as ``op_type`` (``mx.operator.register``).

    Inputs are the prop's ``list_arguments()`` then ``list_auxiliary_states()``, positionally or
    by those names; other keyword arguments are passed to the prop's constructor as strings.
    """
    attrs = {"op_type": op_type, **params}
    prop = _prop(attrs)
    n_args = len(prop.list_arguments())
    slots = _slots(attrs)
    if len(inputs) != len(slots) or any(t is None for t in inputs):
        missing = [s for s, t in zip(slots, list(inputs) + [None] * len(slots)) if t is None]
        raise MXNetError(f"Custom op_type {op_type!r}: expected inputs {slots}, got {len(inputs)} "
                         f"(missing {missing})")
    args, aux = list(inputs[:n_args]), list(inputs[n_args:])
    in_shapes = [tuple(t.shape) for t in args]
    out_shapes = _infer_shape(attrs, list(in_shapes))
    out_dtypes = _infer_type(attrs, [dtype_name(t.dtype) for t in args])
    if any(s is None for s in out_shapes):
        raise MXNetError(f"Custom op_type {op_type!r}: infer_shape left an output shape unknown")
    rt = _runtime()
    device = args[0].device if args else (aux[0].device if aux else torch.device("cpu"))
    op = _call_user("create_operator", op_type, prop.create_operator, rt.context(device),
                    [list(s) for s in in_shapes], [np.dtype(dtype_np(dtype_name(t.dtype))) for t in args])
    specs = [(s, dtype_torch(d)) for s, d in zip(out_shapes, out_dtypes)]
    call = _Call(op_type, op, bool(is_train), n_args, aux, specs)
    outs = _CustomFunction.apply(call, *args)
    return outs[0] if len(outs) == 1 else list(outs)
