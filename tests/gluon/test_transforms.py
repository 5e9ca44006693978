"""gluon.data.vision.transforms against NumPy references (OpenCV pixel conventions)."""
import random

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.gluon import data as gdata
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
    with pytest.raises(MXNetError, match="interpolation"):
        T.Resize(2, interpolation=7)(x)


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
    with pytest.raises(MXNetError, match="float"):
        T.Rotate(10)(mx.nd.array(a, dtype="uint8"))


# -- colour -------------------------------------------------------------------------------------------
GRAY = np.array([0.299, 0.587, 0.114])


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


def test_hue_rotation_matches_yiq_reference():
    from hybridnet.gluon.data.vision.transforms import _hue
    import torch
    a = _img(dtype=np.float64)
    tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    for alpha in (0.0, 0.1, -0.3):
        yiq = a @ tyiq.T
        th = alpha * np.pi
        i, q = yiq[..., 1].copy(), yiq[..., 2].copy()
        yiq[..., 1] = np.cos(th) * i - np.sin(th) * q
        yiq[..., 2] = np.sin(th) * i + np.cos(th) * q
        ref = yiq @ np.linalg.inv(tyiq).T
        out = _hue(torch.from_numpy(a), alpha).numpy()
        np.testing.assert_allclose(out, ref, atol=1.0)   # MXNet's ITYIQ is a rounded inverse (~0.3%)
    mx.random.seed(0)
    x = mx.nd.array(a, dtype="float64")
    out = T.RandomHue(0.2)(x).asnumpy()
    np.testing.assert_allclose(out @ GRAY, a @ GRAY, atol=1.0)   # hue keeps luma (Y)


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
    assert isinstance(c, Block)
    assert isinstance(T.ToTensor(), HybridBlock) and isinstance(T.RandomResizedCrop(4), Block)
    c.hybridize()                      # accepted; transforms keep running eagerly
    out = c(mx.nd.array(a, dtype="uint8"))
    np.testing.assert_allclose(out.asnumpy(), (a.transpose(2, 0, 1) / 255.0 - 0.5) / 0.25 * 2,
                               rtol=1e-5, atol=1e-5)
    np.random.seed(0)
    ra = T.RandomApply(T.RandomFlipLeftRight(p=1.0), p=0.5)
    results = [bool((ra(mx.nd.array(a)).asnumpy() != a).any()) for _ in range(30)]
    assert 0 < sum(results) < 30


def test_transform_in_hybridized_graph_is_refused():
    nn = pytest.importorskip("hybridnet.gluon.nn")
    net = nn.HybridSequential()
    net.add(T.Cast("float32"))
    net.hybridize()
    with pytest.raises(MXNetError, match="eagerly"):
        net(mx.nd.ones((2, 2, 3)))


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
