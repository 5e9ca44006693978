"""Devices (MXNet's ``Context``): ``mx.cpu()``, ``mx.gpu(i)``, ``with ctx:`` scoping."""
from __future__ import annotations

import warnings
from typing import Optional

import torch

from .base import MXNetError
from .thread_scope import ThreadScope

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "num_gpus", "current_context", "gpu_memory_info"]


class _ContextMeta(type):
    """Gives ``Context`` MXNet 1.9.1's deprecated class-level ``default_ctx`` (read and set):
    the calling thread's current context."""

    @property
    def default_ctx(cls) -> "Context":
        warnings.warn("Context.default_ctx has been deprecated. Please use "
                      "mx.current_context() (mx.context.current_context()) instead.", DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx: "Context") -> None:
        warnings.warn("Context.default_ctx has been deprecated. Please use "
                      "mx.current_context() (mx.context.current_context()) instead.", DeprecationWarning, stacklevel=2)
        if not isinstance(ctx, Context):
            raise TypeError(f"Context.default_ctx must be a Context such as mx.cpu(), got {ctx!r}")
        Context._local.value = ctx


class Context(metaclass=_ContextMeta):
    """A device. ``devtype2str`` mirrors MXNet's type ids (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared)."""

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}
    _local: ThreadScope  # set below: the per-thread current context

    def __init__(self, device_type: "str | Context", device_id: int = 0):
        if isinstance(device_type, Context):
            self.device_typeid = device_type.device_typeid
            self.device_id = device_type.device_id
        else:
            if device_type not in self.devstr2type:
                raise ValueError(f"unknown device type {device_type!r}; expected cpu, gpu, cpu_pinned or cpu_shared")
            self.device_typeid = self.devstr2type[device_type]
            self.device_id = int(device_id)

    @property
    def device_type(self) -> str:
        return self.devtype2str[self.device_typeid]

    @property
    def torch_device(self) -> torch.device:
        """The torch device; for ``gpu(i)``, an MXNetError if that GPU is not visible (creating
        ``mx.gpu()`` always works, using it fails, as in MXNet)."""
        if self.device_typeid == 2:
            n = num_gpus()
            if self.device_id >= n:
                have = "no CUDA device is available (torch.cuda.is_available() is False)" if n == 0 \
                    else f"only {n} GPU(s) are visible"
                raise MXNetError(f"cannot use context {self}: {have}; use mx.cpu() or a valid "
                                 f"mx.gpu(i) (mx.context.num_gpus() tells how many there are)")
            return torch.device("cuda", self.device_id)
        return torch.device("cpu")

    def __hash__(self) -> int:
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Context) and self.device_typeid == other.device_typeid \
            and self.device_id == other.device_id

    def __str__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    __repr__ = __str__

    def __enter__(self) -> "Context":
        Context._local.enter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        Context._local.exit()

    def empty_cache(self) -> None:
        if self.device_typeid == 2:
            torch.cuda.empty_cache()

    @staticmethod
    def from_torch(device: torch.device) -> "Context":
        if device.type == "cuda":
            return Context("gpu", device.index or 0)
        return Context("cpu", 0)


def cpu(device_id: int = 0) -> Context:
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    return Context("cpu_pinned", device_id)


def gpu(device_id: int = 0) -> Context:
    return Context("gpu", device_id)


def num_gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpu_memory_info(device_id: int = 0) -> tuple:
    """(free, total) bytes of GPU ``device_id``; an MXNetError if that GPU is not visible."""
    free, total = torch.cuda.mem_get_info(gpu(device_id).torch_device)
    return free, total


Context._local = ThreadScope(lambda: Context("cpu", 0))


def current_context() -> Context:
    """The calling thread's current context (``cpu(0)`` unless a ``with ctx:`` block is active)."""
    return Context._local.value
