"""ONNX tensors as NumPy arrays, validated before anything is allocated (the ONNX import's
limits and element types; shared by ``import_onnx`` and ``_op_translations``)."""
from __future__ import annotations

import os
import re
from typing import Any, Optional

import numpy as np

from ....base import MXNetError

__all__ = ["OPSET_RANGE", "MAX_TENSOR_ELEMENTS", "MAX_FILE_BYTES", "np_dtype", "tensor_to_array"]

OPSET_RANGE = (7, 22)               # default-domain opsets read
MAX_TENSOR_ELEMENTS = 1 << 31       # one initializer or folded constant at most
MAX_FILE_BYTES = 1 << 34

# ONNX TensorProto element types hybridnet computes with
_ELEM = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64,
         9: np.bool_, 10: np.float16, 11: np.float64}
_ELEM_NAMES = {1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
               8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64",
               14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16"}
_TYPED_FIELD = {1: "float_data", 2: "int32_data", 3: "int32_data", 5: "int32_data", 6: "int32_data",
                7: "int64_data", 9: "int32_data", 10: "int32_data", 11: "double_data"}


def np_dtype(elem_type: int, where: str) -> np.dtype:
    if elem_type not in _ELEM:
        raise MXNetError(f"{where}: element type {_ELEM_NAMES.get(elem_type, elem_type)} is not "
                         f"supported (hybridnet reads {sorted(_ELEM_NAMES[k] for k in _ELEM)})")
    return np.dtype(_ELEM[elem_type])


def tensor_to_array(t: Any, where: str, base: Optional[str] = None) -> np.ndarray:
    """A TensorProto as a NumPy array, validated before anything is allocated."""
    name = t.name or "<unnamed>"
    what = f"{where}: tensor {name!r}"
    dt = np_dtype(int(t.data_type), what)
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise MXNetError(f"ONNX import: {what} has negative dimensions {dims}")
    count = 1
    for d in dims:
        count *= d
    if count > MAX_TENSOR_ELEMENTS:
        raise MXNetError(f"ONNX import: {what} declares {count} elements (dims {dims}), over the "
                         f"{MAX_TENSOR_ELEMENTS} hybridnet reads; the file is corrupt or hostile")
    if t.HasField("segment"):
        raise MXNetError(f"ONNX import: {what} is segmented, which hybridnet does not read")
    nbytes = count * dt.itemsize
    if int(t.data_location) == 1:  # EXTERNAL
        raw = _external_bytes(t, what, base, nbytes)
    elif t.HasField("raw_data"):
        raw = t.raw_data
        if len(raw) != nbytes:
            raise MXNetError(f"ONNX import: {what} has {len(raw)} bytes of data for dims {dims} of "
                             f"{dt.name} ({nbytes} expected); the file is truncated or corrupt")
    else:
        field = _TYPED_FIELD[int(t.data_type)]
        vals = getattr(t, field)
        if len(vals) != count:
            raise MXNetError(f"ONNX import: {what} has {len(vals)} values for dims {dims} "
                             f"({count} expected); the file is truncated or corrupt")
        if int(t.data_type) == 10:  # float16 bits in int32_data
            return np.asarray(vals, dtype=np.uint16).view(np.float16).reshape(dims)
        return np.asarray(vals, dtype=dt).reshape(dims)
    return np.frombuffer(bytes(raw), dtype=dt.newbyteorder("<")).astype(dt).reshape(dims)


def _external_bytes(t: Any, what: str, base: Optional[str], nbytes: int) -> bytes:
    info = {e.key: e.value for e in t.external_data}
    loc = info.get("location", "")
    if base is None:
        raise MXNetError(f"ONNX import: {what} keeps its data in an external file; load the model "
                         f"from its path, not from bytes")
    if not loc or os.path.basename(loc) != loc or loc in (".", "..") or not re.fullmatch(r"[\w.\-+ ]+", loc):
        raise MXNetError(f"ONNX import: {what}: external data location {loc!r} must be a plain file "
                         f"name beside the model")
    path = os.path.join(base, loc)
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else nbytes
    except ValueError:
        raise MXNetError(f"ONNX import: {what}: external data offset/length are not integers") from None
    if length != nbytes or offset < 0:
        raise MXNetError(f"ONNX import: {what}: external data length {length} at offset {offset} does "
                         f"not hold {nbytes} bytes")
    try:
        size = os.path.getsize(path)
    except OSError:
        raise MXNetError(f"ONNX import: {what}: external data file {loc!r} not found beside the model") from None
    if offset + length > size:
        raise MXNetError(f"ONNX import: {what}: external data {loc!r} has {size} bytes, the tensor needs "
                         f"{offset + length}; the file is truncated")
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


class DynamicDimError(MXNetError):
    """A dimension known only at run time was needed as a number at import."""


class Dim:
    """A dimension known only at run time, inside folded shape arithmetic: ``name`` is an ONNX
    ``dim_param`` (or ``input:axis``) that it equals, None for a derived size (``batch * 5``)."""

    __slots__ = ("name",)

    def __init__(self, name: Optional[str]) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name if self.name is not None else "?"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Dim) and self.name is not None and other.name == self.name

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(("Dim", self.name))

    def _derived(self, other: Any, neutral: int) -> "Dim":
        return self if isinstance(other, (int, np.integer)) and int(other) == neutral else Dim(None)

    def __add__(self, o: Any) -> "Dim":
        return self._derived(o, 0)

    __radd__ = __add__

    def __sub__(self, o: Any) -> "Dim":
        return self._derived(o, 0)

    def __rsub__(self, o: Any) -> "Dim":
        return Dim(None)

    def __mul__(self, o: Any) -> "Dim":
        return self._derived(o, 1)

    __rmul__ = __mul__

    def __floordiv__(self, o: Any) -> "Dim":
        return self._derived(o, 1)

    __truediv__ = __floordiv__

    def __rfloordiv__(self, o: Any) -> "Dim":
        return Dim(None)

    __rtruediv__ = __rfloordiv__

    def __neg__(self) -> "Dim":
        return Dim(None)

    def _number(self) -> int:
        raise DynamicDimError(f"the dimension {self!r} is known only at run time")

    def __int__(self) -> int:
        return self._number()

    def __index__(self) -> int:
        return self._number()

    def __float__(self) -> float:
        return float(self._number())

    def __bool__(self) -> bool:
        return True      # a size, never zero
