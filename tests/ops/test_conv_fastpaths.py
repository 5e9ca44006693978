"""Convolution's exact fast paths on small inputs (hybridnet/ops/nn.py ``_conv_fast``): tap
cropping, the linear form and the tiny-output weight gradient. Each must compute what the plain
convolution computes (NumPy reference, float64 finite differences, torch's uncropped convolution)
and must be taken exactly where meant (a TorchFunctionMode records the torch calls)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

import hybridnet as mx
from hybridnet import autograd, gluon
from hybridnet.base import MXNetError
from hybridnet.ops import get, nn as nn_ops
from hybridnet.ops.nn import _np_conv

R = np.random.RandomState(7)
CONV = get("Convolution").kernel
DEFAULT_MIN_WEIGHT = nn_ops.TINY_OUTPUT_MIN_WEIGHT


@pytest.fixture(autouse=True)
def tiny_path_for_small_weights(monkeypatch):
    """The tiny-output path only pays for big weights; the numerical checks here use small ones,
    so they lower its size floor (test_tiny_output_min_weight checks the default)."""
    monkeypatch.setattr(nn_ops, "TINY_OUTPUT_MIN_WEIGHT", 0)
_TORCH_CONVS = {torch.conv1d, torch.conv2d, torch.conv3d, torch.nn.functional.conv1d,
                torch.nn.functional.conv2d, torch.nn.functional.conv3d}


class CallLog(TorchFunctionMode):
    """Records the torch convolutions (weight shape, padding) and linear calls a kernel makes."""

    def __init__(self) -> None:
        super().__init__()
        self.convs: list = []
        self.linears = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _TORCH_CONVS:
            self.convs.append((tuple(args[1].shape), tuple(args[4]) if len(args) > 4 else None))
        elif func is torch.nn.functional.linear:
            self.linears += 1
        return func(*args, **kwargs)


def t64(a, grad=False):
    return torch.tensor(np.asarray(a), dtype=torch.float64, requires_grad=grad)


def attrs_of(k, s, p, d, nf, g=1, layout=None):
    a = {"kernel": k, "stride": s, "pad": p, "dilate": d, "num_filter": nf, "num_group": g}
    if layout:
        a["layout"] = layout
    return a


def torch_conv(x, w, b, a):
    """torch's uncropped convolution, channels-first, for reference gradients."""
    n = len(a["kernel"])
    return torch.ops.aten.convolution(x, w, b, list(a["stride"]), list(a["pad"]), list(a["dilate"]), False,
                                      [0] * n, a["num_group"])


# (data shape, weight shape, attrs, expected: torch conv weight spatial shape after cropping (None:
# no torch conv call, the linear form), linear form taken)
CROP_CASES = [
    # 3x3 pad 1 on 1x1: only the centre tap; then a linear product
    ("3x3_on_1x1", (2, 3, 1, 1), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4), None, True),
    # 3x3 stride 2 pad 1 on 2x2: taps 1..2 per axis, no padding left; the kernel covers the input
    ("3x3s2_on_2x2", (2, 3, 2, 2), (4, 3, 3, 3), attrs_of((3, 3), (2, 2), (1, 1), (1, 1), 4), None, True),
    # one axis of size 1 only: crop H, keep W (5 output positions: the plain cropped convolution)
    ("3x3_on_1x5", (2, 3, 1, 5), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4), (1, 3), False),
    # dilation 2, pad 2 on 1x1: only the centre tap
    ("dilated_on_1x1", (2, 3, 1, 1), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (2, 2), (2, 2), 4), None, True),
    # groups: cropped, grouped convolution (no linear form for groups > 1)
    ("groups_on_1x1", (2, 4, 1, 1), (6, 2, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 6, g=2), (1, 1),
     False),
    # 5x5 pad 2 on 2x2: taps 1..3 would need asymmetric padding (crop lo=1 leaves pad 1 on the
    # left; on the right the cropped span must end at 2 + 1): symmetric pad 1, 3 taps, same output
    ("5x5_on_2x2", (2, 3, 2, 2), (4, 3, 5, 5), attrs_of((5, 5), (1, 1), (2, 2), (1, 1), 4), (3, 3), False),
    # no cropping needed, but the kernel covers the unpadded input: the linear form
    ("covers_3x3", (2, 3, 3, 3), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (0, 0), (1, 1), 4), None, True),
    # 1-D and 3-D
    ("1d_on_1", (2, 3, 1), (4, 3, 3), attrs_of((3,), (1,), (1,), (1,), 4), None, True),
    ("3d_on_1x2x1", (2, 3, 1, 2, 1), (4, 3, 3, 3, 3), attrs_of((3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 4),
     (1, 3, 1), False),
]
# cases that must NOT be cropped (every tap reads a real element) nor take the linear form
NO_CROP_CASES = [
    ("3x3_on_2x2", (2, 3, 2, 2), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)),
    ("3x3_on_8x8", (2, 3, 8, 8), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)),
    ("no_pad_on_4x4", (2, 3, 4, 4), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (0, 0), (1, 1), 4)),
    ("3x3s2_on_3x3", (2, 3, 3, 3), (4, 3, 3, 3), attrs_of((3, 3), (2, 2), (1, 1), (1, 1), 4)),
    # taps 0 and 2 used, tap 1 never (x=1, stride 2, pad 2): the used hull is the whole kernel
    ("hull_is_whole_kernel", (1, 2, 1), (3, 2, 3), attrs_of((3,), (2,), (2,), (1,), 3)),
]


def _inputs(dshape, wshape, grad=False):
    x = R.randn(*dshape)
    w = R.randn(*wshape)
    b = R.randn(wshape[0])
    return x, w, b, t64(x, grad), t64(w, grad), t64(b, grad)


@pytest.mark.parametrize("case", CROP_CASES, ids=[c[0] for c in CROP_CASES])
def test_cropped_forward_matches_numpy_and_crops(case):
    _, dshape, wshape, a, conv_shape, linear = case
    x, w, b, xt, wt, bt = _inputs(dshape, wshape)
    with torch.no_grad(), CallLog() as log:
        y = CONV(xt, wt, bt, **a)
    np.testing.assert_allclose(y.numpy(), _np_conv(x, w, b, **a), rtol=1e-12, atol=1e-12)
    assert log.linears == int(linear)
    if conv_shape is None:
        assert log.convs == []
    else:
        assert [c[0][2:] for c in log.convs] == [conv_shape]


@pytest.mark.parametrize("case", NO_CROP_CASES, ids=[c[0] for c in NO_CROP_CASES])
def test_no_crop_where_every_tap_reads_input(case):
    _, dshape, wshape, a = case
    x, w, b, xt, wt, bt = _inputs(dshape, wshape)
    with torch.no_grad(), CallLog() as log:
        y = CONV(xt, wt, bt, **a)
    np.testing.assert_allclose(y.numpy(), _np_conv(x, w, b, **a), rtol=1e-12, atol=1e-12)
    assert log.linears == 0
    assert [c[0] for c in log.convs] == [wshape]  # the full weight, unsliced
    assert list(log.convs[0][1]) == list(a["pad"])


def test_crop_to_the_hull_of_used_taps():
    """x=1, k=5, stride 2, pad 3: output 0 reads tap 3, output 1 reads tap 1; taps 0, 2 and 4 read
    padding only. The weight is cropped to the hull, taps 1..3 (tap 2 stays, reading padding),
    with pad 2 on both sides: same two outputs."""
    a = attrs_of((5,), (2,), (3,), (1,), 2)
    x, w, b, xt, wt, bt = _inputs((2, 3, 1), (2, 3, 5))
    with torch.no_grad(), CallLog() as log:
        y = CONV(xt, wt, bt, **a)
    np.testing.assert_allclose(y.numpy(), _np_conv(x, w, b, **a), rtol=1e-12, atol=1e-12)
    assert log.linears == 0 and log.convs == [((2, 3, 3), (2,))]


def test_no_tap_reads_input_keeps_plain_convolution():
    """Every tap reads padding only (x=1, k=1, stride 2, pad 1: outputs read indices -1 and 1):
    the output is the bias alone; nothing to crop to."""
    a = attrs_of((1,), (2,), (1,), (1,), 2)
    x, w, b, xt, wt, bt = _inputs((2, 3, 1), (2, 3, 1))
    with torch.no_grad():
        y = CONV(xt, wt, bt, **a)
    np.testing.assert_allclose(y.numpy(), np.broadcast_to(b[None, :, None], (2, 2, 2)), rtol=0, atol=0)


def _grad_cases():
    out = [(c[0], c[1], c[2], c[3]) for c in CROP_CASES]
    out += [
        # tiny output, no cropping: the patch-matmul weight gradient
        ("tiny_3x3_on_2x2", (2, 3, 2, 2), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)),
        ("tiny_strided_dilated", (2, 3, 5, 4), (4, 3, 2, 2), attrs_of((2, 2), (3, 2), (1, 0), (2, 2), 4)),
        ("tiny_1d", (2, 3, 3), (4, 3, 3), attrs_of((3,), (1,), (1,), (1,), 4)),
        ("tiny_3d", (2, 3, 1, 2, 2), (4, 3, 1, 3, 3), attrs_of((1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 4)),
        ("pointwise_stride2", (2, 3, 2, 2), (4, 3, 1, 1), attrs_of((1, 1), (2, 2), (0, 0), (1, 1), 4)),
    ]
    return out


GRAD_CASES = _grad_cases()


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_finite_differences_and_uncropped_torch(case):
    _, dshape, wshape, a = case
    _, _, _, xt, wt, bt = _inputs(dshape, wshape, grad=True)

    def f(x, w, b):
        return CONV(x, w, b, **a)

    assert torch.autograd.gradcheck(f, (xt, wt, bt))
    assert torch.autograd.gradgradcheck(f, (xt, wt, bt))  # double backward (autograd.grad create_graph)
    y = f(xt, wt, bt)
    ref = torch_conv(xt, wt, bt, a)
    head = torch.randn(ref.shape, dtype=torch.float64)
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    for got, want in zip(torch.autograd.grad(y, (xt, wt, bt), head), torch.autograd.grad(ref, (xt, wt, bt), head)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_cropped_taps_get_exactly_zero_gradient():
    a = attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)
    _, _, _, xt, wt, bt = _inputs((2, 3, 1, 1), (4, 3, 3, 3), grad=True)
    CONV(xt, wt, bt, **a).sum().backward()
    mask = np.ones((3, 3), bool)
    mask[1, 1] = False
    assert np.all(wt.grad.numpy()[:, :, mask] == 0)
    assert np.all(wt.grad.numpy()[:, :, 1, 1] != 0)


def _grad_fn_names(y):
    names, todo, seen = set(), [y.grad_fn], set()
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        names.add(type(fn).__name__)
        todo.extend(f for f, _ in fn.next_functions)
    return names


# (data, weight, attrs, weight requires grad, grad mode, tiny path expected)
TINY_CASES = [
    ("taken_2x2", (4, 8, 2, 2), (6, 8, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 6), True, True, True),
    ("taken_4_positions_s2", (4, 8, 4, 4), (6, 8, 3, 3), attrs_of((3, 3), (2, 2), (1, 1), (1, 1), 6), True, True,
     True),
    ("not_9_positions", (4, 8, 3, 3), (6, 8, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 6), True, True,
     False),
    ("not_groups", (4, 8, 2, 2), (6, 4, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 6, g=2), True, True,
     False),
    ("not_frozen_weight", (4, 8, 2, 2), (6, 8, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 6), False, True,
     False),
    ("not_no_grad", (4, 8, 2, 2), (6, 8, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 6), True, False, False),
    # a kernel covering the whole input is the linear form instead (autograd of F.linear)
    ("not_linear_form", (4, 8, 2, 2), (6, 8, 2, 2), attrs_of((2, 2), (1, 1), (0, 0), (1, 1), 6), True, True,
     False),
]


@pytest.mark.parametrize("case", TINY_CASES, ids=[c[0] for c in TINY_CASES])
def test_tiny_output_path_taken_only_where_meant(case):
    _, dshape, wshape, a, wgrad, grad_mode, expected = case
    x = torch.randn(dshape, requires_grad=True)
    w = torch.randn(wshape, requires_grad=wgrad)
    b = torch.randn(wshape[0], requires_grad=True)
    with torch.set_grad_enabled(grad_mode):
        y = CONV(x, w, b, **a)
    assert ("_TinyOutputConvBackward" in _grad_fn_names(y) if y.grad_fn is not None else False) == expected
    ref = torch_conv(x, w, b, a)
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    if grad_mode:
        head = torch.randn(ref.shape)
        inputs = (x, w, b) if wgrad else (x, b)
        for got, want in zip(torch.autograd.grad(y, inputs, head), torch.autograd.grad(ref, inputs, head)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def _assert_grads_match_torch_backward(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> None:
    """Input and weight gradients of ``y`` (a 3x3 stride-1 pad-1 convolution of x by w) equal
    torch's own convolution_backward (float32 tolerance)."""
    g = torch.randn(y.shape)
    gx, gw = torch.autograd.grad(y, (x, w), g)
    rx, rw, _ = torch.ops.aten.convolution_backward(g, x.detach(), w.detach(), None, [1, 1], [1, 1], [1, 1], False,
                                                    [0, 0], 1, [True, True, False])
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw.numpy(), rw.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cin,cout,taken", [(16, 16, False), (256, 256, True)])
def test_tiny_output_min_weight(monkeypatch, cin, cout, taken):
    """With the default size floor a small weight keeps torch's backward, a big one (resnet's
    stage 3) takes the patch matmul; both give torch's gradients."""
    monkeypatch.setattr(nn_ops, "TINY_OUTPUT_MIN_WEIGHT", DEFAULT_MIN_WEIGHT)
    x = torch.randn(2, cin, 2, 2, requires_grad=True)
    w = (torch.randn(cout, cin, 3, 3) * 0.05).requires_grad_()
    a = attrs_of((3, 3), (1, 1), (1, 1), (1, 1), cout)
    y = CONV(x, w, None, **a, no_bias=True)
    assert ("_TinyOutputConvBackward" in _grad_fn_names(y)) == taken
    _assert_grads_match_torch_backward(x, w, y)


def test_tiny_output_weight_gradient_matches_torch_backward_float32():
    """resnet18's stage-3 shape, scaled down: the patch-matmul weight gradient against torch's
    own convolution_backward."""
    x = torch.randn(8, 64, 2, 2, requires_grad=True)
    w = torch.randn(32, 64, 3, 3, requires_grad=True)
    a = attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 32)
    y = CONV(x, w, None, **a, no_bias=True)
    assert "_TinyOutputConvBackward" in _grad_fn_names(y)
    _assert_grads_match_torch_backward(x, w, y)


@pytest.mark.parametrize("layout,dshape,wshape,a", [
    ("NHWC", (2, 1, 1, 3), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)),
    ("NHWC", (2, 2, 2, 3), (4, 3, 3, 3), attrs_of((3, 3), (2, 2), (1, 1), (1, 1), 4)),
    ("NHWC", (2, 2, 2, 3), (4, 3, 3, 3), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)),
    ("NHWC", (2, 1, 5, 4), (6, 3, 3, 2), attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 6, g=2)),
    ("NWC", (2, 1, 3), (4, 3, 3), attrs_of((3,), (1,), (1,), (1,), 4)),
    ("NDHWC", (2, 1, 2, 1, 3), (4, 3, 3, 3, 3), attrs_of((3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 4)),
], ids=["nhwc_1x1", "nhwc_s2_2x2", "nhwc_tiny", "nhwc_groups_1x5", "nwc_1", "ndhwc"])
def test_channels_last_matches_channels_first(layout, dshape, wshape, a):
    """Channels-last data (N, *spatial, C) and weight (F, *kernel, C/g): same values and gradients
    as the channels-first NumPy reference / uncropped torch convolution."""
    x = R.randn(*dshape)
    w = R.randn(*wshape)
    b = R.randn(wshape[0])
    xt, wt, bt = t64(x, True), t64(w, True), t64(b, True)
    y = CONV(xt, wt, bt, **a, layout=layout)
    xf, wf = np.moveaxis(x, -1, 1), np.moveaxis(w, -1, 1)
    np.testing.assert_allclose(np.moveaxis(y.detach().numpy(), -1, 1), _np_conv(xf, wf, b, **a),
                               rtol=1e-12, atol=1e-12)
    xr, wr, br = t64(xf, True), t64(wf, True), t64(b, True)
    ref = torch_conv(xr, wr, br, a)
    head = torch.randn(ref.shape, dtype=torch.float64)
    gx, gw, gb = torch.autograd.grad(y, (xt, wt, bt), head.movedim(1, -1))
    rx, rw, rb = torch.autograd.grad(ref, (xr, wr, br), head)
    np.testing.assert_allclose(gx.movedim(-1, 1).numpy(), rx.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw.movedim(-1, 1).numpy(), rw.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), rb.numpy(), rtol=1e-12, atol=1e-12)


# (data shape, weight shape, stride, memory order of the data, pixel form taken)
PIXEL_CASES = [
    ("1x1_on_2x2", (3, 5, 2, 2), (4, 5, 1, 1), (1, 1), "nchw", True),
    ("1x1_on_2x2_channels_last", (3, 5, 2, 2), (4, 5, 1, 1), (1, 1), "cl", True),
    ("1x1_s2_on_4x4", (3, 5, 4, 4), (4, 5, 1, 1), (2, 2), "nchw", True),
    ("1x1_s2_on_4x3_channels_last", (3, 5, 4, 3), (4, 5, 1, 1), (2, 2), "cl", True),
    ("1x1_on_1x4", (3, 5, 1, 4), (4, 5, 1, 1), (1, 1), "nchw", True),
    ("1d_1x1_on_3", (3, 5, 3), (4, 5, 1), (1,), "nchw", True),
    ("1x1_on_3x3", (3, 5, 3, 3), (4, 5, 1, 1), (1, 1), "nchw", False),  # 9 positions: the convolution
]


@pytest.mark.parametrize("case", PIXEL_CASES, ids=[c[0] for c in PIXEL_CASES])
def test_pixel_form_matches_numpy_finite_differences_and_keeps_memory_order(case):
    """A 1x1 convolution at <= POINTWISE_MAX_POSITIONS positions is one product of the pixels:
    NumPy forward, float64 gradients against torch's convolution and finite differences, and
    the result in the input's memory order (channels-last stays channels-last)."""
    _, dshape, wshape, stride, order, taken = case
    n = len(wshape) - 2
    a = attrs_of((1,) * n, stride, (0,) * n, (1,) * n, wshape[0])
    x, w, b, xt, wt, bt = _inputs(dshape, wshape, grad=True)
    if order == "cl":
        xt = xt.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    with CallLog() as log:
        y = CONV(xt, wt, bt, **a)
    assert (log.linears == 1 and log.convs == []) == taken
    assert y.is_contiguous(memory_format=torch.channels_last if order == "cl" else torch.contiguous_format)
    np.testing.assert_allclose(y.detach().numpy(), _np_conv(x, w, b, **a), rtol=1e-12, atol=1e-12)
    head = torch.randn(y.shape, dtype=torch.float64)
    got = torch.autograd.grad(y, (xt, wt, bt), head)
    xr, wr, br = t64(x, True), t64(w, True), t64(b, True)
    want = torch.autograd.grad(torch_conv(xr, wr, br, a), (xr, wr, br), head)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda xx, ww, bb: CONV(xx, ww, bb, **a), (xr, wr, br))


def test_pixel_form_float32_matches_the_convolution_on_mobilenet_shapes():
    """mobilenet's last 1x1 layers at b32 on 32x32 images (512 channels on 2x2), float32."""
    x = torch.rand(32, 512, 2, 2).contiguous(memory_format=torch.channels_last)
    w, b = torch.randn(512, 512, 1, 1) * 0.05, torch.randn(512)
    a = attrs_of((1, 1), (1, 1), (0, 0), (1, 1), 512)
    np.testing.assert_allclose(CONV(x, w, b, **a).numpy(), torch_conv(x, w, b, a).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dshape,wshape,layout,needle", [
    ((2, 5, 1, 1), (4, 3, 3, 3), None, "the input has 5 channels"),
    ((2, 5, 2, 2), (4, 3, 3, 3), None, "the input has 5 channels"),
    ((2, 1, 1, 5), (4, 3, 3, 3), "NHWC", "the input has 5 channels"),
    ((2, 3, 1), (4, 3, 3, 3), None, "needs 4-D input"),
])
def test_bad_inputs_keep_their_errors(dshape, wshape, layout, needle):
    """The fast paths never swallow or reword the layer's errors on small inputs."""
    a = attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)
    w = torch.randn(wshape, requires_grad=True)
    with pytest.raises(MXNetError, match=needle):
        CONV(torch.randn(dshape), w, None, **a, no_bias=True, layout=layout)


def test_dtype_mismatch_keeps_its_error():
    a = attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)
    with pytest.raises(MXNetError, match="dtype"):
        CONV(torch.randn(2, 3, 1, 1, dtype=torch.float64), torch.randn(4, 3, 3, 3, requires_grad=True), None, **a,
             no_bias=True)


def test_switch_off_runs_plain_convolution(monkeypatch):
    monkeypatch.setattr(nn_ops, "FAST_PATHS", False)
    a = attrs_of((3, 3), (1, 1), (1, 1), (1, 1), 4)
    with CallLog() as log:
        CONV(torch.randn(2, 3, 1, 1), torch.randn(4, 3, 3, 3, requires_grad=True), None, **a, no_bias=True)
    assert log.linears == 0 and [c[0] for c in log.convs] == [(4, 3, 3, 3)]


# ---- a small Gluon net whose last stages hit the fast paths: eager vs hybridized --------------
def _small_net():
    nn = gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1, in_channels=3), nn.Activation("relu"),      # 4x4: plain
                nn.Conv2D(8, 3, strides=2, padding=1, in_channels=8),                 # -> 2x2 (4 positions)
                nn.Conv2D(8, 3, padding=1, in_channels=8), nn.Activation("relu"),     # 2x2: tiny path
                nn.Conv2D(16, 3, strides=2, padding=1, in_channels=8),                # -> 1x1: crop, linear
                nn.Conv2D(16, 3, padding=1, in_channels=16),                          # 1x1: crop, linear
                nn.Conv2D(16, 1, in_channels=16),                                     # 1x1 pointwise: linear
                nn.Dense(5, in_units=16))
    return net


def _forward_backward(net, x):
    with autograd.record():
        y = net(x)
        loss = (y * y).sum()
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()}
    return y.asnumpy(), grads


def test_gluon_eager_vs_hybridized_and_vs_plain_path(monkeypatch):
    mx.random.seed(3)
    net = _small_net()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(R.randn(4, 3, 4, 4).astype(np.float32))
    with CallLog() as log:
        y_eager, g_eager = _forward_backward(net, x)
    assert log.linears == 4  # the two 3x3 convs ending on 1x1, the pointwise one, and Dense
    net.hybridize()
    y_hyb, g_hyb = _forward_backward(net, x)
    y_hyb2, g_hyb2 = _forward_backward(net, x)
    monkeypatch.setattr(nn_ops, "FAST_PATHS", False)
    net2 = _small_net()
    net2.initialize()
    for p2, p in zip(net2.collect_params().values(), net.collect_params().values()):
        p2.set_data(p.data())
    y_plain, g_plain = _forward_backward(net2, x)
    for y in (y_hyb, y_hyb2, y_plain):
        np.testing.assert_allclose(y, y_eager, rtol=1e-5, atol=1e-5)
    for g in (g_hyb, g_hyb2):
        for k in g_eager:
            np.testing.assert_allclose(g[k], g_eager[k], rtol=1e-4, atol=1e-5, err_msg=k)
    for k2, k in zip(g_plain, g_eager):
        np.testing.assert_allclose(g_plain[k2], g_eager[k], rtol=1e-4, atol=1e-5, err_msg=k)
    # the cropped taps of the 1x1-input 3x3 convolution get exactly zero gradient
    w_grad = [g for k, g in g_eager.items() if k.endswith("conv4_weight")][0]
    assert np.all(w_grad[:, :, 0, :] == 0) and np.all(w_grad[:, :, :, 2] == 0)
