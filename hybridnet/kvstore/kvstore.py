"""Key-value stores for data-parallel training (MXNet 1.9.1 ``mx.kv``).

* ``local``/``device`` (and ``nccl``, ``local_*``): one process; ``push`` sums the values given
  for a key (one per device) and stores the sum, or hands it to the updater.
* ``dist_sync``/``dist_device_sync``/``dist_sync_device``/``dist``: one process per worker;
  ``push`` sums over devices and then over all workers (``torch.distributed`` all-reduce, gloo on
  CPU), so every worker sees what MXNet's parameter server would hold. ``init`` keeps rank 0's
  value. With an optimizer set, every worker runs the same update on the same summed gradient
  (MXNet runs it once on the servers); the results are identical. ``dist_async`` and
  ``dist_async_device`` are accepted but run synchronously (all-reduce has no asynchronous mode).
* ``horovod``: an all-reduce store without ``init``/``push``/``pull`` or optimizer, like MXNet's
  Horovod KVStore, on ``torch.distributed``.
* ``teststore``: MXNet's in-process test store (``pushpull`` sums, no optimizer).

Distributed kinds initialize the default process group from the environment when needed (see
:mod:`hybridnet.kvstore.launch`). Collectives for several keys are coalesced into flat buffers.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import torch

from ..base import MXNetError
from ..ndarray.ndarray import NDArray


def _wrap(t: torch.Tensor) -> NDArray:
    """An NDArray of ``t``'s storage type (sparse values pushed or stored stay sparse)."""
    if t.layout is torch.strided:
        return NDArray(t)
    from ..ndarray.sparse import wrap
    return wrap(t)

__all__ = ["KVStoreBase", "KVStore", "Horovod", "TestStore", "create"]

Key = Union[int, str]

_LOCAL_KINDS = ("local", "device", "nccl", "local_update_cpu", "local_allreduce_cpu",
                "local_allreduce_device")
_DIST_KINDS = ("dist", "dist_sync", "dist_device_sync", "dist_sync_device", "dist_async",
               "dist_async_device")
_BUCKET_BYTES = 32 << 20  # flat all-reduce buffers are cut at this size


# -- argument normalisation -----------------------------------------------------------------
def _check_key(key: Any, who: str) -> Key:
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise TypeError(f"KVStore.{who}: keys must be int or str, got {type(key).__name__} {key!r}")
    return key


def _arrays(value: Any, who: str, key: Key, what: str = "value") -> List[NDArray]:
    vals = list(value) if isinstance(value, (list, tuple)) else [value]
    if not vals:
        raise ValueError(f"KVStore.{who}: empty {what} list for key {key!r}")
    for v in vals:
        if not isinstance(v, NDArray):
            raise TypeError(f"KVStore.{who}: {what} for key {key!r} must be an NDArray or a list of "
                            f"NDArrays (one per device), got {type(v).__name__}")
    return vals


def _pairs(key: Any, value: Any, who: str, what: str = "value") -> List[Tuple[Key, List[NDArray]]]:
    """``[(key, [arrays...])]`` from MXNet's key/value conventions: one key with an NDArray or a
    list of NDArrays (one per device), or a list of keys with one such entry per key."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            n = len(value) if isinstance(value, (list, tuple)) else 1
            raise ValueError(f"KVStore.{who}: got {len(key)} keys but {n} {what}s; pass one {what} "
                             f"(NDArray or list of NDArrays) per key")
        keys = [_check_key(k, who) for k in key]
        if len({isinstance(k, str) for k in keys}) > 1:
            raise TypeError(f"KVStore.{who}: inconsistent types of keys detected in {list(keys)}; "
                            f"use all int or all str keys")
        return [(k, _arrays(v, who, k, what)) for k, v in zip(keys, value)]
    k = _check_key(key, who)
    return [(k, _arrays(value, who, k, what))]


def _grouped(pairs: List[Tuple[Key, List[NDArray]]]) -> List[Tuple[Key, List[NDArray]]]:
    """Merge entries of the same key (MXNet groups a key's values before reducing)."""
    out: Dict[Key, List[NDArray]] = {}
    for k, vals in pairs:
        out.setdefault(k, []).extend(vals)
    return list(out.items())


class KeyTypeError(MXNetError, TypeError):
    """A key of the other type than the store's (int and str keys do not mix): MXNet raises
    MXNetError here; a TypeError too."""


def _copy_into(dst: NDArray, src: torch.Tensor, who: str, key: Key) -> None:
    if tuple(dst.shape) != tuple(src.shape):
        raise MXNetError(f"KVStore.{who}: key {key!r} holds shape {tuple(src.shape)} but the output "
                         f"array has shape {tuple(dst.shape)}; pass arrays of the stored shape")
    if dst._t.layout is not torch.strided or src.layout is not torch.strided:
        from ..ndarray.sparse import store_into  # sparse storage: cast to the output's type
        store_into(dst, src.detach().clone())
        return
    with torch.no_grad():
        dst._t.copy_(src)


def _sum_values(key: Key, vals: Sequence[NDArray], who: str) -> torch.Tensor:
    """A fresh tensor with the sum of ``vals`` (on the first value's device and dtype)."""
    first = vals[0]._t.detach()
    for v in vals[1:]:
        if tuple(v.shape) != tuple(first.shape):
            raise MXNetError(f"KVStore.{who}: values for key {key!r} have different shapes "
                             f"{tuple(first.shape)} and {tuple(v.shape)}; every device must push "
                             f"an array of the same shape")
    if any(v._t.layout is not torch.strided for v in vals):  # sparse values: sum keeps row_sparse
        from ..ndarray.sparse import sum_tensors
        return sum_tensors([v._t.detach().to(device=first.device, dtype=first.dtype) for v in vals])
    acc = first.clone()
    for v in vals[1:]:
        acc.add_(v._t.detach().to(device=acc.device, dtype=acc.dtype))
    return acc


def _broadcast_lists(comm: Optional["_Collective"], arrays: Sequence[Sequence[NDArray]]) -> None:
    """Overwrite every array of each list with rank 0's first array of that list."""
    firsts = [a[0]._t.detach().clone() for a in arrays]
    if comm is not None:
        comm.broadcast(firsts, src=0)
    for arrs, src in zip(arrays, firsts):
        for o in arrs:
            _copy_into(o, src, "_sync_arrays", "-")


# -- collectives over torch.distributed -----------------------------------------------------
class _Collective:
    """Coalesced all-reduce / broadcast on the default torch.distributed group."""

    def __init__(self, who: str):
        from . import launch
        launch.ensure_initialized(who)
        import torch.distributed as dist
        self._dist = dist
        self._cpu_only = dist.get_backend() == "gloo"

    @property
    def rank(self) -> int:
        return int(self._dist.get_rank())

    @property
    def size(self) -> int:
        return int(self._dist.get_world_size())

    def barrier(self) -> None:
        self._dist.barrier()

    def _buckets(self, tensors: Sequence[torch.Tensor]) -> Iterable[List[torch.Tensor]]:
        groups: Dict[Tuple[torch.dtype, torch.device], List[torch.Tensor]] = {}
        for t in tensors:
            groups.setdefault((t.dtype, t.device), []).append(t)
        for ts in groups.values():
            bucket: List[torch.Tensor] = []
            nbytes = 0
            for t in ts:
                size = t.numel() * t.element_size()
                if bucket and nbytes + size > _BUCKET_BYTES:
                    yield bucket
                    bucket, nbytes = [], 0
                bucket.append(t)
                nbytes += size
            if bucket:
                yield bucket

    def _run(self, tensors: Sequence[torch.Tensor], op: Callable[[torch.Tensor], Any]) -> None:
        """Apply the collective ``op`` to every tensor in place, one flat buffer per bucket."""
        with torch.no_grad():
            for bucket in self._buckets(tensors):
                dev = bucket[0].device
                comm_dev = torch.device("cpu") if self._cpu_only else dev
                if len(bucket) == 1 and bucket[0].is_contiguous() and dev == comm_dev:
                    op(bucket[0])
                    continue
                flat = torch.cat([t.reshape(-1) for t in bucket]).to(comm_dev)
                op(flat)
                offset = 0
                for t in bucket:
                    n = t.numel()
                    t.copy_(flat[offset:offset + n].view(t.shape))
                    offset += n

    def all_reduce(self, tensors: Sequence[torch.Tensor]) -> None:
        """Sum each tensor over all workers, in place."""
        self._run(tensors, lambda t: self._dist.all_reduce(t))

    def broadcast(self, tensors: Sequence[torch.Tensor], src: int = 0) -> None:
        """Overwrite each tensor with rank ``src``'s value, in place."""
        self._run(tensors, lambda t: self._dist.broadcast(t, src=src))


# -- the interface --------------------------------------------------------------------------
class KVStoreBase:
    """The abstract key-value store interface (MXNet's ``mx.kv.KVStoreBase``): subclasses
    registered with :meth:`register` can be created by (lower-cased class) name."""

    OPTIMIZER = "optimizer"
    kv_registry: Dict[str, type] = {}

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """Write rank 0's ``value`` for ``key`` into ``out`` on every worker."""
        raise NotImplementedError()

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """Sum ``value`` (over devices and workers) and write the result to ``out``
        (``value`` when ``out`` is None)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer: Any) -> None:
        """Run ``optimizer`` on the store's values when gradients are pushed."""
        raise NotImplementedError()

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability`` (``KVStoreBase.OPTIMIZER``)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str) -> None:
        raise NotImplementedError()

    @property
    def type(self) -> str:
        raise NotImplementedError()

    @property
    def rank(self) -> int:
        raise NotImplementedError()

    @property
    def num_workers(self) -> int:
        raise NotImplementedError()

    @staticmethod
    def register(klass: type) -> type:
        """Register a KVStore class under its lower-cased name (decorator)."""
        if not isinstance(klass, type):
            raise TypeError(f"KVStoreBase.register expects a class, got {type(klass).__name__}")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is overriding "
                          f"existing kvstore {old.__module__}.{old.__name__}")
        KVStoreBase.kv_registry[name] = klass
        return klass


class KVStore(KVStoreBase):
    """MXNet's native KVStore: ``init``/``push``/``pull``/``pushpull``/``broadcast`` with an
    optional updater (``set_optimizer``), for the local and ``dist_*`` kinds."""

    def __init__(self, kind: str = "local"):
        if not isinstance(kind, str):
            raise TypeError(f"KVStore: kind must be a string, got {type(kind).__name__}")
        kind = kind.lower()
        if kind not in _LOCAL_KINDS + _DIST_KINDS:
            raise MXNetError(f"unknown KVStore type {kind!r}; expected one of "
                             f"{list(_LOCAL_KINDS + _DIST_KINDS)} or a registered name "
                             f"{sorted(KVStoreBase.kv_registry)}")
        self._type = kind
        self._store: Dict[Key, NDArray] = {}
        self._updater: Optional[Callable] = None
        self._optimizer: Any = None
        self._str_keys: Optional[bool] = None
        self._comm: Optional[_Collective] = None
        self._compression: Any = None  # a TwoBitCompression after set_gradient_compression
        if kind in _DIST_KINDS:
            self._comm = _Collective(f"KVStore {kind!r}")
            if "async" in kind:
                warnings.warn(f"KVStore {kind!r}: hybridnet all-reduces synchronously; updates are "
                              f"applied in the same order on every worker as with dist_sync",
                              stacklevel=2)

    # -- properties ----------------------------------------------------------------------
    @property
    def type(self) -> str:
        """The kind given to ``create`` (lower case)."""
        return self._type

    @property
    def rank(self) -> int:
        """This worker's rank in [0, num_workers)."""
        return self._comm.rank if self._comm is not None else 0

    @property
    def num_workers(self) -> int:
        """The number of workers (1 for local kinds)."""
        return self._comm.size if self._comm is not None else 1

    def is_capable(self, capability: str) -> bool:
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    # -- helpers -------------------------------------------------------------------------
    def _note_key_type(self, keys: Sequence[Key], who: str) -> None:
        is_str = isinstance(keys[0], str)
        if self._str_keys is None:
            self._str_keys = is_str
        elif self._str_keys != is_str:
            raise KeyTypeError(f"KVStore.{who}: this store uses {'str' if self._str_keys else 'int'} "
                            f"keys; got key {keys[0]!r}. Do not mix int and str keys in one store")

    def _stored(self, key: Key, who: str) -> NDArray:
        try:
            return self._store[key]
        except KeyError:
            raise MXNetError(f"KVStore.{who}: key {key!r} has not been initialized; call "
                             f"kv.init({key!r}, value) first") from None

    def _reduce(self, groups: List[Tuple[Key, List[NDArray]]], who: str) -> List[torch.Tensor]:
        if self._compression is not None:
            groups = [(k, [NDArray(self._compression.quantize(k, i, v._t)) for i, v in enumerate(vals)])
                      for k, vals in groups]
        sums = [_sum_values(k, vals, who) for k, vals in groups]
        if self._comm is not None:
            self._comm.all_reduce(sums)
        return sums

    # -- the store API ---------------------------------------------------------------------
    def init(self, key: Any, value: Any) -> None:
        """Give each key its initial value; distributed stores keep rank 0's value."""
        pairs = _pairs(key, value, "init")
        self._note_key_type([k for k, _ in pairs], "init")
        seen = set()
        for k, vals in pairs:
            if k in self._store or k in seen:
                raise MXNetError(f"KVStore.init: duplicate init of key {k!r}")
            if len(vals) != 1:
                raise MXNetError(f"KVStore.init: key {k!r} got {len(vals)} arrays; init takes one "
                                 f"NDArray per key (use broadcast to fill per-device copies)")
            seen.add(k)
        fresh = [(k, _wrap(vals[0]._t.detach().clone())) for k, vals in pairs]
        if self._comm is not None:
            self._comm.broadcast([v._t for _, v in fresh], src=0)
        self._store.update(fresh)

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Sum the values pushed for each key (over devices and workers); the updater (if set)
        applies the sum to the stored value, otherwise the sum replaces it."""
        groups = _grouped(_pairs(key, value, "push"))
        self._note_key_type([k for k, _ in groups], "push")
        if self._updater is not None:
            for k, _ in groups:
                self._stored(k, "push")
        sums = self._reduce(groups, "push")
        self._apply(groups, sums)

    def _apply(self, groups: List[Tuple[Key, List[NDArray]]], sums: List[torch.Tensor]) -> None:
        from ..optimizer import Updater
        if self._updater is None:
            for (k, _), s in zip(groups, sums):
                self._store[k] = _wrap(s)
            return
        for (k, _), s in zip(groups, sums):
            w = self._store[k]
            if tuple(w.shape) != tuple(s.shape):
                raise MXNetError(f"KVStore.push: key {k!r} holds shape {tuple(w.shape)} but the "
                                 f"pushed values have shape {tuple(s.shape)}")
        with torch.no_grad():
            if isinstance(self._updater, Updater):
                self._updater([k for k, _ in groups], [_wrap(s) for s in sums],
                              [self._store[k] for k, _ in groups])
            else:
                for (k, _), s in zip(groups, sums):
                    self._updater(k, _wrap(s), self._store[k])

    def pull(self, key: Any, out: Any = None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the stored value of each key into ``out`` (an NDArray or one per device).
        With ``ignore_sparse`` (the default, as in MXNet) sparse output arrays are left alone
        (MXNet: "use row_sparse_pull"); ``ignore_sparse=False`` fills them too."""
        if out is None:
            raise ValueError("KVStore.pull: out is required (the arrays to copy the values into)")
        pairs = _pairs(key, out, "pull", "out")
        self._note_key_type([k for k, _ in pairs], "pull")
        for k, outs in pairs:
            src = self._stored(k, "pull")._t
            for o in outs:
                if ignore_sparse and o._t.layout is not torch.strided:
                    continue
                _copy_into(o, src, "pull", k)

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """``push`` then ``pull`` in one call; the result goes to ``out`` or back to ``value``."""
        pairs = _pairs(key, value, "pushpull")
        outs = pairs if out is None else _pairs(key, out, "pushpull", "out")
        groups = _grouped(pairs)
        self._note_key_type([k for k, _ in groups], "pushpull")
        if self._updater is not None:
            for k, _ in groups:
                self._stored(k, "pushpull")
        sums = self._reduce(groups, "pushpull")
        self._apply(groups, sums)
        for k, arrs in outs:
            src = self._store[k]._t
            for o in arrs:
                _copy_into(o, src, "pushpull", k)

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """``init`` with ``value`` (rank 0's wins) then ``pull`` into ``out``."""
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def row_sparse_pull(self, key: Any, out: Any = None, priority: int = 0,
                        row_ids: Any = None) -> None:
        """Pull the rows ``row_ids`` of each key's value into ``out`` (one NDArray, or one per
        device with one row_ids array each or a single one for all): row_sparse ``out`` arrays
        get just those rows; dense ones are refused, as in MXNet (``pull`` fills them)."""
        if row_ids is None:
            raise ValueError("KVStore.row_sparse_pull: row_ids is required")
        if out is None:
            raise ValueError("KVStore.row_sparse_pull: out is required (the arrays to pull into)")
        from ..ndarray.sparse import retain_rows, store_into
        pairs = _pairs(key, out, "row_sparse_pull", "out")
        self._note_key_type([k for k, _ in pairs], "row_sparse_pull")
        for k, outs in pairs:
            if any(o._t.layout is torch.strided for o in outs):
                raise MXNetError(f"KVStore.row_sparse_pull: the output arrays of key {k!r} must be "
                                 f"row_sparse (MXNet refuses dense ones); use pull() for dense arrays")
        ids = row_ids if isinstance(row_ids, (list, tuple)) else [row_ids]
        flat_ids = ids if len(pairs) > 1 and len(ids) == len(pairs) and all(
            isinstance(r, (list, tuple)) for r in ids) else None
        for j, (k, outs) in enumerate(pairs):
            src = self._stored(k, "row_sparse_pull")._t
            kid = flat_ids[j] if flat_ids is not None else ids
            kid = list(kid) if isinstance(kid, (list, tuple)) else [kid]
            if len(kid) not in (1, len(outs)):
                raise MXNetError(f"KVStore.row_sparse_pull: {len(kid)} row_ids arrays for {len(outs)} "
                                 f"output arrays of key {k!r}; pass one, or one per output")
            for i, o in enumerate(outs):
                if tuple(o.shape) != tuple(src.shape):
                    raise MXNetError(f"KVStore.row_sparse_pull: key {k!r} holds shape {tuple(src.shape)} "
                                     f"but the output array has shape {tuple(o.shape)}")
                if o._t.layout is torch.strided:
                    _copy_into(o, src, "row_sparse_pull", k)
                else:
                    store_into(o, retain_rows(src, kid[i if len(kid) > 1 else 0]._t))

    def _sync_arrays(self, arrays: Sequence[Sequence[NDArray]]) -> None:
        """Overwrite every array of each list with rank 0's first array (one coalesced
        broadcast, nothing stored); the Trainer uses it to start all workers equal."""
        _broadcast_lists(self._comm, arrays)

    # -- optimizer -----------------------------------------------------------------------
    def set_optimizer(self, optimizer: Any) -> None:
        """Update stored values with ``optimizer`` on push (update_on_kvstore)."""
        from ..optimizer import Optimizer, get_updater
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"KVStore.set_optimizer: expected an mx.optimizer.Optimizer, got "
                            f"{type(optimizer).__name__}")
        self._optimizer = optimizer
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater: Callable) -> None:
        """Use ``updater(key, summed_value, stored_value)`` on push instead of replacing."""
        if not callable(updater):
            raise TypeError(f"KVStore._set_updater: updater must be callable, got {type(updater).__name__}")
        self._updater = updater

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Quantize every pushed gradient to 2 bits with error feedback
        (``{'type': '2bit', 'threshold': 0.5}``); for 'device' and 'dist' kinds, as in MXNet."""
        if "device" not in self._type and "dist" not in self._type:
            raise MXNetError(f"Gradient compression is not supported for this type of kvstore "
                             f"({self._type!r}); use 'device' or a 'dist_*' kind")
        from .compression import parse_compression_params
        self._compression = parse_compression_params(compression_params)

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the updater's states (and with ``dump_optimizer`` the optimizer) atomically, in
        hybridnet's pickle-free format."""
        from ..formats.atomic import write_atomic
        write_atomic(fname, self._updater_obj("save_optimizer_states").get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        """Read states written by :meth:`save_optimizer_states` (never unpickles)."""
        upd = self._updater_obj("load_optimizer_states")
        with open(fname, "rb") as f:
            upd.set_states(f.read())
        self._optimizer = upd.optimizer

    def _updater_obj(self, who: str) -> Any:
        from ..optimizer import Updater
        if self._updater is None:
            raise MXNetError(f"KVStore.{who}: no optimizer is set on this store; call "
                             f"kv.set_optimizer(optimizer) first")
        if not isinstance(self._updater, Updater):
            raise MXNetError(f"KVStore.{who}: the store's updater is a plain function set with "
                             f"_set_updater and has no states to save or load")
        return self._updater

    # -- synchronisation -------------------------------------------------------------------
    def _barrier(self) -> None:
        """Wait until every worker reaches this point (no-op for local kinds)."""
        if self._comm is not None:
            self._comm.barrier()

    barrier = _barrier

    def __repr__(self) -> str:
        return f"<KVStore {self._type} rank={self.rank} num_workers={self.num_workers}>"


@KVStoreBase.register
class Horovod(KVStoreBase):
    """MXNet's ``horovod`` store on torch.distributed: ``broadcast`` from rank 0 and
    ``pushpull`` as an all-reduce sum; no optimizer (Trainer updates locally)."""

    def __init__(self) -> None:
        self._comm = _Collective("KVStore 'horovod'")

    @property
    def type(self) -> str:
        return "horovod"

    @property
    def rank(self) -> int:
        return self._comm.rank

    @property
    def num_workers(self) -> int:
        return self._comm.size

    @property
    def local_rank(self) -> int:
        from . import launch
        env = launch.dist_env()
        return env.local_rank if env is not None else 0

    def is_capable(self, capability: str) -> bool:
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        pairs = _pairs(key, value, "broadcast")
        outs = _pairs(key, out, "broadcast", "out")
        srcs = []
        for k, vals in pairs:
            if len(vals) != 1:
                raise MXNetError(f"Horovod.broadcast: key {k!r} got {len(vals)} values; pass one")
            srcs.append(vals[0]._t.detach().clone())
        self._comm.broadcast(srcs, src=0)
        for (k, arrs), s in zip(outs, srcs):
            for o in arrs:
                _copy_into(o, s, "broadcast", k)

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        pairs = _pairs(key, value, "pushpull")
        outs = pairs if out is None else _pairs(key, out, "pushpull", "out")
        sums = [_sum_values(k, vals, "pushpull") for k, vals in pairs]
        self._comm.all_reduce(sums)
        for (k, arrs), s in zip(outs, sums):
            for o in arrs:
                _copy_into(o, s, "pushpull", k)

    def _sync_arrays(self, arrays: Sequence[Sequence[NDArray]]) -> None:
        """Overwrite every array of each list with rank 0's first array (one coalesced
        broadcast, nothing stored); the Trainer uses it to start all workers equal."""
        _broadcast_lists(self._comm, arrays)

    def set_optimizer(self, optimizer: Any) -> None:
        raise NotImplementedError("the horovod KVStore cannot run an optimizer; use "
                                  "Trainer(..., update_on_kvstore=False)")

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        raise NotImplementedError("the horovod KVStore holds no optimizer states; use Trainer.save_states")

    def load_optimizer_states(self, fname: str) -> None:
        raise NotImplementedError("the horovod KVStore holds no optimizer states; use Trainer.load_states")

    def _barrier(self) -> None:
        self._comm.barrier()

    barrier = _barrier


@KVStoreBase.register
class BytePS(Horovod):
    """The ``byteps`` store name (BytePS's MXNet plugin registers it): the same collective
    semantics as ``horovod`` -- ``broadcast`` from rank 0, ``pushpull`` as an all-reduce sum, no
    optimizer on the store -- here on torch.distributed."""

    def __init__(self) -> None:
        self._comm = _Collective("KVStore 'byteps'")

    @property
    def type(self) -> str:
        return "byteps"


@KVStoreBase.register
class TestStore(KVStoreBase):
    """MXNet's in-process test store: ``pushpull`` sums the given arrays, no optimizer."""

    __test__ = False  # not a pytest test class

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        for o in (out if isinstance(out, (list, tuple)) else [out]):
            _copy_into(o, value._t.detach(), "broadcast", key)

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        vals = list(value) if isinstance(value, (list, tuple)) else [value]
        total = _sum_values(key, vals, "pushpull")
        outs = vals if out is None else (list(out) if isinstance(out, (list, tuple)) else [out])
        for o in outs:
            _copy_into(o, total, "pushpull", key)

    def is_capable(self, capability: str) -> bool:
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self) -> str:
        return "teststore"

    @property
    def rank(self) -> int:
        return 0

    @property
    def num_workers(self) -> int:
        return 1

    def set_optimizer(self, optimizer: Any) -> None:
        raise NotImplementedError()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str) -> None:
        raise NotImplementedError()


def create(name: str = "local") -> KVStoreBase:
    """Create a KVStore by kind (MXNet's ``mx.kv.create``): a registered class name first
    (``horovod``, ``teststore``, user classes), else a native kind (``local``, ``device``,
    ``dist_sync``, ``dist_device_sync``, ``dist_async``, ...)."""
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    return KVStore(name)
