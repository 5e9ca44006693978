"""Behaviour of the contrib operators beyond the registry's sample checks: MXNet's documented
examples, the special gradients (box_nms routing, gradientmultiplier, straight-through
estimators), BatchNorm variants' state, symbolic shape inference, and the public names."""
from __future__ import annotations

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import nd
from hybridnet.base import MXNetError
from hybridnet.ops import get

R = np.random.RandomState(7)


def A(x, dtype="float64"):
    return nd.array(np.asarray(x, dtype=dtype), dtype=dtype)


# ---- names -----------------------------------------------------------------------------------
NAMES = ("isnan isinf isfinite AdaptiveAvgPooling2D ROIAlign box_iou box_nms "
         "box_non_maximum_suppression box_encode box_decode div_sqrt_dim quadratic gradientmultiplier "
         "allclose round_ste sign_ste SyncBatchNorm BatchNormWithReLU SparseEmbedding fft ifft "
         "count_sketch MultiBoxPrior bipartite_matching interleaved_matmul_selfatt_qk "
         "interleaved_matmul_selfatt_valatt interleaved_matmul_encdec_qk interleaved_matmul_encdec_valatt").split()


@pytest.mark.parametrize("name", NAMES)
def test_contrib_names_exist_in_nd_and_sym(name):
    assert callable(getattr(nd.contrib, name))
    assert callable(getattr(mx.sym.contrib, name))


# ---- box_nms ---------------------------------------------------------------------------------
DOC_X = [[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
         [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]]


def test_box_nms_mxnet_doc_example_forward_and_backward():
    x = A(DOC_X)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.box_nms(x, overlap_thresh=0.1, coord_start=2, score_index=1, id_index=0,
                               force_suppress=True, in_format="corner", out_format="corner")
    want = [[2, 0.6, 0.5, 0.5, 0.7, 0.8], [0, 0.5, 0.1, 0.1, 0.2, 0.2],
            [-1] * 6, [-1] * 6]
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-12)
    head = np.repeat(np.array([[0.1], [0.2], [0.3], [0.4]]), 6, axis=1)
    y.backward(A(head))
    want_grad = np.array([[0.2] * 6, [0.0] * 6, [0.0] * 6, [0.1] * 6])
    np.testing.assert_allclose(x.grad.asnumpy(), want_grad, rtol=1e-12)


def test_box_nms_class_aware_keeps_overlapping_boxes_of_other_classes():
    y = nd.contrib.box_nms(A(DOC_X), overlap_thresh=0.1, id_index=0, force_suppress=False)
    # class 1 box overlaps class 0 box completely but survives; the second class-0 box does not
    np.testing.assert_allclose(y.asnumpy()[:3, 1], [0.6, 0.5, 0.4])
    assert (y.asnumpy()[3] == -1).all()


def test_box_nms_gradient_ignores_format_conversion_like_mxnet():
    x = A([[0.9, 1.0, 1.0, 3.0, 5.0], [0.8, 10.0, 10.0, 11.0, 12.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.box_nms(x, coord_start=1, score_index=0, out_format="center")
    np.testing.assert_allclose(y.asnumpy(), [[0.9, 2.0, 3.0, 2.0, 4.0], [0.8, 10.5, 11.0, 1.0, 2.0]])
    head = R.randn(2, 5)
    y.backward(A(head))
    np.testing.assert_allclose(x.grad.asnumpy(), head, rtol=1e-12)


def test_box_nms_topk_valid_thresh_and_batches():
    x = np.zeros((2, 3, 4, 6))
    x[..., 1] = R.uniform(0.2, 1.0, (2, 3, 4))
    x[..., 2:4] = R.uniform(0, 10, (2, 3, 4, 2)) * 10       # far apart: nothing overlaps
    x[..., 4:6] = x[..., 2:4] + 1
    y = nd.contrib.box_nms(A(x), topk=2).asnumpy()
    for b in np.ndindex(2, 3):
        order = np.argsort(-x[b][:, 1], kind="stable")[:2]
        np.testing.assert_allclose(y[b][:2], x[b][order])
        assert (y[b][2:] == -1).all()
    y = nd.contrib.box_nms(A(x), valid_thresh=2.0).asnumpy()
    assert (y == -1).all()


def test_box_nms_checks_layout():
    with pytest.raises(MXNetError, match="box_nms"):
        nd.contrib.box_nms(A(np.zeros((3, 4))))
    with pytest.raises(MXNetError, match="score_index"):
        nd.contrib.box_nms(A(np.zeros((3, 6))), score_index=3)


def test_box_nms_alias_and_symbol_shapes():
    assert nd.contrib.box_non_maximum_suppression.opdef is get("_contrib_box_nms")
    x = mx.sym.var("x")
    y = mx.sym.contrib.box_nms(x, topk=10)
    _, out, _ = y.infer_shape(x=(2, 100, 6))
    assert out == [(2, 100, 6)]
    assert "_contrib_box_nms" in y.tojson()


# ---- box_iou / encode / decode / bipartite ---------------------------------------------------
def test_box_iou_doc_example_and_center_format():
    x = A([[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]])
    y = A([[0.25, 0.25, 0.75, 0.75]])
    np.testing.assert_allclose(nd.contrib.box_iou(x, y).asnumpy(), [[1 / 7], [1 / 7]], rtol=1e-12)
    c = A([[0.5, 0.5, 1.0, 1.0]])
    np.testing.assert_allclose(nd.contrib.box_iou(c, c, format="center").asnumpy(), [[1.0]])
    assert nd.contrib.box_iou(A(np.zeros((2, 3, 4))), A(np.zeros((5, 4)))).shape == (2, 3, 5)


def test_box_encode_decode_round_trip():
    anchors = np.array([[[0.0, 0.0, 1.0, 1.0], [0.5, 0.5, 2.0, 1.5]]])
    refs = np.array([[[0.1, 0.2, 0.9, 1.3], [0.4, 0.6, 2.2, 1.4]]])
    means, stds = np.zeros(4), np.array([0.1, 0.1, 0.2, 0.2])
    t, m = nd.contrib.box_encode(A([[1.0, 1.0]]), A([[0.0, 1.0]]), A(anchors), A(refs), A(means), A(stds))
    assert m.asnumpy().tolist() == [[[1.0] * 4] * 2]
    out = nd.contrib.box_decode(t, A(anchors), std0=0.1, std1=0.1, std2=0.2, std3=0.2, format="corner")
    np.testing.assert_allclose(out.asnumpy(), refs, rtol=1e-6, atol=1e-6)


def test_box_decode_clip_caps_the_exponent():
    d = A([[[0.0, 0.0, 5.0, -5.0]]])
    out = nd.contrib.box_decode(d, A([[[0.0, 0.0, 2.0, 2.0]]]), clip=1.0).asnumpy()
    np.testing.assert_allclose(out, [[[-np.e, -np.exp(-5), np.e, np.exp(-5)]]], rtol=1e-6)


def test_bipartite_matching_doc_example():
    s = A([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])
    x, y = nd.contrib.bipartite_matching(s, threshold=1e-12, is_ascend=False)
    assert x.asnumpy().tolist() == [1, -1, 0]
    assert y.asnumpy().tolist() == [2, 0]


def test_multibox_prior_values():
    out = nd.contrib.MultiBoxPrior(A(np.zeros((1, 1, 1, 1))), sizes=(0.5,), ratios=(1.0, 4.0))
    np.testing.assert_allclose(out.asnumpy(), [[[0.25, 0.25, 0.75, 0.75], [0.0, 0.375, 1.0, 0.625]]],
                               rtol=1e-6)
    out = nd.contrib.MultiBoxPrior(A(np.zeros((1, 3, 2, 4), dtype="float32"), "float32"),
                                   sizes=(0.3, 0.6), ratios=(1.0, 2.0, 0.5))
    assert out.shape == (1, 2 * 4 * 4, 4) and out.dtype == np.float32
    x = mx.sym.var("x")
    _, shapes, _ = mx.sym.contrib.MultiBoxPrior(x, sizes=(0.3, 0.6)).infer_shape(x=(2, 8, 5, 5))
    assert shapes == [(1, 50, 4)]


# ---- ROIAlign --------------------------------------------------------------------------------
def test_roi_align_hand_computed_values():
    data = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
    rois = A([[0, 0.0, 0.0, 3.0, 3.0]])
    out = nd.contrib.ROIAlign(A(data), rois, pooled_size=(1, 1), spatial_scale=1.0, sample_ratio=1)
    np.testing.assert_allclose(out.asnumpy(), [[[[7.5]]]])   # bilinear at (1.5, 1.5)
    # 2x2 bins, one sample each at (0.75, 0.75), (0.75, 2.25), (2.25, 0.75), (2.25, 2.25)
    out = nd.contrib.ROIAlign(A(data), rois, pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=1)
    f = lambda y, x: 4 * y + x  # the data is linear in (y, x)
    np.testing.assert_allclose(out.asnumpy()[0, 0], [[f(.75, .75), f(.75, 2.25)], [f(2.25, .75), f(2.25, 2.25)]])
    # aligned shifts the box by half a pixel
    out = nd.contrib.ROIAlign(A(data), rois, pooled_size=(1, 1), spatial_scale=1.0, sample_ratio=1, aligned=True)
    np.testing.assert_allclose(out.asnumpy(), [[[[f(1.0, 1.0)]]]])


def test_roi_align_gradient_goes_to_data_only():
    data = A(R.randn(2, 2, 5, 5))
    rois = A([[1, 0.5, 0.5, 3.5, 4.0], [0, 1.0, 1.0, 2.0, 2.0]])
    data.attach_grad()
    rois.attach_grad()
    with mx.autograd.record():
        out = nd.contrib.ROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=1.0)
    out.backward()
    g = data.grad.asnumpy()
    # every output bin averages weights that sum to 1 (all samples inside the image)
    np.testing.assert_allclose(g.sum(axis=(2, 3)), np.full((2, 2), 4.0))
    assert np.all(rois.grad.asnumpy() == 0)


def test_roi_align_errors_and_shapes():
    with pytest.raises(MXNetError, match="ROIAlign"):
        nd.contrib.ROIAlign(A(np.zeros((1, 2, 4, 4))), A(np.zeros((3, 4))), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(MXNetError, match="position_sensitive"):
        nd.contrib.ROIAlign(A(np.zeros((1, 3, 4, 4))), A(np.zeros((3, 5))), pooled_size=(2, 2),
                            spatial_scale=1.0, position_sensitive=True)
    d, r = mx.sym.var("d"), mx.sym.var("r")
    _, shapes, _ = mx.sym.contrib.ROIAlign(d, r, pooled_size=(7, 7), spatial_scale=0.0625).infer_shape(
        d=(2, 256, 20, 30), r=(16, 5))
    assert shapes == [(16, 256, 7, 7)]


# ---- gradient tricks ---------------------------------------------------------------------------
def test_gradientmultiplier_scales_only_the_gradient():
    x = A(R.randn(3, 4))
    x.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.gradientmultiplier(x, scalar=-0.5)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    head = R.randn(3, 4)
    y.backward(A(head))
    np.testing.assert_allclose(x.grad.asnumpy(), -0.5 * head)


@pytest.mark.parametrize("name,fn", [("round_ste", lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)),
                                     ("sign_ste", np.sign)])
def test_straight_through_estimators(name, fn):
    v = np.array([-2.5, -1.4, -0.5, 0.0, 0.4, 0.5, 2.6])
    x = A(v)
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(nd.contrib, name)(x)
    np.testing.assert_array_equal(y.asnumpy(), fn(v))
    head = R.randn(7)
    y.backward(A(head))
    np.testing.assert_allclose(x.grad.asnumpy(), head)


# ---- BatchNorm variants / SparseEmbedding ------------------------------------------------------
def _bn_inputs():
    x = R.randn(4, 3, 2, 2)
    return x, R.uniform(0.5, 1.5, 3), R.randn(3), np.zeros(3), np.ones(3)


def test_sync_batchnorm_trains_like_batchnorm():
    x, g, b, mm, mv = _bn_inputs()
    a_mm, a_mv, b_mm, b_mv = A(mm), A(mv), A(mm), A(mv)
    # a training-mode forward alone leaves the moving statistics alone (MXNet updates them in
    # BatchNorm's backward pass, spec B.6)
    with mx.autograd.train_mode():
        nd.BatchNorm(A(x), A(g), A(b), b_mm, b_mv, fix_gamma=False, momentum=0.8)
    np.testing.assert_array_equal(b_mm.asnumpy(), mm)
    xa, xb = A(x), A(x)
    xa.attach_grad()
    xb.attach_grad()
    with mx.autograd.record():
        y1 = nd.contrib.SyncBatchNorm(xa, A(g), A(b), a_mm, a_mv, key="bn", ndev=1, fix_gamma=False,
                                      momentum=0.8)
        y2 = nd.BatchNorm(xb, A(g), A(b), b_mm, b_mv, fix_gamma=False, momentum=0.8)
    mx.autograd.backward([y1, y2])
    np.testing.assert_allclose(y1.asnumpy(), y2.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(a_mm.asnumpy(), b_mm.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(a_mv.asnumpy(), b_mv.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(a_mm.asnumpy(), 0.2 * x.mean(axis=(0, 2, 3)), rtol=1e-10)


def test_sync_batchnorm_requires_key_and_has_aux_states():
    with pytest.raises((MXNetError, TypeError), match="key"):
        nd.contrib.SyncBatchNorm(*[A(v) for v in _bn_inputs()])
    s = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), key="k", name="sbn")
    assert s.list_arguments() == ["data", "sbn_gamma", "sbn_beta"]
    assert s.list_auxiliary_states() == ["sbn_moving_mean", "sbn_moving_var"]
    args, outs, aux = s.infer_shape(data=(2, 5, 3, 3))
    assert args[1] == (5,) and aux == [(5,), (5,)] and outs == [(2, 5, 3, 3)]


def test_batchnorm_with_relu_is_relu_of_batchnorm():
    x, g, b, mm, mv = _bn_inputs()
    y = nd.contrib.BatchNormWithReLU(A(x), A(g), A(b), A(mm), A(mv), fix_gamma=False)
    ref = nd.relu(nd.BatchNorm(A(x), A(g), A(b), A(mm), A(mv), fix_gamma=False))
    np.testing.assert_allclose(y.asnumpy(), ref.asnumpy())
    assert (y.asnumpy() == 0).any()


def test_sparse_embedding_matches_embedding_with_dense_gradient():
    idx = A([[0, 3], [3, 1]])
    w1, w2 = A(R.randn(4, 2)), None
    w2 = w1.copy()
    w1.attach_grad()
    w2.attach_grad()
    with mx.autograd.record():
        a = nd.contrib.SparseEmbedding(idx, w1, input_dim=4, output_dim=2, sparse_grad=True)
        b = nd.Embedding(idx, w2, input_dim=4, output_dim=2)
    a.backward()
    b.backward()
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    np.testing.assert_array_equal(w1.grad.asnumpy(), w2.grad.asnumpy())


# ---- fft / count_sketch / misc ------------------------------------------------------------------
def test_fft_layout_and_unnormalised_ifft():
    x = R.randn(2, 8)
    f = nd.contrib.fft(A(x)).asnumpy()
    z = np.fft.fft(x)
    np.testing.assert_allclose(f[:, 0::2], z.real, atol=1e-12)
    np.testing.assert_allclose(f[:, 1::2], z.imag, atol=1e-12)
    back = nd.contrib.ifft(A(f)).asnumpy()
    np.testing.assert_allclose(back, 8 * x, atol=1e-10)
    with pytest.raises(MXNetError, match="even"):
        nd.contrib.ifft(A(np.zeros((2, 3))))


def test_count_sketch_gradient_is_signed_gather():
    x = A(R.randn(2, 5))
    h, s = A([[0, 2, 2, 1, 0]]), A([[1, -1, 1, -1, 1]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.count_sketch(x, h, s, out_dim=3)
    head = R.randn(2, 3)
    y.backward(A(head))
    np.testing.assert_allclose(x.grad.asnumpy(), head[:, [0, 2, 2, 1, 0]] * np.array([1, -1, 1, -1, 1]))
    with pytest.raises(MXNetError, match="out_dim"):
        nd.contrib.count_sketch(x, A([[0, 5, 0, 0, 0]]), s, out_dim=3)


def test_allclose_is_uint8_flag():
    a = A(R.randn(3))
    out = nd.contrib.allclose(a, a + 1e-9)
    # a scalar, as MXNet's TShape(0): '{:d}'.format(out.asnumpy()) works on it
    assert out.shape == () and out.dtype == np.uint8 and out.asnumpy() == 1
    assert "{:d}".format(out.asnumpy()) == "1"
    assert nd.contrib.allclose(a, a + 1.0).asnumpy() == 0
    with pytest.raises(MXNetError, match="same shape"):
        nd.contrib.allclose(a, A(np.zeros(4)))


def test_element_tests_keep_dtype():
    x = A([1.0, np.nan, np.inf], "float32")
    assert nd.contrib.isnan(x).dtype == np.float32
    assert nd.contrib.isnan(x).asnumpy().tolist() == [0, 1, 0]
    assert nd.contrib.isinf(x).asnumpy().tolist() == [0, 0, 1]
    assert nd.contrib.isfinite(x).asnumpy().tolist() == [1, 0, 0]


def test_adaptive_avg_pooling_defaults_to_global_average():
    x = R.randn(2, 3, 4, 5)
    out = nd.contrib.AdaptiveAvgPooling2D(A(x))
    np.testing.assert_allclose(out.asnumpy(), x.mean(axis=(2, 3), keepdims=True))


def test_interleaved_attention_equals_plain_attention():
    L, B, H, D = 5, 2, 3, 4
    qkv = R.randn(L, B, H * 3 * D)
    scores = nd.contrib.interleaved_matmul_selfatt_qk(A(qkv), heads=H)
    att = nd.softmax(scores, axis=-1)
    out = nd.contrib.interleaved_matmul_selfatt_valatt(A(qkv), att, heads=H).asnumpy()
    p = qkv.reshape(L, B, H, 3, D)
    q, k, v = p[:, :, :, 0], p[:, :, :, 1], p[:, :, :, 2]
    s = np.einsum("ibhd,jbhd->bhij", q, k) / np.sqrt(D)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    ref = np.einsum("bhij,jbhd->ibhd", w, v).reshape(L, B, H * D)
    np.testing.assert_allclose(out, ref, rtol=1e-10)


def test_hybridized_detection_head_matches_eager():
    class Head(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, feat, boxes):
            anchors = F.contrib.MultiBoxPrior(feat, sizes=(0.4,), ratios=(1.0, 2.0))
            iou = F.contrib.box_iou(anchors.reshape((-1, 4)), boxes)
            return F.contrib.box_nms(F.concat(iou.max(axis=1, keepdims=True), anchors.reshape((-1, 4)),
                                              dim=1), coord_start=1, score_index=0, overlap_thresh=0.5)

    feat = A(R.randn(1, 2, 3, 3), "float32")
    boxes = A([[0.1, 0.1, 0.5, 0.6], [0.4, 0.3, 0.9, 0.9]], "float32")
    net = Head()
    eager = net(feat, boxes).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(feat, boxes).asnumpy(), eager)
    np.testing.assert_allclose(net(feat, boxes).asnumpy(), eager)


# ---- SSD heads (values from the MXNet edition of "Dive into Deep Learning") -----------------------
def test_multibox_target_d2l_example():
    gt = np.array([[[0, 0.1, 0.08, 0.52, 0.92], [1, 0.55, 0.2, 0.9, 0.88]]], dtype="float32")
    anchors = np.array([[[0, 0.1, 0.2, 0.3], [0.15, 0.2, 0.4, 0.4], [0.63, 0.05, 0.88, 0.98],
                         [0.66, 0.45, 0.8, 0.8], [0.57, 0.3, 0.92, 0.9]]], dtype="float32")
    loc, mask, cls = nd.contrib.MultiBoxTarget(A(anchors, "float32"), A(gt, "float32"),
                                               A(np.zeros((1, 3, 5)), "float32"))
    assert cls.asnumpy().tolist() == [[0, 1, 2, 0, 2]]
    assert mask.asnumpy().tolist() == [[0] * 4 + [1] * 8 + [0] * 4 + [1] * 4]
    want = [0, 0, 0, 0, 1.40, 10.0, 2.59, 7.18, -1.20, 0.269, 1.68, -1.57, 0, 0, 0, 0, -0.571, -1.00, 0, 0.626]
    np.testing.assert_allclose(loc.asnumpy()[0], want, atol=6e-3, rtol=5e-3)


def test_multibox_detection_d2l_example():
    anchors = np.array([[[0.1, 0.08, 0.52, 0.92], [0.08, 0.2, 0.56, 0.95], [0.15, 0.3, 0.62, 0.91],
                         [0.55, 0.2, 0.9, 0.88]]], dtype="float32")
    probs = np.array([[[0] * 4, [0.9, 0.8, 0.7, 0.1], [0.1, 0.2, 0.3, 0.9]]], dtype="float32")
    out = nd.contrib.MultiBoxDetection(A(probs, "float32"), A(np.zeros((1, 16)), "float32"),
                                       A(anchors, "float32"), nms_threshold=0.5).asnumpy()[0]
    # the two 0.9 detections tie; MXNet's CPU kernel sorts stably (anchor order)
    want = [[0, 0.9, 0.1, 0.08, 0.52, 0.92], [1, 0.9, 0.55, 0.2, 0.9, 0.88],
            [-1, 0.8, 0.08, 0.2, 0.56, 0.95], [-1, 0.7, 0.15, 0.3, 0.62, 0.91]]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    x = mx.sym.var("p")
    _, shapes, _ = mx.sym.contrib.MultiBoxDetection(x, mx.sym.var("l"), mx.sym.var("a")).infer_shape(
        p=(2, 3, 4), l=(2, 16), a=(1, 4, 4))
    assert shapes == [(2, 4, 6)]
