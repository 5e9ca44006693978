"""KVStore (MXNet's ``mx.kv``): 'local'/'device' aggregate across contexts in-process;
'dist_sync'/'dist_device_sync'/'horovod'-style kinds all-reduce across processes with
``torch.distributed`` (the process group must be initialized by the launcher, e.g. torchrun)."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import torch

from ..base import MXNetError
from ..ndarray.ndarray import NDArray

__all__ = ["KVStore", "create"]

_LOCAL = ("local", "device", "local_update_cpu", "local_allreduce_cpu", "local_allreduce_device")
_DIST = ("dist", "dist_sync", "dist_device_sync", "dist_sync_device", "dist_async", "nccl", "horovod")


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class KVStore:
    """Holds one value per key; ``push`` sums the given values (and all-reduces across workers
    for dist kinds); ``pull`` copies the stored value out; an optimizer set with
    ``set_optimizer`` updates the stored value on push (update_on_kvstore)."""

    def __init__(self, kind: str = "local"):
        if kind not in _LOCAL + _DIST:
            raise MXNetError(f"unknown KVStore type {kind!r}; expected one of {list(_LOCAL + _DIST)}")
        self._type = kind
        self._store: dict = {}
        self._updater: Optional[Callable] = None
        self._optimizer: Any = None
        self._dist = kind in _DIST
        if self._dist:
            import torch.distributed as dist
            if not (dist.is_available() and dist.is_initialized()):
                raise MXNetError(f"KVStore {kind!r} needs torch.distributed initialized: launch with "
                                 f"torchrun (or call torch.distributed.init_process_group) before "
                                 f"creating it")

    @property
    def type(self) -> str:
        return self._type

    @property
    def rank(self) -> int:
        if self._dist:
            import torch.distributed as dist
            return dist.get_rank()
        return 0

    @property
    def num_workers(self) -> int:
        if self._dist:
            import torch.distributed as dist
            return dist.get_world_size()
        return 1

    def init(self, key: Any, value: Any) -> None:
        for k, v in zip(_as_list(key), _as_list(value) if isinstance(key, (list, tuple)) else [value]):
            v0 = v[0] if isinstance(v, (list, tuple)) else v
            self._store[k] = NDArray(v0._t.detach().clone())
            if self._dist:
                import torch.distributed as dist
                dist.broadcast(self._store[k]._t, src=0)

    def _reduce(self, values: Sequence[NDArray]) -> torch.Tensor:
        acc = values[0]._t.detach().clone()
        for v in values[1:]:
            acc.add_(v._t.detach().to(acc.device))
        if self._dist:
            import torch.distributed as dist
            dist.all_reduce(acc)
        return acc

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        keys = _as_list(key)
        values = value if isinstance(key, (list, tuple)) else [value]
        for k, v in zip(keys, values):
            if k not in self._store:
                raise MXNetError(f"KVStore: key {k!r} has not been initialized; call init first")
            reduced = self._reduce(_as_list(v))
            with torch.no_grad():
                if self._updater is not None:
                    self._updater(k, NDArray(reduced), self._store[k])
                else:
                    self._store[k]._t.copy_(reduced)

    def pull(self, key: Any, out: Any = None, priority: int = 0, ignore_sparse: bool = True) -> None:
        keys = _as_list(key)
        outs = out if isinstance(key, (list, tuple)) else [out]
        for k, o in zip(keys, outs):
            if k not in self._store:
                raise MXNetError(f"KVStore: key {k!r} has not been initialized; call init first")
            with torch.no_grad():
                for t in _as_list(o):
                    t._t.copy_(self._store[k]._t.to(t._t.device))

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """Sum ``value`` over devices (and workers) into ``out`` (or back into ``value``)."""
        keys = _as_list(key)
        values = value if isinstance(key, (list, tuple)) else [value]
        outs = (out if isinstance(key, (list, tuple)) else [out]) if out is not None else values
        for k, v, o in zip(keys, values, outs):
            reduced = self._reduce(_as_list(v))
            with torch.no_grad():
                for t in _as_list(o):
                    t._t.copy_(reduced.to(t._t.device))

    def set_optimizer(self, optimizer: Any) -> None:
        from ..optimizer import get_updater
        self._optimizer = optimizer
        self._updater = get_updater(optimizer)

    def set_gradient_compression(self, compression_params: dict) -> None:
        raise MXNetError("gradient compression is not supported")

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        if self._updater is None:
            raise MXNetError("Cannot save states for distributed training without an optimizer")
        from ..formats.atomic import write_atomic
        write_atomic(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        if self._updater is None:
            raise MXNetError("Cannot load states for distributed training without an optimizer")
        with open(fname, "rb") as f:
            self._updater.set_states(f.read())

    def barrier(self) -> None:
        if self._dist:
            import torch.distributed as dist
            dist.barrier()


def create(name: str = "local") -> KVStore:
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    return KVStore(name)
