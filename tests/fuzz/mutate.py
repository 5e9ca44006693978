"""Seeded mutations of file bytes: generic byte edits, integer fields, JSON-aware edits.

Every function takes a ``random.Random`` so that an input is reproduced from (seed, loader,
index) alone. The generic mutators know nothing about the formats; ``mutate_ints`` overwrites
aligned 4- and 8-byte words with boundary values (where length, count and shape fields live in
``.params``, RecordIO and states files); ``mutate_json`` edits a parsed JSON document (numbers,
strings, lists, objects) and ``hostile_text`` supplies attribute strings that attack parsers.
"""
from __future__ import annotations

import json
import random
import struct
from typing import Any, Callable, List

__all__ = ["mutate_bytes", "mutate_ints", "mutate_json", "mutate_json_bytes", "hostile_text",
           "INTERESTING_INTS"]

INTERESTING_INTS = [0, 1, 2, 3, 4, 7, 8, 16, 255, 256, 1023, 4096, 65535, 65536, 2 ** 29 - 1,
                    2 ** 29, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 48, 2 ** 62,
                    2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, -1, -2, -(2 ** 31), -(2 ** 63)]


def _int_bytes(rng: random.Random, width: int) -> bytes:
    v = rng.choice(INTERESTING_INTS)
    if rng.random() < 0.3:
        v += rng.choice([-1, 1])
    return (v % (1 << (8 * width))).to_bytes(width, "little")


def _bitflip(rng: random.Random, b: bytearray) -> None:
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)


def _byteset(rng: random.Random, b: bytearray) -> None:
    for _ in range(rng.randint(1, 3)):
        b[rng.randrange(len(b))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])


def _insert(rng: random.Random, b: bytearray) -> None:
    i = rng.randrange(len(b) + 1)
    n = rng.choice([1, 2, 4, 8, rng.randint(1, 64)])
    fill = bytes(rng.randrange(256) for _ in range(n)) if rng.random() < 0.5 else b"\x00" * n
    b[i:i] = fill


def _delete(rng: random.Random, b: bytearray) -> None:
    i = rng.randrange(len(b))
    n = rng.choice([1, 2, 4, 8, rng.randint(1, max(1, len(b) // 4))])
    del b[i:i + n]


def _truncate(rng: random.Random, b: bytearray) -> None:
    del b[rng.randrange(len(b)):]


def _duplicate(rng: random.Random, b: bytearray) -> None:
    i = rng.randrange(len(b))
    n = rng.randint(1, min(256, len(b) - i))
    b[rng.randrange(len(b) + 1):0] = b[i:i + n]


def _int_field(rng: random.Random, b: bytearray) -> None:
    width = rng.choice([4, 8])
    if len(b) < width:
        return
    i = rng.randrange(0, len(b) - width + 1, 4) if rng.random() < 0.8 else rng.randrange(len(b) - width + 1)
    b[i:i + width] = _int_bytes(rng, width)


_BYTE_MUTATORS: List[Callable[[random.Random, bytearray], None]] = [
    _bitflip, _byteset, _insert, _delete, _truncate, _duplicate, _int_field, _int_field]


def mutate_bytes(rng: random.Random, data: bytes, other: bytes = b"") -> bytes:
    """One to three random byte-level edits; sometimes a splice with ``other``."""
    b = bytearray(data)
    if other and rng.random() < 0.1:
        i, j = rng.randrange(len(b) + 1), rng.randrange(len(other) + 1)
        b = b[:i] + bytearray(other[j:])
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if not b:
            b = bytearray(rng.randrange(256) for _ in range(rng.randint(0, 8)))
            break
        rng.choice(_BYTE_MUTATORS)(rng, b)
    return bytes(b)


def mutate_ints(rng: random.Random, data: bytes) -> bytes:
    """Overwrite one to three aligned integer words with boundary values."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        _int_field(rng, b)
    return bytes(b)


def hostile_text(rng: random.Random) -> str:
    """Attribute text meant to break literal parsers and shape rules."""
    n = rng.choice([10, 100, 1000, 50_000])
    return rng.choice([
        "(" * n + ")" * n, "[" * n, "(1," * n, "9" * rng.choice([20, 5000, 200_000]),
        "1e999", "-1e999", "nan", "inf", "(-1, -1)", "(0, 0)", "(100000, 100000)",
        "(2147483647, 2147483647)", "(4294967296,)", "()", "(1, 2, 3, 4, 5, 6, 7, 8, 9)",
        "None", "True", "'str'", "{1: 2}", "{'a': " * 50 + "1" + "}" * 50, "1j", "b'x'",
        "(1, 'a')", "-0", "0x10", "1_000", "\x00", "\ud800", "", " ", "(1,)*1000",
        "__import__('os')", str(rng.randint(-(2 ** 70), 2 ** 70)), str(rng.random() * 1e6),
    ])


_HOSTILE_NUMBERS: List[Any] = [0, -1, 1, 2, 3, 2 ** 31 - 1, 2 ** 31, 2 ** 63, 10 ** 30, -(10 ** 30),
                               1.5, -0.0, 1e308, True, None]


def _walk(node: Any, path: list, out: list) -> None:
    out.append(path)
    if isinstance(node, dict):
        for k, v in node.items():
            _walk(v, path + [k], out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _walk(v, path + [i], out)


def _get(doc: Any, path: list) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _mutate_value(rng: random.Random, v: Any, doc: Any) -> Any:
    r = rng.random()
    if isinstance(v, bool) or v is None:
        return rng.choice(_HOSTILE_NUMBERS + ["", [], {}])
    if isinstance(v, (int, float)):
        if r < 0.7:
            return rng.choice(_HOSTILE_NUMBERS)
        return rng.choice(["1", [v], {}, v + rng.choice([-1, 1])])
    if isinstance(v, str):
        if r < 0.5:
            return hostile_text(rng)
        if r < 0.7:
            return rng.choice([v + v, v[: len(v) // 2], v.upper(), "null", "FullyConnected",
                               "Convolution", "Reshape", "_zeros", "float16", "int64", "bfloat16"])
        return rng.choice([0, None, [v], {v: v}])
    if isinstance(v, list):
        if not v or r < 0.2:
            return rng.choice([[], [0], [0, 0, 0], [-1, 0, 0], [10 ** 6, 0, 0], "x", {}])
        w = list(v)
        op = rng.randrange(4)
        if op == 0:
            del w[rng.randrange(len(w))]
        elif op == 1:
            w.insert(rng.randrange(len(w) + 1), rng.choice(w))
        elif op == 2:
            i, j = rng.randrange(len(w)), rng.randrange(len(w))
            w[i], w[j] = w[j], w[i]
        else:
            w = w * rng.choice([2, 50])
        return w
    if isinstance(v, dict):
        w = dict(v)
        if w and r < 0.4:
            del w[rng.choice(list(w))]
        elif w and r < 0.7:
            k = rng.choice(list(w))
            w[k] = hostile_text(rng) if isinstance(w[k], str) else _mutate_value(rng, w[k], doc)
        else:
            w[rng.choice(["num_hidden", "kernel", "shape", "axis", "t", "i", "v", "extra",
                          "__shape__", "__dtype__", "num_args", "no_bias"])] = rng.choice(
                [hostile_text(rng), 1, [1, 2], None, "(3, 3)"])
        return w
    return v


def mutate_json(rng: random.Random, doc: Any) -> Any:
    """A copy of the parsed JSON ``doc`` with one to three values replaced."""
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.choice([1, 1, 2, 3])):
        paths: list = []
        _walk(doc, [], paths)
        path = rng.choice(paths)
        new = _mutate_value(rng, _get(doc, path), doc)
        if not path:
            doc = new
        else:
            _get(doc, path[:-1])[path[-1]] = new
    return doc


def mutate_json_bytes(rng: random.Random, text: bytes) -> bytes:
    """JSON-aware mutation of a JSON file (falls back to bytes when it does not parse)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return mutate_bytes(rng, text)
    out = json.dumps(mutate_json(rng, doc), indent=rng.choice([None, 2]))
    return out.encode("utf-8", "surrogatepass")


def pack_u64(v: int) -> bytes:
    return struct.pack("<Q", v % (1 << 64))
