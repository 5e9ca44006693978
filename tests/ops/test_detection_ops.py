"""Detection operators beyond the registry's sample checks: Proposal / MultiProposal (the NMS
against a brute-force greedy, batch == per-image, padding, zero gradients, errors), RROIAlign
(angles), DeformablePSROIPooling (trans moves the read), ModulatedDeformableConvolution (a
mask of ones is DeformableConvolution; zero offsets are Convolution), rand_zipfian and
_sample_unique_zipfian."""
from __future__ import annotations

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import nd
from hybridnet.base import MXNetError
from hybridnet.ops import proposal


def _brute_nms(boxes: np.ndarray, thresh: float, max_keep: int) -> np.ndarray:
    cols = proposal._Boxes(boxes, thresh)
    dead = np.zeros(len(boxes), bool)
    keep: list = []
    for i in range(len(boxes)):
        if len(keep) >= max_keep:
            break
        if dead[i]:
            continue
        keep.append(i)
        rest = np.arange(i + 1, len(boxes))
        dead[rest] |= cols.over(np.full(rest.size, i), rest)
    return np.array(keep, dtype=np.int64)


@pytest.mark.parametrize("seed", range(12))
def test_greedy_nms_equals_brute_force(seed, monkeypatch):
    r = np.random.RandomState(seed)
    n = r.randint(1, 400)
    xy = r.rand(n, 2) * r.choice([20, 200])
    wh = np.exp(r.randn(n, 2) * r.choice([0.1, 0.6])) * r.choice([5, 40])
    if seed % 4 == 3:
        wh -= 20                                   # degenerate boxes: the all-pairs path
    boxes = np.concatenate([xy, xy + wh], 1).astype(np.float32)
    if seed % 3 == 0:
        boxes = np.round(boxes)                    # ties and identical boxes
    thresh = [0.7, 0.5, 0.3, 0.9, 0.05, 0.0][seed % 6]
    max_keep = r.randint(1, n + 2)
    # small blocks so that blocks meet kept boxes of earlier blocks
    monkeypatch.setattr(proposal._SizeCentreBuckets, "block", 37)
    monkeypatch.setattr(proposal._AllPairs, "block", 23)
    np.testing.assert_array_equal(proposal.greedy_nms(boxes, thresh, max_keep), _brute_nms(boxes, thresh, max_keep))


def _rpn_inputs(batch: int, seed: int = 0, h: int = 12, w: int = 14):
    r = np.random.RandomState(seed)
    prob = nd.array(r.rand(batch, 18, h, w))
    deltas = nd.array((r.rand(batch, 36, h, w) - 0.5) * 0.4)
    info = nd.array([[150 + 20 * i, 180 - 10 * i, 0.8] for i in range(batch)])
    return prob, deltas, info


KW = dict(feature_stride=16, scales=(8, 16, 32), ratios=(0.5, 1, 2), rpn_pre_nms_top_n=300,
          rpn_post_nms_top_n=60, threshold=0.7, rpn_min_size=16)


def test_multi_proposal_equals_proposal_per_image():
    prob, deltas, info = _rpn_inputs(3)
    rois, scores = nd.contrib.MultiProposal(prob, deltas, info, output_score=True, **KW)
    assert rois.shape == (180, 5) and scores.shape == (180, 1)
    for b in range(3):
        r1, s1 = nd.contrib.Proposal(prob[b:b + 1], deltas[b:b + 1], info[b:b + 1], output_score=True, **KW)
        np.testing.assert_array_equal(rois.asnumpy()[b * 60:(b + 1) * 60, 1:], r1.asnumpy()[:, 1:])
        np.testing.assert_array_equal(scores.asnumpy()[b * 60:(b + 1) * 60], s1.asnumpy())
        assert (rois.asnumpy()[b * 60:(b + 1) * 60, 0] == b).all() and (r1.asnumpy()[:, 0] == 0).all()


def test_proposal_pads_by_repeating_the_kept_boxes():
    prob, deltas, _ = _rpn_inputs(1, h=3, w=3)
    info = nd.array([[40, 45, 1.0]])
    kw = dict(KW, rpn_post_nms_top_n=200, threshold=0.3)
    rois, scores = nd.contrib.Proposal(prob, deltas, info, output_score=True, **kw)
    r, s = rois.asnumpy(), scores.asnumpy()[:, 0]
    kept = len({tuple(row) for row in r})
    assert kept < 81
    np.testing.assert_array_equal(r[kept:2 * kept], r[:kept])
    assert (np.diff(s[:kept]) <= 0).all()           # kept boxes in score order


def test_proposal_outputs_and_zero_gradients():
    prob, deltas, info = _rpn_inputs(2)
    out = nd.contrib.MultiProposal(prob, deltas, info, **KW)
    assert not isinstance(out, (list, tuple)) and out.shape == (120, 5)
    sym = mx.sym.contrib.MultiProposal(mx.sym.var("c"), mx.sym.var("b"), mx.sym.var("i"), output_score=True, **KW)
    assert sym.list_outputs()[-1].endswith("score") and len(sym.list_outputs()) == 2
    _, out_shapes, _ = sym.infer_shape(c=(2, 18, 12, 14))
    assert out_shapes == [(120, 5), (120, 1)]
    # MXNet's backward writes zeros and reads no head gradient (its test passes a wrong shape)
    ex = sym[0].bind(mx.cpu(), {"c": prob, "b": deltas, "i": info},
                     args_grad={k: nd.ones(v.shape) for k, v in (("c", prob), ("b", deltas), ("i", info))})
    ex.forward(is_train=True)
    ex.backward([nd.ones((60, 5))])
    for g in ex.grad_arrays:
        assert not g.asnumpy().any()


def test_proposal_errors_name_the_problem():
    prob, deltas, info = _rpn_inputs(2)
    with pytest.raises(MXNetError, match="MultiProposal"):
        nd.contrib.Proposal(prob, deltas, info, **KW)
    with pytest.raises(MXNetError, match="num_anchors"):
        nd.contrib.MultiProposal(prob, deltas, info, **dict(KW, scales=(8, 16)))
    with pytest.raises(MXNetError, match="feature map"):
        nd.contrib.MultiProposal(prob, deltas, nd.array([[900, 100, 1.0], [100, 100, 1.0]]), **KW)


def test_rroi_align_angle_zero_is_axis_aligned_and_180_flips():
    r = np.random.RandomState(3)
    data = nd.array(r.rand(1, 2, 9, 9))
    box = [0, 4.5, 4.5, 4.0, 4.0]
    upright = nd.contrib.RROIAlign(data, nd.array([box + [0.0]]), pooled_size=(2, 2), spatial_scale=1.0,
                                   sampling_ratio=2).asnumpy()
    flipped = nd.contrib.RROIAlign(data, nd.array([box + [180.0]]), pooled_size=(2, 2), spatial_scale=1.0,
                                   sampling_ratio=2).asnumpy()
    np.testing.assert_allclose(flipped, upright[:, :, ::-1, ::-1], rtol=1e-5, atol=1e-6)
    # angle 0: bin (0, 0) of the box [2.5, 6.5]^2 samples the pixels (3|4, 3|4)
    d = data.asnumpy()[0]
    pts = [3, 4]
    ref = np.mean([[d[:, int(y), int(x)] for y in pts for x in pts]], axis=(0, 1))
    np.testing.assert_allclose(upright[0, :, 0, 0], ref, rtol=1e-6)


def test_deformable_psroi_trans_shifts_the_read():
    r = np.random.RandomState(4)
    data = nd.array(r.rand(1, 8, 10, 10))
    rois = nd.array([[0, 2, 2, 5, 5]])
    kw = dict(spatial_scale=1.0, output_dim=2, group_size=2, pooled_size=2, sample_per_part=1)
    zero = nd.contrib.DeformablePSROIPooling(data, rois, nd.zeros((1, 2, 2, 2)), trans_std=0.1, **kw)
    none = nd.contrib.DeformablePSROIPooling(data, rois, no_trans=True, **kw)
    np.testing.assert_allclose(zero.asnumpy(), none.asnumpy())
    # trans 10 * std 0.1 = one roi width (4 pixels) to the right
    moved = nd.contrib.DeformablePSROIPooling(data, rois, nd.array(np.tile([[[[10.0]], [[0.0]]]], (1, 1, 2, 2))),
                                              trans_std=0.1, **kw)
    shifted = nd.contrib.DeformablePSROIPooling(data, nd.array([[0, 6, 2, 9, 5]]), no_trans=True, **kw)
    np.testing.assert_allclose(moved.asnumpy(), shifted.asnumpy(), rtol=1e-6)


def test_modulated_deformable_conv_reduces_to_v1_and_to_convolution():
    r = np.random.RandomState(5)
    x = nd.array(r.rand(2, 4, 6, 7))
    off = nd.array(r.rand(2, 36, 6, 7) - 0.5)
    w, b = nd.array(r.randn(6, 2, 3, 3)), nd.array(r.randn(6))
    kw = dict(kernel=(3, 3), num_filter=6, pad=(1, 1), num_group=2, num_deformable_group=2)
    v2 = nd.contrib.ModulatedDeformableConvolution(x, off, nd.ones((2, 18, 6, 7)), w, b, **kw)
    v1 = nd.contrib.DeformableConvolution(x, off, w, b, **kw)
    np.testing.assert_allclose(v2.asnumpy(), v1.asnumpy(), rtol=1e-6)
    half = nd.contrib.ModulatedDeformableConvolution(x, off, nd.ones((2, 18, 6, 7)) * 0.5, w, b, **kw)
    np.testing.assert_allclose((half - b.reshape((1, 6, 1, 1))).asnumpy(),
                               0.5 * (v1 - b.reshape((1, 6, 1, 1))).asnumpy(), rtol=1e-5, atol=1e-6)
    plain = nd.Convolution(x, w, b, kernel=(3, 3), num_filter=6, pad=(1, 1), num_group=2)
    zero = nd.contrib.ModulatedDeformableConvolution(x, nd.zeros((2, 36, 6, 7)), nd.ones((2, 18, 6, 7)), w, b, **kw)
    np.testing.assert_allclose(zero.asnumpy(), plain.asnumpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError, match="mask must have shape"):
        nd.contrib.ModulatedDeformableConvolution(x, off, nd.ones((2, 9, 6, 7)), w, b, **kw)


def test_rand_zipfian_nd_and_sym():
    mx.random.seed(11)
    true = nd.array([0, 3, 19], dtype="int32")
    sampled, count_true, count_sampled = nd.contrib.rand_zipfian(true, 2000, 20)
    assert sampled.dtype == np.int64 and count_true.dtype == np.float64
    s = sampled.asnumpy()
    assert s.min() >= 0 and s.max() < 20
    expected = np.log((np.arange(20) + 2) / (np.arange(20) + 1)) / np.log(21) * 2000
    np.testing.assert_allclose(count_true.asnumpy(), expected[[0, 3, 19]])
    np.testing.assert_allclose(count_sampled.asnumpy(), expected[s])
    hist = np.bincount(s, minlength=20)
    assert abs(hist[0] - expected[0]) < 5 * np.sqrt(expected[0])
    outs = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 50, 20)))
    ex = outs.bind(mx.cpu(), {"t": true})
    ex.forward()
    assert [o.shape for o in ex.outputs] == [(50,), (3,), (50,)]
    np.testing.assert_allclose(ex.outputs[1].asnumpy(), expected[[0, 3, 19]] / 40)
    assert nd.contrib.current_context() == mx.cpu() and nd.contrib.uniform is nd.random.uniform


def test_sample_unique_zipfian_distinct_classes_and_tries():
    mx.random.seed(5)
    classes, tries = nd._internal._sample_unique_zipfian(50, shape=(3, 40))
    c, t = classes.asnumpy(), tries.asnumpy()
    assert c.dtype == np.int64 and t.dtype == np.int64 and c.shape == (3, 40) and t.shape == (3,)
    for row, n in zip(c, t):
        assert np.unique(row).size == 40 and row.min() >= 0 and row.max() < 50
        assert n >= 40
    full, _ = nd._internal._sample_unique_zipfian(7, shape=(1, 7))
    assert sorted(full.asnumpy()[0]) == list(range(7))
    # small classes come first far more often (log-uniform)
    first = nd._internal._sample_unique_zipfian(1000, shape=(200, 1))[0].asnumpy()
    assert np.mean(first < 31) > 0.4            # P(class < 31) = log(32) / log(1000) ~ 0.5
    with pytest.raises(MXNetError, match="distinct"):
        nd._internal._sample_unique_zipfian(5, shape=(1, 6))


# ---- real MXNet 1.9.1's outputs (fixtures/make_detection_mxnet.py) ------------------------------
FIXTURE = np.load(__file__.rsplit("/", 1)[0] + "/fixtures/detection_mxnet.npz")


@pytest.mark.parametrize("name, iou", [("prop", False), ("prop_iou", True)])
def test_multi_proposal_matches_real_mxnet(name, iou):
    f = FIXTURE
    kw = dict(feature_stride=16, scales=(4, 8, 16), ratios=(1.0,), rpn_pre_nms_top_n=150, rpn_post_nms_top_n=40,
              threshold=0.6, rpn_min_size=8, output_score=True, iou_loss=iou)
    rois, score = nd.contrib.MultiProposal(nd.array(f[name + "_prob"]), nd.array(f[name + "_deltas"]),
                                           nd.array(f[name + "_info"]), **kw)
    np.testing.assert_allclose(rois.asnumpy(), f[name + "_rois"], rtol=0, atol=1e-4)
    np.testing.assert_array_equal(score.asnumpy(), f[name + "_score"])


def test_rroi_align_matches_real_mxnet():
    out = nd.contrib.RROIAlign(nd.array(FIXTURE["rroi_data"]), nd.array(FIXTURE["rroi_rois"]), pooled_size=(2, 3),
                               spatial_scale=0.125)
    np.testing.assert_allclose(out.asnumpy(), FIXTURE["rroi_out"], rtol=1e-5, atol=1e-5)


def test_deformable_psroi_pooling_matches_real_mxnet_with_gradients():
    args = [nd.array(FIXTURE[k]) for k in ("dps_data", "dps_rois", "dps_trans")]
    for a in args:
        a.attach_grad()
    with mx.autograd.record():
        out = nd.contrib.DeformablePSROIPooling(*args, spatial_scale=0.0625, output_dim=2, group_size=2,
                                                pooled_size=2, sample_per_part=3, trans_std=0.2)
    out.backward(nd.array(FIXTURE["dps_head"]))
    np.testing.assert_allclose(out.asnumpy(), FIXTURE["dps_out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(args[0].grad.asnumpy(), FIXTURE["dps_gdata"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(args[2].grad.asnumpy(), FIXTURE["dps_gtrans"], rtol=1e-5, atol=1e-6)


def test_modulated_deformable_conv_matches_real_mxnet():
    args = [nd.array(FIXTURE[k]) for k in ("mdc_x", "mdc_off", "mdc_mask", "mdc_w", "mdc_b")]
    out = nd.contrib.ModulatedDeformableConvolution(*args, kernel=(3, 3), num_filter=6, pad=(1, 1), num_group=2,
                                                    num_deformable_group=2)
    np.testing.assert_allclose(out.asnumpy(), FIXTURE["mdc_out"], rtol=1e-5, atol=1e-5)
