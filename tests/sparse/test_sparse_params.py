"""Sparse records in .params files: MXNet's file read exactly, ours byte-identical, real MXNet reads ours.

The fixture ``fixtures/sparse_mxnet.params`` was written by real MXNet 1.9.1 with
``fixtures/make_sparse_params.py``. The cross-check with a live MXNet skips unless a Python with
MXNet 1.9.1 is found (see tests/real_mxnet.py).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.formats import params as fparams

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from real_mxnet import MXNET_PYTHON, SKIP_REASON  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "sparse_mxnet.params")


def _expected():
    csr = np.array([[0, 1.5, 0, 0], [0, 0, 0, 0], [2, 0, 0, -3], [0, 0, 4.25, 0]], dtype=np.float32)
    rsp = np.zeros((5, 3), dtype=np.float64)
    rsp[1] = [1, 2, 3]
    rsp[4] = [-1, 0, 0.5]
    return {"csr": ("csr", csr), "rsp": ("row_sparse", rsp),
            "rsp_empty": ("row_sparse", np.zeros((3, 2), np.float32)),
            "csr_empty": ("csr", np.zeros((2, 3), np.float32)),
            "rsp_1d": ("row_sparse", np.array([0, 7, 0, 9], dtype=np.int64)),
            "dense": ("default", np.arange(6, dtype=np.float32).reshape(2, 3))}


def test_mxnet_fixture_loads_as_sparse_arrays():
    loaded = mx.nd.load(FIXTURE)
    exp = _expected()
    assert list(loaded) == list(exp)
    for name, (stype, dense) in exp.items():
        arr = loaded[name]
        assert arr.stype == stype, name
        assert arr.dtype == dense.dtype, name
        np.testing.assert_array_equal(arr.asnumpy(), dense)
    assert loaded["rsp"].indices.asnumpy().tolist() == [1, 4]
    assert loaded["csr"].indptr.asnumpy().tolist() == [0, 1, 1, 3, 4]
    assert loaded["csr"].indices.asnumpy().tolist() == [1, 0, 3, 2]


def test_save_is_byte_identical_to_mxnet(tmp_path):
    loaded = mx.nd.load(FIXTURE)
    out = tmp_path / "again.params"
    mx.nd.save(str(out), loaded)
    assert out.read_bytes() == open(FIXTURE, "rb").read()
    rebuilt = {name: (mx.nd.array(d, dtype=d.dtype).tostype(st) if st != "default" else mx.nd.array(d))
               for name, (st, d) in _expected().items()}
    rebuilt["rsp_empty"] = mx.nd.sparse.zeros("row_sparse", (3, 2))
    rebuilt["csr_empty"] = mx.nd.sparse.zeros("csr", (2, 3))
    mx.nd.save(str(out), rebuilt)
    assert out.read_bytes() == open(FIXTURE, "rb").read()


def test_formats_layer_dense_and_sparse_views():
    names, dense = fparams.load(FIXTURE)
    assert isinstance(dense[0], np.ndarray) and dense[0].shape == (4, 4)
    names, recs = fparams.load(FIXTURE, sparse=True)
    assert isinstance(recs[0], fparams.SparseRecord) and recs[0].stype == "csr"
    assert fparams.dumps(recs, names) == open(FIXTURE, "rb").read()


def test_hostile_sparse_record_is_refused():
    blob = bytearray(open(FIXTURE, "rb").read())
    # the csr record's first column index (value 1 at a known offset) -> 99: out of range
    names, recs = fparams.loads(bytes(blob), sparse=True)
    bad = fparams.SparseRecord("csr", recs[0].shape, recs[0].data, (recs[0].aux[0], np.array([99, 0, 3, 2])))
    data = fparams.dumps([bad])
    with pytest.raises(MXNetError, match="column index out of range"):
        mx.nd.load_frombuffer(data)


def test_pickle_keeps_sparse_storage():
    import pickle
    r = mx.nd.array([[0, 0], [1, 2]]).tostype("row_sparse")
    back = pickle.loads(pickle.dumps(r))
    assert back.stype == "row_sparse" and back.asnumpy().tolist() == [[0, 0], [1, 2]]


def test_real_mxnet_reads_our_sparse_params(tmp_path):
    py = MXNET_PYTHON
    if py is None:
        pytest.skip(SKIP_REASON)
    rng = np.random.RandomState(0)
    a = rng.randn(6, 5).astype(np.float32)
    a[rng.rand(6, 5) < 0.6] = 0
    b = rng.randn(7, 2)
    b[[0, 3, 4]] = 0
    ours = {"c": mx.nd.array(a).tostype("csr"), "r": mx.nd.array(b, dtype="float64").tostype("row_sparse")}
    path = tmp_path / "ours.params"
    mx.nd.save(str(path), ours)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    script = textwrap.dedent(f"""
        import numpy as np, mxnet as mx
        d = mx.nd.load({str(path)!r})
        assert d["c"].stype == "csr" and d["r"].stype == "row_sparse", (d["c"].stype, d["r"].stype)
        assert np.array_equal(d["c"].asnumpy(), np.load({str(tmp_path / 'a.npy')!r}))
        assert np.array_equal(d["r"].asnumpy(), np.load({str(tmp_path / 'b.npy')!r}))
        assert d["r"].indices.asnumpy().tolist() == [1, 2, 5, 6]
        mx.nd.save({str(tmp_path / 'theirs.params')!r}, d)
        print("ok")
    """)
    out = subprocess.run([py, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
    assert (tmp_path / "theirs.params").read_bytes() == path.read_bytes()
