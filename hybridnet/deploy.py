"""``hybridnet.to_torch``: an MXNet model (a HybridBlock, a Symbol or a ``-symbol.json`` file
with its parameters) as a ``torch.nn.Module`` for PyTorch's deployment tools. Not an MXNet API:
MXNet is retired, and this is the way out that keeps the model's numbers (see README, "Leaving
MXNet"). The module itself is ``compiler.torch_module``'s; this entry point only resolves what
it is given, so it sits beside ``onnx.py`` and reaches blocks through their ``to_torch`` method.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence

from .base import MXNetError
from .compiler.torch_module import GraphModule, graph_module

__all__ = ["to_torch", "load_params"]


def load_params(params: Any) -> dict:
    """MXNet name -> NDArray from a ``.params`` path, a dict (``arg:``/``aux:`` prefixes
    allowed) or an ``[arg_params, aux_params]`` pair (the forms ``mx.model`` and
    ``mx.onnx.export_model`` accept)."""
    if params is None:
        return {}
    if isinstance(params, (str, os.PathLike)):
        from .ndarray import load
        params = load(os.fspath(params))
    if isinstance(params, (list, tuple)) and len(params) == 2 and all(isinstance(p, dict) for p in params):
        params = {**params[0], **params[1]}
    if not isinstance(params, dict):
        raise MXNetError(f"to_torch: params must be a dict, [arg_params, aux_params] or a .params path, "
                         f"got {type(params).__name__}")
    return {(k[4:] if k[:4] in ("arg:", "aux:") else k): v for k, v in params.items()}


def to_torch(model: Any, params: Any = None, example_inputs: Optional[Sequence[Any]] = None,
             copy: bool = False) -> GraphModule:
    """``model`` as a ``torch.nn.Module`` whose forward is hybridnet's compiled graph.

    ``model``: a HybridBlock (``params`` must then be None; ``example_inputs`` as for
    ``block.to_torch``), a Symbol or a ``-symbol.json`` path, with ``params`` (a ``.params``
    path, a dict or ``[arg_params, aux_params]``). A Symbol's data inputs are its variables not
    in ``params``, in graph order. See ``compiler.torch_module`` for the module."""
    from .symbol.symbol import Symbol, load as sym_load
    examples = list(example_inputs or ())
    if hasattr(model, "to_torch") and hasattr(model, "collect_params"):
        if params is not None:
            raise MXNetError("to_torch: a block carries its parameters; load them into it "
                             "(block.load_parameters) instead of passing params")
        return model.to_torch(*examples, copy=copy)
    where = "the symbol"
    if isinstance(model, (str, os.PathLike)):
        where = os.fspath(model)
        model = sym_load(where)
    if not isinstance(model, Symbol):
        raise TypeError(f"to_torch: model must be a HybridBlock, a Symbol or a -symbol.json path, "
                        f"got {type(model).__name__}")
    from .ndarray.ndarray import NDArray
    from .ndarray.sparse import dense_tensor
    values = load_params(params)
    graph = model._graph()
    data_names = [v.name for v in graph.variables() if v.name not in values]
    tensors = {}
    for k, v in values.items():
        tensors[k] = dense_tensor(v) if isinstance(v, NDArray) else v
    ex = [dense_tensor(e) if isinstance(e, NDArray) else e for e in examples] if examples else None
    return graph_module(graph, data_names, tensors, copy=copy, examples=ex, where=where)
