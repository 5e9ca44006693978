"""``mx.kv``: key-value stores for gradient aggregation (local, device, dist on torch.distributed)."""
from .kvstore import KVStore, create  # noqa: F401
