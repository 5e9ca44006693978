"""Vision datasets (MXNet 1.9.1's ``gluon.data.vision.datasets``) read from LOCAL files.

hybridnet has no network access, so nothing is downloaded: put the original files in ``root``
(MXNet's default is ``$MXNET_HOME/datasets/<name>``, ``MXNET_HOME`` defaulting to ``~/.mxnet``).
Images are NDArrays in HWC layout, uint8; labels are NumPy int32 scalars (MNIST, CIFAR),
Python ints (ImageFolderDataset) or the record's float label (ImageRecordDataset), as in MXNet.
"""
from __future__ import annotations

import gzip
import os
import struct
import tarfile
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ....base import MXNetError
from ....ndarray import NDArray
from ....ndarray import array as _nd_array
from .. import dataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset"]


def _data_dir() -> str:
    return os.environ.get("MXNET_HOME", os.path.join(os.path.expanduser("~"), ".mxnet"))


def _no_download(what: str, looked_for: Sequence[str], hint: str) -> MXNetError:
    paths = "\n  ".join(looked_for)
    return MXNetError(f"{what}: data files not found. Looked for:\n  {paths}\n"
                      f"hybridnet cannot download datasets (downloads are unavailable: no network "
                      f"access). {hint}")


class _DownloadedDataset(dataset.Dataset):
    """A dataset held in memory: ``_data`` (NDArray of images) and ``_label`` (NumPy)."""

    def __init__(self, root: str, transform: Optional[Callable]):
        self._root = os.path.expanduser(os.fspath(root))
        self._transform = transform
        self._data: Any = None
        self._label: Any = None
        self._get_data()

    def _get_data(self) -> None:
        raise NotImplementedError

    def __getitem__(self, idx: int) -> Any:
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self) -> int:
        return len(self._label)


# -- MNIST / FashionMNIST ------------------------------------------------------------------------
def _read_idx(path: str) -> np.ndarray:
    """Read an IDX file (optionally gzip-compressed): big-endian header, unsigned bytes."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise MXNetError(f"cannot read IDX file {path!r}: {e}") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise MXNetError(f"{path!r} is not an IDX file (bad magic {raw[:4]!r})")
    if raw[2] != 0x08:
        raise MXNetError(f"{path!r}: IDX element type 0x{raw[2]:02x} is not supported (MNIST files "
                         f"store unsigned bytes, type 0x08)")
    ndim = raw[3]
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise MXNetError(f"{path!r}: truncated IDX header")
    dims = struct.unpack(f">{ndim}I", raw[4:head])
    count = int(np.prod(dims)) if dims else 1
    if len(raw) - head != count:
        raise MXNetError(f"{path!r}: IDX header declares shape {dims} ({count} bytes) but the file "
                         f"holds {len(raw) - head} data bytes (truncated or corrupted file)")
    return np.frombuffer(raw, dtype=np.uint8, offset=head).reshape(dims)


class MNIST(_DownloadedDataset):
    """MNIST digits: samples are (image NDArray (28, 28, 1) uint8, label np.int32).

    Reads ``train-images-idx3-ubyte[.gz]``, ``train-labels-idx1-ubyte[.gz]`` (``train=True``) or
    ``t10k-images-idx3-ubyte[.gz]``, ``t10k-labels-idx1-ubyte[.gz]`` from ``root``.
    ``transform(data, label)`` is applied to each sample.
    """

    _name = "MNIST"

    def __init__(self, root: str = os.path.join(_data_dir(), "datasets", "mnist"), train: bool = True,
                 transform: Optional[Callable] = None):
        self._train = train
        self._train_data = "train-images-idx3-ubyte.gz"
        self._train_label = "train-labels-idx1-ubyte.gz"
        self._test_data = "t10k-images-idx3-ubyte.gz"
        self._test_label = "t10k-labels-idx1-ubyte.gz"
        super().__init__(root, transform)

    def _find(self, name: str) -> Tuple[Optional[str], List[str]]:
        candidates = [os.path.join(self._root, name), os.path.join(self._root, name[:-3])]
        for c in candidates:
            if os.path.isfile(c):
                return c, candidates
        return None, candidates

    def _get_data(self) -> None:
        if self._train:
            data_name, label_name = self._train_data, self._train_label
        else:
            data_name, label_name = self._test_data, self._test_label
        data_file, looked_d = self._find(data_name)
        label_file, looked_l = self._find(label_name)
        if data_file is None or label_file is None:
            missing = (looked_d if data_file is None else []) + (looked_l if label_file is None else [])
            raise _no_download(f"{self._name}(root={self._root!r}, train={self._train})", missing,
                               f"Copy the {'training' if self._train else 'test'} IDX files "
                               f"(gzip-compressed or not) into {self._root!r}.")
        label = _read_idx(label_file)
        data = _read_idx(data_file)
        if label.ndim != 1 or data.ndim != 3:
            raise MXNetError(f"{self._name}: expected a 1-d label file and a 3-d image file, got "
                             f"shapes {label.shape} ({label_file}) and {data.shape} ({data_file})")
        if data.shape[0] != label.shape[0]:
            raise MXNetError(f"{self._name}: {data_file} holds {data.shape[0]} images but "
                             f"{label_file} holds {label.shape[0]} labels")
        data = data.reshape(data.shape + (1,))
        self._data = _nd_array(data, dtype=data.dtype)
        self._label = label.astype(np.int32)


class FashionMNIST(MNIST):
    """Fashion-MNIST (same files and layout as MNIST); default root ``.../datasets/fashion-mnist``."""

    _name = "FashionMNIST"

    def __init__(self, root: str = os.path.join(_data_dir(), "datasets", "fashion-mnist"),
                 train: bool = True, transform: Optional[Callable] = None):
        super().__init__(root, train, transform)


# -- CIFAR ---------------------------------------------------------------------------------------
def _extract(archive: str, root: str) -> None:
    with tarfile.open(archive) as tar:
        try:
            tar.extractall(root, filter="data")
        except TypeError:  # Python without extraction filters
            tar.extractall(root)


class CIFAR10(_DownloadedDataset):
    """CIFAR-10 from the binary version: samples are (image NDArray (32, 32, 3) uint8, np.int32).

    Reads ``data_batch_1.bin`` ... ``data_batch_5.bin`` (``train=True``) or ``test_batch.bin``
    from ``root`` or ``root/cifar-10-batches-bin`` (extracting ``root/cifar-10-binary.tar.gz``
    if only the archive is there).
    """

    _name = "CIFAR10"
    _subdir = "cifar-10-batches-bin"
    _archive = "cifar-10-binary.tar.gz"
    _label_bytes = 1

    def __init__(self, root: str = os.path.join(_data_dir(), "datasets", "cifar10"), train: bool = True,
                 transform: Optional[Callable] = None):
        self._train = train
        self._train_data = [f"data_batch_{i}.bin" for i in range(1, 6)]
        self._test_data = ["test_batch.bin"]
        super().__init__(root, transform)

    def _read_batch(self, filename: str) -> Tuple[np.ndarray, np.ndarray]:
        rec = 3072 + self._label_bytes
        with open(filename, "rb") as fin:
            raw = fin.read()
        if len(raw) == 0 or len(raw) % rec:
            raise MXNetError(f"{self._name}: {filename} has {len(raw)} bytes, not a positive multiple "
                             f"of the {rec}-byte record size (truncated or wrong file?)")
        data = np.frombuffer(raw, dtype=np.uint8).reshape(-1, rec)
        images = data[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, self._pick_label(data).astype(np.int32)

    def _pick_label(self, data: np.ndarray) -> np.ndarray:
        return data[:, 0]

    def _locate(self, names: List[str]) -> List[str]:
        folders = [self._root, os.path.join(self._root, self._subdir)]

        def find() -> Optional[List[str]]:
            for folder in folders:
                paths = [os.path.join(folder, n) for n in names]
                if all(os.path.isfile(p) for p in paths):
                    return paths
            return None

        found = find()
        archive = os.path.join(self._root, self._archive)
        if found is None and os.path.isfile(archive):
            _extract(archive, self._root)
            found = find()
        if found is None:
            looked = [os.path.join(f, n) for f in folders for n in names] + [archive]
            raise _no_download(f"{self._name}(root={self._root!r}, train={self._train})", looked,
                               f"Put the binary-version files in {self._root!r} (or in "
                               f"{os.path.join(self._root, self._subdir)!r}), or the archive "
                               f"{self._archive} in {self._root!r}.")
        return found

    def _get_data(self) -> None:
        names = self._train_data if self._train else self._test_data
        parts = [self._read_batch(p) for p in self._locate(names)]
        data = np.concatenate([p[0] for p in parts])
        label = np.concatenate([p[1] for p in parts])
        self._data = _nd_array(np.ascontiguousarray(data), dtype=np.uint8)
        self._label = label


class CIFAR100(CIFAR10):
    """CIFAR-100 from the binary version (``train.bin`` / ``test.bin`` in ``root`` or
    ``root/cifar-100-binary``): labels are the 20 coarse classes, or the 100 fine ones with
    ``fine_label=True``."""

    _name = "CIFAR100"
    _subdir = "cifar-100-binary"
    _archive = "cifar-100-binary.tar.gz"
    _label_bytes = 2

    def __init__(self, root: str = os.path.join(_data_dir(), "datasets", "cifar100"),
                 fine_label: bool = False, train: bool = True, transform: Optional[Callable] = None):
        self._train = train
        self._fine_label = fine_label
        self._train_data = ["train.bin"]
        self._test_data = ["test.bin"]
        _DownloadedDataset.__init__(self, root, transform)

    def _pick_label(self, data: np.ndarray) -> np.ndarray:
        return data[:, 1 if self._fine_label else 0]


# -- image files -----------------------------------------------------------------------------------
def _decode(buf: bytes, flag: int, source: str) -> NDArray:
    """Decode image bytes to an RGB (flag 1, HxWx3) or gray (flag 0, HxWx1) uint8 NDArray with
    ``mx.image.imdecode``'s checked decoder (declared sizes are checked before decoding)."""
    from .... import recordio
    return _nd_array(recordio._imdecode(bytes(buf), flag, True, source), dtype=np.uint8)


class ImageRecordDataset(dataset.RecordFileDataset):
    """Images packed in a RecordIO file (``recordio.pack_img``): samples are
    (image NDArray HWC uint8 RGB, header label). ``flag`` 0 gives grayscale (HxWx1)."""

    def __init__(self, filename: str, flag: int = 1, transform: Optional[Callable] = None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx: int) -> Any:
        from .... import recordio
        record = super().__getitem__(idx)
        header, img = recordio.unpack(record)
        data = _decode(img, self._flag, f"record {idx} of {self.filename}")
        if self._transform is not None:
            return self._transform(data, header.label)
        return data, header.label


class ImageFolderDataset(dataset.Dataset):
    """Images in ``root/<class name>/<image>``: samples are (image NDArray HWC uint8, int label),
    labels numbering the sorted class folders; ``synsets`` lists the class names and ``items``
    the (filename, label) pairs. Only ``.jpg``, ``.jpeg`` and ``.png`` files are used."""

    def __init__(self, root: str, flag: int = 1, transform: Optional[Callable] = None):
        self._root = os.path.expanduser(os.fspath(root))
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        if not os.path.isdir(self._root):
            raise MXNetError(f"ImageFolderDataset: {self._root!r} is not a directory")
        self._list_images(self._root)

    def _list_images(self, root: str) -> None:
        self.synsets: List[str] = []
        self.items: List[Tuple[str, int]] = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(f"Ignoring {filename} of type {ext}. Only support "
                                  f"{', '.join(self._exts)}")
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx: int) -> Any:
        filename, label = self.items[idx]
        with open(filename, "rb") as f:
            img = _decode(f.read(), self._flag, filename)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self) -> int:
        return len(self.items)
