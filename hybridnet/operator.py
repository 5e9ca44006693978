"""Custom operators in Python (MXNet's ``mx.operator``).

A user subclasses ``CustomOp`` (the computation: ``forward``/``backward`` on NDArrays) and
``CustomOpProp`` (the facts: arguments, outputs, auxiliary states, shape and type rules), then
registers the prop with ``@mx.operator.register("name")``. ``mx.nd.Custom(*inputs,
op_type="name", **kwargs)`` and ``mx.sym.Custom(...)`` apply it; the operator itself is
``Custom`` in the registry (``hybridnet/ops/custom.py``), so it runs eagerly with autograd, in
hybridized graphs and Executors, and round-trips through ``-symbol.json`` like any other.
The legacy ``PythonOp``/``NumpyOp``/``NDArrayOp`` interfaces run as Custom nodes too.
"""
from __future__ import annotations

import collections
import ctypes
from typing import Any, Callable, Sequence

import torch

from . import autograd as _autograd
from .base import MXNetError
from .base import NDArrayHandle, c_str, py_str
from .context import Context
from .ndarray.ndarray import NDArray
from .ops import custom as _custom
from .ops import registry as _registry
from .symbol.symbol import Symbol

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators",
           "get_operator_arguments", "OperatorArguments", "PythonOp", "NumpyOp", "NDArrayOp",
           # MXNet's mx.operator has no __all__: `from mxnet.operator import *` also brings these,
           # and MXNet-era code (its own operator tests' monitor callbacks) uses them so
           "ctypes", "NDArrayHandle", "NDArray", "c_str", "py_str"]


class CustomOp:
    """The computation of a custom operator (MXNet's ``mx.operator.CustomOp``).

    ``forward`` writes ``out_data`` and ``backward`` writes ``in_grad``, each honouring ``req``
    ('null', 'write', 'inplace' or 'add'); ``assign`` does that for one array.
    """

    def __init__(self) -> None:
        pass

    def forward(self, is_train: bool, req: Sequence[str], in_data: Sequence[NDArray],
                out_data: Sequence[NDArray], aux: Sequence[NDArray]) -> None:
        """Compute the outputs from ``in_data`` into ``out_data`` (override)."""

    def backward(self, req: Sequence[str], out_grad: Sequence[NDArray], in_data: Sequence[NDArray],
                 out_data: Sequence[NDArray], in_grad: Sequence[NDArray], aux: Sequence[NDArray]) -> None:
        """Compute the input gradients into ``in_grad`` (override)."""

    def assign(self, dst: NDArray, req: str, src: Any) -> None:
        """Store ``src`` into ``dst`` as ``req`` says: 'null' skips, 'write'/'inplace'
        overwrite, 'add' accumulates."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise MXNetError(f"CustomOp.assign: invalid req {req!r}; expected 'null', 'write', "
                             f"'inplace' or 'add'")


class CustomOpProp:
    """The facts of a custom operator (MXNet's ``mx.operator.CustomOpProp``).

    Constructor arguments are the keyword arguments given to ``Custom``, as strings.
    ``need_top_grad`` says whether backward reads the output gradients (MXNet's default
    ``declare_backward_dependency`` uses it).
    """

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = need_top_grad

    def list_arguments(self) -> list:
        return ["data"]

    def list_outputs(self) -> list:
        return ["output"]

    def list_auxiliary_states(self) -> list:
        return []

    def infer_shape(self, in_shape: list) -> tuple:
        """(input shapes, output shapes[, aux shapes]); by default every output has the
        first input's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type: list) -> tuple:
        """(input types, output types[, aux types]); by default everything has the first
        input's type."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype: list) -> tuple:
        """Storage types: only 'default' (dense) is supported by this default rule."""
        for i, stype in enumerate(in_stype):
            if stype != "default":
                raise MXNetError(f"CustomOpProp.infer_storage_type: input {i} has storage type "
                                 f"{stype!r}; the default rule allows only 'default'. Override "
                                 f"infer_storage_type for sparse inputs")
        return in_stype, ["default"] * len(self.list_outputs()), \
            ["default"] * len(self.list_auxiliary_states())

    def infer_storage_type_backward(self, ograd_stype: list, in_stype: list, out_stype: list,
                                    igrad_stype: list, aux_stype: list) -> tuple:
        """Storage types of the backward pass: everything dense by default."""
        for what, stypes in (("ograd_stype", ograd_stype), ("igrad_stype", igrad_stype)):
            for i, stype in enumerate(stypes):
                if stype not in ("default", "undefined"):
                    raise MXNetError(f"CustomOpProp.infer_storage_type_backward: {what}[{i}] is "
                                     f"{stype!r}; the default rule allows only 'default'")
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        return tuple(["default"] * len(x) for x in lists)

    def declare_backward_dependency(self, out_grad: list, in_data: list, out_data: list) -> list:
        """Ids of the blobs backward reads: output gradients when ``need_top_grad``, inputs
        and outputs always."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx: Context, in_shapes: list, in_dtypes: list) -> CustomOp:
        """The CustomOp that runs the computation (override)."""
        return CustomOp()


def register(reg_name: str) -> Callable[[type], type]:
    """Class decorator: register a CustomOpProp subclass as ``op_type=reg_name``."""
    def deco(prop_cls: type) -> type:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(f"mx.operator.register({reg_name!r}) decorates CustomOpProp subclasses, "
                            f"got {prop_cls!r}")
        _custom.register_prop(reg_name, prop_cls)
        return prop_cls
    return deco


def get_all_registered_operators() -> list:
    """Names of every registered operator (canonical names and aliases)."""
    return sorted(_registry.names())


OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """Inputs then attributes of operator ``op_name`` with MXNet's type descriptions
    (``'NDArray-or-Symbol'``, ``"{'relu', 'tanh'}, required"``, ``"int, optional, default='1'"``)."""
    op = _registry.get(op_name)
    array = "NDArray-or-Symbol[]" if op.variadic else "NDArray-or-Symbol"
    names = [] if op.dynamic_inputs else list(op.inputs)
    types = [array] * len(names)
    for a in op.attrs.values():
        if a.name == "num_args" and op.variadic:
            continue
        names.append(a.name)
        types.append(_describe_attr(a))
    return OperatorArguments(len(names), names, types)


_KIND_TEXT = {"int": "int", "float": "float", "bool": "boolean", "str": "string", "shape": "Shape(tuple)",
              "axis": "Shape or None", "dtype": "dtype or None", "optint": "int or None",
              "optfloat": "float or None", "optbool": "boolean or None", "any": "any"}


def _describe_attr(a: Any) -> str:
    """One attribute's type text as MXNet's parameter docs spell it."""
    if a.kind == "enum":
        text = "{" + ", ".join(repr(c) for c in sorted(c for c in a.choices if c is not None)) + "}"
    else:
        text = _KIND_TEXT.get(a.kind, a.kind)
    if a.required:
        return f"{text}, required"
    d = a.default
    if isinstance(d, bool):
        shown = str(int(d))
    elif isinstance(d, float) or d is None:
        shown = str(d)
    else:
        shown = f"'{d}'"
    return f"{text}, optional, default={shown}"


class PythonOp:
    """MXNet's legacy Python operator interface, run as a ``Custom`` node.

    Subclasses override ``forward(in_data, out_data)``, ``backward(out_grad, in_data, out_data,
    in_grad)``, ``infer_shape``, ``list_arguments`` and ``list_outputs``; ``get_symbol(*args,
    **kwargs)`` (or calling the instance) gives a Symbol applying it. The default computes the
    identity. ``NumpyOp`` hands NumPy arrays to forward/backward, ``NDArrayOp`` NDArrays.
    """
    _arrays = "ndarray"

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = need_top_grad

    def __call__(self, *args: Any, **kwargs: Any) -> Symbol:
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args: Any, **kwargs: Any) -> Symbol:
        """A Symbol applying this operator to the given input symbols."""
        op_type = f"_python_op_{type(self).__name__}_{id(self):x}"
        _custom.register_prop(op_type, _legacy_prop(self))
        return _symbol_custom(*args, op_type=op_type, **kwargs)

    def forward(self, in_data: list, out_data: list) -> None:
        out_data[0][:] = in_data[0]

    def backward(self, out_grad: list, in_data: list, out_data: list, in_grad: list) -> None:
        in_grad[0][:] = out_grad[0]

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, [in_shape[0]]

    def list_outputs(self) -> list:
        return ["output"]

    def list_arguments(self) -> list:
        return ["data"]

    def need_top_grad(self) -> bool:
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """A legacy Python operator whose forward/backward see NumPy arrays (results copied back)."""
    _arrays = "numpy"


class NDArrayOp(PythonOp):
    """A legacy Python operator whose forward/backward see NDArrays."""


class _LegacyAdapter(CustomOp):
    """Runs a PythonOp's forward/backward inside the Custom operator."""

    def __init__(self, legacy: PythonOp):
        super().__init__()
        self.legacy = legacy

    def _call(self, fn: Callable, inputs: list, outputs: list) -> None:
        if self.legacy._arrays != "numpy":
            fn(*inputs, outputs)
            return
        np_outs = [o.asnumpy() for o in outputs]
        fn(*[[a.asnumpy() for a in group] for group in inputs], np_outs)
        for o, v in zip(outputs, np_outs):
            o[:] = v

    def forward(self, is_train: bool, req: Sequence[str], in_data: Sequence[NDArray],
                out_data: Sequence[NDArray], aux: Sequence[NDArray]) -> None:
        self._call(self.legacy.forward, [list(in_data)], list(out_data))

    def backward(self, req: Sequence[str], out_grad: Sequence[NDArray], in_data: Sequence[NDArray],
                 out_data: Sequence[NDArray], in_grad: Sequence[NDArray], aux: Sequence[NDArray]) -> None:
        self._call(self.legacy.backward, [list(out_grad), list(in_data), list(out_data)], list(in_grad))


def _legacy_prop(legacy: PythonOp) -> type:
    """A CustomOpProp class describing ``legacy`` (one per PythonOp instance)."""
    class LegacyProp(CustomOpProp):
        def __init__(self) -> None:
            super().__init__(need_top_grad=legacy.need_top_grad())

        def list_arguments(self) -> list:
            return legacy.list_arguments()

        def list_outputs(self) -> list:
            return legacy.list_outputs()

        def infer_shape(self, in_shape: list) -> tuple:
            return legacy.infer_shape(in_shape)

        def create_operator(self, ctx: Context, in_shapes: list, in_dtypes: list) -> CustomOp:
            return _LegacyAdapter(legacy)
    return LegacyProp


def _symbol_custom(*args: Any, **kwargs: Any) -> Symbol:
    from . import symbol as _sym
    return _sym.Custom(*args, **kwargs)


class _Runtime:
    """The NDArray side of the Custom kernel (see ``ops.custom.Runtime``)."""

    @staticmethod
    def wrap(t: torch.Tensor) -> NDArray:
        return NDArray(t)

    @staticmethod
    def unwrap(a: NDArray) -> torch.Tensor:
        return a._t

    @staticmethod
    def context(device: torch.device) -> Context:
        return Context.from_torch(device)

    @staticmethod
    def is_input(value: Any) -> bool:
        return isinstance(value, (NDArray, Symbol))

    @staticmethod
    def paused(is_train: bool) -> Any:
        return _autograd.pause(train_mode=is_train)


_custom.install_runtime(_Runtime())
