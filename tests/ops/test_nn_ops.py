"""Operator-specific behaviour of the nn / norm families beyond the generic sample checks:
MXNet's special loss-head backward, training-mode state (BatchNorm moving stats, Dropout,
rrelu), pooling conventions, parameter-shape and active-input rules, CTC, attribute parsing."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.ops import get
from hybridnet.ops.nn import _np_ctc, _np_pool, _np_softmax

R = np.random.RandomState(123)


def K(name):
    return get(name).kernel


def t64(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def onehot(lab, k):
    return np.eye(k)[lab.astype(int)]


# ---- SoftmaxOutput / regression heads: MXNet's own backward -----------------------------------
def _so_grad(x, label, head=None, **attrs):
    xt = t64(x).requires_grad_(True)
    out = K("SoftmaxOutput")(xt, t64(label), **attrs)
    h = torch.ones_like(out) * 7.0 if head is None else t64(head)  # head gradient is ignored
    out.backward(h)
    return out.detach().numpy(), xt.grad.numpy()


def test_softmax_output_backward_ignores_head_gradient():
    x, lab = R.randn(4, 5), np.array([0., 3., 1., 4.])
    out, g = _so_grad(x, lab, grad_scale=0.5)
    sm = _np_softmax(x, -1)
    np.testing.assert_allclose(out, sm, rtol=1e-12)
    np.testing.assert_allclose(g, (sm - onehot(lab, 5)) * 0.5, rtol=1e-10)


def test_softmax_output_normalization_and_ignore():
    x, lab = R.randn(4, 3), np.array([0., -1., 2., -1.])
    sm = _np_softmax(x, -1)
    tgt = onehot(np.clip(lab, 0, 2), 3)
    keep = (lab != -1)[:, None]
    _, g = _so_grad(x, lab, use_ignore=True, normalization="valid")
    np.testing.assert_allclose(g, (sm - tgt) * keep / 2, rtol=1e-10)
    _, g = _so_grad(x, lab, use_ignore=True, normalization="batch", grad_scale=2.0)
    np.testing.assert_allclose(g, (sm - tgt) * keep * 2.0 / 4, rtol=1e-10)
    _, g = _so_grad(x, lab, use_ignore=False, normalization="null")
    np.testing.assert_allclose(g, sm - tgt, rtol=1e-10)


def test_softmax_output_multi_output_divides_by_spatial_size():
    x = R.randn(2, 3, 4)
    lab = R.randint(0, 3, (2, 4)).astype(float)
    out, g = _so_grad(x, lab, multi_output=True)
    sm = _np_softmax(x, 1)
    np.testing.assert_allclose(out, sm, rtol=1e-12)
    tgt = np.moveaxis(onehot(lab, 3), -1, 1)
    np.testing.assert_allclose(g, (sm - tgt) / 4, rtol=1e-10)
    _, g = _so_grad(x, lab, multi_output=True, normalization="batch")
    np.testing.assert_allclose(g, (sm - tgt) / 4 / 2, rtol=1e-10)


def test_softmax_output_flattens_non_batch_axes_and_preserve_shape():
    x = R.randn(2, 3, 2)
    out = K("SoftmaxOutput")(t64(x), t64([1., 5.]))
    np.testing.assert_allclose(out.numpy(), _np_softmax(x.reshape(2, 6), -1).reshape(2, 3, 2), rtol=1e-12)
    lab = R.randint(0, 2, (2, 3)).astype(float)
    out, g = _so_grad(x, lab, preserve_shape=True)
    sm = _np_softmax(x, -1)
    np.testing.assert_allclose(out, sm, rtol=1e-12)
    np.testing.assert_allclose(g, sm - onehot(lab, 2), rtol=1e-10)


def test_softmax_output_smoothing_prob_labels_and_out_grad():
    x, lab = R.randn(3, 4), np.array([1., 0., 3.])
    sm = _np_softmax(x, -1)
    _, g = _so_grad(x, lab, smooth_alpha=0.3)
    tgt = onehot(lab, 4) * 0.7 + (1 - onehot(lab, 4)) * 0.1
    np.testing.assert_allclose(g, sm - tgt, rtol=1e-10)
    probs = _np_softmax(R.randn(3, 4), -1)
    _, g = _so_grad(x, probs, grad_scale=3.0)
    np.testing.assert_allclose(g, (sm - probs) * 3.0, rtol=1e-10)
    head = R.rand(3, 4)
    _, g = _so_grad(x, lab, head=head, out_grad=True)
    np.testing.assert_allclose(g, (sm - onehot(lab, 4)) * head, rtol=1e-10)


def test_softmax_output_through_nd_autograd_and_alias():
    x = mx.nd.array(R.randn(2, 3))
    lab = mx.nd.array([2, 0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Softmax(x, lab)  # MXNet's old alias
    y.backward()
    sm = _np_softmax(x.asnumpy().astype(np.float64), -1)
    np.testing.assert_allclose(x.grad.asnumpy(), sm - onehot(np.array([2, 0]), 3), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,fwd,dfn", [
    ("LinearRegressionOutput", lambda x: x, lambda o, l: o - l),
    ("MAERegressionOutput", lambda x: x, lambda o, l: np.sign(o - l)),
    ("LogisticRegressionOutput", lambda x: 1 / (1 + np.exp(-x)), lambda o, l: o - l),
])
def test_regression_outputs(name, fwd, dfn):
    x, lab = R.randn(4, 3), R.randn(4, 3)
    xt = t64(x).requires_grad_(True)
    out = K(name)(xt, t64(lab), grad_scale=2.0)
    out.backward(torch.full_like(out, 5.0))
    np.testing.assert_allclose(out.detach().numpy(), fwd(x), rtol=1e-12)
    np.testing.assert_allclose(xt.grad.numpy(), dfn(fwd(x), lab) * 2.0 / 3, rtol=1e-10)
    # (N, 1) data with (N,) labels
    xt = t64(x[:, :1]).requires_grad_(True)
    K(name)(xt, t64(lab[:, 0])).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), dfn(fwd(x[:, :1]), lab[:, :1]), rtol=1e-10)


# ---- BatchNorm and friends -----------------------------------------------------------------
def _bn_inputs(c=3):
    return (t64(R.randn(4, c, 2, 2) * 2 + 1), t64(R.uniform(0.5, 1.5, c)), t64(R.randn(c)),
            t64(R.randn(c) * 0.1), t64(R.uniform(0.5, 2, c)))


def test_batchnorm_training_updates_moving_stats_in_place_with_biased_variance():
    x, g, b, mm, mv = _bn_inputs()
    mm0, mv0 = mm.clone(), mv.clone()
    with torch.no_grad():  # a forward that is never differentiated leaves the statistics alone
        K("BatchNorm")(x, g, b, mm, mv, momentum=0.8, fix_gamma=False, eps=1e-5, is_train=True)
    assert torch.equal(mm, mm0) and torch.equal(mv, mv0)
    xg = x.clone().requires_grad_(True)
    with torch.enable_grad():
        out = K("BatchNorm")(xg, g, b, mm, mv, momentum=0.8, fix_gamma=False, eps=1e-5, is_train=True)
        out.sum().backward()  # MXNet updates the moving statistics in backward (spec B.6)
    out = out.detach()
    xn = x.numpy()
    bm, bv = xn.mean(axis=(0, 2, 3)), xn.var(axis=(0, 2, 3))
    np.testing.assert_allclose(mm.numpy(), 0.8 * mm0.numpy() + 0.2 * bm, rtol=1e-10)
    np.testing.assert_allclose(mv.numpy(), 0.8 * mv0.numpy() + 0.2 * bv, rtol=1e-8)
    exp = (xn - bm[None, :, None, None]) / np.sqrt(bv[None, :, None, None] + 1e-5) * g.numpy()[None, :, None, None] \
        + b.numpy()[None, :, None, None]
    np.testing.assert_allclose(out.numpy(), exp, rtol=1e-10)


def test_batchnorm_predict_and_global_stats_leave_moving_stats():
    x, g, b, mm, mv = _bn_inputs()
    mm0, mv0 = mm.clone(), mv.clone()
    K("BatchNorm")(x, g, b, mm, mv, is_train=False)
    K("BatchNorm")(x, g, b, mm, mv, use_global_stats=True, is_train=True)
    assert torch.equal(mm, mm0) and torch.equal(mv, mv0)


def test_batchnorm_fix_gamma_gives_zero_gamma_gradient_and_ignores_gamma():
    x, g, b, mm, mv = _bn_inputs()
    g.requires_grad_(True)
    out = K("BatchNorm")(x, g, b, mm, mv, fix_gamma=True, is_train=True)
    ref = K("BatchNorm")(x, torch.ones(3, dtype=torch.float64), b, mm.clone(), mv.clone(),
                         fix_gamma=False, is_train=True)
    np.testing.assert_allclose(out.detach().numpy(), ref.numpy(), rtol=1e-12)
    (out * t64(R.randn(*out.shape))).sum().backward()
    assert g.grad is not None and torch.all(g.grad == 0)


def test_batchnorm_output_mean_var_gives_mean_and_inverse_std():
    x, g, b, mm, mv = _bn_inputs()
    op = get("BatchNorm")
    assert op.num_outputs({"output_mean_var": True}) == 3 and op.num_outputs({}) == 1
    assert op.total_outputs({}) == 3 and op.aux == ("moving_mean", "moving_var")
    out, mean, var = K("BatchNorm")(x, g, b, mm, mv, output_mean_var=True, eps=1e-3, is_train=True)
    xn = x.numpy()
    np.testing.assert_allclose(mean.numpy(), xn.mean(axis=(0, 2, 3)), rtol=1e-10)
    np.testing.assert_allclose(var.numpy(), 1 / np.sqrt(xn.var(axis=(0, 2, 3)) + 1e-3), rtol=1e-8)
    out, mean, var = K("BatchNorm")(x, g, b, mm, mv, output_mean_var=True, eps=1e-3, is_train=False)
    np.testing.assert_allclose(var.numpy(), 1 / np.sqrt(mv.numpy() + 1e-3), rtol=1e-10)


def test_batchnorm_float16_data_with_float32_params():
    x = torch.randn(2, 3, 4).half()
    g, b, mm, mv = torch.ones(3), torch.zeros(3), torch.zeros(3), torch.ones(3)
    with torch.enable_grad():
        out = K("BatchNorm")(x.requires_grad_(True), g, b, mm, mv, fix_gamma=False, is_train=True)
        out.float().sum().backward()
    out = out.detach()
    x = x.detach()
    assert out.dtype == torch.float16
    xf = x.float().numpy()
    exp = (xf - xf.mean((0, 2), keepdims=True)) / np.sqrt(xf.var((0, 2), keepdims=True) + 1e-3)
    np.testing.assert_allclose(out.float().numpy(), exp, rtol=2e-3, atol=2e-3)
    assert mm.dtype == torch.float32 and not torch.equal(mm, torch.zeros(3))


def test_batchnorm_nd_train_mode_and_record():
    x = mx.nd.array(R.randn(4, 2))
    g, b = mx.nd.ones((2,)), mx.nd.zeros((2,))
    mm, mv = mx.nd.zeros((2,)), mx.nd.ones((2,))
    y = mx.nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False)
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy() / np.sqrt(1 + 1e-3), rtol=1e-5)
    assert np.all(mm.asnumpy() == 0)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False, momentum=0.5)
    assert np.all(mm.asnumpy() == 0)  # MXNet updates the moving statistics in backward
    y.backward()
    np.testing.assert_allclose(mm.asnumpy(), 0.5 * x.asnumpy().mean(0), rtol=1e-5)
    np.testing.assert_allclose(y.asnumpy().mean(0), 0, atol=1e-5)


@pytest.mark.parametrize("name,attrs,nin", [
    ("LayerNorm", {"output_mean_var": True}, 4),
    ("LayerNorm", {"output_mean_var": True, "axis": 1}, 3),
    ("GroupNorm", {"output_mean_var": True, "num_groups": 2}, 2),
])
def test_norm_mean_std_outputs_carry_no_gradient_but_output_does(name, attrs, nin):
    x = t64(R.randn(2, 3 if nin == 3 else 4, 4))
    g, b = t64(R.uniform(0.5, 1.5, nin)), t64(R.randn(nin))
    out, mean, std = K(name)(x, g, b, **attrs)
    assert not mean.requires_grad and not std.requires_grad
    xn = x.numpy()
    ax = attrs.get("axis", -1) if name == "LayerNorm" else None
    if name == "LayerNorm":
        np.testing.assert_allclose(std.numpy(), np.sqrt(xn.var(axis=ax, keepdims=True) + 1e-5), rtol=1e-10)
        np.testing.assert_allclose(mean.numpy(), xn.mean(axis=ax, keepdims=True), rtol=1e-10)
    else:
        xg = xn.reshape(2, 2, -1)
        np.testing.assert_allclose(std.numpy(), np.sqrt(xg.var(-1) + 1e-5), rtol=1e-10)

    def f(x_, g_, b_):
        return K(name)(x_, g_, b_, **attrs)[0]
    assert torch.autograd.gradcheck(f, (x.clone().requires_grad_(True), g.clone().requires_grad_(True),
                                        b.clone().requires_grad_(True)))


def test_groupnorm_per_group_gamma_is_mxnet_1x_layout():
    x = t64(R.randn(2, 4, 3))
    g, b = t64([2.0, 0.5]), t64([1.0, -1.0])
    out = K("GroupNorm")(x, g, b, num_groups=2)
    xg = x.numpy().reshape(2, 2, -1)
    y = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)
    exp = (y * np.array([2.0, 0.5])[None, :, None] + np.array([1.0, -1.0])[None, :, None]).reshape(2, 4, 3)
    np.testing.assert_allclose(out.numpy(), exp, rtol=1e-10)
    with pytest.raises(MXNetError, match="num_groups"):
        K("GroupNorm")(x, t64([1.0, 1.0, 1.0]), t64([0.0, 0.0, 0.0]), num_groups=2)


# ---- Dropout / rrelu -----------------------------------------------------------------------
def test_dropout_modes_and_scaling():
    x = torch.ones(200, 50, dtype=torch.float64)
    d = K("Dropout")
    assert d(x, p=0.5, is_train=False) is x
    torch.manual_seed(0)
    y = d(x, p=0.4, is_train=True)
    vals = set(np.unique(y.numpy()).round(6))
    assert vals == {0.0, round(1 / 0.6, 6)}
    assert abs((y == 0).double().mean().item() - 0.4) < 0.03
    y = d(x, p=0.4, mode="always", is_train=False)
    assert (y == 0).any()
    y = d(torch.ones(4, 30, 5, dtype=torch.float64), p=0.5, axes=(1,), is_train=True)
    assert torch.all(y == y[:, :1, :])  # one mask value shared along axis 1
    op = get("Dropout")
    assert op.total_outputs({}) == 2 and op.num_outputs({}) == 1 and op.random and op.train_aware


def test_dropout_nd_identity_in_predict_and_random_in_train():
    x = mx.nd.ones((100, 10))
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.5).asnumpy(), 1)
    with mx.autograd.train_mode():
        y = mx.nd.Dropout(x, p=0.5).asnumpy()
    assert set(np.unique(y)) == {0.0, 2.0}


def test_rrelu_training_and_predict():
    x = t64(-np.abs(R.randn(50, 40)) - 0.1)
    out, mask = K("LeakyReLU")(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.3, is_train=True)
    slopes = (out / x).numpy()
    assert slopes.min() >= 0.1 - 1e-12 and slopes.max() <= 0.3 + 1e-12 and slopes.std() > 0.03
    np.testing.assert_allclose(mask.numpy(), slopes, rtol=1e-10)
    out, _ = K("LeakyReLU")(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.3, is_train=False)
    np.testing.assert_allclose(out.numpy(), x.numpy() * 0.2, rtol=1e-12)
    op = get("LeakyReLU")
    assert op.num_outputs({"act_type": "rrelu"}) == 2 and op.num_outputs({}) == 1


def test_gelu_is_erf_based():
    x = np.linspace(-3, 3, 13)
    y = K("LeakyReLU")(t64(x), act_type="gelu").numpy()
    exp = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(y, exp, rtol=1e-12)


# ---- Pooling conventions -------------------------------------------------------------------
def test_pooling_full_keeps_windows_torch_ceil_mode_drops():
    x = R.randn(1, 1, 5, 5)
    for pt in ("max", "avg", "sum"):
        out = K("Pooling")(t64(x), kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type=pt,
                           pooling_convention="full")
        assert tuple(out.shape) == (1, 1, 4, 4)  # ceil((5+2-2)/2)+1; torch's ceil_mode gives 3
        ref = _np_pool(x, kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type=pt, pooling_convention="full")
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)


def test_pooling_output_sizes_and_defaults():
    x = t64(R.randn(2, 3, 8, 10))
    p = K("Pooling")
    assert p(x, kernel=(3, 3), pool_type="max").shape == (2, 3, 6, 8)  # stride defaults to 1
    assert p(x, kernel=(3, 3), stride=(2, 2), pooling_convention="valid").shape == (2, 3, 3, 4)
    assert p(x, kernel=(3, 3), stride=(2, 2), pooling_convention="full").shape == (2, 3, 4, 5)
    assert p(x, kernel=(1, 1), global_pool=True, pool_type="avg").shape == (2, 3, 1, 1)
    assert p(t64(R.randn(1, 2, 10)), kernel=(3,), stride=(3,), pooling_convention="same").shape == (1, 2, 4)
    np.testing.assert_allclose(p(x, global_pool=True, pool_type="sum").numpy(),
                               x.numpy().sum(axis=(2, 3), keepdims=True), rtol=1e-12)
    with pytest.raises(MXNetError, match="kernel"):
        p(x, kernel=(3,))


def test_pooling_total_outputs_rule():
    op = get("Pooling")
    assert op.total_outputs({"pool_type": "max", "kernel": (2, 2)}) == 2
    assert op.total_outputs({"kernel": (2, 2), "layout": "NCHW"}) == 2
    assert op.total_outputs({"pool_type": "avg", "kernel": (2, 2)}) == 1
    assert op.total_outputs({"pool_type": "max", "kernel": (2, 2), "layout": "NHWC"}) == 1
    assert op.num_outputs({"pool_type": "max", "kernel": (2, 2)}) == 1
    assert get("LRN").total_outputs({"nsize": 3}) == 2
    for n in ("LayerNorm", "InstanceNorm", "GroupNorm"):
        assert get(n).total_outputs({}) == 3 and get(n).num_outputs({}) == 1


# ---- parameter shapes and active inputs ----------------------------------------------------
def test_param_shapes_rules():
    def ps(name, attrs, shapes):
        return get(name).param_shapes(attrs, shapes)
    assert ps("FullyConnected", {"num_hidden": 8}, [(2, 3, 4), None, None]) == [(2, 3, 4), (8, 12), (8,)]
    assert ps("FullyConnected", {"num_hidden": 8, "flatten": False}, [(2, 3, 4), None, None])[1] == (8, 4)
    assert ps("FullyConnected", {"num_hidden": 8, "no_bias": True}, [(2, 5), (0, 0)]) == [(2, 5), (8, 5)]
    assert ps("Convolution", {"kernel": (3, 3), "num_filter": 6, "num_group": 2},
              [(1, 4, 9, 9), None, None]) == [(1, 4, 9, 9), (6, 2, 3, 3), (6,)]
    assert ps("Convolution", {"kernel": (3, 3), "num_filter": 6, "layout": "NHWC"},
              [(1, 9, 9, 4), None, None])[1] == (6, 3, 3, 4)
    assert ps("Deconvolution", {"kernel": (4, 4), "num_filter": 6, "num_group": 2},
              [(1, 4, 9, 9), None]) == [(1, 4, 9, 9), (4, 3, 4, 4)]
    assert ps("BatchNorm", {}, [(2, 5, 3), None, None, None, None])[1:] == [(5,)] * 4
    assert ps("BatchNorm", {"axis": -1}, [(2, 5, 3), None, None, (0,), None])[1:] == [(3,)] * 4
    assert ps("LayerNorm", {}, [(2, 5, 3), None, None])[1:] == [(3,)] * 2
    assert ps("InstanceNorm", {}, [(2, 5, 3), None, None])[1:] == [(5,)] * 2
    assert ps("GroupNorm", {"num_groups": 2}, [(2, 6, 3), None, None])[1:] == [(2,)] * 2
    assert ps("Embedding", {"input_dim": 10, "output_dim": 4}, [(2, 3), None]) == [(2, 3), (10, 4)]
    assert ps("LeakyReLU", {"act_type": "prelu"}, [(2, 5, 3), None]) == [(2, 5, 3), (5,)]
    assert ps("LeakyReLU", {"act_type": "prelu"}, [(2, 5, 3), (1,)]) == [(2, 5, 3), (1,)]  # known stays
    assert ps("UpSampling", {"scale": 2, "sample_type": "bilinear", "num_args": 2},
              [(1, 3, 4, 4), None]) == [(1, 3, 4, 4), (3, 1, 4, 4)]
    assert ps("SoftmaxOutput", {}, [(4, 10), None])[1] == (4,)
    assert ps("SoftmaxOutput", {"multi_output": True}, [(4, 10, 5, 6), None])[1] == (4, 5, 6)
    # a partially known shape (Gluon's deferred (8, 0)) is completed, not replaced
    assert ps("FullyConnected", {"num_hidden": 8}, [(2, 7), (8, 0), None])[1] == (8, 7)


def test_active_inputs_rules():
    def ai(name, attrs):
        return get(name).active_inputs(attrs)
    assert ai("FullyConnected", {"num_hidden": 2}) == ("data", "weight", "bias")
    assert ai("FullyConnected", {"num_hidden": 2, "no_bias": True}) == ("data", "weight")
    assert ai("Convolution", {"no_bias": True}) == ("data", "weight")
    assert ai("Deconvolution", {}) == ("data", "weight")  # MXNet's Deconvolution defaults to no_bias=True
    assert ai("Deconvolution", {"no_bias": False}) == ("data", "weight", "bias")
    assert ai("LeakyReLU", {}) == ("data",)
    assert ai("LeakyReLU", {"act_type": "prelu"}) == ("data", "gamma")
    assert ai("softmax", {"use_length": True}) == ("data", "length")
    assert ai("CTCLoss", {"use_label_lengths": True}) == ("data", "label", "label_lengths")
    assert ai("SoftmaxOutput", {}) == ("data", "label")
    assert ai("BatchNorm", {}) == ("data", "gamma", "beta", "moving_mean", "moving_var")


# ---- CTC ----------------------------------------------------------------------------------
def test_ctc_loss_matches_numpy_and_gradient():
    data = R.randn(7, 3, 5)
    label = np.array([[1, 2, 2, 0], [4, 0, 0, 0], [3, 1, 4, 2]], dtype=float)
    loss = K("CTCLoss")(t64(data), t64(label))
    np.testing.assert_allclose(loss.numpy(), _np_ctc(data, label), rtol=1e-8)
    assert torch.autograd.gradcheck(lambda d: K("CTCLoss")(d, t64(label)), (t64(data).requires_grad_(True),))


def test_ctc_loss_label_lengths_only_is_taken_positionally():
    data = R.randn(6, 2, 4)
    label = np.array([[1, 2, 3], [3, 1, 1]], dtype=float)
    ll = np.array([2., 3.])
    # a graph node with only use_label_lengths has inputs (data, label, label_lengths)
    a = K("CTCLoss")(t64(data), t64(label), t64(ll), use_label_lengths=True)
    b = K("CTCLoss")(t64(data), t64(label), None, t64(ll), use_label_lengths=True)
    ref = _np_ctc(data, label, None, ll, use_label_lengths=True)
    np.testing.assert_allclose(a.numpy(), ref, rtol=1e-8)
    np.testing.assert_allclose(b.numpy(), ref, rtol=1e-8)


def test_ctc_aliases_and_nd():
    assert get("ctc_loss") is get("CTCLoss") is get("_contrib_CTCLoss")
    d = mx.nd.array(R.randn(5, 2, 4))
    lab = mx.nd.array([[1, 2], [3, 0]])
    a = mx.nd.ctc_loss(d, lab).asnumpy()
    b = mx.nd.contrib.CTCLoss(d, lab).asnumpy()
    np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(a, _np_ctc(d.asnumpy().astype(np.float64), lab.asnumpy()), rtol=1e-5)
    assert get("CTCLoss").total_outputs({}) == 2


# ---- misc ----------------------------------------------------------------------------------
def test_embedding_clips_indices_and_accumulates_gradient():
    w = t64(R.randn(4, 3)).requires_grad_(True)
    ids = t64([[0., 3., 9.], [-1., 3., 1.7]])
    out = K("Embedding")(ids, w, input_dim=4, output_dim=3)
    np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[[[0, 3, 3], [0, 3, 1]]])
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [2, 1, 0, 3])


def test_deconvolution_target_shape_and_adj():
    x = t64(R.randn(1, 2, 5, 5))
    w = t64(R.randn(2, 3, 3, 3))
    d = K("Deconvolution")
    assert d(x, w, kernel=(3, 3), stride=(2, 2), num_filter=3).shape == (1, 3, 11, 11)
    assert d(x, w, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1), num_filter=3).shape == (1, 3, 10, 10)
    for ts in ((10, 10), (9, 11), (11, 10)):
        assert d(x, w, kernel=(3, 3), stride=(2, 2), target_shape=ts, num_filter=3).shape[2:] == ts
    with pytest.raises(MXNetError, match="target_shape"):
        d(x, w, kernel=(3, 3), stride=(2, 2), target_shape=(30, 30), num_filter=3)


def test_convolution_nhwc_matches_nchw():
    x = R.randn(2, 3, 6, 5)
    w = R.randn(4, 3, 3, 2)
    b = R.randn(4)
    a = K("Convolution")(t64(x), t64(w), t64(b), kernel=(3, 2), num_filter=4, pad=(1, 1))
    c = K("Convolution")(t64(x.transpose(0, 2, 3, 1)), t64(w.transpose(0, 2, 3, 1)), t64(b), kernel=(3, 2),
                         num_filter=4, pad=(1, 1), layout="NHWC")
    np.testing.assert_allclose(c.numpy(), a.numpy().transpose(0, 2, 3, 1), rtol=1e-10)


def test_attributes_parse_from_mxnet_json_strings():
    conv = get("Convolution")
    attrs = conv.parse_attrs({"dilate": "(1, 1)", "kernel": "(3, 3)", "layout": "NCHW", "no_bias": "False",
                              "num_filter": "4", "num_group": "1", "pad": "(1, 1)", "stride": "(1, 1)",
                              "workspace": "1024", "cudnn_tune": "None", "cudnn_off": "0"})
    x, w, b = t64(R.randn(1, 2, 5, 5)), t64(R.randn(4, 2, 3, 3)), t64(R.randn(4))
    y = conv.kernel(x, w, b, **attrs)
    np.testing.assert_allclose(y.numpy(), K("Convolution")(x, w, b, kernel=(3, 3), num_filter=4, pad=(1, 1)).numpy())
    pool = get("Pooling")
    attrs = pool.parse_attrs({"global_pool": "False", "kernel": "(2, 2)", "layout": "NCHW", "pad": "(0, 0)",
                              "pool_type": "max", "pooling_convention": "full", "stride": "(2, 2)"})
    assert pool.kernel(t64(R.randn(1, 1, 5, 5)), **attrs).shape == (1, 1, 3, 3)
    bn = get("BatchNorm").parse_attrs({"axis": "1", "eps": "1e-05", "fix_gamma": "False", "momentum": "0.9",
                                       "use_global_stats": "False"})
    assert bn == {"axis": 1, "eps": 1e-05, "fix_gamma": False, "momentum": 0.9, "use_global_stats": False}
    with pytest.raises(MXNetError):
        pool.parse_attrs({"pool_type": "MAX"})


def test_nd_functions_exist_with_mxnet_names():
    for name in ("FullyConnected", "Convolution", "Deconvolution", "Pooling", "Activation", "LeakyReLU",
                 "softmax", "log_softmax", "softmin", "SoftmaxActivation", "SoftmaxOutput", "Softmax",
                 "LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput", "Embedding",
                 "UpSampling", "ROIPooling", "Dropout", "CTCLoss", "ctc_loss", "softmax_cross_entropy",
                 "BatchNorm", "BatchNorm_v1", "LayerNorm", "InstanceNorm", "GroupNorm", "L2Normalization",
                 "LRN", "GridGenerator", "BilinearSampler"):
        assert callable(getattr(mx.nd, name)), name
    assert callable(mx.nd.contrib.BilinearResize2D)
    x = mx.nd.array(R.randn(2, 3))
    np.testing.assert_allclose(mx.nd.softmax(x, axis=0).asnumpy(), _np_softmax(x.asnumpy(), 0), rtol=1e-5)


def test_upsampling_nearest_multi_input_and_bilinear_weight():
    a, b = t64(R.randn(1, 2, 2, 2)), t64(R.randn(1, 1, 1, 1))
    out = K("UpSampling")(a, b, scale=2, sample_type="nearest")
    assert out.shape == (1, 3, 4, 4)
    np.testing.assert_allclose(out[0, 2].numpy(), np.full((4, 4), b.item()))
    # bilinear with MXNet's bilinear-initialised weight reproduces a constant image
    k = 4
    f = math.ceil(k / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    filt = np.array([[(1 - abs(i / f - c)) * (1 - abs(j / f - c)) for j in range(k)] for i in range(k)])
    w = t64(np.tile(filt, (2, 1, 1, 1)))
    out = K("UpSampling")(t64(np.ones((1, 2, 3, 3))), w, scale=2, sample_type="bilinear", num_filter=2)
    assert out.shape == (1, 2, 6, 6)
    np.testing.assert_allclose(out[0, :, 1:-1, 1:-1].numpy(), 1.0, rtol=1e-12)


def test_roipooling_bins_and_empty_regions():
    x = np.arange(36, dtype=float).reshape(1, 1, 6, 6)
    rois = np.array([[0, 0, 0, 5, 5], [0, 2, 2, 3, 3], [0, 7, 7, 9, 9]], dtype=float)
    out = K("ROIPooling")(t64(x), t64(rois), pooled_size=(2, 2), spatial_scale=1.0).numpy()
    np.testing.assert_array_equal(out[0, 0], [[14, 17], [32, 35]])
    np.testing.assert_array_equal(out[1, 0], [[14, 15], [20, 21]])
    np.testing.assert_array_equal(out[2, 0], 0)  # outside the image


def test_l2normalization_and_lrn_values():
    x = R.randn(2, 3, 4)
    y = K("L2Normalization")(t64(x), mode="channel").numpy()
    np.testing.assert_allclose((y ** 2).sum(1), 1, rtol=1e-8)
    y = K("LRN")(t64(np.ones((1, 3, 1, 1))), nsize=3, alpha=0.3, beta=1.0, knorm=1.0).numpy()
    # channel 0 sees 2 neighbours, channel 1 sees 3
    np.testing.assert_allclose(y[0, :, 0, 0], [1 / (1 + 0.1 * 2), 1 / (1 + 0.1 * 3), 1 / (1 + 0.1 * 2)])


@pytest.mark.parametrize("shape", [(2, 3, 6, 6), (2, 3, 7, 5), (64, 16, 12, 12), (3, 1, 3, 9)])
@pytest.mark.parametrize("grad", [False, True])
def test_max_pool_2x2_quarters_equal_torch_values_and_gradients(shape, grad):
    """Pooling's 2x2 / stride-2 max form over strided quarters (faster than torch's NCHW kernel)
    gives torch's values and gradients: ties (relu zeros) and NaN windows send the gradient
    to the first maximum, an odd last row or column is left out ('valid')."""
    from hybridnet.ops import nn as nn_ops
    rng = np.random.RandomState(0)
    x = torch.tensor(np.maximum(rng.randn(*shape), 0))  # many ties at 0
    if x.numel() > 8:
        x.view(-1)[5] = float("nan")
    want = torch.nn.functional.max_pool2d(x, 2, 2)
    xa = x.clone().requires_grad_(grad)
    xb = x.clone().requires_grad_(grad)
    if grad and x.numel() < nn_ops._QUARTERS_GRAD_MIN:  # small inputs under autograd: torch's kernel
        nn_ops._QUARTERS_GRAD_MIN, saved = 0, nn_ops._QUARTERS_GRAD_MIN
    else:
        saved = None
    try:
        got = mx.nd.Pooling(mx.nd.NDArray(xa), kernel=(2, 2), stride=(2, 2), pool_type="max")._t \
            if not grad else nn_ops._max_pool2d(xa, (2, 2), (2, 2), (0, 0))
    finally:
        if saved is not None:
            nn_ops._QUARTERS_GRAD_MIN = saved
    ref = torch.nn.functional.max_pool2d(xb, 2, 2)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.detach().numpy(), want.numpy())
    if grad:
        head = torch.tensor(rng.randn(*want.shape))
        got.backward(head)
        ref.backward(head)
        np.testing.assert_array_equal(xa.grad.numpy(), xb.grad.numpy())


def test_max_pool_2x2_quarters_on_channels_last_data():
    from hybridnet.ops import nn as nn_ops
    x = torch.tensor(np.random.RandomState(1).randn(16, 6, 24, 24)).contiguous(memory_format=torch.channels_last)
    assert x.numel() >= nn_ops._QUARTERS_CHANNELS_LAST_MIN
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    got = nn_ops._MaxPool2x2.apply(xa)
    want = torch.nn.functional.max_pool2d(xb, 2, 2)
    np.testing.assert_array_equal(nn_ops._max_pool2d(x, (2, 2), (2, 2)).numpy(), want.detach().numpy())
    head = torch.ones_like(want)
    got.backward(head)
    want.backward(head)
    np.testing.assert_array_equal(xa.grad.numpy(), xb.grad.numpy())
