"""Image transforms (MXNet 1.9.1's ``gluon.data.vision.transforms``).

Layouts follow MXNet: image ops take HWC (or NHWC) arrays, ``ToTensor`` turns them into
CHW (NCHW) float32 in [0, 1], ``Normalize`` works on CHW (NCHW). uint8 inputs stay uint8
(results are rounded and saturated, like OpenCV's ``saturate_cast``); float inputs stay float.

The blocks are Gluon ``Block``/``HybridBlock`` subclasses as in MXNet, but they run eagerly on
NDArrays (torch kernels on ``x._t``): there are no ``_image_*`` graph operators yet, so
``hybridize()`` leaves them eager, and tracing one inside another HybridBlock raises an error
saying so. Randomness: the HybridBlock transforms (flips, colour jitter, lighting) draw from
torch's generator (``mx.random.seed``); ``RandomResizedCrop`` draws from Python's ``random``
and ``RandomApply`` from NumPy's, as MXNet does.
"""
from __future__ import annotations

import math
import random as _pyrandom
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as _F

from ....base import MXNetError, dtype_torch
from ....ndarray import NDArray
from ...block import Block, HybridBlock

try:
    from ...nn.basic_layers import HybridSequential, Sequential
except ImportError:  # pragma: no cover - nn not available
    Sequential = None  # type: ignore[assignment,misc]
    HybridSequential = None  # type: ignore[assignment,misc]

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Resize", "CenterCrop", "RandomResizedCrop",
           "CropResize", "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness",
           "RandomContrast", "RandomSaturation", "RandomHue", "RandomColorJitter", "RandomLighting",
           "RandomApply", "Rotate", "RandomRotation", "Block", "HybridBlock", "Sequential",
           "HybridSequential"]


# -- tensor helpers ---------------------------------------------------------------------------------
def _tensor(x: Any, who: str) -> torch.Tensor:
    if isinstance(x, NDArray):
        return x._t.detach()
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(x))
    if hasattr(x, "_entries") or type(x).__name__ == "Symbol":
        raise MXNetError(f"{who}: image transforms run eagerly on NDArrays; they cannot be traced "
                         f"into a hybridized graph (no _image_* operators yet). Apply the transform "
                         f"in the data pipeline (Dataset.transform_first / DataLoader), outside the "
                         f"hybridized network")
    raise TypeError(f"{who}: expected an NDArray image, got {type(x).__name__}")


def _check_image(t: torch.Tensor, who: str, layout: str = "HWC") -> None:
    if t.dim() not in (3, 4):
        raise MXNetError(f"{who}: expected a 3-d ({layout}) or 4-d (N{layout}) image, got shape "
                         f"{tuple(t.shape)}")


def _work_dtype(t: torch.Tensor) -> torch.dtype:
    return t.dtype if t.dtype in (torch.float64, torch.float32) else torch.float32


def _finish(res: torch.Tensor, dtype: torch.dtype) -> NDArray:
    """Back to the input dtype; integer images are rounded and saturated."""
    if dtype.is_floating_point:
        return NDArray(res.to(dtype))
    info = torch.iinfo(dtype)
    return NDArray(torch.round(res).clamp_(info.min, info.max).to(dtype))


def _uniform(lo: float, hi: float) -> float:
    return float(torch.empty((), dtype=torch.float64).uniform_(lo, hi).item()) if hi > lo else float(lo)


_INTERP = {0: "nearest", 1: "bilinear", 2: "area", 3: "bicubic", 4: "bicubic"}


def _interp_mode(interp: int, src_hw: Tuple[int, int], dst_hw: Tuple[int, int]) -> str:
    if interp == 9:     # MXNet/OpenCV "auto": area to shrink, bicubic to enlarge
        shrink = dst_hw[0] < src_hw[0] or dst_hw[1] < src_hw[1]
        return "area" if shrink else "bicubic"
    if interp == 10:    # random choice among the methods
        return _INTERP[_pyrandom.randint(0, 4)]
    try:
        return _INTERP[int(interp)]
    except (KeyError, ValueError, TypeError):
        raise MXNetError(f"unsupported interpolation {interp!r}; use 0 (nearest), 1 (bilinear), "
                         f"2 (area), 3 (bicubic), 4 (lanczos, done as bicubic), 9 (auto) or 10 (random)") from None


def _resize_tensor(t: torch.Tensor, w_out: int, h_out: int, interp: int) -> NDArray:
    """Resize an HWC/NHWC tensor to (h_out, w_out), OpenCV's pixel-centre convention."""
    if w_out <= 0 or h_out <= 0:
        raise MXNetError(f"resize: output size must be positive, got width={w_out}, height={h_out}")
    batched = t.dim() == 4
    x = t if batched else t.unsqueeze(0)
    h, w = x.shape[1], x.shape[2]
    dtype = t.dtype
    if (h, w) == (h_out, w_out):
        return NDArray(t.clone())
    mode = _interp_mode(interp, (h, w), (h_out, w_out))
    x = x.permute(0, 3, 1, 2).to(_work_dtype(t))
    kwargs = {"align_corners": False} if mode in ("bilinear", "bicubic") else {}
    y = _F.interpolate(x, size=(h_out, w_out), mode=mode, **kwargs)
    y = y.permute(0, 2, 3, 1).contiguous()
    return _finish(y if batched else y[0], dtype)


def _wh(size: Any, who: str) -> Tuple[int, int]:
    """MXNet sizes: an int is square, a pair is (width, height)."""
    if isinstance(size, (int, np.integer)):
        return int(size), int(size)
    if isinstance(size, (tuple, list)):
        if len(size) == 1:
            return int(size[0]), int(size[0])
        if len(size) == 2:
            return int(size[0]), int(size[1])
    raise ValueError(f"{who}: size must be an int or a (width, height) pair, got {size!r}")


def _crop(t: torch.Tensor, x0: int, y0: int, w: int, h: int, who: str) -> torch.Tensor:
    H, W = (t.shape[0], t.shape[1]) if t.dim() == 3 else (t.shape[1], t.shape[2])
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > W or y0 + h > H:
        raise MXNetError(f"{who}: crop box x={x0}, y={y0}, width={w}, height={h} does not fit in an "
                         f"image of width {W} and height {H}")
    if t.dim() == 3:
        return t[y0:y0 + h, x0:x0 + w]
    return t[:, y0:y0 + h, x0:x0 + w]


# -- bases ------------------------------------------------------------------------------------------
class _EagerHybridBlock(HybridBlock):
    """A HybridBlock transform that always runs eagerly (see the module docstring)."""

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Accepted for MXNet compatibility; the transform keeps running eagerly."""
        self._active = False

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        t = _tensor(x, type(self).__name__)
        return self._apply(t)

    def _apply(self, t: torch.Tensor) -> NDArray:
        raise NotImplementedError


class _Wrap(Block):
    """A plain callable as a Block (so Compose can hold lambdas and functions)."""

    def __init__(self, fn: Callable):
        super().__init__()
        self._fn = fn

    def forward(self, *args: Any) -> Any:
        return self._fn(*args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._fn!r})"


_SequentialBase: Any = Sequential if Sequential is not None else Block


class Compose(_SequentialBase):  # type: ignore[misc,valid-type]
    """Apply ``transforms`` in order (a ``Sequential``, as in MXNet). Plain callables are
    wrapped into Blocks."""

    def __init__(self, transforms: Sequence[Any]):
        super().__init__()
        for tr in transforms:
            if tr is not None:
                self.register_child(tr if isinstance(tr, Block) else _Wrap(tr))

    def forward(self, x: Any, *args: Any) -> Any:
        for blk in self._children.values():
            x = blk(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):
                args = tuple(x[1:])
                x = x[0]
        if args:
            return (x,) + tuple(args)
        return x


class Cast(_EagerHybridBlock):
    """Cast to ``dtype`` (default float32)."""

    def __init__(self, dtype: Any = "float32"):
        super().__init__()
        self._dtype = dtype

    def _apply(self, t: torch.Tensor) -> NDArray:
        return NDArray(t.to(dtype_torch(self._dtype)))


class ToTensor(_EagerHybridBlock):
    """HWC (NHWC) image in [0, 255] -> CHW (NCHW) float32 in [0, 1] (divides by 255)."""

    def _apply(self, t: torch.Tensor) -> NDArray:
        _check_image(t, "ToTensor")
        perm = (2, 0, 1) if t.dim() == 3 else (0, 3, 1, 2)
        return NDArray(t.permute(*perm).to(torch.float32).div(255.0).contiguous())


class Normalize(_EagerHybridBlock):
    """``(x - mean[c]) / std[c]`` per channel of a CHW (NCHW) tensor; ``mean``/``std`` are
    scalars or one value per channel."""

    def __init__(self, mean: Any = 0.0, std: Any = 1.0):
        super().__init__()
        self._mean = mean
        self._std = std

    def _apply(self, t: torch.Tensor) -> NDArray:
        _check_image(t, "Normalize", "CHW")
        c = t.shape[0] if t.dim() == 3 else t.shape[1]
        wd = _work_dtype(t)
        mean = torch.as_tensor(np.atleast_1d(np.asarray(self._mean, dtype=np.float64)), dtype=wd)
        std = torch.as_tensor(np.atleast_1d(np.asarray(self._std, dtype=np.float64)), dtype=wd)
        for name, v in (("mean", mean), ("std", std)):
            if v.numel() not in (1, c):
                raise MXNetError(f"Normalize: {name} has {v.numel()} values but the input has {c} "
                                 f"channels (shape {tuple(t.shape)}); give 1 or {c} values")
        if bool((std == 0).any()):
            raise MXNetError(f"Normalize: std must be non-zero, got {self._std}")
        shape = (-1, 1, 1)
        res = (t.to(wd) - mean.reshape(shape)) / std.reshape(shape)
        return NDArray(res)


class Resize(_EagerHybridBlock):
    """Resize an HWC (NHWC) image to ``size`` (int: square, or (width, height)).

    With ``keep_ratio`` and an int size the shorter side becomes ``size``. ``interpolation``:
    0 nearest, 1 bilinear, 2 area, 3 bicubic, 4 lanczos (bicubic here).
    """

    def __init__(self, size: Any, keep_ratio: bool = False, interpolation: int = 1):
        super().__init__()
        self._size = size
        self._keep = keep_ratio
        self._interpolation = interpolation

    def _apply(self, t: torch.Tensor) -> NDArray:
        _check_image(t, "Resize")
        h, w = (t.shape[0], t.shape[1]) if t.dim() == 3 else (t.shape[1], t.shape[2])
        size = self._size
        single = isinstance(size, (int, np.integer)) or (isinstance(size, (tuple, list)) and len(size) == 1)
        if single and self._keep:
            s = int(size if isinstance(size, (int, np.integer)) else size[0])
            if h > w:
                w_out, h_out = s, h * s // w
            else:
                w_out, h_out = w * s // h, s
        else:
            w_out, h_out = _wh(size, "Resize")
        return _resize_tensor(t, w_out, h_out, self._interpolation)


class CropResize(_EagerHybridBlock):
    """Crop the box (x, y, width, height) of an HWC (NHWC) image, then resize it to ``size``
    if given (``interpolation`` as in Resize, default bilinear)."""

    def __init__(self, x: int, y: int, width: int, height: int, size: Any = None,
                 interpolation: Optional[int] = None):
        super().__init__()
        self._x, self._y, self._width, self._height = int(x), int(y), int(width), int(height)
        self._size = size
        self._interpolation = 1 if interpolation is None else interpolation

    def _apply(self, t: torch.Tensor) -> NDArray:
        _check_image(t, "CropResize")
        out = _crop(t, self._x, self._y, self._width, self._height, "CropResize")
        if self._size is not None:
            w_out, h_out = _wh(self._size, "CropResize")
            return _resize_tensor(out, w_out, h_out, self._interpolation)
        return NDArray(out.clone())


def _scale_down(src_size: Tuple[int, int], size: Tuple[int, int]) -> Tuple[int, int]:
    """Shrink the crop (w, h) so it fits in src (sw, sh), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _fixed_crop(t: torch.Tensor, x0: int, y0: int, w: int, h: int, size: Optional[Tuple[int, int]],
                interp: int, who: str) -> NDArray:
    out = _crop(t, x0, y0, w, h, who)
    if size is not None and (w, h) != tuple(size):
        return _resize_tensor(out, size[0], size[1], interp)
    return NDArray(out.clone())


def _hw(t: torch.Tensor) -> Tuple[int, int]:
    return (t.shape[0], t.shape[1]) if t.dim() == 3 else (t.shape[1], t.shape[2])


class CenterCrop(Block):
    """Crop the centre ``size`` (int or (width, height)) of an HWC image; an image smaller than
    ``size`` gives the largest centred crop of that aspect ratio, resized up to ``size``."""

    def __init__(self, size: Any, interpolation: int = 1):
        super().__init__()
        self._size = _wh(size, "CenterCrop")
        self._interpolation = interpolation

    def forward(self, x: Any) -> NDArray:
        t = _tensor(x, "CenterCrop")
        _check_image(t, "CenterCrop")
        h, w = _hw(t)
        new_w, new_h = _scale_down((w, h), self._size)
        x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
        return _fixed_crop(t, x0, y0, new_w, new_h, self._size, self._interpolation, "CenterCrop")


class RandomResizedCrop(Block):
    """Crop a random area (fraction ``scale`` of the image) with a random aspect ratio
    (``ratio``, log-uniform), resized to ``size``; after 10 failed draws, a centre crop."""

    def __init__(self, size: Any, scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0), interpolation: int = 1):
        super().__init__()
        self._size = _wh(size, "RandomResizedCrop")
        self._scale = (scale, 1.0) if isinstance(scale, (int, float)) else tuple(scale)
        self._ratio = tuple(ratio)
        self._interpolation = interpolation

    def forward(self, x: Any) -> NDArray:
        t = _tensor(x, "RandomResizedCrop")
        _check_image(t, "RandomResizedCrop")
        h, w = _hw(t)
        src_area = h * w
        log_ratio = (math.log(self._ratio[0]), math.log(self._ratio[1]))
        for _ in range(10):
            target_area = _pyrandom.uniform(self._scale[0], self._scale[1]) * src_area
            new_ratio = math.exp(_pyrandom.uniform(*log_ratio))
            new_w = int(round(math.sqrt(target_area * new_ratio)))
            new_h = int(round(math.sqrt(target_area / new_ratio)))
            if 0 < new_w <= w and 0 < new_h <= h:
                x0 = _pyrandom.randint(0, w - new_w)
                y0 = _pyrandom.randint(0, h - new_h)
                return _fixed_crop(t, x0, y0, new_w, new_h, self._size, self._interpolation,
                                   "RandomResizedCrop")
        new_w, new_h = _scale_down((w, h), self._size)
        x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
        return _fixed_crop(t, x0, y0, new_w, new_h, self._size, self._interpolation, "RandomResizedCrop")


class _RandomFlip(_EagerHybridBlock):
    _axis = 0  # 0: width, 1: height (of HWC)

    def __init__(self, p: float = 0.5):
        super().__init__()
        self._p = p

    def _apply(self, t: torch.Tensor) -> NDArray:
        _check_image(t, type(self).__name__)
        if _uniform(0.0, 1.0) < self._p:
            dim = (1 if self._axis == 0 else 0) + (1 if t.dim() == 4 else 0)
            return NDArray(torch.flip(t, dims=(dim,)))
        return NDArray(t.clone())


class RandomFlipLeftRight(_RandomFlip):
    """Flip an HWC (NHWC) image horizontally with probability ``p``."""
    _axis = 0


class RandomFlipTopBottom(_RandomFlip):
    """Flip an HWC (NHWC) image vertically with probability ``p``."""
    _axis = 1


_GRAY = (0.299, 0.587, 0.114)


def _gray(x: torch.Tensor) -> torch.Tensor:
    """Luma per pixel of an HWC/NHWC RGB float tensor, keeping a channel axis of 1."""
    if x.shape[-1] != 3:
        raise MXNetError(f"colour transforms need 3 (RGB) channels last (HWC), got shape {tuple(x.shape)}")
    coef = torch.tensor(_GRAY, dtype=x.dtype)
    return (x * coef).sum(dim=-1, keepdim=True)


def _brightness(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha


def _contrast(x: torch.Tensor, alpha: float) -> torch.Tensor:
    mean = _gray(x).mean(dim=(-3, -2, -1), keepdim=True)
    return x * alpha + mean * (1.0 - alpha)


def _saturation(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha + _gray(x) * (1.0 - alpha)


_TYIQ = ((0.299, 0.587, 0.114), (0.596, -0.274, -0.321), (0.211, -0.523, 0.311))
_ITYIQ = ((1.0, 0.956, 0.621), (1.0, -0.272, -0.647), (1.0, -1.107, 1.705))


def _hue(x: torch.Tensor, alpha: float) -> torch.Tensor:
    """Rotate the chroma (I, Q) plane of YIQ by ``alpha * pi``."""
    if x.shape[-1] != 3:
        raise MXNetError(f"RandomHue needs 3 (RGB) channels last (HWC), got shape {tuple(x.shape)}")
    u, w = math.cos(alpha * math.pi), math.sin(alpha * math.pi)
    bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
    m = np.array(_ITYIQ) @ bt @ np.array(_TYIQ)
    return x @ torch.as_tensor(m.T, dtype=x.dtype)


class _ColorBlock(_EagerHybridBlock):
    def _apply(self, t: torch.Tensor) -> NDArray:
        _check_image(t, type(self).__name__)
        return _finish(self._color(t.to(_work_dtype(t))), t.dtype)

    def _color(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class RandomBrightness(_ColorBlock):
    """Multiply by a factor drawn from [max(0, 1 - brightness), 1 + brightness]."""

    def __init__(self, brightness: float):
        super().__init__()
        self._args = (max(0.0, 1.0 - brightness), 1.0 + brightness)

    def _color(self, x: torch.Tensor) -> torch.Tensor:
        return _brightness(x, _uniform(*self._args))


class RandomContrast(_ColorBlock):
    """Blend with the image's mean luma: ``x * a + mean_gray * (1 - a)``,
    a from [max(0, 1 - contrast), 1 + contrast]."""

    def __init__(self, contrast: float):
        super().__init__()
        self._args = (max(0.0, 1.0 - contrast), 1.0 + contrast)

    def _color(self, x: torch.Tensor) -> torch.Tensor:
        return _contrast(x, _uniform(*self._args))


class RandomSaturation(_ColorBlock):
    """Blend each pixel with its luma: ``x * a + gray * (1 - a)``,
    a from [max(0, 1 - saturation), 1 + saturation]."""

    def __init__(self, saturation: float):
        super().__init__()
        self._args = (max(0.0, 1.0 - saturation), 1.0 + saturation)

    def _color(self, x: torch.Tensor) -> torch.Tensor:
        return _saturation(x, _uniform(*self._args))


class RandomHue(_ColorBlock):
    """Rotate the hue (in YIQ space) by ``a * pi``, a from [-hue, hue]."""

    def __init__(self, hue: float):
        super().__init__()
        self._args = (-hue, hue)

    def _color(self, x: torch.Tensor) -> torch.Tensor:
        return _hue(x, _uniform(*self._args))


class RandomColorJitter(_ColorBlock):
    """Brightness, contrast, saturation and hue jitter (each only if > 0), in random order."""

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def _color(self, x: torch.Tensor) -> torch.Tensor:
        b, c, s, h = self._args
        for k in torch.randperm(4).tolist():
            if k == 0 and b > 0:
                x = _brightness(x, _uniform(max(0.0, 1.0 - b), 1.0 + b))
            elif k == 1 and c > 0:
                x = _contrast(x, _uniform(max(0.0, 1.0 - c), 1.0 + c))
            elif k == 2 and s > 0:
                x = _saturation(x, _uniform(max(0.0, 1.0 - s), 1.0 + s))
            elif k == 3 and h > 0:
                x = _hue(x, _uniform(-h, h))
        return x


_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


class RandomLighting(_ColorBlock):
    """AlexNet-style PCA lighting noise: add ``eigvec @ (a * eigval)`` to every RGB pixel,
    ``a ~ N(0, alpha)`` per component (ImageNet eigenvalues/vectors, 0-255 scale)."""

    def __init__(self, alpha: float):
        super().__init__()
        self._alpha = alpha

    def _color(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != 3:
            raise MXNetError(f"RandomLighting needs 3 (RGB) channels last (HWC), got shape {tuple(x.shape)}")
        if self._alpha <= 0:
            return x
        a = torch.empty(3, dtype=torch.float64).normal_(0.0, self._alpha).numpy()
        rgb = _EIGVEC @ (a * _EIGVAL)
        return x + torch.as_tensor(rgb, dtype=x.dtype)


class RandomApply(_SequentialBase):  # type: ignore[misc,valid-type]
    """Apply ``transforms`` with probability ``p`` (NumPy's RNG, as MXNet)."""

    def __init__(self, transforms: Any, p: float = 0.5):
        super().__init__()
        self.transforms = transforms if isinstance(transforms, Block) else _Wrap(transforms)
        self.p = p

    def forward(self, x: Any, *args: Any) -> Any:
        if self.p < np.random.random():
            return x
        return self.transforms(x)


def _rotate(t: torch.Tensor, degrees: float, zoom_in: bool, zoom_out: bool) -> NDArray:
    """Rotate a CHW/NCHW float tensor counter-clockwise about its centre (bilinear, zero fill)."""
    if not t.is_floating_point():
        raise MXNetError(f"Rotate: the input must be a float CHW/NCHW tensor (use ToTensor first), "
                         f"got dtype {t.dtype}")
    if zoom_in and zoom_out:
        raise MXNetError("Rotate: zoom_in and zoom_out cannot both be True")
    batched = t.dim() == 4
    x = t if batched else t.unsqueeze(0)
    n, _, h, w = x.shape
    theta = math.radians(degrees)
    c, s = math.cos(theta), math.sin(theta)
    scale = 1.0
    if zoom_in or zoom_out:
        bw, bh = w * abs(c) + h * abs(s), w * abs(s) + h * abs(c)
        scale = max(bw / w, bh / h) if zoom_in else min(w / bw, h / bh)
    # output pixel (x, y) in centred pixel units samples input R(-theta) (x, y) / scale.
    mat = torch.tensor([[c / scale, -s * h / w / scale, 0.0],
                        [s * w / h / scale, c / scale, 0.0]], dtype=x.dtype)
    # normalised coordinates: account for the aspect ratio via the w/h factors above
    grid = _F.affine_grid(mat.expand(n, 2, 3), list(x.shape), align_corners=False)
    y = _F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return NDArray(y if batched else y[0])


class Rotate(Block):
    """Rotate a CHW (NCHW) float image by ``rotation_degrees`` counter-clockwise; ``zoom_in``
    scales up to hide the empty corners, ``zoom_out`` scales down to keep the whole image."""

    def __init__(self, rotation_degrees: float, zoom_in: bool = False, zoom_out: bool = False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x: Any) -> NDArray:
        t = _tensor(x, "Rotate")
        _check_image(t, "Rotate", "CHW")
        return _rotate(t, *self._args)


class RandomRotation(Block):
    """Rotate by an angle drawn uniformly from ``angle_limits`` (degrees), with probability
    ``rotate_with_proba``."""

    def __init__(self, angle_limits: Tuple[float, float], zoom_in: bool = False, zoom_out: bool = False,
                 rotate_with_proba: float = 1.0):
        super().__init__()
        lo, hi = angle_limits
        if lo > hi:
            raise ValueError(f"RandomRotation: angle_limits must be (low, high), got {angle_limits}")
        if not 0.0 <= rotate_with_proba <= 1.0:
            raise ValueError(f"RandomRotation: rotate_with_proba must be in [0, 1], got {rotate_with_proba}")
        self._limits = (lo, hi)
        self._zoom = (zoom_in, zoom_out)
        self._proba = rotate_with_proba

    def forward(self, x: Any) -> NDArray:
        t = _tensor(x, "RandomRotation")
        _check_image(t, "RandomRotation", "CHW")
        if _uniform(0.0, 1.0) >= self._proba:
            return NDArray(t.clone())
        return _rotate(t, _uniform(*self._limits), *self._zoom)
