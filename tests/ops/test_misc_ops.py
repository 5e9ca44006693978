"""Misc operators beyond the generic sample checks: MXNet's own backward of MakeLoss, SVMOutput
and IdentityAttachKLSparseReg, Crop rules, im2col/col2im identities, legacy v1 layers against
their modern counterparts, SpatialTransformer, Correlation, histogram and the small helpers."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.ops import get
from hybridnet.ops import misc

R = np.random.RandomState(5)


def nd(a, dtype=np.float64):
    return mx.nd.array(np.asarray(a), dtype=dtype)


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=rtol, atol=atol)


def grad_of(name, inputs, attrs, head=None, grad_idx=(0,)):
    """(output, gradients of grad_idx inputs) through mx.autograd with an explicit head."""
    arrs = [nd(a) for a in inputs]
    for i in grad_idx:
        arrs[i].attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd, name)(*arrs, **attrs)
    h = nd(np.ones(out.shape) * 3.0 if head is None else head)
    out.backward(h)
    return out.asnumpy(), [arrs[i].grad.asnumpy() for i in grad_idx]


# ---- MakeLoss --------------------------------------------------------------------------------------
def test_make_loss_backward_ignores_head_and_normalizes():
    x = np.array([[0.5, -1.0, 2.0], [0.0, 3.0, -0.2]])
    out, (g,) = grad_of("MakeLoss", [x], {"grad_scale": 2.0})
    close(out, x)
    close(g, np.full_like(x, 2.0))                       # head gradient (3.0) is ignored
    _, (g,) = grad_of("MakeLoss", [x], {"normalization": "batch"})
    close(g, np.full_like(x, 1.0 / 2))                   # rows of the (N, -1) view
    _, (g,) = grad_of("MakeLoss", [x], {"normalization": "valid", "valid_thresh": 0.4, "grad_scale": 6.0})
    close(g, np.full_like(x, 6.0 / 3))                   # three elements > 0.4
    _, (g,) = grad_of("MakeLoss", [-np.abs(x)], {"normalization": "valid"})
    close(g, np.ones_like(x))                            # no valid element: divide by 1


# ---- SVMOutput -------------------------------------------------------------------------------------
def _np_svm_grad(x, label, margin=1.0, c=1.0, linear=False):
    o = x.reshape(-1, x.shape[-1])
    lab = label.reshape(-1).astype(int)
    g = np.zeros_like(o)
    for r in range(o.shape[0]):
        for j in range(o.shape[1]):
            if j == lab[r]:
                g[r, j] = -c * float(margin > o[r, j]) if linear else \
                    -c * (2 * (margin - o[r, j]) if margin > o[r, j] else 0.0)
            else:
                g[r, j] = c * float(margin > -o[r, j]) if linear else \
                    -c * (-2 * (margin + o[r, j]) if margin > -o[r, j] else 0.0)
    return g.reshape(x.shape)


@pytest.mark.parametrize("linear", [False, True])
def test_svm_output_backward(linear):
    x = R.uniform(-2, 2, (2, 3, 4))
    lab = R.randint(0, 4, (2, 3)).astype(float)
    attrs = {"margin": 0.7, "regularization_coefficient": 1.5, "use_linear": linear}
    out, (g,) = grad_of("SVMOutput", [x, lab], attrs)
    close(out, x)
    close(g, _np_svm_grad(x, lab, 0.7, 1.5, linear))


def test_svm_output_label_shape_rule():
    s = mx.sym.SVMOutput(mx.sym.var("d"), mx.sym.var("l"))
    assert s.infer_shape(d=(5, 3))[0] == [(5, 3), (5,)]
    x = nd(R.randn(4, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.SVMOutput(x, nd(np.zeros(3)))
    with pytest.raises(MXNetError, match="label has 3 values but data has 4 rows"):
        y.backward()


# ---- IdentityAttachKLSparseReg ---------------------------------------------------------------------
def test_kl_sparse_reg_backward_and_moving_avg():
    x = R.uniform(0.1, 0.9, (5, 3))
    ma0 = np.array([0.2, 0.5, 0.7])
    X, MA = nd(x), nd(ma0)
    X.attach_grad()
    head = R.randn(5, 3)
    attrs = {"sparseness_target": 0.2, "penalty": 0.01, "momentum": 0.8}
    with mx.autograd.record():
        y = mx.nd.IdentityAttachKLSparseReg(X, MA, **attrs)
    close(y.asnumpy(), x)
    close(MA.asnumpy(), ma0)                             # forward leaves the state alone
    y.backward(nd(head))
    ma = 0.8 * ma0 + 0.2 * x.mean(0)
    close(MA.asnumpy(), ma)
    close(X.grad.asnumpy(), head + 0.01 * (-0.2 / ma + 0.8 / (1 - ma)))
    op = get("IdentityAttachKLSparseReg")
    assert op.aux == ("moving_avg",)
    assert op.param_shapes({}, [(5, 3), None]) == [(5, 3), (3,)]


# ---- Crop ------------------------------------------------------------------------------------------
def test_crop_like_gets_no_gradient_and_offsets_checked():
    x, like = R.randn(1, 2, 6, 7), R.randn(1, 5, 3, 4)
    out, (gx, gl) = grad_of("Crop", [x, like], {"offset": (2, 3)}, grad_idx=(0, 1))
    close(out, x[:, :, 2:5, 3:7])
    exp = np.zeros_like(x)
    exp[:, :, 2:5, 3:7] = 3.0
    close(gx, exp)
    close(gl, np.zeros_like(like))
    with pytest.raises(MXNetError, match="offsets must be in"):
        mx.nd.Crop(nd(x), nd(like), offset=(4, 0))
    with pytest.raises(MXNetError, match="h_w"):
        mx.nd.Crop(nd(x))                                # h_w required with one input
    s = mx.sym.Crop(mx.sym.var("a"), mx.sym.var("b"), center_crop=True)
    node = json.loads(s.tojson())["nodes"][-1]
    assert node["attrs"]["num_args"] == "2" and node["attrs"]["center_crop"] == "True"
    assert s.infer_shape(a=(1, 2, 6, 7), b=(1, 5, 3, 4))[1] == [(1, 2, 3, 4)]


# ---- im2col / col2im -------------------------------------------------------------------------------
def test_im2col_col2im_are_adjoint_and_match_convolution():
    x = R.randn(2, 3, 6, 5)
    attrs = {"kernel": (3, 2), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)}
    cols = mx.nd.im2col(nd(x), **attrs).asnumpy()
    y = R.randn(*cols.shape)
    back = mx.nd.col2im(nd(y), output_size=(6, 5), **attrs).asnumpy()
    close(np.sum(cols * y), np.sum(x * back), rtol=1e-10)   # <im2col x, y> = <x, col2im y>
    w = R.randn(4, 3, 3, 2)
    conv = mx.nd.Convolution(nd(x), nd(w), kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 1),
                             num_filter=4, no_bias=True).asnumpy()
    via_cols = np.einsum("fk,nkl->nfl", w.reshape(4, -1), cols).reshape(conv.shape)
    close(via_cols, conv, rtol=1e-9, atol=1e-10)
    # non-overlapping blocks: col2im inverts im2col
    z = R.randn(1, 2, 4, 6)
    c = mx.nd.im2col(nd(z), kernel=(2, 3), stride=(2, 3))
    close(mx.nd.col2im(c, output_size=(4, 6), kernel=(2, 3), stride=(2, 3)).asnumpy(), z)
    with pytest.raises(MXNetError, match="col2im: data must be"):
        mx.nd.col2im(nd(np.ones((1, 5, 4))), output_size=(4, 6), kernel=(2, 3), stride=(2, 3))


# ---- legacy v1 layers ------------------------------------------------------------------------------
def test_pooling_v1_differs_from_pooling_where_mxnet_does():
    x = -np.abs(R.randn(1, 1, 4, 4)) - 1.0
    v1 = mx.nd.Pooling_v1(nd(x), kernel=(2, 2), stride=(2, 2), pad=(1, 1)).asnumpy()
    v2 = mx.nd.Pooling(nd(x), kernel=(2, 2), stride=(2, 2), pad=(1, 1)).asnumpy()
    assert v1[0, 0, 0, 0] == 0.0 and v2[0, 0, 0, 0] == x[0, 0, 0, 0]   # zero padding joins the max
    y = R.randn(1, 2, 5, 5)
    a1 = mx.nd.Pooling_v1(nd(y), kernel=(2, 2), stride=(2, 2), pool_type="avg",
                          pooling_convention="full").asnumpy()
    # last window holds only y[..., 4, 4] but still divides by the kernel area
    close(a1[..., 2, 2], y[..., 4, 4] / 4)
    valid = dict(kernel=(3, 2), stride=(2, 1), pool_type="avg")
    close(mx.nd.Pooling_v1(nd(y), **valid).asnumpy(), mx.nd.Pooling(nd(y), **valid).asnumpy())
    with pytest.raises(MXNetError, match="2-D only"):
        mx.nd.Pooling_v1(nd(R.randn(1, 1, 2, 2, 2)), kernel=(1, 1, 1))


def test_convolution_v1_equals_convolution():
    x, w, b = R.randn(2, 4, 6, 6), R.randn(6, 2, 3, 3), R.randn(6)
    attrs = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=6, num_group=2)
    close(mx.nd.Convolution_v1(nd(x), nd(w), nd(b), **attrs).asnumpy(),
          mx.nd.Convolution(nd(x), nd(w), nd(b), **attrs).asnumpy())
    s = mx.sym.Convolution_v1(mx.sym.var("data"), kernel=(3, 3), num_filter=6, no_bias=True)
    assert s.list_arguments() == ["data", "convolution_v10_weight"]
    assert s.infer_shape(data=(2, 4, 6, 6))[0][1] == (6, 4, 3, 3)
    with pytest.raises(MXNetError, match="2-D only"):
        mx.nd.Convolution_v1(nd(R.randn(1, 1, 4, 4, 4)), nd(R.randn(1, 1, 2, 2, 2)), kernel=(2, 2, 2),
                             num_filter=1, no_bias=True)


# ---- SpatialTransformer / Correlation --------------------------------------------------------------
def test_spatial_transformer_identity_and_shift():
    x = R.randn(2, 3, 5, 6)
    ident = np.tile([1.0, 0, 0, 0, 1.0, 0], (2, 1))
    out = mx.nd.SpatialTransformer(nd(x), nd(ident), target_shape=(5, 6), transform_type="affine",
                                   sampler_type="bilinear").asnumpy()
    close(out, x, rtol=1e-9, atol=1e-10)
    # shifting by one pixel to the right in normalised units: out[..., j] = x[..., j+1], zero past the edge
    shift = np.tile([1.0, 0, 2.0 / 5, 0, 1.0, 0], (2, 1))
    out = mx.nd.SpatialTransformer(nd(x), nd(shift), target_shape=(5, 6), transform_type="affine",
                                   sampler_type="bilinear").asnumpy()
    close(out[..., :5], x[..., 1:], rtol=1e-9, atol=1e-10)
    close(out[..., 5], 0.0, atol=1e-10)
    with pytest.raises(MXNetError, match="transform_type"):
        mx.nd.SpatialTransformer(nd(x), nd(ident), target_shape=(5, 6), sampler_type="bilinear")


def test_correlation_channel_order_and_hidden_outputs():
    a = R.randn(1, 2, 5, 5)
    b = np.zeros_like(a)
    b[:, :, :, 1:] = a[:, :, :, :-1]        # b is a shifted right by one pixel
    out = mx.nd.Correlation(nd(a), nd(b), max_displacement=1, pad_size=1).asnumpy()
    assert out.shape == (1, 9, 5, 5)
    # displacement (dy, dx) = (0, +1) is channel (0+1)*3 + (1+1) = 5: there b[x+1] == a[x]
    close(out[0, 5, :, :-1], (a[0, :, :, :-1] ** 2).sum(0) / 2)
    op = get("Correlation")
    assert op.total_outputs({}) == 3 and op.num_outputs({}) == 1
    close(out, misc._np_correlation(a, b, max_displacement=1, pad_size=1), rtol=1e-10)


# ---- histogram / cast_storage / fill_element_0index ------------------------------------------------
def test_histogram_matches_numpy_edges_and_outliers():
    x = np.array([-1.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 2.0])
    counts, edges = mx.nd._internal._histogram(nd(x), bin_cnt=4, range=(0.0, 1.0))
    c_np, e_np = np.histogram(x, bins=4, range=(0.0, 1.0))
    assert counts.dtype == np.int64
    assert counts.asnumpy().tolist() == c_np.tolist() == [1, 1, 1, 3]   # right edge inclusive
    close(edges.asnumpy(), e_np)
    bins = np.array([0.0, 0.3, 1.0])
    counts, edges = mx.nd._internal._histogram(nd(x), nd(bins))
    assert counts.asnumpy().tolist() == np.histogram(x, bins=bins)[0].tolist()
    counts, _ = mx.nd._internal._histogram(nd(np.full(3, 2.0)), bin_cnt=2, range=(2.0, 2.0))
    assert counts.asnumpy().tolist() == [0, 3]                           # range widened by 0.5
    with pytest.raises(MXNetError, match="needs range"):
        mx.nd._internal._histogram(nd(x), bin_cnt=3)
    s = mx.sym.histogram(mx.sym.var("x"), bins=3, range=(0, 1))  # MXNet's Python-level signature
    assert s.infer_shape(x=(7,))[1] == [(3,), (4,)]


def test_cast_storage_and_fill_element_0index():
    x = R.randn(3, 4)
    close(mx.nd.cast_storage(nd(x), stype="default").asnumpy(), x)
    x[x < 0.3] = 0
    c = mx.nd.cast_storage(nd(x), stype="csr")
    assert c.stype == "csr" and c.data.shape == (int((x != 0).sum()),)
    close(c.asnumpy(), x)
    assert mx.nd.cast_storage(c, stype="row_sparse").stype == "row_sparse"
    lhs, mhs, rhs = R.randn(3, 4), np.array([7.0, 8.0, 9.0]), np.array([3.0, 0.0, 3.0])
    out = mx.nd.fill_element_0index(nd(lhs), nd(mhs), nd(rhs)).asnumpy()
    exp = lhs.copy()
    exp[[0, 1, 2], [3, 0, 3]] = mhs
    close(out, exp)


def test_kernels_run_on_meta_tensors():
    m = lambda *s: torch.empty(*s, device="meta", dtype=torch.float32)  # noqa: E731
    assert misc.im2col(m(2, 3, 6, 5), kernel=(3, 2), pad=(1, 0)).shape == (2, 18, 24)
    assert misc.Correlation(m(1, 2, 7, 7), m(1, 2, 7, 7), kernel_size=3, max_displacement=2,
                            stride2=2, pad_size=2).shape == (1, 9, 5, 5)
    assert misc.Pooling_v1(m(1, 2, 5, 5), kernel=(2, 2), stride=(2, 2),
                           pooling_convention="full").shape == (1, 2, 3, 3)
