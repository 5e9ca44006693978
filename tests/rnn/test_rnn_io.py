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
