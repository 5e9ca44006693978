"""Image functions of ``mx.image`` (MXNet 1.9.1's ``python/mxnet/image/image.py``): decoding,
resizing, cropping, normalization, borders and rotation on HWC NDArrays.

Decoding uses Pillow instead of OpenCV (one decoder: ``recordio``'s, shared with
``recordio.unpack_img``); resizing is the ``nd.image.resize`` operator, which follows OpenCV's
pixel conventions. Interpolation codes are OpenCV's: 0 nearest, 1 bilinear, 2 area, 3 bicubic,
4 lanczos; 9 picks one from the sizes, 10 a random one (``_get_interp_method``).
"""
from __future__ import annotations

import numbers
import os
import random
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..recordio import _image_bytes, _imdecode

__all__ = ["imread", "imdecode", "imresize", "scale_down", "copyMakeBorder", "resize_short",
           "fixed_crop", "random_crop", "center_crop", "color_normalize", "random_size_crop",
           "imrotate", "random_rotate"]

Crop = Tuple[int, int, int, int]


def _get_interp_method(interp: int, sizes: Sequence[int] = ()) -> int:
    """Resolve interp 9 (auto: area to shrink, bicubic to enlarge, else bilinear, from
    ``sizes = (old_h, old_w, new_h, new_w)``) and 10 (random of 0-4); others pass if valid."""
    if interp == 9:
        if sizes:
            if len(sizes) != 4:
                raise ValueError(f"sizes must be (old_h, old_w, new_h, new_w), got {sizes!r}")
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"Unknown interp method {interp}; use 0-4, 9 (auto) or 10 (random)")
    return interp


def imdecode(buf: Any, flag: int = 1, to_rgb: bool = True, out: Optional[NDArray] = None, **kwargs: Any) -> NDArray:
    """Decode an encoded image (JPEG, PNG, ... bytes) to an HxWxC uint8 NDArray: colour
    (``flag=1``; RGB, or OpenCV's BGR with ``to_rgb=False``) or gray (``flag=0``, HxWx1)."""
    if kwargs:
        raise TypeError(f"imdecode: unexpected arguments {sorted(kwargs)}")
    arr = _imdecode(_image_bytes(buf.asnumpy() if isinstance(buf, NDArray) else buf), flag, to_rgb,
                    "the buffer")
    return _into(arr, out)


def imread(filename: str, flag: int = 1, to_rgb: bool = True, out: Optional[NDArray] = None) -> NDArray:
    """Read and decode an image file (see :func:`imdecode`)."""
    if not os.path.isfile(filename):
        raise MXNetError(f"imread: no such image file {filename!r}")
    with open(filename, "rb") as f:
        arr = _imdecode(f.read(), flag, to_rgb, repr(filename))
    return _into(arr, out)


def _into(arr: np.ndarray, out: Optional[NDArray]) -> NDArray:
    if out is None:
        return nd.array(arr, dtype=arr.dtype)
    if tuple(out.shape) != arr.shape:
        raise MXNetError(f"out has shape {tuple(out.shape)}, the result has shape {arr.shape}")
    out[:] = nd.array(arr, dtype=arr.dtype).astype(out.dtype)
    return out


def imresize(src: NDArray, w: int, h: int, interp: int = 1, out: Optional[NDArray] = None) -> NDArray:
    """Resize an HxWxC image to ``h`` x ``w`` (OpenCV's ``cv2.resize`` conventions)."""
    if w <= 0 or h <= 0:
        raise ValueError(f"imresize: the target size must be positive, got w={w}, h={h}")
    res = nd.image.resize(src, size=(int(w), int(h)), interp=int(interp))
    if out is not None:
        out[:] = res
        return out
    return res


def scale_down(src_size: Tuple[int, int], size: Tuple[int, int]) -> Tuple[int, int]:
    """Shrink crop ``size`` (w, h) to fit ``src_size`` (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


# OpenCV border types -> numpy.pad modes
_BORDER_MODES = {0: "constant", 1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}


def copyMakeBorder(src: NDArray, top: int, bot: int, left: int, right: int, type: int = 0,
                   value: float = 0, values: Optional[Sequence[float]] = None,
                   out: Optional[NDArray] = None) -> NDArray:
    """Pad an HxWxC image like ``cv2.copyMakeBorder``: ``type`` 0 constant (``values`` per
    channel, else ``value``), 1 replicate, 2 reflect, 3 wrap, 4 reflect-101."""
    if type not in _BORDER_MODES:
        raise ValueError(f"copyMakeBorder: unknown border type {type}; use 0 (constant), 1 (replicate), "
                         f"2 (reflect), 3 (wrap) or 4 (reflect 101)")
    x = src.asnumpy()
    pad = ((top, bot), (left, right)) + ((0, 0),) * (x.ndim - 2)
    if type == 0:
        res = np.empty((x.shape[0] + top + bot, x.shape[1] + left + right) + x.shape[2:], x.dtype)
        fill = np.asarray(values if values is not None else value, dtype=np.float64)
        if fill.ndim and x.ndim == 3:
            fill = fill[: x.shape[2]]
        res[...] = fill.astype(x.dtype)
        res[top:top + x.shape[0], left:left + x.shape[1]] = x
    else:
        res = np.pad(x, pad, mode=_BORDER_MODES[type])
    return _into(res, out)


def resize_short(src: NDArray, size: int, interp: int = 2) -> NDArray:
    """Resize so that the shorter side is ``size``, keeping the aspect ratio (integer
    division, as MXNet)."""
    h, w = src.shape[0], src.shape[1]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src: NDArray, x0: int, y0: int, w: int, h: int, size: Optional[Tuple[int, int]] = None,
               interp: int = 2) -> NDArray:
    """Crop ``src[y0:y0+h, x0:x0+w]``, then resize to ``size`` (w, h) if given and different."""
    H, W = src.shape[0], src.shape[1]
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > W or y0 + h > H:
        raise ValueError(f"fixed_crop: the box x0={x0}, y0={y0}, w={w}, h={h} is not inside the "
                         f"{W}x{H} image")
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1], interp=_get_interp_method(interp, (h, w, size[1], size[0])))
    return out


def random_crop(src: NDArray, size: Tuple[int, int], interp: int = 2) -> Tuple[NDArray, Crop]:
    """Crop a random ``size`` (w, h) region (scaled down to fit) and resize it to ``size``;
    returns ``(image, (x0, y0, w, h))``."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src: NDArray, size: Tuple[int, int], interp: int = 2) -> Tuple[NDArray, Crop]:
    """Crop the central ``size`` (w, h) region (scaled down to fit) and resize it to ``size``."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src: NDArray, mean: Any, std: Any = None) -> NDArray:
    """``(src - mean) / std`` (either may be None)."""
    if mean is not None:
        src = src - mean
    if std is not None:
        src = src / std
    return src


def random_size_crop(src: NDArray, size: Tuple[int, int], area: Any, ratio: Tuple[float, float],
                     interp: int = 2, **kwargs: Any) -> Tuple[NDArray, Crop]:
    """Inception-style crop: a random region covering ``area`` (fraction, or (min, max)) of the
    image with aspect ratio in ``ratio`` (log-uniform), resized to ``size``; after 10 failed
    tries, a center crop."""
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    if kwargs:
        raise TypeError(f"random_size_crop: unexpected arguments {sorted(kwargs)}")
    h, w = src.shape[0], src.shape[1]
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * h * w
        new_ratio = np.exp(random.uniform(np.log(ratio[0]), np.log(ratio[1])))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if 0 < new_w <= w and 0 < new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def imrotate(src: NDArray, rotation_degrees: Any, zoom_in: bool = False, zoom_out: bool = False) -> NDArray:
    """Rotate CHW (or NCHW) float32 images about their centre by ``rotation_degrees`` (a scalar,
    or one per image), bilinear, zeros outside; ``zoom_in`` crops away the empty corners,
    ``zoom_out`` shrinks to keep the whole image (MXNet's ``image.imrotate``)."""
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if src.dtype != np.float32:
        raise TypeError(f"imrotate: only float32 images are supported, got {np.dtype(src.dtype).name}")
    single = src.ndim == 3
    if single:
        if not isinstance(rotation_degrees, numbers.Number):
            raise TypeError("When a single image is passed the rotation angle is required to be a scalar.")
        src = src.expand_dims(axis=0)
    elif src.ndim != 4:
        raise ValueError(f"imrotate: only 3D (CHW) and 4D (NCHW) images are supported, got {src.ndim}D")
    n, _, h, w = src.shape
    if isinstance(rotation_degrees, numbers.Number):
        degrees = np.full((n,), float(rotation_degrees))
    else:
        degrees = np.asarray(rotation_degrees.asnumpy() if isinstance(rotation_degrees, NDArray)
                             else rotation_degrees, dtype=np.float64).reshape(-1)
    if len(degrees) != n:
        raise ValueError(f"imrotate: {len(degrees)} rotation angles for {n} images")
    rad = np.pi * degrees / 180.0
    hs, ws = (h - 1) / 2.0, (w - 1) / 2.0
    hm = (np.arange(h, dtype=np.float64)[:, None] - hs) * np.ones((1, w))
    wm = (np.arange(w, dtype=np.float64)[None, :] - ws) * np.ones((h, 1))
    c, s = np.cos(rad)[:, None, None], np.sin(rad)[:, None, None]
    w_rot = (wm * c - hm * s) / ws
    h_rot = (wm * s + hm * c) / hs
    scale = np.ones((n, 1, 1))
    if zoom_in or zoom_out:
        rho, ang = np.sqrt(h * h + w * w), np.arctan(h / w)
        a = np.abs(rad)
        max_x = np.maximum(np.abs(rho * np.cos(ang + a)), np.abs(rho * np.cos(ang - a)))
        max_y = np.maximum(np.abs(rho * np.sin(ang + a)), np.abs(rho * np.sin(ang - a)))
        if zoom_out:
            scale = np.maximum(max_x / w, max_y / h)[:, None, None]
        else:
            scale = np.minimum(w / max_x, h / max_y)[:, None, None]
    grid = np.stack([w_rot * scale, h_rot * scale], axis=1).astype(np.float32)
    out = nd.BilinearSampler(src, nd.array(grid, ctx=src.context))
    return out[0] if single else out


def random_rotate(src: NDArray, angle_limits: Tuple[float, float], zoom_in: bool = False,
                  zoom_out: bool = False) -> NDArray:
    """Rotate by an angle drawn uniformly from ``angle_limits`` (one per image of a batch)."""
    if src.ndim == 3:
        degrees: Any = np.random.uniform(*angle_limits)
    else:
        degrees = nd.array(np.random.uniform(*angle_limits, size=src.shape[0]))
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)
