"""MXNet 1.9.1's smaller modules, with numbers: mx.mon.Monitor, mx.engine, mx.executor,
mx.executor_manager, mx.log, mx.misc, mx.error, nd/sym.register, mx.notebook.callback,
mx.contrib.autograd / io / tensorboard / text, gluon.contrib.data.text, the doc builders."""
import collections
import logging
import math
import sys
import types

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import engine, error, executor, executor_manager, log, misc, monitor
from hybridnet import ndarray_doc, symbol_doc
from hybridnet.contrib import autograd as cag
from hybridnet.contrib import io as cio
from hybridnet.contrib import tensorboard as ctb
from hybridnet.contrib.text import embedding, utils as text_utils, vocab
from hybridnet.gluon.contrib.data import text as gtext
from hybridnet.ndarray import register as nd_register
from hybridnet.notebook import callback as nb
from hybridnet.symbol import register as sym_register


def _fc_executor():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    exe = out.simple_bind(mx.cpu(), data=(2, 4))
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.randn(*arr.shape)
    return exe


def _stat(x):
    return np.linalg.norm(x) / math.sqrt(x.size)


def test_monitor_on_an_executor_every_interval():
    exe = _fc_executor()
    mon = mx.mon.Monitor(2, pattern=".*", sort=True)
    assert mx.mon is monitor
    mon.install(exe)
    rows_per_step = []
    for _ in range(3):
        mon.tic()
        exe.forward()
        rows_per_step.append(mon.toc())
    assert rows_per_step[1] == []               # interval 2: only steps 0 and 2 collect
    rows = {name: float(text) for _, name, text in rows_per_step[0]}
    assert sorted(rows) == ["data", "fc_bias", "fc_output", "fc_weight"]
    for name in ("data", "fc_weight", "fc_bias"):
        assert rows[name] == pytest.approx(_stat(exe.arg_dict[name].asnumpy()), rel=1e-5)
    assert rows["fc_output"] == pytest.approx(_stat(exe.outputs[0].asnumpy()), rel=1e-5)
    assert [r[0] for r in rows_per_step[2]] == [3] * 4


def test_monitor_pattern_stat_func_and_a_hybrid_block():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(3, in_units=4), mx.gluon.nn.Activation("relu"))
    net.initialize(mx.init.One())
    net.hybridize()
    x = mx.nd.ones((2, 4))
    net(x)
    mon = mx.mon.Monitor(1, stat_func=lambda a: a.sum(), pattern=".*output|.*weight")
    mon.install(net)
    mon.tic()
    net(x)
    rows = {name: float(text) for _, name, text in mon.toc()}
    weights = [n for n in rows if n.endswith("weight")]
    assert len(weights) == 1 and rows[weights[0]] == 12.0
    outputs = [v for n, v in rows.items() if n.endswith("output")]
    assert outputs and max(outputs) == 2 * 3 * 4.0    # relu(x @ ones) = 4 everywhere


def test_engine_bulk_keeps_mxnets_signature():
    before = engine.set_bulk_size(7)
    with mx.engine.bulk(30) as scope:
        assert engine.set_bulk_size(30) == 30
        x = mx.nd.zeros((1,))
        for _ in range(5):
            x += 1
    assert isinstance(scope, engine._BulkScope)
    assert engine.set_bulk_size(before) == 7
    assert x.asscalar() == 5
    with pytest.raises(ValueError):
        engine.set_bulk_size(-1)


def test_executor_module_and_the_executor_manager():
    assert executor.Executor is mx.symbol.executor.Executor
    # shares round half to even (2.5 -> 2, as in MXNet on Python 3); the rest goes to the last
    assert executor_manager._split_input_slice(10, [1, 1, 2]) == [slice(0, 2), slice(2, 4),
                                                                   slice(4, 10)]
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    sym = mx.sym.LinearRegressionOutput(fc, name="lro")
    x = np.arange(8, dtype="f").reshape(4, 2)
    y = np.ones((4, 2), dtype="f")
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="lro_label")
    mgr = executor_manager.DataParallelExecutorManager(
        sym, [mx.cpu(0), mx.cpu(1)], it, sym.list_arguments(), ["fc_weight", "fc_bias"], [])
    w = mx.nd.array([[1, 0], [0, 1]])
    b = mx.nd.zeros((2,))
    mgr.set_params({"fc_weight": w, "fc_bias": b}, {})
    mgr.load_data_batch(it.next())
    mgr.forward(is_train=True)
    mgr.backward()
    grads = sum(g.asnumpy() for g in mgr.grad_arrays[0])
    # LinearRegressionOutput: d/dW = (x W^T - y)^T x / (outputs per example), summed over both
    # devices' halves of the batch
    np.testing.assert_allclose(grads, (x - y).T @ x / 2, rtol=1e-5)
    out_w, out_b = {"fc_weight": mx.nd.zeros((2, 2)), "fc_bias": mx.nd.zeros((2,))}, {}
    mgr.copy_to(out_w, out_b)
    np.testing.assert_allclose(out_w["fc_weight"].asnumpy(), np.eye(2))


def test_log_get_logger_format(tmp_path, capsys):
    logger = log.get_logger("h10_test_logger", level=log.INFO)
    assert log.get_logger("h10_test_logger") is logger and len(logger.handlers) == 1
    logger.info("hello")
    err = capsys.readouterr().err
    assert err.startswith("\x1b[32mI") and err.rstrip().endswith("]\x1b[0m hello")
    path = tmp_path / "x.log"
    flog = log.get_logger("h10_file_logger", filename=str(path), level=log.WARNING)
    flog.warning("to file")
    flog.info("not written")
    assert path.read_text().strip() == "to file"
    with pytest.warns(DeprecationWarning):
        assert log.getLogger("h10_test_logger") is logger


def test_misc_factor_scheduler():
    sched = misc.FactorScheduler(step=10, factor=0.5)
    assert [sched(i) for i in (0, 9, 10, 25, 40)] == pytest.approx([0.01, 0.01, 0.005, 0.0025,
                                                                   0.000625])
    with pytest.raises(ValueError):
        misc.FactorScheduler(step=0)


def test_error_classes():
    with pytest.raises(mx.MXNetError, match="MXNet hint"):
        raise error.InternalError("broken")
    assert error.ERROR_TYPES["ValueError"] is ValueError

    @error.register
    class MyError(mx.MXNetError):
        pass
    assert error.ERROR_TYPES["MyError"] is MyError


def test_register_modules_make_the_operator_functions():
    fc = nd_register._make_ndarray_function("FullyConnected", func_name="my_fc")
    x, w, b = mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), mx.nd.ones((4,))
    assert fc.__name__ == "my_fc"
    np.testing.assert_allclose(fc(x, w, b, num_hidden=4).asnumpy(), np.full((2, 4), 4.0))
    sfc = sym_register._make_symbol_function("FullyConnected")
    s = sfc(mx.sym.var("x"), num_hidden=4, name="f")
    assert s.list_arguments() == ["x", "f_weight", "f_bias"]
    assert nd_register._generate_ndarray_function_code("relu").startswith("def relu(data=None")
    with pytest.raises(TypeError, match="by name"):
        nd_register._make_ndarray_function(12345)


def test_doc_builders():
    class relu_h10Doc(ndarray_doc.NDArrayDoc):
        """Example: relu_h10(x)"""
    doc = ndarray_doc._build_doc("relu_h10", "Rectifier.", ["data"], ["NDArray-or-Symbol"],
                                 ["input"])
    assert doc.startswith("Rectifier.\n\nParameters\n----------\ndata : NDArray\n    input")
    assert "Example: relu_h10(x)" in doc
    sdoc = symbol_doc._build_doc("relu_h10", "Rectifier.", ["data", "data"], ["Symbol", "Symbol"],
                                 ["a", "b"])
    assert sdoc.count("data : Symbol") == 1 and "Returns\n-------\nSymbol" in sdoc
    shapes = symbol_doc.SymbolDoc.get_output_shape(
        mx.sym.FullyConnected(mx.sym.var("d"), num_hidden=5, name="f"), d=(2, 3))
    assert shapes == {"f_output": (2, 5)}


def test_notebook_pandas_logger_rows():
    logger = nb.PandasLogger(batch_size=32, frequent=2)
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array([0, 1])], [mx.nd.array([[1, 0], [1, 0]])])
    for nbatch in range(4):
        logger.train_cb(types.SimpleNamespace(nbatch=nbatch, epoch=0, eval_metric=metric))
    logger.epoch_cb(0, None, {}, {})
    rows = logger.rows["train"]
    assert [r["minibatch_count"] for r in rows] == [0, 2]
    assert rows[0]["accuracy"] == 0.5 and math.isnan(rows[1]["accuracy"])  # the metric was reset
    assert rows[0]["records_per_sec"] == pytest.approx(rows[0]["batches_per_sec"] * 32)
    assert len(logger.rows["epoch"]) == 1
    args = nb.args_wrapper(logger, logger)
    assert args["batch_end_callback"] == [logger.train_cb, logger.train_cb]
    if "pandas" not in sys.modules:
        try:
            import pandas  # noqa: F401
        except ImportError:
            with pytest.raises(mx.MXNetError, match="pandas"):
                logger.train_df
    with pytest.raises(mx.MXNetError):
        nb.LiveLearningCurve("accuracy")


def test_contrib_autograd_old_api():
    x = mx.nd.array([1.0, 2.0, 3.0])

    def f(a, b):
        return (a * a * b).sum()
    grads, loss = cag.grad_and_loss(f)(x, mx.nd.array([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(grads[0].asnumpy(), [4, 8, 12])
    np.testing.assert_allclose(grads[1].asnumpy(), [1, 4, 9])
    assert loss.asscalar() == 28
    g, = cag.grad(f, argnum=1)(x, mx.nd.ones(3))
    np.testing.assert_allclose(g.asnumpy(), [1, 4, 9])
    with cag.train_section():
        assert mx.autograd.is_training() and mx.autograd.is_recording()
        with cag.test_section():
            assert not mx.autograd.is_training() and not mx.autograd.is_recording()
    assert not mx.autograd.is_recording()


def test_contrib_io_dataloader_iter_pads_the_last_batch():
    ds = mx.gluon.data.ArrayDataset(np.arange(10, dtype="f").reshape(5, 2), np.arange(5, dtype="f"))
    loader = mx.gluon.data.DataLoader(ds, batch_size=2)
    it = cio.DataLoaderIter(loader)
    assert it.provide_data[0].shape == (2, 2)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 1]
    np.testing.assert_allclose(batches[2].data[0].asnumpy(), [[8, 9], [0, 0]])
    np.testing.assert_allclose(batches[2].label[0].asnumpy(), [4, 0])
    it.reset()
    assert len(list(it)) == 3


def test_tensorboard_callback_writes_scalars_or_says_what_to_install(monkeypatch, tmp_path):
    calls = []

    class Writer:
        def __init__(self, logdir):
            calls.append(("dir", logdir))

        def add_scalar(self, name, value, global_step):
            calls.append((name, value, global_step))
    fake = types.ModuleType("tensorboardX")
    fake.SummaryWriter = Writer
    monkeypatch.setattr(ctb, "_WRITERS", ("tensorboardX",))
    monkeypatch.setitem(sys.modules, "tensorboardX", fake)
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array([0, 1, 1, 1])], [mx.nd.array([[1, 0], [0, 1], [1, 0], [0, 1]])])
    cb = ctb.LogMetricsCallback(str(tmp_path), prefix="train")
    cb(types.SimpleNamespace(eval_metric=metric, epoch=3))
    assert calls == [("dir", str(tmp_path)), ("train-accuracy", 0.75, 3)]
    monkeypatch.setattr(ctb, "_WRITERS", ("no_such_writer_h10",))
    with pytest.raises(mx.MXNetError, match="pip install tensorboard"):
        ctb.LogMetricsCallback(str(tmp_path))


def test_text_counting_vocabulary_and_embeddings(tmp_path):
    counter = text_utils.count_tokens_from_str(" Life is great ! \n life is good . \n", to_lower=True)
    assert counter == collections.Counter({"is": 2, "life": 2, "!": 1, ".": 1, "good": 1,
                                           "great": 1})
    v = vocab.Vocabulary(counter, most_freq_count=3, reserved_tokens=["<pad>"])
    assert v.idx_to_token == ["<unk>", "<pad>", "is", "life", "!"]
    assert v.to_indices(["life", "zzz"]) == [3, 0] and v.to_tokens(2) == "is"
    with pytest.raises(ValueError):
        v.to_tokens(9)
    path = tmp_path / "emb.txt"
    path.write_text("hello 0.1 0.2 0.3\nworld 0.4 0.5 0.6\n<unk> 1 1 1\nhello 9 9 9\n")
    with pytest.warns(UserWarning, match="second vector"):
        emb = embedding.CustomEmbedding(str(path))
    assert emb.vec_len == 3 and len(emb) == 3
    np.testing.assert_allclose(emb.get_vecs_by_tokens(["world", "nope"]).asnumpy(),
                               [[0.4, 0.5, 0.6], [1, 1, 1]], rtol=1e-6)
    np.testing.assert_allclose(emb.get_vecs_by_tokens("HELLO", lower_case_backup=True).asnumpy(),
                               [0.1, 0.2, 0.3], rtol=1e-6)
    emb.update_token_vectors("hello", mx.nd.array([7, 8, 9]))
    np.testing.assert_allclose(emb.idx_to_vec[emb.token_to_idx["hello"]].asnumpy(), [7, 8, 9])
    small = vocab.Vocabulary(collections.Counter(["world", "hello", "hello", "new"]))
    comp = embedding.CompositeEmbedding(small, [emb, emb])
    assert comp.idx_to_vec.shape == (4, 6)
    np.testing.assert_allclose(comp.get_vecs_by_tokens("world").asnumpy(), [0.4, 0.5, 0.6] * 2,
                               rtol=1e-6)
    np.testing.assert_allclose(comp.get_vecs_by_tokens("new").asnumpy(), [1] * 6)
    assert "glove.6B.50d.txt" in embedding.get_pretrained_file_names("glove")
    with pytest.raises(mx.MXNetError, match="does not download"):
        embedding.create("glove", pretrained_file_name="glove.6B.50d.txt",
                         embedding_root=str(tmp_path))
    (tmp_path / "glove").mkdir()
    (tmp_path / "glove" / "glove.6B.50d.txt").write_text("a 1 2\nb 3 4\n")
    glove = embedding.create("glove", pretrained_file_name="glove.6B.50d.txt",
                             embedding_root=str(tmp_path))
    np.testing.assert_allclose(glove.get_vecs_by_tokens("b").asnumpy(), [3, 4])


def test_wikitext_from_local_files(tmp_path):
    (tmp_path / "wiki.train.tokens").write_text(" a b c \n\n a b \n d a \n")
    ds = gtext.WikiText2(root=str(tmp_path), seq_len=3)
    v = ds.vocabulary
    assert v.idx_to_token[:3] == ["<unk>", "<eos>", "a"]
    tokens = "a b c <eos> a b <eos> d a <eos>".split()
    ids = [v.token_to_idx[t] for t in tokens]
    assert len(ds) == 3
    data, label = ds[1]
    np.testing.assert_array_equal(data.asnumpy(), ids[3:6])
    np.testing.assert_array_equal(label.asnumpy(), ids[4:7])
    with pytest.raises(mx.MXNetError, match="wiki.valid.tokens"):
        gtext.WikiText2(root=str(tmp_path), segment="validation")
    assert mx.contrib.text.vocab.Vocabulary is gtext.Vocabulary
