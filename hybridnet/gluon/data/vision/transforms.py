"""Image transforms (MXNet 1.9.1's ``gluon.data.vision.transforms``).

Layouts follow MXNet: image ops take HWC (or NHWC) arrays, ``ToTensor`` turns them into
CHW (NCHW) float32 in [0, 1], ``Normalize`` works on CHW (NCHW). uint8 inputs stay uint8
(colour results are clamped to [0, 255] and truncated, as MXNet's ``saturate_cast``; resized
ones are rounded); float inputs stay float.

As in MXNet, the transforms with fixed output shapes are ``HybridBlock``s whose
``hybrid_forward(F, x)`` calls the ``F.image.*`` operators (``_image_*`` graph nodes), so they
run eagerly on NDArrays and can be hybridized, traced into other HybridBlocks and exported.
``Compose`` groups consecutive HybridBlocks into a hybridized ``HybridSequential``.
``CenterCrop``, ``RandomResizedCrop``, ``Rotate``, ``RandomRotation`` and ``RandomApply`` stay
eager ``Block``s (their crop boxes depend on the input size or on a Python-side draw).

Randomness: the random operators (flips, colour jitter, lighting) and ``RandomRotation`` draw
from hybridnet's generator (``mx.random.seed``), once per call, also when hybridized; ``RandomResizedCrop`` and
``interpolation=10`` (random method) draw from Python's ``random`` and ``RandomApply`` from
NumPy's, as MXNet does.
"""
from __future__ import annotations

import math
import random as _pyrandom
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from .... import ndarray as _nd
from ....base import MXNetError
from ....image import image as _image
from ....ndarray import NDArray
from ....ndarray import image as _ndimage
from ....symbol.symbol import Symbol
from ...block import Block, HybridBlock
from ...nn.basic_layers import HybridSequential, Sequential
from ....image.image import scale_down as _scale_down

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Resize", "CenterCrop", "RandomResizedCrop",
           "CropResize", "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness",
           "RandomContrast", "RandomSaturation", "RandomHue", "RandomColorJitter", "RandomLighting",
           "RandomApply", "Rotate", "RandomRotation", "Block", "HybridBlock", "Sequential",
           "HybridSequential"]

_RANDOM_INTERP = 10     # MXNet/OpenCV: pick one of the methods 0-4 at random per call


# -- helpers ----------------------------------------------------------------------------------------
def _eager_input(x: Any, who: str) -> NDArray:
    """The NDArray image an eager-only Block works on (NumPy arrays are wrapped)."""
    if isinstance(x, NDArray):
        return x
    if isinstance(x, np.ndarray):
        return _nd.array(x, dtype=x.dtype)
    if isinstance(x, Symbol):
        raise MXNetError(f"{who} is an eager Block (its output depends on the input's size or on a "
                         f"Python-side random draw), so it cannot be traced into a hybridized graph. "
                         f"Apply it before the hybridized part, e.g. first in a transforms.Compose "
                         f"or in Dataset.transform_first, not inside a HybridSequential")
    raise TypeError(f"{who}: expected an NDArray image, got {type(x).__name__}")


def _check_image(x: NDArray, who: str, layout: str = "HWC") -> None:
    if x.ndim not in (3, 4):
        raise MXNetError(f"{who}: expected a 3-d ({layout}) or 4-d (N{layout}) image, got shape "
                         f"{tuple(x.shape)}")


def _hw(x: NDArray) -> Tuple[int, int]:
    s = x.shape
    return (s[0], s[1]) if len(s) == 3 else (s[1], s[2])


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


def _size_attr(size: Any) -> Any:
    """A resize ``size`` attribute as MXNet writes it: an int or a tuple of ints."""
    if isinstance(size, (int, np.integer)):
        return int(size)
    if isinstance(size, (tuple, list)):
        return tuple(int(v) for v in size)
    raise ValueError(f"Resize: size must be an int or a (width, height) pair, got {size!r}")


def _float_attr(v: Any) -> Any:
    """mean/std/... as a float or a tuple of floats (clean ``-symbol.json`` attributes)."""
    if isinstance(v, (int, float, np.number)):
        return float(v)
    if isinstance(v, NDArray):
        v = v.asnumpy()
    return tuple(float(e) for e in np.asarray(v, dtype=np.float64).ravel())


def _pick_interp(interp: int, x: Any, who: str) -> int:
    """Resolve ``interpolation=10`` (random method) with Python's ``random``, eagerly only."""
    if interp != _RANDOM_INTERP:
        return interp
    if isinstance(x, Symbol):
        raise MXNetError(f"{who}: interpolation=10 (a random method per call) cannot be hybridized: the "
                         f"_image_resize graph operator takes a fixed method. Use 0 (nearest), 1 "
                         f"(bilinear), 2 (area), 3 (bicubic), 4 (lanczos) or 9 (auto), or keep this "
                         f"transform out of hybridize()")
    return _pyrandom.randint(0, 4)


def _resize(F: Any, x: Any, size: Any, keep_ratio: bool, interp: int, who: str) -> Any:
    return F.image.resize(x, size=size, keep_ratio=keep_ratio, interp=_pick_interp(interp, x, who))


def _can_hybridize(block: Any) -> bool:
    return isinstance(block, HybridBlock) and not getattr(block, "_eager_only", False)


class _Wrap(Block):
    """A plain callable as a Block (so Compose can hold lambdas and functions)."""

    def __init__(self, fn: Callable):
        super().__init__()
        self._fn = fn

    def forward(self, *args: Any) -> Any:
        return self._fn(*args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._fn!r})"


# -- composition ------------------------------------------------------------------------------------
class Compose(Sequential):
    """Apply ``transforms`` in order (MXNet's Compose, a ``Sequential``).

    Runs of two or more consecutive HybridBlocks are put in one ``HybridSequential``, which is
    hybridized (as MXNet does), so they run as one compiled graph; single HybridBlocks, Blocks
    and plain callables (wrapped into Blocks) are added as they are.
    """

    def __init__(self, transforms: Sequence[Any]):
        super().__init__()
        run: list = []

        def flush() -> None:
            if len(run) == 1:
                self.add(run[0])
            elif len(run) > 1:
                hblock = HybridSequential()
                hblock.add(*run)
                hblock.hybridize()
                self.add(hblock)
            run.clear()

        for tr in transforms:
            if tr is None:
                continue
            if _can_hybridize(tr):
                run.append(tr)
                continue
            flush()
            self.add(tr if isinstance(tr, Block) else _Wrap(tr))
        flush()


class RandomApply(Sequential):
    """Apply ``transforms`` with probability ``p`` (NumPy's RNG, as MXNet)."""

    def __init__(self, transforms: Any, p: float = 0.5):
        super().__init__()
        self.transforms = transforms if isinstance(transforms, Block) else _Wrap(transforms)
        self.p = p

    def forward(self, x: Any, *args: Any) -> Any:
        if self.p < np.random.random():
            return x
        return self.transforms(x)


# -- conversion ------------------------------------------------------------------------------------
class Cast(HybridBlock):
    """Cast every input to ``dtype`` (default float32); one input gives one output."""

    def __init__(self, dtype: Any = "float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        if not args:
            return F.cast(x, dtype=self._dtype)
        return tuple(F.cast(a, dtype=self._dtype) for a in (x,) + args)


class ToTensor(HybridBlock):
    """HWC (NHWC) image in [0, 255] -> CHW (NCHW) float32 in [0, 1] (``F.image.to_tensor``)."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x - mean[c]) / std[c]`` per channel of a CHW (NCHW) tensor (``F.image.normalize``);
    ``mean``/``std`` are scalars or one value per channel."""

    def __init__(self, mean: Any = 0.0, std: Any = 1.0):
        super().__init__()
        self._mean = _float_attr(mean)
        self._std = _float_attr(std)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.normalize(x, mean=self._mean, std=self._std)


# -- geometry ---------------------------------------------------------------------------------------
class Resize(HybridBlock):
    """Resize an HWC (NHWC) image to ``size`` (int: square, or (width, height)) with
    ``F.image.resize``.

    With ``keep_ratio`` and an int size the shorter side becomes ``size``. ``interpolation``:
    0 nearest, 1 bilinear, 2 area, 3 bicubic, 4 lanczos (bicubic here), 9 auto, 10 a random
    one of 0-4 per call (eager only: such a Resize cannot be hybridized).
    """

    def __init__(self, size: Any, keep_ratio: bool = False, interpolation: int = 1):
        super().__init__()
        self._size = _size_attr(size)
        self._keep = bool(keep_ratio)
        self._interpolation = int(interpolation)
        self._eager_only = self._interpolation == _RANDOM_INTERP

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return _resize(F, x, self._size, self._keep, self._interpolation, "Resize")


class CropResize(HybridBlock):
    """Crop the box (x, y, width, height) of an HWC (NHWC) image (``F.image.crop``), then
    resize it to ``size`` if given (``interpolation`` as in Resize, default bilinear)."""

    def __init__(self, x: int, y: int, width: int, height: int, size: Any = None,
                 interpolation: Optional[int] = None):
        super().__init__()
        self._x, self._y, self._width, self._height = int(x), int(y), int(width), int(height)
        self._size = None if size is None else _size_attr(size)
        self._interpolation = 1 if interpolation is None else int(interpolation)
        self._eager_only = self._size is not None and self._interpolation == _RANDOM_INTERP

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        out = F.image.crop(x, x=self._x, y=self._y, width=self._width, height=self._height)
        if self._size is not None:
            out = _resize(F, out, self._size, False, self._interpolation, "CropResize")
        return out


class _NDF:
    """``F`` for the eager-only Blocks' helpers (only ``F.image`` is used)."""
    image = _ndimage


def _fixed_crop(x: NDArray, x0: int, y0: int, w: int, h: int, size: Tuple[int, int],
                interp: int, who: str) -> NDArray:
    """Crop then resize to ``size`` (width, height) when the crop differs from it."""
    out = _ndimage.crop(x, x=x0, y=y0, width=w, height=h)
    if (w, h) != tuple(size):
        out = _resize(_NDF, out, tuple(size), False, interp, who)
    return out


class CenterCrop(Block):
    """Crop the centre ``size`` (int or (width, height)) of an HWC image; an image smaller than
    ``size`` gives the largest centred crop of that aspect ratio, resized up to ``size``."""

    def __init__(self, size: Any, interpolation: int = 1):
        super().__init__()
        self._size = _wh(size, "CenterCrop")
        self._interpolation = interpolation

    def forward(self, x: Any) -> NDArray:
        x = _eager_input(x, "CenterCrop")
        _check_image(x, "CenterCrop")
        h, w = _hw(x)
        new_w, new_h = _scale_down((w, h), self._size)
        x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
        return _fixed_crop(x, x0, y0, new_w, new_h, self._size, self._interpolation, "CenterCrop")


class RandomResizedCrop(Block):
    """Crop a random area (fraction ``scale`` of the image) with a random aspect ratio
    (``ratio``, log-uniform), resized to ``size``; after 10 failed draws, a centre crop.
    Draws from Python's ``random``, as MXNet."""

    def __init__(self, size: Any, scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0), interpolation: int = 1):
        super().__init__()
        self._size = _wh(size, "RandomResizedCrop")
        self._scale = (scale, 1.0) if isinstance(scale, (int, float)) else tuple(scale)
        self._ratio = tuple(ratio)
        self._interpolation = interpolation

    def forward(self, x: Any) -> NDArray:
        x = _eager_input(x, "RandomResizedCrop")
        _check_image(x, "RandomResizedCrop")
        h, w = _hw(x)
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
                return _fixed_crop(x, x0, y0, new_w, new_h, self._size, self._interpolation,
                                   "RandomResizedCrop")
        new_w, new_h = _scale_down((w, h), self._size)
        x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
        return _fixed_crop(x, x0, y0, new_w, new_h, self._size, self._interpolation, "RandomResizedCrop")


class _RandomFlip(HybridBlock):
    _op = ""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self._p = float(p)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        op = getattr(F.image, self._op)
        # p is a hybridnet extension: MXNet's operator has no such attribute, so the default
        # 0.5 is not written (the exported graph stays loadable by MXNet).
        return op(x) if self._p == 0.5 else op(x, p=self._p)


class RandomFlipLeftRight(_RandomFlip):
    """Flip an HWC (NHWC) image horizontally with probability ``p`` (default 0.5, as MXNet)
    (``F.image.random_flip_left_right``)."""
    _op = "random_flip_left_right"


class RandomFlipTopBottom(_RandomFlip):
    """Flip an HWC (NHWC) image vertically with probability ``p`` (default 0.5, as MXNet)
    (``F.image.random_flip_top_bottom``)."""
    _op = "random_flip_top_bottom"


# -- colour -----------------------------------------------------------------------------------------
class _Enhance(HybridBlock):
    _op = ""

    def __init__(self, amount: float):
        super().__init__()
        amount = float(amount)
        self._args = (max(0.0, 1.0 - amount), 1.0 + amount)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return getattr(F.image, self._op)(x, min_factor=self._args[0], max_factor=self._args[1])


class RandomBrightness(_Enhance):
    """Multiply by a factor drawn from [max(0, 1 - brightness), 1 + brightness]
    (``F.image.random_brightness``)."""
    _op = "random_brightness"


class RandomContrast(_Enhance):
    """Blend with the image's mean luma: ``x * a + mean_gray * (1 - a)``,
    a from [max(0, 1 - contrast), 1 + contrast] (``F.image.random_contrast``)."""
    _op = "random_contrast"


class RandomSaturation(_Enhance):
    """Blend each pixel with its luma: ``x * a + gray * (1 - a)``,
    a from [max(0, 1 - saturation), 1 + saturation] (``F.image.random_saturation``)."""
    _op = "random_saturation"


class RandomHue(_Enhance):
    """Rotate the hue (HLS space) by ``a`` turns, a from [max(0, 1 - hue), 1 + hue], i.e. by
    up to ``hue`` turns either way (``F.image.random_hue``, as MXNet)."""
    _op = "random_hue"


class RandomColorJitter(HybridBlock):
    """Brightness, contrast, saturation and hue jitter (each only if > 0), in random order
    (``F.image.random_color_jitter``)."""

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0):
        super().__init__()
        self._args = (float(brightness), float(contrast), float(saturation), float(hue))

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        b, c, s, h = self._args
        return F.image.random_color_jitter(x, brightness=b, contrast=c, saturation=s, hue=h)


class RandomLighting(HybridBlock):
    """AlexNet-style PCA lighting noise: add ``eigvec @ (a * eigval)`` to every RGB pixel,
    ``a ~ N(0, alpha)`` per component (ImageNet eigenvalues/vectors, 0-255 scale)
    (``F.image.random_lighting``)."""

    def __init__(self, alpha: float):
        super().__init__()
        self._alpha = float(alpha)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.random_lighting(x, alpha_std=self._alpha)


# -- rotation (eager; MXNet's image.imrotate) --------------------------------------------------------
def _uniform(lo: float, hi: float) -> float:
    """One draw from U(lo, hi) by hybridnet's generator (``mx.random.seed``)."""
    if hi <= lo:
        return float(lo)
    return float(_nd.random.uniform(lo, hi, shape=(1,), dtype="float64").asscalar())


def _check_float32(x: NDArray, who: str) -> None:
    if x.dtype != np.float32:
        raise TypeError(f"{who}: only float32 images are supported, got {np.dtype(x.dtype).name}; "
                        f"apply ToTensor first (as MXNet requires)")


class Rotate(Block):
    """Rotate a CHW (NCHW) float image by ``rotation_degrees`` counter-clockwise; ``zoom_in``
    scales up to hide the empty corners, ``zoom_out`` scales down to keep the whole image."""

    def __init__(self, rotation_degrees: float, zoom_in: bool = False, zoom_out: bool = False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x: Any) -> NDArray:
        x = _eager_input(x, "Rotate")
        _check_image(x, "Rotate", "CHW")
        _check_float32(x, "Rotate")
        return _image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotate by an angle drawn uniformly from ``angle_limits`` (degrees), with probability
    ``rotate_with_proba`` (hybridnet's generator; one angle per image of a batch)."""

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
        x = _eager_input(x, "RandomRotation")
        _check_image(x, "RandomRotation", "CHW")
        if _uniform(0.0, 1.0) >= self._proba:
            return x.copy()
        _check_float32(x, "RandomRotation")
        if x.ndim == 3:
            return _image.imrotate(x, _uniform(*self._limits), *self._zoom)
        angles = _nd.random.uniform(*self._limits, shape=(x.shape[0],))
        return _image.imrotate(x, angles, *self._zoom)
