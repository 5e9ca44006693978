"""Gluon parameters (MXNet 1.x ``gluon.Parameter``, ``Constant``, ``ParameterDict``).

A Parameter owns one NDArray per context plus its gradient buffer. Shapes may contain 0 for
unknown dimensions; ``initialize`` then defers allocation until the first forward pass infers
the shape (``allow_deferred_init``), in eager and hybridized mode alike.
"""
from __future__ import annotations

import re
import warnings
from collections import OrderedDict
from typing import Any, Iterator, Optional

import numpy as np

from .. import autograd
from ..base import MXNetError, dtype_name, dtype_np
from ..context import Context, current_context
from ..ndarray import ndarray as _nd_mod
from ..ndarray import param_arrays as _pa
from ..ndarray import write_guard as _wg
from ..ndarray.ndarray import NDArray
from ..np_semantics import is_np_array
from ..numpy.multiarray import as_np, np_view

__all__ = ["Parameter", "Constant", "ParameterDict", "DeferredInitializationError", "ParameterArgumentError",
           "tensor_types"]

tensor_types = (NDArray,)


class ParameterArgumentError(ValueError, AssertionError):
    """A bad argument to a Parameter: a ValueError, and an AssertionError as well because
    MXNet 1.9.1 checks these arguments with ``assert`` (code may catch either)."""


class DeferredInitializationError(MXNetError):
    """A parameter's data was requested before its deferred initialization could complete."""


def _shape_known(shape: Optional[tuple]) -> bool:
    return shape is not None and all(d > 0 for d in shape)


def _attach_grad(arr: NDArray, req: str, grad_stype: str = "default") -> None:
    """Give ``arr`` a zeroed gradient buffer of storage ``grad_stype`` per ``req`` ('null':
    none). Integer parameters (MXNet allows e.g. int8 weights) get the buffer but no autograd
    link: no gradient flows into integers, in MXNet either."""
    grad = _pa.zero_grad_buffer(arr, grad_stype)
    if req != "null" and not _pa.is_inexact(arr):
        arr._grad = grad
        arr._grad_req = req
        return
    arr._mark(grad if req != "null" else None, req)  # type: ignore[arg-type]


def _init_module() -> Any:
    from .. import initializer
    return initializer


def guard_parameters(params: Any) -> list:
    """Give ``params`` one write guard (a Trainer's), keeping a guard one already has (shared
    with another Trainer); -> the ordered guards an updater of them holds."""
    fresh = _wg.new_guard()
    for p in params:
        if p._writer is None:
            p._writer = fresh
            if p._data is not None:
                _wg.set_guard(p._data, fresh)
    return _wg.ordered(p._writer for p in params)


def reading(params: Any) -> Any:
    """Hold the write guards of ``params`` while their values are read together (one whole step)."""
    return _wg.holding(_wg.ordered(p._writer for p in params))


class Parameter:
    """A model parameter: data (per context), gradient, and how to initialize and update it."""

    def __init__(self, name: str = "weight", grad_req: str = "write", shape: Any = None,
                 dtype: Any = np.float32, lr_mult: float = 1.0, wd_mult: float = 1.0, init: Any = None,
                 allow_deferred_init: bool = False, differentiable: bool = True,
                 stype: str = "default", grad_stype: str = "default"):
        self._var: Any = None
        self._data: Optional[list] = None
        self._writer: Any = None  # the write guard of the Trainer that updates it (ndarray.write_guard)
        self._ctx_list: Optional[list] = None
        self._deferred_init: tuple = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = "null"
        if isinstance(shape, int):
            shape = (shape,)
        self._shape = tuple(shape) if shape is not None else None
        self.name = name
        self._dtype = dtype_name(dtype)
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value not in ("default", "row_sparse", "csr"):
                raise ParameterArgumentError(f"{what} for Parameter {name!r} must be one of 'default', "
                                             f"'row_sparse', or 'csr', but got {value!r}")
        self._stype = stype
        self._grad_stype = grad_stype
        self.grad_req = grad_req
        self._trainer: Any = None

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={dtype_np(self._dtype).__name__ if self._dtype != 'bfloat16' else 'bfloat16'})"

    # -- attributes -----------------------------------------------------------------------
    @property
    def grad_req(self) -> str:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in ("write", "add", "null"):
            raise ValueError(f"grad_req must be one of 'write', 'add', or 'null', but got {req!r}")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if self._data is not None:
            for d in self._data:
                _attach_grad(d, req, self._grad_stype)

    @property
    def dtype(self) -> Any:
        return dtype_np(self._dtype)

    @dtype.setter
    def dtype(self, dtype: Any) -> None:
        self.cast(dtype)

    @property
    def shape(self) -> Optional[tuple]:
        return self._shape

    @shape.setter
    def shape(self, new_shape: Any) -> None:
        new_shape = tuple(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or any(
                a != b and a > 0 for a, b in zip(self._shape, new_shape)):
            raise MXNetError(f"Expected shape {new_shape} is incompatible with given shape "
                             f"{self._shape} for Parameter {self.name!r}")
        self._shape = tuple(b if b > 0 else a for a, b in zip(self._shape, new_shape))

    @property
    def stype(self) -> str:
        return self._stype

    @property
    def differentiable(self) -> bool:
        return self._differentiable

    # -- initialization -------------------------------------------------------------------
    def initialize(self, init: Any = None, ctx: Any = None, default_init: Any = None,
                   force_reinit: bool = False) -> None:
        """Allocate and initialize (or defer until the shape is known)."""
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter {self.name!r} is already initialized, ignoring. "
                          f"Set force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = None
        self._deferred_init = ()
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if default_init is None:
            default_init = _init_module().Uniform()
        if init is None:
            init = default_init if self.init is None else self.init
        if not _shape_known(self._shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, list(ctx), default_init, None)
                return
            raise MXNetError(f"Cannot initialize Parameter {self.name!r} because it has invalid shape: "
                             f"{self._shape}. Please specify in_units, in_channels, etc for `Block`s.")
        self._deferred_init = (init, list(ctx), default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        if not self._deferred_init:
            return
        if not _shape_known(self._shape):
            raise DeferredInitializationError(
                f"Cannot initialize Parameter {self.name!r} because it has invalid shape: {self._shape}.")
        init, ctx, default_init, data = self._deferred_init
        with autograd.pause():
            if data is None:
                arr = _pa.zeros_on(self._shape, self._dtype, ctx[0])
                imod = _init_module()
                # MXNet: the chosen initializer travels as the __init__ attribute, so it runs
                # its weight rule whatever the parameter's name.
                imod.create(default_init if default_init is not None else "uniform")(
                    imod.InitDesc(self.name, {"__init__": init}), arr)
                data = arr
            self._init_impl(data, ctx)
        # cleared only now: another thread never sees the parameter neither deferred nor ready
        self._deferred_init = ()

    def _init_impl(self, data: NDArray, ctx_list: list) -> None:
        self._ctx_list = list(ctx_list)
        self._data = [_pa.stored_copy(data, c, self._stype) for c in self._ctx_list]
        if self._writer is not None:
            _wg.set_guard(self._data, self._writer)
        for d in self._data:
            if self._grad_req != "null":
                _attach_grad(d, self._grad_req, self._grad_stype)
        # created under npx.set_np(): the arrays (and their gradients) are mx.np.ndarrays, as
        # MXNet's, whichever mode later reads them
        self._np_storage = is_np_array() and self._stype == "default"
        self._store_as_np()
        self._version_hook()

    def _store_as_np(self) -> None:
        if not getattr(self, "_np_storage", False) or self._data is None:
            return
        for d in self._data:
            as_np(d)
            g = getattr(d, "_grad", None)
            if g is not None:
                as_np(g)

    def _version_hook(self) -> None:
        """Called whenever the data arrays are (re)created: hybridized blocks re-read tensors."""
        self._generation = getattr(self, "_generation", 0) + 1

    # -- data access ----------------------------------------------------------------------
    def _check_initialized(self) -> None:
        if self._data is not None:
            return
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter {self.name!r} has not been initialized yet because initialization was "
                f"deferred. Actual initialization happens during the first forward pass. Please pass "
                f"one batch of data through the network before accessing Parameters.")
        raise MXNetError(f"Parameter {self.name!r} has not been initialized. Note that you should "
                         f"initialize parameters and create Trainer with Block.collect_params() instead "
                         f"of Block.params because the later does not include Parameters of nested "
                         f"child Blocks")

    def _index(self, ctx: Optional[Context]) -> int:
        if ctx is None or len(self._ctx_list) == 1:
            if ctx is not None and ctx != self._ctx_list[0] and ctx.device_typeid == self._ctx_list[0].device_typeid == 1:
                return 0
            if ctx is not None and ctx != self._ctx_list[0]:
                raise MXNetError(f"Parameter {self.name!r} was not initialized on context {ctx}. "
                                 f"It was only initialized on {self._ctx_list}.")
            return 0
        try:
            return self._ctx_list.index(ctx)
        except ValueError:
            raise MXNetError(f"Parameter {self.name!r} was not initialized on context {ctx}. "
                             f"It was only initialized on {self._ctx_list}.") from None

    def data(self, ctx: Optional[Context] = None) -> NDArray:
        """The array on ``ctx`` (None: the only one, or the first). Sparse-storage parameters
        are read with ``row_sparse_data`` (MXNet)."""
        if self._stype != "default":
            raise MXNetError(f"Cannot return a copy of Parameter {self.name!r} on ctx {ctx} via data() "
                             f"because its storage type is {self._stype}. Please use row_sparse_data() "
                             f"instead.")
        self._check_initialized()
        d = self._data[self._index(ctx)]  # type: ignore[index]
        # under npx.set_np() MXNet's parameters are mx.np.ndarrays: a view over the same tensor
        # where the parameter was created in MXNet 1.x mode
        return np_view(d) if is_np_array() and d.__class__ is NDArray else d

    def list_data(self) -> list:
        """The arrays on all contexts, in creation order (dense storage only, as in MXNet)."""
        if self._stype != "default":
            raise MXNetError(f"Cannot return copies of Parameter {self.name!r} on all contexts via "
                             f"list_data() because its storage type is {self._stype}. Please use "
                             f"row_sparse_data() instead.")
        self._check_initialized()
        if is_np_array():
            return [np_view(d) if d.__class__ is NDArray else d for d in self._data]  # type: ignore[union-attr]
        return list(self._data)  # type: ignore[arg-type]

    def grad(self, ctx: Optional[Context] = None) -> NDArray:
        self._check_initialized()
        if self._grad_req == "null":
            raise MXNetError(f"Cannot get gradient array for Parameter {self.name!r} because "
                             f"grad_req='null'")
        g = self._data[self._index(ctx)]._grad  # type: ignore[index]
        return np_view(g) if is_np_array() and g.__class__ is NDArray else g

    def list_grad(self) -> list:
        grads = self._grads()
        return [np_view(g) if g.__class__ is NDArray else g for g in grads] if is_np_array() else grads

    def _grads(self) -> list:
        """The gradient buffers as the NDArrays they are (the Trainer's view in either mode)."""
        self._check_initialized()
        if self._grad_req == "null":
            raise MXNetError(f"Cannot get gradient array for Parameter {self.name!r} because grad_req='null'")
        return [d._grad for d in self._data]  # type: ignore[union-attr]

    def list_ctx(self) -> list:
        if self._data is None:
            if self._deferred_init:
                return list(self._deferred_init[1])
            raise MXNetError(f"Parameter {self.name!r} has not been initialized")
        return list(self._ctx_list)  # type: ignore[arg-type]

    def zero_grad(self) -> None:
        if self._data is None or self._grad_req == "null":
            return
        for d in self._data:
            _pa.clear_grad(d._grad)

    def set_data(self, data: Any) -> None:
        """Replace the values (shape must match; deferred parameters take the new shape)."""
        if not isinstance(data, NDArray):
            data = _nd_mod.array(data, dtype=self._dtype)
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise MXNetError(f"Parameter {self.name!r} has not been initialized")
            init, ctx, default_init, _ = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
            self._finish_deferred_init()
            return
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore \
                and all(p is not self for p in trainer._params_to_init):
            trainer._reset_kvstore()  # the store holds the old weights (MXNet resets it here)
        for d in self._data:
            _pa.write_values(d, data, self._stype)

    def row_sparse_data(self, row_id: Any) -> NDArray:
        """The 'row_sparse' parameter on ``row_id``'s context holding the rows ``row_id`` (pulled
        from the Trainer's kvstore, which owns sparse weights, into the parameter's array)."""
        if self._stype != "row_sparse":
            raise MXNetError(f"Cannot return a copy of Parameter {self.name!r} via row_sparse_data() "
                             f"because its storage type is {self._stype}. Please use data() instead.")
        return self._get_row_sparse(self._data, row_id.context if isinstance(row_id, NDArray) else None,
                                    row_id)

    def list_row_sparse_data(self, row_id: Any) -> list:
        """``row_sparse_data`` on every context, in creation order."""
        if self._stype != "row_sparse":
            raise MXNetError(f"Cannot return copies of Parameter {self.name!r} on all contexts via "
                             f"list_row_sparse_data() because its storage type is {self._stype}. "
                             f"Please use data() instead.")
        return self._get_row_sparse(self._data, list, row_id)

    def _get_row_sparse(self, arr_list: Optional[list], ctx: Any, row_id: Any) -> Any:
        if not isinstance(row_id, NDArray):
            raise TypeError(f"row_id must have NDArray type, but {type(row_id)} is given")
        if not self._trainer:
            raise MXNetError(f"Cannot get row_sparse data for Parameter {self.name!r} when no "
                             f"Trainer is created with it.")
        trainer = self._trainer
        out = self._check_and_get(arr_list, ctx)
        trainer._row_sparse_pull(self, out, row_id)
        return out

    # -- MXNet 1.x internals that libraries touch ---------------------------------------
    def _set_trainer(self, trainer: Any) -> None:
        """Associate the Trainer; a sparse parameter cannot change Trainer (MXNet)."""
        if self._stype != "default" and self._trainer and trainer and self._trainer is not trainer:
            raise RuntimeError(f"Failed to set the trainer for Parameter {self.name!r} because it was "
                               f"already set. More than one trainers for a {self._stype} Parameter is "
                               f"not supported.")
        self._trainer = trainer

    @property
    def _grad(self) -> Optional[list]:
        """Gradient buffers per context (None when grad_req is 'null' or uninitialized)."""
        if self._data is None or self._grad_req == "null":
            return None
        return [d._grad for d in self._data]

    @_grad.setter
    def _grad(self, grads: Optional[list]) -> None:
        """Code written for MXNet's Parameter sets ``_grad`` next to ``_data`` (GluonNLP's
        WeightDropParameter shares another parameter's arrays so). The gradient buffers live on
        the data arrays here: a list is attached to ``_data``'s arrays, one per context."""
        if grads is None:
            return
        if self._data is None or len(grads) != len(self._data):
            raise MXNetError(f"Parameter {self.name!r}: _grad must hold one gradient array per "
                             f"context of its data; set _data first")
        for d, g in zip(self._data, grads):
            if g is not None and getattr(d, "_grad", None) is not g:
                d._mark(g, self._grad_req if self._grad_req != "null" else "write")

    @property
    def _ctx_map(self) -> Optional[list]:
        """MXNet's lookup table: ``[cpu ids, gpu ids]`` -> index into the per-context lists."""
        if self._ctx_list is None:
            return None
        table: list = [[], []]
        for i, c in enumerate(self._ctx_list):
            ids = table[c.device_typeid & 1]
            while len(ids) <= c.device_id:
                ids.append(None)
            ids[c.device_id] = i
        return table

    @_ctx_map.setter
    def _ctx_map(self, table: Optional[list]) -> None:
        """Accepted for code written for MXNet (which stores the table): here it is derived
        from ``_ctx_list``, so setting it changes nothing."""

    def _check_and_get(self, arr_list: Optional[list], ctx: Any) -> Any:
        """``arr_list`` itself (ctx is ``list``) or its entry for ``ctx``; the deferred or
        uninitialized error otherwise (MXNet's Parameter._check_and_get)."""
        if arr_list is not None:
            if ctx is list:
                return arr_list
            return arr_list[self._index(ctx)]
        self._check_initialized()
        raise MXNetError(f"Parameter {self.name!r} has no such arrays")  # e.g. grad with grad_req null

    def _init_grad(self) -> None:
        """(Re)create zeroed gradient buffers per grad_req and attach them to the data."""
        if self._data is None:
            return
        for d in self._data:
            _attach_grad(d, self._grad_req, self._grad_stype)

    def reset_ctx(self, ctx: Any) -> None:
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is not None:
            data = self._data[0]
            with autograd.pause():
                self._init_impl(_pa.detached_copy(data), ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, list(ctx), default_init, data)
        else:
            raise ValueError(f"Cannot reset context for Parameter {self.name!r} because it has not "
                             f"been initialized.")

    def cast(self, dtype: Any) -> None:
        self._dtype = dtype_name(dtype)
        self._var = None
        if self._data is None:
            return
        with autograd.pause():
            req = self._grad_req
            self._data = [_pa.cast_copy(d, self._dtype) for d in self._data]
            if self._writer is not None:
                _wg.set_guard(self._data, self._writer)
            for d in self._data:
                if req != "null":
                    _attach_grad(d, req, self._grad_stype)
            self._store_as_np()
        self._version_hook()

    def var(self) -> Any:
        """The Symbol variable standing for this parameter in traced graphs."""
        if self._var is None:
            from ..symbol import var
            self._var = var(self.name, shape=self.shape, dtype=self._dtype, lr_mult=self.lr_mult,
                            wd_mult=self.wd_mult, init=self.init, stype=self._stype)
        return self._var

    def _reduce(self) -> NDArray:
        """The average of the data over contexts (what save uses), on CPU."""
        self._check_initialized()
        return _pa.mean_on_cpu(self._data, self._stype)

    def _load_init(self, data: NDArray, ctx: Any, cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """Set the value from a loaded array (MXNet's Parameter._load_init)."""
        if cast_dtype and dtype_source not in ("current", "saved"):
            raise ParameterArgumentError(f"dtype_source must be 'current' or 'saved', got {dtype_source!r}")
        if cast_dtype:
            if dtype_source == "current":
                data = data.astype(self._dtype)
            elif dtype_source == "saved" and _pa.dtype_of(data) != self._dtype:
                self.cast(_pa.dtype_of(data))  # MXNet sets Parameter.dtype: existing arrays are cast
        elif _pa.dtype_of(data) != self._dtype:
            raise MXNetError(f"Failed loading Parameter {self.name!r} from saved params: dtype "
                             f"incompatible, expected {self._dtype} vs saved {_pa.dtype_of(data)}. "
                             f"Set cast_dtype=True to cast the dtype of saved params.")
        if self._shape is not None:
            if len(self._shape) != len(data.shape) or any(
                    a != b and a > 0 for a, b in zip(self._shape, data.shape)):
                raise MXNetError(f"Failed loading Parameter {self.name!r} from saved params: shape "
                                 f"incompatible, expected {self._shape} vs saved {data.shape}")
        self._shape = data.shape
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                ctx = ctx or self._deferred_init[1]
            ctx = ctx or [current_context()]
            self._deferred_init = ()
            with autograd.pause():
                self._init_impl(_pa.detached_copy(data), list(ctx))
        else:
            self.set_data(data)


class Constant(Parameter):
    """A constant parameter (grad_req 'null') initialized to ``value``."""

    def __init__(self, name: str, value: Any):
        if not isinstance(value, NDArray):
            value = _nd_mod.array(value)
        self.value = value
        init_mod = _init_module()

        class _CInit(init_mod.Initializer):
            def _init_weight(self, _: Any, arr: NDArray) -> None:
                arr[:] = value

            _init_default = _init_weight

            def dumps(self) -> str:
                return f'["constant", {{"value": {value.asnumpy().tolist()}}}]'

        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype, init=_CInit())

    def __repr__(self) -> str:
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype.__name__})"

    @property
    def grad_req(self) -> str:
        return "null"

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != "null":
            warnings.warn("Constant parameter's grad_req cannot be changed from 'null'", stacklevel=2)
        self._grad_req = "null"


class ParameterDict:
    """An ordered name -> Parameter map with a prefix (MXNet 1.x ``ParameterDict``)."""

    def __init__(self, prefix: str = "", shared: Optional["ParameterDict"] = None):
        self._prefix = prefix
        self._params: "OrderedDict[str, Parameter]" = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        body = "\n".join(f"  {v!r}" for v in self.values())
        return f"{self._prefix} (\n{body}\n)" if self._prefix else f"(\n{body}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, key: object) -> bool:
        return key in self._params

    def items(self) -> Any:
        return self._params.items()

    def keys(self) -> Any:
        return self._params.keys()

    def values(self) -> Any:
        return self._params.values()

    @property
    def prefix(self) -> str:
        return self._prefix

    def _get_impl(self, name: str) -> Optional[Parameter]:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._shared._params[name]
        return None

    def get(self, name: str, **kwargs: Any) -> Parameter:
        """The parameter ``prefix + name``, created with ``kwargs`` if absent (checked if present)."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if k == "shape" and v is not None:
                v = (v,) if isinstance(v, int) else tuple(v)
                existing = param.shape
                if existing is not None and (len(v) != len(existing) or any(
                        a != b and a > 0 and b > 0 for a, b in zip(v, existing))):
                    raise MXNetError(f"Cannot retrieve Parameter {name!r} because desired attribute does "
                                     f"not match with stored for attribute 'shape': desired {v} vs stored "
                                     f"{existing}.")
                param.shape = tuple(b if b > 0 else a for a, b in zip(v, existing)) if existing else v
                continue
            if k == "dtype" and v is not None:
                if dtype_name(v) != param._dtype:
                    raise MXNetError(f"Cannot retrieve Parameter {name!r}: desired dtype {dtype_name(v)} "
                                     f"vs stored {param._dtype}")
                continue
            if k == "init":
                if param.init is None:
                    param.init = v
                continue
            existing = getattr(param, k, None)
            if existing is not None and v is not None and existing != v and k not in ("allow_deferred_init",):
                raise MXNetError(f"Cannot retrieve Parameter {name!r} because desired attribute does not "
                                 f"match with stored for attribute {k!r}: desired {v!r} vs stored {existing!r}.")
        return param

    def get_constant(self, name: str, value: Any = None) -> Constant:
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named {full!r}. Please specify value if you want to create "
                               f"a new constant.")
            param = Constant(full, value)
            self._params[full] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise MXNetError(f"Parameter {full!r} already exists but it is not a constant.")
            if isinstance(value, NDArray):
                value = value.asnumpy()
            if not np.array_equal(param.value.asnumpy(), np.asarray(value)):
                raise MXNetError(f"Constant {full!r} already exists but its value doesn't match new value")
        return param  # type: ignore[return-value]

    def update(self, other: "ParameterDict") -> None:
        for k, v in other.items():
            if k in self._params:
                if self._params[k] is not v:
                    raise MXNetError(f"Cannot update self with other because they have different "
                                     f"Parameters with the same name {k!r}")
            else:
                self._params[k] = v

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        if init is None:
            init = _init_module().Uniform()
        if verbose and hasattr(init, "set_verbosity"):
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        for v in self.values():
            v.zero_grad()

    def reset_ctx(self, ctx: Any) -> None:
        for v in self.values():
            v.reset_ctx(ctx)

    def list_ctx(self) -> list:
        out: list = []
        for v in self.values():
            for c in v.list_ctx():
                if c not in out:
                    out.append(c)
        return out

    def setattr(self, name: str, value: Any) -> None:
        for v in self.values():
            setattr(v, name, value)

    def select(self, select: Optional[str]) -> "ParameterDict":
        if select is None:
            return self
        pattern = re.compile(select)
        ret = ParameterDict(self._prefix)
        ret._params.update((k, v) for k, v in self.items() if pattern.match(k))
        return ret

    def save(self, filename: str, strip_prefix: str = "") -> None:
        from ..ndarray.utils import save
        with reading(self.values()):
            arg_dict = {}
            for param in self.values():
                weight = param._reduce()
                if not param.name.startswith(strip_prefix):
                    raise ValueError(f"Prefix {strip_prefix!r} is to be striped before saving, but "
                                     f"Parameter's name {param.name!r} does not start with it.")
                arg_dict[param.name[len(strip_prefix):]] = weight
            save(filename, arg_dict)

    def load(self, filename: str, ctx: Any = None, allow_missing: bool = False, ignore_extra: bool = False,
             restore_prefix: str = "", cast_dtype: bool = False, dtype_source: str = "current") -> None:
        from ..ndarray.utils import load
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise ValueError(f"restore_prefix is {restore_prefix!r} but Parameters name "
                                     f"{name!r} does not start with it")
        loaded = load(filename) if isinstance(filename, str) else filename
        if isinstance(loaded, list):
            if loaded:
                raise MXNetError(f"{filename}: the file holds unnamed arrays; parameter files need names")
            loaded = {}
        arg_dict = {}
        for k, v in loaded.items():
            key = k[4:] if k.startswith(("arg:", "aux:")) else k
            arg_dict[restore_prefix + key] = v
        self._load_dict(arg_dict, filename, ctx, allow_missing, ignore_extra, cast_dtype, dtype_source)

    def _load_dict(self, arg_dict: dict, filename: Any, ctx: Any, allow_missing: bool, ignore_extra: bool,
                   cast_dtype: bool, dtype_source: str) -> None:
        if not allow_missing:
            missing = [n for n in self.keys() if n not in arg_dict]
            if missing:
                raise MXNetError(f"Parameter(s) {missing} are missing in file {filename!r}, which contains "
                                 f"parameters {sorted(arg_dict)}. Set allow_missing=True to ignore missing "
                                 f"parameters.")
        for name, value in arg_dict.items():
            if name not in self._params:
                if ignore_extra:
                    continue
                raise MXNetError(f"Parameter {name!r} loaded from file {filename!r} is not present in this "
                                 f"ParameterDict, which contains {list(self.keys())}. Set ignore_extra=True "
                                 f"to ignore.")
            self._params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)
