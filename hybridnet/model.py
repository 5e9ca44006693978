"""``mx.model``: MXNet 1.9.1's checkpoint helpers of the Module API.

``save_checkpoint(prefix, epoch, ...)`` writes ``prefix-symbol.json`` and
``prefix-%04d.params`` (parameters named ``arg:<name>`` / ``aux:<name>``, spec A.11);
``load_checkpoint`` reads them back as ``(symbol, arg_params, aux_params)``. Files are
byte-compatible with MXNet's and both writes are atomic.
"""
from __future__ import annotations

import logging
import numbers
import os
from collections import namedtuple
from typing import Any, Dict, Optional, Tuple, Union

from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .context import cpu
from .ndarray.ndarray import NDArray

__all__ = ["save_checkpoint", "load_checkpoint", "load_params", "BatchEndParam"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])

PathLike = Union[str, "os.PathLike[str]"]


def _params_name(prefix: PathLike, epoch: int) -> str:
    if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral):
        raise TypeError(f"checkpoint epoch must be an int, got {epoch!r}")
    return "%s-%04d.params" % (os.fspath(prefix), int(epoch))


def _check_dict(d: Any, what: str) -> Dict[str, NDArray]:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise TypeError(f"save_checkpoint: {what} must be a dict name -> NDArray, got {type(d).__name__}")
    for k, v in d.items():
        if not isinstance(k, str):
            raise TypeError(f"save_checkpoint: {what} keys must be str, got {k!r}")
        if not isinstance(v, NDArray):
            raise TypeError(f"save_checkpoint: {what}[{k!r}] must be an NDArray, got {type(v).__name__}")
    return d


def save_checkpoint(prefix: PathLike, epoch: int, symbol: Any, arg_params: Optional[Dict[str, NDArray]],
                    aux_params: Optional[Dict[str, NDArray]], remove_amp_cast: bool = True) -> None:
    """Checkpoint a model as MXNet does: ``symbol.save('%s-symbol.json' % prefix)`` (skipped when
    ``symbol`` is None) and ``nd.save('%s-%04d.params' % (prefix, epoch), ...)`` with every
    argument stored as ``arg:<name>`` and every auxiliary state as ``aux:<name>`` (arguments
    first, each in its dict's order), values on the CPU."""
    name = _params_name(prefix, epoch)
    arg_params = _check_dict(arg_params, "arg_params")
    aux_params = _check_dict(aux_params, "aux_params")
    if symbol is not None:
        symbol.save("%s-symbol.json" % os.fspath(prefix), remove_amp_cast=remove_amp_cast)
    save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({"aux:%s" % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
    nd.save(name, save_dict)
    logging.info('Saved checkpoint to "%s"', name)


def load_params(prefix: PathLike, epoch: int) -> Tuple[Dict[str, NDArray], Dict[str, NDArray]]:
    """Read ``'%s-%04d.params' % (prefix, epoch)`` and split it by name prefix into
    ``(arg_params, aux_params)`` (MXNet's ``model.load_params``)."""
    name = _params_name(prefix, epoch)
    if not os.path.isfile(name):
        raise MXNetError(f"load_params: parameter file {name!r} does not exist (prefix={os.fspath(prefix)!r}, "
                         f"epoch={epoch}); checkpoints are named '<prefix>-<epoch:04d>.params'")
    save_dict = nd.load(name)
    arg_params: Dict[str, NDArray] = {}
    aux_params: Dict[str, NDArray] = {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", name)
        return arg_params, aux_params
    if not isinstance(save_dict, dict):
        raise ValueError(f"Params file '{name}' holds {len(save_dict)} unnamed arrays; a checkpoint "
                         f"stores names 'arg:<name>' / 'aux:<name>' (write it with save_checkpoint)")
    for k, value in save_dict.items():
        kind, sep, pname = k.partition(":")
        if sep and kind == "arg":
            arg_params[pname] = value
        elif sep and kind == "aux":
            aux_params[pname] = value
        else:
            raise ValueError(f"Params file '{name}' contains unknown param '{k}': checkpoint names start "
                             f"with 'arg:' or 'aux:' (a file from save_parameters() loads with "
                             f"Block.load_parameters instead)")
    return arg_params, aux_params


def load_checkpoint(prefix: PathLike, epoch: int) -> Tuple[Any, Dict[str, NDArray], Dict[str, NDArray]]:
    """Load ``prefix-symbol.json`` and ``prefix-%04d.params``: ``(symbol, arg_params,
    aux_params)``, as MXNet's ``model.load_checkpoint`` (files from MXNet or from
    ``save_checkpoint`` / ``HybridBlock.export``)."""
    sym_file = "%s-symbol.json" % os.fspath(prefix)
    if not os.path.isfile(sym_file):
        raise MXNetError(f"load_checkpoint: symbol file {sym_file!r} does not exist (prefix="
                         f"{os.fspath(prefix)!r})")
    symbol = sym.load(sym_file)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
