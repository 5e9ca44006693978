"""A safe byte format for optimizer states (replaces MXNet's pickle in ``Updater.get_states``).

Layout: ``MAGIC`` (8 bytes) | header length (uint64 little endian) | header (UTF-8 JSON) | array data.
The header holds a typed tree (``{"t": "list"|"tuple"|"dict"|"nd"|"np"|"optimizer"|"lr_scheduler"...}``)
and an array table (dtype, shape, byte offset, byte length). Loading never executes code: it only
instantiates optimizer / scheduler classes that are registered (``Optimizer.opt_registry``) or that
subclass ``LRScheduler``, by name, and fills their ``__dict__`` with decoded plain values.
"""
from __future__ import annotations

import json
import math
import struct
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch

from ..base import MXNetError
from ..ndarray.ndarray import NDArray

MAGIC = b"HNOPTST\x01"
FORMAT = "hybridnet-optimizer-states"
VERSION = 1

_DTYPES = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64,
           "bfloat16": torch.bfloat16, "uint8": torch.uint8, "int8": torch.int8,
           "int32": torch.int32, "int64": torch.int64, "bool": torch.bool, "int16": torch.int16}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


class _Encoder:
    def __init__(self, object_hook: Optional[Callable[[Any, str], Optional[dict]]] = None):
        self.arrays: List[torch.Tensor] = []
        self.object_hook = object_hook

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
        if isinstance(obj, NDArray):
            self.arrays.append(obj._t.detach())
            return {"t": "nd", "i": len(self.arrays) - 1}
        if isinstance(obj, np.ndarray):
            self.arrays.append(torch.from_numpy(np.ascontiguousarray(obj)))
            return {"t": "np", "i": len(self.arrays) - 1}
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


class _Decoder:
    def __init__(self, arrays: List[torch.Tensor], object_hook: Callable[[dict, "_Decoder"], Any]):
        self.arrays = arrays
        self.object_hook = object_hook

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or "t" not in node:
            raise MXNetError(f"optimizer states: corrupt header node {node!r:.80}")
        t = node["t"]
        if t == "float":
            return float(node["v"])
        if t == "nd":
            return NDArray(self.arrays[node["i"]])
        if t == "np":
            return self.arrays[node["i"]].numpy()
        if t == "list":
            return [self.decode(v) for v in node["v"]]
        if t == "tuple":
            return tuple(self.decode(v) for v in node["v"])
        if t == "dict":
            return {self.decode(k): self.decode(v) for k, v in node["v"]}
        return self.object_hook(node, self)


def dumps(obj: Any, encoder: Optional[_Encoder] = None) -> bytes:
    """Serialize ``obj`` (a tree of plain values and NDArrays) into the safe byte format."""
    enc = encoder if encoder is not None else _Encoder()
    tree = enc.encode(obj)
    table = []
    chunks = []
    offset = 0
    for t in enc.arrays:
        t = t.cpu().contiguous()
        if t.dtype not in _DTYPE_NAMES:
            raise TypeError(f"optimizer states: arrays of dtype {t.dtype} cannot be saved")
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        table.append({"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape), "offset": offset,
                      "nbytes": len(raw)})
        chunks.append(raw)
        offset += len(raw)
    header = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree, "arrays": table},
                        separators=(",", ":")).encode("utf-8")
    return MAGIC + struct.pack("<Q", len(header)) + header + b"".join(chunks)


def loads(data: bytes, object_hook: Callable[[dict, _Decoder], Any]) -> Any:
    """Inverse of :func:`dumps`. Raises MXNetError for anything that is not such a blob."""
    data = bytes(data)
    if not data.startswith(MAGIC):
        hint = (" (this looks like a Python pickle, e.g. an MXNet .states file; hybridnet never "
                "unpickles, re-save the states with hybridnet)") if data[:1] == b"\x80" else ""
        raise MXNetError(f"set_states: not a hybridnet optimizer-states blob{hint}")
    if len(data) < 16:
        raise MXNetError("set_states: truncated optimizer-states blob")
    (hlen,) = struct.unpack("<Q", data[8:16])
    if 16 + hlen > len(data):
        raise MXNetError("set_states: truncated optimizer-states header")
    try:
        header = json.loads(data[16:16 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MXNetError(f"set_states: corrupt optimizer-states header: {e}") from None
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise MXNetError(f"set_states: unsupported states format {header.get('format')!r} "
                         f"version {header.get('version')!r}")
    base = 16 + hlen
    arrays = []
    for a in header["arrays"]:
        dt = _DTYPES.get(a["dtype"])
        if dt is None:
            raise MXNetError(f"set_states: unknown dtype {a['dtype']!r} in states blob")
        start, n = base + int(a["offset"]), int(a["nbytes"])
        if start + n > len(data):
            raise MXNetError("set_states: truncated optimizer-states array data")
        buf = bytearray(data[start:start + n])
        shape = tuple(int(s) for s in a["shape"])
        if dt == torch.bfloat16:
            t = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16) if n else torch.empty(0, dtype=dt)
        else:
            t = torch.frombuffer(buf, dtype=dt) if n else torch.empty(0, dtype=dt)
        arrays.append(t.reshape(shape).clone())
    return _Decoder(arrays, object_hook).decode(header["tree"])


def plain_state(obj: Any, skip: tuple = ()) -> Dict[str, Any]:
    """An object's ``__dict__`` minus ``skip`` (used for optimizers and schedulers)."""
    return {k: v for k, v in vars(obj).items() if k not in skip}
