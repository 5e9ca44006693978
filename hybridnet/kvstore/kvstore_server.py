"""``mxnet.kvstore.kvstore_server``: MXNet's parameter-server process.

hybridnet's distributed stores are serverless (an all-reduce over torch.distributed among the
workers), so there is no server or scheduler role to run; :class:`KVStoreServer` says so, and
a process started with ``DMLC_ROLE=server``/``scheduler`` (MXNet's launcher) is told how to
launch hybridnet workers instead.
"""
from __future__ import annotations

import os
from typing import Any

from ..base import MXNetError

__all__ = ["KVStoreServer"]

_SERVERLESS = ("hybridnet's dist kvstores have no parameter servers: workers all-reduce over "
               "torch.distributed. Start only workers, e.g. `python -m hybridnet.kvstore.launch "
               "-n 2 python train.py` (or torchrun), and use mx.kv.create('dist_sync').")


class KVStoreServer:
    """MXNet's server loop for a ``dist_*`` kvstore; refused with the serverless alternative."""

    def __init__(self, kvstore: Any) -> None:
        raise MXNetError(f"KVStoreServer: {_SERVERLESS}")


def _init_kvstore_server_module() -> None:
    """MXNet turns a process launched as a server/scheduler into one at import; here such a
    process gets an error explaining the worker-only launch."""
    role = os.environ.get("DMLC_ROLE", "worker")
    if role in ("server", "scheduler"):
        raise MXNetError(f"this process was launched with DMLC_ROLE={role!r}. {_SERVERLESS}")
