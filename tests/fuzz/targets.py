"""The loaders under fuzz, each with the valid seed files it mutates.

Seeds are built at start-up (a small Conv/BatchNorm/Dense network exported and saved, an
``nd.save`` file with dense and hand-made sparse records, Trainer states with a scheduler, a
RecordIO pair with a multi-part record), so the fuzzer needs no fixtures. Every target writes
the mutated bytes to files and calls the public loader; when the loader accepts the input, the
target also uses the result (forward, ``step()``, read every record), because a file that loads
and then fails at first use is an unclear error too.
"""
from __future__ import annotations

import json
import os
import random
import struct
import warnings
from typing import Callable, Dict, List

import numpy as np

import hybridnet as mx
from hybridnet import gluon
from hybridnet.formats import params as _params_format
from hybridnet.gluon import nn

from .mutate import mutate_bytes, mutate_ints, mutate_json, mutate_json_bytes

__all__ = ["Seeds", "TARGETS"]

INPUT_SHAPE = (1, 2, 6, 6)


def _net() -> nn.HybridSequential:
    net = nn.HybridSequential(prefix="fz_")
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, in_channels=2), nn.BatchNorm(in_channels=4), nn.Activation("relu"),
                nn.Flatten(), nn.Dense(5, in_units=64))
    return net


class _Mixed(nn.HybridBlock):
    """A graph with shape-carrying attributes (kernel, axes, shape, begin/end, axis, p) for the
    JSON mutations to attack."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv = nn.Conv2D(3, 3, padding=1, in_channels=2)
            self.dense = nn.Dense(4, in_units=48)

    def hybrid_forward(self, F, x):
        y = F.Pooling(self.conv(x), kernel=(2, 2), stride=(2, 2), pool_type="max")
        y = F.concat(y, F.transpose(y, axes=(0, 1, 3, 2)), dim=1)
        y = F.reshape(y, shape=(0, -1))
        y = F.slice_axis(F.expand_dims(y, axis=1).sum(axis=1), axis=1, begin=0, end=48)
        y = self.dense(F.Dropout(y, p=0.5))
        return F.softmax(F.LeakyReLU(y, slope=0.1), axis=-1)


def _row_sparse_record(shape: tuple, rows: List[int]) -> bytes:
    """A V2 row_sparse float32 record (what MXNet writes for ``nd.sparse.row_sparse_array``)."""
    values = np.arange(len(rows) * int(np.prod(shape[1:])), dtype="<f4")
    sshape = (len(rows),) + tuple(shape[1:])
    out = [struct.pack("<Ii", 0xF993FAC9, 1), struct.pack("<i", len(sshape)),
           b"".join(struct.pack("<q", d) for d in sshape), struct.pack("<i", len(shape)),
           b"".join(struct.pack("<q", d) for d in shape), struct.pack("<iii", 1, 0, 0),
           struct.pack("<i", 6), struct.pack("<i", 1), struct.pack("<q", len(rows)),
           values.tobytes(), np.array(rows, dtype="<i8").tobytes()]
    return b"".join(out)


def _csr_record(rows: int, cols: int) -> bytes:
    """A V2 csr float32 record with one value per row."""
    indptr = np.arange(rows + 1, dtype="<i8")
    indices = (np.arange(rows) % cols).astype("<i8")
    values = np.ones(rows, dtype="<f4")
    out = [struct.pack("<Ii", 0xF993FAC9, 2), struct.pack("<iq", 1, rows), struct.pack("<i", 2),
           struct.pack("<qq", rows, cols), struct.pack("<iii", 1, 0, 0),
           struct.pack("<i", 6), struct.pack("<iq", 1, rows + 1),
           struct.pack("<i", 6), struct.pack("<iq", 1, rows),
           values.tobytes(), indptr.tobytes(), indices.tobytes()]
    return b"".join(out)


def _nd_list(records: List[bytes], names: List[str]) -> bytes:
    head = struct.pack("<QQQ", 0x112, 0, len(records))
    tail = struct.pack("<Q", len(names)) + b"".join(
        struct.pack("<Q", len(n.encode())) + n.encode() for n in names)
    return head + b"".join(records) + tail


class Seeds:
    """Valid files for every loader, built once in ``workdir``."""

    def __init__(self, workdir: str):
        self.dir = workdir
        self.x = mx.nd.array(np.linspace(-1, 1, int(np.prod(INPUT_SHAPE))).reshape(INPUT_SHAPE))
        net = _net()
        net.initialize(mx.init.Xavier())
        net.hybridize()
        net(self.x)
        prefix = os.path.join(workdir, "seed")
        net.export(prefix, 0)
        self.symbol_json = self._read(prefix + "-symbol.json")
        self.export_params = self._read(prefix + "-0000.params")
        mixed = _Mixed(prefix="mixed_")
        mixed.initialize(mx.init.Xavier())
        mixed.hybridize()
        mixed(self.x)
        mixed.export(prefix + "m", 0)
        self.graphs = [(self.symbol_json, self.export_params),
                       (self._read(prefix + "m-symbol.json"), self._read(prefix + "m-0000.params"))]
        net.save_parameters(prefix + ".params")
        self.gluon_params = self._read(prefix + ".params")
        mx.nd.save(prefix + ".nd", {"a": mx.nd.ones((2, 3)), "b": mx.nd.arange(4, dtype="int64"),
                                    "c": mx.nd.zeros((1, 2, 2), dtype="float16")})
        dense = self._read(prefix + ".nd")
        self.nd_files = [dense, _params_format.dumps([np.ones(3, "f4"), np.zeros((2, 2), "i1")]),
                         _nd_list([_row_sparse_record((6, 3), [1, 4]), _csr_record(3, 4)],
                                  ["rsp", "csr"])]
        self.states = []
        for optimizer, params in (("adam", {"lr_scheduler": mx.lr_scheduler.FactorScheduler(2, 0.5, base_lr=0.001)}),
                                  ("sgd", {"momentum": 0.9, "multi_precision": False})):
            tr = gluon.Trainer(net.collect_params(), optimizer, params)
            with mx.autograd.record():
                loss = net(self.x).sum()
            loss.backward()
            tr.step(1)
            tr.save_states(prefix + ".states")
            self.states.append(self._read(prefix + ".states"))
        rec, idx = prefix + ".rec", prefix + ".idx"
        w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
        magic = struct.pack("<I", 0xCED7230A)
        for k, payload in enumerate([b"hello", b"abcd" + magic + b"efgh" + magic + b"ij", b"",
                                     mx.recordio.pack(mx.recordio.IRHeader(2, [1.0, 2.0], 7, 0), b"img")]):
            w.write_idx(k, payload)
        w.close()
        self.rec, self.idx = self._read(rec), self._read(idx)

    @staticmethod
    def _read(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()


def _write(path: str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return path


# -- mutation of the formats' own structure -----------------------------------------------------
def _mutate_params(rng: random.Random, data: bytes, other: bytes) -> bytes:
    return mutate_ints(rng, data) if rng.random() < 0.4 else mutate_bytes(rng, data, other)


def _mutate_states(rng: random.Random, data: bytes, other: bytes) -> bytes:
    """Half the time edit the JSON header and re-pack it (so the tree and the array table, not
    just the magic and length, get exercised)."""
    r = rng.random()
    if r < 0.55 and len(data) > 16:
        (hlen,) = struct.unpack("<Q", data[8:16])
        header = json.loads(data[16:16 + hlen])
        new = json.dumps(mutate_json(rng, header)).encode()
        length = len(new) if rng.random() < 0.95 else rng.randrange(2 ** 16)
        return data[:8] + struct.pack("<Q", length) + new + data[16 + hlen:]
    if r < 0.7:
        return mutate_ints(rng, data)
    return mutate_bytes(rng, data, other)


def _mutate_idx(rng: random.Random, data: bytes) -> bytes:
    lines = data.decode().splitlines()
    if rng.random() < 0.5 and lines:
        i = rng.randrange(len(lines))
        key, _, off = lines[i].partition("\t")
        lines[i] = rng.choice([f"{key}\t-{off}", f"{key}\t{int(off) + rng.choice([1, 2, 4, 8])}",
                               f"{key}\t{2 ** 63}", f"{key}\t{10 ** 5000}", f"{key}", f"x\t{off}",
                               f"{key}\t{off}\t9", f"{key} {off}", "\t", f"{key}\t0x10"])
        return "\n".join(lines).encode() + b"\n"
    return mutate_bytes(rng, data)


# -- the loaders -----------------------------------------------------------------------------
def fuzz_nd_load(rng: random.Random, seeds: Seeds, d: str) -> None:
    seed = rng.choice(seeds.nd_files + [seeds.export_params])
    data = _mutate_params(rng, seed, rng.choice(seeds.nd_files))
    out = mx.nd.load(_write(os.path.join(d, "x.params"), data))
    for a in (out.values() if isinstance(out, dict) else out):
        a.asnumpy()


def fuzz_sym_load(rng: random.Random, seeds: Seeds, d: str) -> None:
    seed = rng.choice(seeds.graphs)[0]
    data = mutate_json_bytes(rng, seed) if rng.random() < 0.8 else mutate_bytes(rng, seed)
    s = mx.sym.load(_write(os.path.join(d, "x-symbol.json"), data))
    s.list_arguments()
    s.tojson()


def fuzz_imports(rng: random.Random, seeds: Seeds, d: str) -> None:
    sym_data, params = rng.choice(seeds.graphs)
    if rng.random() < 0.5:
        sym_data = mutate_json_bytes(rng, sym_data) if rng.random() < 0.85 else mutate_bytes(rng, sym_data)
    else:
        params = _mutate_params(rng, params, seeds.gluon_params)
    sf = _write(os.path.join(d, "x-symbol.json"), sym_data)
    pf = _write(os.path.join(d, "x-0000.params"), params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        block = gluon.SymbolBlock.imports(sf, ["data"], pf)
        out = block(seeds.x)
    for o in (out if isinstance(out, (list, tuple)) else [out]):
        o.asnumpy()


def fuzz_load_parameters(rng: random.Random, seeds: Seeds, d: str) -> None:
    seed = rng.choice([seeds.gluon_params, seeds.export_params])
    data = _mutate_params(rng, seed, seeds.nd_files[0])
    net = _net()
    net.load_parameters(_write(os.path.join(d, "x.params"), data))
    net(seeds.x).asnumpy()


def fuzz_load_states(rng: random.Random, seeds: Seeds, d: str) -> None:
    k = rng.randrange(len(seeds.states))
    data = _mutate_states(rng, seeds.states[k], seeds.states[1 - k])
    net = _net()
    net.initialize(mx.init.Xavier())
    tr = gluon.Trainer(net.collect_params(), rng.choice(["adam", "sgd"]))
    net(seeds.x)
    tr.load_states(_write(os.path.join(d, "x.states"), data))
    with mx.autograd.record():
        loss = net(seeds.x).sum()
    loss.backward()
    tr.step(1)  # a file that loads must give a working step()


def fuzz_recordio(rng: random.Random, seeds: Seeds, d: str) -> None:
    rec, idx = seeds.rec, seeds.idx
    if rng.random() < 0.7:
        rec = mutate_ints(rng, rec) if rng.random() < 0.4 else mutate_bytes(rng, rec)
    else:
        idx = _mutate_idx(rng, idx)
    rf, xf = _write(os.path.join(d, "x.rec"), rec), _write(os.path.join(d, "x.idx"), idx)
    r = mx.recordio.MXIndexedRecordIO(xf, rf, "r")
    try:
        for key in r.keys:
            r.read_idx(key)
    finally:
        r.close()
    seq = mx.recordio.MXRecordIO(rf, "r")
    try:
        for _ in range(10_000):
            item = seq.read()
            if item is None:
                break
            if len(item) >= 24 and rng.random() < 0.5:
                mx.recordio.unpack(item)
    finally:
        seq.close()


TARGETS: Dict[str, Callable[[random.Random, Seeds, str], None]] = {
    "nd.load": fuzz_nd_load,
    "sym.load": fuzz_sym_load,
    "SymbolBlock.imports": fuzz_imports,
    "load_parameters": fuzz_load_parameters,
    "Trainer.load_states": fuzz_load_states,
    "recordio": fuzz_recordio,
}
