"""gluon.data.vision.transforms against NumPy references (OpenCV pixel conventions), and their
hybridization (the transforms are HybridBlocks over the ``_image_*`` operators)."""
import colorsys
import json
import random

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.gluon import data as gdata
from hybridnet.gluon import nn
from hybridnet.gluon.block import Block, HybridBlock
from hybridnet.gluon.data.vision import transforms as T


def _img(h=5, w=7, c=3, dtype=np.uint8, seed=0):
    rng = np.random.RandomState(seed)
    if dtype == np.uint8:
        return rng.randint(0, 256, (h, w, c)).astype(np.uint8)
    return (rng.rand(h, w, c) * 255).astype(dtype)


# -- NumPy references (written from OpenCV's definitions) ----------------------------------------
def _ref_nearest(a, h_out, w_out):
    h, w = a.shape[:2]
    ys = np.minimum(np.floor(np.arange(h_out) * (h / h_out)).astype(int), h - 1)
    xs = np.minimum(np.floor(np.arange(w_out) * (w / w_out)).astype(int), w - 1)
    return a[ys][:, xs]


def _ref_bilinear(a, h_out, w_out):
    a = a.astype(np.float64)
    h, w = a.shape[:2]

    def coords(n_in, n_out):
        src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        src = np.maximum(src, 0.0)
        i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    y0, y1, fy = coords(h, h_out)
    x0, x1, fx = coords(w, w_out)
    fy = fy[:, None, None]
    fx = fx[None, :, None]
    top = a[y0][:, x0] * (1 - fx) + a[y0][:, x1] * fx
    bot = a[y1][:, x0] * (1 - fx) + a[y1][:, x1] * fx
    return top * (1 - fy) + bot * fy


# -- tensor conversion ------------------------------------------------------------------------------
def test_to_tensor_and_normalize():
    a = _img()
    out = T.ToTensor()(mx.nd.array(a, dtype="uint8"))
    assert out.dtype == np.float32 and out.shape == (3, 5, 7)
    np.testing.assert_allclose(out.asnumpy(), a.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    batch = np.stack([a, _img(seed=1)])
    outb = T.ToTensor()(mx.nd.array(batch, dtype="uint8"))
    np.testing.assert_allclose(outb.asnumpy(), batch.transpose(0, 3, 1, 2) / 255.0, rtol=1e-6)

    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    norm = T.Normalize(mean, std)(out)
    ref = (a.transpose(2, 0, 1) / 255.0 - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    np.testing.assert_allclose(norm.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    normb = T.Normalize(mean, std)(outb)
    np.testing.assert_allclose(normb.asnumpy()[0], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(T.Normalize(0.5, 0.5)(out).asnumpy(), (out.asnumpy() - 0.5) / 0.5, rtol=1e-6)
    with pytest.raises(MXNetError, match="2 values but the input has 3 channels"):
        T.Normalize((0.1, 0.2), 1.0)(out)
    with pytest.raises(MXNetError, match="3-d"):
        T.ToTensor()(mx.nd.zeros((4, 4)))


def test_cast():
    x = mx.nd.array(_img(), dtype="uint8")
    assert T.Cast()(x).dtype == np.float32
    y = T.Cast("float64")(x)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.asnumpy(), _img().astype(np.float64))


# -- geometry ---------------------------------------------------------------------------------------
def test_resize_nearest_and_bilinear():
    a = _img(6, 9, dtype=np.float32)
    x = mx.nd.array(a)
    out = T.Resize((4, 3), interpolation=0)(x)          # size is (width, height)
    assert out.shape == (3, 4, 3)
    np.testing.assert_array_equal(out.asnumpy(), _ref_nearest(a, 3, 4))
    for (w, h) in [(4, 3), (13, 11), (9, 6), (5, 10)]:
        out = T.Resize((w, h))(x)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.asnumpy(), _ref_bilinear(a, h, w), rtol=1e-5, atol=1e-3)
    # uint8 stays uint8, rounded and saturated
    u = _img(6, 9)
    out = T.Resize((5, 4))(mx.nd.array(u, dtype="uint8"))
    assert out.dtype == np.uint8
    assert np.abs(out.asnumpy().astype(float) - _ref_bilinear(u, 4, 5)).max() <= 0.5 + 1e-4
    # batched NHWC
    outb = T.Resize(4)(mx.nd.array(np.stack([a, a + 1])))
    assert outb.shape == (2, 4, 4, 3)
    np.testing.assert_allclose(outb.asnumpy()[1], _ref_bilinear(a + 1, 4, 4), rtol=1e-5, atol=1e-3)


def test_resize_keep_ratio_sizes():
    x = mx.nd.zeros((4, 6, 3))
    assert T.Resize(2, keep_ratio=True)(x).shape == (2, 3, 3)      # short side (h) -> 2
    assert T.Resize(3, keep_ratio=True)(mx.nd.zeros((7, 5, 3))).shape == (4, 3, 3)  # 7*3//5
    assert T.Resize(2)(x).shape == (2, 2, 3)
    assert T.Resize((8, 2), keep_ratio=True)(x).shape == (2, 8, 3)  # a pair ignores keep_ratio
    for interp in (2, 3, 4):
        assert T.Resize((3, 2), interpolation=interp)(x).shape == (2, 3, 3)
    with pytest.raises(MXNetError, match="interp=7"):
        T.Resize(2, interpolation=7)(x)
    # 10: a random method (0-4) per call, drawn from Python's random
    a = _img(6, 9, dtype=np.float32)
    random.seed(4)
    got = [T.Resize((4, 3), interpolation=10)(mx.nd.array(a)).asnumpy() for _ in range(6)]
    random.seed(4)
    methods = [random.randint(0, 4) for _ in range(6)]
    for g, m in zip(got, methods):
        np.testing.assert_array_equal(g, mx.nd.image.resize(mx.nd.array(a), size=(4, 3), interp=m).asnumpy())
    assert 0 in methods and np.array_equal(got[methods.index(0)], _ref_nearest(a, 3, 4))


def test_area_downscale_by_integer_factor_is_block_mean():
    a = _img(4, 6, dtype=np.float32)
    out = T.Resize((3, 2), interpolation=2)(mx.nd.array(a))
    ref = a.reshape(2, 2, 3, 2, 3).mean(axis=(1, 3))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)


def test_center_crop_and_crop_resize():
    a = _img(8, 10)
    x = mx.nd.array(a, dtype="uint8")
    out = T.CenterCrop((4, 2))(x)                    # width 4, height 2
    np.testing.assert_array_equal(out.asnumpy(), a[3:5, 3:7])
    out = T.CenterCrop(5)(x)
    np.testing.assert_array_equal(out.asnumpy(), a[1:6, 2:7])
    big = T.CenterCrop((20, 16))(x)                  # larger than the image: crop 10x8, resize up
    assert big.shape == (16, 20, 3) and big.dtype == np.uint8
    cr = T.CropResize(2, 1, 5, 3)(x)
    np.testing.assert_array_equal(cr.asnumpy(), a[1:4, 2:7])
    crs = T.CropResize(2, 1, 5, 3, size=(10, 6), interpolation=0)(x)
    np.testing.assert_array_equal(crs.asnumpy(), _ref_nearest(a[1:4, 2:7], 6, 10))
    with pytest.raises(MXNetError, match="does not fit"):
        T.CropResize(8, 0, 5, 3)(x)


def test_random_resized_crop():
    a = _img(12, 16, dtype=np.float32)
    x = mx.nd.array(a)
    random.seed(0)
    out1 = T.RandomResizedCrop((6, 4))(x)
    random.seed(0)
    out2 = T.RandomResizedCrop((6, 4))(x)
    assert out1.shape == (4, 6, 3)
    np.testing.assert_array_equal(out1.asnumpy(), out2.asnumpy())
    # area 1 and the image's own aspect ratio: the whole image, resized
    full = T.RandomResizedCrop((8, 6), scale=(1.0, 1.0), ratio=(16 / 12, 16 / 12))(x)
    np.testing.assert_allclose(full.asnumpy(), _ref_bilinear(a, 6, 8), rtol=1e-5, atol=1e-3)
    # impossible ratio: falls back to a centre crop
    fb = T.RandomResizedCrop(4, scale=(1.0, 1.0), ratio=(10.0, 10.0))(x)
    np.testing.assert_allclose(fb.asnumpy(), T.CenterCrop(4)(x).asnumpy())


def test_flips():
    a = _img()
    x = mx.nd.array(a, dtype="uint8")
    np.testing.assert_array_equal(T.RandomFlipLeftRight(p=1.0)(x).asnumpy(), a[:, ::-1])
    np.testing.assert_array_equal(T.RandomFlipTopBottom(p=1.0)(x).asnumpy(), a[::-1])
    np.testing.assert_array_equal(T.RandomFlipLeftRight(p=0.0)(x).asnumpy(), a)
    b = np.stack([a, a])
    np.testing.assert_array_equal(T.RandomFlipLeftRight(p=1.0)(mx.nd.array(b)).asnumpy(), b[:, :, ::-1])
    mx.random.seed(1)
    flipped = [bool((T.RandomFlipLeftRight()(x).asnumpy() != a).any()) for _ in range(40)]
    assert 5 < sum(flipped) < 35


def test_rotate():
    a = np.arange(2 * 4 * 4, dtype=np.float32).reshape(2, 4, 4)
    out = T.Rotate(90)(mx.nd.array(a))
    np.testing.assert_allclose(out.asnumpy(), np.rot90(a, axes=(1, 2)), atol=1e-4)
    np.testing.assert_allclose(T.Rotate(0)(mx.nd.array(a)).asnumpy(), a, atol=1e-5)
    r = T.RandomRotation((-10, 10), rotate_with_proba=0.0)(mx.nd.array(a))
    np.testing.assert_array_equal(r.asnumpy(), a)
    with pytest.raises(TypeError, match="float32"):   # MXNet: TypeError, use ToTensor first
        T.Rotate(10)(mx.nd.array(a, dtype="uint8"))


# -- colour -------------------------------------------------------------------------------------------
GRAY = np.array([0.299, 0.587, 0.114])
EIGVAL = np.array([55.46, 4.794, 1.148])
EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


def _solve_alpha(x, y, base):
    """y = base + alpha * (x - base): the least-squares alpha; also returns the max residual."""
    d = (x - base).ravel()
    alpha = float(np.dot(d, (y - base).ravel()) / np.dot(d, d))
    return alpha, np.abs(base + alpha * (x - base) - y).max()


def test_brightness_contrast_saturation_float():
    a = _img(dtype=np.float64) / 255.0
    x = mx.nd.array(a, dtype="float64")
    mx.random.seed(3)
    y = T.RandomBrightness(0.5)(x).asnumpy()
    alpha, res = _solve_alpha(a, y, np.zeros_like(a))
    assert 0.5 <= alpha <= 1.5 and res < 1e-12 and abs(alpha - 1) > 1e-6

    y = T.RandomContrast(0.5)(x).asnumpy()
    mean_gray = (a @ GRAY).mean()
    alpha, res = _solve_alpha(a, y, np.full_like(a, mean_gray))
    assert 0.5 <= alpha <= 1.5 and res < 1e-12

    y = T.RandomSaturation(0.5)(x).asnumpy()
    gray = (a @ GRAY)[..., None]
    alpha, res = _solve_alpha(a, y, np.broadcast_to(gray, a.shape))
    assert 0.5 <= alpha <= 1.5 and res < 1e-12
    np.testing.assert_allclose(y @ GRAY, a @ GRAY, atol=1e-12)   # saturation keeps luma


def _np_hue(x, turns):
    """Rotate the HLS hue of 0-255 RGB pixels by ``turns`` (colorsys, float64)."""
    out = np.empty(x.shape, np.float64)
    for idx in np.ndindex(x.shape[:-1]):
        h, l, s = colorsys.rgb_to_hls(*(x[idx] / 255.0))
        out[idx] = np.array(colorsys.hls_to_rgb((h + turns) % 1.0, l, s)) * 255.0
    return out


def _draw_uniform(seed, lo, hi):
    torch.manual_seed(seed)
    return float(torch.empty((), dtype=torch.float64).uniform_(lo, hi).item())


def test_hue_is_an_hls_rotation():
    a = _img(dtype=np.float64)
    x = mx.nd.array(a, dtype="float64")
    for seed in (0, 7):
        turns = _draw_uniform(seed, 0.8, 1.2)          # RandomHue(h) draws from [1 - h, 1 + h]
        torch.manual_seed(seed)
        out = T.RandomHue(0.2)(x).asnumpy()
        np.testing.assert_allclose(out, _np_hue(a, turns), rtol=1e-6, atol=1e-6)
        # HLS rotation keeps lightness (max + min) per pixel
        np.testing.assert_allclose(out.max(-1) + out.min(-1), a.max(-1) + a.min(-1), atol=1e-6)
        assert np.abs(out - a).max() > 1.0
    # RandomHue(0) draws exactly one full turn: the identity
    np.testing.assert_allclose(T.RandomHue(0.0)(x).asnumpy(), a, atol=1e-6)


def test_uint8_colour_results_are_clamped_then_truncated():
    a = _img(6, 5)
    x = mx.nd.array(a, dtype="uint8")
    for seed in range(4):
        f = _draw_uniform(seed, 0.1, 1.9)
        torch.manual_seed(seed)
        out = T.RandomBrightness(0.9)(x).asnumpy()
        assert out.dtype == np.uint8
        want = np.trunc(np.clip(a.astype(np.float64) * f, 0, 255)).astype(np.uint8)
        assert np.abs(out.astype(int) - want.astype(int)).max() <= 1   # float32 maths at .0 edges
        assert (out == want).mean() > 0.97
    # lighting: a fixed per-channel offset, truncated (not rounded)
    torch.manual_seed(2)
    alpha = torch.empty(3, dtype=torch.float64).normal_(0.0, 0.3).numpy()
    torch.manual_seed(2)
    out = T.RandomLighting(0.3)(x).asnumpy()
    want = np.trunc(np.clip(a + EIGVEC @ (alpha * EIGVAL), 0, 255)).astype(np.uint8)
    assert np.abs(out.astype(int) - want.astype(int)).max() <= 1 and (out == want).mean() > 0.97


def test_uint8_saturates_and_jitter_identity():
    a = np.full((3, 3, 3), 250, np.uint8)
    x = mx.nd.array(a, dtype="uint8")
    mx.random.seed(0)
    outs = [T.RandomBrightness(0.9)(x).asnumpy() for _ in range(20)]
    assert all(o.dtype == np.uint8 for o in outs)
    assert max(o.max() for o in outs) == 255 and min(o.min() for o in outs) < 250
    ident = T.RandomColorJitter()(x)
    assert ident.dtype == np.uint8
    np.testing.assert_array_equal(ident.asnumpy(), a)
    j = T.RandomColorJitter(0.3, 0.3, 0.3, 0.1)(mx.nd.array(_img(), dtype="uint8"))
    assert j.dtype == np.uint8 and j.shape == (5, 7, 3)


def test_color_jitter_steps_in_drawn_order():
    a = _img(4, 3, dtype=np.float64)
    b, c, s, h = 0.4, 0.3, 0.2, 0.1
    torch.manual_seed(6)
    order = torch.randperm(4).tolist()
    v = a.copy()
    for k in order:
        amt = (b, c, s, h)[k]
        f = float(torch.empty((), dtype=torch.float64).uniform_(-amt, amt).item())
        if k == 0:
            v = v * (1 + f)
        elif k == 1:
            v = v * (1 + f) + (v @ GRAY).mean() * (-f)
        elif k == 2:
            v = v * (1 + f) + (v @ GRAY)[..., None] * (-f)
        else:
            v = _np_hue(v, f)
    torch.manual_seed(6)
    out = T.RandomColorJitter(b, c, s, h)(mx.nd.array(a, dtype="float64")).asnumpy()
    np.testing.assert_allclose(out, v, rtol=1e-6, atol=1e-6)


def test_lighting_adds_one_rgb_offset():
    a = _img(dtype=np.float32)
    mx.random.seed(5)
    out = T.RandomLighting(0.1)(mx.nd.array(a)).asnumpy()
    d = out - a
    np.testing.assert_allclose(d, np.broadcast_to(d[0, 0], d.shape), atol=1e-4)
    assert np.abs(d[0, 0]).max() > 0
    np.testing.assert_array_equal(T.RandomLighting(0.0)(mx.nd.array(a)).asnumpy(), a)


# -- composition, blocks, pipelines ----------------------------------------------------------------
def test_compose_and_block_types():
    a = _img()
    c = T.Compose([T.ToTensor(), T.Normalize(0.5, 0.25), lambda t: t * 2])
    assert isinstance(c, Block) and not isinstance(c, HybridBlock)
    for blk in (T.ToTensor(), T.Normalize(), T.Cast(), T.RandomFlipLeftRight(), T.RandomLighting(0.1),
                T.RandomHue(0.1), T.RandomColorJitter()):
        assert isinstance(blk, HybridBlock)
    assert isinstance(T.Resize(4), HybridBlock) and isinstance(T.CropResize(0, 0, 2, 2), HybridBlock)
    assert not isinstance(T.RandomResizedCrop(4), HybridBlock) and not isinstance(T.CenterCrop(4), HybridBlock)
    # consecutive HybridBlocks are grouped into one hybridized HybridSequential (as MXNet)
    assert len(c) == 2 and isinstance(c[0], T.HybridSequential) and len(c[0]) == 2
    assert c[0]._options.active
    out = c(mx.nd.array(a, dtype="uint8"))
    np.testing.assert_allclose(out.asnumpy(), (a.transpose(2, 0, 1) / 255.0 - 0.5) / 0.25 * 2,
                               rtol=1e-5, atol=1e-5)
    assert c[0]._cached_op is not None                 # it ran as a compiled graph
    # a single HybridBlock between Blocks is kept as it is; random interpolation stays eager
    c2 = T.Compose([T.CenterCrop(4), T.ToTensor(), T.RandomResizedCrop(3), T.Resize(2, interpolation=10),
                    T.Resize(2)])
    assert [type(b).__name__ for b in c2] == ["CenterCrop", "ToTensor", "RandomResizedCrop", "Resize", "Resize"]
    np.random.seed(0)
    ra = T.RandomApply(T.RandomFlipLeftRight(p=1.0), p=0.5)
    results = [bool((ra(mx.nd.array(a)).asnumpy() != a).any()) for _ in range(30)]
    assert 0 < sum(results) < 30


def _deterministic_cases():
    u8 = _img(8, 10)
    f32 = _img(8, 10, dtype=np.float32)
    batch = np.stack([u8, _img(8, 10, seed=3)])
    chw = (f32 / 255.0).transpose(2, 0, 1).copy()
    return [
        (T.ToTensor(), u8, lambda x: x.transpose(2, 0, 1) / 255.0),
        (T.ToTensor(), batch, lambda x: x.transpose(0, 3, 1, 2) / 255.0),
        (T.Normalize((0.1, 0.2, 0.3), (0.5, 0.25, 2.0)), chw,
         lambda x: (x - np.array([0.1, 0.2, 0.3])[:, None, None]) / np.array([0.5, 0.25, 2.0])[:, None, None]),
        (T.Cast("float64"), u8, lambda x: x.astype(np.float64)),
        (T.Resize((5, 4), interpolation=0), f32, lambda x: _ref_nearest(x, 4, 5)),
        (T.Resize((13, 11)), f32, lambda x: _ref_bilinear(x, 11, 13)),
        (T.Resize(4, keep_ratio=True), f32, lambda x: _ref_bilinear(x, 4, 5)),
        (T.CropResize(2, 1, 5, 3), u8, lambda x: x[1:4, 2:7]),
        (T.CropResize(2, 1, 5, 3, size=(10, 6), interpolation=0), u8, lambda x: _ref_nearest(x[1:4, 2:7], 6, 10)),
        (T.RandomFlipLeftRight(p=1.0), u8, lambda x: x[:, ::-1]),
        (T.RandomFlipTopBottom(p=1.0), batch, lambda x: x[:, ::-1]),
        (T.RandomFlipLeftRight(p=0.0), u8, lambda x: x),
        (T.RandomColorJitter(), u8, lambda x: x),
    ]


@pytest.mark.parametrize("case", range(13))
def test_transform_eager_equals_hybridized(case):
    block, a, ref = _deterministic_cases()[case]
    x = mx.nd.array(a, dtype=a.dtype)
    eager = block(x).asnumpy()
    np.testing.assert_allclose(eager, ref(a.astype(np.float64)), rtol=1e-5, atol=1e-3)
    block.hybridize()
    hyb = block(x).asnumpy()
    assert block._cached_op is not None
    assert hyb.dtype == eager.dtype and hyb.shape == eager.shape
    np.testing.assert_array_equal(hyb, eager)
    # inside another hybridized network too
    net = nn.HybridSequential()
    net.add(block)
    net.hybridize()
    np.testing.assert_array_equal(net(x).asnumpy(), eager)


def test_random_transforms_hybridized_follow_the_same_draws():
    a = _img(6, 5)
    x = mx.nd.array(a, dtype="uint8")
    for block in (T.RandomFlipLeftRight(), T.RandomFlipTopBottom(), T.RandomBrightness(0.5), T.RandomContrast(0.5),
                  T.RandomSaturation(0.5), T.RandomHue(0.3), T.RandomColorJitter(0.3, 0.3, 0.3, 0.1),
                  T.RandomLighting(0.2)):
        torch.manual_seed(11)
        eager = [block(x).asnumpy() for _ in range(4)]
        block.hybridize()
        torch.manual_seed(11)
        hyb = [block(x).asnumpy() for _ in range(4)]
        for e, h in zip(eager, hyb):
            np.testing.assert_array_equal(e, h)
        assert any(not np.array_equal(h, hyb[0]) for h in hyb[1:]), type(block).__name__  # drawn per call


def test_hybridized_compose_exports_image_graph(tmp_path):
    a = _img(8, 10)
    x = mx.nd.array(a, dtype="uint8")
    c = T.Compose([T.CropResize(1, 1, 8, 6), T.Resize((4, 3)), T.RandomFlipLeftRight(), T.ToTensor(),
                   T.Normalize((0.4, 0.5, 0.6), (0.2, 0.3, 0.4))])
    assert len(c) == 1
    torch.manual_seed(0)
    out = c(x).asnumpy()
    flipped = _draw_uniform(0, 0.0, 1.0) < 0.5
    r = _ref_bilinear(a[1:7, 1:9], 3, 4)
    r = np.round(r)[:, ::-1] if flipped else np.round(r)
    ref = (r.transpose(2, 0, 1) / 255.0 - np.array([0.4, 0.5, 0.6])[:, None, None]) \
        / np.array([0.2, 0.3, 0.4])[:, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    c[0].export(str(tmp_path / "aug"))
    sym_file, params_file = str(tmp_path / "aug-symbol.json"), str(tmp_path / "aug-0000.params")
    ops = [n["op"] for n in json.load(open(sym_file))["nodes"]]
    assert ops == ["null", "_image_crop", "_image_resize", "_image_random_flip_left_right", "_image_to_tensor",
                   "_image_normalize"]
    nodes = json.load(open(sym_file))["nodes"]
    assert nodes[2]["attrs"]["size"] == "(4, 3)" and "p" not in nodes[3].get("attrs", {})
    # the exported graph loads back and computes the same thing
    back = mx.gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    torch.manual_seed(0)
    np.testing.assert_array_equal(back(x).asnumpy(), out)


def test_eager_only_transforms_refuse_tracing_with_a_clear_error():
    with pytest.raises(MXNetError, match="CenterCrop is an eager Block"):
        T.CenterCrop(4)(mx.sym.var("data"))
    net = nn.HybridSequential()
    with pytest.raises(ValueError, match="HybridBlock"):
        net.add(T.RandomResizedCrop(4))
    rz = T.Resize(4, interpolation=10)
    rz.hybridize()
    with pytest.raises(MXNetError, match="interpolation=10"):
        rz(mx.nd.zeros((6, 6, 3)))


def test_transform_first_pipeline_with_workers():
    imgs = np.stack([_img(seed=i) for i in range(10)])
    ds = gdata.ArrayDataset(mx.nd.array(imgs, dtype="uint8"), np.arange(10, dtype=np.int32))
    tr = T.Compose([T.Resize((4, 3)), T.ToTensor(), T.Normalize((0.4, 0.5, 0.6), (0.2, 0.2, 0.2))])
    ds = ds.transform_first(tr)
    ref = [(d.asnumpy(), l.asnumpy()) for d, l in gdata.DataLoader(ds, 4)]
    got = [(d.asnumpy(), l.asnumpy()) for d, l in gdata.DataLoader(ds, 4, num_workers=2)]
    assert ref[0][0].shape == (4, 3, 3, 4) and ref[0][0].dtype == np.float32
    for (d0, l0), (d1, l1) in zip(ref, got):
        np.testing.assert_array_equal(d0, d1)
        np.testing.assert_array_equal(l0, l1)
