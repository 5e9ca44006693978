"""mx.rnn.io (encode_sentences, BucketSentenceIter) and RNN checkpoints."""
import numpy as np
import pytest

import hybridnet as mx


def test_encode_sentences_new_and_given_vocab():
    coded, vocab = mx.rnn.encode_sentences([["a", "b"], ["b", "c"]], invalid_label=0, start_label=0)
    # ids start at start_label, skipping invalid_label, which the invalid key holds
    assert vocab == {"\n": 0, "a": 1, "b": 2, "c": 3}
    assert coded == [[1, 2], [2, 3]]
    coded, vocab = mx.rnn.io.encode_sentences([["a", "z"]], vocab={"a": 1}, unknown_token="UNK")
    assert coded == [[1, 0]] and vocab == {"a": 1, "UNK": 0}
    with pytest.raises(KeyError, match="unknown_token"):
        mx.rnn.encode_sentences([["q"]], vocab={"a": 1})


def test_bucket_sentence_iter_batches_and_labels():
    sentences = [[1, 2, 3], [4, 5], [6, 7, 8], [9, 10], [1, 1, 1, 1, 1, 1]]
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[2, 3], invalid_label=-1)
    assert it.buckets == [2, 3] and it.default_bucket_key == 3
    assert it.provide_data[0].shape == (2, 3)
    seen = {}
    for batch in it:
        data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
        assert data.shape == (2, batch.bucket_key)
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])
        np.testing.assert_array_equal(label[:, -1], -1)
        seen[batch.bucket_key] = sorted(map(tuple, data.astype(int)))
    assert seen == {2: [(4, 5), (9, 10)], 3: [(1, 2, 3), (6, 7, 8)]}

    tn = mx.rnn.BucketSentenceIter(sentences[:4], batch_size=2, buckets=[2, 3], layout="TN")
    assert next(iter(tn)).data[0].shape[1] == 2
    with pytest.raises(ValueError, match="layout"):
        mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[2, 3], layout="XY")


def test_rnn_checkpoint_unpacks_and_repacks(tmp_path):
    cell = mx.rnn.LSTMCell(3, prefix="l_")
    out, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    rng = np.random.default_rng(0)
    args = {"l_i2h_weight": mx.nd.array(rng.standard_normal((12, 4))),
            "l_i2h_bias": mx.nd.array(rng.standard_normal(12)),
            "l_h2h_weight": mx.nd.array(rng.standard_normal((12, 3))),
            "l_h2h_bias": mx.nd.array(rng.standard_normal(12))}
    prefix = str(tmp_path / "lstm")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 3, out, args, {})
    _, saved, _ = mx.model.load_checkpoint(prefix, 3)
    assert "l_i2h_f_weight" in saved and "l_i2h_weight" not in saved  # stored per gate
    np.testing.assert_array_equal(saved["l_h2h_o_bias"].asnumpy(), args["l_h2h_bias"].asnumpy()[9:])
    _, loaded, _ = mx.rnn.load_rnn_checkpoint([cell], prefix, 3)
    for name, value in args.items():
        np.testing.assert_array_equal(loaded[name].asnumpy(), value.asnumpy())
    callback = mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)
    callback(1, out, args, {})
    assert (tmp_path / "lstm-0002.params").exists()


# -- load_rnn_checkpoint checks the file against the cells and the graph (issue 24) ----------
def _saved_lstm(tmp_path, cell, hidden=4, inputs=3, **edits):
    """A checkpoint of ``cell`` unrolled over 2 steps, its per-gate arrays edited by ``edits``
    (name -> NDArray, or None to drop it)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, _ = cell.unroll(2, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    arg_shapes, _, _ = out.infer_shape(data=(1, 2, inputs))
    rng = np.random.default_rng(0)
    args = {n: mx.nd.array(rng.standard_normal(s)) for n, s in zip(out.list_arguments(), arg_shapes)
            if n != "data"}
    prefix = str(tmp_path / "ck")
    mx.rnn.save_rnn_checkpoint(cell, prefix, 1, out, args, {})
    if edits:
        saved = mx.nd.load(prefix + "-0001.params")
        for name, value in edits.items():
            if value is None:
                del saved["arg:" + name]
            else:
                saved["arg:" + name] = value
        mx.nd.save(prefix + "-0001.params", saved)
    return prefix, out, args


def test_load_rnn_checkpoint_refuses_a_fused_bias_that_would_be_broadcast(tmp_path):
    cell = mx.rnn.FusedRNNCell(4, num_layers=1, mode="lstm", prefix="lstm_")
    prefix, _, args = _saved_lstm(tmp_path, cell, lstm_l0_i2h_f_bias=mx.nd.array([7.0]))
    # before: the (1,) value was copied into all 4 slots of the flat vector, no error
    with pytest.raises(mx.base.MXNetError, match=r"'lstm_l0_i2h_f_bias' has shape \(1,\), the cell "
                       r"expects \(4,\)") as e:
        mx.rnn.load_rnn_checkpoint(mx.rnn.FusedRNNCell(4, mode="lstm", prefix="lstm_"), prefix, 1)
    assert "ck-0001.params" in str(e.value)
    # the unedited file still round-trips bit for bit
    prefix, _, args = _saved_lstm(tmp_path, cell)
    _, loaded, _ = mx.rnn.load_rnn_checkpoint(cell, prefix, 1)
    np.testing.assert_array_equal(loaded["lstm_parameters"].asnumpy(), args["lstm_parameters"].asnumpy())


def test_load_rnn_checkpoint_names_a_missing_gate(tmp_path):
    prefix, _, _ = _saved_lstm(tmp_path, mx.rnn.GRUCell(4, prefix="gru_"), gru_i2h_z_bias=None)
    # before: KeyError: 'gru_i2h_z_bias'
    with pytest.raises(mx.base.MXNetError, match=r"ck-0001.params.*'gru_i2h_bias' is packed from .*"
                       r"\['gru_i2h_z_bias'\] is missing"):
        mx.rnn.load_rnn_checkpoint(mx.rnn.GRUCell(4, prefix="gru_"), prefix, 1)


@pytest.mark.parametrize("edit, message", [
    (mx.nd.zeros((3, 3)), r"'lstm_i2h_c_weight' has shape \(3, 3\), the cell expects \(4, 3\)"),
    (mx.nd.zeros((4, 3), dtype="int32"), r"'lstm_i2h_c_weight' has dtype int32; RNN weights are floating"),
    (mx.nd.zeros((4, 3), dtype="float16"), r"'lstm_i2h_c_weight' has dtype float16, but 'lstm_i2h_i_weight' has float32"),
    (mx.nd.zeros((4,)), r"'lstm_i2h_c_weight' has shape \(4,\), the cell expects \(4, 3\)"),
])
def test_load_rnn_checkpoint_checks_each_gate_against_the_cell(tmp_path, edit, message):
    prefix, _, _ = _saved_lstm(tmp_path, mx.rnn.LSTMCell(4, prefix="lstm_"), lstm_i2h_c_weight=edit)
    # before: concatenated into a (15, 3) or mixed-dtype weight that failed (or was cast) at bind
    with pytest.raises(mx.base.MXNetError, match=message):
        mx.rnn.load_rnn_checkpoint(mx.rnn.LSTMCell(4, prefix="lstm_"), prefix, 1)


def test_load_rnn_checkpoint_checks_the_parameters_against_the_graph(tmp_path):
    # parameters of a 4-unit LSTM beside the graph of a 3-unit one
    prefix, _, _ = _saved_lstm(tmp_path, mx.rnn.LSTMCell(4, prefix="lstm_"))
    other = mx.rnn.LSTMCell(3, prefix="lstm_")
    out, _ = other.unroll(2, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    out.save(prefix + "-symbol.json")
    with pytest.raises(mx.base.MXNetError, match=r"'lstm_h2h_weight' in '.*ck-0001.params' has shape "
                       r"\(16, 4\), but the graph '.*ck-symbol.json' expects \(12, 3\)"):
        mx.rnn.load_rnn_checkpoint(mx.rnn.LSTMCell(4, prefix="lstm_"), prefix, 1)


@pytest.mark.parametrize("dtype", ["float16", "float64", "bfloat16"])
def test_pack_weights_takes_every_floating_dtype(dtype):
    cell = mx.rnn.LSTMCell(2, prefix="l_")
    args = {f"l_{g}{t}_{k}": mx.nd.ones((2, 3) if k == "weight" and g == "i2h" else (2, 2) if k == "weight"
                                         else (2,)).astype(dtype)
            for g in ("i2h", "h2h") for t in ("_i", "_f", "_c", "_o") for k in ("weight", "bias")}
    packed = cell.pack_weights(args)
    assert {k: v.shape for k, v in packed.items()} == {"l_i2h_weight": (8, 3), "l_i2h_bias": (8,),
                                                        "l_h2h_weight": (8, 2), "l_h2h_bias": (8,)}
    assert all(v.dtype == args["l_i2h_i_weight"].dtype for v in packed.values())
