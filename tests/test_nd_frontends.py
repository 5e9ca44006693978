"""nd.histogram / concatenate / moveaxis / onehot_encode and gluon.utils.clip_global_norm are
thin front-ends over registered operators: numbers against NumPy, eager == symbol == hybridized."""
from __future__ import annotations

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon, nd
from hybridnet.base import MXNetError

RNG = np.random.RandomState(3)


class _Hist(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__()
        self._kw = kw

    def hybrid_forward(self, F, x):
        return F.histogram(x, **self._kw)


@pytest.mark.parametrize("bins,rng", [(3, (1, 1)), (5, (-0.5, 0.7)), (1, (0, 1)), (4, (2.0, 3.0))])
def test_histogram_eager_symbol_hybridized_agree_with_numpy(bins, rng):
    x = np.array([1.0, 1.0, 2.0, 0.5, -0.2, 0.7, 0.69, 1.5], dtype=np.float32)
    want_c, want_e = np.histogram(x, bins=bins, range=rng)      # (1, 1): NumPy and MXNet use (0.5, 1.5)
    c, e = nd.histogram(nd.array(x), bins=bins, range=rng)
    np.testing.assert_array_equal(c.asnumpy(), want_c)
    np.testing.assert_allclose(e.asnumpy(), want_e, rtol=1e-6)
    sc, se = mx.sym.histogram(mx.sym.var("a"), bins=bins, range=rng).eval(a=nd.array(x))
    np.testing.assert_array_equal(sc.asnumpy(), want_c)
    np.testing.assert_allclose(se.asnumpy(), e.asnumpy(), rtol=0, atol=0)
    net = _Hist(bins=bins, range=rng)
    net.hybridize()
    hc, he = net(nd.array(x))
    np.testing.assert_array_equal(hc.asnumpy(), want_c)
    np.testing.assert_allclose(he.asnumpy(), e.asnumpy(), rtol=0, atol=0)


def test_histogram_with_edges():
    x = RNG.uniform(0, 4, (6, 3)).astype(np.float32)
    edges = np.array([0.0, 0.5, 2.0, 3.5], dtype=np.float32)
    c, e = nd.histogram(nd.array(x), bins=nd.array(edges))
    np.testing.assert_array_equal(c.asnumpy(), np.histogram(x, bins=edges)[0])
    np.testing.assert_array_equal(e.asnumpy(), edges)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_matches_numpy(axis):
    parts = [RNG.randn(2, 3, 4).astype(np.float32) for _ in range(3)]
    out = nd.concatenate([nd.array(p) for p in parts], axis=axis)
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(parts, axis=axis))


def test_concatenate_single_and_errors():
    a = nd.array([1.0, 2.0])
    assert nd.concatenate([a], always_copy=False) is a
    c = nd.concatenate([a])
    assert c is not a and np.array_equal(c.asnumpy(), a.asnumpy())
    with pytest.raises(MXNetError):
        nd.concatenate([nd.zeros((2, 3)), nd.zeros((3, 2))], axis=0)
    with pytest.raises(MXNetError, match="at least one"):
        nd.concatenate([])


def test_concatenate_records_gradients():
    a, b = nd.array([1.0, 2.0]), nd.array([3.0])
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = (nd.concatenate([a, b]) * nd.array([1.0, 2.0, 3.0])).sum()
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [1.0, 2.0])
    np.testing.assert_array_equal(b.grad.asnumpy(), [3.0])


@pytest.mark.parametrize("src,dst", [(0, 2), (-1, 0), ((0, 1), (2, 0)), ((3, 1), (0, 2)), (1, 1)])
def test_moveaxis_matches_numpy(src, dst):
    x = RNG.randn(2, 3, 4, 5).astype(np.float32)
    out = nd.moveaxis(nd.array(x), src, dst)
    np.testing.assert_array_equal(out.asnumpy(), np.moveaxis(x, src, dst))


def test_moveaxis_errors():
    with pytest.raises(ValueError, match="out of range"):
        nd.moveaxis(nd.zeros((2, 3)), 2, 0)
    with pytest.raises(ValueError, match="same number"):
        nd.moveaxis(nd.zeros((2, 3)), (0, 1), 0)


def test_onehot_encode_writes_out():
    out = nd.full((3, 4), 7.0)
    res = nd.onehot_encode(nd.array([1, 3, 0]), out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4, dtype=np.float32)[[1, 3, 0]])
    with pytest.raises(MXNetError, match="indices must lie"):
        nd.onehot_encode(nd.array([5, 1]), nd.zeros((2, 3)))


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_global_norm_matches_numpy(max_norm):
    arrays = [RNG.randn(3, 4), RNG.randn(5), RNG.randn(2, 2, 2)]
    total = np.sqrt(sum(float((a.astype(np.float64) ** 2).sum()) for a in arrays))
    nds = [nd.array(a) for a in arrays]
    got = gluon.utils.clip_global_norm(nds, max_norm)
    assert got == pytest.approx(total, rel=1e-6)
    scale = min(max_norm / (total + 1e-8), 1.0)
    for a, n in zip(arrays, nds):
        np.testing.assert_allclose(n.asnumpy(), (a * scale).astype(np.float32), rtol=1e-6)


def test_clip_global_norm_float64_and_float16():
    a = nd.array([3.0, 4.0], dtype="float64")
    total = gluon.utils.clip_global_norm([a], 1.0, check_isfinite=False)
    assert total.dtype == np.float64
    np.testing.assert_allclose(a.asnumpy(), np.array([3.0, 4.0]) / (5.0 + 1e-8), rtol=1e-12)
    h = nd.array([300.0, 400.0], dtype="float16")        # squares overflow float16: summed in float32
    assert gluon.utils.clip_global_norm([h], 1.0) == pytest.approx(500.0)
    np.testing.assert_allclose(h.asnumpy(), [0.6, 0.8], rtol=1e-3)
