"""DataLoader (MXNet 1.9.1's ``gluon.data.DataLoader``): batches from a Dataset, optionally
produced by worker processes (or threads) ahead of time.

Worker processes are a ``multiprocessing`` pool (``fork`` where available, so the dataset and
``batchify_fn`` are inherited, not pickled; lambdas work). As in MXNet, a worker's batch
travels back through shared memory: its arrays are moved to shared memory and only handles
cross the pipe (torch's ``ForkingPickler`` reductions), so full pipes cannot block a worker
and a loader dropped mid-epoch shuts its pool down cleanly. Batches come back in sampler order
whatever the number of workers. An exception in a worker is re-raised in the main process as
``MXNetError`` carrying the worker's traceback text.

MXNet internals that libraries import from here are kept: ``ForkingPickler``,
``default_batchify_fn``, ``default_mp_batchify_fn`` and ``_as_in_context``.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import traceback
from typing import Any, Callable, Dict, Iterator, Optional

from multiprocessing.reduction import ForkingPickler  # noqa: F401  (MXNet re-exports it)

from ...base import MXNetError
from ...ndarray import NDArray
from ...ndarray.worker_transport import base_seed as _base_seed
from ...ndarray.worker_transport import from_wire as _from_wire
from ...ndarray.worker_transport import pin as _pin
from ...ndarray.worker_transport import seed_worker as _seed_worker
from ...ndarray.worker_transport import to_wire as _to_wire
from . import sampler as _sampler
from .batchify import _is_record, _np_batch, np_mode_batch, stack_arrays

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data: list) -> Any:
    """Collate samples into a batch: NDArrays are stacked, tuples are batched field by field
    (giving a list), anything else goes through ``np.asarray`` keeping its dtype."""
    first = data[0]
    if isinstance(first, NDArray):
        return stack_arrays(data)
    if _is_record(first):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    if isinstance(first, dict):
        return {k: default_batchify_fn([d[k] for d in data]) for k in first}
    if isinstance(first, (str, bytes)):
        return list(data)
    return _np_batch(data)


def default_mp_batchify_fn(data: list) -> Any:
    """The batchify function used in worker processes (MXNet puts its result in shared
    memory; here the batch travels back as NumPy arrays, so it is the same function)."""
    return default_batchify_fn(data)


def _as_in_context(data: Any, ctx: Any) -> Any:
    """``data`` (an NDArray or nested lists/tuples of them) moved to ``ctx`` (MXNet's helper;
    tuples come back as lists, as there)."""
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


# -- worker side ---------------------------------------------------------------------------------
_worker_dataset: Any = None
_worker_batchify_fn: Optional[Callable] = None


def _worker_initializer(dataset: Any, batchify_fn: Callable, counter: Any, base_seed: int) -> None:
    """Runs once in each worker process: keep the dataset, one thread, distinct seeds."""
    global _worker_dataset, _worker_batchify_fn
    _worker_dataset = dataset
    _worker_batchify_fn = batchify_fn
    with counter.get_lock():
        worker_id = counter.value
        counter.value += 1
    _seed_worker((base_seed + worker_id) % (2 ** 32))


def _worker_fn(samples: list) -> tuple:
    """Make one batch in a worker process; returns (True, batch as NumPy) or (False, traceback)."""
    try:
        batch = _worker_batchify_fn([_worker_dataset[i] for i in samples])  # type: ignore[misc]
        return True, _to_wire(batch)
    except BaseException:  # noqa: B902 - everything must reach the main process
        return False, f"(worker pid {os.getpid()})\n" + traceback.format_exc()


def _thread_worker_fn(samples: list, batchify_fn: Callable, dataset: Any) -> tuple:
    try:
        return True, batchify_fn([dataset[i] for i in samples])
    except BaseException:  # noqa: B902
        return False, traceback.format_exc()


class DataLoaderTimeoutError(MXNetError, multiprocessing.TimeoutError):
    """A worker took longer than ``timeout`` seconds for one batch."""


class _MultiWorkerIter:
    """Keeps ``prefetch`` batches in flight and yields them in sampler order."""

    def __init__(self, loader: "DataLoader", pool: Any):
        self._loader = loader
        self._pool = pool
        self._iter = iter(loader._batch_sampler)
        self._buffer: Dict[int, Any] = {}
        self._sent = 0
        self._rcvd = 0
        for _ in range(loader._prefetch):
            self._push_next()

    def _push_next(self) -> None:
        r = next(self._iter, None)
        if r is None:
            return
        ld = self._loader
        if ld._thread_pool:
            res = self._pool.apply_async(_thread_worker_fn, (r, ld._batchify_fn, ld._dataset))
        else:
            res = self._pool.apply_async(_worker_fn, (r,))
        self._buffer[self._sent] = res
        self._sent += 1

    def __iter__(self) -> "_MultiWorkerIter":
        return self

    def __next__(self) -> Any:
        self._push_next()
        if self._rcvd == self._sent:
            raise StopIteration
        res = self._buffer.pop(self._rcvd)
        ld = self._loader
        try:
            ok, payload = res.get(ld._timeout)
        except multiprocessing.TimeoutError:
            raise DataLoaderTimeoutError(
                f"DataLoader: worker timed out after {ld._timeout} seconds on batch {self._rcvd}. "
                f"A slow transform or dataset __getitem__ may need a larger timeout=...; a worker "
                f"killed by the OS (out of memory?) never answers; with large batches in shared "
                f"memory, check /dev/shm") from None
        except Exception as e:
            raise MXNetError(f"DataLoader: batch {self._rcvd} could not be sent back from the worker: "
                             f"{type(e).__name__}: {e}. Batches must hold NDArrays, NumPy arrays "
                             f"and picklable Python values") from e
        if not ok:
            kind = "thread" if ld._thread_pool else "process"
            raise MXNetError(f"DataLoader worker {kind} failed while making batch {self._rcvd}; "
                             f"worker traceback:\n{payload}")
        # workers run without this thread's np switch: under npx.set_np() batches are mx.np arrays
        batch = np_mode_batch(payload if ld._thread_pool else _from_wire(payload))
        if ld._pin_memory:
            batch = np_mode_batch(_pin(batch, ld._pin_device_id))
        self._rcvd += 1
        return batch

    next = __next__


class DataLoader:
    """Load a Dataset in mini-batches (MXNet 1.9.1 ``gluon.data.DataLoader``).

    ``batch_size``/``shuffle``/``sampler``/``last_batch`` build a ``BatchSampler`` unless
    ``batch_sampler`` is given. ``num_workers > 0`` uses that many worker processes
    (threads with ``thread_pool=True``), keeping ``prefetch`` (default ``2 * num_workers``)
    batches in flight. ``pin_memory`` pins batches when CUDA is present (no-op on CPU).
    ``timeout`` (seconds) bounds the wait for one batch. ``auto_reload`` starts prefetching the
    next epoch at construction and whenever an epoch ends (MXNet; otherwise prefetching starts
    when iteration does). ``try_nopython`` is accepted and ignored.
    """

    def __init__(self, dataset: Any, batch_size: Optional[int] = None, shuffle: bool = False,
                 sampler: Any = None, last_batch: Optional[str] = None, batch_sampler: Any = None,
                 batchify_fn: Optional[Callable] = None, num_workers: int = 0, pin_memory: bool = False,
                 pin_device_id: int = 0, prefetch: Optional[int] = None, thread_pool: bool = False,
                 timeout: float = 120, try_nopython: Optional[bool] = None, auto_reload: bool = False):
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, given {timeout}")
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                sampler = _sampler.RandomSampler(len(dataset)) if shuffle else \
                    _sampler.SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must not be specified "
                             "if batch_sampler is specified.")
        self._batch_sampler = batch_sampler
        self._num_workers = num_workers if num_workers >= 0 else 0
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        if batchify_fn is None:
            batchify_fn = default_mp_batchify_fn if self._num_workers > 0 else default_batchify_fn
        self._batchify_fn = batchify_fn
        self._worker_pool: Any = None
        self._iter: Optional[Iterator] = None
        self.auto_reload = auto_reload
        if auto_reload:
            self.refresh()

    def _get_pool(self) -> Any:
        if self._worker_pool is None:
            if self._thread_pool:
                self._worker_pool = multiprocessing.pool.ThreadPool(self._num_workers)
            else:
                methods = multiprocessing.get_all_start_methods()
                ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
                counter = ctx.Value("i", 0)
                base_seed = _base_seed()
                self._worker_pool = ctx.Pool(
                    self._num_workers, initializer=_worker_initializer,
                    initargs=(self._dataset, self._batchify_fn, counter, base_seed))
        return self._worker_pool

    def _prefetch_iter(self) -> Iterator:
        if self._num_workers == 0:
            return self._same_process_iter()
        return _MultiWorkerIter(self, self._get_pool())

    def refresh(self) -> None:
        """Start a new epoch's iterator now (its workers begin prefetching)."""
        self._iter = self._prefetch_iter()

    def clean(self) -> None:
        """Drop the prefetched iterator; the next ``iter()`` starts a fresh one."""
        self._iter = None

    def __iter__(self) -> Iterator:
        it = self._iter if self._iter is not None else self._prefetch_iter()
        self._iter = None  # one iterator serves one epoch
        if not self.auto_reload:
            return it
        return self._reloading(it)

    def _reloading(self, it: Iterator) -> Iterator:
        yield from it
        if self._iter is None:
            self.refresh()  # prefetch the next epoch while the caller works

    def _same_process_iter(self) -> Iterator:
        for batch in self._batch_sampler:
            ret = self._batchify_fn([self._dataset[idx] for idx in batch])
            if self._pin_memory:
                ret = np_mode_batch(_pin(ret, self._pin_device_id))
            yield ret

    def __len__(self) -> int:
        return len(self._batch_sampler)

    def close(self) -> None:
        """Stop the worker processes/threads (also done when the loader is garbage collected)."""
        pool, self._worker_pool = self._worker_pool, None
        if pool is not None:
            try:
                pool.terminate()
            except AssertionError:
                # CPython's Pool asserts when its result thread has already ended while prefetched
                # results are still pending (seen about 1 in 12 runs of an auto_reload loader under
                # load); its workers and threads have stopped by then, so join() still cleans up
                pass
            pool.join()

    def __del__(self) -> None:
        try:
            pool = self._worker_pool
            self._worker_pool = None
            if pool is not None:
                pool.terminate()
        except Exception:
            pass
