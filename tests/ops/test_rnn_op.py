"""The fused RNN operator against a NumPy reference of MXNet's equations and flat layout."""
import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.ops import registry
from hybridnet.ops.rnn import pack_rnn_params, rnn_param_layout, rnn_param_size, unpack_rnn_params

from finite_differences import central_differences

nd = mx.nd
T, N, I, H = 3, 2, 4, 5
G = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


# ---- reference: slices the flat vector itself (MXNet's fused layout) --------------------------
def split_flat(flat, mode, L, I, H, D, P=0):
    """{(layer, dir): dict(Wx, Wh, bx, bh[, Wr])}: all weights (layer, dir: i2h, h2h[, h2r]),
    then all biases (layer, dir: i2h, h2h)."""
    g = G[mode]
    pos = 0
    out = {}

    def take(shape):
        nonlocal pos
        n = int(np.prod(shape))
        v = flat[pos:pos + n].reshape(shape)
        pos += n
        return v
    for l in range(L):
        ni = I if l == 0 else (P or H) * D
        for d in range(D):
            e = out.setdefault((l, d), {})
            e["Wx"] = take((g * H, ni))
            e["Wh"] = take((g * H, P or H))
            if P:
                e["Wr"] = take((P, H))
    for l in range(L):
        for d in range(D):
            out[(l, d)]["bx"] = take((g * H,))
            out[(l, d)]["bh"] = take((g * H,))
    assert pos == flat.size
    return out


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def step(mode, e, x, h, c, clip=None):
    """One time step for one sequence; MXNet's gate orders (LSTM i,f,g,o; GRU r,z,n)."""
    if mode in ("rnn_tanh", "rnn_relu"):
        a = e["Wx"] @ x + e["bx"] + e["Wh"] @ h + e["bh"]
        return (np.tanh(a) if mode == "rnn_tanh" else np.maximum(a, 0)), None
    if mode == "lstm":
        a = e["Wx"] @ x + e["bx"] + e["Wh"] @ h + e["bh"]
        Hh = a.size // 4
        i, f, g, o = (a[k * Hh:(k + 1) * Hh] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        if clip is not None:
            c = np.clip(c, *clip)
        h = sigmoid(o) * np.tanh(c)
        if "Wr" in e:
            h = e["Wr"] @ h
        return h, c
    ax = e["Wx"] @ x + e["bx"]
    ah = e["Wh"] @ h + e["bh"]
    Hh = ax.size // 3
    r = sigmoid(ax[:Hh] + ah[:Hh])
    z = sigmoid(ax[Hh:2 * Hh] + ah[Hh:2 * Hh])
    n = np.tanh(ax[2 * Hh:] + r * ah[2 * Hh:])
    return (1 - z) * n + z * h, None


def reference(mode, x, flat, h0, c0=None, L=1, D=1, P=0, lengths=None, clip=None):
    x = np.asarray(x, np.float64)
    T_, N_, I_ = x.shape
    Hs = h0.shape[2] if not P else c0.shape[2]
    w = split_flat(np.asarray(flat, np.float64), mode, L, I_, Hs, D, P)
    lengths = [T_] * N_ if lengths is None else [int(v) for v in lengths]
    hy = np.zeros_like(h0, dtype=np.float64)
    cy = None if c0 is None else np.zeros_like(c0, dtype=np.float64)
    inp = x
    for l in range(L):
        outs = np.zeros((T_, N_, D * (P or Hs)))
        for d in range(D):
            k = l * D + d
            for n in range(N_):
                h = np.array(h0[k, n], np.float64)
                c = None if c0 is None else np.array(c0[k, n], np.float64)
                ts = range(lengths[n]) if d == 0 else reversed(range(lengths[n]))
                for t in ts:
                    h, c = step(mode, w[(l, d)], inp[t, n], h, c, clip)
                    outs[t, n, d * (P or Hs):(d + 1) * (P or Hs)] = h
                hy[k, n] = h
                if cy is not None:
                    cy[k, n] = c
        inp = outs
    return inp, hy, cy


def make_inputs(mode, L=1, D=1, P=0, seed=0, dtype=np.float64):
    rng = np.random.RandomState(seed)
    size = rnn_param_size(mode, L, I, H, D == 2, P or None)
    x = rng.uniform(-1, 1, (T, N, I)).astype(dtype)
    w = rng.uniform(-0.6, 0.6, size).astype(dtype)
    h0 = rng.uniform(-0.5, 0.5, (L * D, N, P or H)).astype(dtype)
    c0 = rng.uniform(-0.5, 0.5, (L * D, N, H)).astype(dtype) if mode == "lstm" else None
    return x, w, h0, c0


def run(mode, x, w, h0, c0=None, L=1, D=1, **attrs):
    args = [nd.array(x, dtype=x.dtype), nd.array(w, dtype=w.dtype), nd.array(h0, dtype=h0.dtype)]
    if c0 is not None:
        args.append(nd.array(c0, dtype=c0.dtype))
    res = nd.RNN(*args, state_size=H, num_layers=L, bidirectional=D == 2, mode=mode,
                 state_outputs=True, **attrs)
    return [r.asnumpy() for r in res]


# ---- layout helpers ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", list(G))
@pytest.mark.parametrize("L,D", [(1, 1), (2, 1), (1, 2), (3, 2)])
def test_param_size_matches_mxnet_formula(mode, L, D):
    g = G[mode]
    first = (I + H + 2) * g * H          # MXNet's GetRnnParamSize
    rest = (H * D + H + 2) * g * H
    assert rnn_param_size(mode, L, I, H, D == 2) == first * D + rest * (L - 1) * D


def test_param_size_with_projection():
    P, L, D = 3, 2, 2
    first = (I + P + 2) * 4 * H
    rest = (P * D + P + 2) * 4 * H
    assert rnn_param_size("lstm", L, I, H, True, P) == first * D + rest * (L - 1) * D + P * H * L * D
    with pytest.raises(MXNetError):
        rnn_param_size("gru", 1, I, H, False, 3)


def test_layout_names_order_and_pack_roundtrip():
    layout = rnn_param_layout("lstm", 2, I, H, True)
    names = [n for n, _ in layout]
    assert names[:4] == ["l0_i2h_weight", "l0_h2h_weight", "r0_i2h_weight", "r0_h2h_weight"]
    assert names[8:12] == ["l0_i2h_bias", "l0_h2h_bias", "r0_i2h_bias", "r0_h2h_bias"]
    assert dict(layout)["l1_i2h_weight"] == (4 * H, 2 * H)
    flat = torch.arange(float(rnn_param_size("lstm", 2, I, H, True)))
    views = unpack_rnn_params(flat, "lstm", 2, I, H, True)
    assert views["l0_i2h_weight"].data_ptr() == flat.data_ptr()      # a view, not a copy
    assert float(views["r0_i2h_weight"][0, 0]) == 4 * H * I + 4 * H * H
    assert torch.equal(pack_rnn_params(views, "lstm", 2, I, H, True), flat)
    proj = [n for n, _ in rnn_param_layout("lstm", 1, I, H, False, 3)]
    assert proj == ["l0_i2h_weight", "l0_h2h_weight", "l0_h2r_weight", "l0_i2h_bias", "l0_h2h_bias"]
    with pytest.raises(MXNetError):
        unpack_rnn_params(flat[:-1], "lstm", 2, I, H, True)


# ---- forward ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", list(G))
@pytest.mark.parametrize("L,D", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_forward_matches_reference(mode, L, D):
    x, w, h0, c0 = make_inputs(mode, L, D, seed=L * 10 + D)
    res = run(mode, x, w, h0, c0, L, D)
    out, hy, cy = reference(mode, x, w, h0, c0, L, D)
    assert res[0].shape == (T, N, D * H) and res[1].shape == (L * D, N, H)
    np.testing.assert_allclose(res[0], out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res[1], hy, rtol=1e-10, atol=1e-12)
    if mode == "lstm":
        np.testing.assert_allclose(res[2], cy, rtol=1e-10, atol=1e-12)
    else:
        assert len(res) == 2


def test_forward_float32_and_single_output():
    x, w, h0, c0 = make_inputs("gru", 2, 2, dtype=np.float32)
    y = nd.RNN(nd.array(x), nd.array(w), nd.array(h0), state_size=H, num_layers=2,
               bidirectional=True, mode="gru")
    assert isinstance(y, nd.NDArray) and y.dtype == np.float32
    out, _, _ = reference("gru", x, w, h0, None, 2, 2)
    np.testing.assert_allclose(y.asnumpy(), out, rtol=1e-4, atol=1e-5)


def test_lstm_projection():
    P = 3
    x, w, h0, c0 = make_inputs("lstm", 2, 2, P=P)
    res = run("lstm", x, w, h0, c0, 2, 2, projection_size=P)
    out, hy, cy = reference("lstm", x, w, h0, c0, 2, 2, P=P)
    assert res[0].shape == (T, N, 2 * P) and res[1].shape == (4, N, P) and res[2].shape == (4, N, H)
    for a, b in zip(res, (out, hy, cy)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_lstm_state_clip():
    x, w, h0, c0 = make_inputs("lstm", 2, 2, seed=4)
    w = w * 3          # push the cell state past the clip range
    clip = (-0.3, 0.25)
    res = run("lstm", x, w, h0, c0, 2, 2, lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1])
    out, hy, cy = reference("lstm", x, w, h0, c0, 2, 2, clip=clip)
    unclipped = reference("lstm", x, w, h0, c0, 2, 2)[2]
    assert np.abs(unclipped).max() > 0.3      # the clip is active
    assert cy.min() >= clip[0] and cy.max() <= clip[1]
    for a, b in zip(res, (out, hy, cy)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
@pytest.mark.parametrize("L,D", [(1, 1), (2, 2)])
def test_sequence_length(mode, L, D):
    x, w, h0, c0 = make_inputs(mode, L, D, seed=3)
    lengths = np.array([2.0, 3.0])
    args = [nd.array(x, dtype="float64"), nd.array(w, dtype="float64"), nd.array(h0, dtype="float64")]
    if c0 is not None:
        args.append(nd.array(c0, dtype="float64"))
    args.append(nd.array(lengths, dtype="int32"))
    # positional, as gluon passes it: for GRU/RNN the lengths follow the state directly
    res = [r.asnumpy() for r in nd.RNN(*args, state_size=H, num_layers=L, bidirectional=D == 2, mode=mode,
                                       state_outputs=True, use_sequence_length=True)]
    out, hy, cy = reference(mode, x, w, h0, c0, L, D, lengths=lengths)
    np.testing.assert_allclose(res[0], out, rtol=1e-10, atol=1e-12)
    assert np.all(res[0][2, 0] == 0)           # past the first sequence's end
    np.testing.assert_allclose(res[1], hy, rtol=1e-10, atol=1e-12)
    if mode == "lstm":
        np.testing.assert_allclose(res[2], cy, rtol=1e-10, atol=1e-12)
    # the first sequence alone, truncated, gives the same final state
    one = run(mode, x[:2, :1].copy(), w, h0[:, :1].copy(), None if c0 is None else c0[:, :1].copy(), L, D)
    np.testing.assert_allclose(res[1][:, :1], one[1], rtol=1e-10, atol=1e-12)
    with pytest.raises(MXNetError):
        nd.RNN(*args[:-1], nd.array([0.0, 3.0]), state_size=H, num_layers=L, bidirectional=D == 2,
               mode=mode, use_sequence_length=True)


def test_dropout_between_layers_only_in_training():
    x, w, h0, c0 = make_inputs("lstm", 2, 1)
    base = run("lstm", x, w, h0, c0, 2, 1)[0]
    assert np.allclose(run("lstm", x, w, h0, c0, 2, 1, p=0.5)[0], base)      # predict mode
    mx.random.seed(0)
    with mx.autograd.train_mode():
        train = run("lstm", x, w, h0, c0, 2, 1, p=0.5)[0]
    assert not np.allclose(train, base)
    # a single layer has no dropout at all
    x1, w1, h1, c1 = make_inputs("gru", 1, 1)
    with mx.autograd.train_mode():
        np.testing.assert_allclose(run("gru", x1, w1, h1, None, 1, 1, p=0.9)[0],
                                   run("gru", x1, w1, h1, None, 1, 1)[0])


# ---- gradients --------------------------------------------------------------------------------
def _kernel_fn(mode, L, D, n_state, **attrs):
    op = registry.get("RNN")

    def f(*ins):
        outs = op.kernel(*ins, state_size=H, num_layers=L, bidirectional=D == 2, mode=mode,
                         state_outputs=True, **attrs)
        return tuple(outs)
    return f


@pytest.mark.parametrize("mode,L,D", [("lstm", 1, 1), ("gru", 2, 1), ("rnn_tanh", 1, 2), ("lstm", 1, 2)])
def test_gradcheck_float64(mode, L, D):
    x, w, h0, c0 = make_inputs(mode, L, D, seed=5)
    ins = [torch.tensor(a, requires_grad=True) for a in (x, w, h0, c0) if a is not None]
    assert torch.autograd.gradcheck(_kernel_fn(mode, L, D, len(ins)), ins, eps=1e-6, atol=1e-6)


def test_gradcheck_sequence_length_and_clip():
    x, w, h0, c0 = make_inputs("lstm", 1, 2, seed=6)
    ins = [torch.tensor(a, requires_grad=True) for a in (x, w, h0, c0)]
    lens = torch.tensor([3.0, 1.0])
    f = _kernel_fn("lstm", 1, 2, 4, use_sequence_length=True)
    assert torch.autograd.gradcheck(lambda *a: f(*a, lens), ins, eps=1e-6, atol=1e-6)
    g = _kernel_fn("lstm", 1, 1, 4, lstm_state_clip_min=-0.4, lstm_state_clip_max=0.4)
    x, w, h0, c0 = make_inputs("lstm", 1, 1, seed=8)
    ins = [torch.tensor(a, requires_grad=True) for a in (x, w, h0, c0)]
    assert torch.autograd.gradcheck(g, ins, eps=1e-6, atol=1e-6)


def test_nd_backward_matches_finite_differences_of_reference():
    """Gradients through nd/autograd against central differences of the NumPy reference."""
    mode, L, D = "gru", 2, 2
    x, w, h0, _ = make_inputs(mode, L, D, seed=9)
    proj = np.random.RandomState(1).uniform(-1, 1, (T, N, D * H))

    def loss(wv, xv):
        return float((reference(mode, xv, wv, h0, None, L, D)[0] * proj).sum())
    xa, wa, ha = nd.array(x, dtype="float64"), nd.array(w, dtype="float64"), nd.array(h0, dtype="float64")
    xa.attach_grad()
    wa.attach_grad()
    with mx.autograd.record():
        out = nd.RNN(xa, wa, ha, state_size=H, num_layers=L, bidirectional=True, mode=mode)
        (out * nd.array(proj, dtype="float64")).sum().backward()
    probed = np.random.RandomState(2).choice(w.size, 12, replace=False)
    fd = central_differences(lambda v: loss(v, x), w, at=probed)
    for k in probed:
        assert abs(wa.grad.asnumpy()[k] - fd[k]) < 1e-6 * max(1.0, abs(fd[k])), k
    at_x = [(0, 0, 0), (2, 1, 3), (1, 0, 2)]
    fd = central_differences(lambda v: loss(w, v), x, at=[np.ravel_multi_index(i, x.shape) for i in at_x])
    for idx in at_x:
        assert abs(xa.grad.asnumpy()[idx] - fd[idx]) < 1e-6 * max(1.0, abs(fd[idx]))


# ---- registry facts ---------------------------------------------------------------------------
def test_inputs_outputs_and_shape_rules():
    op = registry.get("RNN")
    assert op.active_inputs({"mode": "lstm"}) == ("data", "parameters", "state", "state_cell")
    assert op.active_inputs({"mode": "gru", "use_sequence_length": True}) == (
        "data", "parameters", "state", "sequence_length")
    assert op.num_outputs({"mode": "lstm", "state_outputs": True}) == 3
    assert op.num_outputs({"mode": "gru", "state_outputs": True}) == 2
    assert op.num_outputs({"mode": "lstm"}) == 1
    assert op.output_names({"mode": "lstm", "state_outputs": True}) == ["output", "state_output", "statecell_output"]
    attrs = {"mode": "lstm", "state_size": H, "num_layers": 2, "bidirectional": True}
    shapes = op.param_shapes(attrs, [(T, N, I), None, None, None])
    assert shapes == [(T, N, I), (rnn_param_size("lstm", 2, I, H, True),), (4, N, H), (4, N, H)]
    a2 = {"mode": "gru", "state_size": H, "num_layers": 1, "use_sequence_length": True, "projection_size": None}
    assert op.param_shapes(a2, [(T, N, I), None, None, None])[3] == (N,)
    assert op.attrs["mode"].required and op.attrs["state_size"].required and op.train_aware


def test_meta_shapes_and_errors():
    op = registry.get("RNN")
    size = rnn_param_size("lstm", 1, I, H, True, 3)
    m = lambda *s: torch.empty(*s, device="meta")  # noqa: E731
    outs = op.kernel(m(T, N, I), m(size), m(2, N, 3), m(2, N, H), state_size=H, num_layers=1,
                     bidirectional=True, mode="lstm", projection_size=3, state_outputs=True)
    assert [tuple(o.shape) for o in outs] == [(T, N, 6), (2, N, 3), (2, N, H)]
    x, w, h0, c0 = make_inputs("lstm")
    with pytest.raises(MXNetError, match="parameters has"):
        nd.RNN(nd.array(x), nd.array(w[:-1]), nd.array(h0), nd.array(c0), state_size=H, num_layers=1, mode="lstm")
    with pytest.raises(MXNetError, match="state_cell"):
        nd.RNN(nd.array(x), nd.array(w), nd.array(h0), state_size=H, num_layers=1, mode="lstm")
    with pytest.raises(MXNetError, match="state has shape"):
        nd.RNN(nd.array(x), nd.array(w), nd.array(h0[:, :1]), nd.array(c0), state_size=H, num_layers=1,
               mode="lstm")
    with pytest.raises(MXNetError, match="3-D"):
        nd.RNN(nd.array(x[0]), nd.array(w), nd.array(h0), nd.array(c0), state_size=H, num_layers=1, mode="lstm")


def test_samples_match_their_reference():
    op = registry.get("RNN")
    for s in op.samples():
        outs = op.kernel(*[torch.tensor(a) for a in s.inputs], **s.attrs)
        for o, r in zip(outs, s.ref(*s.inputs, **s.attrs)):
            np.testing.assert_allclose(o.numpy(), r, rtol=1e-10, atol=1e-12)


def test_rnn_param_concat():
    op = registry.get("_rnn_param_concat")
    a, b = nd.array([1.0, 2.0]), nd.array([3.0])
    np.testing.assert_array_equal(nd._internal._rnn_param_concat(a, b, dim=0).asnumpy(), [1, 2, 3])
    assert op.variadic
