"""``mx.monitor`` / ``mx.mon``: statistics of arrays inside a network, for debugging.

:class:`Monitor` mirrors MXNet 1.9.1's: installed on executors (``Module.install_monitor`` or
``mon.install(exe)``), it collects ``stat_func`` of every operator output whose name matches
``pattern`` during the forward passes of every ``interval``-th batch (``tic``), and at ``toc``
adds the executors' arguments and auxiliary states, returning ``(step, name, text)`` rows.
hybridnet also accepts a HybridBlock (its hybridized graph's op hook feeds the same collector,
``toc`` then adds the block's parameters).
"""
from __future__ import annotations

import logging
import math
import re
from typing import Any, Callable, List, Optional, Tuple

from .ndarray.ndarray import NDArray
from . import ndarray as nd

__all__ = ["Monitor"]


def _mean_abs_norm(x: NDArray) -> NDArray:
    """MXNet's default statistic: ``norm(x) / sqrt(x.size)``."""
    return nd.norm(x) / math.sqrt(x.size)


class Monitor:
    """Collect ``stat_func(array)`` of the arrays named by ``pattern`` every ``interval`` batches.

    ``sort`` orders ``toc()``'s rows by name; ``monitor_all`` also reports operator inputs.
    """

    def __init__(self, interval: int, stat_func: Optional[Callable[[NDArray], Any]] = None,
                 pattern: str = ".*", sort: bool = False, monitor_all: bool = False):
        self.stat_func = stat_func if stat_func is not None else _mean_abs_norm
        self.interval = interval
        self.activated = False
        self.queue: List[Tuple[int, str, Any]] = []
        self.step = 0
        self.exes: List[Any] = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name: str, array: NDArray) -> None:
        """The executor callback: record the statistic of a matching array while activated."""
        if not self.activated or not self.re_prog.match(str(name)):
            return
        self.queue.append((self.step, str(name), self.stat_func(array)))

    def install(self, exe: Any) -> None:
        """Collect from ``exe``: an Executor (``Symbol.bind``) or a HybridBlock. Several may be
        installed."""
        if hasattr(exe, "set_monitor_callback"):
            exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        elif hasattr(exe, "register_op_hook"):
            exe.register_op_hook(lambda name, op_name, array: self.stat_helper(name, array),
                                 self.monitor_all)
        else:
            raise TypeError(f"Monitor.install: expected an Executor or a HybridBlock, got "
                            f"{type(exe).__name__}")
        self.exes.append(exe)

    def tic(self) -> None:
        """Start a batch: collect during its forward passes if this step is on the interval."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def _named_arrays(self, exe: Any) -> List[Tuple[str, NDArray]]:
        if hasattr(exe, "arg_arrays"):
            sym = exe._symbol
            return list(zip(sym.list_arguments(), exe.arg_arrays)) + \
                list(zip(sym.list_auxiliary_states(), exe.aux_arrays))
        return [(name, p.data()) for name, p in exe.collect_params().items()
                if p._data is not None]

    def toc(self) -> List[Tuple[int, str, str]]:
        """End the batch: ``(step, name, statistic as text)`` rows, then clear."""
        if not self.activated:
            return []
        for exe in self.exes:
            for name, array in self._named_arrays(exe):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda x: x[1])
        res = []
        for n, k, v_list in self.queue:
            if isinstance(v_list, NDArray):
                v_list = [v_list]
            text = ""
            for v in v_list:
                if not isinstance(v, NDArray):
                    raise TypeError(f"Monitor: stat_func must return an NDArray or a list of "
                                    f"them, got {type(v).__name__} for {k!r}")
                text += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
            res.append((n, k, text))
        self.queue = []
        return res

    def toc_print(self) -> None:
        """End the batch and log its rows (``logging.info``, MXNet's format)."""
        for n, k, v in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(n, k, v))
