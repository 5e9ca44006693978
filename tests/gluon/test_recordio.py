"""mx.recordio: byte-exact MXNet RecordIO framing, indexed access, IRHeader packing, errors."""
import os
import pickle
import struct

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import recordio
from hybridnet.base import MXNetError

MAGIC = 0xCED7230A


def _part(cflag, payload):
    """One framed part as dmlc-core writes it (independent of the implementation)."""
    pad = (-len(payload)) % 4
    return struct.pack("<II", MAGIC, (cflag << 29) | len(payload)) + payload + b"\0" * pad


def test_write_bytes_exact(tmp_path):
    f = str(tmp_path / "a.rec")
    w = recordio.MXRecordIO(f, "w")
    records = [b"abc", b"", b"abcd", b"x" * 9]
    for r in records:
        w.write(r)
    w.close()
    expected = b"".join(_part(0, r) for r in records)
    assert open(f, "rb").read() == expected
    assert len(expected) == (8 + 4) + 8 + (8 + 4) + (8 + 12)


def test_roundtrip_and_reset(tmp_path):
    f = str(tmp_path / "b.rec")
    rng = np.random.RandomState(0)
    records = [rng.bytes(n) for n in [0, 1, 2, 3, 4, 5, 7, 8, 100, 1001]]
    w = recordio.MXRecordIO(f, "w")
    for r in records:
        w.write(r)
    w.close()
    r = recordio.MXRecordIO(f, "r")
    got = []
    while True:
        item = r.read()
        if item is None:
            break
        got.append(item)
    assert got == records
    assert r.read() is None
    r.reset()
    assert r.read() == records[0]
    r.close()


def test_magic_inside_payload_is_split_into_parts(tmp_path):
    m = struct.pack("<I", MAGIC)
    # magic at aligned offsets 4 and 12 -> parts (1, 'AAAA'), (2, 'BBBB'), (3, 'CC');
    # the magic at unaligned offset 17 stays inside the last part.
    payload = b"AAAA" + m + b"BBBB" + m + b"C" + m + b"C"
    assert payload.index(m, 13) == 17
    f = str(tmp_path / "c.rec")
    w = recordio.MXRecordIO(f, "w")
    w.write(payload)
    w.write(m)            # a record that is only the magic: empty first and last part
    w.write(b"tail")
    w.close()
    expected = (_part(1, b"AAAA") + _part(2, b"BBBB") + _part(3, b"C" + m + b"C")
                + _part(1, b"") + _part(3, b"") + _part(0, b"tail"))
    assert open(f, "rb").read() == expected
    r = recordio.MXRecordIO(f, "r")
    assert r.read() == payload
    assert r.read() == m
    assert r.read() == b"tail"
    assert r.read() is None


def test_reads_hand_built_file(tmp_path):
    m = struct.pack("<I", MAGIC)
    f = tmp_path / "d.rec"
    f.write_bytes(_part(0, b"hello") + _part(1, b"12345678") + _part(3, b"9") + _part(0, b"!"))
    r = recordio.MXRecordIO(str(f), "r")
    assert r.read() == b"hello"
    assert r.read() == b"12345678" + m + b"9"
    assert r.read() == b"!"
    assert r.read() is None


def test_indexed_recordio(tmp_path):
    idx, rec = str(tmp_path / "e.idx"), str(tmp_path / "e.rec")
    w = recordio.MXIndexedRecordIO(idx, rec, "w")
    payloads = {i: (b"rec%d-" % i) * (i + 1) for i in range(6)}
    offsets = []
    for i in range(6):
        offsets.append(w.tell())
        w.write_idx(i, payloads[i])
    w.close()
    lines = open(idx).read().splitlines()
    assert lines == [f"{i}\t{offsets[i]}" for i in range(6)]
    # offsets are those of the framed records laid end to end
    sizes = [len(_part(0, payloads[i])) for i in range(6)]
    assert offsets == [sum(sizes[:i]) for i in range(6)]

    r = recordio.MXIndexedRecordIO(idx, rec, "r")
    assert r.keys == list(range(6))
    for k in [3, 0, 5, 1, 1, 4, 2]:
        assert r.read_idx(k) == payloads[k]
    r.seek(2)
    assert r.read() == payloads[2]
    assert r.read() == payloads[3]  # sequential read continues after a seek
    with pytest.raises(KeyError):
        r.read_idx(17)
    # a pickled reader reopens the file
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.read_idx(4) == payloads[4]
    r.close()
    r2.close()


def test_writer_is_atomic(tmp_path):
    f = str(tmp_path / "f.rec")
    w = recordio.MXRecordIO(f, "w")
    w.write(b"data")
    assert not os.path.exists(f)          # only a temp file so far
    w.close()
    assert os.path.exists(f)
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []


def test_flags_and_modes(tmp_path):
    f = str(tmp_path / "g.rec")
    with pytest.raises(ValueError):
        recordio.MXRecordIO(f, "x")
    w = recordio.MXRecordIO(f, "w")
    with pytest.raises(MXNetError):
        w.read()
    w.write(b"1")
    w.close()
    r = recordio.MXRecordIO(f, "r")
    with pytest.raises(MXNetError):
        r.write(b"2")
    with pytest.raises(MXNetError, match="cannot open"):
        recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")


def test_corrupted_and_truncated(tmp_path):
    good = _part(0, b"first!") + _part(0, b"second")
    off2 = len(_part(0, b"first!"))
    bad = bytearray(good)
    bad[off2] ^= 0xFF
    f = tmp_path / "bad.rec"
    f.write_bytes(bytes(bad))
    r = recordio.MXRecordIO(str(f), "r")
    assert r.read() == b"first!"
    with pytest.raises(MXNetError, match=f"offset {off2}"):
        r.read()

    f.write_bytes(good[:-3])        # payload cut short
    r = recordio.MXRecordIO(str(f), "r")
    r.read()
    with pytest.raises(MXNetError, match=f"offset {off2}.*truncated"):
        r.read()

    f.write_bytes(good + b"\x0a\x23")   # header cut short
    r = recordio.MXRecordIO(str(f), "r")
    r.read(), r.read()
    with pytest.raises(MXNetError, match=f"offset {len(good)}"):
        r.read()

    f.write_bytes(_part(1, b"abcd"))     # multi-part record without its end
    r = recordio.MXRecordIO(str(f), "r")
    with pytest.raises(MXNetError, match="multi-part"):
        r.read()


def test_pack_unpack_scalar_label():
    h = recordio.IRHeader(0, 3.5, 7, 9)
    s = recordio.pack(h, b"payload")
    assert len(s) == 24 + 7
    flag, label, id_, id2 = struct.unpack("<IfQQ", s[:24])
    assert (flag, label, id_, id2) == (0, 3.5, 7, 9)
    h2, body = recordio.unpack(s)
    assert body == b"payload"
    assert h2 == recordio.IRHeader(0, 3.5, 7, 9)


def test_pack_unpack_array_label():
    label = [1.0, 2.5, -3.0]
    s = recordio.pack(recordio.IRHeader(0, label, 1, 0), b"xy")
    assert struct.unpack("<I", s[:4])[0] == 3                       # flag = number of labels
    assert np.frombuffer(s[24:36], np.float32).tolist() == label     # labels before payload
    h, body = recordio.unpack(s)
    assert h.flag == 3 and body == b"xy"
    np.testing.assert_array_equal(h.label, np.array(label, np.float32))
    assert h.label.dtype == np.float32


def test_pack_img_roundtrip(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.RandomState(1)
    img = rng.randint(0, 256, size=(6, 5, 3)).astype(np.uint8)
    s = recordio.pack_img(recordio.IRHeader(0, 2.0, 3, 0), img, quality=3, img_fmt=".png")
    h, out = recordio.unpack_img(s)
    assert h.label == 2.0 and h.id == 3
    np.testing.assert_array_equal(out, img)          # PNG is lossless, channel order kept (BGR)
    h, gray = recordio.unpack_img(s, iscolor=0)
    assert gray.shape == (6, 5)
    # flat colour survives JPEG closely
    flat = np.full((16, 16, 3), (10, 120, 230), np.uint8)
    h, out = recordio.unpack_img(recordio.pack_img((0, 1.0, 0, 0), flat, quality=95), iscolor=1)
    assert out.shape == (16, 16, 3)
    assert np.abs(out.astype(int) - flat).max() <= 4
    assert out[..., 2].mean() > out[..., 0].mean()   # still BGR: channel 2 was the bright one


def test_namespace():
    assert mx.recordio.MXRecordIO is recordio.MXRecordIO


# -- hostile .idx / .rec files (issue 10) ---------------------------------------------------------
def _indexed_pair(tmp_path, n=3):
    idx, rec = str(tmp_path / "h.idx"), str(tmp_path / "h.rec")
    w = recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(n):
        w.write_idx(i, b"payload%d" % i)
    w.close()
    return idx, rec


@pytest.mark.parametrize("line, match", [
    (b"1\t-16\n", r"line 2 of .*h\.idx.* byte offset -16 for key 1, outside the record file"),
    (b"1\t99999999999999999999\n", r"line 2 .*byte offset 99999999999999999999"),
    (b"1\t" + b"9" * 5000 + b"\n", r"line 2 .* is not 'key<TAB>offset'"),
    (b"1\tfoo\n", r"line 2 .* is not 'key<TAB>offset'"),
    (b"\xff\xfe\t0\n", r"h\.idx.* is not UTF-8 text .*byte offset 4, line 2"),
])
def test_bad_index_lines_name_the_file_and_line(tmp_path, line, match):
    idx, rec = _indexed_pair(tmp_path)
    lines = open(idx, "rb").read().splitlines(keepends=True)
    lines[1] = line
    open(idx, "wb").write(b"".join(lines))
    with pytest.raises(MXNetError, match=match):
        recordio.MXIndexedRecordIO(idx, rec, "r")


def test_index_offset_into_the_middle_of_a_record(tmp_path):
    idx, rec = _indexed_pair(tmp_path)
    text = open(idx).read().replace("\t0\n", "\t4\n", 1)
    open(idx, "w").write(text)
    r = recordio.MXIndexedRecordIO(idx, rec, "r")
    with pytest.raises(MXNetError, match=r"h\.rec.*bad magic number .* at byte offset 4"):
        r.read_idx(0)
    assert r.read_idx(1) == b"payload1"
    r.close()


def test_unknown_part_flag_and_huge_length(tmp_path):
    f = tmp_path / "flag.rec"
    f.write_bytes(struct.pack("<II", MAGIC, (5 << 29) | 4) + b"abcd")
    with pytest.raises(MXNetError, match="byte offset 0 has the unknown part flag 5"):
        recordio.MXRecordIO(str(f), "r").read()
    f.write_bytes(struct.pack("<II", MAGIC, (1 << 29) - 1) + b"abcd")
    with pytest.raises(MXNetError, match="declares 536870911 bytes but the file ends after 4"):
        recordio.MXRecordIO(str(f), "r").read()


def test_written_files_get_the_umask_and_stale_temps_are_removed(tmp_path):
    old = os.umask(0o022)
    try:
        idx, rec = _indexed_pair(tmp_path)
    finally:
        os.umask(old)
    assert oct(os.stat(rec).st_mode & 0o777) == oct(0o644)
    assert oct(os.stat(idx).st_mode & 0o777) == oct(0o644)
    # a writer killed mid-write leaves its temp files; the next writer to the same path removes them
    dead = 2 ** 22 + 12345  # above Linux's default pid_max: no such process
    stale = [tmp_path / f".h.rec.{dead}-0123456789ab.tmp", tmp_path / f".h.idx.{dead}-0123456789ab.tmp"]
    for p in stale:
        p.write_bytes(b"half")
    other = tmp_path / ".h.rec.notours.tmp"
    other.write_bytes(b"keep")
    _indexed_pair(tmp_path)
    assert not any(p.exists() for p in stale) and other.exists()
