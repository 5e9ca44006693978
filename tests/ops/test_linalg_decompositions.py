"""linalg.syevd / linalg.gelqf: identities and gradients (float64 finite differences)."""
from __future__ import annotations

import numpy as np

import hybridnet as mx

from finite_differences import central_differences


def test_syevd_gradient_matches_finite_differences_on_symmetric_inputs() -> None:
    r = np.random.RandomState(0)
    x = r.randn(4, 4)
    wu, wl = r.randn(4, 4), r.randn(4)

    def loss(xn):
        a = (xn + xn.T) / 2
        u, lam = mx.nd.linalg.syevd(mx.nd.array(a, dtype="float64"))
        return float((u.asnumpy() * wu).sum() + (lam.asnumpy() * wl).sum())

    a = mx.nd.array((x + x.T) / 2, dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        u, lam = mx.nd.linalg.syevd(a)
        out = (u * mx.nd.array(wu, dtype="float64")).sum() + (lam * mx.nd.array(wl, dtype="float64")).sum()
    out.backward()
    g = a.grad.asnumpy()
    np.testing.assert_allclose(g, g.T, rtol=1e-10, atol=1e-12)  # MXNet's gradient is symmetric
    np.testing.assert_allclose(g, central_differences(loss, x), rtol=1e-5, atol=1e-7)
    un, ln = u.asnumpy(), lam.asnumpy()
    np.testing.assert_allclose(un.T @ np.diag(ln) @ un, (x + x.T) / 2, atol=1e-10)


def test_gelqf_identities_and_gradient() -> None:
    r = np.random.RandomState(1)
    x = r.randn(2, 3, 5)
    q, l = mx.nd.linalg.gelqf(mx.nd.array(x, dtype="float64"))
    qn, ln = q.asnumpy(), l.asnumpy()
    np.testing.assert_allclose(qn @ np.swapaxes(qn, -1, -2), np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-12)
    np.testing.assert_allclose(ln @ qn, x, atol=1e-12)
    assert np.allclose(np.triu(ln, 1), 0)
    w = r.randn(2, 3, 5)

    def loss(xn):
        return float((mx.nd.linalg.gelqf(mx.nd.array(xn, dtype="float64"))[0].asnumpy() * w).sum())

    a = mx.nd.array(x, dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        out = (mx.nd.linalg.gelqf(a)[0] * mx.nd.array(w, dtype="float64")).sum()
    out.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), central_differences(loss, x), rtol=1e-5, atol=1e-7)
