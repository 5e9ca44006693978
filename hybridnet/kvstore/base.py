"""``mxnet.kvstore.base``'s names at their MXNet import path: the abstract store, the registry
decorator (``KVStoreBase.register``), the test store and ``create`` (defined in kvstore.py)."""
from .kvstore import KVStoreBase, TestStore, create  # noqa: F401

__all__ = ["KVStoreBase", "TestStore", "create"]
