"""The image operators: deterministic ones against NumPy, random ones against NumPy references
fed with the same draws from torch's generator, agreement with the eager vision transforms,
hybridization (random operators draw on every call, shape inference draws nothing)."""
from __future__ import annotations

import colorsys

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import nd
from hybridnet.base import MXNetError
from hybridnet.gluon.data.vision import transforms as T

R = np.random.RandomState(11)
GRAY = np.array([0.299, 0.587, 0.114])
EIGVAL = np.array([55.46, 4.794, 1.148])
EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])

NAMES = ("to_tensor normalize resize crop flip_left_right flip_top_bottom random_flip_left_right "
         "random_flip_top_bottom random_brightness random_contrast random_saturation random_hue "
         "random_color_jitter adjust_lighting random_lighting").split()


def A(x, dtype=None):
    x = np.asarray(x)
    return nd.array(x, dtype=dtype or x.dtype)


def img_u8(*shape):
    return R.randint(0, 256, shape).astype(np.uint8)


def img_f(*shape):
    return R.uniform(0, 255, shape).astype(np.float32)


def draw_uniform(seed, lo, hi):
    torch.manual_seed(seed)
    return float(torch.empty((), dtype=torch.float64).uniform_(lo, hi).item())


def saturate(v, dtype):
    if np.dtype(dtype) == np.uint8:
        return np.trunc(np.clip(v, 0, 255)).astype(np.uint8)
    return v.astype(dtype)


def np_contrast(x, a):
    gray = (x @ GRAY) if x.shape[-1] == 3 else x[..., 0]
    mean = gray.mean(axis=(-2, -1))[..., None, None, None]
    return x * a + mean * (1 - a)


def np_saturation(x, a):
    return x * a + (x @ GRAY)[..., None] * (1 - a)


def np_hue(x, a):
    out = np.empty_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape[:-1]):
        h, l, s = colorsys.rgb_to_hls(*(x[idx] / 255.0))
        out[idx] = np.array(colorsys.hls_to_rgb((h + a) % 1.0, l, s)) * 255.0
    return out


@pytest.mark.parametrize("name", NAMES)
def test_image_names_exist_in_nd_and_sym(name):
    assert callable(getattr(nd.image, name))
    assert callable(getattr(mx.sym.image, name))


# ---- deterministic operators ------------------------------------------------------------------
def test_to_tensor_and_normalize():
    x = img_u8(2, 4, 5, 3)
    t = nd.image.to_tensor(A(x))
    assert t.dtype == np.float32 and t.shape == (2, 3, 4, 5)
    np.testing.assert_allclose(t.asnumpy(), x.transpose(0, 3, 1, 2) / 255.0, rtol=1e-6)
    n = nd.image.normalize(t, mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0))
    ref = (x.transpose(0, 3, 1, 2) / 255.0 - np.array([0.1, 0.2, 0.3])[:, None, None]) \
        / np.array([0.5, 0.25, 2.0])[:, None, None]
    np.testing.assert_allclose(n.asnumpy(), ref, rtol=1e-5)
    with pytest.raises(MXNetError, match="channels"):
        nd.image.normalize(t, mean=(0.1, 0.2), std=1.0)
    with pytest.raises(MXNetError, match="non-zero"):
        nd.image.normalize(t, std=0.0)
    with pytest.raises(MXNetError, match="to_tensor"):
        nd.image.to_tensor(A(np.zeros((4, 3), np.uint8)))


def test_to_tensor_and_normalize_match_the_transforms():
    x = A(img_u8(6, 5, 3))
    a = T.Normalize((0.4, 0.5, 0.6), (0.2, 0.3, 0.4))(T.ToTensor()(x))
    b = nd.image.normalize(nd.image.to_tensor(x), mean=(0.4, 0.5, 0.6), std=(0.2, 0.3, 0.4))
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)


def test_resize_shapes_and_modes():
    x = img_u8(6, 4, 3)
    assert nd.image.resize(A(x), size=(5, 2)).shape == (2, 5, 3)            # (width, height)
    assert nd.image.resize(A(x), size=3).shape == (3, 3, 3)
    assert nd.image.resize(A(x), size=2, keep_ratio=True).shape == (3, 2, 3)  # short side 2
    assert nd.image.resize(A(img_u8(2, 4, 6, 1)), size=2, keep_ratio=True).shape == (2, 2, 3, 1)
    near = nd.image.resize(A(x), size=(2, 3), interp=0).asnumpy()
    np.testing.assert_array_equal(near, x[::2, ::2])
    assert nd.image.resize(A(x), size=(2, 3), interp=9).dtype == np.uint8
    with pytest.raises(MXNetError, match="interp"):
        nd.image.resize(A(x), size=2, interp=7)
    with pytest.raises(MXNetError, match="size"):
        nd.image.resize(A(x), size=(1, 2, 3))


@pytest.mark.parametrize("interp", [0, 1, 2, 3])
def test_resize_matches_the_transform(interp):
    x = A(img_f(7, 9, 3))
    a = T.Resize((5, 4), interpolation=interp)(x)
    b = nd.image.resize(x, size=(5, 4), interp=interp)
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-3)


def test_crop_and_flips():
    x = img_f(2, 5, 6, 3)
    np.testing.assert_array_equal(nd.image.crop(A(x), x=1, y=2, width=3, height=2).asnumpy(), x[:, 2:4, 1:4])
    np.testing.assert_array_equal(nd.image.flip_left_right(A(x)).asnumpy(), x[:, :, ::-1])
    np.testing.assert_array_equal(nd.image.flip_top_bottom(A(x[0])).asnumpy(), x[0][::-1])
    with pytest.raises(MXNetError, match="does not fit"):
        nd.image.crop(A(x), x=4, y=0, width=3, height=2)


def test_adjust_lighting_values_and_truncation():
    alpha = (0.5, -1.0, 2.0)
    off = EIGVEC @ (np.array(alpha) * EIGVAL)
    x = img_f(3, 4, 3)
    np.testing.assert_allclose(nd.image.adjust_lighting(A(x), alpha=alpha).asnumpy(), x + off, rtol=1e-5)
    u = img_u8(3, 4, 3)
    got = nd.image.adjust_lighting(A(u), alpha=alpha).asnumpy()
    np.testing.assert_array_equal(got, saturate(u + off, np.uint8))
    with pytest.raises(MXNetError, match="3 values"):
        nd.image.adjust_lighting(A(u), alpha=(1.0, 2.0))


# ---- random operators --------------------------------------------------------------------------
def test_random_flips_follow_torch_draws_and_the_transforms():
    x = A(img_u8(3, 4, 3))
    flips = 0
    for seed in range(12):
        u = draw_uniform(seed, 0.0, 1.0)
        torch.manual_seed(seed)
        got = nd.image.random_flip_left_right(x).asnumpy()
        want = x.asnumpy()[:, ::-1] if u < 0.5 else x.asnumpy()
        np.testing.assert_array_equal(got, want)
        torch.manual_seed(seed)
        np.testing.assert_array_equal(T.RandomFlipLeftRight()(x).asnumpy(), got)
        torch.manual_seed(seed)
        tb = nd.image.random_flip_top_bottom(x).asnumpy()
        np.testing.assert_array_equal(tb, x.asnumpy()[::-1] if u < 0.5 else x.asnumpy())
        flips += u < 0.5
    assert 0 < flips < 12
    torch.manual_seed(0)
    assert np.array_equal(nd.image.random_flip_left_right(x, p=1.0).asnumpy(), x.asnumpy()[:, ::-1])


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
def test_random_brightness_contrast_saturation(dtype):
    x = img_u8(2, 3, 4, 3) if dtype == "uint8" else img_f(2, 3, 4, 3)
    xf = x.astype(np.float64)
    cases = [("random_brightness", lambda v, a: v * a), ("random_contrast", np_contrast),
             ("random_saturation", np_saturation)]
    for name, ref in cases:
        a = draw_uniform(5, 0.3, 1.7)
        torch.manual_seed(5)
        got = getattr(nd.image, name)(A(x), min_factor=0.3, max_factor=1.7).asnumpy()
        assert got.dtype == np.dtype(dtype)
        want = saturate(ref(xf, a), dtype)
        if dtype == "uint8":
            assert np.abs(got.astype(int) - want.astype(int)).max() <= 1, name
            assert (got == want).mean() > 0.95, name
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3, err_msg=name)


def test_random_contrast_one_channel_uses_the_mean():
    x = img_f(4, 5, 1)
    a = draw_uniform(3, 0.5, 0.5)
    got = nd.image.random_contrast(A(x), min_factor=0.5, max_factor=0.5).asnumpy()
    np.testing.assert_allclose(got, x * a + x.mean() * (1 - a), rtol=1e-5)
    np.testing.assert_array_equal(nd.image.random_saturation(A(x), min_factor=0.1, max_factor=0.2).asnumpy(), x)


@pytest.mark.parametrize("name,cls", [("random_brightness", T.RandomBrightness), ("random_contrast", T.RandomContrast),
                                      ("random_saturation", T.RandomSaturation)])
def test_random_colour_ops_match_the_transforms_on_float_images(name, cls):
    x = A(img_f(5, 4, 3))
    torch.manual_seed(9)
    a = cls(0.4)(x).asnumpy()
    torch.manual_seed(9)
    b = getattr(nd.image, name)(x, min_factor=0.6, max_factor=1.4).asnumpy()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("lo,hi", [(0.1, 0.4), (0.8, 1.2), (-0.3, -0.1)])
def test_random_hue_rotates_hls_hue(lo, hi):
    x = img_f(3, 4, 3)
    if lo < 0:
        with pytest.raises(MXNetError, match="min_factor"):
            nd.image.random_hue(A(x), min_factor=lo, max_factor=hi)
        return
    a = draw_uniform(21, lo, hi)
    torch.manual_seed(21)
    got = nd.image.random_hue(A(x), min_factor=lo, max_factor=hi).asnumpy()
    np.testing.assert_allclose(got, np_hue(x.astype(np.float64), a), rtol=1e-4, atol=2e-3)


def test_random_hue_uint8_and_gray_images():
    u = img_u8(4, 4, 3)
    a = draw_uniform(2, 0.25, 0.25)
    got = nd.image.random_hue(A(u), min_factor=0.25, max_factor=0.25).asnumpy().astype(int)
    assert np.abs(got - saturate(np_hue(u.astype(np.float64), a), np.uint8).astype(int)).max() <= 1
    g = img_u8(3, 3, 1)
    np.testing.assert_array_equal(nd.image.random_hue(A(g), min_factor=0.2, max_factor=0.3).asnumpy(), g)


def test_random_color_jitter_applies_the_drawn_steps_in_the_drawn_order():
    x = img_f(2, 3, 3, 3)
    b, c, s, h = 0.4, 0.3, 0.2, 0.1
    torch.manual_seed(13)
    order = torch.randperm(4).tolist()
    v = x.astype(np.float64)
    for k in order:
        lo = {0: b, 1: c, 2: s, 3: h}[k]
        a = float(torch.empty((), dtype=torch.float64).uniform_(-lo, lo).item())
        v = {0: lambda v: v * (1 + a), 1: lambda v: np_contrast(v, 1 + a), 2: lambda v: np_saturation(v, 1 + a),
             3: lambda v: np_hue(v, a)}[k](v)
    torch.manual_seed(13)
    got = nd.image.random_color_jitter(A(x), brightness=b, contrast=c, saturation=s, hue=h).asnumpy()
    np.testing.assert_allclose(got, v, rtol=1e-4, atol=5e-3)
    # disabled steps draw nothing and change nothing
    torch.manual_seed(1)
    same = nd.image.random_color_jitter(A(x), brightness=0, contrast=0, saturation=0, hue=0).asnumpy()
    np.testing.assert_array_equal(same, x)


def test_random_lighting_draws_three_normals():
    x = img_f(3, 3, 3)
    torch.manual_seed(4)
    a = torch.empty(3, dtype=torch.float64).normal_(0.0, 0.2).numpy()
    torch.manual_seed(4)
    got = nd.image.random_lighting(A(x), alpha_std=0.2).asnumpy()
    np.testing.assert_allclose(got, x + EIGVEC @ (a * EIGVAL), rtol=1e-5)
    torch.manual_seed(4)
    np.testing.assert_allclose(T.RandomLighting(0.2)(A(x)).asnumpy(), got, rtol=1e-6)
    np.testing.assert_array_equal(nd.image.random_lighting(A(x), alpha_std=0.0).asnumpy(), x)


def test_batched_random_ops_share_one_factor():
    x = img_f(3, 2, 2, 3)
    torch.manual_seed(8)
    got = nd.image.random_brightness(A(x), min_factor=0.1, max_factor=2.0).asnumpy()
    ratio = got / x
    np.testing.assert_allclose(ratio, np.full_like(ratio, ratio.flat[0]), rtol=1e-5)


# ---- symbols and hybridization ------------------------------------------------------------------
def test_shape_inference_does_not_draw():
    x = mx.sym.var("x")
    y = mx.sym.image.random_brightness(mx.sym.image.random_flip_left_right(x), min_factor=0.5, max_factor=1.5)
    z = mx.sym.image.to_tensor(mx.sym.image.resize(y, size=(8, 6)))
    torch.manual_seed(0)
    state = torch.get_rng_state()
    _, shapes, _ = z.infer_shape(x=(10, 12, 3))
    assert shapes == [(3, 6, 8)]
    assert torch.equal(state, torch.get_rng_state())


class _Pipeline(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        x = F.image.random_flip_left_right(x)
        x = F.image.to_tensor(x)
        return F.image.normalize(x, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))


def test_hybridized_pipeline_matches_eager_and_draws_every_call():
    x = A(img_u8(4, 5, 3))
    net = _Pipeline()
    torch.manual_seed(3)
    eager = [net(x).asnumpy() for _ in range(8)]
    net.hybridize()
    torch.manual_seed(3)
    hybrid = [net(x).asnumpy() for _ in range(8)]
    for e, h in zip(eager, hybrid):
        np.testing.assert_allclose(e, h, rtol=1e-6)
    flipped = [np.allclose(h, hybrid[0]) for h in hybrid]
    assert not all(flipped)        # both outcomes occur: the flip is drawn per call


def test_image_ops_json_round_trip():
    x = mx.sym.var("x")
    y = mx.sym.image.normalize(mx.sym.image.to_tensor(x), mean=(0.1, 0.2, 0.3), std=(0.3, 0.2, 0.1))
    y = mx.sym.image.random_color_jitter(y, brightness=0.1, contrast=0.2, saturation=0.3, hue=0.05)
    text = y.tojson()
    assert "_image_random_color_jitter" in text and "_image_normalize" in text
    assert mx.sym.load_json(text).tojson() == text
