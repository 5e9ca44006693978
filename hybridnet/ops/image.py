"""Image operators (MXNet 1.9.1's ``_image_*``: ``nd.image.*`` / ``sym.image.*``, the kernels
behind ``gluon.data.vision.transforms``).

Layouts follow MXNet: images are HWC (or batched NHWC) with 1 or 3 channels; ``to_tensor``
turns them into CHW (NCHW) float32 divided by 255, and ``normalize`` works on CHW (NCHW).
The colour operators compute in single precision (double for float64 images) and write the
input dtype back as MXNet's ``saturate_cast`` does: floats unchanged, uint8 clamped to
[0, 255] and truncated, other integers truncated. ``resize`` follows OpenCV (pixel centres;
0 nearest, 1 bilinear, 2 area, 3 bicubic, 4 lanczos done as bicubic, 9 auto) and rounds
integer results.

Random operators (flips, brightness, contrast, saturation, hue, colour jitter, lighting) are
``random=True`` and draw from torch's default generator (``mx.random.seed``): one draw per
call, shared by all images of a batch. They draw nothing when run on "meta" tensors (shape
inference), so a hybridized graph draws exactly once per call.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..base import MXNetError
from .attrs import AnyValue, Shape
from ._helpers import floats as _floats
from .registry import Sample, register

__all__: list = []

_R = np.random.RandomState(4242)
_GRAY = (0.299, 0.587, 0.114)
# AlexNet-style PCA lighting (ImageNet eigenvalues / eigenvectors, 0-255 scale), as MXNet.
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


# ---- helpers ----------------------------------------------------------------------------------
def _meta(t: Tensor) -> bool:
    return t.device.type == "meta"


def _check_image(t: Tensor, who: str, layout: str = "HWC") -> None:
    if t.dim() not in (3, 4):
        raise MXNetError(f"{who}: expected a 3-d ({layout}) or 4-d (N{layout}) image, got shape "
                         f"{tuple(t.shape)}")


def _check_color(t: Tensor, who: str) -> int:
    """Channels (last axis) of an HWC/NHWC image; MXNet's colour ops take 1 or 3."""
    _check_image(t, who)
    c = int(t.shape[-1])
    if c not in (1, 3):
        raise MXNetError(f"{who}: the last axis of an HWC image must hold 1 or 3 channels, got shape "
                         f"{tuple(t.shape)}")
    return c


def _work(t: Tensor) -> Tensor:
    """The image in the precision the colour maths uses (float32; float64 stays float64)."""
    return t if t.dtype in (torch.float32, torch.float64) else t.to(torch.float32)


def _saturate(res: Tensor, dtype: torch.dtype) -> Tensor:
    """MXNet's saturate_cast back to the image dtype: uint8 clamped and truncated."""
    if dtype.is_floating_point:
        return res.to(dtype)
    if dtype == torch.uint8:
        return res.clamp(0.0, 255.0).to(torch.uint8)
    return res.to(dtype)


def _uniform(lo: float, hi: float) -> float:
    """One draw from U(lo, hi) on torch's generator (lo when the range is empty)."""
    if hi > lo:
        return float(torch.empty((), dtype=torch.float64).uniform_(lo, hi).item())
    return float(lo)


def _hw(t: Tensor) -> tuple:
    return (int(t.shape[0]), int(t.shape[1])) if t.dim() == 3 else (int(t.shape[1]), int(t.shape[2]))


def _img(*shape: int) -> np.ndarray:
    return _R.randint(0, 256, shape).astype(np.uint8)


def _same(x: np.ndarray, **_: Any) -> np.ndarray:
    return x


# ---- to_tensor / normalize --------------------------------------------------------------------
def _np_to_tensor(x: np.ndarray) -> np.ndarray:
    perm = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
    return (x.astype(np.float32) / np.float32(255.0)).transpose(perm)


@register("_image_to_tensor", differentiable=False, samples=lambda: [
    Sample((_img(4, 5, 3),), ref=_np_to_tensor), Sample((_img(2, 3, 4, 1),), ref=_np_to_tensor),
    Sample((_R.uniform(0, 255, (3, 2, 3)),), ref=_np_to_tensor)])
def _image_to_tensor(data: Tensor) -> Tensor:
    """HWC (NHWC) image -> CHW (NCHW) float32 divided by 255 (MXNet's image.to_tensor)."""
    _check_image(data, "to_tensor")
    perm = (2, 0, 1) if data.dim() == 3 else (0, 3, 1, 2)
    return data.permute(*perm).to(torch.float32).div(255.0).contiguous()


def _per_channel(values: tuple, c: int, who: str, name: str) -> tuple:
    if len(values) == 1:
        return values * c
    if len(values) < c:
        raise MXNetError(f"{who}: {name} has {len(values)} values but the input has {c} channels; "
                         f"give 1 or {c} values")
    return values[:c]


def _np_normalize(x, mean=(0.0,), std=(1.0,)):
    c = x.shape[-3]
    m = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    s = np.atleast_1d(np.asarray(std, dtype=np.float64))
    m = np.repeat(m, c) if m.size == 1 else m[:c]
    s = np.repeat(s, c) if s.size == 1 else s[:c]
    out = (x - m.reshape(-1, 1, 1)) / s.reshape(-1, 1, 1)
    return out.astype(x.dtype if x.dtype.kind == "f" else np.float32)


@register("_image_normalize", samples=lambda: [
    Sample((_R.uniform(0, 1, (3, 4, 5)),), {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)},
           ref=_np_normalize),
    Sample((_R.uniform(0, 1, (2, 1, 3, 3)),), {"mean": 0.5, "std": 0.25}, ref=_np_normalize),
    Sample((_R.uniform(0, 1, (2, 3, 2, 2)),), {"mean": (0.1, 0.2, 0.3, 0.0), "std": (2.0,)}, ref=_np_normalize)])
def _image_normalize(data: Tensor, *, mean: AnyValue = (0.0, 0.0, 0.0, 0.0),
                     std: AnyValue = (1.0, 1.0, 1.0, 1.0)) -> Tensor:
    """``(data[c] - mean[c]) / std[c]`` per channel of a CHW (NCHW) tensor (MXNet's
    image.normalize); one value applies to every channel. Integer input gives float32."""
    _check_image(data, "normalize", "CHW")
    c = int(data.shape[-3])
    m = _per_channel(_floats(mean, "normalize", "mean"), c, "normalize", "mean")
    s = _per_channel(_floats(std, "normalize", "std"), c, "normalize", "std")
    if any(v == 0 for v in s):
        raise MXNetError(f"normalize: std must be non-zero, got {std!r}")
    x = _work(data) if not data.dtype.is_floating_point else data
    mt = torch.tensor(m, dtype=x.dtype, device=x.device).reshape(-1, 1, 1)
    st = torch.tensor(s, dtype=x.dtype, device=x.device).reshape(-1, 1, 1)
    return (x - mt) / st


# ---- resize / crop / flips --------------------------------------------------------------------
_INTERP = {0: "nearest", 1: "bilinear", 2: "area", 3: "bicubic", 4: "bicubic"}


def _resize_hw(h: int, w: int, size: Any, keep_ratio: bool) -> tuple:
    """(height, width) of MXNet's image.resize: size is (width, height) or one int."""
    s = (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(v) for v in size)
    if len(s) == 1:
        if s[0] <= 0:
            raise MXNetError(f"resize: size must be positive, got {size!r}")
        if not keep_ratio:
            return s[0], s[0]
        if h > w:
            return h * s[0] // w, s[0]
        return s[0], w * s[0] // h
    if len(s) == 2:
        if s[0] <= 0 or s[1] <= 0:
            raise MXNetError(f"resize: width and height must be positive, got size={size!r}")
        return s[1], s[0]
    raise MXNetError(f"resize: size must be an int or (width, height), got {size!r}")


def _interp_mode(interp: int, src: tuple, dst: tuple) -> str:
    if interp == 9:      # OpenCV-style auto: area to shrink, bicubic to enlarge
        return "area" if (dst[0] < src[0] or dst[1] < src[1]) else "bicubic"
    if interp not in _INTERP:
        raise MXNetError(f"resize: unsupported interp={interp!r}; use 0 (nearest), 1 (bilinear), 2 (area), "
                         f"3 (bicubic), 4 (lanczos, done as bicubic) or 9 (auto)")
    return _INTERP[interp]


def _np_resize(x, size=(), keep_ratio=False, interp=1):
    batched = x.ndim == 4
    xs = x if batched else x[None]
    H, W = xs.shape[1:3]
    oh, ow = _resize_hw(H, W, size, keep_ratio)
    xf = xs.astype(np.float64)

    def axis_weights(n_in, n_out):
        m = np.zeros((n_out, n_in))
        scale = n_in / n_out
        for o in range(n_out):
            if interp == 0:
                m[o, min(int(np.floor(o * scale)), n_in - 1)] = 1.0
            else:
                src = max((o + 0.5) * scale - 0.5, 0.0)
                i0 = int(np.floor(src))
                i1 = i0 + 1 if i0 < n_in - 1 else i0
                lam = src - i0
                m[o, i0] += 1 - lam
                m[o, i1] += lam
        return m
    my, mx = axis_weights(H, oh), axis_weights(W, ow)
    out = np.einsum("oh,nhwc,pw->nopc", my, xf, mx)
    if x.dtype.kind != "f":
        out = np.clip(np.round(out), 0, 255)
    out = out.astype(x.dtype)
    return out if batched else out[0]


@register("_image_resize", differentiable=False, samples=lambda: [
    Sample((_img(5, 7, 3),), {"size": (4, 3)}, ref=_np_resize),
    Sample((_img(2, 4, 6, 1),), {"size": 3, "keep_ratio": True, "interp": 0}, ref=_np_resize),
    Sample((_R.uniform(0, 1, (3, 4, 2)),), {"size": (6, 5)}, ref=_np_resize),
    Sample((_R.uniform(0, 1, (6, 3, 3)),), {"size": 4, "keep_ratio": True}, ref=_np_resize)])
def _image_resize(data: Tensor, *, size: Shape = (), keep_ratio: bool = False, interp: int = 1) -> Tensor:
    """Resize an HWC (NHWC) image to ``size`` = (width, height), or one int: a square, or with
    ``keep_ratio`` the shorter side (MXNet's image.resize, OpenCV conventions). Integer images
    are rounded and saturated."""
    _check_image(data, "resize")
    h, w = _hw(data)
    oh, ow = _resize_hw(h, w, size, keep_ratio)
    out_shape = (oh, ow, data.shape[-1]) if data.dim() == 3 else (data.shape[0], oh, ow, data.shape[-1])
    if _meta(data):
        return torch.empty(out_shape, dtype=data.dtype, device="meta")
    mode = _interp_mode(int(interp), (h, w), (oh, ow))
    if (oh, ow) == (h, w):
        return data.clone()
    x = (data if data.dim() == 4 else data.unsqueeze(0)).permute(0, 3, 1, 2)
    # integer images are interpolated in double precision so that rounding is exact
    x = x if x.dtype in (torch.float32, torch.float64) else x.to(torch.float64)
    kwargs = {"align_corners": False} if mode in ("bilinear", "bicubic") else {}
    y = F.interpolate(x, size=(oh, ow), mode=mode, **kwargs).permute(0, 2, 3, 1)
    y = y if data.dim() == 4 else y[0]
    if data.dtype.is_floating_point:
        return y.to(data.dtype).contiguous()
    info = torch.iinfo(data.dtype)
    return torch.round(y).clamp_(info.min, info.max).to(data.dtype).contiguous()


def _np_crop(x, x0=0, y0=0, width=0, height=0, **_):
    return x[..., y0:y0 + height, x0:x0 + width, :]


@register("_image_crop", returns_view=True, samples=lambda: [
    Sample((_R.uniform(0, 1, (5, 6, 3)),), {"x": 1, "y": 2, "width": 4, "height": 2},
           ref=lambda d, x, y, width, height: d[y:y + height, x:x + width]),
    Sample((_img(2, 4, 4, 1),), {"x": 0, "y": 1, "width": 3, "height": 3},
           ref=lambda d, x, y, width, height: d[:, y:y + height, x:x + width])])
def _image_crop(data: Tensor, *, x: int, y: int, width: int, height: int) -> Tensor:
    """The box (x, y, width, height) of an HWC (NHWC) image (MXNet's image.crop)."""
    _check_image(data, "crop")
    H, W = _hw(data)
    if x < 0 or y < 0 or width <= 0 or height <= 0 or x + width > W or y + height > H:
        raise MXNetError(f"crop: box x={x}, y={y}, width={width}, height={height} does not fit in an "
                         f"image of width {W} and height {H} (shape {tuple(data.shape)})")
    return data[..., y:y + height, x:x + width, :]


@register("_image_flip_left_right", samples=lambda: [
    Sample((_R.uniform(0, 1, (3, 4, 3)),), ref=lambda x: x[:, ::-1]),
    Sample((_img(2, 2, 3, 1),), ref=lambda x: x[:, :, ::-1])])
def _image_flip_left_right(data: Tensor) -> Tensor:
    """Mirror an HWC (NHWC) image horizontally (MXNet's image.flip_left_right)."""
    _check_image(data, "flip_left_right")
    return torch.flip(data, dims=(-2,))


@register("_image_flip_top_bottom", samples=lambda: [
    Sample((_R.uniform(0, 1, (3, 4, 3)),), ref=lambda x: x[::-1]),
    Sample((_img(2, 2, 3, 1),), ref=lambda x: x[:, ::-1])])
def _image_flip_top_bottom(data: Tensor) -> Tensor:
    """Mirror an HWC (NHWC) image vertically (MXNet's image.flip_top_bottom)."""
    _check_image(data, "flip_top_bottom")
    return torch.flip(data, dims=(-3,))


def _random_flip(data: Tensor, p: float, dim: int, who: str) -> Tensor:
    _check_image(data, who)
    if _meta(data):
        return torch.empty_like(data)
    if _uniform(0.0, 1.0) < p:
        return torch.flip(data, dims=(dim,))
    return data.clone()


@register("_image_random_flip_left_right", random=True, differentiable=False, samples=lambda: [
    Sample((_img(3, 4, 3),), ref=_same), Sample((_R.uniform(0, 1, (2, 3, 4, 1)),), ref=_same)])
def _image_random_flip_left_right(data: Tensor, *, p: float = 0.5) -> Tensor:
    """Mirror an HWC (NHWC) image horizontally with probability ``p`` (MXNet: 0.5; ``p`` is a
    hybridnet extension): flips when U(0, 1) < p."""
    return _random_flip(data, p, -2, "random_flip_left_right")


@register("_image_random_flip_top_bottom", random=True, differentiable=False, samples=lambda: [
    Sample((_img(3, 4, 3),), ref=_same), Sample((_R.uniform(0, 1, (2, 3, 4, 1)),), ref=_same)])
def _image_random_flip_top_bottom(data: Tensor, *, p: float = 0.5) -> Tensor:
    """Mirror an HWC (NHWC) image vertically with probability ``p`` (see random_flip_left_right)."""
    return _random_flip(data, p, -3, "random_flip_top_bottom")


# ---- colour adjustments (shared by the random operators) ----------------------------------------
def adjust_brightness(x: Tensor, alpha: float) -> Tensor:
    """``x * alpha`` (x in the working precision)."""
    return x * alpha


def adjust_contrast(x: Tensor, alpha: float) -> Tensor:
    """Blend every pixel with the image's mean luma: ``x * alpha + (1 - alpha) * mean_gray``
    (per image of a batch; 1-channel images use their mean)."""
    if x.shape[-1] == 3:
        gray = (x * torch.tensor(_GRAY, dtype=x.dtype, device=x.device)).sum(dim=-1)
    else:
        gray = x[..., 0]
    mean = gray.mean(dim=(-2, -1), keepdim=True).unsqueeze(-1)
    return x * alpha + mean * (1.0 - alpha)


def adjust_saturation(x: Tensor, alpha: float) -> Tensor:
    """Blend every RGB pixel with its luma: ``x * alpha + gray * (1 - alpha)``; 1-channel images
    are unchanged."""
    if x.shape[-1] != 3:
        return x
    gray = (x * torch.tensor(_GRAY, dtype=x.dtype, device=x.device)).sum(dim=-1, keepdim=True)
    return x * alpha + gray * (1.0 - alpha)


_HLS_SECTORS = ((1, 3, 0), (1, 0, 2), (3, 0, 1), (0, 2, 1), (0, 1, 3), (2, 1, 0))


def adjust_hue(x: Tensor, alpha: float) -> Tensor:
    """Rotate the hue of RGB pixels (0-255 scale) by ``alpha * 360`` degrees in HLS space, as
    MXNet's image.random_hue does; 1-channel images are unchanged."""
    if x.shape[-1] != 3:
        return x
    dt = x.dtype
    r, g, b = (x[..., i] / 255.0 for i in range(3))
    vmax = torch.maximum(torch.maximum(r, g), b)
    vmin = torch.minimum(torch.minimum(r, g), b)
    diff = vmax - vmin
    light = (vmax + vmin) * 0.5
    chroma = diff > float(np.finfo(np.float32).eps)
    one = torch.ones_like(diff)
    safe = torch.where(chroma, diff, one)
    sat = torch.where(light < 0.5, diff / torch.where(chroma, vmax + vmin, one),
                      diff / torch.where(chroma, 2.0 - vmax - vmin, one))
    k = 60.0 / safe
    hue = torch.where(vmax == r, (g - b) * k, torch.where(vmax == g, (b - r) * k + 120.0, (r - g) * k + 240.0))
    hue = torch.where(hue < 0, hue + 360.0, hue)
    hue = torch.where(chroma, hue, torch.zeros_like(hue))
    sat = torch.where(chroma, sat, torch.zeros_like(sat))
    hue = hue + alpha * 360.0
    # HLS -> RGB
    p2 = torch.where(light <= 0.5, light * (1 + sat), light + sat - light * sat)
    p1 = 2 * light - p2
    hh = torch.remainder(hue * (1.0 / 60.0), 6.0)
    sector = torch.floor(hh).clamp(0, 5)
    frac = hh - sector
    tab = torch.stack([p2, p1, p1 + (p2 - p1) * (1 - frac), p1 + (p2 - p1) * frac], dim=-1)
    idx = torch.tensor(_HLS_SECTORS, device=x.device)[sector.to(torch.int64)]       # (..., 3): b, g, r
    bgr = torch.gather(tab, -1, idx)
    gray = (sat == 0).unsqueeze(-1)
    bgr = torch.where(gray, light.unsqueeze(-1).expand_as(bgr), bgr)
    return (bgr.flip(-1) * 255.0).to(dt)


def adjust_lighting(x: Tensor, alpha: tuple) -> Tensor:
    """Add the PCA lighting offset ``eigvec @ (alpha * eigval)`` to every RGB pixel (0-255
    scale); 1-channel images are unchanged."""
    if x.shape[-1] != 3:
        return x
    rgb = _EIGVEC @ (np.asarray(alpha, dtype=np.float64) * _EIGVAL)
    return x + torch.tensor(rgb, dtype=x.dtype, device=x.device)


def _color_op(data: Tensor, who: str, fn: Callable[[Tensor], Tensor]) -> Tensor:
    _check_color(data, who)
    if _meta(data):
        return torch.empty_like(data)
    return _saturate(fn(_work(data)), data.dtype)


def _np_saturate(v: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        return v.astype(dtype)
    if dtype == np.uint8:
        return np.trunc(np.clip(v, 0, 255)).astype(np.uint8)
    return np.trunc(v).astype(dtype)


def _np_lighting(x, alpha=(0.0, 0.0, 0.0)):
    if x.shape[-1] != 3:
        return x
    a = np.asarray(alpha, dtype=np.float64)
    off = np.array([sum(_EIGVEC[i, j] * _EIGVAL[j] * a[j] for j in range(3)) for i in range(3)])
    return _np_saturate(x.astype(np.float64) + off, x.dtype)


@register("_image_adjust_lighting", differentiable=False, samples=lambda: [
    Sample((_R.uniform(0, 255, (3, 4, 3)),), {"alpha": (0.1, -0.2, 0.05)}, ref=_np_lighting, rtol=1e-5, atol=1e-4),
    Sample((_img(2, 2, 3, 3),), {"alpha": (0.3, 0.1, -0.4)}, ref=_np_lighting),
    Sample((_img(2, 3, 1),), {"alpha": (0.3, 0.1, -0.4)}, ref=_np_lighting)])
def _image_adjust_lighting(data: Tensor, *, alpha: AnyValue) -> Tensor:
    """AlexNet PCA lighting with the given ``alpha`` (3 values, one per eigenvector) added to
    an HWC (NHWC) RGB image (MXNet's image.adjust_lighting)."""
    a = _floats(alpha, "adjust_lighting", "alpha")
    if len(a) != 3:
        raise MXNetError(f"adjust_lighting: alpha must hold 3 values (R, G, B eigen-directions), got {alpha!r}")
    return _color_op(data, "adjust_lighting", lambda x: adjust_lighting(x, a))


@register("_image_random_lighting", random=True, differentiable=False, samples=lambda: [
    Sample((_img(3, 4, 3),), ref=_same), Sample((_R.uniform(0, 255, (2, 3, 2, 3)),), {"alpha_std": 0.1}, ref=_same)])
def _image_random_lighting(data: Tensor, *, alpha_std: float = 0.05) -> Tensor:
    """adjust_lighting with alpha ~ N(0, alpha_std) for each of the 3 components (MXNet's
    image.random_lighting); alpha_std <= 0 leaves the image unchanged and draws nothing."""
    def fn(x: Tensor) -> Tensor:
        if alpha_std <= 0:
            return x
        a = torch.empty(3, dtype=torch.float64).normal_(0.0, float(alpha_std)).tolist()
        return adjust_lighting(x, tuple(a))
    return _color_op(data, "random_lighting", fn)


def _enhance_check(who: str, lo: float, hi: float) -> None:
    if lo < 0 or hi < 0:
        raise MXNetError(f"{who}: min_factor and max_factor must be >= 0, got {lo} and {hi}")


def _enhance_samples() -> list:
    return [Sample((_img(4, 5, 3),), {"min_factor": 0.5, "max_factor": 1.5}, ref=_same),
            Sample((_R.uniform(0, 1, (2, 3, 3, 1)),), {"min_factor": 0.2, "max_factor": 0.8}, ref=_same)]


@register("_image_random_brightness", random=True, differentiable=False, samples=_enhance_samples)
def _image_random_brightness(data: Tensor, *, min_factor: float, max_factor: float) -> Tensor:
    """Multiply an HWC (NHWC) image by a factor drawn from U(min_factor, max_factor) (MXNet's
    image.random_brightness)."""
    _enhance_check("random_brightness", min_factor, max_factor)
    return _color_op(data, "random_brightness",
                     lambda x: adjust_brightness(x, _uniform(min_factor, max_factor)))


@register("_image_random_contrast", random=True, differentiable=False, samples=_enhance_samples)
def _image_random_contrast(data: Tensor, *, min_factor: float, max_factor: float) -> Tensor:
    """Blend an HWC (NHWC) image with its mean luma, ``x * a + mean_gray * (1 - a)``,
    a ~ U(min_factor, max_factor) (MXNet's image.random_contrast)."""
    _enhance_check("random_contrast", min_factor, max_factor)
    return _color_op(data, "random_contrast",
                     lambda x: adjust_contrast(x, _uniform(min_factor, max_factor)))


@register("_image_random_saturation", returns_view=True,
          random=True, differentiable=False, samples=_enhance_samples)
def _image_random_saturation(data: Tensor, *, min_factor: float, max_factor: float) -> Tensor:
    """Blend every pixel with its luma, ``x * a + gray * (1 - a)``, a ~ U(min_factor,
    max_factor) (MXNet's image.random_saturation, with the luma summed over R, G, B)."""
    _enhance_check("random_saturation", min_factor, max_factor)
    return _color_op(data, "random_saturation",
                     lambda x: adjust_saturation(x, _uniform(min_factor, max_factor)))


@register("_image_random_hue", returns_view=True, random=True, differentiable=False, samples=_enhance_samples)
def _image_random_hue(data: Tensor, *, min_factor: float, max_factor: float) -> Tensor:
    """Rotate the hue by ``a * 360`` degrees (HLS), a ~ U(min_factor, max_factor) (MXNet's
    image.random_hue; Gluon's RandomHue(h) passes (max(0, 1 - h), 1 + h))."""
    _enhance_check("random_hue", min_factor, max_factor)
    return _color_op(data, "random_hue", lambda x: adjust_hue(x, _uniform(min_factor, max_factor)))


@register("_image_random_color_jitter", random=True, differentiable=False, samples=lambda: [
    Sample((_img(4, 5, 3),), {"brightness": 0.3, "contrast": 0.3, "saturation": 0.3, "hue": 0.1}, ref=_same),
    Sample((_R.uniform(0, 1, (2, 3, 3, 3)),), {"brightness": 0.5, "contrast": 0.0, "saturation": 0.2,
                                               "hue": 0.0}, ref=_same)])
def _image_random_color_jitter(data: Tensor, *, brightness: float, contrast: float, saturation: float,
                               hue: float) -> Tensor:
    """Brightness, contrast, saturation and hue jitter in a random order (torch.randperm(4)),
    each only when its amount is > 0: factors 1 + U(-amount, amount) for the first three and
    U(-hue, hue) turns of hue; integer images are saturated after every step (MXNet's
    image.random_color_jitter)."""
    _check_color(data, "random_color_jitter")
    if _meta(data):
        return torch.empty_like(data)
    dtype = data.dtype
    x = _work(data)
    for k in torch.randperm(4).tolist():
        if k == 0 and brightness > 0:
            x = adjust_brightness(x, 1.0 + _uniform(-brightness, brightness))
        elif k == 1 and contrast > 0:
            x = adjust_contrast(x, 1.0 + _uniform(-contrast, contrast))
        elif k == 2 and saturation > 0:
            x = adjust_saturation(x, 1.0 + _uniform(-saturation, saturation))
        elif k == 3 and hue > 0:
            x = adjust_hue(x, _uniform(-hue, hue))
        else:
            continue
        if not dtype.is_floating_point:
            x = _work(_saturate(x, dtype))
    return _saturate(x, dtype)
