"""ImageIter: batches of decoded, augmented images from an image list or a RecordIO file
(MXNet 1.9.1's ``mx.image.ImageIter``), with its ``last_batch_handle`` modes."""
from __future__ import annotations

import logging
import numbers
import os
import random
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import io as _io
from .. import ndarray as nd
from .. import recordio
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .augmenters import CreateAugmenter
from .image import imdecode

__all__ = ["ImageIter"]


class ImageIter(_io.DataIter):
    """Iterate over images given by ``imglist`` (``[[label..., path], ...]``),
    ``path_imglist`` (lines ``index\\tlabel...\\tpath``) or ``path_imgrec`` (RecordIO, with
    ``path_imgidx`` for random access and shuffling). Images are decoded RGB, augmented by
    ``aug_list`` (default ``CreateAugmenter(data_shape, **kwargs)``) and batched as NCHW.

    ``last_batch_handle``: 'pad' fills the last batch from the start of the data, 'discard'
    drops it, 'roll_over' carries its images into the first batch of the next epoch."""

    def __init__(self, batch_size: int, data_shape: Tuple[int, int, int], label_width: int = 1,
                 path_imgrec: Optional[str] = None, path_imglist: Optional[str] = None,
                 path_root: Optional[str] = None, path_imgidx: Optional[str] = None, shuffle: bool = False,
                 part_index: int = 0, num_parts: int = 1, aug_list: Optional[list] = None,
                 imglist: Optional[list] = None, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", last_batch_handle: str = "pad", **kwargs: Any):
        super().__init__()
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ValueError("ImageIter: give path_imgrec, path_imglist or imglist")
        if dtype not in ("int32", "float32", "int64", "float64"):
            raise ValueError(f"ImageIter: unsupported dtype {dtype!r}; use int32, float32, int64 or float64")
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError(f"ImageIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', "
                             f"got {last_batch_handle!r}")
        if len(data_shape) != 3 or data_shape[0] not in (1, 3):
            raise ValueError(f"ImageIter: data_shape must be (channels, height, width) with 1 or 3 "
                             f"channels, got {data_shape!r}")
        self.dtype = dtype
        self.imgrec: Any = None
        self.imgidx: Optional[List[Any]] = None
        if path_imgrec:
            logging.info("%s: loading recordio %s...", type(self).__name__, path_imgrec)
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        self.imglist: Optional[Dict[Any, Tuple[NDArray, str]]] = None
        imgkeys: List[Any] = []
        if path_imglist:
            self.imglist = {}
            with open(path_imglist) as fin:
                for line in fin:
                    parts = line.strip().split("\t")
                    if len(parts) < 3:
                        continue
                    key = int(parts[0])
                    self.imglist[key] = (nd.array([float(v) for v in parts[1:-1]], dtype=dtype), parts[-1])
                    imgkeys.append(key)
        elif isinstance(imglist, list):
            self.imglist = {}
            for index, img in enumerate(imglist, start=1):
                if len(img) > 2:
                    label = nd.array(img[:-1], dtype=dtype)
                elif isinstance(img[0], numbers.Number):
                    label = nd.array([img[0]], dtype=dtype)
                else:
                    label = nd.array(img[0], dtype=dtype)
                self.imglist[str(index)] = (label, img[-1])
                imgkeys.append(str(index))
        self.path_root = path_root or ""
        self.batch_size = batch_size
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq: Optional[List[Any]] = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise MXNetError("ImageIter: shuffling or partitioning a .rec file needs its index "
                                 "(path_imgidx)")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if part_index >= num_parts:
                raise ValueError(f"ImageIter: part_index {part_index} must be < num_parts {num_parts}")
            n = len(self.seq)
            c = n // num_parts
            self.seq = self.seq[part_index * c:(part_index + 1) * c]
        self.provide_data = [_io.DataDesc(data_name, (batch_size,) + self.data_shape)]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [_io.DataDesc(label_name, label_shape)]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._allow_read = True
        self._cache_data: Optional[NDArray] = None
        self._cache_label: Optional[NDArray] = None
        self._cache_idx: Optional[int] = None
        self.cur = 0
        self.reset()

    def reset(self) -> None:
        """Start a new epoch (reshuffling); with 'roll_over' the cached images stay first."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self) -> None:
        """Start a new epoch and drop any rolled-over images."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = self._cache_label = self._cache_idx = None

    def next_sample(self) -> Tuple[Any, bytes]:
        """``(label, encoded image bytes)`` of the next image; StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is not None:
            if self.cur >= self.num_image:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            if self.imgrec is not None:
                header, img = recordio.unpack(self.imgrec.read_idx(idx))
                return (header.label if self.imglist is None else self.imglist[idx][0]), img
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(s)
        return header.label, img

    def _batchify(self, batch_data: NDArray, batch_label: NDArray, start: int = 0) -> int:
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping: %s", e)
                    continue
                for datum in [self.augmentation_transform(data)]:
                    batch_data[i] = self.postprocess_data(datum)
                    batch_label[i] = label
                    i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _new_batch_arrays(self) -> Tuple[NDArray, NDArray]:
        """The (data, label) arrays one batch is filled into."""
        return (nd.zeros((self.batch_size,) + self.data_shape, dtype=self.dtype),
                nd.zeros(self.provide_label[0][1], dtype=self.dtype))

    def next(self) -> _io.DataBatch:
        """The next batch (``pad`` = number of filler images in it)."""
        if self._cache_data is not None:
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            if not self._allow_read:
                raise StopIteration
            batch_data, batch_label = self._new_batch_arrays()
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return _io.DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape: Tuple[int, ...]) -> None:
        """Raise ValueError unless ``data_shape`` is (3, H, W)."""
        if len(data_shape) != 3 or data_shape[0] != 3:
            raise ValueError(f"data_shape must be (3, height, width), got {data_shape!r}")

    def check_valid_image(self, data: NDArray) -> None:
        """RuntimeError for an image with no pixels (it is then skipped)."""
        if len(data.shape) == 0 or data.size == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s: bytes) -> NDArray:
        """Decode image bytes to HWC RGB (gray when ``data_shape`` has one channel)."""
        return imdecode(s, flag=0 if self.data_shape[0] == 1 else 1)

    def read_image(self, fname: str) -> bytes:
        """The bytes of ``path_root/fname``."""
        path = os.path.join(self.path_root, fname)
        try:
            with open(path, "rb") as fin:
                return fin.read()
        except OSError as e:
            raise MXNetError(f"ImageIter: cannot read image {path!r}: {e}") from None

    def augmentation_transform(self, data: NDArray) -> NDArray:
        """Apply every augmenter in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum: NDArray) -> NDArray:
        """HWC -> CHW."""
        return nd.transpose(datum, axes=(2, 0, 1))
