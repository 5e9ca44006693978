"""gluon.data: datasets, samplers, batchify, DataLoader (incl. worker processes), vision datasets."""
import gzip
import os
import struct
import time

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import recordio
from hybridnet.base import MXNetError
from hybridnet.gluon import data as gdata
from hybridnet.gluon.data import batchify
from hybridnet.gluon.data.vision import datasets as vdatasets


def _np(x):
    return x.asnumpy() if isinstance(x, mx.nd.NDArray) else np.asarray(x)


# -- datasets ----------------------------------------------------------------------------------
def test_simple_dataset_ops():
    ds = gdata.SimpleDataset(list(range(10)))
    assert len(ds) == 10 and ds[3] == 3
    t = ds.transform(lambda x: x * 10)
    assert [t[i] for i in range(len(t))] == [i * 10 for i in range(10)]
    eager = ds.transform(lambda x: x + 1, lazy=False)
    assert isinstance(eager, gdata.SimpleDataset) and eager[9] == 10
    f = ds.filter(lambda x: x % 3 == 0)
    assert [f[i] for i in range(len(f))] == [0, 3, 6, 9]
    shards = [ds.shard(3, i) for i in range(3)]
    assert [[s[j] for j in range(len(s))] for s in shards] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert len(ds.take(4)) == 4 and ds.take(4)[3] == 3
    assert len(ds.take(None)) == 10 and len(ds.take(100)) == 10
    s = ds.sample(gdata.SequentialSampler(3, start=5))
    assert [s[i] for i in range(3)] == [5, 6, 7]
    with pytest.raises(TypeError):
        ds.sample([1, 2])


def test_transform_unpacks_tuples_and_transform_first():
    ds = gdata.SimpleDataset([(i, -i) for i in range(4)])
    t = ds.transform(lambda a, b: a - b)
    assert [t[i] for i in range(4)] == [0, 2, 4, 6]
    tf = ds.transform_first(lambda a: a * 100)
    assert tf[2] == (200, -2)
    single = gdata.SimpleDataset([1, 2]).transform_first(lambda a: a + 1)
    assert single[1] == 3


def test_array_dataset():
    x = mx.nd.array(np.arange(12).reshape(6, 2))
    y = mx.nd.array(np.arange(6))
    z = np.arange(6) * 2
    ds = gdata.ArrayDataset(x, y, z)
    assert len(ds) == 6
    a, b, c = ds[4]
    np.testing.assert_array_equal(a.asnumpy(), [8, 9])
    assert not isinstance(b, mx.nd.NDArray) and b == 4.0   # 1-d NDArray -> NumPy scalar
    assert c == 8
    single = gdata.ArrayDataset(z)
    assert single[2] == 4
    with pytest.raises(ValueError, match=r"array\[2\] has 5"):
        gdata.ArrayDataset(x, y, np.arange(5))


# -- samplers ------------------------------------------------------------------------------------
def test_samplers():
    assert list(gdata.SequentialSampler(4)) == [0, 1, 2, 3]
    assert list(gdata.SequentialSampler(3, 2)) == [2, 3, 4]
    np.random.seed(3)
    r = list(gdata.RandomSampler(20))
    assert sorted(r) == list(range(20)) and r != list(range(20))
    np.random.seed(3)
    assert list(gdata.RandomSampler(20)) == r
    fs = gdata.FilterSampler(lambda v: v > 2, [5, 1, 3, 0, 9])
    assert list(fs) == [0, 2, 4] and len(fs) == 3
    from hybridnet.gluon.data.sampler import IntervalSampler
    assert list(IntervalSampler(7, 3)) == [0, 3, 6, 1, 4, 2, 5]
    assert list(IntervalSampler(7, 3, rollover=False)) == [0, 3, 6]


def test_batch_sampler_last_batch():
    seq = gdata.SequentialSampler(10)
    keep = gdata.BatchSampler(seq, 3, "keep")
    assert list(keep) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(keep) == 4
    disc = gdata.BatchSampler(seq, 3, "discard")
    assert list(disc) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(disc) == 3
    roll = gdata.BatchSampler(seq, 3, "rollover")
    assert len(roll) == 3
    assert list(roll) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(roll) == 3            # (1 carried + 10) // 3
    assert list(roll) == [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    assert list(roll)[0] == [8, 9, 0]
    with pytest.raises(ValueError, match="last_batch"):
        gdata.BatchSampler(seq, 3, "drop")


# -- batchify ---------------------------------------------------------------------------------------
def test_default_batchify_fn():
    f = gdata.default_batchify_fn
    b = f([mx.nd.array([1, 2]), mx.nd.array([3, 4])])
    np.testing.assert_array_equal(b.asnumpy(), [[1, 2], [3, 4]])
    assert b.dtype == np.float32
    assert f([1, 2, 3]).dtype == np.int64
    assert f([1.5, 2.0]).dtype == np.float64
    assert f([np.float32(1), np.float32(2)]).dtype == np.float32
    nb = f([np.ones((2, 3), np.uint8), np.zeros((2, 3), np.uint8)])
    assert nb.shape == (2, 2, 3) and nb.dtype == np.uint8
    data, (lab, extra) = f([(mx.nd.array([i]), (i, 2 * i)) for i in range(3)])
    np.testing.assert_array_equal(data.asnumpy(), [[0], [1], [2]])
    np.testing.assert_array_equal(lab.asnumpy(), [0, 1, 2])
    np.testing.assert_array_equal(extra.asnumpy(), [0, 2, 4])
    # a list of numbers is one field, as in MXNet
    np.testing.assert_array_equal(f([[1, 2], [3, 4]]).asnumpy(), [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="shape"):
        f([mx.nd.zeros((2,)), mx.nd.zeros((3,))])


def test_batchify_stack_pad_append_group():
    st = batchify.Stack()([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(st.asnumpy(), [[1, 2, 3], [4, 5, 6]])
    p = batchify.Pad()([[1, 2, 3, 4], [4, 5, 6], [8, 2]])
    np.testing.assert_array_equal(p.asnumpy(), [[1, 2, 3, 4], [4, 5, 6, 0], [8, 2, 0, 0]])
    assert p.dtype == np.int64
    p, length = batchify.Pad(pad_val=-1, ret_length=True, dtype="float32")(
        [np.array([[1, 2, 3, 4], [5, 6, 7, 8]]), np.array([[5, 8], [1, 2]])])
    assert p.dtype == np.float32 and length.dtype == np.int32
    np.testing.assert_array_equal(p.asnumpy(), [[[1, 2, 3, 4], [5, 6, 7, 8]],
                                                [[5, 8, -1, -1], [1, 2, -1, -1]]])
    np.testing.assert_array_equal(length.asnumpy(), [2, 2])
    _, length = batchify.Pad(axis=1, ret_length=True)([np.zeros((2, 3)), np.zeros((2, 5))])
    np.testing.assert_array_equal(length.asnumpy(), [3, 5])
    r = batchify.Pad(round_to=4)([[1, 2, 3, 4, 5], [1]])
    assert r.shape == (2, 8)
    nd_pad = batchify.Pad(val=7)([mx.nd.array([1]), mx.nd.array([1, 2])])
    np.testing.assert_array_equal(nd_pad.asnumpy(), [[1, 7], [1, 2]])
    app = batchify.Append()([[1, 2, 3, 4], [4, 5, 6]])
    assert [a.shape for a in app] == [(1, 4), (1, 3)]
    app = batchify.Append(expand=False)([mx.nd.array([1, 2])])
    assert app[0].shape == (2,)
    g = batchify.Group(batchify.Pad(), batchify.Stack())([([1, 2, 3, 4], 0), ([5, 7], 1)])
    assert isinstance(g, tuple) and len(g) == 2
    np.testing.assert_array_equal(g[0].asnumpy(), [[1, 2, 3, 4], [5, 7, 0, 0]])
    np.testing.assert_array_equal(g[1].asnumpy(), [0, 1])
    assert batchify.Tuple is batchify.Group
    g2 = batchify.Group([batchify.Stack(), batchify.AsList()])([(1, "a"), (2, "b")])
    assert g2[1] == ["a", "b"]
    with pytest.raises(ValueError):
        batchify.Group(batchify.Stack())([(1, 2)])


# -- DataLoader --------------------------------------------------------------------------------------
def _dataset(n=23):
    x = np.arange(n * 4, dtype=np.float32).reshape(n, 2, 2)
    y = np.arange(n, dtype=np.int32) * 10
    return gdata.ArrayDataset(mx.nd.array(x), y)


def _collect(loader):
    return [[_np(f) for f in b] for b in loader]


def test_dataloader_batches_match_numpy():
    ds = _dataset()
    loader = gdata.DataLoader(ds, batch_size=5)
    assert len(loader) == 5
    batches = _collect(loader)
    assert [b[0].shape[0] for b in batches] == [5, 5, 5, 5, 3]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]),
                                  np.arange(23 * 4, dtype=np.float32).reshape(23, 2, 2))
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), np.arange(23) * 10)
    assert batches[0][1].dtype == np.int32
    assert len(gdata.DataLoader(ds, 5, last_batch="discard")) == 4
    assert [b[0].shape[0] for b in _collect(gdata.DataLoader(ds, 5, last_batch="discard"))] == [5] * 4


def test_dataloader_shuffle_and_arguments():
    ds = _dataset()
    np.random.seed(5)
    labels = np.concatenate([b[1] for b in _collect(gdata.DataLoader(ds, 4, shuffle=True))])
    assert sorted(labels.tolist()) == list(range(0, 230, 10)) and labels.tolist() != sorted(labels.tolist())
    np.random.seed(5)
    perm = np.arange(23)
    np.random.shuffle(perm)
    np.testing.assert_array_equal(labels, perm * 10)
    with pytest.raises(ValueError, match="batch_size must be specified"):
        gdata.DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle must not be specified"):
        gdata.DataLoader(ds, 2, shuffle=True, sampler=gdata.SequentialSampler(23))
    bs = gdata.BatchSampler(gdata.SequentialSampler(23), 7)
    with pytest.raises(ValueError, match="must not be specified if batch_sampler"):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=bs)
    loader = gdata.DataLoader(ds, batch_sampler=bs, batchify_fn=lambda s: len(s))
    assert list(loader) == [7, 7, 7, 2]
    # pin_memory is accepted (a no-op without CUDA)
    b = next(iter(gdata.DataLoader(ds, 3, pin_memory=True, try_nopython=True)))
    np.testing.assert_array_equal(b[1].asnumpy(), [0, 10, 20])


def _sq(x, y):
    return x * x, y + 1


def test_dataloader_workers_same_batches():
    ds = _dataset(37).transform(lambda x, y: (x * 2, y - 1))  # lambda: inherited by fork
    ref = _collect(gdata.DataLoader(ds, 4, last_batch="keep"))
    for kwargs in [dict(num_workers=2), dict(num_workers=2, prefetch=0),
                   dict(num_workers=3, thread_pool=True), dict(num_workers=2, prefetch=7)]:
        loader = gdata.DataLoader(ds, 4, **kwargs)
        for _ in range(2):                          # the pool is reused across epochs
            got = _collect(loader)
            assert len(got) == len(ref)
            for g, r in zip(got, ref):
                for gf, rf in zip(g, r):
                    assert gf.dtype == rf.dtype
                    np.testing.assert_array_equal(gf, rf)
        loader.close()


def test_dataloader_workers_custom_batchify_and_dtypes():
    ds = gdata.SimpleDataset([(np.full((i % 3 + 1,), i, np.int64), float(i)) for i in range(10)])
    fn = batchify.Group(batchify.Pad(pad_val=-1), batchify.Stack())
    ref = list(gdata.DataLoader(ds, 3, batchify_fn=fn))
    got = list(gdata.DataLoader(ds, 3, batchify_fn=fn, num_workers=2))
    assert len(ref) == len(got) == 4
    for (a, b), (c, d) in zip(ref, got):
        assert isinstance(c, mx.nd.NDArray) and c.dtype == np.int64 and d.dtype == np.float64
        np.testing.assert_array_equal(a.asnumpy(), c.asnumpy())
        np.testing.assert_array_equal(b.asnumpy(), d.asnumpy())


class _Failing(gdata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, idx):
        if idx == 5:
            raise_from_unique_helper_function(idx)
        return np.float32(idx)


def raise_from_unique_helper_function(idx):
    raise KeyError(f"sample {idx} is broken")


@pytest.mark.parametrize("thread_pool", [False, True])
def test_dataloader_worker_exception_has_traceback(thread_pool):
    loader = gdata.DataLoader(_Failing(), 2, num_workers=2, thread_pool=thread_pool)
    it = iter(loader)
    np.testing.assert_array_equal(next(it).asnumpy(), [0, 1])
    np.testing.assert_array_equal(next(it).asnumpy(), [2, 3])
    with pytest.raises(MXNetError) as ei:
        next(it)
    msg = str(ei.value)
    assert "Traceback" in msg and "raise_from_unique_helper_function" in msg
    assert "sample 5 is broken" in msg and "batch 2" in msg
    loader.close()


class _Slow(gdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, idx):
        time.sleep(3)
        return np.float32(idx)


@pytest.mark.parametrize("thread_pool", [False, True])
def test_dataloader_auto_reload_prefetches_every_epoch(thread_pool):
    data = gdata.ArrayDataset(np.arange(10, dtype=np.float32).reshape(10, 1))
    loader = gdata.DataLoader(data, batch_size=3, num_workers=2, thread_pool=thread_pool,
                              auto_reload=True)
    assert loader._iter is not None  # prefetching started at construction
    for _ in range(2):
        got = np.concatenate([b.asnumpy().ravel() for b in loader])
        np.testing.assert_array_equal(got, np.arange(10))
        assert loader._iter is not None  # and again for the next epoch
    loader.clean()
    assert loader._iter is None
    np.testing.assert_array_equal(np.concatenate([b.asnumpy().ravel() for b in loader]), np.arange(10))
    loader.close()
    with pytest.raises(ValueError, match="timeout"):
        gdata.DataLoader(data, batch_size=2, timeout=0)


def test_dataloader_dropped_mid_epoch_releases_its_workers():
    # batches larger than a pipe buffer used to block workers, and terminate() then hung
    start = time.time()
    for _ in range(6):
        loader = gdata.DataLoader(np.random.rand(300, 2000), batch_size=8, num_workers=4)
        it = iter(loader)
        assert next(it).shape == (8, 2000)
        del it, loader
    assert time.time() - start < 60


def test_dataloader_internals_libraries_import():
    import io
    import pickle
    from hybridnet.gluon.data.dataloader import (ForkingPickler, _as_in_context, default_batchify_fn,
                                                 default_mp_batchify_fn)
    batch = default_mp_batchify_fn([(mx.nd.ones((2,)), 1), (mx.nd.zeros((2,)), 2)])
    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(batch)  # gluonnlp's worker protocol
    back = pickle.loads(buf.getvalue())
    np.testing.assert_array_equal(back[0].asnumpy(), [[1, 1], [0, 0]])
    np.testing.assert_array_equal(back[1].asnumpy(), [1, 2])
    moved = _as_in_context((back[0], [back[1]]), mx.cpu())
    assert isinstance(moved, list) and moved[0].context == mx.cpu()
    assert default_batchify_fn([1, 2]).asnumpy().tolist() == [1, 2]


def test_dataloader_timeout():
    loader = gdata.DataLoader(_Slow(), 2, num_workers=1, timeout=0.3)
    t0 = time.time()
    with pytest.raises(MXNetError, match="timed out"):
        next(iter(loader))
    assert time.time() - t0 < 2.5
    loader.close()


def _write_rec(tmp_path, n):
    rec, idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    w = recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(n):
        w.write_idx(i, b"item-%03d" % i)
    w.close()
    return rec


def test_record_file_dataset_and_workers(tmp_path):
    rec = _write_rec(tmp_path, 9)
    ds = gdata.RecordFileDataset(rec)
    assert len(ds) == 9 and ds[4] == b"item-004" and ds[0] == b"item-000"
    fn = lambda samples: [int(s[5:]) for s in samples]  # noqa: E731
    ref = list(gdata.DataLoader(ds, 2, batchify_fn=fn))
    assert ref == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    loader = gdata.DataLoader(ds, 2, batchify_fn=fn, num_workers=2)
    assert list(loader) == ref
    loader.close()


# -- vision datasets ----------------------------------------------------------------------------------
def _write_idx(path, arr, gz):
    head = struct.pack(">BBBB", 0, 0, 8, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    raw = head + arr.astype(np.uint8).tobytes()
    if gz:
        with gzip.open(path + ".gz", "wb") as f:
            f.write(raw)
    else:
        with open(path, "wb") as f:
            f.write(raw)


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_local_files(tmp_path, gz):
    rng = np.random.RandomState(0)
    imgs = rng.randint(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = np.array([3, 1, 4, 1, 5], np.uint8)
    _write_idx(str(tmp_path / "t10k-images-idx3-ubyte"), imgs, gz)
    _write_idx(str(tmp_path / "t10k-labels-idx1-ubyte"), labels, gz)
    ds = vdatasets.MNIST(root=str(tmp_path), train=False)
    assert len(ds) == 5
    img, lab = ds[2]
    assert isinstance(img, mx.nd.NDArray) and img.shape == (28, 28, 1) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], imgs[2])
    assert lab == 4 and isinstance(lab, np.int32)
    tds = vdatasets.FashionMNIST(root=str(tmp_path), train=False,
                                 transform=lambda d, l: (d.astype("float32") / 255, l + 1))
    d, l = tds[0]
    assert d.dtype == np.float32 and l == 4
    np.testing.assert_allclose(d.asnumpy()[:, :, 0], imgs[0] / 255.0, rtol=1e-6)
    # the training files are absent: the error names the exact paths and says why
    with pytest.raises(MXNetError) as ei:
        vdatasets.MNIST(root=str(tmp_path), train=True)
    msg = str(ei.value)
    assert os.path.join(str(tmp_path), "train-images-idx3-ubyte.gz") in msg
    assert os.path.join(str(tmp_path), "train-labels-idx1-ubyte") in msg
    assert "download" in msg and "network" in msg


def test_mnist_corrupted(tmp_path):
    _write_idx(str(tmp_path / "t10k-images-idx3-ubyte"), np.zeros((2, 28, 28)), False)
    _write_idx(str(tmp_path / "t10k-labels-idx1-ubyte"), np.zeros(3), False)
    with pytest.raises(MXNetError, match="2 images but"):
        vdatasets.MNIST(root=str(tmp_path), train=False)
    with open(str(tmp_path / "t10k-labels-idx1-ubyte"), "ab") as f:
        f.write(b"\x01")
    with pytest.raises(MXNetError, match="truncated or corrupted"):
        vdatasets.MNIST(root=str(tmp_path), train=False)


def _cifar_records(n, label_bytes, rng):
    labels = rng.randint(0, 100, (n, label_bytes)).astype(np.uint8)
    chw = rng.randint(0, 256, (n, 3, 32, 32)).astype(np.uint8)
    raw = np.concatenate([labels, chw.reshape(n, -1)], axis=1).tobytes()
    return raw, labels, chw


def test_cifar10_local_files(tmp_path):
    rng = np.random.RandomState(2)
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    all_chw, all_lab = [], []
    for i in range(1, 6):
        raw, lab, chw = _cifar_records(2, 1, rng)
        (folder / f"data_batch_{i}.bin").write_bytes(raw)
        all_chw.append(chw)
        all_lab.append(lab[:, 0])
    raw, tlab, tchw = _cifar_records(3, 1, rng)
    (folder / "test_batch.bin").write_bytes(raw)
    train = vdatasets.CIFAR10(root=str(tmp_path), train=True)
    assert len(train) == 10
    img, lab = train[7]
    assert img.shape == (32, 32, 3) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), np.concatenate(all_chw)[7].transpose(1, 2, 0))
    assert lab == np.concatenate(all_lab)[7] and isinstance(lab, np.int32)
    test = vdatasets.CIFAR10(root=str(tmp_path), train=False)
    np.testing.assert_array_equal(test[2][0].asnumpy(), tchw[2].transpose(1, 2, 0))
    with pytest.raises(MXNetError, match="cifar-10-batches-bin.*data_batch_1.bin"):
        vdatasets.CIFAR10(root=str(tmp_path / "nowhere"))


def test_cifar100_labels(tmp_path):
    rng = np.random.RandomState(3)
    raw, lab, chw = _cifar_records(4, 2, rng)
    (tmp_path / "test.bin").write_bytes(raw)
    coarse = vdatasets.CIFAR100(root=str(tmp_path), train=False)
    fine = vdatasets.CIFAR100(root=str(tmp_path), fine_label=True, train=False)
    assert [coarse[i][1] for i in range(4)] == lab[:, 0].tolist()
    assert [fine[i][1] for i in range(4)] == lab[:, 1].tolist()
    np.testing.assert_array_equal(fine[1][0].asnumpy(), chw[1].transpose(1, 2, 0))


def test_image_folder_and_record_datasets(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.RandomState(4)
    root = tmp_path / "imgs"
    images = {}
    for cls in ["cat", "dog"]:
        (root / cls).mkdir(parents=True)
        for j in range(2):
            arr = rng.randint(0, 256, (4 + j, 6, 3)).astype(np.uint8)
            p = root / cls / f"{j}.png"
            Image.fromarray(arr).save(str(p))
            images[str(p)] = arr
    (root / "dog" / "notes.txt").write_text("x")
    with pytest.warns(UserWarning, match="Ignoring"):
        ds = vdatasets.ImageFolderDataset(str(root))
    assert ds.synsets == ["cat", "dog"] and len(ds) == 4
    assert [label for _, label in ds.items] == [0, 0, 1, 1]
    img, label = ds[3]
    assert label == 1 and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), images[ds.items[3][0]])   # RGB order
    with pytest.warns(UserWarning, match="Ignoring"):
        gray, _ = vdatasets.ImageFolderDataset(str(root), flag=0)[0]
    assert gray.shape == (4, 6, 1)

    # ImageRecordDataset over pack_img records (stored BGR like OpenCV, decoded to RGB)
    rec, idx = str(tmp_path / "img.rec"), str(tmp_path / "img.idx")
    w = recordio.MXIndexedRecordIO(idx, rec, "w")
    arrs = [rng.randint(0, 256, (5, 7, 3)).astype(np.uint8) for _ in range(3)]
    for i, a in enumerate(arrs):
        w.write_idx(i, recordio.pack_img(recordio.IRHeader(0, float(i) + 0.5, i, 0), a[:, :, ::-1],
                                         quality=1, img_fmt=".png"))
    w.close()
    rds = vdatasets.ImageRecordDataset(rec)
    assert len(rds) == 3
    img, label = rds[1]
    assert label == 1.5 and img.shape == (5, 7, 3)
    np.testing.assert_array_equal(img.asnumpy(), arrs[1])
    tr = vdatasets.ImageRecordDataset(rec, flag=0, transform=lambda d, l: (d.shape, l))
    assert tr[2] == ((5, 7, 1), 2.5)


def test_namespace():
    assert mx.gluon.data.DataLoader is gdata.DataLoader
    assert mx.gluon.data.vision.transforms.ToTensor is not None
    assert gdata.vision.MNIST is vdatasets.MNIST


def test_contrib_interval_sampler():
    from hybridnet.gluon.contrib.data import IntervalSampler
    s = IntervalSampler(13, interval=3)
    assert list(s) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11] and len(s) == 13
    once = IntervalSampler(13, interval=3, rollover=False)
    assert list(once) == [0, 3, 6, 9, 12] and len(once) == 5
    assert sorted(IntervalSampler(10, 10)) == list(range(10))
    batches = list(gdata.BatchSampler(IntervalSampler(7, 2), 3, "keep"))
    assert batches == [[0, 2, 4], [6, 1, 3], [5]]
    with pytest.raises(ValueError, match="Interval"):
        IntervalSampler(3, 4)
