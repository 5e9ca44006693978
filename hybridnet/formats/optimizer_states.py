"""A safe byte format for optimizer states (replaces MXNet's pickle in ``Updater.get_states``).

Layout: ``MAGIC`` (8 bytes) | header length (uint64 little endian) | header (UTF-8 JSON) | array data.
The header holds a typed tree (``{"t": "list"|"tuple"|"dict"|"nd"|"np"|"optimizer"|"lr_scheduler"...}``)
and an array table (dtype, shape, byte offset, byte length). Arrays are NumPy arrays here (bfloat16
as ``base.BFLOAT16_NP``) and dtypes are spelled as ``base.dtype_name`` spells them. Loading never
executes code: NDArrays (``"nd"`` nodes) and the objects the optimizer package writes (optimizers,
LR schedulers: ``Encoder``'s ``object_hook``, ``loads``' ``object_hook``) are built by the caller's
hooks; the optimizer package instantiates only registered classes, by name.
"""
from __future__ import annotations

import json
import math
import struct
from typing import Any, Callable, List, Optional

import numpy as np

from ..base import _NAME_TO_TORCH, MXNetError, dtype_name, dtype_np

MAGIC = b"HNOPTST\x01"
FORMAT = "hybridnet-optimizer-states"
VERSION = 1

STYPES = ("row_sparse", "csr")  # the storage types an "nd" node may name (stored dense)


def _dtype_of(name: Any) -> Optional[np.dtype]:
    """The NumPy dtype a table entry names (hybridnet's dtypes, ``base.dtype_name``'s spelling
    only), or None."""
    if not isinstance(name, str) or name not in _NAME_TO_TORCH:
        return None
    return np.dtype(dtype_np(name))


class Encoder:
    """Writes a tree of plain values and NumPy arrays; ``object_hook(obj, path)`` writes what
    else the caller stores (a node dict, or None: not serializable), through ``encode`` and
    ``array``."""

    def __init__(self, object_hook: Optional[Callable[[Any, str], Optional[dict]]] = None):
        self.arrays: List[np.ndarray] = []
        self.object_hook = object_hook

    def array(self, a: np.ndarray, t: str = "np", stype: Optional[str] = None) -> dict:
        """The node of array ``a``: ``t`` "np" decodes as a NumPy array, "nd" through the
        loader's ``nd_hook``, with storage type ``stype`` (``a`` is then its dense form)."""
        self.arrays.append(a)
        node: dict = {"t": t, "i": len(self.arrays) - 1}
        if stype is not None:
            node["s"] = stype
        return node

    def encode(self, obj: Any, path: str = "states") -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj
        if isinstance(obj, float):
            if math.isfinite(obj):
                return obj
            return {"t": "float", "v": repr(obj)}
        if isinstance(obj, np.generic):
            return self.encode(obj.item(), path)
        if isinstance(obj, np.ndarray):
            return self.array(obj)
        if isinstance(obj, list):
            return {"t": "list", "v": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, tuple):
            return {"t": "tuple", "v": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            return {"t": "dict", "v": [[self.encode(k, f"{path}.key"), self.encode(v, f"{path}[{k!r}]")]
                                       for k, v in obj.items()]}
        if self.object_hook is not None:
            res = self.object_hook(obj, path)
            if res is not None:
                return res
        raise TypeError(f"optimizer states: cannot serialize {path} of type {type(obj).__name__} "
                        f"({obj!r:.80}); only numbers, strings, None, NDArrays, lists, tuples, dicts, "
                        f"registered optimizers and LRSchedulers can be saved")


_MAX_DEPTH = 64  # nesting of lists/tuples/dicts in a states tree; MXNet's is at most 4


def _fail(msg: str) -> MXNetError:
    return MXNetError(f"set_states: invalid optimizer-states blob: {msg}")


class Decoder:
    """Turns the header tree back into values; every node is checked, nothing is trusted."""

    def __init__(self, arrays: List[np.ndarray], object_hook: Callable[[dict, "Decoder"], Any],
                 nd_hook: Callable[[np.ndarray, Optional[str]], Any]):
        self.arrays = arrays
        self.used = [False] * len(arrays)
        self.object_hook = object_hook
        self.nd_hook = nd_hook
        self.depth = 0

    def field(self, node: dict, key: str, kind: type, what: str) -> Any:
        """``node[key]``, which must be a ``kind`` (bool never counts as int)."""
        if key not in node:
            raise _fail(f"{what} node {_short(node)} has no {key!r} field")
        v = node[key]
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise _fail(f"{what} node field {key!r} must be {kind.__name__}, got {_short(v)}")
        return v

    def _array(self, node: dict) -> np.ndarray:
        i = self.field(node, "i", int, "array")
        if not 0 <= i < len(self.arrays):
            raise _fail(f"array reference {i} out of range (the blob holds {len(self.arrays)} arrays)")
        if self.used[i]:
            raise _fail(f"array {i} is referenced twice; saved states never share arrays")
        self.used[i] = True
        return self.arrays[i]

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, str)):
            return node
        if isinstance(node, float):
            return node
        if not isinstance(node, dict) or not isinstance(node.get("t"), str):
            raise _fail(f"corrupt header node {_short(node)}")
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _fail(f"the states tree nests deeper than {_MAX_DEPTH} levels")
        try:
            return self._decode_typed(node)
        finally:
            self.depth -= 1

    def _decode_typed(self, node: dict) -> Any:
        t = node["t"]
        if t == "float":
            text = self.field(node, "v", str, "float")
            if text not in ("inf", "-inf", "nan"):
                raise _fail(f"float node holds {_short(text)}; only 'inf', '-inf' and 'nan' are stored as text")
            return float(text)
        if t == "nd":
            stype = None
            if "s" in node:
                stype = self.field(node, "s", str, "array")
                if stype not in STYPES:
                    raise _fail(f"array node storage type {_short(stype)} must be 'row_sparse' or 'csr'")
            return self.nd_hook(self._array(node), stype)
        if t == "np":
            return self._array(node)
        if t in ("list", "tuple"):
            items = [self.decode(v) for v in self.field(node, "v", list, t)]
            return items if t == "list" else tuple(items)
        if t == "dict":
            out = {}
            for pair in self.field(node, "v", list, "dict"):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise _fail(f"dict entry {_short(pair)} is not a [key, value] pair")
                key = self.decode(pair[0])
                if not isinstance(key, (int, str, float, tuple, type(None))) or _unhashable(key):
                    raise _fail(f"dict key {_short(key)} is not a number, string or tuple")
                out[key] = self.decode(pair[1])
            return out
        return self.object_hook(node, self)


def _unhashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return True
    return False


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def dumps(obj: Any, encoder: Optional[Encoder] = None) -> bytes:
    """Serialize ``obj`` (a tree of plain values and arrays) into the safe byte format."""
    enc = encoder if encoder is not None else Encoder()
    tree = enc.encode(obj)
    table = []
    chunks = []
    offset = 0
    for a in enc.arrays:
        try:
            name = dtype_name(a.dtype)
        except TypeError:
            raise TypeError(f"optimizer states: arrays of dtype {a.dtype} cannot be saved") from None
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        raw = a.tobytes()  # C order, native (little-endian) byte order; bfloat16 as its 2 bytes
        table.append({"dtype": name, "shape": list(a.shape), "offset": offset, "nbytes": len(raw)})
        chunks.append(raw)
        offset += len(raw)
    header = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree, "arrays": table},
                        separators=(",", ":")).encode("utf-8")
    return MAGIC + struct.pack("<Q", len(header)) + header + b"".join(chunks)


def _array_table(header: dict, base: int, size: int) -> List[tuple]:
    """Check the array table (dtype, shape, offset, byte count) against the blob before
    allocating anything; returns ``(dtype, shape, start, nbytes)`` per array."""
    table = header.get("arrays")
    if not isinstance(table, list):
        raise _fail(f"'arrays' must be a list, got {_short(table)}")
    out = []
    for k, a in enumerate(table):
        if not isinstance(a, dict) or set(a) != {"dtype", "shape", "offset", "nbytes"}:
            raise _fail(f"array {k}: entry {_short(a)} must have exactly dtype, shape, offset, nbytes")
        dt = _dtype_of(a["dtype"])
        if dt is None:
            raise _fail(f"array {k}: unknown dtype {_short(a['dtype'])}; known: {sorted(_NAME_TO_TORCH)}")
        shape, offset, nbytes = a["shape"], a["offset"], a["nbytes"]
        if not isinstance(shape, list) or len(shape) > 32 or not all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2 ** 62 for d in shape):
            raise _fail(f"array {k}: shape {_short(shape)} must be a list of at most 32 non-negative ints")
        for name, v in (("offset", offset), ("nbytes", nbytes)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise _fail(f"array {k}: {name} {_short(v)} must be a non-negative int")
        numel = math.prod(shape)
        itemsize = dt.itemsize
        if numel * itemsize != nbytes:
            raise _fail(f"array {k}: shape {tuple(shape)} of {a['dtype']} takes {numel * itemsize} "
                        f"bytes, but the table says {nbytes}")
        if base + offset + nbytes > size:
            raise _fail(f"array {k}: {nbytes} bytes at data offset {offset} run past the end of the "
                        f"blob ({size - base} data bytes; truncated file?)")
        out.append((dt, tuple(shape), base + offset, nbytes))
    return out


def loads(data: bytes, object_hook: Callable[[dict, Decoder], Any],
          nd_hook: Callable[[np.ndarray, Optional[str]], Any] = lambda a, stype: a) -> Any:
    """Inverse of :func:`dumps`. Raises MXNetError for anything that is not such a blob; checks
    the header, the array table against the byte count, then every tree node. ``nd_hook(array,
    storage type or None)`` builds what an "nd" node stands for."""
    data = bytes(data)
    if not data.startswith(MAGIC):
        hint = (" (this looks like a Python pickle, e.g. a .states file written by MXNet; "
                "hybridnet never unpickles, because unpickling runs code from the file: load the "
                "states in MXNet and re-save them with hybridnet, or start the optimizer afresh)"
                ) if data[:1] == b"\x80" else ""
        raise MXNetError(f"set_states: not a hybridnet optimizer-states blob{hint}")
    if len(data) < 16:
        raise MXNetError(f"set_states: truncated optimizer-states blob ({len(data)} bytes)")
    (hlen,) = struct.unpack("<Q", data[8:16])
    if hlen > len(data) - 16:
        raise MXNetError(f"set_states: truncated optimizer-states header ({hlen} bytes announced, "
                         f"{len(data) - 16} present)")
    try:
        header = json.loads(data[16:16 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:  # JSONDecodeError is a ValueError
        raise MXNetError(f"set_states: corrupt optimizer-states header: {e}") from None
    except RecursionError:
        raise MXNetError("set_states: corrupt optimizer-states header: nested too deeply") from None
    if not isinstance(header, dict):
        raise _fail(f"the header must be a JSON object, got {type(header).__name__}")
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise MXNetError(f"set_states: unsupported states format {_short(header.get('format'))} "
                         f"version {_short(header.get('version'))}; expected {FORMAT!r} version {VERSION}")
    table = _array_table(header, 16 + hlen, len(data))
    arrays = []
    for dt, shape, start, n in table:
        if n == 0:
            arrays.append(np.empty(shape, dtype=dt))
        else:  # a writable copy, as the states are updated in place
            arrays.append(np.frombuffer(bytearray(data[start:start + n]), dtype=dt).reshape(shape))
    if "tree" not in header:
        raise _fail("the header has no 'tree'")
    return Decoder(arrays, object_hook, nd_hook).decode(header["tree"])
