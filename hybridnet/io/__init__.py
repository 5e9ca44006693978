"""``mx.io``: MXNet 1.9.1's data iterators (DataDesc, DataBatch, DataIter, NDArrayIter,
ResizeIter, PrefetchingIter, CSVIter, MNISTIter, ...), batches of hybridnet NDArrays."""
from __future__ import annotations

from . import io  # noqa: F401
from . import utils  # noqa: F401
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, PrefetchingIter, ResizeIter  # noqa: F401
from .native import (CSVIter, ImageDetRecordIter, ImageRecordInt8Iter, ImageRecordIter,  # noqa: F401
                     ImageRecordIter_v1, ImageRecordUInt8Iter, ImageRecordUInt8Iter_v1, LibSVMIter,
                     MNISTIter, MXDataIter)

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter", "PrefetchingIter", "ResizeIter",
           "MXDataIter", "CSVIter", "MNISTIter", "ImageRecordIter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1", "ImageRecordInt8Iter",
           "ImageDetRecordIter", "LibSVMIter"]
