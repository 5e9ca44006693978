"""mx.io: NDArrayIter batch contents for every last_batch_handle mode (hand-computed), shuffle,
dict/list inputs, provide_data; ResizeIter, PrefetchingIter; CSVIter and MNISTIter on small
files written here."""
import gc
import struct
import threading

import numpy as np
import pytest

import hybridnet as mx
import hybridnet.io as mio
from hybridnet.base import MXNetError

N = 10


def _data():
    # row i is [2i, 2i+1], so a row identifies itself: row_id = value[:, 0] / 2
    return np.arange(2 * N, dtype=np.float64).reshape(N, 2)


def _label():
    return np.arange(N, dtype=np.float64) * 10.0


def _rows(batch):
    """(row ids of the data, row ids recovered from the label, pad)."""
    d = batch.data[0].asnumpy()
    assert d.shape[1:] == (2,)
    np.testing.assert_array_equal(d[:, 1], d[:, 0] + 1)
    ids = (d[:, 0] / 2).astype(int).tolist()
    lab = (batch.label[0].asnumpy() / 10).astype(int).tolist() if batch.label else None
    return ids, lab, batch.pad


def _epoch(it):
    out = []
    for b in it:
        ids, lab, pad = _rows(b)
        assert lab == ids, "labels must stay aligned with data"
        assert b.data[0].shape[0] == it.batch_size
        out.append((ids, pad))
    return out


# -- NDArrayIter: last_batch_handle ---------------------------------------------------------------
def test_pad_mode_batches_and_pad_count():
    it = mio.NDArrayIter(_data(), _label(), batch_size=3)  # 'pad' is the default
    expected = [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0), ([9, 0, 1], 2)]
    assert _epoch(it) == expected
    with pytest.raises(StopIteration):
        it.next()
    it.reset()
    assert _epoch(it) == expected


def test_pad_mode_pad_larger_than_data_tiles():
    it = mio.NDArrayIter(_data()[:2], _label()[:2], batch_size=7)
    assert _epoch(it) == [([0, 1, 0, 1, 0, 1, 0], 5)]
    it = mio.NDArrayIter(_data()[:3], _label()[:3], batch_size=9)  # pad 6 = 2 * 3, no remainder
    assert _epoch(it) == [([0, 1, 2, 0, 1, 2, 0, 1, 2], 6)]


def test_pad_mode_exact_division_has_no_pad():
    it = mio.NDArrayIter(_data(), _label(), batch_size=5)
    assert _epoch(it) == [([0, 1, 2, 3, 4], 0), ([5, 6, 7, 8, 9], 0)]


def test_discard_mode_drops_incomplete_batch():
    it = mio.NDArrayIter(_data(), _label(), batch_size=3, last_batch_handle="discard")
    expected = [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0)]
    assert _epoch(it) == expected
    it.reset()
    assert _epoch(it) == expected


def test_roll_over_across_epochs():
    it = mio.NDArrayIter(_data(), _label(), batch_size=3, last_batch_handle="roll_over")
    # epoch 1: row 9 is left over and opens epoch 2 (pad = number of rolled-over rows)
    assert _epoch(it) == [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0)]
    it.reset()
    assert _epoch(it) == [([9, 0, 1], 1), ([2, 3, 4], 0), ([5, 6, 7], 0)]
    it.reset()
    # rows 8, 9 rolled over; this epoch then ends exactly
    assert _epoch(it) == [([8, 9, 0], 2), ([1, 2, 3], 0), ([4, 5, 6], 0), ([7, 8, 9], 0)]
    it.reset()
    assert _epoch(it) == [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0)]
    it.hard_reset()  # forgets the rolled-over row 9
    assert _epoch(it) == [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 7, 8], 0)]


def test_mxnet_docstring_roll_over_example():
    data = np.arange(40).reshape((10, 2, 2))
    labels = np.ones([10, 1])
    it = mio.NDArrayIter(data, labels, 3, False, last_batch_handle="roll_over")
    assert sum(1 for _ in it) == 3
    it.reset()
    first = it.next().data[0].asnumpy()
    np.testing.assert_array_equal(first, np.array([[[36, 37], [38, 39]], [[0, 1], [2, 3]], [[4, 5], [6, 7]]]))
    assert it.provide_label[0].shape == (3, 1)


def test_iter_next_getdata_loop():
    # the iter_next()/getdata() protocol returns the short last batch in 'discard' mode
    it = mio.NDArrayIter(_data(), _label(), batch_size=4, last_batch_handle="discard")
    sizes = []
    while it.iter_next():
        sizes.append(it.getdata()[0].shape[0])
        assert it.getpad() == 0
    assert sizes == [4, 4, 2]
    # roll_over: this protocol hands out the short tail itself, so nothing rolls over (MXNet)
    it = mio.NDArrayIter(_data(), _label(), batch_size=4, last_batch_handle="roll_over")
    sizes = []
    while it.iter_next():
        sizes.append(it.getdata()[0].shape[0])
    assert sizes == [4, 4, 2]
    it.reset()
    assert it.iter_next()
    np.testing.assert_array_equal(it.getdata()[0].asnumpy()[:, 0] / 2, [0, 1, 2, 3])
    assert it.getpad() == 0
    # stopping on the short batch (as next() does) keeps it for the next epoch
    it = mio.NDArrayIter(_data(), _label(), batch_size=4, last_batch_handle="roll_over")
    for _ in range(3):
        it.iter_next()
    it.reset()
    assert it.iter_next()
    np.testing.assert_array_equal(it.getdata()[0].asnumpy()[:, 0] / 2, [8, 9, 0, 1])
    np.testing.assert_array_equal(it.getlabel()[0].asnumpy() / 10, [8, 9, 0, 1])
    assert it.getpad() == 2


def test_shuffle_with_seed_matches_mxnet_permutation_order():
    def replay(seed, epochs):
        # MXNet: self.idx is shuffled in place at construction and at every reset, and the
        # already-shuffled arrays are re-indexed with it
        rng_state = np.random.RandomState(seed)
        idx = np.arange(N)
        order = np.arange(N)
        res = []
        for _ in range(epochs):
            rng_state.shuffle(idx)
            order = order[idx]
            res.append(order.copy())
        return res

    np.random.seed(123)
    it = mio.NDArrayIter(_data(), _label(), batch_size=5, shuffle=True)
    got = [sum((ids for ids, _ in _epoch(it)), [])]
    for _ in range(2):
        it.reset()
        got.append(sum((ids for ids, _ in _epoch(it)), []))
    expected = replay(123, 3)
    for g, e in zip(got, expected):
        assert g == e.tolist()
    assert got[0] != list(range(N)) and got[0] != got[1]
    # same seed, same batches
    np.random.seed(123)
    again = mio.NDArrayIter(_data(), _label(), batch_size=5, shuffle=True)
    assert sum((ids for ids, _ in _epoch(again)), []) == got[0]


def test_shuffle_pad_mode_pads_from_shuffled_start():
    np.random.seed(7)
    it = mio.NDArrayIter(_data(), _label(), batch_size=4, shuffle=True)
    batches = _epoch(it)
    flat = sum((ids for ids, _ in batches[:2]), []) + batches[2][0][:2]
    assert sorted(flat) == list(range(N))
    assert batches[2][1] == 2 and batches[2][0][2:] == flat[:2]


def test_shuffle_converts_to_float32_like_mxnet():
    x = mx.nd.array(np.arange(N * 2).reshape(N, 2), dtype="int32")
    assert mio.NDArrayIter(x, batch_size=2).provide_data[0].dtype == np.int32
    np.random.seed(0)
    it = mio.NDArrayIter(x, batch_size=2, shuffle=True)
    assert it.provide_data[0].dtype == np.float32
    assert it.next().data[0].dtype == np.float32


# -- NDArrayIter: inputs, names, provide_data --------------------------------------------------
def test_dict_inputs_are_sorted_by_name():
    a = np.zeros((N, 3))
    b = np.arange(N * 4, dtype=np.float32).reshape(N, 2, 2)
    it = mio.NDArrayIter({"zeta": b, "alpha": a}, {"lab": _label()}, batch_size=4,
                         last_batch_handle="discard")
    assert [d.name for d in it.provide_data] == ["alpha", "zeta"]
    assert [d.shape for d in it.provide_data] == [(4, 3), (4, 2, 2)]
    assert [(d.name, d.shape) for d in it.provide_label] == [("lab", (4,))]
    batch = it.next()
    assert batch.data[0].shape == (4, 3) and batch.data[1].shape == (4, 2, 2)
    np.testing.assert_array_equal(batch.data[1].asnumpy(), b[:4])
    np.testing.assert_array_equal(batch.label[0].asnumpy(), _label()[:4])
    assert dict(it.provide_data) == {"alpha": (4, 3), "zeta": (4, 2, 2)}


def test_list_inputs_get_indexed_names_and_defaults():
    it = mio.NDArrayIter([_data(), _data()], [_label(), _label()], batch_size=2)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    assert [d.name for d in it.provide_label] == ["_0_softmax_label", "_1_softmax_label"]
    it = mio.NDArrayIter(_data(), _label(), batch_size=2)
    assert it.provide_data[0].name == "data" and it.provide_label[0].name == "softmax_label"
    it = mio.NDArrayIter(_data(), _label(), batch_size=2, data_name="x", label_name="y")
    assert it.provide_data[0].name == "x" and it.provide_label[0].name == "y"


def test_provide_data_shape_dtype_and_ndarray_input():
    x = mx.nd.array(np.ones((N, 3, 4)), dtype="float64")
    it = mio.NDArrayIter(x, batch_size=6)
    desc = it.provide_data[0]
    assert desc == ("data", (6, 3, 4))  # DataDesc is a (name, shape) tuple
    assert desc.dtype == np.float64 and desc.layout == "NCHW"
    assert repr(desc) == "DataDesc[data,(6, 3, 4),<class 'numpy.float64'>,NCHW]"
    assert it.provide_label == []
    batch = it.next()
    assert batch.label == [] and batch.data[0].dtype == np.float64
    # NumPy input becomes float32, as mx.nd.array does
    assert mio.NDArrayIter(np.ones((4, 2)), batch_size=2).provide_data[0].dtype == np.float32
    assert str(batch) == "DataBatch: data shapes: [(6, 3, 4)] label shapes: None"


def test_ndarrayiter_errors():
    with pytest.raises(ValueError, match="last_batch_handle"):
        mio.NDArrayIter(_data(), batch_size=2, last_batch_handle="keep")
    with pytest.raises(ValueError, match="batch_size"):
        mio.NDArrayIter(_data(), batch_size=0)
    with pytest.raises(ValueError, match="same first dimension"):
        mio.NDArrayIter(_data(), _label()[:5], batch_size=2)
    with pytest.raises(TypeError, match="NDArrayIter"):
        mio.NDArrayIter(42, batch_size=2)
    with pytest.raises(ValueError, match="required"):
        mio.NDArrayIter(None)
    it = mio.NDArrayIter(_data(), batch_size=5)
    list(it)
    with pytest.raises(MXNetError, match="reset"):
        it.getdata()


def test_mxnet_unittest_last_batch_handle_scenario():
    # MXNet 1.9.1's own test_NDArrayIter: 1000 examples valued i / 100, batch 128
    data = np.ones((1000, 2, 2))
    labels = np.ones((1000, 1))
    for i in range(1000):
        data[i] = i / 100
        labels[i] = i / 100
    for src in (data, mx.nd.array(data), [data, data], {"data1": data, "data2": data}):
        cache = None
        for mode, count, (c0, c8) in (("pad", 8, (124, 100)), ("discard", 7, (100, 96)),
                                      ("roll_over", 7, (100, 96))):
            it = mio.NDArrayIter(src, labels, 128, False, last_batch_handle=mode)
            counts = np.zeros(10, dtype=int)
            n = 0
            for batch in it:
                label = batch.label[0].asnumpy().flatten()
                assert (batch.data[0].asnumpy()[:, 0, 0] == label).all()
                assert len(batch.data) == (2 if isinstance(src, (list, dict)) else 1)
                np.add.at(counts, label.astype(int), 1)
                n += 1
                if mode == "pad" and n == 8:
                    cache = batch.data[0].asnumpy()
            assert n == count and (counts[0], counts[8]) == (c0, c8), mode
        it.reset()  # roll_over's first batch of epoch 2 equals pad's last batch of epoch 1
        np.testing.assert_array_equal(it.next().data[0].asnumpy(), cache)
    # no labels: an empty list or None
    for lab in ([], None):
        batches = list(mio.NDArrayIter(data, lab, 128))
        assert len(batches) == 8 and all(b.label == [] for b in batches)


def test_mxnet_unittest_shuffle_scenario():
    data = np.arange(20, dtype=np.float32).reshape(20, 1)
    plain = [b.data[0].asnumpy() for b in mio.NDArrayIter(data, batch_size=1)]
    it = mio.NDArrayIter([data, data], batch_size=1, shuffle=True)
    idx = it.idx.copy()
    for i, b in enumerate(it):
        np.testing.assert_array_equal(b.data[0].asnumpy(), plain[idx[i]])
        np.testing.assert_array_equal(b.data[1].asnumpy(), plain[idx[i]])


# -- DataDesc / DataBatch / DataIter ---------------------------------------------------------------
def test_datadesc_helpers():
    assert mio.DataDesc.get_batch_axis("TNC") == 1
    assert mio.DataDesc.get_batch_axis(None) == 0
    descs = mio.DataDesc.get_list([("a", (1, 2)), ("b", (3,))], [("a", np.int32), ("b", np.float16)])
    assert [(d.name, d.shape, d.dtype) for d in descs] == [("a", (1, 2), np.int32), ("b", (3,), np.float16)]
    descs = mio.DataDesc.get_list([("a", (1, 2))], None)
    assert descs[0].dtype == np.float32
    name, shape = mio.DataDesc("data", (2, 3), layout="NTC")
    assert (name, shape) == ("data", (2, 3))
    assert mio.DataDesc.get_batch_axis(mio.DataDesc("d", (2,), layout="TNC").layout) == 1
    assert repr(mio.DataDesc("d", (2,))._replace(shape=(4,))) == "DataDesc[d,(4,),<class 'numpy.float32'>,NCHW]"


def test_databatch_validation_and_fields():
    d = [mx.nd.ones((2, 3))]
    b = mio.DataBatch(d, [mx.nd.zeros((2,))], pad=1, index=np.array([0, 1]), bucket_key=5,
                      provide_data=[("data", (2, 3))])
    assert b.pad == 1 and b.bucket_key == 5 and b.provide_data == [("data", (2, 3))] and b.provide_label is None
    with pytest.raises(TypeError, match="list"):
        mio.DataBatch(mx.nd.ones((2,)))
    with pytest.raises(TypeError, match="label"):
        mio.DataBatch(d, label=mx.nd.ones((2,)))


def test_custom_dataiter_subclass():
    class Count(mio.DataIter):
        def __init__(self):
            super().__init__(batch_size=2)
            self.i = 0

        def reset(self):
            self.i = 0

        def iter_next(self):
            self.i += 1
            return self.i <= 3

        def getdata(self):
            return [mx.nd.full((2,), self.i)]

        def getlabel(self):
            return None

        def getpad(self):
            return 0

    it = Count()
    assert [b.data[0].asnumpy()[0] for b in it] == [1, 2, 3]
    assert not hasattr(it, "provide_data")
    with pytest.raises(AttributeError, match="provide_data"):
        it.provide_data
    it.provide_data = [mio.DataDesc("data", (2,))]
    assert it.provide_data[0].shape == (2,)


# -- ResizeIter / PrefetchingIter -------------------------------------------------------------------
def test_resize_iter_restarts_and_stops():
    base = mio.NDArrayIter(_data(), _label(), batch_size=3, last_batch_handle="discard")
    it = mio.ResizeIter(base, 5)
    assert it.provide_data == base.provide_data and it.batch_size == 3
    ids = [_rows(b)[0] for b in it]
    assert ids == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 1, 2], [3, 4, 5]]
    it.reset()
    assert [_rows(b)[0] for b in it][0] == [0, 1, 2]
    shrink = mio.ResizeIter(mio.NDArrayIter(_data(), batch_size=5), 1)
    assert len(list(shrink)) == 1


def test_prefetching_iter_matches_direct_iteration():
    direct = [(_rows(b)) for b in mio.NDArrayIter(_data(), _label(), batch_size=3)]
    it = mio.PrefetchingIter(mio.NDArrayIter(_data(), _label(), batch_size=3))
    assert it.batch_size == 3 and it.provide_data[0].shape == (3, 2)
    for _ in range(2):
        got = [(_rows(b)) for b in it]
        assert got == direct
        it.reset()
    assert all(b.provide_data[0].name == "data" for b in it)


def test_prefetching_iter_combines_and_renames():
    a = mio.NDArrayIter(_data(), _label(), batch_size=5)
    b = mio.NDArrayIter(_data() + 100, _label() + 1, batch_size=5)
    it = mio.PrefetchingIter([a, b], rename_data=[{"data": "a"}, {"data": "b"}],
                             rename_label=[{"softmax_label": "la"}, {"softmax_label": "lb"}])
    assert [d.name for d in it.provide_data] == ["a", "b"]
    assert [d.name for d in it.provide_label] == ["la", "lb"]
    batches = list(it)
    assert len(batches) == 2
    np.testing.assert_array_equal(batches[1].data[1].asnumpy(), _data()[5:] + 100)
    np.testing.assert_array_equal(batches[1].label[1].asnumpy(), _label()[5:] + 1)
    assert len(batches[0].data) == 2 and len(batches[0].label) == 2


def test_prefetching_iter_out_of_step_and_errors():
    a = mio.NDArrayIter(_data(), batch_size=5)
    b = mio.NDArrayIter(_data()[:5], batch_size=5)
    it = mio.PrefetchingIter([a, b])
    it.next()
    with pytest.raises(MXNetError, match="out of step|mismatch"):
        it.next()

    class Boom(mio.NDArrayIter):
        def next(self):
            raise KeyError("broken source")

    it = mio.PrefetchingIter(Boom(_data(), batch_size=5))
    with pytest.raises(KeyError, match="broken source"):
        it.next()


def test_prefetching_iter_threads_end():
    before = threading.active_count()
    it = mio.PrefetchingIter(mio.NDArrayIter(_data(), batch_size=5))
    threads = list(it.prefetch_threads)
    list(it)
    del it
    gc.collect()
    for t in threads:
        t.join(timeout=5)
        assert not t.is_alive()
    assert threading.active_count() <= before


# -- CSVIter ----------------------------------------------------------------------------------------
@pytest.fixture
def csv_files(tmp_path):
    rows = [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]
    data = tmp_path / "data.csv"
    data.write_text("\n".join(",".join(str(v) for v in r) for r in rows) + "\n\n")
    label = tmp_path / "label.csv"
    label.write_text("0\n1\n2\n3\n")
    return str(data), str(label), np.array(rows, dtype=np.float32)


def _csv_batches(it):
    return [(b.data[0].asnumpy().tolist(), b.pad) for b in it]


def test_csviter_mxnet_docs_examples(csv_files):
    data, _, rows = csv_files
    r = rows.tolist()
    it = mio.CSVIter(data_csv=data, data_shape=(3,), batch_size=2)
    assert _csv_batches(it) == [([r[0], r[1]], 0), ([r[2], r[3]], 0)]
    # round_batch=True: the last batch wraps around; the next pass starts after the wrap
    it = mio.CSVIter(data_csv=data, data_shape=(3,), batch_size=3)
    assert _csv_batches(it) == [([r[0], r[1], r[2]], 0), ([r[3], r[0], r[1]], 2)]
    it.reset()
    assert _csv_batches(it) == [([r[2], r[3], r[0]], 1)]
    it.reset()
    assert _csv_batches(it) == [([r[1], r[2], r[3]], 0)]
    # round_batch=False: the padded rows keep the previous batch's content
    it = mio.CSVIter(data_csv=data, data_shape=(3,), batch_size=3, round_batch=0)
    expected = [([r[0], r[1], r[2]], 0), ([r[3], r[1], r[2]], 2)]
    assert _csv_batches(it) == expected
    it.reset()
    assert _csv_batches(it) == expected


def test_csviter_labels_shapes_and_index(csv_files):
    data, label, rows = csv_files
    it = mio.CSVIter(data_csv=data, data_shape=(3,), label_csv=label, batch_size=2)
    assert it.provide_data == [("data", (2, 3))]
    assert it.provide_label == [("softmax_label", (2,))]  # (batch, 1) labels come out 1-d
    assert it.provide_data[0].dtype == np.float32
    batches = list(it)
    assert [b.label[0].asnumpy().tolist() for b in batches] == [[0, 1], [2, 3]]
    assert [b.index.tolist() for b in batches] == [[0, 1], [2, 3]]
    assert batches[0].index.dtype == np.uint64
    assert isinstance(it.getdata(), mx.nd.NDArray)  # the native iterators return one array
    # no label file: zeros
    it = mio.CSVIter(data_csv=data, data_shape=(3,), batch_size=4)
    np.testing.assert_array_equal(it.next().label[0].asnumpy(), np.zeros(4))


def test_csviter_reshape_label_shape_and_dtype(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("\n".join(",".join(str(i * 4 + j) for j in range(4)) for i in range(3)))
    label = tmp_path / "l.csv"
    label.write_text("1,2\n3,4\n5,6\n")
    it = mio.CSVIter(data_csv=str(data), data_shape=(2, 2), label_csv=str(label), label_shape=(2,),
                     batch_size=3, dtype="int32")
    b = it.next()
    assert b.data[0].shape == (3, 2, 2) and b.data[0].dtype == np.int32
    np.testing.assert_array_equal(b.data[0].asnumpy(), np.arange(12).reshape(3, 2, 2))
    np.testing.assert_array_equal(b.label[0].asnumpy(), [[1, 2], [3, 4], [5, 6]])
    assert b.label[0].dtype == np.int32
    # MXNet's test_CSVIter: large integers are read exactly
    big = tmp_path / "big.csv"
    big.write_text("2147483648,9007199254740993\n" * 2)
    b = mio.CSVIter(data_csv=str(big), data_shape=(2,), batch_size=2, dtype="int64").next()
    assert b.data[0].dtype == np.int64
    assert b.data[0].asnumpy().tolist() == [[2147483648, 9007199254740993]] * 2
    # MXNet-style string parameters
    it = mio.CSVIter(data_csv=str(data), data_shape="(4,)", batch_size="3", round_batch="False")
    assert it.provide_data[0].shape == (3, 4)


def test_csviter_errors(csv_files, tmp_path):
    data, label, _ = csv_files
    with pytest.raises(MXNetError, match="shape"):
        mio.CSVIter(data_csv=data, data_shape=(4,), batch_size=2)
    with pytest.raises(MXNetError, match="does not exist"):
        mio.CSVIter(data_csv=str(tmp_path / "nope.csv"), data_shape=(3,), batch_size=2)
    with pytest.raises(TypeError):
        mio.CSVIter(data, (3,), 2)  # keyword arguments only, as in MXNet
    with pytest.raises(TypeError):
        mio.CSVIter(data_csv=data, data_shape=(3,), batch_size=2, bogus=1)
    short = tmp_path / "short.csv"
    short.write_text("0\n1\n")
    with pytest.raises(MXNetError, match="label"):
        mio.CSVIter(data_csv=data, data_shape=(3,), label_csv=str(short), batch_size=2)
    with pytest.raises(MXNetError, match="batch"):
        mio.CSVIter(data_csv=data, data_shape=(3,), batch_size=9)  # wrap needs more than 4 rows


# -- MNISTIter --------------------------------------------------------------------------------------
@pytest.fixture
def mnist_files(tmp_path):
    rng = np.random.RandomState(0)
    n, rows, cols = 10, 4, 3
    images = rng.randint(0, 256, size=(n, rows, cols)).astype(np.uint8)
    images[:, 0, 0] = np.arange(n)  # the first pixel identifies the image
    labels = (np.arange(n) % 10).astype(np.uint8)
    img = tmp_path / "images-idx3-ubyte"
    img.write_bytes(struct.pack(">iiii", 2051, n, rows, cols) + images.tobytes())
    lab = tmp_path / "labels-idx1-ubyte"
    lab.write_bytes(struct.pack(">ii", 2049, n) + labels.tobytes())
    return str(img), str(lab), images, labels


def test_mnistiter_reads_scales_and_drops_last(mnist_files):
    img, lab, images, labels = mnist_files
    it = mio.MNISTIter(image=img, label=lab, batch_size=3, shuffle=False, silent=True)
    assert it.provide_data == [("data", (3, 1, 4, 3))]
    assert it.provide_label == [("softmax_label", (3,))]
    batches = list(it)
    assert len(batches) == 3  # 10 // 3; the incomplete batch is dropped
    for k, b in enumerate(batches):
        np.testing.assert_array_equal(b.data[0].asnumpy(),
                                      images[3 * k:3 * k + 3, None].astype(np.float32) / 256)
        np.testing.assert_array_equal(b.label[0].asnumpy(), labels[3 * k:3 * k + 3])
        assert b.pad == 0 and b.data[0].dtype == np.float32
    it.reset()
    assert len(list(it)) == 3
    flat = mio.MNISTIter(image=img, label=lab, batch_size=5, shuffle=0, flat=1, silent=1)
    assert flat.provide_data[0].shape == (5, 12)
    np.testing.assert_array_equal(flat.next().data[0].asnumpy(),
                                  images[:5].reshape(5, 12).astype(np.float32) / 256)


def test_mnistiter_shuffle_seed_and_parts(mnist_files):
    img, lab, images, labels = mnist_files

    def order(it):
        return [int(round(v)) for b in it for v in (b.data[0].asnumpy()[:, 0, 0, 0] * 256)]

    a = mio.MNISTIter(image=img, label=lab, batch_size=2, seed=3, silent=True)
    first = order(a)
    assert sorted(first) == list(range(10)) and first != list(range(10))
    a.reset()
    assert order(a) == first  # MXNet shuffles once, at construction
    b = mio.MNISTIter(image=img, label=lab, batch_size=2, seed=3, silent=True)
    assert order(b) == first
    for batch in mio.MNISTIter(image=img, label=lab, batch_size=2, seed=3, silent=True):
        ids = (batch.data[0].asnumpy()[:, 0, 0, 0] * 256).round().astype(int)
        np.testing.assert_array_equal(batch.label[0].asnumpy(), labels[ids])
    part = mio.MNISTIter(image=img, label=lab, batch_size=5, shuffle=False, num_parts=2, part_index=1,
                         silent=True, data_shape=(784,))
    assert order(part) == [5, 6, 7, 8, 9]


def test_mnistiter_missing_files(tmp_path, mnist_files):
    img, lab, _, _ = mnist_files
    with pytest.raises(MXNetError, match="not found.*image=") as e:
        mio.MNISTIter(image=str(tmp_path / "train-images-idx3-ubyte"), label=lab, batch_size=2)
    assert "train-images-idx3-ubyte" in str(e.value)
    with pytest.raises(MXNetError, match="no complete batch"):
        mio.MNISTIter(image=img, label=lab, batch_size=11, silent=True)


def test_unimplemented_iterators_explain():
    with pytest.raises(MXNetError, match="ImageRecordDataset"):
        mio.ImageRecordIter(path_imgrec="x.rec", data_shape=(3, 8, 8), batch_size=2)


def test_libsvm_iter_names_a_missing_file():
    with pytest.raises(MXNetError, match="data file 'x' does not exist"):
        mio.LibSVMIter(data_libsvm="x", data_shape=(3,), batch_size=2)
