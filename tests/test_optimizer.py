"""mx.optimizer: every optimizer against an independent NumPy transcription of MXNet 1.9.1's rule."""
import math
import pickle

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError

RNG = np.random.RandomState(7)
W0 = RNG.uniform(-1, 1, size=(3, 4))
GRADS = [RNG.uniform(-1, 1, size=(3, 4)) for _ in range(3)]
COMMON = dict(rescale_grad=0.5, wd=0.1)  # with clip 0.3 some, not all, entries clip


def nd64(x, dtype="float64"):
    """An NDArray (float64 unless told: nd.array alone gives float32, as in MXNet)."""
    return mx.nd.array(x, dtype=dtype)


def clipv(x, c):
    return np.clip(x, -c, c) if c is not None else x


# ---- NumPy references (written from MXNet's operator / Python sources, not from our code) ----
def ref_sgd(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, momentum=0.0, **_):
    lr = learning_rate
    mom = np.zeros_like(w)
    for g in grads:
        gs = clipv(rescale_grad * g, clip_gradient)
        if momentum:
            mom = momentum * mom - lr * wd * w - lr * gs
            w = w + mom
        else:
            w = (1 - lr * wd) * w - lr * gs
    return w


def ref_nag(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, momentum=0.0, **_):
    lr = learning_rate
    mom = np.zeros_like(w)
    for g in grads:
        gg = clipv(rescale_grad * g, clip_gradient) + wd * w
        mom = momentum * mom
        w = w - mom + (momentum + 1) * (mom - lr * gg)
        mom = mom - lr * gg
    return w


def ref_adam(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, beta1=0.9, beta2=0.999,
             epsilon=1e-8, **_):
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        lr = learning_rate * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        gg = clipv(rescale_grad * g + wd * w, clip_gradient)
        m = beta1 * m + (1 - beta1) * gg
        v = beta2 * v + (1 - beta2) * gg * gg
        w = w - lr * m / (np.sqrt(v) + epsilon)
    return w


def ref_rmsprop(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, gamma1=0.9,
                gamma2=0.9, epsilon=1e-8, centered=False, clip_weights=None, **_):
    lr = learning_rate
    n = np.zeros_like(w)
    gm = np.zeros_like(w)
    delta = np.zeros_like(w)
    for g in grads:
        gg = clipv(rescale_grad * g + wd * w, clip_gradient)
        n = (1 - gamma1) * gg * gg + gamma1 * n
        if centered:
            gm = (1 - gamma1) * gg + gamma1 * gm
            delta = gamma2 * delta - lr * gg / np.sqrt(n - gm * gm + epsilon)
            w = w + delta
        else:
            w = w - lr * gg / np.sqrt(n + epsilon)
        if clip_weights:
            w = np.clip(w, -clip_weights, clip_weights)
    return w


def ref_adagrad(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, eps=1e-7, **_):
    h = np.zeros_like(w)
    for g in grads:
        gg = clipv(rescale_grad * g, clip_gradient)
        h = h + gg * gg
        w = w - learning_rate * (gg / np.sqrt(h + eps) + wd * w)
    return w


def ref_adadelta(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, rho=0.9,
                 epsilon=1e-5, **_):
    acc_g = np.zeros_like(w)
    acc_d = np.zeros_like(w)
    for g in grads:
        gg = clipv(rescale_grad * g, clip_gradient)
        acc_g = rho * acc_g + (1 - rho) * gg * gg
        d = np.sqrt(acc_d + epsilon) / np.sqrt(acc_g + epsilon) * gg
        acc_d = rho * acc_d + (1 - rho) * d * d
        w = w - (d + wd * w)
    return w


def ref_adamax(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, beta1=0.9,
               beta2=0.999, **_):
    m = np.zeros_like(w)
    u = np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        lr = learning_rate / (1 - beta1 ** t)
        gg = clipv(rescale_grad * g + wd * w, clip_gradient)
        m = beta1 * m + (1 - beta1) * gg
        u = np.maximum(beta2 * u, np.abs(gg))
        w = w - lr * m / u
    return w


def ref_nadam(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, beta1=0.9,
              beta2=0.999, epsilon=1e-8, schedule_decay=0.004, **_):
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    sched = 1.0
    for t, g in enumerate(grads, 1):
        gg = clipv(rescale_grad * g + wd * w, clip_gradient)
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * schedule_decay))
        mu_t1 = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * schedule_decay))
        sched = sched * mu_t
        sched_next = sched * mu_t1
        m = beta1 * m + (1 - beta1) * gg
        v = beta2 * v + (1 - beta2) * gg * gg
        m_bar = (1 - mu_t) * gg / (1 - sched) + mu_t1 * m / (1 - sched_next)
        w = w - learning_rate * m_bar / (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    return w


def ref_signum(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, momentum=0.9,
               wd_lh=0.0, **_):
    lr = learning_rate
    mom = np.zeros_like(w)
    for g in grads:
        if momentum:
            mom = momentum * mom - (1 - momentum) * wd * w - (1 - momentum) * clipv(rescale_grad * g, clip_gradient)
            w = (1 - lr * wd_lh) * w + lr * np.sign(mom)
        else:
            w = (1 - lr * wd) * w - lr * np.sign(g)
    return w


def ref_ftml(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, beta1=0.6,
             beta2=0.999, epsilon=1e-8, **_):
    d = np.zeros_like(w)
    v = np.zeros_like(w)
    z = np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        gg = clipv(rescale_grad * g + wd * w, clip_gradient)
        v = beta2 * v + (1 - beta2) * gg * gg
        d_t = (1 - beta1 ** t) / learning_rate * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
        z = beta1 * z + (1 - beta1) * gg - (d_t - beta1 * d) * w
        d = d_t
        w = -z / d_t
    return w


def ref_ftrl(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, lamda1=0.01, beta=1, **_):
    lr = learning_rate
    z = np.zeros_like(w)
    n = np.zeros_like(w)
    for g in grads:
        gg = clipv(rescale_grad * g, clip_gradient)
        z = z + gg - (np.sqrt(n + gg * gg) - np.sqrt(n)) * w / lr
        n = n + gg * gg
        w = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > lamda1)
    return w


def ref_lamb(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, beta1=0.9, beta2=0.999,
             epsilon=1e-6, lower_bound=None, upper_bound=None, bias_correction=True, **_):
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        gg = clipv(rescale_grad * g, clip_gradient)
        m = beta1 * m + (1 - beta1) * gg
        v = beta2 * v + (1 - beta2) * gg * gg
        if bias_correction:
            r = (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + epsilon) + wd * w
        else:
            r = m / (np.sqrt(v) + epsilon) + wd * w
        r1 = np.linalg.norm(w)
        if lower_bound:
            r1 = max(r1, lower_bound)
        if upper_bound:
            r1 = min(r1, upper_bound)
        r2 = np.linalg.norm(r)
        lr = learning_rate if (r1 == 0 or r2 == 0) else learning_rate * r1 / r2
        w = w - lr * r
    return w


def ref_lars(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, momentum=0.0,
             eta=0.001, eps=0, **_):
    mom = np.zeros_like(w)
    for g in grads:
        wn = np.linalg.norm(w)
        gn = np.linalg.norm(g) * rescale_grad
        lr = learning_rate * eta * wn / (gn + wd * wn + eps) if (wn > 0 and gn > 0) else learning_rate
        gs = clipv(rescale_grad * g, clip_gradient)
        if momentum:
            mom = momentum * mom - lr * wd * w - lr * gs  # constant lr: momentum correction is 1
            w = w + mom
        else:
            w = (1 - lr * wd) * w - lr * gs
    return w


def ref_dcasgd(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, momentum=0.0,
               lamda=0.04, **_):
    lr = learning_rate
    mom = np.zeros_like(w)
    prev = w.copy()
    for g in grads:
        gg = clipv(rescale_grad * g, clip_gradient)
        mom = momentum * mom - lr * (gg + wd * w + lamda * gg * gg * (w - prev))
        prev = w.copy()
        w = w + mom
    return w


def ref_groupadagrad(w, grads, learning_rate, wd, rescale_grad, clip_gradient=None, eps=1e-5, **_):
    h = np.zeros((w.shape[0], 1))
    for g in grads:
        gg = clipv(rescale_grad * g, clip_gradient)
        h = h + (gg * gg).mean(axis=1, keepdims=True)
        w = w - learning_rate * gg / np.sqrt(h + eps)
    return w


def ref_test(w, grads, rescale_grad, **_):
    for g in grads:
        w = w + rescale_grad * g
    return w


CASES = [
    ("sgd", dict(learning_rate=0.1, **COMMON), ref_sgd),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, clip_gradient=0.3, **COMMON), ref_sgd),
    ("ccsgd", dict(learning_rate=0.1, momentum=0.5, **COMMON), ref_sgd),
    ("nag", dict(learning_rate=0.1, momentum=0.9, clip_gradient=0.3, **COMMON), ref_nag),
    ("nag", dict(learning_rate=0.1, **COMMON), ref_nag),
    ("adam", dict(learning_rate=0.01, clip_gradient=0.3, **COMMON), ref_adam),
    ("Adam", dict(learning_rate=0.05, beta1=0.8, beta2=0.9, epsilon=1e-6, lazy_update=False, **COMMON), ref_adam),
    ("rmsprop", dict(learning_rate=0.01, clip_gradient=0.3, clip_weights=0.9, **COMMON), ref_rmsprop),
    ("rmsprop", dict(learning_rate=0.01, centered=True, gamma1=0.95, gamma2=0.8, **COMMON), ref_rmsprop),
    ("adagrad", dict(learning_rate=0.1, clip_gradient=0.3, eps=1e-6, **COMMON), ref_adagrad),
    ("adadelta", dict(rho=0.8, epsilon=1e-4, clip_gradient=0.3, **COMMON), ref_adadelta),
    ("adamax", dict(learning_rate=0.01, clip_gradient=0.3, **COMMON), ref_adamax),
    ("nadam", dict(learning_rate=0.01, clip_gradient=0.3, **COMMON), ref_nadam),
    ("signum", dict(learning_rate=0.01, momentum=0.9, wd_lh=0.05, clip_gradient=0.3, **COMMON), ref_signum),
    ("signum", dict(learning_rate=0.01, momentum=0.0, **COMMON), ref_signum),
    ("ftml", dict(learning_rate=0.01, clip_gradient=0.3, **COMMON), ref_ftml),
    ("ftrl", dict(learning_rate=0.1, lamda1=0.02, beta=0.5, clip_gradient=0.3, **COMMON), ref_ftrl),
    ("lamb", dict(learning_rate=0.01, clip_gradient=0.3, **COMMON), ref_lamb),
    ("lamb", dict(learning_rate=0.01, bias_correction=False, lower_bound=2.5, upper_bound=3.0, **COMMON), ref_lamb),
    ("lars", dict(learning_rate=0.5, momentum=0.9, eta=0.01, eps=1e-3, clip_gradient=0.3, **COMMON), ref_lars),
    ("lars", dict(learning_rate=0.5, eta=0.01, **COMMON), ref_lars),
    ("dcasgd", dict(learning_rate=0.1, lamda=0.5, clip_gradient=0.3, **COMMON), ref_dcasgd),
    ("dcasgd", dict(learning_rate=0.1, momentum=0.9, lamda=0.5, **COMMON), ref_dcasgd),
    ("groupadagrad", dict(learning_rate=0.1, clip_gradient=0.3, rescale_grad=0.5), ref_groupadagrad),
    ("test", dict(rescale_grad=0.5), ref_test),
]


def run_steps(name, kwargs, dtype="float64", index=0):
    opt = mx.optimizer.create(name, **kwargs)
    w = nd64(W0, dtype=dtype)
    state = opt.create_state_multi_precision(index, w)
    for g in GRADS:
        opt.update_multi_precision(index, w, nd64(g, dtype=dtype), state)
    return opt, w


@pytest.mark.parametrize("name,kwargs,ref", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_three_steps_vs_numpy(name, kwargs, ref):
    _, w = run_steps(name, kwargs)
    full = dict(learning_rate=0.01, wd=0.0, rescale_grad=1.0)
    full.update(kwargs)
    expect = ref(W0.copy(), GRADS, **full)
    assert not np.allclose(expect, W0)  # the step does something
    np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name,kwargs,ref", CASES[:6] + CASES[9:12], ids=lambda x: x if isinstance(x, str) else "")
def test_three_steps_float32(name, kwargs, ref):
    _, w = run_steps(name, kwargs, dtype="float32")
    assert w.dtype == np.float32
    full = dict(learning_rate=0.01, wd=0.0, rescale_grad=1.0)
    full.update(kwargs)
    np.testing.assert_allclose(w.asnumpy(), ref(W0.copy(), GRADS, **full), rtol=2e-5, atol=2e-6)


def test_sgld_matches_seeded_noise():
    kw = dict(learning_rate=0.01, clip_gradient=0.3, **COMMON)
    mx.random.seed(3)
    _, w = run_steps("sgld", kw)
    torch.manual_seed(3)
    ref = W0.copy()
    lr, wd = kw["learning_rate"], kw["wd"]
    for g in GRADS:
        gg = np.clip(kw["rescale_grad"] * g, -0.3, 0.3)
        ref = ref - lr / 2 * (gg + wd * ref)
        ref = ref + torch.randn(ref.shape, dtype=torch.float64).numpy() * math.sqrt(lr)
    np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-9, atol=1e-12)


def test_lbsgd_default_is_sgd_and_batch_scale_accumulates():
    _, w = run_steps("lbsgd", dict(learning_rate=0.1, momentum=0.9, **COMMON))
    np.testing.assert_allclose(w.asnumpy(), ref_sgd(W0.copy(), GRADS, 0.1, 0.1, 0.5, momentum=0.9),
                               rtol=1e-9)
    # batch_scale=2: the first call accumulates, the second applies the mean gradient with
    # lr * (1 + (2 - 1) * nup / nwup) (linear warmup, nwup = warmup_epochs * updates_per_epoch)
    opt = mx.optimizer.create("lbsgd", learning_rate=0.1, batch_scale=2, warmup_epochs=1,
                              updates_per_epoch=4, **COMMON)
    w = nd64(W0)
    st = opt.create_state(0, w)
    opt.update(0, w, nd64(GRADS[0]), st)
    np.testing.assert_array_equal(w.asnumpy(), W0)
    opt.update(0, w, nd64(GRADS[1]), st)
    mult = 1 + (2 - 1) * 2 / 4
    expect = ref_sgd(W0.copy(), [(GRADS[0] + GRADS[1]) / 2], 0.1 * mult, 0.1, 0.5)
    np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-12)


def test_registry_names_and_create():
    names = {"adadelta", "adagrad", "adam", "adamax", "ccsgd", "dcasgd", "ftml", "ftrl",
             "groupadagrad", "lamb", "lars", "lbsgd", "nadam", "nag", "rmsprop", "sgd", "sgld",
             "signum", "test"}
    assert names <= set(mx.optimizer.Optimizer.opt_registry)
    assert type(mx.optimizer.create("AdAm")) is mx.optimizer.Adam
    assert type(mx.optimizer.Optimizer.create_optimizer("sgd")) is mx.optimizer.SGD
    assert isinstance(mx.optimizer.create("ccsgd"), mx.optimizer.SGD)
    with pytest.raises(ValueError, match="Cannot find optimizer nosuch"):
        mx.optimizer.create("nosuch")
    with pytest.raises(TypeError):
        mx.optimizer.create("sgd", momentumm=0.9)  # typos are rejected


def test_register_custom_optimizer():
    @mx.optimizer.register
    class MyHalfStep(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight - 0.5 * self._get_lr(index) * grad

    opt = mx.optimizer.create("myhalfstep", learning_rate=1.0)
    w = nd64([2.0])
    mx.optimizer.get_updater(opt)(0, nd64([1.0]), w)
    assert w.asscalar() == pytest.approx(1.5)
    with pytest.warns(UserWarning, match="overriding"):
        mx.optimizer.register(MyHalfStep)
    del mx.optimizer.Optimizer.opt_registry["myhalfstep"]


def test_learning_rate_defaults_and_set():
    assert mx.optimizer.SGD().learning_rate == 0.01
    assert mx.optimizer.Adam().learning_rate == 0.001
    opt = mx.optimizer.SGD(learning_rate=0.3)
    opt.set_learning_rate(0.2)
    assert opt.learning_rate == 0.2
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=4.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    assert opt.learning_rate == 4.0  # learning_rate=None keeps the scheduler's base_lr
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.1)
    with pytest.warns(UserWarning, match="overwritten"):
        opt = mx.optimizer.SGD(learning_rate=2.0, lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1))
    assert opt.lr_scheduler.base_lr == 2.0


def test_scheduler_drives_updates_and_num_update_counts_per_index():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched, learning_rate=1.0)
    w0, w1 = nd64([0.0]), nd64([0.0])
    g = nd64([1.0])
    seen = []
    for _ in range(4):
        opt.update(0, w0, g, None)
        seen.append(-w0.asscalar())
        w0[:] = 0
    # lr at num_update 1, 2, 3, 4 = 1, 1, 0.5, 0.5
    np.testing.assert_allclose(seen, [1, 1, 0.5, 0.5])
    assert opt.num_update == 4 and opt._index_update_count[0] == 4
    opt.update(1, w1, g, None)  # a second index starts at 1; num_update is the max
    assert opt._index_update_count[1] == 1 and opt.num_update == 4
    opt2 = mx.optimizer.SGD(begin_num_update=10)
    opt2.update(0, w1, g, None)
    assert opt2.num_update == 11


def test_clip_rescale_wd_placement():
    w = nd64([1.0, -2.0, 3.0])
    g = nd64([10.0, -10.0, 0.1])
    opt = mx.optimizer.SGD(learning_rate=0.1, clip_gradient=1.0, rescale_grad=0.5, wd=0.2)
    opt.update(0, w, g, None)
    # SGD: clip(rescale*g) then decoupled-in-kernel wd: (1 - lr*wd) * w - lr * clip
    np.testing.assert_allclose(w.asnumpy(), np.array([0.98 - 0.1, -1.96 + 0.1, 2.94 - 0.005]), rtol=1e-6)
    # Adam: wd enters before clipping
    w = nd64([1.0, -2.0, 3.0])
    opt = mx.optimizer.Adam(learning_rate=0.1, clip_gradient=0.5, wd=1.0)
    st = opt.create_state(0, w)
    opt.update(0, w, mx.nd.zeros((3,)), st)
    # g = clip(0 + 1*w, .5) = [.5,-.5,.5]; first Adam step moves by lr_t * m/(sqrt(v)+eps) = ~lr*sign
    lr_t = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
    step = lr_t * (0.1 * np.array([.5, -.5, .5])) / (np.sqrt(0.001 * 0.25) + 1e-8)
    np.testing.assert_allclose(w.asnumpy(), np.array([1.0, -2.0, 3.0]) - step, rtol=1e-6)


def test_rescale_equals_scaled_grad():
    a = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.25)
    b = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    wa, wb = nd64(W0), nd64(W0)
    sa, sb = a.create_state(0, wa), b.create_state(0, wb)
    for g in GRADS:
        a.update(0, wa, nd64(g), sa)
        b.update(0, wb, nd64(g * 0.25), sb)
    np.testing.assert_allclose(wa.asnumpy(), wb.asnumpy(), rtol=1e-12)


class FakeParam:
    def __init__(self, lr_mult=1.0, wd_mult=1.0):
        self.lr_mult, self.wd_mult = lr_mult, wd_mult


def test_lr_mult_wd_mult_param_dict_and_names():
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.01,
                           param_idx2name={0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta"})
    assert [opt._get_wd(i) for i in range(4)] == [0.01, 0.0, 0.01, 0.0]
    opt.set_lr_mult({"fc_bias": 2.0, 3: 0.5})
    assert [opt._get_lr(i) for i in range(4)] == pytest.approx([0.1, 0.2, 0.1, 0.05])
    opt.set_wd_mult({"fc_bias": 3.0})
    assert opt._get_wd(1) == pytest.approx(0.03)
    # param_dict takes precedence (how Gluon's Trainer passes Parameter.lr_mult/wd_mult)
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.01, param_dict={0: FakeParam(lr_mult=3.0, wd_mult=0.0)})
    assert opt._get_lr(0) == pytest.approx(0.3) and opt._get_wd(0) == 0.0
    w = nd64([1.0])
    opt.update(0, w, nd64([1.0]), None)
    assert w.asscalar() == pytest.approx(1.0 - 0.3)
    # LARS: only names ending in _weight keep weight decay
    lars = mx.optimizer.LARS(wd=0.1, param_idx2name={0: "a_weight", 1: "b_gamma"})
    assert lars._get_wd(0) == 0.1 and lars._get_wd(1) == 0.0
    with pytest.raises(DeprecationWarning):
        opt.set_lr_scale({})


def test_lars_skips_bias_and_momentum_correction():
    # a parameter named *_bias keeps the plain learning rate
    opt = mx.optimizer.LARS(learning_rate=0.5, eta=0.01, param_idx2name={0: "fc_bias"})
    w = nd64(W0)
    opt.update(0, w, nd64(GRADS[0]), None)
    np.testing.assert_allclose(w.asnumpy(), W0 - 0.5 * GRADS[0], rtol=1e-12)
    # momentum is scaled by lr_now / lr_previous when a scheduler changes the lr
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    opt = mx.optimizer.LARS(lr_scheduler=sched, momentum=0.9, eta=1.0, param_idx2name={0: "x_bias"})
    w = nd64([0.0])
    st = opt.create_state(0, w)
    g = nd64([1.0])
    opt.update(0, w, g, st)  # lr 1: mom = -1
    opt.update(0, w, g, st)  # lr 0.5, momentum 0.9 * 0.5: mom = 0.45 * -1 - 0.5
    np.testing.assert_allclose(st.asnumpy(), [-0.95])
    np.testing.assert_allclose(w.asnumpy(), [-1.95])


def test_multi_precision_float16():
    kw = dict(learning_rate=0.1, momentum=0.9, multi_precision=True, **COMMON)
    opt = mx.optimizer.SGD(**kw)
    w = nd64(W0, dtype="float16")
    st = opt.create_state_multi_precision(0, w)
    mom, w32 = st
    assert w32.dtype == np.float32 and mom.dtype == np.float32
    w16_start = W0.astype(np.float16).astype(np.float64)
    for g in GRADS:
        opt.update_multi_precision(0, w, nd64(g, dtype="float16"), st)
    grads16 = [g.astype(np.float16).astype(np.float64) for g in GRADS]
    expect = ref_sgd(w16_start, grads16, 0.1, 0.1, 0.5, momentum=0.9)
    np.testing.assert_allclose(w32.asnumpy(), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(w.asnumpy(), w32.asnumpy().astype(np.float16))
    # the generic wrapper of the base class (Adam): (master, state) and a cast back
    opt = mx.optimizer.Adam(learning_rate=0.01, multi_precision=True, **COMMON)
    w = nd64(W0, dtype="float16")
    st = opt.create_state_multi_precision(0, w)
    assert st[0].dtype == np.float32
    for g in GRADS:
        opt.update_multi_precision(0, w, nd64(g, dtype="float16"), st)
    np.testing.assert_allclose(st[0].asnumpy(), ref_adam(w16_start, grads16, 0.01, 0.1, 0.5), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(w.asnumpy(), st[0].asnumpy().astype(np.float16))
    with pytest.warns(UserWarning, match="float16"):
        mx.optimizer.Adam().create_state_multi_precision(0, nd64(W0, dtype="float16"))


def test_updater_aggregates_lists_like_single_updates():
    ws = [nd64(W0 + i) for i in range(5)]
    ws_ref = [w.copy() for w in ws]
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, **COMMON)
    assert opt.aggregate_num == 64  # hybridnet default (MXNet: 4); results do not depend on it
    upd = mx.optimizer.get_updater(opt)
    ref_opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, aggregate_num=0, **COMMON)
    ref_upd = mx.optimizer.get_updater(ref_opt)
    assert not ref_upd.aggregate_updates
    for g in GRADS:
        gs = [nd64(g * (i + 1)) for i in range(5)]
        upd(list(range(5)), gs, ws)
        for i in range(5):
            ref_upd(i, gs[i], ws_ref[i])
    for w, r in zip(ws, ws_ref):
        np.testing.assert_allclose(w.asnumpy(), r.asnumpy(), rtol=1e-12)
    assert opt.num_update == 3
    # chunks of 2 (MXNet's aggregation in smaller groups) give the same weights
    ws2 = [nd64(W0 + i) for i in range(5)]
    upd2 = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, aggregate_num=2, **COMMON))
    for g in GRADS:
        upd2(list(range(5)), [nd64(g * (i + 1)) for i in range(5)], ws2)
    for w, r in zip(ws2, ws_ref):
        np.testing.assert_allclose(w.asnumpy(), r.asnumpy(), rtol=1e-12)


@pytest.mark.parametrize("name,kwargs", [
    ("adam", dict(learning_rate=0.01, **COMMON)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, **COMMON)),
    ("nadam", dict(learning_rate=0.01, **COMMON)),
    ("lbsgd", dict(learning_rate=0.1, batch_scale=3, momentum=0.9, **COMMON)),
    ("lamb", dict(learning_rate=0.01, **COMMON)),
    ("lars", dict(learning_rate=0.1, momentum=0.9, param_idx2name={0: "fc_weight"}, **COMMON)),
    ("ftml", dict(learning_rate=0.01, **COMMON)),
    ("sgd", dict(momentum=0.9, lr_scheduler=mx.lr_scheduler.MultiFactorScheduler([1, 3], factor=0.5, base_lr=0.2))),
])
def test_updater_states_round_trip(name, kwargs):
    def fresh():
        import copy
        return mx.optimizer.create(name, **copy.deepcopy(kwargs))

    grads = GRADS + [g * -0.7 for g in GRADS]
    w_ref = nd64(W0)
    upd_ref = mx.optimizer.get_updater(fresh())
    for g in grads:
        upd_ref(0, nd64(g), w_ref)

    w = nd64(W0)
    upd = mx.optimizer.get_updater(fresh())
    for g in grads[:3]:
        upd(0, nd64(g), w)
    blob = upd.get_states(dump_optimizer=True)
    assert isinstance(blob, bytes) and blob[:8] == b"HNOPTST\x01"
    upd2 = mx.optimizer.get_updater(mx.optimizer.create("test"))
    upd2.set_states(blob)
    assert type(upd2.optimizer).__name__.lower() == name
    assert upd2.optimizer.num_update == 3 and upd2.optimizer.param_dict == {}
    for g in grads[3:]:
        upd2(0, nd64(g), w)
    np.testing.assert_allclose(w.asnumpy(), w_ref.asnumpy(), rtol=1e-12, atol=1e-14)


def test_updater_states_only_and_errors():
    opt = mx.optimizer.Adam()
    upd = mx.optimizer.get_updater(opt)
    w = nd64(W0)
    upd(0, nd64(GRADS[0]), w)
    upd("name", nd64(GRADS[1]), nd64(W0))
    blob = upd.get_states()
    upd2 = mx.optimizer.get_updater(mx.optimizer.Adam())
    upd2.set_states(blob)
    assert upd2.optimizer is not opt and set(upd2.states) == {0, "name"}
    assert all(v is False for v in upd2.states_synced.values())
    m0, v0 = upd.states[0]
    m1, v1 = upd2.states[0]
    np.testing.assert_array_equal(m0.asnumpy(), m1.asnumpy())
    np.testing.assert_array_equal(v0.asnumpy(), v1.asnumpy())
    upd2(0, nd64(GRADS[1]), nd64(W0))  # syncs context, keeps working
    with pytest.raises(MXNetError, match="pickle"):
        upd2.set_states(pickle.dumps({0: None}))
    with pytest.raises(MXNetError):
        upd2.set_states(blob[:20])


def test_update_errors_name_shapes():
    opt = mx.optimizer.SGD()
    with pytest.raises(MXNetError, match=r"\(3,\).*\(2,\)"):
        opt.update(0, mx.nd.zeros((3,)), mx.nd.zeros((2,)), None)
    with pytest.raises(MXNetError, match="weight decay"):
        g = mx.optimizer.create("groupadagrad", wd=0.1)
        w = nd64(W0)
        g.update(0, w, nd64(GRADS[0]), g.create_state(0, w))
    with pytest.raises(MXNetError, match="2-D"):
        mx.optimizer.create("groupadagrad").create_state(0, mx.nd.zeros((3,)))


def test_update_under_autograd_variables():
    # weights that are autograd variables are updated in place without autograd errors
    w = nd64(W0)
    w.attach_grad()
    with mx.autograd.record():
        y = (w * w).sum()
    y.backward()
    opt = mx.optimizer.Adam(learning_rate=0.01)
    st = opt.create_state(0, w)
    opt.update(0, w, w.grad, st)
    np.testing.assert_allclose(w.asnumpy(), ref_adam(W0.astype(np.float32).astype(np.float64),
                                                     [2 * W0], 0.01, 0.0, 1.0), rtol=1e-5, atol=1e-6)
