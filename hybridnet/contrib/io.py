"""``mx.contrib.io``: :class:`DataLoaderIter`, a Gluon ``DataLoader`` as a Module-API
``DataIter``."""
from __future__ import annotations

from typing import Any, List, Optional

from ..io import DataDesc, DataIter
from ..ndarray.ndarray import NDArray
from .. import ndarray as nd

__all__ = ["DataLoaderIter"]


class DataLoaderIter(DataIter):
    """Batches of a ``gluon.data.DataLoader`` yielding ``(data, label)``, cast to ``dtype``.

    A last batch shorter than the first is padded up to ``batch_size`` (``getpad()`` says by
    how many); MXNet leaves the padding rows uninitialised, here they are zeros.
    """

    def __init__(self, loader: Any, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32"):
        super().__init__()
        self._loader = loader
        self._iter = iter(self._loader)
        data, label = next(self._iter)
        self.batch_size = data.shape[0]
        self.dtype = dtype
        self.provide_data = [DataDesc(data_name, data.shape, dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, dtype)]
        self._current_batch: Optional[Any] = None
        self.reset()

    def reset(self) -> None:
        self._iter = iter(self._loader)

    def iter_next(self) -> bool:
        try:
            self._current_batch = next(self._iter)
        except StopIteration:
            self._current_batch = None
        return self._current_batch is not None

    def _padded(self, x: NDArray) -> List[NDArray]:
        if self.getpad():
            ret = nd.zeros(shape=(self.batch_size,) + tuple(x.shape[1:]), dtype=self.dtype)
            ret[:x.shape[0]] = x.astype(self.dtype)
            return [ret]
        return [x.astype(self.dtype)]

    def getdata(self) -> List[NDArray]:
        return self._padded(self._current_batch[0])  # type: ignore[index]

    def getlabel(self) -> List[NDArray]:
        return self._padded(self._current_batch[1])  # type: ignore[index]

    def getpad(self) -> int:
        return self.batch_size - self._current_batch[0].shape[0]  # type: ignore[index]

    def getindex(self) -> None:
        return None
