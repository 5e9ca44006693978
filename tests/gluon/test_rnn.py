"""gluon.rnn: fused layers and cells against NumPy references of the RNN/LSTM/GRU equations,
layer == unrolled cells, eager == hybridized, variable lengths, names, export, errors."""
import json

import numpy as np
import pytest

import hybridnet as mx
import hybridnet.name as _name
from hybridnet import autograd, gluon, nd
from hybridnet.base import MXNetError
from hybridnet.gluon import nn, rnn

from finite_differences import central_differences


@pytest.fixture(autouse=True)
def fresh_names(monkeypatch):
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)


# ---- NumPy reference (MXNet's equations; gate orders i,f,g,o and r,z,n) --------------------------
def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_step(mode, x, h, c, Wx, Wh, bx, bh, Wr=None, clip=None):
    gx = x @ Wx.T + bx
    gh = h @ Wh.T + bh
    if mode == "lstm":
        i, f, g, o = np.split(gx + gh, 4, axis=-1)
        c = _sig(f) * c + _sig(i) * np.tanh(g)
        if clip is not None:
            c = np.clip(c, clip[0], clip[1])
        h = _sig(o) * np.tanh(c)
        if Wr is not None:
            h = h @ Wr.T
        return h, c
    if mode == "gru":
        xr, xz, xn = np.split(gx, 3, axis=-1)
        hr, hz, hn = np.split(gh, 3, axis=-1)
        r, z = _sig(xr + hr), _sig(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    s = gx + gh
    return (np.tanh(s) if mode == "rnn_tanh" else np.maximum(s, 0)), None


def np_layer(mode, x, P, L, D, h0, c0=None, lengths=None, proj=False, clip=None):
    """x (T, N, I); P: {'l0_i2h_weight': array, ...}; returns out (T, N, D*H'), hN, cN."""
    T, N, _ = x.shape
    lengths = np.full(N, T) if lengths is None else np.asarray(lengths, int)
    inp = x
    hs, cs = [], []
    for layer in range(L):
        outs = []
        for d in range(D):
            p = f"{'lr'[d]}{layer}_"
            k = layer * D + d
            Wr = P[p + "h2r_weight"] if proj else None
            Hout = h0.shape[2]
            y = np.zeros((T, N, Hout))
            hk = h0[k].copy()
            ck = c0[k].copy() if c0 is not None else np.zeros_like(hk)
            for n in range(N):
                h, c = h0[k][n:n + 1], (c0[k][n:n + 1] if c0 is not None else None)
                steps = range(lengths[n] - 1, -1, -1) if d == 1 else range(lengths[n])
                for t in steps:
                    h, c = np_step(mode, inp[t, n:n + 1], h, c, P[p + "i2h_weight"], P[p + "h2h_weight"],
                                   P[p + "i2h_bias"], P[p + "h2h_bias"], Wr, clip)
                    y[t, n] = h[0]
                hk[n] = h[0]
                if c is not None:
                    ck[n] = c[0]
            outs.append(y)
            hs.append(hk)
            cs.append(ck)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hs), np.stack(cs)


def _params_np(layer):
    return {k[len(layer.prefix):]: v.data().asnumpy().astype(np.float64)
            for k, v in layer.collect_params().items()}


LAYERS = {"lstm": lambda **kw: rnn.LSTM(**kw), "gru": lambda **kw: rnn.GRU(**kw),
          "rnn_tanh": lambda **kw: rnn.RNN(activation="tanh", **kw),
          "rnn_relu": lambda **kw: rnn.RNN(activation="relu", **kw)}


def _make(mode, H=4, L=2, bidirectional=False, layout="TNC", dtype="float32", seed=0, **kw):
    layer = LAYERS[mode](hidden_size=H, num_layers=L, bidirectional=bidirectional, layout=layout,
                         dtype=dtype, **kw)
    mx.random.seed(seed)
    layer.initialize(mx.init.Uniform(0.5))
    return layer


def _states(layer, N, seed=1, dtype="float32"):
    rng = np.random.RandomState(seed)
    return [nd.array(rng.uniform(-0.5, 0.5, info["shape"]), dtype=dtype)
            for info in layer.state_info(N)]


# ---- parameter names and shapes ----------------------------------------------------------------
def test_layer_parameter_names_and_shapes():
    lstm = rnn.LSTM(5, num_layers=2, bidirectional=True, input_size=3)
    want = []
    for layer, ni in ((0, 3), (1, 10)):
        for d in "lr":
            want += [(f"lstm0_{d}{layer}_i2h_weight", (20, ni)), (f"lstm0_{d}{layer}_h2h_weight", (20, 5)),
                     (f"lstm0_{d}{layer}_i2h_bias", (20,)), (f"lstm0_{d}{layer}_h2h_bias", (20,))]
    assert [(k, p.shape) for k, p in lstm.collect_params().items()] == want
    gru = rnn.GRU(6)
    assert [(k, p.shape) for k, p in gru.collect_params().items()] == [
        ("gru0_l0_i2h_weight", (18, 0)), ("gru0_l0_h2h_weight", (18, 6)),
        ("gru0_l0_i2h_bias", (18,)), ("gru0_l0_h2h_bias", (18,))]
    r = rnn.RNN(7, activation="tanh", input_size=2)
    assert r.prefix == "rnn0_" and r.l0_i2h_weight.shape == (7, 2) and r._mode == "rnn_tanh"
    proj = rnn.LSTM(8, num_layers=2, projection_size=3, input_size=4)
    assert [(k[len("lstm1_"):], p.shape) for k, p in proj.collect_params().items()] == [
        ("l0_i2h_weight", (32, 4)), ("l0_h2h_weight", (32, 3)), ("l0_i2h_bias", (32,)),
        ("l0_h2h_bias", (32,)), ("l0_h2r_weight", (3, 8)),
        ("l1_i2h_weight", (32, 3)), ("l1_h2h_weight", (32, 3)), ("l1_i2h_bias", (32,)),
        ("l1_h2h_bias", (32,)), ("l1_h2r_weight", (3, 8))]
    assert proj.state_info(2) == [{"shape": (2, 2, 3), "__layout__": "LNC", "dtype": "float32"},
                                  {"shape": (2, 2, 8), "__layout__": "LNC", "dtype": "float32"}]
    assert repr(lstm) == "LSTM(3 -> 5, TNC, num_layers=2, bidirectional)"


def test_layer_constructor_errors():
    with pytest.raises(ValueError, match="layout"):
        rnn.LSTM(4, layout="CTN")
    with pytest.raises(ValueError, match="activation"):
        rnn.RNN(4, activation="sigmoid")


def test_cell_parameter_names_and_alias():
    cell = rnn.LSTMCell(4, input_size=3)
    assert cell.prefix == "lstm0_"
    assert [(k, p.shape) for k, p in cell.collect_params().items()] == [
        ("lstm0_i2h_weight", (16, 3)), ("lstm0_h2h_weight", (16, 4)),
        ("lstm0_i2h_bias", (16,)), ("lstm0_h2h_bias", (16,))]
    assert rnn.GRUCell(4).prefix == "gru0_" and rnn.RNNCell(4).prefix == "rnn0_"
    assert rnn.DropoutCell(0.5).prefix == "dropout0_"
    z = rnn.ZoneoutCell(rnn.LSTMCell(4), zoneout_outputs=0.1)
    assert z.prefix == "lstm1_zoneout" and list(z.collect_params().keys())[0] == "lstm1_i2h_weight"
    states = cell.begin_state(batch_size=2)
    assert [s.shape for s in states] == [(2, 4), (2, 4)]
    sym_states = cell.begin_state(func=mx.sym.var)
    assert [s.name for s in sym_states] == ["lstm0_begin_state_2", "lstm0_begin_state_3"]
    layer = rnn.GRU(3, num_layers=2)
    assert [s.name for s in layer.begin_state(func=mx.sym.var)] == ["gru1_h0_0"]


# ---- layers vs NumPy ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_layer_forward_matches_numpy(mode, bidirectional, layout):
    T, N, I, H, L = 4, 3, 3, 4, 2
    layer = _make(mode, H=H, L=L, bidirectional=bidirectional, layout=layout)
    x = np.random.RandomState(2).uniform(-1, 1, (T, N, I)).astype(np.float32)
    xin = x if layout == "TNC" else x.transpose(1, 0, 2)
    states = _states(layer, N)
    out, new_states = layer(nd.array(xin), states)
    ref, hN, cN = np_layer(mode, x.astype(np.float64), _params_np(layer), L, 1 + bidirectional,
                           states[0].asnumpy().astype(np.float64),
                           states[1].asnumpy().astype(np.float64) if mode == "lstm" else None)
    if layout == "NTC":
        ref = ref.transpose(1, 0, 2)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(new_states[0].asnumpy(), hN, rtol=1e-4, atol=1e-5)
    assert len(new_states) == (2 if mode == "lstm" else 1)
    if mode == "lstm":
        np.testing.assert_allclose(new_states[1].asnumpy(), cN, rtol=1e-4, atol=1e-5)
    # without states: zeros, output only
    out0 = layer(nd.array(xin))
    ref0, _, _ = np_layer(mode, x.astype(np.float64), _params_np(layer), L, 1 + bidirectional,
                          np.zeros(layer.state_info(N)[0]["shape"]),
                          np.zeros(layer.state_info(N)[0]["shape"]) if mode == "lstm" else None)
    if layout == "NTC":
        ref0 = ref0.transpose(1, 0, 2)
    assert isinstance(out0, nd.NDArray)
    np.testing.assert_allclose(out0.asnumpy(), ref0, rtol=1e-4, atol=1e-5)


def test_lstm_projection_and_state_clip_match_numpy():
    T, N, I = 3, 2, 3
    x = np.random.RandomState(3).uniform(-1, 1, (T, N, I))
    proj = _make("lstm", H=5, L=2, projection_size=2)
    states = _states(proj, N)
    out, (h, c) = proj(nd.array(x), states)
    assert out.shape == (T, N, 2) and h.shape == (2, N, 2) and c.shape == (2, N, 5)
    ref, hN, cN = np_layer("lstm", x, _params_np(proj), 2, 1, states[0].asnumpy(), states[1].asnumpy(),
                           proj=True)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.asnumpy(), cN, rtol=1e-4, atol=1e-5)
    clipped = _make("lstm", H=4, L=1, state_clip_min=-0.1, state_clip_max=0.1, state_clip_nan=True)
    states = _states(clipped, N)
    out, (h, c) = clipped(nd.array(x), states)
    ref, hN, cN = np_layer("lstm", x, _params_np(clipped), 1, 1, states[0].asnumpy(), states[1].asnumpy(),
                           clip=(-0.1, 0.1))
    assert np.abs(c.asnumpy()).max() <= 0.1 + 1e-6
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_layer_gradients_match_numpy_finite_differences(mode):
    T, N, I, H, L = 3, 2, 3, 3, 2
    layer = _make(mode, H=H, L=L, bidirectional=True, dtype="float64", input_size=I)
    rng = np.random.RandomState(4)
    x = rng.uniform(-1, 1, (T, N, I))
    states = _states(layer, N, dtype="float64")
    h0 = states[0].asnumpy()
    c0 = states[1].asnumpy() if mode == "lstm" else None
    R = rng.uniform(-1, 1, (T, N, 2 * H))
    Rh = rng.uniform(-1, 1, h0.shape)
    P = _params_np(layer)

    def loss_np(x_, P_):
        out, hN, _ = np_layer(mode, x_, P_, L, 2, h0, c0)
        return float((out * R).sum() + (hN * Rh).sum())

    xn = nd.array(x, dtype="float64")
    xn.attach_grad()
    with autograd.record():
        out, new_states = layer(xn, states)
        loss = (out * nd.array(R, dtype="float64")).sum() + (new_states[0] * nd.array(Rh, dtype="float64")).sum()
    loss.backward()
    np.testing.assert_allclose(loss.asscalar(), loss_np(x, P), rtol=1e-10)
    fd = central_differences(lambda v: loss_np(v, P), x)
    np.testing.assert_allclose(xn.grad.asnumpy(), fd, rtol=1e-5, atol=1e-7)
    for name, param in layer.collect_params().items():
        key = name[len(layer.prefix):]
        grad = param.grad().asnumpy().reshape(-1)
        probed = rng.choice(P[key].size, size=min(6, P[key].size), replace=False)
        fd = central_differences(lambda v: loss_np(x, {**P, key: v}), P[key], at=probed).reshape(-1)
        for j in probed:
            np.testing.assert_allclose(grad[j], fd[j], rtol=1e-5, atol=1e-7, err_msg=f"{name}[{j}]")


# ---- cells vs NumPy ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind,mode", [(rnn.LSTMCell, "lstm"), (rnn.GRUCell, "gru"),
                                       (lambda h, **kw: rnn.RNNCell(h, activation="tanh", **kw), "rnn_tanh"),
                                       (lambda h, **kw: rnn.RNNCell(h, activation="relu", **kw), "rnn_relu")])
def test_cell_step_and_unroll_match_numpy(kind, mode):
    N, I, H, T = 3, 4, 5, 3
    cell = kind(H)
    mx.random.seed(5)
    cell.initialize(mx.init.Uniform(0.5))
    rng = np.random.RandomState(6)
    x = rng.uniform(-1, 1, (N, T, I)).astype(np.float32)
    states = [nd.array(rng.uniform(-0.5, 0.5, (N, H))) for _ in cell.state_info()]
    out, new = cell(nd.array(x[:, 0]), states)  # completes deferred initialization
    P = {k[len(cell.prefix):]: v.data().asnumpy().astype(np.float64) for k, v in cell.collect_params().items()}
    h, c = np_step(mode, x[:, 0].astype(np.float64), states[0].asnumpy(),
                   states[1].asnumpy() if mode == "lstm" else None,
                   P["i2h_weight"], P["h2h_weight"], P["i2h_bias"], P["h2h_bias"])
    np.testing.assert_allclose(out.asnumpy(), h, rtol=1e-5, atol=1e-6)
    if mode == "lstm":
        np.testing.assert_allclose(new[1].asnumpy(), c, rtol=1e-5, atol=1e-6)
    outs, final = cell.unroll(T, nd.array(x), states, layout="NTC", merge_outputs=True)
    hs = states[0].asnumpy().astype(np.float64)
    cs = states[1].asnumpy().astype(np.float64) if mode == "lstm" else None
    ref = []
    for t in range(T):
        hs, cs = np_step(mode, x[:, t].astype(np.float64), hs, cs, P["i2h_weight"], P["h2h_weight"],
                         P["i2h_bias"], P["h2h_bias"])
        ref.append(hs)
    np.testing.assert_allclose(outs.asnumpy(), np.stack(ref, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(final[0].asnumpy(), hs, rtol=1e-5, atol=1e-6)
    listed, _ = cell.unroll(T, nd.array(x), states, layout="NTC", merge_outputs=False)
    assert isinstance(listed, list) and len(listed) == T
    np.testing.assert_allclose(listed[-1].asnumpy(), hs, rtol=1e-5, atol=1e-6)


# ---- layer == unrolled cells -------------------------------------------------------------------
def _interleave(states, n_layers_dirs):
    """Layer states [(LD, N, H), ...] -> per-cell list [h0, c0, h1, c1, ...]."""
    return [s[k] for k in range(n_layers_dirs) for s in states]


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_relu"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_layer_equals_unfused_cells(mode, bidirectional):
    T, N, I, H, L = 4, 2, 3, 4, 2
    layer = _make(mode, H=H, L=L, bidirectional=bidirectional, layout="NTC")
    x = nd.array(np.random.RandomState(7).uniform(-1, 1, (N, T, I)))
    states = _states(layer, N)
    out, new_states = layer(x, states)
    stack = layer._unfuse()
    assert list(stack.collect_params().keys()) == list(layer.collect_params().keys())
    D = 1 + bidirectional
    outs, cell_states = stack.unroll(T, x, _interleave(states, L * D), layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(outs.asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)
    ns = len(new_states)
    for j in range(ns):
        got = np.stack([s.asnumpy() for s in cell_states[j::ns]])
        np.testing.assert_allclose(got, new_states[j].asnumpy(), rtol=1e-5, atol=1e-6)


def test_layer_equals_hand_built_cells_with_copied_weights():
    T, N, I, H = 5, 3, 4, 6
    layer = _make("lstm", H=H, L=2, layout="TNC", input_size=I)
    stack = rnn.SequentialRNNCell()
    with stack.name_scope():
        stack.add(rnn.LSTMCell(H, input_size=I))
        stack.add(rnn.LSTMCell(H, input_size=H))
    stack.initialize()
    for k, cell in enumerate(stack._children.values()):
        for w in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
            getattr(cell, w).set_data(getattr(layer, f"l{k}_{w}").data())
    x = nd.array(np.random.RandomState(8).uniform(-1, 1, (T, N, I)))
    out = layer(x)
    outs, _ = stack.unroll(T, x, layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(outs.asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)


# ---- eager == hybridized -----------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_layer_eager_and_hybridized_agree_with_gradients(mode):
    T, N, I = 4, 3, 5
    x_np = np.random.RandomState(9).uniform(-1, 1, (N, T, I))
    results = []
    for hybridize in (False, True):
        layer = _make(mode, H=4, L=2, bidirectional=True, layout="NTC", seed=11)
        if hybridize:
            layer.hybridize()
        x = nd.array(x_np)
        x.attach_grad()
        states = _states(layer, N)
        with autograd.record():
            out, new = layer(x, states)
            loss = out.sum() + (new[0] ** 2).sum()
        loss.backward()
        results.append((out.asnumpy(), new[0].asnumpy(), x.grad.asnumpy(),
                        {k[len(layer.prefix):]: p.grad().asnumpy() for k, p in layer.collect_params().items()}))
        out_only = layer(nd.array(x_np))  # switching to no states re-traces the graph
        assert out_only.shape == (N, T, 8)
    (o1, h1, g1, p1), (o2, h2, g2, p2) = results
    np.testing.assert_allclose(o2, o1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h2, h1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g2, g1, rtol=1e-5, atol=1e-6)
    for k in p1:
        np.testing.assert_allclose(p2[k], p1[k], rtol=1e-5, atol=1e-6)
        assert np.abs(p1[k]).sum() > 0


def test_cells_eager_and_hybridized_agree():
    N, I, H, T = 2, 3, 4, 3
    x = nd.array(np.random.RandomState(10).uniform(-1, 1, (N, T, I)))

    class Net(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.cells = rnn.HybridSequentialRNNCell()
                with self.cells.name_scope():
                    self.cells.add(rnn.LSTMCell(H, input_size=I))
                    self.cells.add(rnn.ResidualCell(rnn.GRUCell(H, input_size=H)))
                self.bi = rnn.BidirectionalCell(rnn.RNNCell(H, input_size=H), rnn.GRUCell(H, input_size=H))

        def hybrid_forward(self, F, x):
            out, _ = self.cells.unroll(T, x, layout="NTC", merge_outputs=True)
            out, _ = self.bi.unroll(T, out, layout="NTC", merge_outputs=True)
            return out

    net = Net()
    net.initialize(mx.init.Uniform(0.5))
    eager = net(x).asnumpy()
    assert eager.shape == (N, T, 2 * H)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    step = rnn.LSTMCell(H, input_size=I)
    step.initialize()
    st = step.begin_state(batch_size=N)
    e_out, e_st = step(x[:, 0], st)
    step.hybridize()
    h_out, h_st = step(x[:, 0], st)
    np.testing.assert_allclose(h_out.asnumpy(), e_out.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(h_st[1].asnumpy(), e_st[1].asnumpy(), rtol=1e-6)


def test_layer_inside_hybridized_block_without_states():
    class Net(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.lstm = rnn.LSTM(6, input_size=4, layout="NTC", num_layers=2)
                self.out = nn.Dense(3, flatten=False)

        def hybrid_forward(self, F, x):
            return self.out(self.lstm(x))

    net = Net()
    net.initialize()
    x = nd.array(np.random.RandomState(11).randn(2, 5, 4))
    eager = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    x2 = nd.array(np.random.RandomState(12).randn(3, 5, 4))  # another batch size, same graph code
    assert net(x2).shape == (3, 5, 3)
    ops = [n["op"] for n in json.loads(net._cached_graph[1].tojson())["nodes"]]
    assert ops.count("RNN") == 1 and ops.count("_rnn_param_concat") == 1


# ---- variable sequence lengths ----------------------------------------------------------------
@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_use_sequence_length(mode, bidirectional):
    T, N, I, H = 5, 3, 3, 4
    layer = _make(mode, H=H, L=2, bidirectional=bidirectional, use_sequence_length=True)
    x = np.random.RandomState(13).uniform(-1, 1, (T, N, I)).astype(np.float32)
    lengths = [5, 2, 3]
    states = _states(layer, N)
    out, new = layer(nd.array(x), states, sequence_length=nd.array(lengths))
    D = 1 + bidirectional
    ref, hN, cN = np_layer(mode, x.astype(np.float64), _params_np(layer), 2, D,
                           states[0].asnumpy().astype(np.float64),
                           states[1].asnumpy().astype(np.float64) if mode == "lstm" else None, lengths=lengths)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(new[0].asnumpy(), hN, rtol=1e-4, atol=1e-5)
    assert np.all(out.asnumpy()[2:, 1] == 0)
    # each sequence alone, truncated to its length, through a layer without sequence lengths
    plain = LAYERS[mode](hidden_size=H, num_layers=2, bidirectional=bidirectional)
    plain.initialize()
    for (k, p), q in zip(plain.collect_params().items(), layer.collect_params().values()):
        p.set_data(q.data())
    for n, ln in enumerate(lengths):
        st = [s[:, n:n + 1] for s in states]
        o, s_n = plain(nd.array(x[:ln, n:n + 1]), st)
        np.testing.assert_allclose(out.asnumpy()[:ln, n:n + 1], o.asnumpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(new[0].asnumpy()[:, n:n + 1], s_n[0].asnumpy(), rtol=1e-5, atol=1e-6)
    layer.hybridize()
    out_h, _ = layer(nd.array(x), states, sequence_length=nd.array(lengths))
    np.testing.assert_allclose(out_h.asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_cell_unroll_valid_length_equals_layer(bidirectional):
    T, N, I, H = 4, 3, 2, 3
    layer = _make("lstm", H=H, L=1, bidirectional=bidirectional, use_sequence_length=True, layout="NTC")
    x = nd.array(np.random.RandomState(14).uniform(-1, 1, (N, T, I)))
    lengths = nd.array([2, 4, 1])
    out, new = layer(x, layer.begin_state(N), sequence_length=lengths)
    stack = layer._unfuse()
    outs, st = stack.unroll(T, x, layout="NTC", merge_outputs=True, valid_length=lengths)
    np.testing.assert_allclose(outs.asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.stack([s.asnumpy() for s in st[0::2]]), new[0].asnumpy(), rtol=1e-5, atol=1e-6)


def test_sequence_length_argument_errors():
    layer = _make("gru", H=3, L=1)
    x = nd.ones((2, 2, 3))
    with pytest.raises(ValueError, match="use_sequence_length"):
        layer(x, sequence_length=nd.array([1, 2]))
    seq = _make("gru", H=3, L=1, use_sequence_length=True)
    with pytest.raises(ValueError, match="sequence_length"):
        seq(x)


# ---- errors --------------------------------------------------------------------------------------
def test_wrong_state_shapes_and_counts_are_clear_errors():
    layer = _make("lstm", H=5, L=1)
    x = nd.ones((3, 2, 4))
    with pytest.raises(ValueError, match=r"Expecting \(1, 2, 5\), got \(1, 3, 5\)"):
        layer(x, [nd.zeros((1, 3, 5)), nd.zeros((1, 2, 5))])
    with pytest.raises(ValueError, match=r"expects 2 state"):
        layer(x, nd.zeros((1, 2, 5)))
    with pytest.raises(MXNetError, match="rank-3"):
        layer(nd.ones((3, 4)))
    cell = rnn.GRUCell(4, input_size=3)
    cell.initialize()
    with pytest.raises(ValueError, match=r"state 0 has shape \(3, 4\), expecting \(2, 4\)"):
        cell(nd.ones((2, 3)), [nd.zeros((3, 4))])
    with pytest.raises(ValueError, match="expects 1 state"):
        cell(nd.ones((2, 3)), [])
    with pytest.raises(NotImplementedError, match="unroll"):
        rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2))(nd.ones((1, 2)), [])
    base = rnn.LSTMCell(3)
    rnn.ResidualCell(base)
    with pytest.raises(MXNetError, match="modifier"):
        base.begin_state(batch_size=1)
    with pytest.raises(MXNetError, match="already modified"):
        rnn.ZoneoutCell(base)


# ---- deferred input size, dropout, modifier cells ---------------------------------------------
@pytest.mark.parametrize("hybridize", [False, True])
def test_deferred_input_size(hybridize):
    layer = rnn.LSTM(4, num_layers=2, bidirectional=True, layout="NTC")
    layer.initialize()
    if hybridize:
        layer.hybridize()
    out = layer(nd.ones((2, 3, 7)))
    assert out.shape == (2, 3, 8)
    assert layer.l0_i2h_weight.shape == (16, 7) and layer.r0_i2h_weight.shape == (16, 7)
    assert layer.l1_i2h_weight.shape == (16, 8)
    cell = rnn.GRUCell(4)
    cell.initialize()
    o, _ = cell(nd.ones((2, 5)), cell.begin_state(batch_size=2))
    assert o.shape == (2, 4) and cell.i2h_weight.shape == (12, 5)


def test_dropout_between_layers_only_in_training():
    layer = _make("lstm", H=8, L=2, dropout=0.5)
    x = nd.array(np.random.RandomState(15).uniform(-1, 1, (4, 2, 3)))
    a, b = layer(x).asnumpy(), layer(x).asnumpy()
    np.testing.assert_array_equal(a, b)
    with autograd.record():
        c = layer(x).asnumpy()
    assert not np.allclose(a, c)


def test_dropout_zoneout_residual_cells():
    N, H = 4, 6
    x = nd.array(np.random.RandomState(16).uniform(-1, 1, (N, H)))
    drop = rnn.DropoutCell(0.5)
    out, st = drop(x, [])
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy())
    assert st == []
    with autograd.record():
        out, _ = drop(x, [])
    kept = out.asnumpy() != 0
    np.testing.assert_allclose(out.asnumpy()[kept], 2 * x.asnumpy()[kept], rtol=1e-6)
    seq, _ = drop.unroll(3, nd.ones((N, 3, H)), layout="NTC", merge_outputs=True)
    assert seq.shape == (N, 3, H)

    base = rnn.GRUCell(H, input_size=H)
    base.initialize()
    zone = rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    st = zone.begin_state(batch_size=N)
    base._modified = False
    ref_out, _ = base(x, st)
    base._modified = True
    z_out, _ = zone(x, st)
    np.testing.assert_allclose(z_out.asnumpy(), ref_out.asnumpy(), rtol=1e-6)  # predict mode
    zone.reset()
    with autograd.record():
        z_out, _ = zone(x, st)
    z = z_out.asnumpy()
    assert np.all((np.isclose(z, ref_out.asnumpy())) | (z == 0))

    base2 = rnn.LSTMCell(H, input_size=H)
    base2.initialize()
    res = rnn.ResidualCell(base2)
    st = res.begin_state(batch_size=N)
    r_out, _ = res(x, st)
    base2._modified = False
    b_out, _ = base2(x, st)
    np.testing.assert_allclose(r_out.asnumpy(), b_out.asnumpy() + x.asnumpy(), rtol=1e-6)
    seq = nd.array(np.random.RandomState(17).uniform(-1, 1, (N, 3, H)))
    base2._modified = True
    r_seq, _ = res.unroll(3, seq, layout="NTC", merge_outputs=True)
    base2._modified = False
    b_seq, _ = base2.unroll(3, seq, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(r_seq.asnumpy(), b_seq.asnumpy() + seq.asnumpy(), rtol=1e-6)


# ---- export and parameter files ----------------------------------------------------------------
def test_export_graph_structure_and_reimport(tmp_path):
    layer = _make("lstm", H=4, L=2, bidirectional=True, layout="NTC")
    layer.hybridize()
    x = nd.array(np.random.RandomState(18).uniform(-1, 1, (2, 3, 5)))
    out = layer(x)
    layer.export(str(tmp_path / "lstm"))
    sym_file, params_file = str(tmp_path / "lstm-symbol.json"), str(tmp_path / "lstm-0000.params")
    nodes = json.load(open(sym_file))["nodes"]
    ops = [(n["op"], n["name"]) for n in nodes if n["op"] != "null"]
    assert ops[0] == ("SwapAxis", "lstm0_swapaxes0")
    assert [o for o, _ in ops[1:17]] == ["Reshape"] * 16
    assert ops[17:] == [("_rnn_param_concat", "lstm0__rnn_param_concat0"), ("RNN", "lstm0_rnn0"),
                        ("SwapAxis", "lstm0_swapaxes1")]
    rnn_attrs = [n for n in nodes if n["op"] == "RNN"][0]["attrs"]
    assert rnn_attrs["mode"] == "lstm" and rnn_attrs["state_outputs"] == "True"
    assert rnn_attrs["bidirectional"] == "True" and "projection_size" not in rnn_attrs
    variables = [n["name"] for n in nodes if n["op"] == "null"]
    assert variables[0] == "data0" and variables[-2:] == ["data1", "data2"]
    assert variables[1:5] == ["lstm0_l0_i2h_weight", "lstm0_l0_h2h_weight", "lstm0_r0_i2h_weight",
                              "lstm0_r0_h2h_weight"]
    block = gluon.SymbolBlock.imports(sym_file, ["data0", "data1", "data2"], params_file)
    states = layer.begin_state(2)
    np.testing.assert_allclose(block(x, *states).asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)


def test_save_parameters_uses_mxnet_structural_names(tmp_path):
    layer = _make("gru", H=3, L=2, bidirectional=True)
    layer(nd.ones((2, 1, 4)))
    names = list(layer._collect_params_with_prefix().keys())
    assert names[:4] == ["_unfused.0.l_cell.i2h_weight", "_unfused.0.l_cell.h2h_weight",
                         "_unfused.0.l_cell.i2h_bias", "_unfused.0.l_cell.h2h_bias"]
    assert names[4] == "_unfused.0.r_cell.i2h_weight" and names[8] == "_unfused.1.l_cell.i2h_weight"
    uni = rnn.LSTM(3, input_size=2)
    assert list(uni._collect_params_with_prefix().keys())[0] == "_unfused.0.i2h_weight"
    f = str(tmp_path / "gru.params")
    layer.save_parameters(f)
    assert sorted(nd.load(f).keys()) == sorted(names)
    other = rnn.GRU(3, num_layers=2, bidirectional=True)
    other.load_parameters(f)
    for p, q in zip(layer.collect_params().values(), other.collect_params().values()):
        np.testing.assert_array_equal(p.data().asnumpy(), q.data().asnumpy())


def test_unknown_input_size_inside_hybridized_parent_is_inferred():
    """Backward shape inference (the fused parameter concat) fills a deferred input_size when the
    layer is traced inside a hybridized parent; hybridized == eager afterwards."""
    for layer in (rnn.GRU(3), rnn.LSTM(3, num_layers=2, bidirectional=True), rnn.RNN(4, num_layers=2)):
        class Net(gluon.HybridBlock):
            def __init__(self, inner, **kw):
                super().__init__(**kw)
                with self.name_scope():
                    self.inner = inner

            def hybrid_forward(self, F, x):
                return self.inner(x) * 2

        net = Net(layer)
        net.initialize()
        net.hybridize()
        x = nd.random.normal(shape=(2, 2, 4))
        hyb = net(x).asnumpy()
        assert layer.l0_i2h_weight.shape[1] == 4
        net.hybridize(False)
        np.testing.assert_allclose(net(x).asnumpy(), hyb, rtol=1e-6, atol=1e-7)