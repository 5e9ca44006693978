"""``mx.kv``: key-value stores for gradient aggregation (MXNet 1.9.1 ``mxnet.kvstore``):
local/device in one process, dist_* and horovod/byteps across processes on torch.distributed.
``mx.kv.launch`` starts local workers and sets up the process group."""
from typing import Any

from .kvstore import KVStore, KVStoreBase, BytePS, Horovod, TestStore, create  # noqa: F401
from . import base  # noqa: F401
from .kvstore_server import KVStoreServer  # noqa: F401

__all__ = ["KVStore", "KVStoreBase", "BytePS", "Horovod", "TestStore", "KVStoreServer", "create",
           "launch"]


def __getattr__(name: str) -> Any:
    # imported lazily so that `python -m hybridnet.kvstore.launch` runs without a double import
    if name == "launch":
        import importlib
        return importlib.import_module(".launch", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
