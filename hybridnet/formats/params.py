"""MXNet 1.9.1 NDArray list files (``.params``, ``nd.save``/``nd.load``): spec section A.

The file is a u64 list magic 0x112, a reserved u64, the array count, the array records, then
the names (none, or one per array). Arrays cross this module as NumPy arrays; bfloat16 arrays
use ``hybridnet.base.BFLOAT16_NP`` (MXNet's ``np.dtype([('bfloat16', '<u2')])``).

Writer: V2 records (``0xF993FAC9``), context ``cpu(0)`` (dev_type 1, dev_id 0), type flags of
spec A.6 only (never 8-11), 0-d arrays stored with shape ``(1,)`` (spec A.9). Dense arrays are
NumPy arrays; row_sparse and csr arrays are ``SparseRecord``s, written as MXNet writes them
(storage shape, aux types and shapes, values, then aux data). Output is byte identical to
MXNet's ``nd.save`` / ``export`` for the same arrays and names.

Reader: V2, V3, V1 and pre-V1 records; dense, row_sparse and csr storage (sparse records are
returned as ``SparseRecord`` with ``sparse=True``, densified otherwise); trailing bytes after
the names are ignored. Every count is checked
against the bytes left before anything is allocated, so hostile input raises ``MXNetError``
(never another exception type, never a huge allocation). Densifying a sparse record is
capped at ``MAX_DENSE_BYTES`` (2 GiB; environment variable ``HYBRIDNET_MAX_DENSE_BYTES``).

'None' arrays (records MXNet writes for never-allocated NDArrays: V2/V1/pre-V1 ``ndim == 0``,
V3 ``ndim == -1`` or an unknown ``-1`` dimension) cannot be represented as NumPy arrays. By
default they raise ``MXNetError``; ``on_none="skip"`` drops such an array together with its
name, ``on_none="keep"`` returns ``None`` in its place.
"""
from __future__ import annotations

import os
import stat
import struct
from typing import Any, Iterator, NamedTuple, Optional, Sequence, Union

import numpy as np

from .atomic import write_atomic
from ..base import BFLOAT16_NP, MXNetError

__all__ = ["SparseRecord", "save", "load", "dumps", "loads", "dump_record", "load_record", "LIST_MAGIC", "V1_MAGIC", "V2_MAGIC", "V3_MAGIC"]

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA

DENSE, ROW_SPARSE, CSR = 0, 1, 2
_STYPE_NAMES = {DENSE: "default", ROW_SPARSE: "row_sparse", CSR: "csr"}
_NUM_AUX = {DENSE: 0, ROW_SPARSE: 1, CSR: 2}

# type flag -> little-endian NumPy dtype (spec A.6). Flags 8-11 (int16, uint16, uint32, uint64)
# exist in MXNet's enum but MXNet 1.9.1 cannot load them: neither can we, and we never write them.
_FLAG_DTYPE: dict = {
    0: np.dtype("<f4"), 1: np.dtype("<f8"), 2: np.dtype("<f2"), 3: np.dtype("u1"),
    4: np.dtype("<i4"), 5: np.dtype("i1"), 6: np.dtype("<i8"), 7: np.dtype("u1"),  # bool: 1 byte
    12: BFLOAT16_NP,
}
_UNLOADABLE_FLAGS = {8: "int16", 9: "uint16", 10: "uint32", 11: "uint64"}
_INT_FLAGS = {3, 4, 5, 6}
# Sparse records are densified; a tiny hostile file could otherwise ask for petabytes. The cap
# (2 GiB) can be changed with the environment variable HYBRIDNET_MAX_DENSE_BYTES or by setting
# this module constant.
MAX_DENSE_BYTES = 1 << 31
_MAX_DENSE_ENV = "HYBRIDNET_MAX_DENSE_BYTES"


def _dense_cap() -> int:
    text = os.environ.get(_MAX_DENSE_ENV)
    if text is None:
        return MAX_DENSE_BYTES
    try:
        cap = int(text)
    except ValueError:
        cap = -1
    if cap < 0:
        raise MXNetError(f"{_MAX_DENSE_ENV}={text!r} is not a byte count; set it to a non-negative "
                         f"integer (default {MAX_DENSE_BYTES})")
    return cap
_MAX_LEGACY_NDIM = 64  # a pre-V1 record starts with its ndim; more than NumPy's limit is garbage
_NAME_FLAG = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
              "int64": 6, "bool": 7}

_U64 = struct.Struct("<Q")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")

PathLike = Union[str, "os.PathLike[str]"]


class SparseRecord(NamedTuple):
    """A sparse array as stored in a record: ``stype`` 'row_sparse' (``aux = (indices,)``, ``data``
    the kept rows) or 'csr' (``aux = (indptr, indices)``, ``data`` the values); ``shape`` is the
    dense shape. Aux arrays are integer NumPy arrays (MXNet writes int64)."""
    stype: str
    shape: tuple
    data: np.ndarray
    aux: tuple


# ----------------------------------------------------------------------------------------
# writing
# ----------------------------------------------------------------------------------------
def _flag_of(a: np.ndarray, where: str) -> int:
    dt = a.dtype
    if dt == BFLOAT16_NP:
        return 12
    if dt.fields is None and dt.kind in "fiub":
        flag = _NAME_FLAG.get(dt.name)
        if flag is not None:
            return flag
    raise MXNetError(f"{where}: dtype {dt} cannot be stored in an MXNet 1.9.1 .params file; "
                     f"supported dtypes are {sorted(_NAME_FLAG)} and bfloat16 "
                     f"(cast the array, e.g. a.astype('float32'))")


def _prepare(arrays: Sequence[Any], names: Optional[Sequence[str]], np_shape: bool = False) -> tuple:
    """Validate inputs; return (encoded names or None, [(flag, shape, contiguous LE array)])."""
    if names is not None:
        names = list(names)
        if len(names) != len(arrays):
            raise ValueError(f"params.dumps: {len(names)} names for {len(arrays)} arrays; "
                             f"pass one name per array, or names=None for an unnamed list")
        enc = []
        for i, n in enumerate(names):
            if not isinstance(n, str):
                raise TypeError(f"params.dumps: name {i} must be a str, got {type(n).__name__} {n!r}")
            try:
                enc.append(n.encode("utf-8"))
            except UnicodeEncodeError as e:
                raise ValueError(f"params.dumps: name {i} {n!r} is not valid Unicode text: {e}") from None
    else:
        enc = None
    prepared = []
    for i, a in enumerate(arrays):
        where = f"array {i}" + (f" ({names[i]!r})" if names is not None else "")
        if isinstance(a, SparseRecord):
            prepared.append(_prepare_sparse(a, where))
            continue
        if not isinstance(a, np.ndarray):
            if a is None:
                raise TypeError(f"params.dumps: {where} is None; only NumPy arrays can be saved")
            a = np.asarray(a)
        flag = _flag_of(a, where)
        shape = a.shape if a.ndim > 0 or np_shape else (1,)  # spec A.9: never a 0-d array in a V2 record
        if flag == 12:
            data = np.ascontiguousarray(a).view("<u2")
        elif flag == 7:
            data = np.ascontiguousarray(a, dtype=np.bool_)
        else:
            data = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        prepared.append((flag, shape, data))
    return enc, prepared


def _le_data(a: np.ndarray, flag: int) -> np.ndarray:
    if flag == 12:
        return np.ascontiguousarray(a).view("<u2")
    if flag == 7:
        return np.ascontiguousarray(a, dtype=np.bool_)
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def _prepare_sparse(rec: SparseRecord, where: str) -> tuple:
    """(stype code, storage shape, shape, flag, values, [(aux flag, aux array)]) of a sparse array."""
    code = {"row_sparse": ROW_SPARSE, "csr": CSR}.get(rec.stype)
    if code is None:
        raise ValueError(f"params.dumps: {where} has unknown storage type {rec.stype!r}; expected "
                         f"'row_sparse' or 'csr'")
    if len(rec.aux) != _NUM_AUX[code]:
        raise ValueError(f"params.dumps: {where} ({rec.stype}) needs {_NUM_AUX[code]} aux arrays, "
                         f"got {len(rec.aux)}")
    data = np.asarray(rec.data)
    flag = _flag_of(data, where)
    aux = []
    for k, x in enumerate(rec.aux):
        x = np.asarray(x)
        aflag = _flag_of(x, f"{where} aux {k}")
        if aflag not in _INT_FLAGS:
            raise ValueError(f"params.dumps: {where} aux array {k} must be integer, got {x.dtype}")
        aux.append((aflag, _le_data(x, aflag)))
    return (code, tuple(data.shape), tuple(int(d) for d in rec.shape), flag, _le_data(data, flag), aux)


def _chunks(enc: Optional[list], prepared: list, np_shape: bool = False) -> Iterator[bytes]:
    yield _U64.pack(LIST_MAGIC) + _U64.pack(0) + _U64.pack(len(prepared))
    for item in prepared:
        if len(item) == 6:
            yield from _sparse_chunks(item, np_shape)
            continue
        flag, shape, data = item
        head = [_U32.pack(V3_MAGIC if np_shape else V2_MAGIC), _I32.pack(DENSE), _I32.pack(len(shape))]
        head += [_I64.pack(d) for d in shape]
        head += [_I32.pack(1), _I32.pack(0), _I32.pack(flag)]  # cpu(0), type flag
        yield b"".join(head)
        if data.size:
            yield data.reshape(-1).view(np.uint8).tobytes()
    if enc is None:
        yield _U64.pack(0)
    else:
        yield _U64.pack(len(enc)) + b"".join(_U64.pack(len(n)) + n for n in enc)


def _shape_bytes(shape: tuple) -> list:
    return [_I32.pack(len(shape))] + [_I64.pack(d) for d in shape]


def _sparse_chunks(item: tuple, np_shape: bool) -> Iterator[bytes]:
    """A sparse record as MXNet's NDArray::Save writes it: magic, stype, storage shape, shape,
    context, type flag, (aux type flag, aux shape) per aux array, values, aux data."""
    code, sshape, shape, flag, data, aux = item
    head = [_U32.pack(V3_MAGIC if np_shape else V2_MAGIC), _I32.pack(code)]
    head += _shape_bytes(sshape) + _shape_bytes(shape)
    head += [_I32.pack(1), _I32.pack(0), _I32.pack(flag)]
    for aflag, a in aux:
        head += [_I32.pack(aflag)] + _shape_bytes(tuple(a.shape))
    yield b"".join(head)
    for a in [data] + [a for _, a in aux]:
        if a.size:
            yield a.reshape(-1).view(np.uint8).tobytes()


def dumps(arrays: Sequence[np.ndarray], names: Optional[Sequence[str]] = None, *,
          np_shape: bool = False) -> bytes:
    """The bytes MXNet's ``nd.save`` writes for ``arrays`` (named when ``names`` is given).

    ``np_shape=True`` writes what MXNet writes under ``mx.np_shape()``: V3 records, 0-d arrays
    kept 0-d."""
    enc, prepared = _prepare(arrays, names, np_shape)
    return b"".join(_chunks(enc, prepared, np_shape))


def dump_record(array: np.ndarray, *, np_shape: bool = False) -> bytes:
    """One array record alone (MXNet's ``MXNDArraySaveRawBytes``: what a pickled NDArray holds)."""
    _, prepared = _prepare([array], None, np_shape)
    chunks = list(_chunks(None, prepared, np_shape))
    return b"".join(chunks[1:-1])  # without the list header and the names section


def save(fname: PathLike, arrays: Sequence[np.ndarray], names: Optional[Sequence[str]] = None, *,
         np_shape: bool = False) -> None:
    """Write ``arrays`` (and ``names``) to ``fname`` like MXNet's ``nd.save``, atomically.

    The data go to a temporary file in the destination directory, which then replaces
    ``fname`` (``os.replace``), so a crash never leaves a half-written parameter file.
    """
    enc, prepared = _prepare(arrays, names, np_shape)  # validate before touching the file system
    write_atomic(fname, _chunks(enc, prepared, np_shape))


# ----------------------------------------------------------------------------------------
# reading
# ----------------------------------------------------------------------------------------
class _None:
    """Marker for a 'none' record (an NDArray that was never allocated)."""


class _Reader:
    """Bounds-checked little-endian cursor over the file bytes."""
    __slots__ = ("buf", "pos", "end", "what")

    def __init__(self, buf: memoryview):
        self.buf = buf
        self.pos = 0
        self.end = len(buf)
        self.what = "file header"

    def need(self, n: int, field: str) -> int:
        if n < 0 or n > self.end - self.pos:
            raise MXNetError(f"truncated .params file: {self.what} needs {n} bytes for {field} at "
                             f"byte offset {self.pos}, but only {self.end - self.pos} are left")
        p = self.pos
        self.pos += n
        return p

    def u64(self, field: str) -> int:
        return _U64.unpack_from(self.buf, self.need(8, field))[0]

    def u32(self, field: str) -> int:
        return _U32.unpack_from(self.buf, self.need(4, field))[0]

    def i32(self, field: str) -> int:
        return _I32.unpack_from(self.buf, self.need(4, field))[0]

    def fail(self, msg: str, at: Optional[int] = None) -> MXNetError:
        off = self.pos if at is None else at
        return MXNetError(f"invalid .params file: {self.what} at byte offset {off}: {msg}")


def _read_shape(r: _Reader, field: str, dim_u32: bool = False, ndim: Optional[int] = None) -> tuple:
    """``i32 ndim`` then ``ndim`` dims (i64, or u32 for pre-V1). Negative ndim returned as-is."""
    at = r.pos
    if ndim is None:
        ndim = r.i32(f"{field} ndim")
    if ndim < 0:
        return ndim, at
    width = 4 if dim_u32 else 8
    if ndim > (r.end - r.pos) // width:
        raise MXNetError(f"truncated .params file: {r.what} {field} has ndim {ndim}, which needs "
                         f"{ndim * width} bytes at byte offset {r.pos}, but only {r.end - r.pos} are left")
    p = r.need(ndim * width, f"{field} dims")
    dims = tuple(int(d) for d in np.frombuffer(r.buf, dtype="<u4" if dim_u32 else "<i8", count=ndim, offset=p))
    return dims, at


_MAX_ELEMENTS = 2 ** 63 - 1  # MXNet's shape sizes are int64 (index_t)


def _check_dims(r: _Reader, dims: tuple, field: str, at: int) -> None:
    for d in dims:
        if d < 0:
            raise r.fail(f"{field} {dims} has a negative dimension", at)
    if _size(dims) > _MAX_ELEMENTS:
        raise r.fail(f"{field} {dims} has {_size(dims):.3e} elements, more than an int64 can count "
                     f"(at most 2**63 - 1); not an array MXNet can hold", at)


def _size(dims: tuple) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _read_data(r: _Reader, flag: int, dims: tuple, field: str) -> np.ndarray:
    dt = _FLAG_DTYPE[flag]
    count = _size(dims)
    nbytes = count * dt.itemsize
    if nbytes > r.end - r.pos:
        raise MXNetError(f"truncated .params file: {r.what} {field} of shape {dims} needs {nbytes} "
                         f"bytes at byte offset {r.pos}, but only {r.end - r.pos} are left")
    p = r.need(nbytes, field)
    try:
        flat = np.frombuffer(r.buf, dtype=dt, count=count, offset=p)
        if flag == 7:
            out = flat != 0
        else:
            out = flat.astype(dt.newbyteorder("=") if dt.fields is None else dt, copy=True)
        return out.reshape(dims)
    except (ValueError, MemoryError, OverflowError) as e:
        raise r.fail(f"cannot build an array of shape {dims}: {e}") from None


def _read_flag(r: _Reader, field: str) -> int:
    at = r.pos
    flag = r.i32(field)
    if flag in _FLAG_DTYPE:
        return flag
    if flag in _UNLOADABLE_FLAGS:
        raise r.fail(f"{field} {flag} ({_UNLOADABLE_FLAGS[flag]}) cannot be loaded by MXNet 1.9.1 "
                     f"either ('Unknown type enum {flag}')", at)
    raise r.fail(f"unknown {field} {flag}; known type flags are {sorted(_FLAG_DTYPE)}", at)


def _read_record(r: _Reader, np_shape: Optional[bool] = None, sparse: bool = False) -> Any:
    """One array record (any version) -> np.ndarray, or ``_None`` for a 'none' array.

    ``np_shape`` (the caller's ``mx.np_shape`` state; None: no check) refuses what MXNet refuses:
    V3 records (written under NumPy shape semantics) outside them, and older records with a
    zero dimension (which meant "unknown" then) inside them."""
    start = r.pos
    magic = r.u32("the array magic")
    if np_shape is not None and (magic == V3_MAGIC) != np_shape:
        if not np_shape:
            raise r.fail("the array was saved under NumPy shape semantics (mx.np_shape); load it "
                         "inside `with mx.np_shape(True):`", start)
        a = _read_legacy(r, magic) if magic != V2_MAGIC else _read_record_body(r, start, False, sparse)
        if a is not _None and 0 in a.shape:
            raise r.fail(f"the array of shape {a.shape} was saved without NumPy shape semantics, where "
                         f"a 0 dimension means unknown; load it outside mx.np_shape()", start)
        return a
    if magic not in (V2_MAGIC, V3_MAGIC):
        return _read_legacy(r, magic)
    return _read_record_body(r, start, magic == V3_MAGIC, sparse)


def _read_record_body(r: _Reader, start: int, v3: bool, sparse: bool = False) -> Any:
    """A V2/V3 record after its magic."""
    at = r.pos
    stype = r.i32("the storage type")
    if stype not in _NUM_AUX:
        raise r.fail(f"unknown storage type {stype}; expected 0 (default), 1 (row_sparse) or 2 (csr)", at)
    nad = _NUM_AUX[stype]
    sshape: tuple = ()
    if nad:
        sshape, sat = _read_shape(r, "storage shape")
        if not isinstance(sshape, tuple):
            raise r.fail(f"storage shape has negative ndim {sshape}", sat)
        _check_dims(r, sshape, "storage shape", sat)
    shape, at = _read_shape(r, "shape")
    if v3:
        if shape == -1:
            return _None
        if not isinstance(shape, tuple):
            raise r.fail(f"shape has invalid ndim {shape}", at)
        if any(d == -1 for d in shape):
            return _None
    else:
        if not isinstance(shape, tuple):
            raise r.fail(f"shape has negative ndim {shape}", at)
        if len(shape) == 0:
            return _None
    _check_dims(r, shape, "shape", at)
    r.need(8, "the context (dev_type, dev_id)")  # any device: loaded on the CPU (spec A.5)
    flag = _read_flag(r, "type flag")
    if nad == 0:
        return _read_data(r, flag, shape, "data")
    aux_flags, aux_shapes = [], []
    for k in range(nad):
        aat = r.pos
        aux_flags.append(_read_flag(r, f"aux {k} type flag"))
        if aux_flags[k] not in _INT_FLAGS:
            raise r.fail(f"sparse aux array {k} must have an integer type, got type flag {aux_flags[k]}", aat)
        ashape, aat = _read_shape(r, f"aux {k} shape")
        if not isinstance(ashape, tuple):
            raise r.fail(f"aux {k} shape has negative ndim {ashape}", aat)
        _check_dims(r, ashape, f"aux {k} shape", aat)
        aux_shapes.append(ashape)
    if _size(sshape) == 0:  # spec A.10: stale storage shape, derive it from the aux shapes
        if stype == ROW_SPARSE:
            if len(aux_shapes[0]) != 1:
                raise r.fail(f"row_sparse indices must be 1-D, got shape {aux_shapes[0]}", start)
            sshape = (aux_shapes[0][0],) + shape[1:]
        else:
            sshape = aux_shapes[1]
    if sparse:  # kept sparse: only the stored bytes are allocated
        values = _read_data(r, flag, sshape, "values")
        aux = [_read_data(r, aux_flags[k], aux_shapes[k], f"aux {k} data") for k in range(nad)]
        try:
            if stype == ROW_SPARSE:
                _check_rsp(shape, values, aux[0])
            else:
                _check_csr(shape, values, aux[0], aux[1])
        except ValueError as e:
            raise r.fail(f"{_STYPE_NAMES[stype]} record does not fit its shape {shape}: {e}", start) from None
        return SparseRecord(_STYPE_NAMES[stype], shape, values, tuple(aux))
    dense_bytes = _size(shape) * _FLAG_DTYPE[flag].itemsize
    cap = _dense_cap()
    if dense_bytes > cap:
        raise r.fail(f"the {_STYPE_NAMES[stype]} array of shape {shape} would take {dense_bytes} bytes "
                     f"once densified (hybridnet loads sparse records as dense arrays), more than the "
                     f"cap of {cap} bytes; if the file is trusted, raise the cap with the environment "
                     f"variable {_MAX_DENSE_ENV}", start)
    values = _read_data(r, flag, sshape, "values")
    aux = [_read_data(r, aux_flags[k], aux_shapes[k], f"aux {k} data") for k in range(nad)]
    try:
        if stype == ROW_SPARSE:
            return _densify_rsp(shape, values, aux[0])
        return _densify_csr(shape, values, aux[0], aux[1])
    except MemoryError:
        raise r.fail(f"out of memory densifying the {_STYPE_NAMES[stype]} array of shape {shape}", start) from None
    except ValueError as e:
        raise r.fail(f"{_STYPE_NAMES[stype]} record does not fit its shape {shape}: {e}", start) from None


def _densify_rsp(shape: tuple, values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    idx = _check_rsp(shape, values, idx)
    out = np.zeros(shape, dtype=values.dtype)
    if idx.size:
        out[idx] = values
    return out


def _check_rsp(shape: tuple, values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The row indices as int64, after checking they describe a row_sparse array of ``shape``."""
    if len(shape) < 1:
        raise ValueError("row_sparse arrays need at least one dimension")
    idx = idx.reshape(-1).astype(np.int64)
    if values.shape != (idx.size,) + tuple(shape[1:]):
        raise ValueError(f"values of shape {values.shape} for {idx.size} row indices")
    if idx.size and (idx.min() < 0 or idx.max() >= shape[0]):
        raise ValueError(f"row index out of range [0, {shape[0]})")
    if len(np.unique(idx)) != idx.size:
        raise ValueError("duplicate row indices")
    return idx


def _densify_csr(shape: tuple, values: np.ndarray, indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    indptr, indices, values = _check_csr(shape, values, indptr, indices)
    rows = shape[0]
    out = np.zeros(shape, dtype=values.dtype)
    if indices.size:
        row_ids = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr))
        out[row_ids, indices] = values
    return out


def _check_csr(shape: tuple, values: np.ndarray, indptr: np.ndarray, indices: np.ndarray) -> tuple:
    """(indptr, indices, values) flattened, after checking they describe a csr array of ``shape``."""
    if len(shape) != 2:
        raise ValueError("csr arrays must be 2-D")
    rows, cols = shape
    indptr = indptr.reshape(-1).astype(np.int64)
    indices = indices.reshape(-1).astype(np.int64)
    values = values.reshape(-1)
    nnz = indices.size
    if indptr.size != rows + 1:
        raise ValueError(f"indptr has {indptr.size} entries, expected {rows + 1}")
    if values.size != nnz:
        raise ValueError(f"{values.size} values for {nnz} column indices")
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        raise ValueError("indptr must start at 0, be non-decreasing and end at the number of values")
    if nnz and (indices.min() < 0 or indices.max() >= cols):
        raise ValueError(f"column index out of range [0, {cols})")
    return indptr, indices, values


def _read_legacy(r: _Reader, magic: int) -> Any:
    """V1 (i64 dims, no storage type) and pre-V1 (the magic word is ndim, u32 dims) records.

    An ``ndim == 0`` record is a 'none' array, as in the MXNet versions that wrote these
    records (their writers had no 0-d arrays).
    """
    if magic == V1_MAGIC:
        shape, at = _read_shape(r, "shape")
        if not isinstance(shape, tuple):
            raise r.fail(f"shape has negative ndim {shape}", at)
    else:
        if magic > _MAX_LEGACY_NDIM:
            raise r.fail(f"unknown array magic 0x{magic:08X} (read as a pre-V1 record it would have "
                         f"{magic} dimensions); not an MXNet array record", r.pos - 4)
        shape, at = _read_shape(r, "shape", dim_u32=True, ndim=magic)
    if len(shape) == 0:
        return _None
    if any(d == -1 for d in shape):
        return _None
    _check_dims(r, shape, "shape", at)
    r.need(8, "the context (dev_type, dev_id)")
    flag = _read_flag(r, "type flag")
    return _read_data(r, flag, shape, "data")


_HEADER_BYTES = 24  # u64 list magic, u64 reserved word, u64 array count


def _check_list_header(head: bytes, size: Optional[int]) -> int:
    """Validate the 24-byte list header against the file's ``size`` (None: not known); -> array count."""
    if len(head) < _HEADER_BYTES:
        raise MXNetError(f"truncated .params file: {len(head)} bytes, but the header alone takes "
                         f"{_HEADER_BYTES} (Invalid NDArray file format)")
    magic, _, n = struct.unpack_from("<QQQ", head)
    if magic != LIST_MAGIC:
        raise MXNetError(f"not an MXNet NDArray list (.params) file: magic 0x{magic:X} at byte offset 0, "
                         f"expected 0x{LIST_MAGIC:X} (Invalid NDArray file format)")
    if size is not None and n > (size - _HEADER_BYTES) // 4:  # every record takes at least 4 bytes
        raise MXNetError(f"truncated .params file: the header at byte offset 16 announces {n} arrays, "
                         f"but only {size - _HEADER_BYTES} bytes follow")
    return n


def loads(data: Union[bytes, bytearray, memoryview], *, on_none: str = "error",
          np_shape: Optional[bool] = None, sparse: bool = False) -> tuple:
    """Parse MXNet NDArray-list bytes -> ``(names or None, [np.ndarray, ...])``.

    Mirrors ``nd.load_frombuffer``: names are returned when the file has them (``K == N``),
    ``None`` for an unnamed list (``K == 0``). See the module docstring for ``on_none`` and
    ``_read_record`` for ``np_shape``. ``sparse=True`` returns row_sparse and csr records as
    ``SparseRecord`` (MXNet's ``nd.load``); by default they are densified.
    """
    if on_none not in ("error", "skip", "keep"):
        raise ValueError(f"on_none must be 'error', 'skip' or 'keep', got {on_none!r}")
    if isinstance(data, str) or not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"params.loads expects bytes, got {type(data).__name__}")
    buf = memoryview(data).cast("B")
    r = _Reader(buf)
    n = _check_list_header(bytes(buf[:_HEADER_BYTES]), r.end)
    r.pos = _HEADER_BYTES
    arrays: list = []
    for i in range(n):
        r.what = f"record {i}"
        arrays.append(_read_record(r, np_shape, sparse))
    r.what = "names section"
    at = r.pos
    k = r.u64("the name count")
    if k != 0 and k != n:
        raise r.fail(f"{k} names for {n} arrays; expected 0 or {n} (Invalid NDArray file format)", at)
    names: Optional[list] = None
    if k:
        if k > (r.end - r.pos) // 8:
            raise MXNetError(f"truncated .params file: {k} names announced at byte offset {at}, "
                             f"but only {r.end - r.pos} bytes follow")
        names = []
        for j in range(k):
            r.what = f"name {j}"
            length = r.u64("the name length")
            p = r.need(length, "the name bytes")
            try:
                names.append(bytes(buf[p:p + length]).decode("utf-8"))
            except UnicodeDecodeError as e:
                raise r.fail(f"name is not valid UTF-8 ({e.reason} at byte {e.start} of the name)", p) from None
    # trailing bytes after the names are ignored, like MXNet does
    if any(a is _None for a in arrays):
        return _handle_none(names, arrays, on_none)
    return names, arrays


def load_record(data: Union[bytes, bytearray, memoryview], sparse: bool = False) -> Any:
    """Parse one array record (``dump_record``, or the bytes of an MXNet NDArray pickle)."""
    if isinstance(data, str) or not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"params.load_record expects bytes, got {type(data).__name__}")
    r = _Reader(memoryview(data).cast("B"))
    r.what = "array record"
    a = _read_record(r, sparse=sparse)
    if a is _None:
        raise MXNetError("array record: an empty ('none') NDArray, which holds no data")
    return a


def _handle_none(names: Optional[list], arrays: list, on_none: str) -> tuple:
    if on_none == "error":
        i = next(j for j, a in enumerate(arrays) if a is _None)
        label = f"record {i}" + (f" ({names[i]!r})" if names is not None else "")
        raise MXNetError(f".params file: {label} is an empty ('none') NDArray, which MXNet writes for "
                         f"arrays that were never allocated; it holds no data. Pass on_none='skip' "
                         f"to drop such entries or on_none='keep' to get None for them")
    if on_none == "keep":
        return names, [None if a is _None else a for a in arrays]
    keep = [j for j, a in enumerate(arrays) if a is not _None]
    return (None if names is None else [names[j] for j in keep]), [arrays[j] for j in keep]


def load(fname: PathLike, *, on_none: str = "error", np_shape: Optional[bool] = None,
         sparse: bool = False) -> tuple:
    """Read a ``.params`` / ``nd.save`` file -> ``(names or None, [np.ndarray, ...])``."""
    path = os.fspath(fname)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            regular = stat.S_ISREG(st.st_mode)
            # the header is checked against the file's size before the rest is read, so a wrong
            # file costs one small read (MXNet refuses it at once too), and /dev/zero ends here
            head = f.read(_HEADER_BYTES)
            _check_list_header(head, st.st_size if regular else None)
            data = head + f.read()
        return loads(data, on_none=on_none, np_shape=np_shape, sparse=sparse)
    except MXNetError as e:
        raise MXNetError(f"{path}: {e}") from None
