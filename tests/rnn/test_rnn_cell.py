"""Legacy symbol-level RNN cells (mx.rnn): names, shapes, values against NumPy, fused vs unfused."""
import warnings

import numpy as np
import pytest

import hybridnet as mx


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _eval(outputs, **arrays):
    group = mx.sym.Group(outputs) if isinstance(outputs, list) else outputs
    return [o.asnumpy() for o in group.eval(**{k: mx.nd.array(v) for k, v in arrays.items()})]


def _weights(rng, hidden, inputs, gates):
    return {
        "i2h_weight": rng.standard_normal((gates * hidden, inputs)).astype(np.float32) * 0.5,
        "i2h_bias": rng.standard_normal(gates * hidden).astype(np.float32) * 0.5,
        "h2h_weight": rng.standard_normal((gates * hidden, hidden)).astype(np.float32) * 0.5,
        "h2h_bias": rng.standard_normal(gates * hidden).astype(np.float32) * 0.5,
    }


def test_rnn_cell_names_shapes_and_values():
    cell = mx.rnn.RNNCell(4, activation="tanh", prefix="rnn_")
    inputs = [mx.sym.Variable(f"x{t}") for t in range(3)]
    outputs, states = cell.unroll(3, inputs)
    assert sorted(cell.params._params) == ["rnn_h2h_bias", "rnn_h2h_weight", "rnn_i2h_bias",
                                           "rnn_i2h_weight"]
    assert mx.sym.Group(outputs).list_outputs() == [f"rnn_t{t}_out_output" for t in range(3)]
    rng = np.random.default_rng(0)
    w = _weights(rng, 4, 3, 1)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    got = _eval(outputs, **{f"x{t}": xs[t] for t in range(3)}, **{"rnn_" + k: v for k, v in w.items()})
    h = np.zeros((2, 4), np.float32)
    for t in range(3):
        h = np.tanh(xs[t] @ w["i2h_weight"].T + w["i2h_bias"] + h @ w["h2h_weight"].T + w["h2h_bias"])
        np.testing.assert_allclose(got[t], h, rtol=1e-5, atol=1e-5)


def test_lstm_cell_matches_numpy():
    cell = mx.rnn.LSTMCell(3, prefix="l_")
    outputs, _ = cell.unroll(2, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    rng = np.random.default_rng(1)
    w = _weights(rng, 3, 5, 4)
    xs = [rng.standard_normal((2, 5)).astype(np.float32) for _ in range(2)]
    got = _eval(outputs, a=xs[0], b=xs[1], **{"l_" + k: v for k, v in w.items()})
    h = c = np.zeros((2, 3), np.float32)
    for t in range(2):
        g = xs[t] @ w["i2h_weight"].T + w["i2h_bias"] + h @ w["h2h_weight"].T + w["h2h_bias"]
        i, f, cc, o = np.split(g, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(cc)
        h = _sigmoid(o) * np.tanh(c)
        np.testing.assert_allclose(got[t], h, rtol=1e-5, atol=1e-5)


def test_gru_cell_matches_numpy():
    cell = mx.rnn.GRUCell(3, prefix="g_")
    outputs, _ = cell.unroll(2, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    rng = np.random.default_rng(2)
    w = _weights(rng, 3, 4, 3)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(2)]
    got = _eval(outputs, a=xs[0], b=xs[1], **{"g_" + k: v for k, v in w.items()})
    h = np.zeros((2, 3), np.float32)
    for t in range(2):
        ir, iz, io = np.split(xs[t] @ w["i2h_weight"].T + w["i2h_bias"], 3, axis=1)
        hr, hz, ho = np.split(h @ w["h2h_weight"].T + w["h2h_bias"], 3, axis=1)
        r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
        h = (1 - z) * np.tanh(io + r * ho) + z * h
        np.testing.assert_allclose(got[t], h, rtol=1e-5, atol=1e-5)


def test_lstm_forget_bias_initializer():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(5, forget_bias=2.0, prefix="l0_"))
    sym, _ = stack.unroll(1, mx.sym.Variable("data"), merge_outputs=True)
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind(data_shapes=[("data", (2, 1, 3))])
    mod.init_params()
    bias = mod.get_params()[0]["l0_i2h_bias"].asnumpy()
    np.testing.assert_array_equal(bias, np.r_[np.zeros(5), 2 * np.ones(5), np.zeros(10)])


@pytest.mark.parametrize("mode,bidirectional", [("lstm", False), ("gru", True),
                                                ("rnn_tanh", False), ("rnn_relu", True)])
def test_fused_equals_unfused_forward_and_backward(mode, bidirectional):
    T, N, I, H = 3, 2, 4, 5
    fused = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=bidirectional,
                                get_next_state=True, prefix="f_")
    stack = fused.unfuse()
    data = mx.sym.Variable("data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y1, _ = fused.unroll(T, data, layout="NTC", merge_outputs=True)
    y2, _ = stack.unroll(T, data, layout="NTC", merge_outputs=True)
    mods = []
    for y in (y1, y2):
        m = mx.mod.Module(y, label_names=None)
        m.bind(data_shapes=[("data", (N, T, I))], inputs_need_grad=True)
        mods.append(m)
    mods[0].init_params(mx.init.Uniform(0.5))
    args, auxs = mods[0].get_params()
    unpacked = fused.unpack_weights(args)
    assert "f_l0_i2h%s_weight" % fused._gate_names[0] in unpacked
    mods[1].set_params(stack.pack_weights(unpacked), auxs)
    # pack(unpack(x)) is the identity on the fused vector
    np.testing.assert_array_equal(fused.pack_weights(unpacked)["f_parameters"].asnumpy(),
                                  args["f_parameters"].asnumpy())
    x = mx.nd.array(np.random.default_rng(3).uniform(-1, 1, (N, T, I)))
    dy = mx.nd.array(np.random.default_rng(4).uniform(-1, 1, (N, T, H * (2 if bidirectional else 1))))
    results = []
    for m in mods:
        m.forward(mx.io.DataBatch(data=[x]), is_train=True)
        m.backward(out_grads=[dy])
        results.append((m.get_outputs()[0].asnumpy(), m.get_input_grads()[0].asnumpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-4, atol=1e-5)


def test_unfuse_names_and_bidirectional_shapes():
    cell = mx.rnn.FusedRNNCell(6, num_layers=2, mode="lstm", prefix="t_", bidirectional=True,
                               dropout=0.5).unfuse()
    outputs, _ = cell.unroll(2, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    group = mx.sym.Group(outputs)
    assert group.list_outputs() == ["t_bi_l1_t0_output", "t_bi_l1_t1_output"]
    _, outs, _ = group.infer_shape(a=(3, 4), b=(3, 4))
    assert outs == [(3, 12), (3, 12)]


def test_residual_and_zoneout():
    cell = mx.rnn.ResidualCell(mx.rnn.GRUCell(4, prefix="r_"))
    outputs, _ = cell.unroll(2, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    zeros = {f"r_{k}": np.zeros(s, np.float32) for k, s in
             [("i2h_weight", (12, 4)), ("i2h_bias", (12,)), ("h2h_weight", (12, 4)), ("h2h_bias", (12,))]}
    x = np.full((2, 4), 3.0, np.float32)
    got = _eval(outputs, a=x, b=x, **zeros)
    # zero weights: the GRU output is 0 at every step, so the residual output is the input
    np.testing.assert_array_equal(got[0], x)
    np.testing.assert_array_equal(got[1], x)

    zone = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(4, prefix="z_"), zoneout_outputs=0.5, zoneout_states=0.5)
    outs, _ = zone.unroll(3, [mx.sym.Variable(f"x{t}") for t in range(3)])
    _, shapes, _ = mx.sym.Group(outs).infer_shape(x0=(2, 3), x1=(2, 3), x2=(2, 3))
    assert shapes == [(2, 4)] * 3
    with pytest.raises(TypeError, match="ZoneoutCell"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(4))


def test_modified_base_cell_cannot_be_used_directly():
    base = mx.rnn.LSTMCell(3)
    mx.rnn.ResidualCell(base)
    with pytest.raises(RuntimeError, match="modifier"):
        base.begin_state()


def test_conv_lstm_shapes():
    cell = mx.rnn.ConvLSTMCell(input_shape=(1, 3, 8, 6), num_hidden=5, prefix="c_")
    outputs, _ = cell.unroll(2, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    _, shapes, _ = mx.sym.Group(outputs).infer_shape(a=(1, 3, 8, 6), b=(1, 3, 8, 6))
    assert shapes == [(1, 5, 8, 6)] * 2
    with pytest.raises(ValueError, match="odd"):
        mx.rnn.ConvRNNCell(input_shape=(1, 3, 8, 6), num_hidden=5, h2h_kernel=(2, 2))


def test_begin_state_zeros_with_unknown_batch_bind_and_run():
    # sym.zeros((0, H)) states get their batch size from the bound inputs, as in MXNet
    cell = mx.rnn.RNNCell(4, prefix="s_")
    out, _ = cell.unroll(1, [mx.sym.Variable("x")])
    arrays = {"x": np.ones((3, 2), np.float32), "s_i2h_weight": np.ones((4, 2), np.float32),
              "s_i2h_bias": np.zeros(4, np.float32), "s_h2h_weight": np.ones((4, 4), np.float32),
              "s_h2h_bias": np.zeros(4, np.float32)}
    got = _eval(out, **arrays)
    np.testing.assert_allclose(got[0], np.tanh(np.full((3, 4), 2.0)), rtol=1e-6)
