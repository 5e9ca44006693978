"""gluon.contrib.rnn: convolutional RNN/LSTM/GRU cells, LSTMPCell and variational dropout
against NumPy references of their equations; eager == hybridized; dynamic_unroll."""
import numpy as np
import pytest

import hybridnet as mx
import hybridnet.name as _name
from hybridnet import autograd, gluon, nd
from hybridnet.gluon import contrib


@pytest.fixture(autouse=True)
def fresh_names(monkeypatch):
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_conv(x, w, b, pad, dilate=1):
    """Stride-1 convolution, NC + spatial layout (1-D or 2-D), NumPy loops."""
    sp = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * sp)
    k = w.shape[2:]
    out_sp = [x.shape[2 + i] - dilate * (k[i] - 1) for i in range(sp)]
    out = np.zeros((x.shape[0], w.shape[0], *out_sp))
    for idx in np.ndindex(*k):
        sl = tuple(slice(dilate * idx[i], dilate * idx[i] + out_sp[i]) for i in range(sp))
        patch = x[(slice(None), slice(None)) + sl]  # (N, C, *out)
        out += np.einsum("nc...,oc->no...", patch, w[(slice(None), slice(None)) + idx])
    return out + b.reshape((1, -1) + (1,) * sp)


def np_conv_step(kind, x, states, P, i2h_pad, h2h_pad):
    i2h = np_conv(x, P["i2h_weight"], P["i2h_bias"], i2h_pad)
    h2h = np_conv(states[0], P["h2h_weight"], P["h2h_bias"], h2h_pad)
    if kind == "rnn":
        h = np.tanh(i2h + h2h)
        return h, [h]
    if kind == "lstm":
        i, f, g, o = np.split(i2h + h2h, 4, axis=1)
        c = _sig(f) * states[1] + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        return h, [h, c]
    xr, xz, xn = np.split(i2h, 3, axis=1)
    hr, hz, hn = np.split(h2h, 3, axis=1)
    r, z = _sig(xr + hr), _sig(xz + hz)
    h = (1 - z) * np.tanh(xn + r * hn) + z * states[0]
    return h, [h]


def _params(cell):
    return {k[len(cell.prefix):]: v.data().asnumpy().astype(np.float64)
            for k, v in cell.collect_params().items()}


CONV_CELLS = {
    ("rnn", 1): contrib.rnn.Conv1DRNNCell, ("lstm", 1): contrib.rnn.Conv1DLSTMCell,
    ("gru", 1): contrib.rnn.Conv1DGRUCell, ("rnn", 2): contrib.rnn.Conv2DRNNCell,
    ("lstm", 2): contrib.rnn.Conv2DLSTMCell, ("gru", 2): contrib.rnn.Conv2DGRUCell,
}


@pytest.mark.parametrize("kind,dims", sorted(CONV_CELLS))
def test_conv_cells_unroll_match_numpy_eager_and_hybridized(kind, dims):
    N, T, C, H, S = 2, 3, 3, 4, 6
    spatial = (S,) * dims
    cell = CONV_CELLS[(kind, dims)]((C,) + spatial, H, i2h_kernel=3, h2h_kernel=3, i2h_pad=1)
    cell.initialize(mx.init.Uniform(0.5))
    x = np.random.RandomState(0).uniform(-1, 1, size=(N, T, C) + spatial)
    assert cell.state_info(N)[0]["shape"] == (N, H) + spatial
    states = [np.zeros((N, H) + spatial) for _ in cell.state_info(N)]
    P = _params(cell)
    ref = []
    for t in range(T):
        h, states = np_conv_step(kind, x[:, t], states, P, 1, 1)
        ref.append(h)
    ref = np.stack(ref, axis=1)
    for hybrid in (False, True):
        if hybrid:
            cell.hybridize()
        out, last = cell.unroll(T, nd.array(x), layout="NTC", merge_outputs=True)
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(last[0].asnumpy(), ref[:, -1], rtol=1e-4, atol=1e-5)


def test_conv_cell_shapes_layouts_deferred_channels_and_errors():
    # i2h without padding shrinks the state; NWC keeps channels last; 0 channels is deferred
    c = contrib.rnn.Conv1DLSTMCell((0, 7), 10, (3,), (3,))
    assert c.state_info(2)[0]["shape"] == (2, 10, 5)
    c.initialize()
    out, _ = c.unroll(2, nd.ones((4, 2, 5, 7)), merge_outputs=True)
    assert out.shape == (4, 2, 10, 5) and c.i2h_weight.shape == (40, 5, 3)
    g = contrib.rnn.Conv2DGRUCell((8, 8, 3), 5, 3, 3, i2h_pad=1, conv_layout="NHWC")
    assert g.i2h_weight.shape == (15, 3, 3, 3) and g.state_info(1)[0]["shape"] == (1, 8, 8, 5)
    g.initialize()
    out, _ = g.unroll(2, nd.ones((1, 2, 8, 8, 3)), merge_outputs=True)
    assert out.shape == (1, 2, 8, 8, 5)
    r = contrib.rnn.Conv3DRNNCell((2, 4, 4, 4), 3, 3, 3, i2h_pad=1, prefix="rnn_")
    assert sorted(r.collect_params().keys()) == ["rnn_h2h_bias", "rnn_h2h_weight",
                                                 "rnn_i2h_bias", "rnn_i2h_weight"]
    with pytest.raises(ValueError, match="odd"):
        contrib.rnn.Conv1DRNNCell((3, 5), 4, 3, 2)
    with pytest.raises(ValueError, match="length 2"):
        contrib.rnn.Conv2DRNNCell((3, 5, 5), 4, (3, 3, 3), 3)


def test_lstmp_cell_matches_numpy_and_hybridizes():
    N, T, I, H, P = 3, 4, 5, 6, 2
    cell = contrib.rnn.LSTMPCell(H, P, input_size=I, prefix="rnn_")
    cell.initialize(mx.init.Uniform(0.5))
    assert {k: v.shape for k, v in cell.collect_params().items()} == {
        "rnn_i2h_weight": (4 * H, I), "rnn_h2h_weight": (4 * H, P), "rnn_h2r_weight": (P, H),
        "rnn_i2h_bias": (4 * H,), "rnn_h2h_bias": (4 * H,)}
    W = _params(cell)
    x = np.random.RandomState(1).randn(N, T, I)
    r, c = np.zeros((N, P)), np.zeros((N, H))
    ref = []
    for t in range(T):
        g = x[:, t] @ W["i2h_weight"].T + W["i2h_bias"] + r @ W["h2h_weight"].T + W["h2h_bias"]
        i, f, gg, o = np.split(g, 4, axis=1)
        c = _sig(f) * c + _sig(i) * np.tanh(gg)
        r = (_sig(o) * np.tanh(c)) @ W["h2r_weight"].T
        ref.append(r)
    for hybrid in (False, True):
        if hybrid:
            cell.hybridize()
        out, (r_last, c_last) = cell.unroll(T, nd.array(x), merge_outputs=True)
        np.testing.assert_allclose(out.asnumpy(), np.stack(ref, 1), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(c_last.asnumpy(), c, rtol=1e-4, atol=1e-6)
        assert r_last.shape == (N, P)


@pytest.mark.parametrize("drop_states", [0.0, 0.5])
def test_variational_dropout_shares_one_mask_over_time(drop_states):
    base = gluon.rnn.RNNCell(50, prefix="rnn_")
    cell = contrib.rnn.VariationalDropoutCell(base, drop_inputs=0.0, drop_states=drop_states,
                                              drop_outputs=0.5)
    cell.initialize(mx.init.Uniform(1.0))
    x = nd.ones((4, 6, 8))
    with autograd.train_mode():
        out, _ = cell.unroll(6, x, merge_outputs=True)
    zeros = out.asnumpy() == 0
    assert 0.2 < zeros.mean() < 0.8
    for t in range(1, 6):  # the same units are dropped at every step
        np.testing.assert_array_equal(zeros[:, t], zeros[:, 0])
    kept = out.asnumpy()[~zeros]
    # predict mode: no dropout, the base cell's output exactly
    pred, _ = cell.unroll(6, x, merge_outputs=True)
    base._modified = False
    ref, _ = base.unroll(6, x, merge_outputs=True)
    np.testing.assert_allclose(pred.asnumpy(), ref.asnumpy(), rtol=1e-6)
    if not drop_states:  # kept outputs are scaled by 1 / (1 - p)
        np.testing.assert_allclose(kept, 2 * ref.asnumpy()[~zeros], rtol=1e-5)
    with pytest.raises(ValueError, match="BidirectionalCell"):
        contrib.rnn.VariationalDropoutCell(
            gluon.rnn.BidirectionalCell(gluon.rnn.RNNCell(2), gluon.rnn.RNNCell(2)), drop_states=0.5)


def test_dynamic_unroll_matches_unroll_with_valid_length():
    cell = gluon.rnn.LSTMCell(5, input_size=3)
    cell.initialize()
    x = nd.array(np.random.RandomState(2).randn(4, 2, 3))  # TNC
    lengths = nd.array([2, 4])
    begin = cell.begin_state(2)
    out, states = contrib.rnn.rnn_cell.dynamic_unroll(cell, x, begin, layout="TNC",
                                                      valid_length=lengths)
    ref, ref_states = cell.unroll(4, x, begin_state=begin, layout="TNC", merge_outputs=True,
                                  valid_length=lengths)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-7)
    for s, r in zip(states, ref_states):
        np.testing.assert_allclose(s.asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-7)
    assert np.all(out.asnumpy()[2:, 0] == 0)


@pytest.mark.parametrize("layout,valid", [("TNC", False), ("NTC", True)])
def test_dynamic_unroll_hybridized_is_one_foreach_and_equals_eager(layout, valid):
    """Inside a hybridized block dynamic_unroll becomes a ``_foreach`` node (MXNet's form)."""
    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.cell = gluon.rnn.LSTMCell(5, input_size=3)

        def hybrid_forward(self, F, x, h, c, lengths=None):
            out, states = contrib.rnn.rnn_cell.dynamic_unroll(self.cell, x, [h, c], layout=layout,
                                                              valid_length=lengths)
            return out, states[0], states[1]

    rng = np.random.RandomState(3)
    x = nd.array(rng.randn(4, 2, 3) if layout == "TNC" else rng.randn(2, 4, 3))
    args = [x, nd.array(rng.randn(2, 5)), nd.array(rng.randn(2, 5))] + ([nd.array([2, 4])] if valid else [])
    net = Net()
    net.initialize()
    eager = net(*args)
    net.hybridize()
    hybrid = net(*args)
    assert "_foreach(" in net._cached_op.source
    for e, h in zip(eager, hybrid):
        np.testing.assert_allclose(h.asnumpy(), e.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("length", [1, 3])
def test_bidirectional_unroll_valid_length_hybridized(length):
    class BiLSTM(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.bi = gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(4, prefix="l_"),
                                                      gluon.rnn.LSTMCell(4, prefix="r_"))

        def hybrid_forward(self, F, x, valid_len):
            return self.bi.unroll(length, x, valid_length=valid_len, layout="NTC",
                                  merge_outputs=True)[0]

    net = BiLSTM()
    net.initialize()
    x = nd.array(np.random.RandomState(3).randn(2, length, 3))
    lengths = nd.array([length, 1])
    eager = net(x, lengths)
    net.hybridize()
    hybrid = net(x, lengths)
    assert hybrid.shape == (2, length, 8)
    np.testing.assert_allclose(hybrid.asnumpy(), eager.asnumpy(), rtol=1e-5, atol=1e-6)
    assert np.all(hybrid.asnumpy()[1, 1:] == 0)
