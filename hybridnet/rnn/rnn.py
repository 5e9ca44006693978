"""Checkpoints of models built from legacy RNN cells (MXNet 1.9.1 ``mx.rnn.rnn``): weights are
saved unpacked (per gate, readable by unfused cells) and packed again on load."""
from __future__ import annotations

from typing import Any, Callable, Dict, Sequence, Tuple, Union

from ..model import load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell

__all__ = ["save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]

Cells = Union[BaseRNNCell, Sequence[BaseRNNCell]]


def _as_cells(cells: Cells) -> Sequence[BaseRNNCell]:
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def save_rnn_checkpoint(cells: Cells, prefix: str, epoch: int, symbol: Any,
                        arg_params: Dict[str, Any], aux_params: Dict[str, Any]) -> None:
    """``save_checkpoint`` after unpacking each cell's weights
    (``prefix-symbol.json``, ``prefix-%04d.params``)."""
    for cell in _as_cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells: Cells, prefix: str, epoch: int) -> Tuple[Any, Dict, Dict]:
    """``load_checkpoint`` then pack each cell's weights; returns (symbol, args, auxs)."""
    sym, args, auxs = load_checkpoint(prefix, epoch)
    for cell in _as_cells(cells):
        args = cell.pack_weights(args)
    return sym, args, auxs


def do_rnn_checkpoint(cells: Cells, prefix: str, period: int = 1) -> Callable:
    """An epoch-end callback for ``Module.fit`` saving an RNN checkpoint every ``period``
    epochs."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
