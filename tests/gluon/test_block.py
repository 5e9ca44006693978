"""Block / HybridBlock / SymbolBlock behaviour with custom blocks (MXNet 1.9.1 semantics)."""
import os
import warnings

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon, nd
from hybridnet.base import MXNetError


@pytest.fixture(autouse=True)
def fresh_names(monkeypatch):
    import hybridnet.name as _name
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)


class Affine(gluon.HybridBlock):
    """y = relu(x * w + b) with broadcast, own parameters."""

    def __init__(self, n=3, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get("w", shape=(1, n))
            self.b = self.params.get("b", shape=(n,), init="zeros")
        self.calls = 0

    def hybrid_forward(self, F, x, w, b):
        self.calls += 1
        return F.relu(F.broadcast_add(F.broadcast_mul(x, w), F.reshape(b, shape=(1, -1))))


class Two(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.a = Affine()
            self.b = Affine()

    def hybrid_forward(self, F, x, y):
        return self.a(x) * 2, [self.b(y), x - y]


def _x(*shape, seed=0):
    return nd.array(np.random.RandomState(seed).randn(*shape))


def test_prefix_naming_and_collect_params():
    a0, a1 = Affine(), Affine()
    assert (a0.prefix, a1.prefix) == ("affine0_", "affine1_")
    t = Two()
    assert t.prefix == "two0_" and t.a.prefix == "two0_affine0_" and t.b.prefix == "two0_affine1_"
    assert list(t.collect_params().keys()) == ["two0_affine0_w", "two0_affine0_b",
                                               "two0_affine1_w", "two0_affine1_b"]
    assert list(t.collect_params(".*_w").keys()) == ["two0_affine0_w", "two0_affine1_w"]
    assert list(t._collect_params_with_prefix().keys()) == ["a.w", "a.b", "b.w", "b.b"]
    fixed = Affine(prefix="fc_")
    assert fixed.prefix == "fc_"


def test_hybridize_traces_once_and_matches_eager():
    net = Affine()
    net.initialize()
    x = _x(4, 3)
    eager = net(x).asnumpy()
    net.hybridize()
    calls = net.calls
    h1, h2 = net(x).asnumpy(), net(x).asnumpy()
    assert net.calls == calls + 1  # traced once, then never re-entered
    np.testing.assert_allclose(h1, eager, rtol=1e-6)
    np.testing.assert_allclose(h2, eager, rtol=1e-6)
    net(_x(7, 3))  # another batch size runs the same compiled graph
    assert net.calls == calls + 1
    net.hybridize()  # re-hybridizing clears the cache
    net(x)
    assert net.calls == calls + 2
    assert "broadcast_mul(" in net._cached_op.source


def test_training_gradients_eager_vs_hybridized():
    x = _x(5, 3)
    grads = []
    for hybrid in (False, True):
        mx.random.seed(1)
        net = Affine()
        net.initialize(mx.init.Uniform(1.0))
        if hybrid:
            net.hybridize()
        with autograd.record():
            loss = (net(x) ** 2).sum() if hasattr(nd, "sum") else net(x)
        loss.backward()
        grads.append([p.grad().asnumpy().copy() for p in net.collect_params().values()])
    for g_e, g_h in zip(*grads):
        assert np.abs(g_e).sum() > 0
        np.testing.assert_allclose(g_h, g_e, rtol=1e-5, atol=1e-7)


def test_nested_inputs_outputs_and_data_names():
    net = Two()
    net.initialize()
    x, y = _x(2, 3), _x(2, 3, seed=1)
    eager = net(x, y)
    net.hybridize()
    hyb = net(x, y)
    assert isinstance(hyb, tuple) or isinstance(hyb, list)
    np.testing.assert_allclose(hyb[0].asnumpy(), eager[0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(hyb[1][0].asnumpy(), eager[1][0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(hyb[1][1].asnumpy(), eager[1][1].asnumpy(), rtol=1e-6)
    data, out = net._cached_graph
    assert [d.name for d in data] == ["data0", "data1"]
    with pytest.raises(ValueError):
        net(x)  # wrong input count


def test_symbol_call_returns_symbol_with_names():
    net = Affine()
    out = net(mx.sym.var("data"))
    assert isinstance(out, mx.sym.Symbol)
    assert out.name == "affine0_relu0"
    assert out.list_arguments() == ["data", "affine0_w", "affine0_b"]


def test_mixed_symbol_ndarray_rejected():
    net = Two()
    net.initialize()
    with pytest.raises(ValueError, match="mixed NDArrays and Symbols"):
        net(mx.sym.var("a"), _x(2, 3))


class UsesShape(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        n = x.shape[0]
        return x * n


class InPlace(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        x += 1
        return x


class Indexes(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x[0]


class Branches(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        if F.sum(x) > 0 if hasattr(F, "sum") else x:
            return x
        return -x


@pytest.mark.parametrize("cls,exc,words", [
    (UsesShape, AttributeError, "has no attribute 'shape'"),
    (InPlace, NotImplementedError, "x = x + y"),
    (Indexes, IndexError, "slice_axis"),
    (Branches, MXNetError, "F.where"),
])
def test_tracing_errors_name_user_line_and_fix(cls, exc, words):
    net = cls()
    net.initialize()
    x = _x(2, 3)
    net(x)  # eager works
    net.hybridize()
    with pytest.raises(exc) as info:
        net(x)
    msg = str(info.value)
    assert words in msg
    assert "test_block.py" in msg  # the user's file and line


def test_unused_input_and_parameter_warnings():
    class Unused(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.p = self.params.get("p", shape=(2,))

        def hybrid_forward(self, F, x, y, p):
            return x * 2

    net = Unused()
    net.initialize()
    net.hybridize()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        net(_x(2), _x(2))
    text = " ".join(str(m.message) for m in w)
    assert "data1 input to HybridBlock is not used" in text
    assert "Parameter unused0_p is not used" in text


def test_save_load_parameters_structural_and_errors(tmp_path):
    net = Two()
    net.initialize()
    f = str(tmp_path / "p.params")
    net.save_parameters(f)
    assert list(nd.load(f).keys()) == ["a.w", "a.b", "b.w", "b.b"]
    other = Two()  # different prefixes, same structure
    other.load_parameters(f)
    for p, q in zip(net.collect_params().values(), other.collect_params().values()):
        np.testing.assert_array_equal(p.data().asnumpy(), q.data().asnumpy())
    nd.save(f, {"a.w": nd.zeros((1, 3))})
    with pytest.raises(MXNetError, match=r"a\.b.*are missing"):
        Two().load_parameters(f)
    nd.save(f, {"a.w": nd.zeros((1, 3)), "a.b": nd.zeros((3,)), "b.w": nd.zeros((1, 3)),
                "b.b": nd.zeros((3,)), "c.x": nd.zeros(1)})
    with pytest.raises(MXNetError, match="c.x"):
        Two().load_parameters(f)
    Two().load_parameters(f, ignore_extra=True)
    nd.save(f, {"a.w": nd.zeros((1, 4)), "a.b": nd.zeros((3,)), "b.w": nd.zeros((1, 3)), "b.b": nd.zeros((3,))})
    with pytest.raises(MXNetError, match="shape incompatible"):
        Two().load_parameters(f)


def test_legacy_load_without_dots(tmp_path):
    net = Affine()
    net.initialize()
    f = str(tmp_path / "legacy.params")
    nd.save(f, {"w": nd.ones((1, 3)), "b": nd.ones((3,))})
    net.load_parameters(f)
    np.testing.assert_array_equal(net.w.data().asnumpy(), np.ones((1, 3)))


def test_export_and_imports_round_trip(tmp_path):
    net = Two()
    net.initialize()
    net.hybridize()
    x, y = _x(2, 3), _x(2, 3, seed=1)
    ref = net(x, y)
    path = str(tmp_path / "two")
    assert net.export(path, epoch=3) is None  # MXNet 1.9.1 returns None
    sym_file, params_file = f"{path}-symbol.json", f"{path}-0003.params"
    assert os.path.exists(sym_file) and os.path.exists(params_file)
    names = list(nd.load(params_file).keys())
    assert names == ["arg:two0_affine0_w", "arg:two0_affine0_b", "arg:two0_affine1_w", "arg:two0_affine1_b"]
    back = gluon.SymbolBlock.imports(sym_file, ["data0", "data1"], params_file)
    out = back(x, y)
    flat_ref = [ref[0], ref[1][0], ref[1][1]]
    for o, r in zip(out, flat_ref):
        np.testing.assert_allclose(o.asnumpy(), r.asnumpy(), rtol=1e-6)
    # the imported block can be hybridized, trained and exported again
    back.hybridize()
    with autograd.record():
        z = back(x, y)[0]
    z.backward()
    assert np.abs(back.collect_params()["two0_affine0_w"].grad().asnumpy()).sum() > 0
    back.export(str(tmp_path / "again"))
    again = gluon.SymbolBlock.imports(str(tmp_path / "again-symbol.json"), ["data0", "data1"],
                                      str(tmp_path / "again-0000.params"))
    np.testing.assert_allclose(again(x, y)[0].asnumpy(), out[0].asnumpy(), rtol=1e-6)


def test_export_needs_a_forward_first():
    net = Affine()
    net.initialize()
    with pytest.raises(RuntimeError, match="hybridize"):
        net.export("nowhere")


def test_imports_unknown_input_name(tmp_path):
    net = Affine()
    net.initialize()
    net.hybridize()
    net(_x(2, 3))
    net.export(str(tmp_path / "a"))
    with pytest.raises(MXNetError, match="'nope'"):
        gluon.SymbolBlock.imports(str(tmp_path / "a-symbol.json"), ["nope"], str(tmp_path / "a-0000.params"))


def test_elemwise_with_different_shapes_exports_as_broadcast(tmp_path):
    class Bias(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return x + y

    net = Bias()
    net.hybridize()
    out = net(_x(2, 3), _x(1, 3))
    assert out.shape == (2, 3)
    net.export(str(tmp_path / "b"))
    text = open(str(tmp_path / "b-symbol.json")).read()
    assert '"op": "broadcast_add"' in text and '"name": "bias0__plus0"' in text


def test_symbolblock_composes_with_symbols():
    net = Affine()
    out = net(mx.sym.var("data"))
    block = gluon.SymbolBlock(out, mx.sym.var("data"), params=net.collect_params())
    net.initialize()
    x = _x(3, 3)
    np.testing.assert_allclose(block(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)
    composed = block(mx.sym.var("other"))
    assert "other" in composed.list_arguments()


def test_forward_hooks_and_apply():
    net = Affine()
    net.initialize()
    seen = []
    h = net.register_forward_hook(lambda b, i, o: seen.append(o.shape))
    net.register_forward_pre_hook(lambda b, i: seen.append("pre"))
    net(_x(2, 3))
    assert seen == ["pre", (2, 3)]
    h.detach()
    net(_x(2, 3))
    assert seen == ["pre", (2, 3), "pre"]
    names = []
    Two().apply(lambda b: names.append(b.name))
    assert names == ["two0_affine0", "two0_affine1", "two0"]


def test_deferred_error_before_initialize():
    net = Affine()
    with pytest.raises(MXNetError, match="has not been initialized"):
        net(_x(2, 3))


def test_summary_lists_layers_shapes_and_parameter_counts(capsys):
    from hybridnet.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=4), nn.BatchNorm(in_channels=3), nn.Dense(2))
    net.initialize()
    net.summary(nd.ones((5, 4)))
    out = capsys.readouterr().out
    lines = [line.split() for line in out.splitlines()]
    rows = {r[0]: r[1:] for r in lines if r and ("-" in r[0] and r[0][-1].isdigit() or r[0] == "Input")}
    assert rows["Input"] == ["(5,", "4)", "0"]
    assert rows["Dense-1"][-1] == "15" and rows["BatchNorm-2"][-1] == "12" and rows["Dense-3"][-1] == "8"
    assert "Total params: 35" in out and "Trainable params: 29" in out and "Non-trainable params: 6" in out
    net.hybridize()
    with pytest.raises(AssertionError, match="before net.hybridize"):
        net.summary(nd.ones((5, 4)))


class _Chain(gluon.Block):
    """A plain Block whose children are keyed by their names (as in MXNet's test_gluon_save)."""

    def add(self, block):
        self._children[block.name + str(len(self._children))] = block

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x


def _make_chain():
    inner = _Chain()
    inner.add(gluon.nn.Dense(6, activation="relu"))
    outer = _Chain()
    outer.add(inner)
    outer.add(gluon.nn.Dense(3))
    return outer


@pytest.mark.parametrize("hybridize", [True, False])
def test_block_save_load_restores_names_graphs_and_values(tmp_path, hybridize):
    net = _make_chain()
    net.initialize()
    if hybridize:
        net.hybridize()
    x = _x(2, 5)
    ref = net(x).asnumpy()
    prefix = str(tmp_path / "model")
    net.save(prefix)
    assert os.path.exists(prefix + "-model.json") and os.path.exists(prefix + "-model.params")
    fresh = _make_chain()  # new blocks get new automatic names (dense2, dense3...)
    old_names = [b.name for b in (net._children[k] for k in net._children)]
    fresh.load(prefix)
    assert [b.name for b in fresh._children.values()] == old_names
    assert list(fresh._children) == list(net._children)
    last = list(fresh._children.values())[-1]
    if hybridize:
        assert last._cached_graph and last._options.active  # the traced graph came from the file
    np.testing.assert_allclose(fresh(x).asnumpy(), ref, rtol=1e-6)


def test_block_load_refuses_another_architecture(tmp_path):
    net = _make_chain()
    net.initialize()
    net(_x(2, 5))
    net.save(str(tmp_path / "m"))
    other = _Chain()
    other.add(gluon.nn.Conv1D(2, 1))
    with pytest.raises(MXNetError, match="no entry"):
        other.load(str(tmp_path / "m"))


class _Either(gluon.HybridBlock):
    """Adds what it is given; None arguments are skipped (MXNet's test_hybrid_block_none_args)."""

    def hybrid_forward(self, F, a, b=None):
        if a is None:
            return b
        return a if b is None else a + b


def test_none_arguments_and_trailing_defaults_eager_and_hybridized():
    x, y = _x(3), _x(3, seed=1)
    for args, expected in (((None, y), y), ((x, y), x + y), ((x, None), x), ((x,), x)):
        eager, hyb = _Either(), _Either()
        hyb.hybridize()
        for _ in range(2):  # the second call runs the cached graph
            np.testing.assert_allclose(hyb(*args).asnumpy(), expected.asnumpy(), rtol=1e-6)
            np.testing.assert_allclose(eager(*args).asnumpy(), expected.asnumpy(), rtol=1e-6)
    for hybridize in (True, False):
        net = _Either()
        if hybridize:
            net.hybridize()
        with pytest.raises(ValueError, match="one NDArray or one Symbol"):
            net(None, None)
    net = _Either()
    net.hybridize()
    net(x)
    np.testing.assert_allclose(net(x, None).asnumpy(), x.asnumpy())  # trailing default, same graph
    with pytest.raises(ValueError, match="does not match the cached"):
        net(x, y)


def test_unhybridized_hybrid_block_takes_python_scalars_like_a_block():
    class AddTo(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a + b

    net = AddTo()
    np.testing.assert_allclose(net(_x(4), 2).asnumpy(), _x(4).asnumpy() + 2, rtol=1e-6)
    net.hybridize()
    with pytest.raises(ValueError, match="must be \\(nested\\) list of Symbol or NDArray"):
        net(_x(4), 2)


def test_symbol_block_repr_like_mxnet():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    lines = str(gluon.SymbolBlock(mx.sym.Group([out, mx.sym.relu(out)]), data)).splitlines()
    assert lines[0] == "SymbolBlock(" and lines[2] == ")"
    assert lines[1].endswith(" : 1 -> 2")


def test_hybridized_block_refuses_inputs_on_several_contexts():
    class Add(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a + b
    net = Add()
    net.hybridize()
    with pytest.raises(ValueError, match=r"several contexts \['cpu\(1\)', 'cpu\(2\)'\]"):
        net(mx.nd.ones((2,), ctx=mx.cpu(1)), mx.nd.ones((2,), ctx=mx.cpu(2)))
    np.testing.assert_array_equal(net(mx.nd.ones((2,)), mx.nd.ones((2,))).asnumpy(), [2, 2])
