"""mx.mod: Module training, forward/backward/update against a hand computation, data
parallelism, checkpoints and optimizer states, BucketingModule parameter sharing."""
import numpy as np
import pytest

import hybridnet as mx


def _mlp(num_hidden=16, num_class=3):
    data = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=num_hidden, name="fc1"), act_type="relu")
    out = mx.sym.FullyConnected(h, num_hidden=num_class, name="fc2")
    return mx.sym.SoftmaxOutput(out, name="softmax")


def _blobs(n=120, seed=0):
    rng = np.random.RandomState(seed)
    centers = np.array([[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0]], dtype="f")
    y = rng.randint(0, 3, size=n)
    x = centers[y] + rng.randn(n, 4).astype("f") * 0.5
    return x, y.astype("f")


def test_fit_reaches_accuracy_and_score_predict_shapes():
    mx.random.seed(0)
    x, y = _blobs()
    it = mx.io.NDArrayIter(x, y, batch_size=20, shuffle=True)
    mod = mx.mod.Module(_mlp())
    mod.fit(it, num_epoch=15, optimizer_params={"learning_rate": 0.3}, initializer=mx.init.Xavier())
    (name, acc), = mod.score(it, "acc")
    assert name == "accuracy" and acc > 0.95
    # predict merges batches and drops the padding of the last batch
    it_pad = mx.io.NDArrayIter(x[:50], y[:50], batch_size=20)
    pred = mod.predict(it_pad)
    assert pred.shape == (50, 3)
    np.testing.assert_allclose(pred.asnumpy().sum(1), np.ones(50), rtol=1e-5)
    assert mod.output_shapes == [("softmax_output", (20, 3))]
    assert [tuple(d) for d in mod.data_shapes] == [("data", (20, 4))]
    outs = list(mod.iter_predict(it_pad))
    assert [o[0][0].shape[0] for o in outs] == [20, 20, 10]


def test_forward_backward_update_match_hand_computation():
    data = mx.sym.var("data")
    out = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), name="lro")
    mod = mx.mod.Module(out, label_names=("lro_label",))
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("lro_label", (4, 2))])
    rng = np.random.RandomState(1)
    w, b = rng.randn(2, 3).astype("f"), rng.randn(2).astype("f")
    mod.init_params(arg_params={"fc_weight": mx.nd.array(w), "fc_bias": mx.nd.array(b)})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    x, t = rng.randn(4, 3).astype("f"), rng.randn(4, 2).astype("f")
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(t)]), is_train=True)
    pred = x @ w.T + b
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), pred, rtol=1e-5)
    mod.backward()
    mod.update()
    # LinearRegressionOutput's gradient is (pred - label) / num_output (MXNet divides by the
    # label size per example, here 2); rescale_grad = 1 / batch_size
    g = (pred - t) / 2 / 4
    arg, _ = mod.get_params()
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), w - 0.1 * g.T @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), b - 0.1 * g.sum(0), rtol=1e-5, atol=1e-6)


def test_input_grads_and_multi_context_split():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    mod = mx.mod.Module(a + 2 * b, data_names=["b", "a"], label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("b", (5, 3)), ("a", (5, 3))], inputs_need_grad=True)
    mod.init_params()
    av, bv = np.arange(15, dtype="f").reshape(5, 3), np.ones((5, 3), "f")
    mod.forward(mx.io.DataBatch([mx.nd.array(bv), mx.nd.array(av)]))
    per_dev = mod.get_outputs(merge_multi_context=False)[0]
    assert [o.shape for o in per_dev] == [(2, 3), (3, 3)]  # round(2.5) == 2, rest to the last
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), av + 2 * bv)
    og = np.arange(15, dtype="f").reshape(5, 3)
    mod.backward([mx.nd.array(og)])
    gb, ga = mod.get_input_grads()
    np.testing.assert_allclose(ga.asnumpy(), og)
    np.testing.assert_allclose(gb.asnumpy(), 2 * og)


def test_multi_device_update_equals_single_device():
    """Two contexts with the kvstore give the same update as one context on the full batch."""
    x, y = _blobs(40)
    results = []
    for ctx in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        mod = mx.mod.Module(_mlp(), context=ctx)
        mod.bind([("data", (40, 4))], [("softmax_label", (40,))])
        mod.init_params(mx.init.Constant(0.1))
        mod.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
        for _ in range(3):
            mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
            mod.update()
        results.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
    for k in results[0]:
        np.testing.assert_allclose(results[0][k], results[1][k], rtol=1e-5, atol=1e-6)


def test_reshape_keeps_parameters():
    data = mx.sym.var("data")
    mod = mx.mod.Module(mx.sym.FullyConnected(data, num_hidden=4, name="fc"), label_names=None)
    mod.bind([("data", (6, 5))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    for n, expected in ((6, -1.0), (12, -3.0)):
        batch = mx.io.DataBatch([mx.nd.ones((n, 5))])
        mod.forward(batch)   # a new batch size reshapes the module
        mod.backward([mx.nd.ones((n, 4))])
        mod.update()
        assert mod.get_outputs()[0].shape == (n, 4)
        np.testing.assert_allclose(mod.get_params()[0]["fc_bias"].asnumpy(), expected)


def test_checkpoint_and_optimizer_states_round_trip(tmp_path):
    x, y = _blobs(40)
    it = mx.io.NDArrayIter(x, y, batch_size=10)
    mod = mx.mod.Module(_mlp())
    sgd = {"learning_rate": 0.1, "momentum": 0.9}
    mod.fit(it, num_epoch=2, optimizer="sgd", optimizer_params=sgd)
    prefix = str(tmp_path / "m")
    mod.save_checkpoint(prefix, 2, save_optimizer_states=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-0002.params", "m-0002.states", "m-symbol.json"]
    mod2 = mx.mod.Module.load(prefix, 2, load_optimizer_states=True)
    mod2.bind(it.provide_data, it.provide_label)
    mod2.init_optimizer(optimizer="sgd", optimizer_params=sgd)
    p1, p2 = mod.get_params()[0], mod2.get_params()[0]
    assert set(p1) == set(p2)
    for k in p1:
        np.testing.assert_array_equal(p1[k].asnumpy(), p2[k].asnumpy())
    s1, s2 = mod._updater.states, mod2._updater.states
    assert set(s1) == set(s2)
    for k in s1:
        np.testing.assert_array_equal(s1[k].asnumpy(), s2[k].asnumpy())
    # one more identical step gives identical weights (states really were restored)
    batch = next(iter(it))
    for m in (mod, mod2):
        m.forward_backward(batch)
        m.update()
    for k in p1:
        np.testing.assert_allclose(mod.get_params()[0][k].asnumpy(), mod2.get_params()[0][k].asnumpy(),
                                   rtol=1e-6)
    assert mod.score(it, "acc") == mod2.score(it, "acc")


def test_set_params_missing_and_extra():
    mod = mx.mod.Module(_mlp())
    mod.bind([("data", (2, 4))], [("softmax_label", (2,))])
    full = {"fc1_weight": mx.nd.ones((16, 4)), "fc1_bias": mx.nd.zeros((16,)),
            "fc2_weight": mx.nd.ones((3, 16)), "fc2_bias": mx.nd.zeros((3,))}
    mod.set_params(full, {})
    missing = {k: v for k, v in full.items() if k != "fc2_bias"}
    with pytest.raises(RuntimeError, match="fc2_bias"):
        mod.set_params(missing, {})
    extra = dict(full, fc3_weight=mx.nd.ones((2,)))
    mod.set_params(extra, {})  # through init_params, extra values are ignored (as in MXNet)
    with pytest.raises(ValueError, match="fc3_weight"):
        mod.set_params(extra, {}, allow_missing=True)
    mod.set_params(extra, {}, allow_extra=True)
    np.testing.assert_array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(), np.ones((16, 4)))


def test_state_machine_errors():
    mod = mx.mod.Module(_mlp())
    with pytest.raises(mx.MXNetError, match="not bound"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((2, 4))]))
    with pytest.raises(ValueError, match="datum"):
        mx.mod.Module(_mlp(), data_names=("datum",))
    with pytest.raises(TypeError, match="shape"):
        mod.bind(data_shapes=[("data", mx.nd.array([10, 10]))])
    assert not mod.binded


def test_bucketing_module_shares_parameters_and_grad_req_add():
    def sym_gen(key):
        data = mx.sym.var("data")
        weight = mx.sym.var("a", shape=(1,), init=mx.init.One())
        return mx.sym.make_loss(mx.sym.broadcast_mul(data, weight)), ("data",), None

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=10)
    mod.bind([("data", (2,))], for_training=True, grad_req="add")
    mod.init_params()
    for key in (10, 5):
        mod.forward_backward(mx.io.DataBatch([mx.nd.ones((2,))], None, bucket_key=key,
                                             provide_data=[mx.io.DataDesc("data", (2,), layout="N")]))
    assert set(mod._buckets) == {10, 5}
    grad = mod._curr_module._exec_group.execs[0].grad_dict["a"]
    assert grad is mod._buckets[10]._exec_group.execs[0].grad_dict["a"]
    assert grad.asscalar() == 4.0


def test_executor_group_shares_inputs_with_shared_group():
    from hybridnet.module.executor_group import DataParallelExecutorGroup
    sym1 = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    sym2 = mx.sym.FullyConnected(sym1, num_hidden=2, name="fc_extra")
    ctxs = [mx.cpu(0), mx.cpu(1)]
    g1 = DataParallelExecutorGroup(sym1, ctxs, None, [("data", (4, 5))], None, ["fc_weight", "fc_bias"],
                                   True, False)
    g2 = DataParallelExecutorGroup(sym2, ctxs, None, [("data", (4, 5))], None, ["fc_weight", "fc_bias"],
                                   True, False, shared_group=g1)
    for i in range(2):
        for n in ("fc_weight", "fc_bias"):
            assert mx.test_utils.same_array(g1.execs[i].arg_dict[n], g2.execs[i].arg_dict[n])
            assert mx.test_utils.same_array(g1.execs[i].grad_dict[n], g2.execs[i].grad_dict[n])
        assert mx.test_utils.same_array(g1.execs[i].arg_dict["data"], g2.execs[i].arg_dict["data"])
        assert set(g1.shared_data_arrays[i]) == {"data", "fc_extra_weight", "fc_extra_bias"}


def test_callbacks_checkpoint_and_speedometer(tmp_path, caplog):
    import logging
    x, y = _blobs(40)
    it = mx.io.NDArrayIter(x, y, batch_size=10)
    mod = mx.mod.Module(_mlp())
    prefix = str(tmp_path / "cb")
    with caplog.at_level(logging.INFO):
        mod.fit(it, num_epoch=4, epoch_end_callback=[mx.callback.do_checkpoint(prefix, period=2),
                                                      mx.callback.module_checkpoint(mod, prefix + "m", 4)],
                batch_end_callback=mx.callback.Speedometer(10, frequent=2))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cb-0002.params", "cb-0004.params", "cb-symbol.json", "cbm-0004.params", "cbm-symbol.json"]
    speed_lines = [r.getMessage() for r in caplog.records if "samples/sec" in r.getMessage()]
    assert len(speed_lines) == 4 and "accuracy=" in speed_lines[0]   # batch 2 of each epoch
    _, arg, _ = mx.model.load_checkpoint(prefix, 4)
    np.testing.assert_array_equal(arg["fc1_weight"].asnumpy(), mod.get_params()[0]["fc1_weight"].asnumpy())


def test_layout_batch_axis_and_float16():
    """The batch axis comes from the layout (TNC: axis 1) for inputs and outputs."""
    sym = mx.sym.Activation(data=mx.sym.var("data"), act_type="relu", attr={"__layout__": "TNC"})
    mod = mx.mod.Module(sym, ("data",), None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[mx.io.DataDesc("data", (3, 8, 7), np.float16, layout="TNC")])
    mod.init_params()
    x = np.random.RandomState(0).randn(3, 8, 7).astype(np.float16)
    mod.forward(mx.io.DataBatch([mx.nd.array(x, dtype=np.float16)]))
    mod.backward([mx.nd.ones((3, 8, 7), dtype=np.float16)])
    out = mod.get_outputs()[0]
    assert out.dtype == np.float16 and out.shape == (3, 8, 7)
    np.testing.assert_array_equal(out.asnumpy(), np.maximum(x, 0))
    assert [o.shape for o in mod.get_outputs(merge_multi_context=False)[0]] == [(3, 4, 7), (3, 4, 7)]


def _trained(num_hidden, tmp_path, name):
    x, y = _blobs(20)
    it = mx.io.NDArrayIter(x, y, batch_size=10)
    mod = mx.mod.Module(_mlp(num_hidden=num_hidden))
    mod.fit(it, num_epoch=1, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    path = str(tmp_path / name)
    mod.save_optimizer_states(path)
    return mod, path


def test_load_optimizer_states_refuses_states_of_another_network(tmp_path):
    # they used to load, and the first update() failed later with a TypeError
    mod, _ = _trained(16, tmp_path, "a.states")
    _, other = _trained(8, tmp_path, "b.states")
    before = {k: v.asnumpy().copy() for k, v in mod._updater.states.items()}
    with pytest.raises(mx.base.MXNetError, match=r"Module.load_optimizer_states\(.*b\.states'\): "
                                                  r"load_states: parameter 'fc1_weight' \(index 0\) state"):
        mod.load_optimizer_states(other)
    for k, v in mod._updater.states.items():  # refused: the module keeps its own states
        np.testing.assert_array_equal(v.asnumpy(), before[k])
    junk = tmp_path / "junk.states"
    junk.write_bytes(b"\x00" * 64)
    with pytest.raises(mx.base.MXNetError, match=r"junk\.states"):
        mod.load_optimizer_states(str(junk))


def test_get_params_in_another_thread_sees_whole_updates():
    import hashlib
    import threading
    data = mx.sym.var("data")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, num_hidden=256, name="fc"), name="out")
    mod = mx.mod.Module(net, label_names=["out_label"])
    mod.bind(data_shapes=[("data", (8, 512))], label_shapes=[("out_label", (8, 256))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
    rng = np.random.RandomState(0)
    batch = mx.io.DataBatch([mx.nd.array(rng.randn(8, 512))], [mx.nd.array(rng.randn(8, 256))])

    def digest():  # each array on its own: another update may come between two reads
        arg, _ = mod.get_params()
        return hashlib.sha1(arg["fc_weight"].asnumpy().tobytes()).hexdigest()

    steps = {digest()}
    seen: list = []
    stop = threading.Event()
    t = threading.Thread(target=lambda: [seen.append(digest()) for _ in iter(stop.is_set, True)])
    t.start()
    try:
        for _ in range(150):
            mod.forward_backward(batch)
            mod.update()
            with mod._write_guard:  # the training thread's own view of the step just taken
                steps.add(digest())
    finally:
        stop.set()
        t.join()
    assert seen and all(s in steps for s in seen)
