"""mx.nd.contrib AdamW wrappers (what GluonNLP's BERTAdam calls) against a NumPy reference."""
import numpy as np

import hybridnet as mx


def _ref(w, g, m, v, scale, lr, eta, wd, beta1=0.9, beta2=0.999, eps=1e-8):
    g = scale * g
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return w - eta * (lr * m / (np.sqrt(v) + eps) + wd * w), m, v


def test_multi_adamw_matches_reference_and_skips_on_overflow():
    rng = np.random.RandomState(0)
    ws = [rng.randn(3, 2), rng.randn(4)]
    gs = [rng.randn(3, 2), rng.randn(4)]
    nd = lambda xs: [mx.nd.array(x) for x in xs]  # noqa: E731
    w, g = nd(ws), nd(gs)
    m, v = nd([np.zeros_like(x) for x in ws]), nd([np.zeros_like(x) for x in ws])
    mx.nd.contrib.multi_adamw_update(w, g, m, v, 0.5, lrs=[0.1, 0.2], wds=[0.0, 0.01],
                                     etas=[1.0, 0.5], out=w)
    for i, (lr, wd, eta) in enumerate([(0.1, 0.0, 1.0), (0.2, 0.01, 0.5)]):
        want, wm, wv = _ref(ws[i], gs[i], 0 * ws[i], 0 * ws[i], 0.5, lr, eta, wd)
        np.testing.assert_allclose(w[i].asnumpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m[i].asnumpy(), wm, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(v[i].asnumpy(), wv, rtol=1e-5, atol=1e-6)
    before = [x.asnumpy() for x in w]
    mx.nd.contrib.multi_adamw_update(w, g, m, v, mx.nd.array([np.inf]), lrs=[0.1, 0.2],
                                     wds=[0.0, 0.0], etas=[1.0, 1.0], out=w)
    for x, b in zip(w, before):
        np.testing.assert_array_equal(x.asnumpy(), b)


def test_mp_adamw_updates_master_weights():
    w32 = mx.nd.array([[1.0, -1.0]])
    w16 = w32.astype("float16")
    g, m, v = mx.nd.array([[0.5, 0.5]]).astype("float16"), mx.nd.zeros((1, 2)), mx.nd.zeros((1, 2))
    mx.nd.contrib.mp_adamw_update(w16, g, m, v, w32, 1.0, lr=0.1, eta=1.0, out=w16)
    want, _, _ = _ref(np.array([[1.0, -1.0]]), np.array([[0.5, 0.5]]), 0, 0, 1.0, 0.1, 1.0, 0.0)
    np.testing.assert_allclose(w32.asnumpy(), want, rtol=1e-5)
    assert w16.dtype == np.float16
    np.testing.assert_allclose(w16.asnumpy(), want, rtol=1e-3)
