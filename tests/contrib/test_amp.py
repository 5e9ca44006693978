"""mx.contrib.amp: MXNet's lists as data, the graph conversion, the loss scaler, and (in a
subprocess, because ``amp.init`` is process-wide and cannot be undone) mixed-precision execution
and training against float32."""
import collections
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.contrib import amp
from hybridnet.contrib.amp import amp as amp_module
from hybridnet.contrib.amp.loss_scaler import LossScaler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_flag_libraries_read_is_false_until_init():
    assert amp_module._amp_initialized is False
    assert mx.contrib.amp is amp and amp.amp is amp_module


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_lists_are_disjoint_and_known_operators_are_on_them(target):
    lp = amp.list_lp16_ops(target)
    groups = [lp, amp.list_lp16_fp32_ops(target), amp.list_fp32_ops(target),
              amp.list_widest_type_cast(target), [c[0] for c in amp.list_conditional_fp32_ops(target)]]
    counts = collections.Counter(name for g in groups for name in g)
    assert [n for n, c in counts.items() if c > 1] == []
    assert "FullyConnected" in lp and "Convolution" in lp
    assert "softmax" in amp.list_fp32_ops(target) and "dot" in amp.list_widest_type_cast(target)
    assert ("Activation", "act_type", ["softrelu"]) in amp.list_conditional_fp32_ops(target)


def test_list_sizes_and_fp32_params():
    assert amp.list_lp16_ops("float16") == ["Convolution", "Deconvolution", "FullyConnected", "RNN"]
    assert len(amp.list_fp32_ops("float16")) > 100 and amp.list_lp16_ops("bfloat16") == [
        "Convolution", "FullyConnected"]
    assert amp.list_lp16_use_fp32_params("float16") is None
    assert amp.list_lp16_use_fp32_params(amp.bfloat16)["BatchNorm"][1:] == [
        "gamma", "beta", "moving_mean", "moving_var"]
    assert amp.list_lp16_ops(np.float16) is amp.list_lp16_ops("float16")


def test_bad_target_dtype_is_a_clear_error():
    with pytest.raises(ValueError, match="'float16' or 'bfloat16'.*float64"):
        amp.list_lp16_ops("float64")
    with pytest.raises(ValueError, match="float64"):
        amp.init("float64")
    assert amp_module._amp_initialized is False


def _ops(sym):
    return [(n["op"], n["name"]) for n in json.loads(sym.tojson(remove_amp_cast=False))["nodes"]]


def test_convert_symbol_inserts_casts_where_mxnet_does():
    # MXNet 1.9.1's test_amp_conversion graph; node names checked against real MXNet's output
    x, y = mx.sym.var("x"), mx.sym.var("y")
    res = mx.sym.FullyConnected(x, y, num_hidden=10, no_bias=True, name="fc") + mx.sym.sin(y, name="sin")
    out = amp.convert_symbol(res, target_dtype="bfloat16", target_dtype_ops=["FullyConnected"],
                             fp32_ops=["sin"])
    assert _ops(out) == [("null", "x"), ("amp_cast", "x_amp_cast_bfloat16"), ("null", "y"),
                         ("amp_cast", "y_amp_cast_bfloat16"), ("FullyConnected", "fc"),
                         ("amp_cast", "fc_output_amp_cast_float32"), ("sin", "sin"),
                         ("elemwise_add", res.name)]
    # widest-type op with an unknown input type: one amp_multicast (real MXNet's names)
    d = mx.sym.var("data")
    net = mx.sym.dot(mx.sym.relu(mx.sym.FullyConnected(d, num_hidden=4, name="fc"), name="relu0"),
                     mx.sym.var("w"), name="dot0")
    ops = _ops(amp.convert_symbol(net, target_dtype="bfloat16"))
    assert ("amp_multicast", "relu0_0_amp_multicast") in ops
    assert ops[-1] == ("amp_cast", "dot0_0_amp_cast_float32")
    assert sum(op == "amp_cast" for op, _ in ops) == 4
    # the converted graph computes the float32 result to bfloat16 accuracy
    args = {"data": mx.nd.random.uniform(shape=(3, 5)), "fc_weight": mx.nd.random.uniform(shape=(4, 5)),
            "fc_bias": mx.nd.random.uniform(shape=(4,)), "w": mx.nd.random.uniform(shape=(4, 2))}
    ref = net.eval(**args)[0].asnumpy()
    got = amp.convert_symbol(net, target_dtype="bfloat16").eval(**args)[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), ref, rtol=3e-2, atol=3e-2)


def test_convert_symbol_conditional_and_list_errors():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    fc = mx.sym.FullyConnected(x, y, num_hidden=10, no_bias=True, name="fc")
    kept = amp.convert_symbol(fc, target_dtype="bfloat16", target_dtype_ops=[], fp32_ops=["sin"],
                              conditional_fp32_ops=[("FullyConnected", "no_bias", ["False"])])
    # real MXNet 1.9.1 gives exactly these nodes (outputs of unknown type are cast to float32)
    assert _ops(kept) == [("null", "x"), ("null", "y"), ("FullyConnected", "fc"),
                          ("amp_cast", "fc_output_amp_cast_float32")]
    cast = amp.convert_symbol(fc, target_dtype="bfloat16", target_dtype_ops=[], fp32_ops=["sin"],
                              conditional_fp32_ops=[("FullyConnected", "no_bias", ["True"])])
    assert _ops(cast) == [("null", "x"), ("amp_cast", "x_amp_cast_float32"), ("null", "y"),
                          ("amp_cast", "y_amp_cast_float32"), ("FullyConnected", "fc")]
    res = fc + mx.sym.sin(y)
    for kwargs in ({"target_dtype_ops": ["FullyConnected"], "fp32_ops": ["FullyConnected"]},
                   {"target_dtype_ops": ["FullyConnected"], "fp32_ops": ["elemwise_add"]},
                   {"target_dtype_ops": ["Activation"], "fp32_ops": [],
                    "conditional_fp32_ops": [("Activation", "act_type", ["selu"])]},
                   {"target_dtype_ops": ["no_such_op"]}):
        with pytest.raises(AssertionError):
            amp.convert_symbol(res, target_dtype="bfloat16", **kwargs)
    with pytest.raises(AssertionError, match="float16 and bfloat16"):
        amp.convert_symbol(res, target_dtype="float64")


def test_convert_model_casts_optional_params():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=8, name="fc")
    arg = {"fc_weight": mx.nd.random.uniform(-1, 1, shape=(8, 6)), "fc_bias": mx.nd.random.uniform(shape=(8,))}
    x = mx.nd.random.uniform(0, 10, shape=(5, 6))
    ref = fc.eval(data=x, **arg)[0].asnumpy()
    for optional in (False, True):
        sym, new_arg, _ = amp.convert_model(fc, dict(arg), {}, target_dtype="bfloat16",
                                            target_dtype_ops=["FullyConnected"],
                                            cast_optional_params=optional)
        want = amp.bfloat16 if optional else np.float32
        assert new_arg["fc_weight"].dtype == want and new_arg["fc_bias"].dtype == want
        assert ("amp_cast" in [op for op, name in _ops(sym) if "weight" in name]) is not optional
        out = sym.eval(data=x, **new_arg)[0]
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=5e-2, atol=5e-2)


def test_convert_hybrid_block_runs_in_low_precision():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(4, 3), mx.gluon.nn.BatchNorm(), mx.gluon.nn.Activation("relu"),
            mx.gluon.nn.Dense(3))
    net.initialize()
    x = mx.nd.random.uniform(shape=(2, 1, 8, 8))
    with pytest.raises(RuntimeError, match="hybridize"):
        amp.convert_hybrid_block(net, target_dtype="bfloat16")
    net.hybridize()
    ref = net(x).asnumpy()
    converted = amp.convert_hybrid_block(net, target_dtype="bfloat16", cast_optional_params=True)
    out = converted(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=5e-2, atol=5e-2)
    params = converted.collect_params()
    assert params[net[0].weight.name].dtype == amp.bfloat16
    assert params[net[1].gamma.name].dtype == np.float32  # BatchNorm keeps float32 (bfloat16 list)


def _param_with_grad(values):
    p = mx.gluon.Parameter("w", shape=(len(values),))
    p.initialize()
    p.list_grad()[0][:] = mx.nd.array(values)
    return p


def test_loss_scaler_halves_on_overflow_and_grows_after_2000_good_steps():
    scaler = LossScaler()
    assert scaler.loss_scale == 2.0 ** 16
    good, bad = _param_with_grad([1.0, 2.0]), _param_with_grad([1.0, np.inf])
    assert scaler.has_overflow([bad]) is True
    assert scaler.loss_scale == 2.0 ** 16          # the new scale applies from the next check
    assert scaler.has_overflow([good]) is False
    assert scaler.loss_scale == 2.0 ** 15
    nan = _param_with_grad([np.nan, 0.0])
    assert scaler.has_overflow([nan]) is True
    for _ in range(2000):
        assert scaler.has_overflow([good]) is False
    assert scaler.loss_scale == 2.0 ** 14           # halved by the NaN step
    scaler.has_overflow([good])
    assert scaler.loss_scale == 2.0 ** 15           # doubled after 2000 clean steps


def test_trainer_api_errors():
    net = mx.gluon.nn.Dense(2)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd")
    with pytest.raises(mx.MXNetError, match="amp.init_trainer"):
        with amp.scale_loss(mx.nd.ones((1,)), trainer):
            pass
    with pytest.raises(mx.MXNetError, match=r"amp.init\(\)"):
        amp.init_trainer(trainer)
    with pytest.raises(TypeError, match="Gluon Trainer"):
        amp.unscale(mx.optimizer.SGD())


AMP_SCRIPT = textwrap.dedent('''
    import json, sys
    import numpy as np
    import hybridnet as mx
    from hybridnet import autograd, gluon, nd
    from hybridnet.contrib import amp

    def lenet():
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Conv2D(6, 5, activation="relu"), gluon.nn.MaxPool2D(2),
                gluon.nn.Flatten(), gluon.nn.Dense(32, activation="relu"), gluon.nn.Dense(3))
        return net

    rng = np.random.RandomState(0)
    centers = rng.uniform(0, 1, size=(3, 1, 12, 12)).astype(np.float32)
    labels = rng.randint(0, 3, size=96)
    images = centers[labels] + 0.3 * rng.standard_normal((96, 1, 12, 12)).astype(np.float32)

    def train(use_amp, hybridize):
        mx.random.seed(1)
        net = lenet()
        net.initialize(mx.init.Xavier())
        if hybridize:
            net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
        if use_amp:
            amp.init_trainer(trainer)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        curve = []
        for epoch in range(6):
            for start in range(0, 96, 32):
                x = nd.array(images[start:start + 32]); y = nd.array(labels[start:start + 32])
                with autograd.record():
                    loss = loss_fn(net(x), y)
                    if use_amp:
                        with amp.scale_loss(loss, trainer) as scaled:
                            autograd.backward(scaled)
                if not use_amp:
                    loss.backward()
                trainer.step(32)
                curve.append(float(loss.astype("float32").mean().asscalar()))
        acc = float((net(nd.array(images)).astype("float32").asnumpy().argmax(1) == labels).mean())
        return curve, acc, trainer

    mode = sys.argv[1]
    out = {}
    if mode == "float32":
        out["eager"] = train(False, False)[:2]
        out["hybrid"] = train(False, True)[:2]
    else:
        amp.init(target_dtype=mode)
        out["initialized"] = amp.amp._amp_initialized
        x = nd.random.uniform(shape=(2, 3)); w = nd.random.uniform(shape=(4, 3))
        fc = nd.FullyConnected(x, w, no_bias=True, num_hidden=4)
        out["fc_dtype"] = str(fc.dtype)
        out["relu_keeps"] = str(nd.relu(fc).dtype) == str(fc.dtype) and str(fc.relu().dtype) == str(fc.dtype)
        out["softmax_dtype"] = str(nd.softmax(fc).dtype)
        out["dot_widest"] = str(nd.dot(fc, nd.ones((4, 2))).dtype)
        out["fc_error"] = float(np.abs(fc.astype("float32").asnumpy() - x.asnumpy() @ w.asnumpy().T).max())
        qkv = nd.amp_cast(nd.random.uniform(shape=(6, 1, 96)), dtype=mode)  # attention, mixed types
        att = nd.softmax(nd.random.uniform(shape=(4, 6, 6)))
        out["valatt_dtype"] = str(nd.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=4).dtype)
        s = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
        out["sym_casts"] = sum(1 for n in s._graph().nodes if n.op is not None and n.op.name == "amp_cast")
        out["eager"] = train(True, False)[:2]
        curve, acc, trainer = train(True, True)
        out["hybrid"] = [curve, acc]
        net = lenet(); net.initialize(); net.hybridize(); net(nd.ones((1, 1, 12, 12)))
        out["graph_casts"] = sum(1 for n in net._cached_graph[1]._graph().nodes
                                 if n.op is not None and n.op.name == "amp_cast")
        # an overflowing step is skipped: weights unchanged, the scale halves at the next check
        params = list(net.collect_params().values())
        tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        amp.init_trainer(tr)
        before = [p.data().asnumpy().copy() for p in params]
        with autograd.record():
            loss = net(nd.ones((2, 1, 12, 12))).astype("float32").sum()
            with amp.scale_loss(loss, tr) as scaled:
                autograd.backward(scaled * float("inf"))
        tr.step(2)
        out["skipped"] = all(np.array_equal(b, p.data().asnumpy()) for b, p in zip(before, params))
        with autograd.record():
            loss = net(nd.ones((2, 1, 12, 12))).astype("float32").sum()
            with amp.scale_loss(loss, tr) as scaled:
                autograd.backward(scaled)
        tr.step(2)
        out["scale_after_overflow"] = tr._amp_loss_scaler.loss_scale
        with autograd.record():  # a small loss, so float16 gradients stay finite at this scale
            loss = net(nd.ones((2, 1, 12, 12))).astype("float32").sum() * 1e-4
            with amp.scale_loss(loss, tr) as scaled:
                autograd.backward(scaled)
        # unscale: gradients divided by the scale, the next step uses them as they are
        g_scaled = params[-1].grad().asnumpy().copy()
        out["scale_at_unscale"] = tr._amp_loss_scaler.loss_scale
        amp.unscale(tr)
        out["unscaled_ratio"] = float(np.abs(g_scaled).sum() / np.abs(params[-1].grad().asnumpy()).sum())
    print(json.dumps(out))
''')


def _run(mode):
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", AMP_SCRIPT, mode], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def float32_run():
    return _run("float32")


@pytest.mark.parametrize("target", ["bfloat16", "float16"])
def test_amp_training_matches_float32(target, float32_run):
    got = _run(target)
    assert got["initialized"] is True
    assert target in got["fc_dtype"] or (target == "float16" and got["fc_dtype"] == "<class 'numpy.float16'>")
    assert got["relu_keeps"] is True
    assert got["softmax_dtype"] == "<class 'numpy.float32'>"
    assert got["dot_widest"] == "<class 'numpy.float32'>"
    assert got["fc_error"] < 0.05
    assert got["valatt_dtype"] == "<class 'numpy.float32'>"  # widest of bfloat16/float16 and float32
    assert got["sym_casts"] == 3                      # data, weight and bias of FullyConnected
    assert got["graph_casts"] >= 6                    # Conv2D and two Dense layers' inputs
    for mode in ("eager", "hybrid"):
        ref_curve, ref_acc = float32_run[mode]
        curve, acc = got[mode]
        assert ref_curve[-1] < 0.5 * ref_curve[0]      # float32 learns
        assert curve[-1] < 0.5 * curve[0]              # AMP learns
        if target == "bfloat16":  # float32's range: no overflow, the curves agree step by step
            np.testing.assert_allclose(curve, ref_curve, rtol=0.25, atol=0.08)
        else:  # float16 gradients overflow at 2**16: the first steps are skipped, the scale halves
            assert curve[0] == pytest.approx(curve[3], abs=1e-3)
            assert curve[-1] < ref_curve[-1] + 0.15
        assert acc >= ref_acc - 0.05
    assert got["skipped"] is True
    assert got["scale_after_overflow"] <= 2.0 ** 15
    if target == "bfloat16":
        assert got["scale_after_overflow"] == 2.0 ** 15
    np.testing.assert_allclose(got["unscaled_ratio"], got["scale_at_unscale"], rtol=1e-5)


def test_converted_model_binds_in_module_like_mxnet():
    # MXNet 1.9.1 mkl/test_contrib_amp.py: test_amp_accuracy and test_module_backward_compatibility
    batch = collections.namedtuple("Batch", ["data"])
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv2d")
    x = [mx.nd.random.uniform(0, 100, shape=(2, 4, 10, 10))]
    fp32 = mx.mod.Module(conv, label_names=None, context=mx.cpu())
    fp32.bind(data_shapes=[("data", (2, 4, 10, 10))])
    fp32.init_params()
    fp32.forward(batch(x), is_train=False)
    ref = fp32.get_outputs()[0].asnumpy()
    arg, aux = fp32.get_params()
    for optional in (False, True):
        sym, a, b = amp.convert_model(conv, arg, aux, target_dtype="bfloat16",
                                      target_dtype_ops=["Convolution"], cast_optional_params=optional)
        assert sym.attr_dict()["conv2d_weight"]["__dtype__"] == ("12" if optional else "0")
        mod = mx.mod.Module(sym, label_names=None, context=mx.cpu())
        mod.bind(data_shapes=[("data", (2, 4, 10, 10))])
        mod.set_params(a, b)
        mod.forward(batch(x), is_train=False)
        out = mod.get_outputs()[0]
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-1, atol=2e-1 * np.abs(ref).max())
    # an operator on no list reading bfloat16 data runs in bfloat16: its parameters are cast
    bn = mx.sym.BatchNorm(mx.sym.Convolution(data, num_filter=10, kernel=(2, 3)), fix_gamma=False,
                          name="conv0_batchnorm")
    fc = mx.sym.FullyConnected(bn, num_hidden=10, name="fullyconnected")
    mod = mx.mod.Module(fc, label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[("data", (1, 3, 16, 16))])
    mod.init_params()
    sym, a, b = amp.convert_model(mod._symbol, mod._arg_params, mod._aux_params,
                                  target_dtype="bfloat16", target_dtype_ops=["Convolution"])
    assert a["fullyconnected_weight"].dtype == amp.bfloat16
    assert a["conv0_batchnorm_gamma"].dtype == np.float32
    mod = mx.mod.Module(sym, label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[("data", (1, 3, 16, 16))])
    mod.set_params(a, b)
    mod.forward(batch([mx.nd.ones((1, 3, 16, 16))]), is_train=False)
    assert np.isfinite(mod.get_outputs()[0].asnumpy()).all()


NLP_SCRIPT = textwrap.dedent('''
    import sys
    import mxnet as mx
    from mxnet.contrib import amp
    amp.init(sys.argv[1])
    import gluonnlp as nlp
    assert mx.contrib.amp.amp._amp_initialized  # what GluonNLP reads
    enc = nlp.model.BERTEncoder(num_layers=1, units=32, hidden_size=64, num_heads=4, max_length=16)
    model = nlp.model.BERTModel(enc, vocab_size=50, token_type_vocab_size=2, units=32, embed_size=32,
                                use_pooler=True, use_decoder=False, use_classifier=False)
    model.initialize()
    model.hybridize()
    trainer = mx.gluon.Trainer(model.collect_params(), "adam", update_on_kvstore=False)
    amp.init_trainer(trainer)
    tokens, types, valid = mx.nd.array([[1, 2, 3, 4]]), mx.nd.zeros((1, 4)), mx.nd.array([4])
    with mx.autograd.record():
        loss = model(tokens, types, valid)[1].astype("float32").sum()
        with amp.scale_loss(loss, trainer) as scaled:
            mx.autograd.backward(scaled)
    trainer.step(1)
    print("ok")
''')


@pytest.mark.parametrize("target", ["bfloat16", "float16"])
def test_gluonnlp_bert_trains_under_amp(target):
    if importlib.util.find_spec("gluonnlp") is None:  # importing it needs the mxnet alias
        pytest.skip("gluonnlp is not installed")
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "hybridnet", "-c", NLP_SCRIPT, target],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
