"""gluon.utils: split_data / split_and_load, clip_global_norm, sha1, download (local only)."""
import hashlib
import os
import pathlib

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.gluon import utils


def test_split_data_even_and_uneven():
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    parts = utils.split_data(mx.nd.array(x), 3)
    assert [p.shape for p in parts] == [(2, 4)] * 3
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x)
    with pytest.raises(ValueError, match="cannot be evenly split into 4 slices"):
        utils.split_data(mx.nd.array(x), 4)
    parts = utils.split_data(mx.nd.array(x), 4, even_split=False)
    assert [p.shape[0] for p in parts] == [2, 2, 1, 1]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x)
    parts = utils.split_data(mx.nd.array(x), 2, batch_axis=1)
    assert [p.shape for p in parts] == [(6, 2), (6, 2)]
    np.testing.assert_array_equal(parts[1].asnumpy(), x[:, 2:])
    parts = utils.split_data(mx.nd.array(x[:2]), 5, even_split=False)
    assert len(parts) == 2 and [p.shape[0] for p in parts] == [1, 1]
    assert len(utils.split_data(mx.nd.array(x), 1)) == 1


def test_split_and_load():
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    ctxs = [mx.cpu(0), mx.cpu(1)]
    parts = utils.split_and_load(x, ctxs)             # NumPy input is converted
    assert len(parts) == 2 and all(isinstance(p, mx.nd.NDArray) for p in parts)
    np.testing.assert_array_equal(parts[1].asnumpy(), x[2:])
    one = utils.split_and_load(mx.nd.array(x), [mx.cpu()])
    assert len(one) == 1 and one[0].shape == (4, 2)


def test_clip_global_norm():
    rng = np.random.RandomState(0)
    arrs_np = [rng.randn(3, 4).astype(np.float32), rng.randn(5).astype(np.float32)]
    norm = np.sqrt(sum((a.astype(np.float64) ** 2).sum() for a in arrs_np))
    arrs = [mx.nd.array(a) for a in arrs_np]
    total = utils.clip_global_norm(arrs, 1.0)
    assert isinstance(total, float)
    np.testing.assert_allclose(total, norm, rtol=1e-5)
    scale = 1.0 / (norm + 1e-8)
    for a, ref in zip(arrs, arrs_np):
        np.testing.assert_allclose(a.asnumpy(), ref * scale, rtol=1e-5)
    np.testing.assert_allclose(np.sqrt(sum((a.asnumpy() ** 2).sum() for a in arrs)), 1.0, rtol=1e-5)
    # below the threshold: unchanged; check_isfinite=False returns an NDArray
    arrs = [mx.nd.array(a) for a in arrs_np]
    total = utils.clip_global_norm(arrs, 100.0, check_isfinite=False)
    assert isinstance(total, mx.nd.NDArray)
    np.testing.assert_allclose(total.asnumpy(), [norm], rtol=1e-5)
    for a, ref in zip(arrs, arrs_np):
        np.testing.assert_array_equal(a.asnumpy(), ref)
    # NaN warns
    with pytest.warns(UserWarning, match="nan or inf"):
        utils.clip_global_norm([mx.nd.array([np.nan, 1.0])], 1.0)


def test_clip_global_norm_float64_and_grad_arrays():
    a = mx.nd.array(np.array([3.0, 4.0]), dtype="float64")
    a.attach_grad()
    total = utils.clip_global_norm([a], 2.5)
    assert total == pytest.approx(5.0)
    np.testing.assert_allclose(a.asnumpy(), [1.5, 2.0], rtol=1e-7)
    assert a.dtype == np.float64


def test_check_sha1_and_download(tmp_path):
    src = tmp_path / "src" / "weights.bin"
    src.parent.mkdir()
    payload = b"hybridnet" * 1000
    src.write_bytes(payload)
    sha = hashlib.sha1(payload).hexdigest()
    assert utils.check_sha1(str(src), sha)
    assert utils.check_sha1(str(src), sha[:8])          # prefix, like MXNet
    assert not utils.check_sha1(str(src), "0" * 40)

    dst_dir = tmp_path / "dst"
    dst_dir.mkdir()
    out = utils.download(src.as_uri(), path=str(dst_dir), sha1_hash=sha)
    assert out == str(dst_dir / "weights.bin")
    assert pathlib.Path(out).read_bytes() == payload
    out2 = utils.download(str(src), path=str(tmp_path / "named.bin"))   # a plain local path
    assert pathlib.Path(out2).read_bytes() == payload
    # already present with the right hash: no fetching needed, even for an http URL
    assert utils.download("https://example.com/x/weights.bin", path=str(dst_dir), sha1_hash=sha) == out
    with pytest.raises(MXNetError, match="no network access"):
        utils.download("https://example.com/x/other.bin", path=str(dst_dir))
    with pytest.raises(MXNetError, match="no network access"):
        utils.download("https://example.com/x/weights.bin", path=str(dst_dir), overwrite=True)
    with pytest.raises(UserWarning, match="hash does not match"):
        utils.download(src.as_uri(), path=str(tmp_path / "bad.bin"), sha1_hash="1" * 40)
    with pytest.raises(MXNetError, match="does not exist"):
        utils.download((tmp_path / "missing.bin").as_uri(), path=str(dst_dir))
    assert [p for p in os.listdir(dst_dir) if p.endswith(".tmp")] == []


def test_replace_file_and_helpers(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("new")
    b.write_text("old")
    utils.replace_file(str(a), str(b))
    assert b.read_text() == "new" and not a.exists()
    assert utils.shape_is_known((2, 3))
    assert not utils.shape_is_known((2, 0))
    assert not utils.shape_is_known(None)
    assert not utils.shape_is_known(())
    assert utils._indent("a\nb\nc", 2) == "a\n  b\n  c"
    assert utils._indent("a", 2) == "a"
    assert utils._brief_print_list(list("abcdefghij")) == "'a', 'b', 'c', ..., 'g', 'h', 'i', 'j'"  # MXNet: lst[-limit // 2:]


def test_hook_handle():
    hooks = {}
    h = utils.HookHandle()
    fn = lambda *a: None  # noqa: E731
    h.attach(hooks, fn)
    assert list(hooks.values()) == [fn]
    with pytest.raises(MXNetError):
        h.attach(hooks, fn)
    with h:
        pass
    assert hooks == {}
