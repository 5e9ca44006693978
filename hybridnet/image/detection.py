"""``mx.image.detection``: object-detection augmenters and ``ImageDetIter`` (MXNet 1.9.1's).

A detection label is an ``(objects, width >= 5)`` array of ``[class, xmin, ymin, xmax, ymax,
...]`` rows with coordinates relative to the image (0..1); a raw label from a .lst/.rec file is
``[header_width, object_width, header..., objects...]`` flattened (MXNet's layout). Each
``Det*Aug`` maps ``(image HWC, label)`` to a new pair, keeping the boxes on the objects.
"""
from __future__ import annotations

import json
import logging
import random
import warnings
from math import sqrt
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import io as _io
from .. import ndarray as nd
from ..base import numeric_types
from ..ndarray.ndarray import NDArray
from .augmenters import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug, ForceResizeAug,
                         HueJitterAug, LightingAug, RandomGrayAug, ResizeAug)
from .image import copyMakeBorder, fixed_crop
from .image_iter import ImageIter

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
           "DetRandomCropAug", "DetRandomPadAug", "CreateMultiRandCropAugmenter",
           "CreateDetAugmenter", "ImageDetIter"]

Range = Union[float, Tuple[float, float], List[float]]


class DetAugmenter:
    """Base of the detection augmenters: ``aug(src, label) -> (src, label)``."""

    def __init__(self, **kwargs: Any):
        self._kwargs = {k: (v.asnumpy() if isinstance(v, NDArray) else v) for k, v in kwargs.items()}
        self._kwargs = {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                        for k, v in self._kwargs.items()}

    def dumps(self) -> Any:
        """``[name, parameters]`` as JSON."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src: NDArray, label: np.ndarray) -> Tuple[NDArray, np.ndarray]:
        raise NotImplementedError("Must override implementation.")


class DetBorrowAug(DetAugmenter):
    """A classification augmenter applied to the image only (the boxes must stay valid:
    colour, cast, normalise, resize)."""

    def __init__(self, augmenter: Augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError("DetBorrowAug: expected an mx.image.Augmenter")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self) -> Any:
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src: NDArray, label: np.ndarray) -> Tuple[NDArray, np.ndarray]:
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """One augmenter of ``aug_list`` picked at random, or none with probability ``skip_prob``."""

    def __init__(self, aug_list: Any, skip_prob: float = 0):
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError("DetRandomSelectAug: allow DetAugmenter in list only")
        self.aug_list = list(aug_list)
        self.skip_prob = skip_prob if aug_list else 1

    def dumps(self) -> Any:
        return [type(self).__name__.lower(), [x.dumps() for x in self.aug_list]]

    def __call__(self, src: NDArray, label: np.ndarray) -> Tuple[NDArray, np.ndarray]:
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Mirror the image and its boxes with probability ``p``."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray, label: np.ndarray) -> Tuple[NDArray, np.ndarray]:
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return src, label

    @staticmethod
    def _flip_label(label: np.ndarray) -> None:
        tmp = 1.0 - label[:, 1]
        label[:, 1] = 1.0 - label[:, 3]
        label[:, 3] = tmp


def _as_range(v: Range, what: str, who: str) -> Tuple[float, float]:
    if isinstance(v, (tuple, list)):
        return float(v[0]), float(v[1])
    if not isinstance(v, numeric_types):
        raise TypeError(f"{who}: {what} must be a number or a (low, high) pair, got {v!r}")
    logging.info("Using fixed %s: %s in %s", what, v, who)
    return float(v), float(v)


def _areas(boxes: np.ndarray) -> np.ndarray:
    return np.maximum(0, boxes[:, 3] - boxes[:, 1]) * np.maximum(0, boxes[:, 2] - boxes[:, 0])


class DetRandomCropAug(DetAugmenter):
    """Random crops (SSD's sampler): a crop of relative area in ``area_range`` and aspect ratio in
    ``aspect_ratio_range`` is kept if every object it touches is covered more than
    ``min_object_covered``; objects then covered less than ``min_eject_coverage`` are dropped."""

    def __init__(self, min_object_covered: float = 0.1, aspect_ratio_range: Range = (0.75, 1.33),
                 area_range: Range = (0.05, 1.0), min_eject_coverage: float = 0.3,
                 max_attempts: int = 50):
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect ratio", "DetRandomCropAug")
        area_range = _as_range(area_range, "area range", "DetRandomCropAug")
        super().__init__(min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            warnings.warn(f"Skip DetRandomCropAug due to invalid area_range: {area_range}")
        elif aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            warnings.warn(f"Skip DetRandomCropAug due to invalid aspect_ratio_range: "
                          f"{aspect_ratio_range}")
        else:
            self.enabled = True

    def __call__(self, src: NDArray, label: np.ndarray) -> Tuple[NDArray, np.ndarray]:
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    @staticmethod
    def _intersect(boxes: np.ndarray, xmin: float, ymin: float, xmax: float, ymax: float) -> np.ndarray:
        left, right = np.maximum(boxes[:, 0], xmin), np.minimum(boxes[:, 2], xmax)
        top, bot = np.maximum(boxes[:, 1], ymin), np.minimum(boxes[:, 3], ymax)
        out = np.stack([left, top, right, bot], axis=1)
        out[np.logical_or(left >= right, top >= bot)] = 0
        return out

    def _check_satisfy_constraints(self, label: np.ndarray, xmin: int, ymin: int, xmax: int,
                                   ymax: int, width: int, height: int) -> bool:
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        x1, y1, x2, y2 = xmin / width, ymin / height, xmax / width, ymax / height
        object_areas = _areas(label[:, 1:5])
        valid = np.where(object_areas * width * height > 2)[0]
        if valid.size < 1:
            return False
        inter = self._intersect(label[valid, 1:5], x1, y1, x2, y2)
        coverages = _areas(inter) / object_areas[valid]
        coverages = coverages[coverages > 0]
        return bool(coverages.size > 0 and np.amin(coverages) > self.min_object_covered)

    def _update_labels(self, label: np.ndarray, crop_box: Tuple[int, int, int, int], height: int,
                       width: int) -> Optional[np.ndarray]:
        xmin, ymin = crop_box[0] / width, crop_box[1] / height
        w, h = crop_box[2] / width, crop_box[3] / height
        out = label.copy()
        out[:, (1, 3)] -= xmin
        out[:, (2, 4)] -= ymin
        out[:, (1, 3)] /= w
        out[:, (2, 4)] /= h
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        coverage = _areas(out[:, 1:5]) * w * h / _areas(label[:, 1:5])
        valid = np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2])
        valid = np.where(np.logical_and(valid, coverage > self.min_eject_coverage))[0]
        return out[valid] if valid.size else None

    def _random_crop_proposal(self, label: np.ndarray, height: int, width: int) -> tuple:
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(sqrt(min_area / ratio)))
            max_h = int(round(sqrt(max_area / ratio)))
            if round(max_h * ratio) > width:
                max_h = int((width + 0.4999999) / ratio)  # keep w = round(h * ratio) <= width
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            area = w * h
            if area < min_area:
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return x, y, w, h, new_label
        return ()


class DetRandomPadAug(DetAugmenter):
    """Random expansion (SSD's "zoom out"): the image is placed in a larger canvas of relative
    area in ``area_range`` filled with ``pad_val``; the boxes shrink accordingly."""

    def __init__(self, aspect_ratio_range: Range = (0.75, 1.33), area_range: Range = (1.0, 3.0),
                 max_attempts: int = 50, pad_val: Any = (128, 128, 128)):
        if not isinstance(pad_val, (list, tuple)):
            pad_val = (pad_val,)
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect ratio", "DetRandomPadAug")
        area_range = _as_range(area_range, "area range", "DetRandomPadAug")
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            warnings.warn(f"Skip DetRandomPadAug due to invalid parameters: {area_range}")
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn(f"Skip DetRandomPadAug due to invalid aspect_ratio_range: "
                          f"{aspect_ratio_range}")
        else:
            self.enabled = True

    def __call__(self, src: NDArray, label: np.ndarray) -> Tuple[NDArray, np.ndarray]:
        height, width = src.shape[0], src.shape[1]
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0,
                                 values=[float(v) for v in self.pad_val])
        return src, label

    @staticmethod
    def _update_labels(label: np.ndarray, pad_box: Tuple[int, int, int, int], height: int,
                       width: int) -> np.ndarray:
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label: np.ndarray, height: int, width: int) -> tuple:
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(sqrt(min_area / ratio)))
            max_h = int(round(sqrt(max_area / ratio)))
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            h = max(h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue  # marginal padding is not helpful
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return x, y, w, h, self._update_labels(label, (x, y, w, h), height, width)
        return ()


def CreateMultiRandCropAugmenter(min_object_covered: Any = 0.1, aspect_ratio_range: Any = (0.75, 1.33),
                                 area_range: Any = (0.05, 1.0), min_eject_coverage: Any = 0.3,
                                 max_attempts: Any = 50, skip_prob: float = 0) -> DetRandomSelectAug:
    """Several :class:`DetRandomCropAug` (one per list entry of the parameters, single values
    repeated), one picked at random per image."""
    params = [p if isinstance(p, list) else [p] for p in
              (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts)]
    num = max(len(p) for p in params)
    for k, p in enumerate(params):
        if len(p) != num:
            if len(p) != 1:
                raise ValueError("CreateMultiRandCropAugmenter: list parameters must have the "
                                 "same length (or be single values)")
            params[k] = p * num
    augs: List[DetAugmenter] = [
        DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                         min_eject_coverage=mec, max_attempts=ma)
        for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def CreateDetAugmenter(data_shape: Sequence[int], resize: int = 0, rand_crop: float = 0,
                       rand_pad: float = 0, rand_gray: float = 0, rand_mirror: bool = False,
                       mean: Any = None, std: Any = None, brightness: float = 0,
                       contrast: float = 0, saturation: float = 0, pca_noise: float = 0,
                       hue: float = 0, inter_method: int = 2, min_object_covered: Any = 0.1,
                       aspect_ratio_range: Any = (0.75, 1.33), area_range: Any = (0.05, 3.0),
                       min_eject_coverage: Any = 0.3, max_attempts: Any = 50,
                       pad_val: Any = (127, 127, 127)) -> List[DetAugmenter]:
    """MXNet's standard detection augmenter list, in its order."""
    auglist: List[DetAugmenter] = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                    area_range, min_eject_coverage, max_attempts,
                                                    skip_prob=(1 - rand_crop)))
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:
        pad_aug = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        auglist.append(DetRandomSelectAug([pad_aug], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        eigval = np.array([55.46, 4.794, 1.148])
        eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                           [-0.5836, -0.6948, 0.4203]])
        auglist.append(DetBorrowAug(LightingAug(pca_noise, eigval, eigvec)))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    if mean is True:
        mean = np.array([123.68, 116.28, 103.53])
    if std is True:
        std = np.array([58.395, 57.12, 57.375])
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist


class ImageDetIter(ImageIter):
    """Batches of images and padded detection labels ``(batch, max objects, object width)``
    (rows of -1 pad images with fewer objects); ``aug_list`` defaults to
    ``CreateDetAugmenter(data_shape, **kwargs)``."""

    def __init__(self, batch_size: int, data_shape: Tuple[int, int, int],
                 path_imgrec: Optional[str] = None, path_imglist: Optional[str] = None,
                 path_root: Optional[str] = None, path_imgidx: Optional[str] = None,
                 shuffle: bool = False, part_index: int = 0, num_parts: int = 1,
                 aug_list: Optional[list] = None, imglist: Optional[list] = None,
                 data_name: str = "data", label_name: str = "label",
                 last_batch_handle: str = "pad", **kwargs: Any):
        super().__init__(batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root, path_imgidx=path_imgidx,
                         shuffle=shuffle, part_index=part_index, num_parts=num_parts, aug_list=[],
                         imglist=imglist, data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        label_shape = self._estimate_label_shape()
        self.provide_label = [_io.DataDesc(label_name, (self.batch_size,) + label_shape)]
        self.label_shape = label_shape

    @staticmethod
    def _check_valid_label(label: np.ndarray) -> None:
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError(f"Label with shape (1+, 5+) required, {label} received.")
        valid = np.logical_and(label[:, 0] >= 0, np.logical_and(label[:, 3] > label[:, 1],
                                                                label[:, 4] > label[:, 2]))
        if not valid.any():
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self) -> Tuple[int, int]:
        max_count, width = 0, 5
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count, width = max(max_count, label.shape[0]), label.shape[1]
        except StopIteration:
            pass
        self.reset()
        return max_count, width

    @staticmethod
    def _parse_label(label: Any) -> np.ndarray:
        raw = (label.asnumpy() if isinstance(label, NDArray) else np.asarray(label)).ravel()
        if raw.size < 7:
            raise RuntimeError(f"Label shape is invalid: {raw.shape}")
        header_width, obj_width = int(raw[0]), int(raw[1])
        if obj_width <= 0 or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError(f"Label shape {raw.shape} inconsistent with annotation width "
                               f"{obj_width}.")
        out = np.reshape(raw[header_width:], (-1, obj_width))
        valid = np.where(np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2]))[0]
        if valid.size < 1:
            raise RuntimeError("Encounter sample with no valid label.")
        return out[valid, :]

    def reshape(self, data_shape: Optional[Tuple[int, ...]] = None,
                label_shape: Optional[Tuple[int, int]] = None) -> None:
        """Change the data and/or label shape of the batches to come."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [_io.DataDesc(self.provide_data[0][0],
                                              (self.batch_size,) + tuple(data_shape))]
            self.data_shape = tuple(data_shape)
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [_io.DataDesc(self.provide_label[0][0],
                                               (self.batch_size,) + tuple(label_shape))]
            self.label_shape = tuple(label_shape)

    def _batchify(self, batch_data: NDArray, batch_label: NDArray, start: int = 0) -> int:
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image(data)
                    label = self._parse_label(label)
                    data, label = self.augmentation_transform(data, label)
                    self._check_valid_label(label)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping: %s", e)
                    continue
                batch_data[i] = self.postprocess_data(data)
                rows = np.full(batch_label.shape[1:], -1, dtype=np.float32)
                n = min(label.shape[0], rows.shape[0])
                rows[:n] = label[:n, :rows.shape[1]]
                batch_label[i] = nd.array(rows)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _new_batch_arrays(self) -> Tuple[NDArray, NDArray]:
        """Data, and labels filled with -1 (rows past an image's objects stay -1, as in MXNet)."""
        return (nd.zeros((self.batch_size,) + tuple(self.data_shape)),
                nd.full(self.provide_label[0][1], -1))

    def augmentation_transform(self, data: NDArray, label: np.ndarray  # type: ignore[override]
                               ) -> Tuple[NDArray, np.ndarray]:
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def check_label_shape(self, label_shape: Tuple[int, int]) -> None:
        """A new label shape may only grow the object count and must keep the object width."""
        if len(label_shape) != 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(f"Attempts to reduce label count from {self.label_shape[0]} to "
                             f"{label_shape[0]}, not allowed.")
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError(f"label_shape object width inconsistent: "
                             f"{self.provide_label[0][1][2]} vs {label_shape[1]}.")

    def sync_label_shape(self, it: "ImageDetIter", verbose: bool = False) -> "ImageDetIter":
        """Give this iterator and ``it`` (e.g. train and validation) the same label shape."""
        if not isinstance(it, ImageDetIter):
            raise TypeError("Synchronize with invalid iterator.")
        if self.label_shape[1] != it.label_shape[1]:
            raise ValueError("object width mismatch.")
        max_count = max(self.label_shape[0], it.label_shape[0])
        if max_count > self.label_shape[0]:
            self.reshape(None, (max_count, self.label_shape[1]))
        if max_count > it.label_shape[0]:
            it.reshape(None, (max_count, it.label_shape[1]))
        if verbose and max_count > min(self.label_shape[0], it.label_shape[0]):
            logging.info("Resized label_shape to (%d, %d).", max_count, self.label_shape[1])
        return it

    def draw_next(self, *args: Any, **kwargs: Any) -> Any:
        """MXNet draws the boxes with OpenCV windows; hybridnet has no OpenCV."""
        raise NotImplementedError("ImageDetIter.draw_next needs OpenCV windows, which hybridnet "
                                  "does not use; draw next(iter)'s boxes with matplotlib instead")
