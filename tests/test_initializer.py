"""mx.init: statistics of the random initializers, exact values of the deterministic ones,
MXNet's name/``__init__`` dispatch, JSON dumps and the registry."""
from __future__ import annotations

import json
import logging
import math

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError

init = mx.init


def _arr(shape, dtype="float32", fill=7.0):
    a = mx.nd.zeros(shape, dtype=dtype)
    a[:] = fill
    return a


def _run(initializer, name, shape, attrs=None, dtype="float32"):
    a = _arr(shape, dtype)
    initializer(init.InitDesc(name, attrs), a)
    return a.asnumpy()


def test_namespace():
    assert mx.init is mx.initializer
    for n in ("zeros", "zero", "ones", "one", "constant", "uniform", "normal", "xavier",
              "msraprelu", "orthogonal", "bilinear", "lstmbias", "fusedrnn", "mixed", "load"):
        assert n in init._INITIALIZER_REGISTRY, n


def test_initdesc_is_str():
    d = init.InitDesc("dense0_weight", {"__init__": "zeros"})
    assert isinstance(d, str) and d == "dense0_weight"
    assert d.attrs == {"__init__": "zeros"} and d.global_init is None
    assert init.InitDesc("x").attrs == {}


# -- random initializers: statistics --------------------------------------------------------

def test_uniform_stats_and_inplace():
    mx.random.seed(0)
    a = _arr((300, 400))
    ptr = a._t.data_ptr()
    init.Uniform(0.5)(init.InitDesc("fc_weight"), a)
    assert a._t.data_ptr() == ptr  # filled in place
    x = a.asnumpy()
    assert x.min() >= -0.5 and x.max() <= 0.5
    assert x.max() > 0.49 and x.min() < -0.49
    assert abs(x.std() - 0.5 / math.sqrt(3)) < 0.01 * 0.5 / math.sqrt(3) * 2
    assert abs(x.mean()) < 0.005
    # default scale 0.07
    y = _run(init.Uniform(), "w_weight", (100, 100))
    assert np.abs(y).max() <= 0.07 and np.abs(y).max() > 0.069


def test_normal_stats():
    mx.random.seed(1)
    x = _run(init.Normal(0.3), "fc_weight", (400, 300))
    assert abs(x.std() - 0.3) < 0.006
    assert abs(x.mean()) < 0.003
    y = _run(init.Normal(), "fc_weight", (400, 300))
    assert abs(y.std() - 0.01) < 0.0002


def test_seed_reproducible():
    mx.random.seed(42)
    a = _run(init.Xavier(), "w_weight", (16, 8))
    mx.random.seed(42)
    b = _run(init.Xavier(), "w_weight", (16, 8))
    mx.random.seed(43)
    c = _run(init.Xavier(), "w_weight", (16, 8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("factor_type", ["avg", "in", "out"])
def test_xavier_uniform_conv_fans(factor_type):
    shape = (64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    n = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    bound = math.sqrt(3.0 / n)
    mx.random.seed(2)
    x = _run(init.Xavier(factor_type=factor_type), "conv0_weight", shape)
    assert np.abs(x).max() <= bound * (1 + 1e-6)
    assert np.abs(x).max() > 0.99 * bound
    assert abs(x.std() - bound / math.sqrt(3)) < 0.02 * bound / math.sqrt(3)


def test_xavier_gaussian_and_magnitude():
    shape = (200, 300)
    mx.random.seed(3)
    x = _run(init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), "fc_weight", shape)
    assert abs(x.std() - math.sqrt(2.0 / 300)) < 0.02 * math.sqrt(2.0 / 300)
    assert np.abs(x).max() > math.sqrt(2.0 / 300) * 3  # not clipped: a real Gaussian tail


def test_xavier_rejects_vectors_and_bad_args():
    with pytest.raises(ValueError, match="at least 2D"):
        _run(init.Xavier(), "fc_weight", (10,))
    with pytest.raises(ValueError, match="factor type"):
        init.Xavier(factor_type="bogus")
    with pytest.raises(ValueError, match="random type"):
        init.Xavier(rnd_type="normal")


def test_msraprelu():
    slope = 0.25
    shape = (128, 64, 3, 3)
    fan_in = 64 * 9
    mx.random.seed(4)
    x = _run(init.MSRAPrelu(factor_type="in", slope=slope), "conv_weight", shape)
    std = math.sqrt(2.0 / (1 + slope ** 2) / fan_in)
    assert abs(x.std() - std) < 0.02 * std
    assert abs(x.mean()) < 0.05 * std
    assert init.MSRAPrelu().dumps() == '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'
    # default factor avg
    x = _run(init.MSRAPrelu(), "conv_weight", shape)
    std = math.sqrt(2.0 / (1 + 0.0625) / ((64 * 9 + 128 * 9) / 2))
    assert abs(x.std() - std) < 0.02 * std


@pytest.mark.parametrize("rand_type", ["uniform", "normal"])
def test_orthogonal(rand_type):
    mx.random.seed(5)
    w = _run(init.Orthogonal(scale=1.5, rand_type=rand_type), "fc_weight", (20, 50))
    np.testing.assert_allclose(w @ w.T, 2.25 * np.eye(20), atol=1e-4)
    tall = _run(init.Orthogonal(rand_type=rand_type), "fc_weight", (50, 20))
    np.testing.assert_allclose(tall.T @ tall, 1.414 ** 2 * np.eye(20), atol=1e-4)
    conv = _run(init.Orthogonal(scale=1.0), "conv_weight", (8, 2, 3, 3)).reshape(8, 18)
    np.testing.assert_allclose(conv @ conv.T, np.eye(8), atol=1e-5)


# -- deterministic initializers -------------------------------------------------------------

def _bilinear_ref(shape):
    w = np.zeros(int(np.prod(shape)), dtype=np.float32)
    f = math.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    for i in range(w.size):
        x = i % shape[3]
        y = (i // shape[3]) % shape[2]
        w[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return w.reshape(shape)


@pytest.mark.parametrize("shape", [(2, 1, 4, 4), (3, 2, 3, 3), (1, 1, 5, 6), (1, 1, 4, 2)])
def test_bilinear(shape):
    got = _run(init.Bilinear(), "up_weight", shape)
    np.testing.assert_allclose(got, _bilinear_ref(shape), rtol=1e-6)


def test_bilinear_known_4x4():
    got = _run(init.Bilinear(), "up_weight", (1, 1, 4, 4))[0, 0]
    r = np.array([0.25, 0.75, 0.75, 0.25])
    np.testing.assert_allclose(got, np.outer(r, r), rtol=1e-6)
    with pytest.raises(ValueError, match="4-D"):
        _run(init.Bilinear(), "up_weight", (4, 4))


def test_zero_one_constant():
    np.testing.assert_array_equal(_run(init.Zero(), "a_weight", (3, 2)), np.zeros((3, 2)))
    np.testing.assert_array_equal(_run(init.One(), "a_weight", (3, 2)), np.ones((3, 2)))
    np.testing.assert_array_equal(_run(init.Constant(0.25), "a_weight", (3, 2)),
                                  np.full((3, 2), 0.25))
    val = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(_run(init.Constant(val), "a_weight", (3, 2)), val)
    np.testing.assert_array_equal(_run(init.Constant(mx.nd.array(val)), "a_weight", (3, 2)), val)
    # dtype is preserved, value broadcasts
    a = _arr((2, 3), dtype="float64")
    init.Constant(np.array([1.0, 2.0, 3.0]))(init.InitDesc("b_weight"), a)
    assert a.dtype == np.float64
    np.testing.assert_array_equal(a.asnumpy(), np.tile([1.0, 2.0, 3.0], (2, 1)))
    with pytest.raises(MXNetError, match="shape"):
        _run(init.Constant(np.ones((4, 4))), "a_weight", (3, 2))


def test_float16_and_grad_arrays():
    a = _arr((50, 40), dtype="float16")
    init.Xavier()(init.InitDesc("w_weight"), a)
    assert a.dtype == np.float16 and np.abs(a.asnumpy()).max() <= math.sqrt(3 / 45) + 1e-3
    b = _arr((4, 5))
    b.attach_grad()
    init.Uniform(1.0)(init.InitDesc("w_weight"), b)
    assert np.abs(b.asnumpy()).max() <= 1.0 and len(np.unique(b.asnumpy())) > 1


def test_lstmbias():
    x = _run(init.LSTMBias(forget_bias=2.5), "lstm_i2h_bias", (16,), {"__init__": init.LSTMBias(2.5).dumps()})
    expect = np.zeros(16)
    expect[4:8] = 2.5
    np.testing.assert_array_equal(x, expect)
    # as the global initializer it only handles the weight suffix, a bias is zeroed
    np.testing.assert_array_equal(_run(init.LSTMBias(), "lstm_i2h_bias", (8,)), np.zeros(8))


# -- dispatch -------------------------------------------------------------------------------

def test_name_suffix_dispatch():
    u = init.Uniform(0.1)
    w = _run(u, "fc1_weight", (10, 10))
    assert np.abs(w).max() <= 0.1 and len(np.unique(w)) > 50
    cases = {"fc1_bias": 0, "bn_gamma": 1, "bn_beta": 0, "bn_running_mean": 0,
             "bn_running_var": 1, "bn_moving_mean": 0, "bn_moving_var": 1,
             "bn_moving_inv_var": 0, "x_moving_avg": 0, "q_min": 0, "q_max": 1}
    for name, val in cases.items():
        np.testing.assert_array_equal(_run(u, name, (5,)), np.full(5, val), err_msg=name)
    with pytest.raises(ValueError, match="Unknown initialization pattern for foo"):
        _run(u, "foo", (3,))


def test_subclass_hooks_and_global_init():
    seen = []

    class MyInit(init.Initializer):
        def _init_weight(self, name, arr):
            seen.append(str(name))
            arr[:] = 0.5

        def _init_bias(self, name, arr):
            arr[:] = -1

    m = MyInit()
    d = init.InitDesc("fc_weight")
    np.testing.assert_array_equal(_run(m, "fc_weight", (2,)), [0.5, 0.5])
    np.testing.assert_array_equal(_run(m, "fc_bias", (2,)), [-1, -1])
    m(d, _arr((2,)))
    assert d.global_init is m
    assert seen == ["fc_weight", "fc_weight"]
    with pytest.raises(NotImplementedError):
        _run(init.Initializer(), "fc_weight", (2,))


def test_init_attr_dispatch():
    u = init.Uniform(0.1)
    # the variable's own initializer wins over the name suffix
    np.testing.assert_array_equal(_run(u, "fc_weight", (4,), {"__init__": "zeros"}), np.zeros(4))
    np.testing.assert_array_equal(_run(u, "fc_bias", (4,), {"__init__": "ones"}), np.ones(4))
    np.testing.assert_array_equal(
        _run(u, "prelu_alpha", (3,), {"__init__": '["constant", {"value": 0.25}]'}),
        np.full(3, 0.25))
    # an Initializer instance (what Gluon passes), applied whatever the name
    x = _run(u, "foo", (50, 50), {"__init__": init.Uniform(3.0)})
    assert np.abs(x).max() > 2.9 and np.abs(x).max() <= 3.0
    x = _run(u, "anything", (30, 40), {"__init__": init.Xavier().dumps()})
    assert np.abs(x).max() <= math.sqrt(3 / 35) and np.abs(x).max() > 0.9 * math.sqrt(3 / 35)
    # an empty __init__ falls back to the suffix
    np.testing.assert_array_equal(_run(u, "fc_bias", (2,), {"__init__": ""}), np.zeros(2))


def test_legacy_string_call():
    a = _arr((3,))
    with pytest.warns(DeprecationWarning):
        init.Uniform()("fc_bias", a)
    np.testing.assert_array_equal(a.asnumpy(), np.zeros(3))
    b = _arr((6,))
    with pytest.warns(DeprecationWarning):
        init.Uniform()("stn_loc_bias", b)
    np.testing.assert_array_equal(b.asnumpy(), [1, 0, 0, 0, 1, 0])
    c = _arr((1, 1, 4, 4))
    with pytest.warns(DeprecationWarning):
        init.Uniform()("upsampling0_weight", c)
    np.testing.assert_allclose(c.asnumpy(), _bilinear_ref((1, 1, 4, 4)))
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="Unknown"):
        init.Uniform()("foo", _arr((2,)))


def test_verbosity_logs(caplog):
    u = init.Uniform().set_verbosity(True)
    assert isinstance(u, init.Uniform)
    with caplog.at_level(logging.INFO):
        _run(u, "fc_weight", (4, 4))
        _run(u, "fc_bias", (4,))
    text = caplog.text
    assert "Initialized fc_weight as weight" in text and "Initialized fc_bias as bias: 0.0" in text


# -- dumps / create / registry ----------------------------------------------------------------

def test_dumps_spelling():
    assert init.Uniform(1.0).dumps() == '["uniform", {"scale": 1.0}]'
    assert init.Constant(0.25).dumps() == '["constant", {"value": 0.25}]'
    assert init.Xavier().dumps() == \
        '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'
    assert init.Normal(0.5).dumps() == '["normal", {"sigma": 0.5}]'
    assert init.Zero().dumps() == '["zero", {}]'
    assert init.One().dumps() == '["one", {}]'
    assert init.Orthogonal().dumps() == '["orthogonal", {"scale": 1.414, "rand_type": "uniform"}]'
    assert init.LSTMBias().dumps() == '["lstmbias", {"forget_bias": 1.0}]'
    assert init.Constant(np.array([1.0, 2.0])).dumps() == '["constant", {"value": [1.0, 2.0]}]'


@pytest.mark.parametrize("obj", [
    init.Zero(), init.One(), init.Constant(0.5), init.Uniform(0.3), init.Normal(0.2),
    init.Orthogonal(2.0, "normal"), init.Xavier("gaussian", "out", 2.5),
    init.MSRAPrelu("in", 0.1), init.Bilinear(), init.LSTMBias(0.5),
    init.FusedRNN(init.Xavier(), 4, 2, "lstm", True, 1.5), init.FusedRNN(None, 4, 1, "gru"),
    init.Mixed([".*bias", ".*"], [init.Zero(), init.Uniform(0.2)]),
])
def test_create_roundtrip(obj):
    s = obj.dumps()
    name, kwargs = json.loads(s)
    again = init.create(s)
    assert type(again) is type(obj)
    assert again.dumps() == s
    assert type(init.create(name, **kwargs)) is type(obj)


def test_create_forms():
    u = init.Uniform(0.3)
    assert init.create(u) is u
    assert isinstance(init.create("Zeros"), init.Zero)
    assert isinstance(init.create("zero"), init.Zero)
    assert isinstance(init.create("ones"), init.One)
    x = init.create("xavier", magnitude=2)
    assert isinstance(x, init.Xavier) and x.magnitude == 2.0
    assert init.create({"initializer": "normal", "sigma": 0.4}).sigma == 0.4
    assert init.create('{"initializer": "uniform", "scale": 0.2}').scale == 0.2
    with pytest.raises(ValueError, match="not registered"):
        init.create("nope")
    with pytest.raises(ValueError, match="already an instance"):
        init.create(u, scale=3)
    with pytest.raises(TypeError):
        init.create(3.5)


def test_register_and_alias():
    @init.register
    @init.alias("mytestinit")
    class CustomTestInit(init.Initializer):
        def __init__(self, v=0.1):
            super().__init__(v=v)
            self.v = v

        def _init_weight(self, _, arr):
            arr[:] = self.v

    try:
        assert isinstance(init.create("customtestinit"), CustomTestInit)
        c = init.create("MyTestInit", v=3.0)
        np.testing.assert_array_equal(_run(init.Uniform(), "w", (2,), {"__init__": c.dumps()}),
                                      [3.0, 3.0])
        np.testing.assert_array_equal(_run(init.Uniform(), "w", (2,), {"__init__": "mytestinit"}),
                                      np.full(2, 0.1, dtype=np.float32))
        with pytest.raises(TypeError):
            init.register(dict)
    finally:
        init._INITIALIZER_REGISTRY.pop("customtestinit", None)
        init._INITIALIZER_REGISTRY.pop("mytestinit", None)


# -- composite initializers -----------------------------------------------------------------

def test_mixed():
    m = init.Mixed([".*conv", ".*"], [init.Constant(0.5), init.Uniform(0.1)])
    np.testing.assert_array_equal(_run(m, "conv0_weight", (3,)), np.full(3, 0.5))
    # as in MXNet, the matched initializer still dispatches on the suffix: a bias is zeroed
    np.testing.assert_array_equal(_run(m, "conv0_bias", (3,)), np.zeros(3))
    w = _run(m, "fc_weight", (20, 20))
    assert np.abs(w).max() <= 0.1 and len(np.unique(w)) > 100
    # re.match is anchored at the start
    m2 = init.Mixed(["bias"], [init.Zero()])
    with pytest.raises(ValueError, match="did not match any pattern"):
        _run(m2, "fc_bias", (2,))
    # the parameter's own __init__ still wins, like for every initializer
    np.testing.assert_array_equal(_run(m, "conv0_bias", (3,), {"__init__": "ones"}), np.ones(3))
    # Gluon passes the global initializer as __init__: the matched one fills it as a weight
    x = _run(m, "gamma_like", (3,), {"__init__": init.Mixed(["gamma"], [init.Constant(2.0)])})
    np.testing.assert_array_equal(x, np.full(3, 2.0))
    x = _run(m, "my_scale", (3,), {"__init__": m})
    assert np.abs(x).max() <= 0.1 and len(np.unique(x)) == 3
    assert init.create(m.dumps())._match("conv1_weight")._kwargs == {"value": 0.5}
    with pytest.raises(ValueError, match="initializer per pattern"):
        init.Mixed([".*"], [])


def test_load_dict():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    rm = np.array([1.0, 2.0], dtype=np.float32)
    ld = init.Load({"arg:fc_weight": mx.nd.array(w), "aux:bn_running_mean": mx.nd.array(rm),
                    "plain_bias": mx.nd.array(np.array([9.0, 8.0]))},
                   default_init=init.One())
    np.testing.assert_array_equal(_run(ld, "fc_weight", (2, 3)), w)
    np.testing.assert_array_equal(_run(ld, "bn_running_mean", (2,)), rm)
    np.testing.assert_array_equal(_run(ld, "plain_bias", (2,)), [9.0, 8.0])
    # not found -> default initializer, with its own dispatch
    np.testing.assert_array_equal(_run(ld, "other_weight", (2,)), [1.0, 1.0])
    np.testing.assert_array_equal(_run(ld, "other_bias", (2,)), [0.0, 0.0])
    # as Gluon's global initializer (__init__ is the Load itself)
    np.testing.assert_array_equal(_run(ld, "my_scale", (2,), {"__init__": ld}), [1.0, 1.0])
    np.testing.assert_array_equal(_run(ld, "fc_weight", (2, 3), {"__init__": ld}), w)
    with pytest.raises(MXNetError, match=r"Shape mismatch, target \(3, 2\) vs loaded \(2, 3\)"):
        _run(ld, "fc_weight", (3, 2))
    with pytest.raises(MXNetError, match="no default"):
        _run(init.Load({}), "x_weight", (2,))
    with pytest.raises(MXNetError, match="cannot be serialized"):
        ld.dumps()


def test_load_file(tmp_path):
    w = np.arange(4, dtype=np.float32).reshape(2, 2)
    fname = str(tmp_path / "p.params")
    mx.nd.save(fname, {"arg:fc_weight": mx.nd.array(w)})
    ld = init.Load(fname, default_init=init.Zero())
    np.testing.assert_array_equal(_run(ld, "fc_weight", (2, 2)), w)
    again = init.create(ld.dumps())
    np.testing.assert_array_equal(_run(again, "fc_weight", (2, 2)), w)
    np.testing.assert_array_equal(_run(again, "z_weight", (2,)), [0.0, 0.0])


# -- FusedRNN ------------------------------------------------------------------------------

def _fused_layout(ni, h, layers, gates, dirs):
    """Independent offsets: all weights (per layer, direction: i2h then h2h), then biases."""
    names, p = [], 0
    for l in range(layers):
        isz = ni if l == 0 else dirs * h
        for d in "lr"[:dirs]:
            for conn, sz in (("i2h", isz), ("h2h", h)):
                for g in gates:
                    names.append((f"{d}{l}_{conn}{g}_weight", p, h * sz))
                    p += h * sz
    for l in range(layers):
        for d in "lr"[:dirs]:
            for conn in ("i2h", "h2h"):
                for g in gates:
                    names.append((f"{d}{l}_{conn}{g}_bias", p, h))
                    p += h
    return names, p


def test_fused_rnn_lstm():
    ni, h, layers = 5, 3, 2
    names, size = _fused_layout(ni, h, layers, ["_i", "_f", "_c", "_o"], 2)
    fr = init.FusedRNN(init.Constant(0.5), h, layers, "lstm", bidirectional=True, forget_bias=2.0)
    x = _run(init.Uniform(), "rnn_parameters", (size,), {"__init__": fr.dumps()})
    for name, off, n in names:
        want = 0.5 if name.endswith("weight") else (2.0 if name.endswith("_f_bias") else 0.0)
        np.testing.assert_array_equal(x[off:off + n], np.full(n, want), err_msg=name)


def test_fused_rnn_global_fallback_and_xavier_per_gate():
    ni, h = 7, 4
    names, size = _fused_layout(ni, h, 1, ["_r", "_z", "_o"], 1)
    mx.random.seed(6)
    a = _arr((size,))
    a.attach_grad()
    init.Uniform(0.2)(init.InitDesc("gru_parameters", {"__init__": init.FusedRNN(None, h, 1, "gru")}), a)
    x = a.asnumpy()
    for name, off, n in names:
        seg = x[off:off + n]
        if name.endswith("weight"):
            assert np.abs(seg).max() <= 0.2 and len(np.unique(seg)) == n, name
        else:
            np.testing.assert_array_equal(seg, np.zeros(n), err_msg=name)
    # Xavier sees each gate's (h, in) block: bound sqrt(3 / ((in + h) / 2))
    y = _run(init.Uniform(), "p", (size,), {"__init__": init.FusedRNN(init.Xavier(), h, 1, "gru")})
    i2h = [(o, n) for nm, o, n in names if "i2h" in nm and nm.endswith("weight")]
    bound = math.sqrt(3 / ((ni + h) / 2))
    for o, n in i2h:
        assert np.abs(y[o:o + n]).max() <= bound + 1e-7
    with pytest.raises(MXNetError, match="does not fit|too small"):
        _run(init.Uniform(), "p", (size + 1,), {"__init__": init.FusedRNN(None, h, 1, "gru")})
    with pytest.raises(ValueError, match="mode"):
        init.FusedRNN(None, h, 1, "bogus")


def test_constant_dumps_array_values_as_lists_like_mxnet():
    import json
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    for given in (mx.nd.array(value), value):
        init = mx.init.Constant(given)
        dumped = init.dumps()
        # MXNet stores the list form in _kwargs, so _kwargs itself is JSON-serializable afterwards
        assert dumped == json.dumps(["constant", init._kwargs])
        assert json.loads(dumped) == ["constant", {"value": value.tolist()}]
        arr = mx.nd.zeros((2, 3))
        init(mx.init.InitDesc("c_weight"), arr)  # still initializes from the array
        np.testing.assert_array_equal(arr.asnumpy(), value)
    assert mx.init.Constant(1).dumps() == '["constant", {"value": 1}]'


def test_initializers_compare_by_class_and_arguments():
    assert mx.init.Constant(-10.0) == mx.init.Constant(-10.0)
    assert mx.init.Constant(mx.nd.ones((2,))) == mx.init.Constant(np.ones(2))
    assert mx.init.Constant(1.0) != mx.init.Constant(2.0)
    assert mx.init.Normal(0.1) != mx.init.Uniform(0.1)
    assert mx.init.Xavier(magnitude=2) == mx.init.Xavier(magnitude=2)
    assert mx.init.Xavier() != "xavier"
