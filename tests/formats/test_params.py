"""MXNet 1.9.1 NDArray list files (spec section A): exact bytes, every record kind, hostile input."""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from hybridnet.base import BFLOAT16_NP, MXNetError
from hybridnet.formats import params as P

from fixture_paths import MXNET as _MXNET  # noqa: E402

FIXTURES = Path(_MXNET)
PARAM_FILES = sorted(FIXTURES.glob("*/*.params")) if FIXTURES.is_dir() else []

# spec A.12: mx.nd.save('tiny.params', {'arg:w': mx.nd.array(np.arange(6).reshape(2, 3))})
TINY_HEX = (
    "1201000000000000" "0000000000000000" "0100000000000000"
    "c9fa93f9" "00000000" "02000000" "0200000000000000" "0300000000000000"
    "01000000" "00000000" "00000000"
    "00000000" "0000803f" "00000040" "00004040" "00008040" "0000a040"
    "0100000000000000" "0500000000000000" "6172673a77"
)
TINY = bytes.fromhex(TINY_HEX)


# -- byte builders for hand-made records ------------------------------------------------
def u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def i32(v: int) -> bytes:
    return struct.pack("<i", v)


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def shape64(dims) -> bytes:
    return i32(len(dims)) + b"".join(struct.pack("<q", d) for d in dims)


def header(n: int) -> bytes:
    return u64(0x112) + u64(0) + u64(n)


def names_section(names) -> bytes:
    if names is None:
        return u64(0)
    return u64(len(names)) + b"".join(u64(len(n.encode())) + n.encode() for n in names)


def v2_dense(arr: np.ndarray, flag: int, magic: int = P.V2_MAGIC, ctx=(1, 0)) -> bytes:
    return (u32(magic) + i32(0) + shape64(arr.shape) + i32(ctx[0]) + i32(ctx[1]) + i32(flag)
            + np.ascontiguousarray(arr).tobytes())


def file_of(records, names=None, trailer=b"") -> bytes:
    return header(len(records)) + b"".join(records) + names_section(names) + trailer


# -- the worked example and the writer ----------------------------------------------------
def test_worked_example_bytes():
    data = P.dumps([np.arange(6, dtype="float32").reshape(2, 3)], ["arg:w"])
    assert len(data) == 109
    assert data == TINY


def test_worked_example_loads():
    names, arrays = P.loads(TINY)
    assert names == ["arg:w"]
    assert len(arrays) == 1
    assert arrays[0].dtype == np.float32 and arrays[0].shape == (2, 3)
    np.testing.assert_array_equal(arrays[0], np.arange(6, dtype="float32").reshape(2, 3))


def test_empty_list_and_empty_dict():
    expected = bytes.fromhex("1201000000000000") + bytes(24)
    assert P.dumps([], None) == expected
    assert P.dumps([], []) == expected
    assert P.loads(expected) == (None, [])


def test_unnamed_list():
    a = np.array([1.5, -2.0], dtype="float64")
    data = P.dumps([a, a * 2], None)
    assert data.endswith(u64(0))
    names, arrays = P.loads(data)
    assert names is None
    np.testing.assert_array_equal(arrays[1], a * 2)


@pytest.mark.parametrize("dtype,flag", [
    ("float32", 0), ("float64", 1), ("float16", 2), ("uint8", 3), ("int32", 4), ("int8", 5),
    ("int64", 6), ("bool", 7)])
def test_dtype_round_trip(dtype, flag):
    rng = np.random.RandomState(flag)
    a = (rng.uniform(-100, 100, size=(3, 4, 2)) if dtype != "bool" else rng.rand(3, 4, 2) > 0.5).astype(dtype)
    data = P.dumps([a], ["x"])
    # type flag sits right after magic, stype, shape and context
    off = 24 + 4 + 4 + 4 + 8 * 3 + 8
    assert struct.unpack_from("<i", data, off)[0] == flag
    assert data[off + 4: off + 4 + a.nbytes] == a.tobytes()
    names, (b,) = P.loads(data)
    assert b.dtype == np.dtype(dtype) and b.shape == a.shape
    np.testing.assert_array_equal(a, b)
    assert P.dumps([b], names) == data


def test_bfloat16_round_trip():
    f = np.array([1.0, -2.5, 3.140625, 0.0], dtype=np.float32)
    bits = (f.view(np.uint32) >> 16).astype(np.uint16)
    a = bits.view(BFLOAT16_NP).reshape(2, 2)
    data = P.dumps([a], ["b"])
    assert struct.unpack_from("<i", data, 24 + 4 + 4 + 4 + 16 + 8)[0] == 12
    names, (b,) = P.loads(data)
    assert b.dtype == BFLOAT16_NP and b.shape == (2, 2)
    np.testing.assert_array_equal(b.view(np.uint16), bits.reshape(2, 2))
    restored = (b.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(restored.reshape(-1), f)


def test_zero_d_array_is_written_with_shape_1():
    data = P.dumps([np.array(5.0, dtype=np.float32)], None)
    assert data[32:36] == i32(1) and data[36:44] == struct.pack("<q", 1)
    _, (b,) = P.loads(data)
    assert b.shape == (1,) and b[0] == 5.0


def test_non_contiguous_and_big_endian_inputs():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    ref = P.dumps([np.ascontiguousarray(a.T)], None)
    assert P.dumps([a.T], None) == ref
    assert P.dumps([a.T.astype(">f4")], None) == ref


def test_zero_size_array_round_trip():
    a = np.zeros((0, 3), dtype=np.float32)
    _, (b,) = P.loads(P.dumps([a], None))
    assert b.shape == (0, 3) and b.dtype == np.float32


@pytest.mark.parametrize("dtype", ["int16", "uint16", "uint32", "uint64", "complex64", "float128"
                                   if hasattr(np, "float128") else "complex128", "U3", "O"])
def test_writer_rejects_unsupported_dtypes(dtype):
    a = np.zeros((2,), dtype=dtype)
    with pytest.raises(MXNetError, match="cannot be stored"):
        P.dumps([a], ["bad"])


def test_writer_argument_errors():
    a = np.zeros(2, np.float32)
    with pytest.raises(ValueError, match="2 names for 1 arrays"):
        P.dumps([a], ["a", "b"])
    with pytest.raises(TypeError, match="name 0"):
        P.dumps([a], [3])
    with pytest.raises(TypeError, match="None"):
        P.dumps([None], None)


def test_save_is_atomic_and_loads(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    target = tmp_path / "tiny.params"
    P.save(target, [a], ["arg:w"])
    assert target.read_bytes() == TINY
    assert os.listdir(tmp_path) == ["tiny.params"]
    names, arrays = P.load(str(target))
    assert names == ["arg:w"]
    np.testing.assert_array_equal(arrays[0], a)
    # overwrite in place
    P.save(target, [a * 2], None)
    assert P.load(target)[0] is None
    # a failing save leaves the old file untouched and no temporary behind
    before = target.read_bytes()
    with pytest.raises(MXNetError):
        P.save(target, [np.zeros(2, dtype=np.int16)], None)
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["tiny.params"]


# -- MXNet fixtures -------------------------------------------------------------------------
@pytest.mark.skipif(not PARAM_FILES, reason="MXNet fixtures not available")
@pytest.mark.parametrize("path", PARAM_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_loads_and_redumps_byte_identical(path):
    data = path.read_bytes()
    names, arrays = P.loads(data)
    case = json.loads((path.parent / "case.json").read_text())
    key = "params_saved_names" if path.name == "params_saved.params" else "params_file_names"
    assert names == case[key]
    assert all(a.dtype == np.float32 and a.flags.writeable for a in arrays)
    assert P.dumps(arrays, names) == data


@pytest.mark.skipif(not PARAM_FILES, reason="MXNet fixtures not available")
def test_fixture_values_are_plausible():
    names, arrays = P.load(FIXTURES / "convbn" / "model-0000.params")
    d = dict(zip(names, arrays))
    var = [v for k, v in d.items() if k.startswith("aux:") and k.endswith("running_var")]
    assert var and all(np.all(v > 0) for v in var)  # trained running variances are positive
    assert all(np.all(np.isfinite(a)) for a in arrays)


# -- older record versions and special records ----------------------------------------------
def test_v1_record():
    a = np.arange(6, dtype=np.int32).reshape(3, 2)
    rec = u32(P.V1_MAGIC) + shape64(a.shape) + i32(1) + i32(0) + i32(4) + a.tobytes()
    names, (b,) = P.loads(file_of([rec], ["v1"]))
    assert names == ["v1"]
    np.testing.assert_array_equal(a, b)


def test_pre_v1_record_u32_dims():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    rec = u32(3) + b"".join(u32(d) for d in a.shape) + i32(1) + i32(0) + i32(1) + a.tobytes()
    _, (b, c) = P.loads(file_of([rec, rec]))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_v3_records_scalar_and_zero_size():
    scalar = u32(P.V3_MAGIC) + i32(0) + shape64(()) + i32(1) + i32(0) + i32(0) + np.float32(7.5).tobytes()
    empty = u32(P.V3_MAGIC) + i32(0) + shape64((2, 0)) + i32(1) + i32(0) + i32(6)
    names, (s, e) = P.loads(file_of([scalar, empty], ["s", "e"]))
    assert s.shape == () and s == np.float32(7.5)
    assert e.shape == (2, 0) and e.dtype == np.int64


def test_gpu_context_record_loads():
    a = np.ones((2, 2), np.float32)
    _, (b,) = P.loads(file_of([v2_dense(a, 0, ctx=(2, 1))]))
    np.testing.assert_array_equal(a, b)


def test_trailing_bytes_are_ignored():
    names, arrays = P.loads(TINY + b"garbage after the names")
    assert names == ["arg:w"] and arrays[0].shape == (2, 3)


def test_none_records():
    none_v2 = u32(P.V2_MAGIC) + i32(0) + shape64(())
    none_v3 = u32(P.V3_MAGIC) + i32(0) + i32(-1)
    none_v1 = u32(P.V1_MAGIC) + shape64(())
    a = np.arange(3, dtype=np.float32)
    data = file_of([none_v2, v2_dense(a, 0), none_v3, none_v1], ["n2", "a", "n3", "n1"])
    with pytest.raises(MXNetError, match=r"record 0 \('n2'\).*none"):
        P.loads(data)
    names, arrays = P.loads(data, on_none="skip")
    assert names == ["a"]
    np.testing.assert_array_equal(arrays[0], a)
    names, arrays = P.loads(data, on_none="keep")
    assert names == ["n2", "a", "n3", "n1"]
    assert arrays[0] is None and arrays[2] is None and arrays[3] is None


def rsp_record(shape, rows, values, storage_shape) -> bytes:
    return (u32(P.V2_MAGIC) + i32(1) + shape64(storage_shape) + shape64(shape) + i32(1) + i32(0) + i32(0)
            + i32(6) + shape64((len(rows),)) + values.astype(np.float32).tobytes()
            + np.asarray(rows, dtype=np.int64).tobytes())


def csr_record(shape, indptr, indices, values) -> bytes:
    return (u32(P.V2_MAGIC) + i32(2) + shape64((len(values),)) + shape64(shape) + i32(1) + i32(0) + i32(0)
            + i32(6) + shape64((len(indptr),)) + i32(6) + shape64((len(indices),))
            + np.asarray(values, dtype=np.float32).tobytes() + np.asarray(indptr, dtype=np.int64).tobytes()
            + np.asarray(indices, dtype=np.int64).tobytes())


def test_row_sparse_record_with_stale_storage_shape():
    vals = np.array([[1, 2], [3, 4]], dtype=np.float32)
    # tostype('row_sparse') writes storage shape (0, 2) although two rows follow (spec A.10)
    stale = rsp_record((4, 2), [1, 3], vals, (0, 2))
    exact = rsp_record((4, 2), [1, 3], vals, (2, 2))
    expected = np.zeros((4, 2), np.float32)
    expected[[1, 3]] = vals
    for rec in (stale, exact):
        _, (d, after) = P.loads(file_of([rec, v2_dense(np.ones(2, np.float32), 0)]))
        np.testing.assert_array_equal(d, expected)
        np.testing.assert_array_equal(after, np.ones(2, np.float32))  # the record ended where it should
    _, (d,) = P.loads(file_of([rsp_record((3, 2), [], np.zeros((0, 2)), (0, 2))]))
    np.testing.assert_array_equal(d, np.zeros((3, 2), np.float32))


def test_csr_record():
    dense = np.array([[0, 1, 0], [0, 0, 0], [2, 0, 3]], dtype=np.float32)
    rec = csr_record((3, 3), [0, 1, 1, 3], [1, 0, 2], [1, 2, 3])
    names, (d,) = P.loads(file_of([rec], ["c"]))
    np.testing.assert_array_equal(d, dense)


@pytest.mark.parametrize("rec,pattern", [
    (rsp_record((4, 2), [1, 9], np.ones((2, 2)), (2, 2)), "row index out of range"),
    (rsp_record((4, 2), [1, 1], np.ones((2, 2)), (2, 2)), "duplicate"),
    (rsp_record((4, 2), [1, 2], np.ones((2, 2)), (3, 2)), "values of shape"),
    (csr_record((3, 3), [0, 1, 1, 3], [1, 0, 5], [1, 2, 3]), "column index out of range"),
    (csr_record((3, 3), [0, 2, 1, 3], [1, 0, 2], [1, 2, 3]), "indptr"),
    (csr_record((3, 3), [0, 1, 3], [1, 0, 2], [1, 2, 3]), "indptr has 3 entries"),
])
def test_sparse_records_that_do_not_fit(rec, pattern):
    with pytest.raises(MXNetError, match=pattern):
        P.loads(file_of([rec]))


# -- hostile input -----------------------------------------------------------------------------
def test_every_truncation_of_the_worked_example():
    for n in range(len(TINY)):
        with pytest.raises(MXNetError, match="truncated"):
            P.loads(TINY[:n])


@pytest.mark.parametrize("data,pattern", [
    (b"\x13" + TINY[1:], "magic 0x113 at byte offset 0"),
    (TINY[:28] + i32(3) + TINY[32:], r"record 0 at byte offset 28: unknown storage type 3"),
    (TINY[:60] + i32(8) + TINY[64:], r"record 0 at byte offset 60: type flag 8 \(int16\)"),
    (TINY[:60] + i32(99) + TINY[64:], "unknown type flag 99"),
    (TINY[:36] + struct.pack("<q", -2) + TINY[44:], "negative dimension"),
    (TINY[:32] + i32(-3) + TINY[36:], "negative ndim"),
    (TINY[:88] + u64(3) + TINY[96:], "3 names for 1 arrays"),
    (TINY[:104] + b"\xffrg:w", r"name 0 at byte offset 104: name is not valid UTF-8"),
    (TINY[:24] + u32(0xDEADBEEF) + TINY[28:], "unknown array magic 0xDEADBEEF"),
])
def test_invalid_files(data, pattern):
    with pytest.raises(MXNetError, match=pattern):
        P.loads(data)


def test_huge_counts_do_not_allocate():
    with pytest.raises(MXNetError, match="announces"):
        P.loads(header(2 ** 63))
    huge_ndim = u32(P.V2_MAGIC) + i32(0) + i32(2 ** 31 - 1)
    with pytest.raises(MXNetError, match="truncated"):
        P.loads(file_of([huge_ndim]))
    huge_dims = u32(P.V2_MAGIC) + i32(0) + shape64((2 ** 62, 2 ** 62)) + i32(1) + i32(0) + i32(0)
    with pytest.raises(MXNetError, match="more than an int64 can count"):
        P.loads(file_of([huge_dims]))
    big_dims = u32(P.V2_MAGIC) + i32(0) + shape64((2 ** 31, 2 ** 31)) + i32(1) + i32(0) + i32(0)
    with pytest.raises(MXNetError, match="truncated"):
        P.loads(file_of([big_dims]))
    zero_but_huge = u32(P.V3_MAGIC) + i32(0) + shape64((0, 2 ** 62, 2 ** 62)) + i32(1) + i32(0) + i32(0)
    try:
        _, (z,) = P.loads(file_of([zero_but_huge]))
        assert z.size == 0
    except MXNetError:
        pass
    with pytest.raises(MXNetError, match="names for 1 arrays"):
        P.loads(TINY[:88] + u64(2 ** 60) + TINY[96:])  # name count
    many = file_of([v2_dense(np.ones(1, np.float32), 0)] * 2)[:-8] + u64(2)
    with pytest.raises(MXNetError, match="truncated"):
        P.loads(many)
    with pytest.raises(MXNetError, match="truncated"):
        P.loads(TINY[:96] + u64(2 ** 60) + TINY[104:])  # name length


def test_sparse_densify_is_bounded(monkeypatch):
    huge = rsp_record((2 ** 40, 2), [1, 3], np.ones((2, 2)), (2, 2))
    with pytest.raises(MXNetError, match="MAX_DENSE_BYTES"):
        P.loads(file_of([huge]))
    small = file_of([rsp_record((4, 2), [1, 3], np.ones((2, 2)), (2, 2))])
    assert P.loads(small)[1][0].shape == (4, 2)
    monkeypatch.setattr(P, "MAX_DENSE_BYTES", 16)
    with pytest.raises(MXNetError, match="MAX_DENSE_BYTES"):
        P.loads(small)
    # the environment variable wins over the module constant; 32 bytes is exactly (4, 2) float32
    monkeypatch.setenv("HYBRIDNET_MAX_DENSE_BYTES", "32")
    assert P.loads(small)[1][0].shape == (4, 2)
    monkeypatch.setenv("HYBRIDNET_MAX_DENSE_BYTES", "31")
    with pytest.raises(MXNetError, match="31 bytes"):
        P.loads(small)
    monkeypatch.setenv("HYBRIDNET_MAX_DENSE_BYTES", "lots")
    with pytest.raises(MXNetError, match="not a byte count"):
        P.loads(small)


def test_default_dense_cap_is_2_gib():
    assert P.MAX_DENSE_BYTES == 2 ** 31
    just_over = rsp_record((2 ** 29 + 1,), [1], np.ones(1), (1,))  # float32: 2 GiB + 4 bytes
    with pytest.raises(MXNetError, match="2147483652 bytes once densified"):
        P.loads(file_of([just_over]))


def test_loads_rejects_non_bytes():
    with pytest.raises(TypeError):
        P.loads("not bytes")  # type: ignore[arg-type]


def _fuzz_inputs():
    hand = file_of([rsp_record((4, 2), [1, 3], np.ones((2, 2)), (0, 2)),
                    csr_record((3, 3), [0, 1, 1, 3], [1, 0, 2], [1, 2, 3]),
                    u32(P.V1_MAGIC) + shape64((2,)) + i32(1) + i32(0) + i32(7) + b"\x01\x00",
                    u32(2) + u32(1) + u32(2) + i32(1) + i32(0) + i32(3) + b"\x05\x06"], ["r", "c", "b", "p"])
    out = [TINY, hand]
    for case in ("broadcast_ops", "convbn", "embedding_rnn_free"):
        p = FIXTURES / case / "model-0000.params"
        if p.exists():
            out.append(p.read_bytes())
    return out


def test_fuzz_truncations_and_byte_flips():
    rng = np.random.RandomState(1234)
    for base in _fuzz_inputs():
        cuts = set(rng.randint(0, len(base), size=60).tolist()) | set(range(min(len(base), 80)))
        for n in cuts:
            try:
                P.loads(base[:n])
            except MXNetError:
                pass
        for _ in range(300):
            mutated = bytearray(base)
            for _ in range(rng.randint(1, 4)):
                pos = rng.randint(0, len(base)) if rng.rand() < 0.5 else rng.randint(0, min(len(base), 128))
                mutated[pos] = rng.randint(0, 256)
            for policy in ("error", "keep"):
                try:
                    names, arrays = P.loads(bytes(mutated), on_none=policy)
                except MXNetError:
                    continue
                assert names is None or len(names) == len(arrays)


def test_load_checks_the_header_before_reading_the_file(tmp_path):
    """A wrong multi-GiB file is refused after one small read (MXNet refuses it at once)."""
    import tracemalloc
    big = tmp_path / "wrong.params"
    with open(big, "wb") as f:
        f.write(b"not a params file")
        f.truncate(3 << 30)  # sparse: costs no disk
    tracemalloc.start()
    try:
        with pytest.raises(MXNetError, match=r"wrong\.params: not an MXNet NDArray list"):
            P.load(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 << 20


def test_load_refuses_a_count_the_file_size_cannot_hold(tmp_path):
    path = tmp_path / "count.params"
    path.write_bytes(struct.pack("<QQQ", P.LIST_MAGIC, 0, 1 << 40) + b"\0" * 64)
    with pytest.raises(MXNetError, match=r"announces 1099511627776 arrays, but only 64 bytes follow"):
        P.load(path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_load_of_dev_zero_returns_at_once():
    with pytest.raises(MXNetError, match=r"/dev/zero: not an MXNet NDArray list .*magic 0x0"):
        P.load("/dev/zero")


def test_sparse_record_whose_size_overflows_int64_is_refused(tmp_path):
    # torch raised "numel: integer multiplication overflow" when the record became an array
    import hybridnet as mx
    rec = P.SparseRecord("row_sparse", (2 ** 40, 2 ** 40), np.zeros((0, 2 ** 40), np.float32),
                         (np.zeros((0,), np.int64),))
    path = tmp_path / "overflow.params"
    path.write_bytes(P.dumps([rec], ["w"]))
    pattern = r"shape \(1099511627776, 1099511627776\) has 1\.209e\+24 elements, more than an int64 can count"
    with pytest.raises(MXNetError, match=pattern):
        mx.nd.load(str(path))
    with pytest.raises(MXNetError, match=pattern):  # the bytes of an NDArray pickle take the same path
        P.load_record(P.dump_record(rec), sparse=True)
