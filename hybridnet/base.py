"""Errors and dtype tables shared by every layer (MXNet's ``mxnet.base``)."""
from __future__ import annotations

import os
import platform
from typing import Any

import numpy as np
import torch

__all__ = ["MXNetError", "ShapeError", "MXNetIndexError", "dtype_np", "dtype_torch", "dtype_flag", "dtype_from_flag", "dtype_name",
           "numeric_types", "integer_types", "string_types", "NotGiven", "NotImplementedForSymbol",
           "NotSupportedForSparseNDArray", "DeferredError", "py_str", "NDArrayHandle", "c_str", "check_call",
           "mx_real_t", "data_dir", "data_dir_default"]


class MXNetError(RuntimeError):
    """The error MXNet users catch: bad operator input, bad files, bad graphs."""


class MXNetIndexError(MXNetError, IndexError):
    """An out-of-range index in an operator: MXNet raises IndexError for these (its error
    registry maps them), so this is both an MXNetError and an IndexError."""


class DeferredError(MXNetError):
    """An operator found invalid *values* while computing (an index out of range under
    ``mode='raise'``, a sampler's invalid parameter), as opposed to invalid shapes, types or
    attributes, which raise at the call.

    MXNet's engine runs operators asynchronously and reports such errors when a result is read.
    hybridnet does the same for eager calls and bound executors: the outputs carry the error, and
    the first read of one of them (``wait_to_read``, ``asnumpy``, ``waitall``...) raises it, once
    (see ``ndarray.ndarray``'s pending errors). ``placeholder``: what the kernel computed anyway
    (a tensor or a tuple of them), the value an output holds until then."""

    def __init__(self, message: str, placeholder: Any = None):
        super().__init__(message)
        self.placeholder = placeholder


class ShapeError(MXNetError, ValueError):
    """A shape that does not fit: MXNet raises ValueError here (``x.reshape`` to another size);
    catchable as MXNetError too."""


class NotImplementedForSymbol(MXNetError):
    """An NDArray-only feature used on a Symbol (MXNet's ``mxnet.base.NotImplementedForSymbol``)."""

    def __init__(self, function: Any, alias: Any = None, *args: Any, hint: str = ""):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias, self.args = alias, [str(type(a)) for a in args]
        self.hint = hint

    def __str__(self) -> str:
        msg = f"Function {self.function}"
        if self.alias:
            msg += f" (namely operator \"{self.alias}\")"
        if self.args:
            msg += " with arguments (" + ", ".join(self.args) + ")"
        msg += " is not implemented for Symbol and only available in NDArray."
        return f"{msg} {self.hint}" if self.hint else msg


class NotSupportedForSparseNDArray(MXNetError):
    """A dense-only feature used on a sparse array (MXNet's name)."""

    def __init__(self, function: Any, alias: Any = None, *args: Any):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias, self.args = alias, [str(type(a)) for a in args]

    def __str__(self) -> str:
        msg = f"Function {self.function}"
        if self.alias:
            msg += f" (namely operator \"{self.alias}\")"
        return msg + " is not supported for SparseNDArray and only available in NDArray."


def py_str(x: Any) -> str:
    """Bytes from a C string (MXNet's ``py_str``): UTF-8 decoded; a str passes through."""
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) else str(x)


def _as_list(obj: Any) -> list:
    """``obj`` if it is a list or tuple (as a list), else ``[obj]`` (MXNet's ``_as_list``)."""
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


mx_real_t = np.float32  # MXNet's default real type


def data_dir_default() -> str:
    """Where MXNet keeps downloaded data without ``MXNET_HOME``: ``%APPDATA%/mxnet`` on Windows,
    ``~/.mxnet`` elsewhere."""
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", os.path.expanduser("~")), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """``$MXNET_HOME``, else ``data_dir_default()`` (datasets and model weights live below it)."""
    return os.getenv("MXNET_HOME", data_dir_default())


numeric_types = (float, int, np.generic)
integer_types = (int, np.integer)
string_types = (str,)


class _NotGivenType:
    """Sentinel for 'argument not passed' (MXNet records only passed attributes)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "<not given>"

    def __reduce__(self):
        return "NotGiven"


NotGiven: Any = _NotGivenType()

# MXNet type flag <-> NumPy dtype <-> torch dtype (spec A.6). bfloat16 has no NumPy dtype;
# MXNet spells it np.dtype([('bfloat16', '<u2')]).
BFLOAT16_NP = np.dtype([("bfloat16", "<u2")])

_FLAG_TO_NAME = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8",
                 6: "int64", 7: "bool", 12: "bfloat16"}
_NAME_TO_FLAG = {v: k for k, v in _FLAG_TO_NAME.items()}
_NAME_TO_TORCH = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                  "uint8": torch.uint8, "int32": torch.int32, "int8": torch.int8,
                  "int64": torch.int64, "bool": torch.bool, "bfloat16": torch.bfloat16,
                  "int16": torch.int16}
_TORCH_TO_NAME = {v: k for k, v in _NAME_TO_TORCH.items()}


def dtype_name(dtype: Any) -> str:
    """Canonical MXNet/NumPy name of a dtype given as str, NumPy dtype/type or torch dtype."""
    if dtype is None:
        return "float32"
    if isinstance(dtype, torch.dtype):
        try:
            return _TORCH_TO_NAME[dtype]
        except KeyError:
            raise TypeError(f"dtype {dtype} is not supported by hybridnet") from None
    if isinstance(dtype, str):
        if dtype in _NAME_TO_TORCH:
            return dtype
        if dtype == "bfloat16":
            return dtype
    if dtype is BFLOAT16_NP or (isinstance(dtype, np.dtype) and dtype == BFLOAT16_NP):
        return "bfloat16"
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}; expected one of {sorted(_NAME_TO_TORCH)}") from None
    if name not in _NAME_TO_TORCH:
        raise TypeError(f"dtype {name!r} is not supported; expected one of {sorted(_NAME_TO_TORCH)}")
    return name


def dtype_torch(dtype: Any) -> torch.dtype:
    """torch dtype for an MXNet dtype spelling."""
    if isinstance(dtype, torch.dtype):
        return dtype
    return _NAME_TO_TORCH[dtype_name(dtype)]


def dtype_np(dtype: Any) -> Any:
    """NumPy dtype (type object, as MXNet's ``NDArray.dtype`` returns) for any dtype spelling."""
    name = dtype_name(dtype)
    if name == "bfloat16":
        return BFLOAT16_NP
    return np.dtype(name).type


def dtype_flag(dtype: Any) -> int:
    """MXNet type flag (spec A.6) for a dtype; raises for types MXNet 1.9.1 cannot load."""
    name = dtype_name(dtype)
    try:
        return _NAME_TO_FLAG[name]
    except KeyError:
        raise MXNetError(f"dtype {name} cannot be stored in MXNet 1.9.1 files") from None


def dtype_from_flag(flag: int) -> str:
    try:
        return _FLAG_TO_NAME[flag]
    except KeyError:
        raise MXNetError(f"unknown MXNet type flag {flag}; known: {sorted(_FLAG_TO_NAME)}") from None


# ---- MXNet's C handles ---------------------------------------------------------------------------
# MXNet code hands arrays to and from libmxnet as ctypes handles: a monitor callback receives
# one (``NDArray(ctypes.cast(arr, NDArrayHandle), writable=False)``), DLPack interop goes through
# ``_LIB.MXNDArrayFromDLPack``. hybridnet has no C library; a handle here is the number under which
# a torch tensor is registered (an NDArray's ``_as_parameter_`` registers its tensor, so ctypes
# accepts the array itself), and ``NDArray(handle)`` finds the tensor again.
import ctypes  # noqa: E402
import weakref  # noqa: E402

NDArrayHandle = ctypes.c_void_p
SymbolHandle = ctypes.c_void_p
ExecutorHandle = ctypes.c_void_p
KVStoreHandle = ctypes.c_void_p
CachedOpHandle = ctypes.c_void_p

_HANDLE_VIEWS: "dict[int, weakref.ref]" = {}  # handle -> tensor owned elsewhere (an NDArray's)
_HANDLE_OWNED: "dict[int, torch.Tensor]" = {}  # handle -> tensor only the handle keeps alive


def tensor_handle(t: torch.Tensor) -> int:
    """The handle (a nonzero int) of tensor ``t``, registered for ``tensor_from_handle``."""
    key = id(t)

    def _forget(ref: "weakref.ref", key: int = key) -> None:
        if _HANDLE_VIEWS.get(key) is ref:
            del _HANDLE_VIEWS[key]
    _HANDLE_VIEWS[key] = weakref.ref(t, _forget)
    return key


def _owned_handle(t: torch.Tensor) -> int:
    _HANDLE_OWNED[id(t)] = t
    return id(t)


def tensor_from_handle(handle: Any) -> torch.Tensor:
    """The tensor behind an MXNet-style handle (a ctypes ``c_void_p``, or its integer value)."""
    value = handle.value if isinstance(handle, ctypes.c_void_p) else handle
    if isinstance(value, int):
        t = _HANDLE_OWNED.pop(value, None)
        if t is not None:
            _HANDLE_VIEWS[value] = weakref.ref(t)
            return t
        ref = _HANDLE_VIEWS.get(value)
        t = ref() if ref is not None else None
        if t is not None:
            return t
    raise MXNetError(f"NDArray(handle): {handle!r} is not the handle of a live array (hybridnet "
                     f"knows only handles it gave out: ctypes.cast(arr, NDArrayHandle) of an NDArray)")


def c_str(string: str) -> ctypes.c_char_p:
    """A Python string as a C string (MXNet's ``c_str``)."""
    return ctypes.c_char_p(string.encode("utf-8"))


def c_array(ctype: Any, values: Any) -> Any:
    """A ctypes array of ``ctype`` holding ``values`` (MXNet's ``c_array``)."""
    return (ctype * len(values))(*values)


def check_call(ret: int) -> None:
    """Raise for a nonzero status of a ``_LIB`` call (MXNet's ``check_call``)."""
    if ret != 0:
        raise MXNetError(f"C API call failed with status {ret}")


class _CApi:
    """The few libmxnet C functions MXNet-era Python code calls itself (``mxnet.base._LIB``); any
    other name raises MXNetError saying hybridnet has no C library."""

    @staticmethod
    def MXNDArrayFromDLPack(dlpack: Any, out: Any) -> int:
        """An array over a DLManagedTensor (its address): the tensor takes ownership."""
        ptr = dlpack.value if isinstance(dlpack, ctypes.c_void_p) else int(dlpack)
        capsule = ctypes.pythonapi.PyCapsule_New(ctypes.c_void_p(ptr), b"dltensor", None)
        t = torch.utils.dlpack.from_dlpack(capsule)
        target = getattr(out, "_obj", out)  # ctypes.byref(handle) or the handle itself
        target.value = _owned_handle(t)
        return 0

    def __getattr__(self, name: str) -> Any:
        raise MXNetError(f"_LIB.{name}: hybridnet has no libmxnet C library; only "
                         f"MXNDArrayFromDLPack is offered (use the Python API instead)")


_LIB = _CApi()
# MXNet declares these prototypes when it is imported, and MXNet-era code calls them relying on
# it (a capsule's pointer must not be cut to a C int)
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
