"""Fused optimizer update operators beyond the generic sample checks: the in-place state updates
(checked against NumPy over several steps), ``out=weight`` as Gluon calls them, multi-precision
dtypes, the multi-tensor forms, attribute names/defaults, and the mutated-input declaration seen
by Symbol / JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.ops import get
from hybridnet.ops import optimizer_ops as oo

R = np.random.RandomState(42)


def nd(a, dtype=np.float64):
    return mx.nd.array(np.asarray(a), dtype=dtype)


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=rtol, atol=atol)


# ---- single-weight updates: weight and every state, over several steps --------------------------
# (op, numpy reference, state initialisers, attrs)
CASES = [
    ("sgd_mom_update", oo._np_sgd_mom, [lambda s: R.uniform(-.5, .5, s)],
     {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.8}),
    ("nag_mom_update", oo._np_nag, [lambda s: R.uniform(-.5, .5, s)],
     {"lr": 0.1, "momentum": 0.8, "wd": 0.02, "clip_gradient": 1.0}),
    ("adam_update", oo._np_adam, [lambda s: np.zeros(s), lambda s: np.zeros(s)],
     {"lr": 0.01, "beta1": 0.8, "beta2": 0.95, "epsilon": 1e-6, "wd": 0.1, "clip_gradient": 1.5}),
    ("rmsprop_update", oo._np_rmsprop, [lambda s: R.uniform(0.1, 1, s)],
     {"lr": 0.05, "gamma1": 0.9, "wd": 0.01, "clip_weights": 0.9}),
    ("rmspropalex_update", oo._np_rmspropalex,
     [lambda s: np.full(s, 1.0), lambda s: np.zeros(s), lambda s: np.zeros(s)],
     {"lr": 0.01, "gamma1": 0.9, "gamma2": 0.7, "clip_gradient": 2.0}),
    ("ftrl_update", oo._np_ftrl, [lambda s: np.zeros(s), lambda s: np.zeros(s)],
     {"lr": 0.1, "lamda1": 0.05, "beta": 1.0, "wd": 0.01}),
    ("signum_update", oo._np_signum, [lambda s: np.zeros(s)],
     {"lr": 0.01, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.1}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_update_writes_weight_via_out_and_states_in_place(case):
    name, ref, inits, attrs = case
    shape = (3, 4)
    w = R.uniform(-1, 1, shape)
    states = [f(shape) for f in inits]
    W = nd(w)
    S = [nd(s) for s in states]
    fn = getattr(mx.nd, name)
    for step in range(3):
        g = R.uniform(-2, 2, shape)
        res = fn(W, nd(g), *S, out=W, **attrs)
        assert res is W
        expect = ref(w, g, *states, **attrs)
        w, states = expect[0], list(expect[1:])
        close(W.asnumpy(), w)
        for k, (got, want) in enumerate(zip(S, states)):
            close(got.asnumpy(), want, rtol=1e-9, atol=1e-12)


def test_ftml_states_and_step_count():
    shape = (2, 5)
    w = R.uniform(-1, 1, shape)
    d, v, z = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    W, D, V, Z = nd(w), nd(d), nd(v), nd(z)
    for t in (1, 2, 3):
        g = R.uniform(-1, 1, shape)
        mx.nd.ftml_update(W, nd(g), D, V, Z, lr=0.05, t=t, wd=0.01, clip_grad=0.7, out=W)
        w, d, v, z = oo._np_ftml(w, g, d, v, z, lr=0.05, t=t, wd=0.01, clip_grad=0.7)
        for got, want in ((W, w), (D, d), (V, v), (Z, z)):
            close(got.asnumpy(), want, rtol=1e-9)
    # FTML's clipping attribute is clip_grad (not clip_gradient), as in MXNet
    assert "clip_grad" in get("ftml_update").attrs and "clip_gradient" not in get("ftml_update").attrs


def test_sgd_update_formula_by_hand():
    w, g = np.array([1.0, -2.0, 0.5]), np.array([4.0, -1.0, 0.1])
    out = mx.nd.sgd_update(nd(w), nd(g), lr=0.1, wd=0.5, rescale_grad=0.5, clip_gradient=1.0).asnumpy()
    # (1 - lr*wd) * w - lr * clip(rescale * g, 1): wd is outside the clip
    close(out, 0.95 * w - 0.1 * np.clip(0.5 * g, -1, 1))
    # clip_gradient=0 is "clip to 0" (>= 0 turns clipping on), -1 turns it off
    close(mx.nd.sgd_update(nd(w), nd(g), lr=0.1, clip_gradient=0.0).asnumpy(), w)
    close(mx.nd.sgd_update(nd(w), nd(g), lr=0.1).asnumpy(), w - 0.1 * g)


def test_adam_clips_after_weight_decay():
    w, g = np.array([2.0]), np.array([0.5])
    m, v = nd(np.zeros(1)), nd(np.zeros(1))
    out = mx.nd.adam_update(nd(w), nd(g), m, v, lr=1.0, beta1=0.0, beta2=0.0, epsilon=0.0, wd=1.0,
                            clip_gradient=1.0).asnumpy()
    # g' = clip(0.5 + 1.0*2.0, 1) = 1 -> mean = 1, var = 1, step = 1
    close(m.asnumpy(), [1.0])
    close(v.asnumpy(), [1.0])
    close(out, [1.0])


def test_signsgd_ignores_clip_and_uses_sign():
    w, g = np.array([1.0, 1.0, 1.0]), np.array([3.0, -0.01, 0.0])
    out = mx.nd.signsgd_update(nd(w), nd(g), lr=0.5, wd=0.2, clip_gradient=0.001).asnumpy()
    close(out, 0.9 * w - 0.5 * np.sign(g))


# ---- multi-precision ---------------------------------------------------------------------------
def test_mp_sgd_mom_float16_weight_float32_master():
    shape = (4, 3)
    w32 = R.uniform(-1, 1, shape).astype(np.float32)
    mom = np.zeros(shape, np.float32)
    W, M, W32 = nd(w32, np.float16), nd(mom, np.float32), nd(w32, np.float32)
    for _ in range(2):
        g = R.uniform(-1, 1, shape).astype(np.float16)
        mx.nd.mp_sgd_mom_update(W, nd(g, np.float16), M, W32, lr=0.1, momentum=0.9, wd=0.01, out=W)
        out, mom, w32 = oo._np_mp_sgd_mom(w32.astype(np.float16), g, mom, w32, lr=0.1, momentum=0.9, wd=0.01)
        assert W.dtype == np.float16 and W32.dtype == np.float32 and M.dtype == np.float32
        close(W32.asnumpy(), w32, rtol=1e-6, atol=1e-7)
        close(M.asnumpy(), mom, rtol=1e-6, atol=1e-7)
        close(W.asnumpy(), w32.astype(np.float16), rtol=1e-3, atol=1e-3)


def test_mp_sgd_and_mp_nag_update_master_copy():
    shape = (5,)
    w32 = R.uniform(-1, 1, shape).astype(np.float32)
    g = R.uniform(-1, 1, shape).astype(np.float16)
    W32 = nd(w32, np.float32)
    out = mx.nd.mp_sgd_update(nd(w32, np.float16), nd(g, np.float16), W32, lr=0.1, wd=0.1)
    exp_out, exp_w32 = oo._np_mp_sgd(w32.astype(np.float16), g, w32, lr=0.1, wd=0.1)
    assert out.dtype == np.float16
    close(W32.asnumpy(), exp_w32, rtol=1e-6)
    W32, M = nd(w32, np.float32), nd(np.zeros(shape), np.float32)
    mx.nd.mp_nag_mom_update(nd(w32, np.float16), nd(g, np.float16), M, W32, lr=0.1, momentum=0.9)
    _, m, w = oo._np_mp_nag(w32.astype(np.float16), g, np.zeros(shape, np.float32), w32, lr=0.1, momentum=0.9)
    close(W32.asnumpy(), w, rtol=1e-6)
    close(M.asnumpy(), m, rtol=1e-6)


# ---- LAMB ----------------------------------------------------------------------------------------
def test_lamb_two_phases_match_numpy_step():
    shape = (3, 4)
    w, g = R.uniform(-1, 1, shape), R.uniform(-1, 1, shape)
    M, V = nd(np.zeros(shape)), nd(np.zeros(shape))
    W = nd(w)
    d = mx.nd.lamb_update_phase1(W, nd(g), M, V, t=1, wd=0.01)
    r1 = mx.nd.array(np.array([np.linalg.norm(w)]), dtype=np.float64)
    r2 = mx.nd.array(np.array([np.linalg.norm(d.asnumpy())]), dtype=np.float64)
    mx.nd.lamb_update_phase2(W, d, r1, r2, lr=0.01, lower_bound=0.1, upper_bound=10.0, out=W)
    dd, m, v = oo._np_lamb1(w, g, np.zeros(shape), np.zeros(shape), t=1, wd=0.01)
    close(M.asnumpy(), m)
    close(V.asnumpy(), v)
    close(d.asnumpy(), dd)
    ratio = np.clip(np.linalg.norm(w), 0.1, 10.0) / np.linalg.norm(dd)
    close(W.asnumpy(), w - 0.01 * ratio * dd)


def test_lamb_phase2_zero_norm_keeps_plain_lr():
    w, g = np.ones((2, 2)), np.full((2, 2), 0.5)
    out = mx.nd.lamb_update_phase2(nd(w), nd(g), nd([0.0]), nd([3.0]), lr=0.1).asnumpy()
    close(out, w - 0.1 * g)


def test_mp_lamb_phases():
    shape = (4,)
    w32 = R.uniform(-1, 1, shape).astype(np.float32)
    g = R.uniform(-1, 1, shape).astype(np.float16)
    M, V, W32 = nd(np.zeros(shape), np.float32), nd(np.zeros(shape), np.float32), nd(w32, np.float32)
    W = nd(w32, np.float16)
    d = mx.nd.mp_lamb_update_phase1(W, nd(g, np.float16), M, V, W32, t=1, wd=0.1)
    assert d.dtype == np.float32
    dd, m, v = oo._np_mp_lamb1(w32.astype(np.float16), g, np.zeros(shape, np.float32),
                               np.zeros(shape, np.float32), w32, t=1, wd=0.1)
    close(d.asnumpy(), dd, rtol=1e-5, atol=1e-6)
    close(M.asnumpy(), m, rtol=1e-6)
    r1, r2 = nd([np.linalg.norm(w32)], np.float32), nd([np.linalg.norm(dd)], np.float32)
    out = mx.nd.mp_lamb_update_phase2(W, d, r1, r2, W32, lr=0.01)
    assert out.dtype == np.float16
    close(out.asnumpy(), (w32 - 0.01 * np.linalg.norm(w32) / np.linalg.norm(dd) * dd).astype(np.float16),
          rtol=1e-3, atol=1e-3)


# ---- multi-tensor forms -------------------------------------------------------------------------
@pytest.mark.parametrize("mom,mp", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("preloaded", [False, True])
def test_multi_sgd_family_updates_weights_and_states(mom, mp, preloaded):
    name = ("preloaded_" if preloaded else "") + "multi_" + ("mp_" if mp else "") + "sgd_" + \
        ("mom_" if mom else "") + "update"
    shapes = [(3, 2), (4,)]
    lrs, wds = [0.1, 0.2], [0.01, 0.0]
    np_in, nd_in = [], []
    for s in shapes:
        w32 = R.uniform(-1, 1, s).astype(np.float32)
        group = [(w32.astype(np.float16) if mp else w32.astype(np.float64)),
                 R.uniform(-1, 1, s).astype(np.float16 if mp else np.float64)]
        if mom:
            group.append(R.uniform(-.5, .5, s).astype(np.float32 if mp else np.float64))
        if mp:
            group.append(w32)
        np_in += group
        nd_in += [nd(a, a.dtype) for a in group]
    attrs = {"num_weights": 2, "rescale_grad": 0.5, "clip_gradient": 0.3}
    if mom:
        attrs["momentum"] = 0.9
    if preloaded:
        nd_in += [nd(lrs, np.float32), nd(wds, np.float32)]
        lr_vals = [float(x) for x in np.float32(lrs)]
        wd_vals = [float(x) for x in np.float32(wds)]
    else:
        attrs["lrs"], attrs["wds"] = tuple(lrs), tuple(wds)
        lr_vals, wd_vals = lrs, wds
    stride = 2 + mom + mp
    weights = [nd_in[i * stride] for i in range(2)]
    res = getattr(mx.nd, name)(*nd_in, out=weights, **attrs)
    np_attrs = {k: v for k, v in attrs.items() if k not in ("lrs", "wds")}
    outs, states = oo._np_multi_sgd(*np_in, lrs=lr_vals, wds=wd_vals, stride=stride, has_mom=mom,
                                    has_mp=mp, **np_attrs)
    assert res is weights
    tol = dict(rtol=2e-3, atol=2e-3) if mp else dict(rtol=1e-10, atol=1e-12)
    for k in range(2):
        close(weights[k].asnumpy(), outs[k], **tol)
        m_new, w32_new = states[k]
        if mom:
            close(nd_in[k * stride + 2].asnumpy(), m_new, rtol=1e-6, atol=1e-7)
        if mp:
            close(nd_in[k * stride + stride - 1].asnumpy(), w32_new, rtol=1e-6, atol=1e-7)


def test_multi_sgd_checks_counts():
    a, g = nd(np.ones(2)), nd(np.ones(2))
    with pytest.raises(MXNetError, match="num_weights=2 needs 4 inputs"):
        mx.nd.multi_sgd_update(a, g, lrs=(0.1, 0.1), wds=(0, 0), num_weights=2)
    with pytest.raises(MXNetError, match="lrs has 2 values but num_weights=1"):
        mx.nd.multi_sgd_update(a, g, lrs=(0.1, 0.1), wds=(0,), num_weights=1)
    with pytest.raises(MXNetError, match="lrs input has 3 values"):
        mx.nd.preloaded_multi_sgd_update(a, g, nd([0.1, 0.1, 0.1], np.float32), nd([0.0], np.float32),
                                         num_weights=1)


def test_multi_sum_sq_lars_and_finite():
    arrays = [R.randn(3, 4), R.randn(5), R.randn(2, 2, 2)]
    ss = mx.nd.multi_sum_sq(*[nd(a) for a in arrays], num_arrays=3)
    assert ss.dtype == np.float32 and ss.shape == (3,)
    close(ss.asnumpy(), [np.sum(a * a) for a in arrays], rtol=1e-6)
    with pytest.raises(MXNetError, match="num_arrays=2 but 3 arrays"):
        mx.nd.multi_sum_sq(*[nd(a) for a in arrays], num_arrays=2)
    lrs, wss, gss, wds = np.array([.1, .1, .1]), np.array([4., 0., 9.]), np.array([1., 1., 0.]), np.array([.01] * 3)
    out = mx.nd.multi_lars(nd(lrs), nd(wss), nd(gss), nd(wds), eta=0.5, eps=1e-3, rescale_grad=2.0).asnumpy()
    close(out, [0.1 * 0.5 * 2 / (1 * 2 + 0.01 * 2 + 1e-3), 0.1, 0.1])
    good, bad = nd(R.randn(3)), nd(np.array([1.0, np.nan]))
    assert mx.nd.all_finite(good).asnumpy().tolist() == [1.0]
    assert mx.nd.all_finite(bad).dtype == np.float32
    assert mx.nd.all_finite(bad).asnumpy().tolist() == [0.0]
    assert mx.nd.multi_all_finite(good, bad, num_arrays=2).asnumpy().tolist() == [0.0]
    assert mx.nd.multi_all_finite(good, good, num_arrays=2).asnumpy().tolist() == [1.0]
    assert mx.nd.multi_all_finite(good, nd([np.inf]), num_arrays=2).asnumpy().tolist() == [0.0]


def test_reset_arrays_zeroes_in_place():
    a, b = nd(R.randn(3, 2)), nd(R.randn(4))
    res = mx.nd.reset_arrays(a, b, num_arrays=2)
    assert res == [] or res is None
    assert not a.asnumpy().any() and not b.asnumpy().any()


# ---- interface: names, defaults, mutated inputs --------------------------------------------------
def test_attribute_names_and_defaults_follow_mxnet():
    a = get("sgd_update").attrs
    assert a["lr"].required and a["wd"].default == 0.0 and a["rescale_grad"].default == 1.0
    assert a["clip_gradient"].default == -1.0 and a["lazy_update"].default is True
    a = get("adam_update").attrs
    assert (a["beta1"].default, a["beta2"].default, a["epsilon"].default) == (0.9, 0.999, 1e-8)
    a = get("rmspropalex_update").attrs
    assert (a["gamma1"].default, a["gamma2"].default, a["clip_weights"].default) == (0.95, 0.9, -1.0)
    a = get("ftml_update").attrs
    assert (a["beta1"].default, a["beta2"].default) == (0.6, 0.999) and a["t"].required
    a = get("ftrl_update").attrs
    assert (a["lamda1"].default, a["beta"].default) == (0.01, 1.0)
    a = get("lamb_update_phase1").attrs
    assert a["t"].required and a["wd"].required and a["epsilon"].default == 1e-6
    assert a["bias_correction"].default is True
    a = get("multi_sgd_mom_update").attrs
    assert a["lrs"].required and a["num_weights"].default == 1 and a["momentum"].default == 0.0
    assert get("signum_update").attrs["wd_lh"].default == 0.0
    assert get("multi_lars").attrs["eta"].required and get("all_finite").attrs["init_output"].default is True


def test_state_inputs_are_declared_mutated():
    expect = {"sgd_update": (), "sgd_mom_update": ("mom",), "mp_sgd_update": ("weight32",),
              "mp_sgd_mom_update": ("mom", "weight32"), "nag_mom_update": ("mom",),
              "mp_nag_mom_update": ("mom", "weight32"), "adam_update": ("mean", "var"),
              "rmsprop_update": ("n",), "rmspropalex_update": ("n", "g", "delta"),
              "ftml_update": ("d", "v", "z"), "ftrl_update": ("z", "n"), "signum_update": ("mom",),
              "lamb_update_phase1": ("mean", "var"), "mp_lamb_update_phase1": ("mean", "var")}
    for name, aux in expect.items():
        op = get(name)
        assert op.aux == aux, name
        assert not op.differentiable, name
    s = mx.sym.adam_update(mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("m"), mx.sym.var("v"), lr=0.1)
    assert s.list_arguments() == ["w", "g"]
    assert s.list_auxiliary_states() == ["m", "v"]
    node = json.loads(s.tojson())["nodes"][-1]
    assert node["op"] == "adam_update"
    assert [e[2] for e in node["inputs"]] == [0, 0, 1, 1]   # mutated inputs get a new version
    back = mx.sym.load_json(s.tojson())
    assert back.list_auxiliary_states() == ["m", "v"] and back.tojson() == s.tojson()


def test_symbolic_update_runs_and_updates_aux():
    s = mx.sym.sgd_mom_update(mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("mom"), lr=0.5, momentum=0.5)
    w, g = R.randn(2, 3), R.randn(2, 3)
    mom = nd(np.ones((2, 3)))
    ex = s.bind(mx.cpu(), {"w": nd(w), "g": nd(g)}, aux_states={"mom": mom})
    out = ex.forward()[0].asnumpy()
    exp_out, exp_mom = oo._np_sgd_mom(w, g, np.ones((2, 3)), lr=0.5, momentum=0.5)
    close(out, exp_out)
    close(ex.aux_dict["mom"].asnumpy(), exp_mom)


def test_update_ops_reject_mismatched_states():
    with pytest.raises(MXNetError, match="mom has shape"):
        mx.nd.sgd_mom_update(nd(np.ones((2, 3))), nd(np.ones((2, 3))), nd(np.ones(3)), lr=0.1)
