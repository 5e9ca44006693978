"""mx.io.LibSVMIter: CSR batches from LibSVM text, with MXNet's documented numbers (its
docstring example), CSR labels, parts, and errors that name the line."""
import numpy as np
import pytest

import hybridnet as mx

DATA = "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n"


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_mxnet_docstring_example(tmp_path):
    it = mx.io.LibSVMIter(data_libsvm=_write(tmp_path, "data.t", DATA), data_shape=(3,),
                          batch_size=3)
    batches = list(it)
    assert len(batches) == 2
    b0, b1 = batches
    assert isinstance(b0.data[0], mx.nd.sparse.CSRNDArray) and b0.data[0].stype == "csr"
    np.testing.assert_allclose(b0.data[0].asnumpy(), [[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2]],
                               rtol=1e-6)
    np.testing.assert_allclose(b0.label[0].asnumpy(), [1, -2, -3])
    # the last batch wraps around to the start (round_batch) and says how many rows are padding
    np.testing.assert_allclose(b1.data[0].asnumpy(), [[0, 0, -1.2], [0.5, 0, 1.2], [0, 0, 0]],
                               rtol=1e-6)
    np.testing.assert_allclose(b1.label[0].asnumpy(), [4, 1, -2])
    assert b1.pad == 2
    assert it.provide_data[0].shape == (3, 3) and it.provide_label[0].shape == (3,)
    # MXNet: the next epoch starts after the rows the wrap already used
    it.reset()
    np.testing.assert_allclose(it.next().label[0].asnumpy(), [-3, 4, 1])


def test_csr_labels_and_parts(tmp_path):
    data = _write(tmp_path, "d.t", DATA)
    label = _write(tmp_path, "l.t", "0 0:1\n0 1:1\n0 0:1 1:2\n0\n")
    it = mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), label_libsvm=label,
                          label_shape=(2,), batch_size=2)
    b = it.next()
    assert b.label[0].stype == "csr"
    np.testing.assert_allclose(b.label[0].asnumpy(), [[1, 0], [0, 1]])
    part = mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), batch_size=2, num_parts=2,
                            part_index=1)
    np.testing.assert_allclose(part.next().label[0].asnumpy(), [-3, 4])


def test_csr_batches_train_a_linear_model(tmp_path):
    rng = np.random.RandomState(0)
    w_true = np.array([1.5, -2.0, 0.0, 0.5], dtype="f")
    lines = []
    for _ in range(64):
        x = rng.rand(4) * (rng.rand(4) < 0.6)
        lines.append(f"{float(x @ w_true)} " + " ".join(f"{j}:{x[j]}" for j in range(4) if x[j]))
    it = mx.io.LibSVMIter(data_libsvm=_write(tmp_path, "r.t", "\n".join(lines) + "\n"),
                          data_shape=(4,), batch_size=16)
    w = mx.nd.zeros((4, 1))
    for _ in range(150):
        it.reset()
        for batch in it:
            x, y = batch.data[0], batch.label[0].reshape((-1, 1))
            grad = mx.nd.dot(x, mx.nd.dot(x, w) - y, transpose_a=True) / 16
            w -= 0.5 * grad
    np.testing.assert_allclose(w.asnumpy().ravel(), w_true, atol=0.05)


def test_errors_name_the_line(tmp_path):
    bad = _write(tmp_path, "bad.t", "1 0:1\n1 7:2\n")
    with pytest.raises(mx.MXNetError, match=r"line 2 .*index 7"):
        mx.io.LibSVMIter(data_libsvm=bad, data_shape=(3,), batch_size=1)
    junk = _write(tmp_path, "junk.t", "1 a:b\n")
    with pytest.raises(mx.MXNetError, match="line 1 .*LibSVM"):
        mx.io.LibSVMIter(data_libsvm=junk, data_shape=(3,), batch_size=1)
    with pytest.raises(mx.MXNetError, match="does not exist"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "none.t"), data_shape=(3,), batch_size=1)
