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

import numpy as np

from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .context import cpu
from .ndarray.ndarray import NDArray

__all__ = ["save_checkpoint", "load_checkpoint", "load_params", "BatchEndParam"]

# kvstore helpers of the Module API (MXNet's model._create_kvstore & co.) are at the end.

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


# ==== kvstore plumbing of the Module API ===========================================================
def _create_kvstore(kvstore: Any, num_device: int, arg_params: Dict[str, NDArray]) -> Tuple[Any, bool]:
    """``(kvstore or None, update_on_kvstore)`` as MXNet's ``model._create_kvstore``: a string
    kind makes a store only for several devices or ``dist`` kinds; updates run on the store
    unless ``MXNET_UPDATE_ON_KVSTORE=0`` or (local kind) a parameter exceeds 16M elements."""
    from . import kvstore as kvs
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                max_size = max(int(np.prod(p.shape)) for p in arg_params.values())
                if max_size > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError(f"kvstore must be a KVStore, a str or None, got {type(kvstore).__name__}")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore: Any, param_arrays: list, arg_params: Dict[str, NDArray],
                        param_names: list, update_on_kvstore: bool) -> None:
    """Store each parameter's value under its name; with updates on the store, copy it back
    to every device so all start equal."""
    for idx, param_on_devs in enumerate(param_arrays):
        name = param_names[idx]
        kvstore.init(name, arg_params[name])
        if update_on_kvstore:
            kvstore.pull(name, param_on_devs, priority=-idx, ignore_sparse=False)


def _update_params_on_kvstore(param_arrays: list, grad_arrays: list, kvstore: Any, param_names: list) -> None:
    """Push the devices' gradients (summed, then updated on the store) and pull the new weights."""
    for index, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        kvstore.pushpull(param_names[index], grad_list, out=arg_list, priority=-index)


def _update_params(param_arrays: list, grad_arrays: list, updater: Any, num_device: int,
                   kvstore: Any = None, param_names: Optional[list] = None) -> None:
    """Sum gradients over devices through ``kvstore`` (when given), then update each device's
    copy with ``updater(index * num_device + device, grad, weight)``, one call per device."""
    updates: list = [[] for _ in range(num_device)]
    for i, (arg_list, grad_list) in enumerate(zip(param_arrays, grad_arrays)):
        if grad_list[0] is None:
            continue
        if kvstore:
            name = param_names[i]
            kvstore.push(name, grad_list, priority=-i)
            kvstore.pull(name, grad_list, priority=-i, ignore_sparse=False)
        for k, (w, g) in enumerate(zip(arg_list, grad_list)):
            updates[k].append((i * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            idx, grads, weights = zip(*dev_updates)
            updater(list(idx), list(grads), list(weights))
