"""Image augmenters of ``mx.image`` (MXNet 1.9.1): callables HWC NDArray -> HWC NDArray,
composed by ``CreateAugmenter`` for ``ImageIter``. Randomness comes from Python's ``random``
(and ``numpy.random`` for LightingAug), as in MXNet."""
from __future__ import annotations

import json
import random
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .. import ndarray as nd
from ..ndarray.ndarray import NDArray
from .image import (_get_interp_method, center_crop, color_normalize, imresize, random_crop,
                    random_size_crop, resize_short)

__all__ = ["Augmenter", "SequentialAug", "ResizeAug", "ForceResizeAug", "RandomCropAug",
           "RandomSizedCropAug", "CenterCropAug", "RandomOrderAug", "BrightnessJitterAug",
           "ContrastJitterAug", "SaturationJitterAug", "HueJitterAug", "ColorJitterAug", "LightingAug",
           "ColorNormalizeAug", "RandomGrayAug", "HorizontalFlipAug", "CastAug", "CreateAugmenter"]

_GRAY_COEF = [[[0.299, 0.587, 0.114]]]


def _jsonable(v: Any) -> Any:
    if isinstance(v, NDArray):
        return v.asnumpy().tolist()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


class Augmenter:
    """Base class: ``__call__(src)`` returns the augmented image; ``dumps()`` describes it as
    JSON ``[name, kwargs]``."""

    def __init__(self, **kwargs: Any):
        self._kwargs = {k: _jsonable(v) for k, v in kwargs.items()}

    def dumps(self) -> str:
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src: NDArray) -> NDArray:
        raise NotImplementedError("Must override implementation.")


class SequentialAug(Augmenter):
    """Apply ``ts`` in order."""

    def __init__(self, ts: Sequence[Augmenter]):
        super().__init__()
        self.ts = list(ts)

    def dumps(self) -> str:
        return json.dumps([self.__class__.__name__.lower(), [x.dumps() for x in self.ts]])

    def __call__(self, src: NDArray) -> NDArray:
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(Augmenter):
    """Apply ``ts`` in a random order."""

    def __init__(self, ts: Sequence[Augmenter]):
        super().__init__()
        self.ts = list(ts)

    def dumps(self) -> str:
        return json.dumps([self.__class__.__name__.lower(), [x.dumps() for x in self.ts]])

    def __call__(self, src: NDArray) -> NDArray:
        random.shuffle(self.ts)
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resize the shorter side to ``size``."""

    def __init__(self, size: int, interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: NDArray) -> NDArray:
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to exactly ``size`` (w, h), ignoring the aspect ratio."""

    def __init__(self, size: Tuple[int, int], interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: NDArray) -> NDArray:
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """Random crop of ``size`` (w, h)."""

    def __init__(self, size: Tuple[int, int], interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: NDArray) -> NDArray:
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Random area/aspect-ratio crop resized to ``size`` (see ``random_size_crop``)."""

    def __init__(self, size: Tuple[int, int], area: Any, ratio: Tuple[float, float], interp: int = 2,
                 **kwargs: Any):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.ratio, self.interp = size, ratio, interp
        self.area = kwargs.pop("min_area", area)
        if kwargs:
            raise TypeError(f"RandomSizedCropAug: unexpected arguments {sorted(kwargs)}")

    def __call__(self, src: NDArray) -> NDArray:
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """Center crop of ``size`` (w, h)."""

    def __init__(self, size: Tuple[int, int], interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: NDArray) -> NDArray:
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Multiply by ``1 + U(-brightness, brightness)``."""

    def __init__(self, brightness: float):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src: NDArray) -> NDArray:
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        return src * alpha


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean gray level: ``alpha * src + (1 - alpha) * mean_gray``."""

    def __init__(self, contrast: float):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array(_GRAY_COEF)

    def __call__(self, src: NDArray) -> NDArray:
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        gray = src * self.coef
        gray = (3.0 * (1.0 - alpha) / gray.size) * nd.sum(gray)
        return src * alpha + gray


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its gray value: ``alpha * src + (1 - alpha) * gray``."""

    def __init__(self, saturation: float):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array(_GRAY_COEF)

    def __call__(self, src: NDArray) -> NDArray:
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        gray = nd.sum(src * self.coef, axis=2, keepdims=True) * (1.0 - alpha)
        return src * alpha + gray


class HueJitterAug(Augmenter):
    """Rotate the hue by ``U(-hue, hue) * 180`` degrees in YIQ space."""

    def __init__(self, hue: float):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
        self.ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __call__(self, src: NDArray) -> NDArray:
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, bt), self.tyiq).T
        return nd.dot(src, nd.array(t, dtype=src.dtype))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0) in random order."""

    def __init__(self, brightness: float, contrast: float, saturation: float):
        ts: List[Augmenter] = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet-style PCA lighting noise: add ``eigvec @ (alpha * eigval)``, alpha ~ N(0, alphastd)."""

    def __init__(self, alphastd: float, eigval: Any, eigvec: Any):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = np.asarray(eigval)
        self.eigvec = np.asarray(eigvec)

    def __call__(self, src: NDArray) -> NDArray:
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        return src + nd.array(rgb, dtype=src.dtype)


class ColorNormalizeAug(Augmenter):
    """``(src - mean) / std``."""

    def __init__(self, mean: Any, std: Any):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd.array(std)

    def __call__(self, src: NDArray) -> NDArray:
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace each channel by the gray value."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src: NDArray) -> NDArray:
        if random.random() < self.p:
            src = nd.dot(src, self.mat.astype(src.dtype))
        return src


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, mirror left-right."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray) -> NDArray:
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Cast to ``typ`` (default float32)."""

    def __init__(self, typ: str = "float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src: NDArray) -> NDArray:
        return src.astype(self.typ)


_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


def _check_stat(v: Any, what: str) -> None:
    if not isinstance(v, (np.ndarray, NDArray)) or v.shape[0] not in (1, 3):
        raise ValueError(f"CreateAugmenter: {what} must be True, None or an array of 1 or 3 values, got {v!r}")


def CreateAugmenter(data_shape: Tuple[int, int, int], resize: int = 0, rand_crop: bool = False,
                    rand_resize: bool = False, rand_mirror: bool = False, mean: Any = None, std: Any = None,
                    brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0,
                    pca_noise: float = 0, rand_gray: float = 0, inter_method: int = 2) -> List[Augmenter]:
    """The standard augmenter list for ``data_shape`` (C, H, W): optional short-side resize,
    a crop (random sized / random / center), mirror, cast to float32, colour jitter, hue, PCA
    lighting, random gray, then normalization (``mean``/``std`` True give ImageNet's)."""
    auglist: List[Augmenter] = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError("CreateAugmenter: rand_resize=True needs rand_crop=True")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = nd.array([123.68, 116.28, 103.53])
    elif mean is not None:
        _check_stat(mean, "mean")
    if std is True:
        std = nd.array([58.395, 57.12, 57.375])
    elif std is not None:
        _check_stat(std, "std")
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
