"""Checkpoints of models built from legacy RNN cells (MXNet 1.9.1 ``mx.rnn.rnn``): weights are
saved unpacked (per gate, readable by unfused cells) and packed again on load."""
from __future__ import annotations

from typing import Any, Callable, Dict, Sequence, Tuple, Union

from ..base import MXNetError
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
    """``load_checkpoint`` then pack each cell's weights; returns (symbol, args, auxs).

    Unlike MXNet, which packs whatever the file holds and fails at bind or silently broadcasts,
    every per-gate array is checked against the cells (present, floating point, the cell's
    shape) and every packed parameter against the shapes the graph implies; errors are
    MXNetErrors naming the parameter, the file and both shapes."""
    params_file = "%s-%04d.params" % (prefix, epoch)
    sym, args, auxs = load_checkpoint(prefix, epoch)
    try:
        for cell in _as_cells(cells):
            args = cell.pack_weights(args)
    except MXNetError as e:
        raise MXNetError(f"load_rnn_checkpoint: {params_file!r} does not fit the cells: {e}") from None
    _check_against_graph(sym, args, auxs, params_file, "%s-symbol.json" % prefix)
    return sym, args, auxs


def _check_against_graph(sym: Any, args: Dict[str, Any], auxs: Dict[str, Any], params_file: str,
                         sym_file: str) -> None:
    """Each parameter's shape against the graph's: first what the graph alone fixes (e.g. a
    FullyConnected's weight rows from ``num_hidden``), then all the file's shapes together."""
    arg_names, aux_names = sym.list_arguments(), sym.list_auxiliary_states()
    given = {k: tuple(v.shape) for k, v in args.items() if k in arg_names}
    given.update({k: tuple(v.shape) for k, v in auxs.items() if k in aux_names})
    try:
        arg_shapes, _, aux_shapes = sym.infer_shape_partial()
    except MXNetError as e:
        raise MXNetError(f"load_rnn_checkpoint: the graph {sym_file!r} does not infer: {e}") from None
    for name, shape in list(zip(arg_names, arg_shapes or [])) + list(zip(aux_names, aux_shapes or [])):
        if name in given and shape and all(d > 0 for d in shape) and tuple(shape) != given[name]:
            raise MXNetError(f"load_rnn_checkpoint: parameter {name!r} in {params_file!r} has shape "
                             f"{given[name]}, but the graph {sym_file!r} expects {tuple(shape)}")
    try:
        sym.infer_shape_partial(**given)
    except MXNetError as e:
        raise MXNetError(f"load_rnn_checkpoint: the parameter shapes in {params_file!r} do not fit "
                         f"the graph {sym_file!r}: {e}") from None


def do_rnn_checkpoint(cells: Cells, prefix: str, period: int = 1) -> Callable:
    """An epoch-end callback for ``Module.fit`` saving an RNN checkpoint every ``period``
    epochs."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
