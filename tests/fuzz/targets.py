"""The loaders under fuzz, each with the valid seed files it mutates.

Seeds are built at start-up (a small Conv/BatchNorm/Dense network exported and saved, an
``nd.save`` file with dense and hand-made sparse records, Trainer states with a scheduler, a
RecordIO pair with a multi-part record, a trained Module's checkpoint and optimizer states,
legacy ``mx.rnn`` checkpoints of fused and unfused LSTM/GRU cells, PNG and JPEG images, dense
and sparse NDArray pickle payloads), so the fuzzer needs no fixtures. Every target writes
the mutated bytes to files and calls the public loader; when the loader accepts the input, the
target also uses the result (forward, ``step()``, read every record), because a file that loads
and then fails at first use is an unclear error too.
"""
from __future__ import annotations

import importlib.util
import io
import json
import os
import random
import struct
import warnings
import zlib
from typing import Callable, Dict, List

import numpy as np

import hybridnet as mx
from hybridnet import gluon
from hybridnet.formats import params as _params_format
from hybridnet.gluon import nn

from .mutate import mutate_bytes, mutate_ints, mutate_json, mutate_json_bytes

__all__ = ["Seeds", "TARGETS", "SHARE", "inputs_for"]

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
        self._module_seeds(prefix)
        self._rnn_seeds(prefix)
        if "image.imdecode" in TARGETS:
            self._image_seeds()
        self._pickle_seeds()

    def _module_seeds(self, prefix: str) -> None:
        """A Module (FC, BatchNorm with aux states, softmax) trained two steps: its checkpoint,
        and its optimizer states under SGD with momentum and under Adam."""
        self.mod_x = mx.nd.array(np.linspace(-1, 1, 2 * MOD_IN).reshape(2, MOD_IN))
        self.mod_y = mx.nd.array([0, 2])
        self.mod_states = []
        for optimizer, params in (("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                  ("adam", {"learning_rate": 0.01})):
            mod = _module()
            mod.init_params(mx.init.Xavier())
            mod.init_optimizer(optimizer=optimizer, optimizer_params=params)
            for _ in range(2):
                mod.forward_backward(self._mod_batch())
                mod.update()
            mod.save_checkpoint(prefix + "mod", 0, save_optimizer_states=True)
            self.mod_states.append((optimizer, self._read(prefix + "mod-0000.states")))
        self.mod_symbol = self._read(prefix + "mod-symbol.json")
        self.mod_params = self._read(prefix + "mod-0000.params")

    def _mod_batch(self) -> "mx.io.DataBatch":
        return mx.io.DataBatch([self.mod_x], [self.mod_y])

    def _rnn_seeds(self, prefix: str) -> None:
        """``save_rnn_checkpoint`` files of unfused LSTM/GRU cells and fused LSTM (two layers) and
        GRU cells, with the cell configuration that loads each."""
        self.rnn = []
        for k, config in enumerate(RNN_CONFIGS):
            cell = _rnn_cell(config)
            with warnings.catch_warnings():  # FusedRNNCell's advice to use TNC
                warnings.simplefilter("ignore")
                out, _ = cell.unroll(RNN_SHAPE[1], mx.sym.Variable("data"), layout="NTC",
                                     merge_outputs=True)
            arg_shapes, _, _ = out.infer_shape(data=RNN_SHAPE)
            rng = np.random.default_rng(k)
            args = {name: mx.nd.array(rng.uniform(-0.5, 0.5, shape).astype("f4"))
                    for name, shape in zip(out.list_arguments(), arg_shapes) if name != "data"}
            p = f"{prefix}rnn{k}"
            mx.rnn.save_rnn_checkpoint(cell, p, 0, out, args, {})
            self.rnn.append((config, self._read(p + "-symbol.json"), self._read(p + "-0000.params")))
        self.rnn_x = mx.nd.array(np.linspace(-1, 1, int(np.prod(RNN_SHAPE))).reshape(RNN_SHAPE))

    def _image_seeds(self) -> None:
        """Small PNG (RGB, gray, RGBA, palette) and JPEG (colour, gray) files, made with Pillow
        as hybridnet decodes with Pillow (an optional dependency: without it the image loader
        is left out of ``TARGETS``)."""
        from PIL import Image
        rng = np.random.default_rng(0)
        rgb = rng.integers(0, 256, (7, 9, 3), dtype=np.uint8)
        images = [(Image.fromarray(rgb, "RGB"), "PNG"), (Image.fromarray(rgb[:, :, 0], "L"), "PNG"),
                  (Image.fromarray(np.dstack([rgb, rgb[:, :, :1]]), "RGBA"), "PNG"),
                  (Image.fromarray(rgb, "RGB").convert("P"), "PNG"),
                  (Image.fromarray(rgb, "RGB"), "JPEG"), (Image.fromarray(rgb[:, :, 1], "L"), "JPEG")]
        self.images = []
        for img, fmt in images:
            out = io.BytesIO()
            img.save(out, format=fmt)
            self.images.append(out.getvalue())

    def _pickle_seeds(self) -> None:
        """``NDArray.__getstate__()['handle']`` of dense arrays (five dtypes) and of row_sparse and csr arrays, each with the class a pickle names."""
        arrays = [mx.nd.array(np.arange(12, dtype="f4").reshape(3, 4)),
                  mx.nd.array(np.arange(6).reshape(2, 3), dtype="int64"),
                  mx.nd.array([1.5, -2.0], dtype="float16"), mx.nd.array([7], dtype="uint8"),
                  mx.nd.array(np.eye(2), dtype="float64"),
                  mx.nd.sparse.row_sparse_array((np.ones((2, 3), "f4"), [1, 4]), shape=(6, 3)),
                  mx.nd.sparse.csr_matrix(np.eye(3, 4, dtype="f4"))]
        self.pickles = [(type(a), bytes(a.__getstate__()["handle"])) for a in arrays]

    @staticmethod
    def _read(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()


MOD_IN = 6
RNN_SHAPE = (2, 3, 4)  # (N, T, C)
# (kind, mode, layers): the cells a legacy mx.rnn checkpoint is saved from and loaded into
RNN_CONFIGS = [("cell", "lstm", 1), ("cell", "gru", 1), ("fused", "lstm", 2), ("fused", "gru", 1)]


def _module() -> "mx.mod.Module":
    """A bound training Module over FC -> BatchNorm -> relu -> FC -> SoftmaxOutput."""
    mod = mx.mod.Module(_module_symbol(), data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", (2, MOD_IN))], label_shapes=[("softmax_label", (2,))])
    return mod


def _module_symbol() -> "mx.sym.Symbol":
    x = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=5, name="fc1")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, name="bn"), act_type="relu")
    x = mx.sym.FullyConnected(x, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def _rnn_cell(config: tuple) -> "mx.rnn.BaseRNNCell":
    kind, mode, layers = config
    if kind == "fused":
        return mx.rnn.FusedRNNCell(4, num_layers=layers, mode=mode, prefix=f"{mode}_")
    return (mx.rnn.LSTMCell if mode == "lstm" else mx.rnn.GRUCell)(4, prefix=f"{mode}_")


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


def _mutate_graph_or_params(rng: random.Random, sym_data: bytes, params: bytes,
                            other: bytes) -> tuple:
    if rng.random() < 0.45:
        return (mutate_json_bytes(rng, sym_data) if rng.random() < 0.85 else mutate_bytes(rng, sym_data)), params
    return sym_data, _mutate_params(rng, params, other)


def fuzz_module_load(rng: random.Random, seeds: Seeds, d: str) -> None:
    sym_data, params = _mutate_graph_or_params(rng, seeds.mod_symbol, seeds.mod_params,
                                               seeds.export_params)
    prefix = os.path.join(d, "m")
    _write(prefix + "-symbol.json", sym_data)
    _write(prefix + "-0000.params", params)
    mod = mx.mod.Module.load(prefix, 0, data_names=["data"], label_names=["softmax_label"])
    training = rng.random() < 0.5
    mod.bind(data_shapes=[("data", (2, MOD_IN))], label_shapes=[("softmax_label", (2,))],
             for_training=training)
    mod.forward(seeds._mod_batch(), is_train=training)
    for o in mod.get_outputs():
        o.asnumpy()


def fuzz_module_states(rng: random.Random, seeds: Seeds, d: str) -> None:
    k = rng.randrange(len(seeds.mod_states))
    optimizer, data = seeds.mod_states[k]
    if rng.random() < 0.2 and len(data) > 16:
        # the array bytes only (the header is most of a small file): values NaN, inf, huge
        (hlen,) = struct.unpack("<Q", data[8:16])
        data = data[:16 + hlen] + mutate_ints(rng, data[16 + hlen:])
    else:
        data = _mutate_states(rng, data, seeds.mod_states[1 - k][1])
    if rng.random() < 0.2:
        optimizer = seeds.mod_states[1 - k][0]  # states of one optimizer loaded into the other
    mod = _module()
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer=optimizer)
    mod.load_optimizer_states(_write(os.path.join(d, "m.states"), data))
    mod.forward_backward(seeds._mod_batch())
    mod.update()  # states that load must give a working update()
    for o in mod.get_outputs():
        o.asnumpy()


def fuzz_rnn_checkpoint(rng: random.Random, seeds: Seeds, d: str) -> None:
    config, sym_data, params = rng.choice(seeds.rnn)
    sym_data, params = _mutate_graph_or_params(rng, sym_data, params, rng.choice(seeds.rnn)[2])
    prefix = os.path.join(d, "r")
    _write(prefix + "-symbol.json", sym_data)
    _write(prefix + "-0000.params", params)
    symbol, args, auxs = mx.rnn.load_rnn_checkpoint(_rnn_cell(config), prefix, 0)
    exe = symbol.simple_bind(mx.cpu(), grad_req="null", data=RNN_SHAPE)
    exe.copy_params_from(args, auxs)
    for o in exe.forward(is_train=False, data=seeds.rnn_x):
        o.asnumpy()


_IMAGE_DIMS = [0, 1, 2, 255, 256, 4096, 9000, 10_000, 16_384, 30_000, 65_535, 65_536, 2 ** 24,
               2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1]


def _mutate_image_size(rng: random.Random, data: bytes) -> bytes:
    """Declare another width/height where the decoder reads it before the pixels (PNG's IHDR,
    with its CRC fixed so that the file gets as far as allocating; JPEG's SOF0/SOF2)."""
    b = bytearray(data)
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        b[16:24] = struct.pack(">II", *(rng.choice(_IMAGE_DIMS) % 2 ** 32 for _ in range(2)))
        if rng.random() < 0.9:
            b[29:33] = struct.pack(">I", zlib.crc32(bytes(b[12:29])))
        return bytes(b)
    for marker in (b"\xff\xc0", b"\xff\xc2"):
        i = data.find(marker)
        if i >= 0 and i + 9 <= len(b):
            b[i + 5:i + 9] = struct.pack(">HH", *(rng.choice(_IMAGE_DIMS) % 2 ** 16 for _ in range(2)))
    return bytes(b)


def fuzz_image(rng: random.Random, seeds: Seeds, d: str) -> None:
    seed = rng.choice(seeds.images)
    r = rng.random()
    if r < 0.15:
        data = _mutate_image_size(rng, seed)
    elif r < 0.4:
        data = mutate_ints(rng, seed)
    else:
        data = mutate_bytes(rng, seed, rng.choice(seeds.images))
    how = rng.randrange(4)
    if how == 0:
        img = mx.image.imdecode(data, flag=rng.choice([0, 1]), to_rgb=rng.random() < 0.5)
    elif how == 1:
        img = mx.image.imdecode(mx.nd.array(np.frombuffer(data, np.uint8), dtype="uint8"))
    elif how == 2:
        img = mx.nd.imdecode(data, channels=rng.choice([1, 3]))
    else:
        img = mx.image.imread(_write(os.path.join(d, "x.img"), data), flag=rng.choice([0, 1]))
    img.asnumpy()
    if how != 2:
        mx.image.imresize(img, 4, 3).asnumpy()


def fuzz_pickle(rng: random.Random, seeds: Seeds, d: str) -> None:
    cls, handle = rng.choice(seeds.pickles)
    data = _mutate_params(rng, handle, rng.choice(seeds.pickles)[1])
    if rng.random() < 0.1:
        cls = rng.choice(seeds.pickles)[0]  # a pickle may name another class than its record's
    # what pickle.loads does for an NDArray (copyreg.__newobj__, then __setstate__), minus pickle
    a = cls.__new__(cls)
    a.__setstate__({"handle": bytearray(data)})
    if a.stype == "default":
        (a.reshape((-1,))[:3] + 1).asnumpy()
        return
    for part in [a.data, a.indices] + ([a.indptr] if a.stype == "csr" else []):
        part.asnumpy()
    # a sparse array's logical shape may be huge and valid (that is what sparse is for);
    # densify it only where the dense array is small, as a user would
    if int(np.prod(a.shape, dtype=object)) <= 1 << 20:
        a.asnumpy()
        a.tostype("default").sum().asnumpy()


TARGETS: Dict[str, Callable[[random.Random, Seeds, str], None]] = {
    "nd.load": fuzz_nd_load,
    "sym.load": fuzz_sym_load,
    "SymbolBlock.imports": fuzz_imports,
    "load_parameters": fuzz_load_parameters,
    "Trainer.load_states": fuzz_load_states,
    "recordio": fuzz_recordio,
    "Module.load": fuzz_module_load,
    "Module.load_optimizer_states": fuzz_module_states,
    "rnn.load_rnn_checkpoint": fuzz_rnn_checkpoint,
    "image.imdecode": fuzz_image,
    "NDArray.__setstate__": fuzz_pickle,
}
if importlib.util.find_spec("PIL") is None:  # hybridnet decodes images with Pillow, if installed
    del TARGETS["image.imdecode"]

# The slow targets (bind and forward of a graph, a trained update) get this share of the inputs
# per loader in the short runs, so that CI's default (500 per loader) stays near 20 s of CPU;
# the long mode gives every loader the full count.
SHARE: Dict[str, float] = {"Module.load": 0.4, "Module.load_optimizer_states": 0.4,
                           "rnn.load_rnn_checkpoint": 0.25}


def inputs_for(name: str, n: int, full: bool = False) -> int:
    """How many inputs loader ``name`` gets when the run asks for ``n`` per loader."""
    return n if full else max(1, round(n * SHARE.get(name, 1.0)))
