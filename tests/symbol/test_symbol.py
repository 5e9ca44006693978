"""Symbol API: naming, structure, attributes, operators, inference, executor, errors."""
import copy

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, nd, sym
from hybridnet.base import MXNetError


@pytest.fixture(autouse=True)
def fresh_names(monkeypatch):
    import hybridnet.name as _name
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)


def test_automatic_names_and_operator_names():
    a, b = sym.var("a"), sym.var("b")
    fc = sym.FullyConnected(a, num_hidden=4)
    assert fc.name == "fullyconnected0"
    assert fc.list_arguments() == ["a", "fullyconnected0_weight", "fullyconnected0_bias"]
    assert sym.FullyConnected(a, num_hidden=4).name == "fullyconnected1"
    assert (a + b).name == "_plus0"
    assert (a * 0.5).name == "_mulscalar0"
    assert (a + 1).name == "_plusscalar0"
    assert (1 - a).name == "_rminusscalar0"
    assert (a == b).name == "_equal0"
    assert (-a).attr("scalar") == "-1.0"
    assert (a * b)._entries[0][0].op.name == "elemwise_mul"
    with mx.name.Prefix("net_"):
        assert sym.relu(a).name == "net_relu0"
    with mx.name.NameManager():
        assert sym.relu(a).name == "relu0"
    assert sym.relu(a, name="given").name == "given"


def test_structure_group_outputs_internals():
    a = sym.var("a")
    s = sym.split(a, num_outputs=3, axis=1, name="sp")
    assert len(s) == 3 and s.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]
    assert s[1].list_outputs() == ["sp_output1"] and s["sp_output2"].list_outputs() == ["sp_output2"]
    g = sym.Group([sym.relu(a, name="r"), sym.sigmoid(a, name="s")])
    assert g.list_outputs() == ["r_output", "s_output"]
    assert repr(sym.relu(a, name="r")) == "<Symbol r>"
    fc = sym.FullyConnected(sym.relu(a, name="r"), num_hidden=2, name="fc")
    internals = fc.get_internals()
    assert internals.list_outputs() == ["a", "r_output", "fc_weight", "fc_bias", "fc_output"]
    assert [c.name for c in fc.get_children()] == ["r", "fc_weight", "fc_bias"]
    assert list(iter(g))[1].name == "s"
    with pytest.raises(ValueError):
        s["nope"]


def test_aux_states_and_inputs():
    bn = sym.BatchNorm(sym.var("x"), name="bn")
    assert bn.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs() == ["x", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]


def test_attributes_and_attr_scope():
    v = sym.var("w", shape=(2, 3), lr_mult=2.0, dtype="float16", init=mx.init.Uniform(0.5), __foo__="bar")
    assert v.attr("__shape__") == "(2, 3)" and v.attr("lr_mult") == "2.0"
    assert v.attr("__dtype__") == "2" and v.attr("__foo__") == "bar"
    assert v.attr("__init__") == '["uniform", {"scale": 0.5}]'
    with mx.AttrScope(ctx_group="dev1"):
        r = sym.relu(v)
    assert r.attr("__ctx_group__") == "dev1"
    assert sym.relu(v).attr("__ctx_group__") is None
    assert "w" in r.attr_dict() and r.list_attr()["__ctx_group__"] == "dev1"
    with pytest.raises(ValueError, match="double underscores"):
        sym.var("x", foo=1)


def test_what_a_symbol_cannot_do():
    x = sym.var("x")
    with pytest.raises(AttributeError, match="no attribute 'shape'.*infer_shape"):
        x.shape
    with pytest.raises(MXNetError, match="asnumpy"):
        x.asnumpy()
    with pytest.raises(MXNetError, match="F.where"):
        bool(x)
    with pytest.raises(NotImplementedError, match="x = x \\+ y"):
        x += 1
    with pytest.raises(NotImplementedError):
        x[0:1] = 1


def test_symbol_operators_broadcast_like_ndarrays():
    a, b = sym.var("a"), sym.var("b")
    out = (a + b) * 2 - a / b
    av, bv = np.random.rand(2, 3) + 1, np.random.rand(1, 3) + 1
    res = out.eval(a=nd.array(av), b=nd.array(bv))[0].asnumpy()
    np.testing.assert_allclose(res, (av + bv) * 2 - av / bv, rtol=1e-6)
    assert sym.maximum(a, 2).name == "_maximumscalar0" or "maximum" in sym.maximum(a, 2).name
    np.testing.assert_allclose(sym.maximum(a, 1.5).eval(a=nd.array(av))[0].asnumpy(), np.maximum(av, 1.5))
    np.testing.assert_allclose((2 ** a).eval(a=nd.array(av))[0].asnumpy(), 2 ** av, rtol=1e-6)


def test_infer_shape_full_partial_and_params():
    data = sym.var("data")
    net = sym.FullyConnected(sym.Flatten(sym.Convolution(data, kernel=(3, 3), num_filter=4, name="c")),
                             num_hidden=7, name="fc")
    arg, out, aux = net.infer_shape(data=(2, 3, 8, 8))
    assert dict(zip(net.list_arguments(), arg)) == {
        "data": (2, 3, 8, 8), "c_weight": (4, 3, 3, 3), "c_bias": (4,),
        "fc_weight": (7, 144), "fc_bias": (7,)}
    assert out == [(2, 7)] and aux == []
    assert net.infer_shape() == (None, None, None)
    arg, out, aux = net.infer_shape_partial()
    assert out == [()] and arg[0] == ()
    bn = sym.BatchNorm(data, name="bn")
    _, _, aux = bn.infer_shape(data=(2, 3, 4, 4))
    assert aux == [(3,), (3,)]
    with pytest.raises(MXNetError, match="nope"):
        net.infer_shape(nope=(1,))


def test_infer_shape_conflict_names_node():
    a, b = sym.var("a"), sym.var("b")
    with pytest.raises(MXNetError, match="_plus0"):
        (a + b).infer_shape(a=(2, 3), b=(4, 5))
    w = sym.var("fc_weight", shape=(7, 5))
    fc = sym.FullyConnected(sym.var("data"), weight=w, num_hidden=7, name="fc")
    with pytest.raises(MXNetError, match=r"'fc'.*FullyConnected[\s\S]*'weight': \(7, 5\)"):
        fc.infer_shape(data=(2, 6))


def test_infer_type():
    a = sym.var("a")
    c = sym.Cast(sym.relu(a), dtype="float16")
    arg, out, aux = c.infer_type(a="float64")
    assert arg == [np.float64] and out == [np.float16]


def test_executor_forward_backward_matches_autograd():
    x, w = sym.var("x"), sym.var("w")
    out = sym.sum(sym.tanh(sym.dot(x, w)) * 3)
    xv, wv = np.random.randn(3, 4), np.random.randn(4, 2)
    exe = out.simple_bind(mx.cpu(), x=(3, 4), w=(4, 2))
    exe.arg_dict["x"][:] = nd.array(xv)
    exe.arg_dict["w"][:] = nd.array(wv)
    res = exe.forward(is_train=True)[0]
    exe.backward()
    xa, wa = nd.array(xv), nd.array(wv)
    xa.attach_grad()
    wa.attach_grad()
    with autograd.record():
        ref = nd.sum(nd.tanh(nd.dot(xa, wa)) * 3)
    ref.backward()
    np.testing.assert_allclose(res.asnumpy(), ref.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), xa.grad.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), wa.grad.asnumpy(), rtol=1e-5)
    assert "dot(" in exe.source and "def " in exe.debug_str()
    # grad_req='add' accumulates
    exe2 = out.simple_bind(mx.cpu(), grad_req="add", x=(3, 4), w=(4, 2))
    exe2.copy_params_from({"x": nd.array(xv), "w": nd.array(wv)})
    for _ in range(2):
        exe2.forward(is_train=True)
        exe2.backward()
    np.testing.assert_allclose(exe2.grad_dict["w"].asnumpy(), 2 * wa.grad.asnumpy(), rtol=1e-5)
    # reshape keeps parameters
    exe3 = exe.reshape(allow_up_sizing=True, x=(5, 4))  # larger: MXNet asks for allow_up_sizing
    assert exe3.arg_dict["x"].shape == (5, 4)
    np.testing.assert_allclose(exe3.arg_dict["w"].asnumpy(), wv.astype(np.float32), rtol=1e-6)


def test_bind_errors():
    x = sym.relu(sym.var("x"))
    with pytest.raises(MXNetError, match="no value for arguments"):
        x.bind(mx.cpu(), args={})
    exe = x.bind(mx.cpu(), args={"x": nd.ones((2, 2))})
    with pytest.raises(MXNetError, match="shape"):
        exe.forward(x=nd.ones((3, 3)))
    with pytest.raises(MXNetError, match="not an argument"):
        exe.forward(y=nd.ones((2, 2)))


def test_json_save_load_copy(tmp_path):
    a = sym.var("a")
    net = sym.Pooling(sym.Convolution(a, kernel=(3, 3), num_filter=2, pad=(1, 1), name="c"),
                      kernel=(2, 2), pool_type="avg", name="p")
    text = net.tojson()
    back = sym.load_json(text)
    assert back.tojson() == text
    f = str(tmp_path / "n-symbol.json")
    net.save(f)
    assert sym.load(f).tojson() == text
    assert copy.deepcopy(net).tojson() == text and copy.copy(net).list_outputs() == net.list_outputs()
    assert '"kernel": "(3, 3)"' in text and '"pool_type": "avg"' in text
    with pytest.raises(MXNetError):
        sym.load_json(text[: len(text) // 2])


def test_ndarray_functions_accept_symbols():
    """nd.foo and sym.foo are the same call: a Symbol input builds a node."""
    s = nd.relu(sym.var("q"))
    assert isinstance(s, sym.Symbol) and s.name == "relu0"


# ---- partial shapes (0 = unknown dim; -1 under mx.np_shape) ----------------------------------
def _arg_shapes(s, **kw):
    arg, _, _ = s.infer_shape(**kw)
    return dict(zip(s.list_arguments(), arg))


def test_partial_shapes_flow_both_ways():
    a, c = sym.var("a", shape=(0, 10)), sym.var("c", shape=(5, 0))
    d = sym.FullyConnected(a, num_hidden=21, name="fc") + c
    assert _arg_shapes(d) == {"a": (5, 10), "fc_weight": (21, 10), "fc_bias": (21,), "c": (5, 21)}
    # convolution: batch and spatial dims come back from a consumer through the stride-1 window
    x = sym.var("x", shape=(0, 3, 0, 0))
    conv = sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8, name="conv")
    got = _arg_shapes(conv + sym.var("y", shape=(2, 8, 16, 16)))
    assert got["x"] == (2, 3, 16, 16) and got["conv_weight"] == (8, 3, 3, 3)
    # Concat: the other axes come from the output, the concat axis stays per input
    p, q = sym.var("p", shape=(0, 4)), sym.var("q", shape=(0, 6))
    got = _arg_shapes(sym.var("r", shape=(3, 0)) + sym.Concat(p, q, dim=1))
    assert got == {"r": (3, 10), "p": (3, 4), "q": (3, 6)}


def test_partial_forward_keeps_unknown_dims():
    x, y = sym.var("x"), sym.var("y")
    _, out, _ = sym.dot(x, y).infer_shape_partial(x=(0, 3, 4), y=(4, 5))
    assert out == [(0, 3, 5)]
    _, out, _ = sym.transpose(x, axes=(0, 3, 2, 1)).infer_shape_partial(x=(0, 3, 7, 9))
    assert out == [(0, 9, 7, 3)]
    _, out, _ = sym.batch_dot(x, y).infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5))
    assert out == [()]  # the contracted dims cannot be checked: unknown
    with mx.np_shape(True):
        _, out, _ = sym.dot(x, y).infer_shape_partial(x=(-1, 3, 4), y=(4, 5))
        assert out == [(-1, 3, 5)]
        arg, out, _ = sym.sin(x).infer_shape_partial()
        assert arg == [None] and out == [None]
    # creation with an unknown dim (an RNN begin state) and an inconsistency found late
    z = sym.zeros(shape=(2, 0, 4))
    _, out, _ = (z + sym.var("h", shape=(2, 3, 4))).infer_shape()
    assert out == [(2, 3, 4)]
    v = sym.var("v")
    with pytest.raises(MXNetError, match="inconsistent"):
        (sym.transpose(v) + (sym.var("w") + v)).infer_shape(w=(2, 3))


def test_given_shape_overrides_variable_attribute_and_num_hidden_is_checked():
    c = sym.elemwise_add(sym.var("a", shape=(2, 3)), sym.var("b"))
    assert c.infer_shape(a=(5, 6))[0] == [(5, 6), (5, 6)]
    fc = sym.FullyConnected(sym.var("data"), num_hidden=1000, name="fc1")
    with pytest.raises(MXNetError, match="num_hidden"):
        fc.infer_shape(data=(100, 100), fc1_weight=(1, 100))


# ---- Symbol API details ----------------------------------------------------------------------
def test_compose_replaces_arguments():
    net1 = sym.FullyConnected(sym.var("data"), name="fc1", num_hidden=4)
    net2 = sym.FullyConnected(name="fc3", num_hidden=3)
    composed = net2(fc3_data=net1, name="composed")
    assert composed.name == "composed"
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc3_weight", "fc3_bias"]
    assert net2.list_arguments() == ["fc3_data", "fc3_weight", "fc3_bias"]  # a copy was composed
    rs = np.random.RandomState(0)
    vals = {"data": rs.randn(2, 5), "fc1_weight": rs.randn(4, 5), "fc1_bias": rs.randn(4),
            "fc3_weight": rs.randn(3, 4), "fc3_bias": rs.randn(3)}
    out = composed.eval(**{k: nd.array(v) for k, v in vals.items()})[0].asnumpy()
    h = vals["data"] @ vals["fc1_weight"].T + vals["fc1_bias"]
    np.testing.assert_allclose(out, h @ vals["fc3_weight"].T + vals["fc3_bias"], rtol=1e-5)
    pos = (sym.var("a") * 2)(sym.var("b") + 1)
    assert pos.list_arguments() == ["b"]
    with pytest.raises(MXNetError, match="nope"):
        net2(nope=net1)
    with pytest.raises(TypeError):
        net2(net1, fc3_weight=net1)


def test_children_atomic_symbol_bool_and_np_shape_json():
    from hybridnet.base import NotImplementedForSymbol
    data = sym.var("data")
    sliced = sym.SliceChannel(data, num_outputs=3, name="slice")
    assert sliced.get_children().list_outputs() == ["data"]
    assert sym.Concat(*list(sliced)).get_children().list_outputs() == \
        ["slice_output0", "slice_output1", "slice_output2"]
    assert data.get_children() is None
    rnn = sym.RNN(data, sym.var("p"), sym.var("h0"), sym.var("c0"), state_size=4, num_layers=1,
                  mode="lstm", state_outputs=True, name="rnn")
    atom = rnn._gen_atomic_symbol()
    assert len(atom.list_outputs()) == 3 and len(atom.list_arguments()) == 4
    assert atom.get_children().get_children() is None
    with pytest.raises(NotImplementedForSymbol, match="F.where"):
        bool(data)
    with mx.np_shape(True):
        assert '"is_np_shape"' in sym.var("x").tojson()
    assert "is_np_shape" not in sym.var("x").tojson()


def test_attributes_stored_as_mxnet_does():
    data = sym.var("data", attr={"mood": "angry", "lr_mult": "2"})
    assert data.list_attr() == {"mood": "angry", "lr_mult": "2", "__lr_mult__": "2"}
    op = sym.Convolution(data=data, name="conv", kernel=(1, 1), num_filter=1,
                         attr={"__mood__": "so so", "wd_mult": "x"})
    attrs = op.list_attr()
    assert attrs["__mood__"] == "so so" and attrs["wd_mult"] == attrs["__wd_mult__"] == "x"
    d = op.attr_dict()
    assert d["data"] == {"mood": "angry", "lr_mult": "2", "__lr_mult__": "2"}
    assert d["conv_weight"]["__mood__"] == "so so" and d["conv_bias"]["wd_mult"] == "x"
    assert '"wd_mult": "x"' in op.tojson()  # written as MXNet writes it


def test_executor_backward_after_inference_forward_and_integer_inputs():
    lhs, rhs = sym.var("lhs"), sym.var("rhs")
    a, b = np.random.RandomState(0).randn(3, 4), np.random.RandomState(1).randn(3, 4)
    ga, gb = nd.zeros((3, 4)), nd.zeros((3, 4))
    exe = (lhs * rhs).bind(mx.cpu(), args=[nd.array(a), nd.array(b)], args_grad=[ga, gb])
    exe.forward()  # is_train=False, as MXNet's own tests do before backward
    exe.backward([nd.ones((3, 4))])
    np.testing.assert_allclose(ga.asnumpy(), b, rtol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), a, rtol=1e-6)
    # an integer index argument with the default grad_req: no gradient, no error
    x, idx = sym.var("x"), sym.var("idx")
    z = sym.stop_gradient(sym.batch_take(x, idx))
    exe = z.simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict={"x": np.float32, "idx": np.int32})
    exe.arg_dict["x"][:] = nd.array(np.arange(12).reshape(4, 3))
    exe.arg_dict["idx"][:] = nd.array([0, 2, 1, 0], dtype="int32")
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [0, 5, 7, 9])
    exe.backward()
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.zeros((4, 3)))


def test_arange_infer_range_takes_its_length_from_inference():
    """MXNet's sym.arange(start, infer_range=True): stop = start + (length / repeat) * step, the
    length inferred from what the range is combined with (test_operator's test_arange_inferstop)."""
    s = mx.sym.elemwise_add(mx.sym.arange(start=0, stop=None, infer_range=True), mx.sym.zeros(shape=[5]))
    assert s.infer_shape()[1] == [(5,)]
    exe = s.bind(ctx=mx.cpu(), args={})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [0, 1, 2, 3, 4])
    r = mx.sym.arange(start=2, step=0.5, repeat=2, infer_range=True) + mx.sym.var("x")
    np.testing.assert_array_equal(r.eval(x=mx.nd.zeros((6,)))[0].asnumpy(), [2, 2, 2.5, 2.5, 3, 3])
    with pytest.raises(mx.MXNetError, match="does not divide"):
        r.eval(x=mx.nd.zeros((5,)))
