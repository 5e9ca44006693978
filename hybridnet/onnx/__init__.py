"""``mx.onnx``: export a Symbol or a hybridized HybridBlock to ONNX (MXNet 1.9.1's mx.onnx).

``export_model(sym, params, in_shapes, in_types, onnx_file_path, ...)`` mirrors MXNet 1.9.1:
``sym`` is a Symbol or a ``-symbol.json`` path (here also a hybridized HybridBlock), ``params``
a dict (``arg:``/``aux:`` prefixes allowed), a ``[arg_params, aux_params]`` pair or a
``.params`` path. Data inputs are the graph's variables that are not parameters, in graph
order; ``in_shapes``/``in_types`` give their shapes and dtypes. With ``dynamic=True`` the dims
given as None in ``dynamic_input_shapes`` (default: the batch axis of every input) are
dynamic in the ONNX model. The ``onnx`` package is needed only when exporting.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence

import numpy as np

from ..base import MXNetError, dtype_name
from ..ir.graph import Graph

__all__ = ["export_model", "get_operator_support", "graph_to_model"]

_LOSS_HEADS = ("SoftmaxOutput", "LinearRegressionOutput", "MAERegressionOutput",
               "LogisticRegressionOutput")


def get_operator_support(opset_version: Optional[int] = None) -> list:
    """Names (canonical and aliases) of the operators the ONNX export can lower."""
    from ..formats import onnx as fo
    from ..ops import registry
    names = set(fo.supported_ops())
    return sorted(n for n, op in registry.names().items() if op.name in names)


def _to_numpy(v: Any) -> np.ndarray:
    if hasattr(v, "asnumpy"):
        return v.asnumpy()
    if hasattr(v, "data") and callable(v.data) and hasattr(v, "shape"):  # gluon Parameter
        return v.data().asnumpy()
    return np.asarray(v)


def _load_params(params: Any) -> dict:
    if params is None:
        return {}
    if isinstance(params, (str, os.PathLike)):
        from ..ndarray import load
        params = load(os.fspath(params))
    if isinstance(params, (list, tuple)):
        if len(params) != 2 or not all(isinstance(p, dict) for p in params):
            raise MXNetError("export_model: params as a list must be [arg_params, aux_params]")
        merged: dict = dict(params[0])
        merged.update(params[1])
        params = merged
    if not isinstance(params, dict):
        raise MXNetError(f"export_model: params must be a dict, [arg_params, aux_params] or a "
                         f".params path, got {type(params).__name__}")
    out = {}
    for k, v in params.items():
        name = k[4:] if isinstance(k, str) and k[:4] in ("arg:", "aux:") else k
        out[name] = _to_numpy(v)
    return out


def _shape_info(graph: Graph, shapes: dict, dtypes: dict, dyn_inputs: dict) -> dict:
    """(id(node), k) -> (shape, dtype name, dynamic dims) for every entry of ``graph``.

    Dynamic dims are found by inferring twice, the second time with every dynamic input dim
    changed: the output dims that change with it are dynamic.
    """
    from ..compiler.infer import infer_graph
    res = infer_graph(graph, shapes, dtypes)
    res2 = None
    if any(dyn_inputs.values()):
        shapes2 = {n: tuple(2 * d + 1 if i in dyn_inputs.get(n, ()) else d for i, d in enumerate(s))
                   for n, s in shapes.items()}
        try:
            res2 = infer_graph(graph, shapes2, dtypes)
        except MXNetError as e:
            raise MXNetError(f"export_model: the graph does not accept other sizes of the dynamic "
                             f"input dims ({e}); export with dynamic=False") from None
    info: dict = {}
    for node in graph.nodes:
        shp = res.out_shapes.get(id(node)) or []
        dts = res.out_dtypes.get(id(node)) or []
        for k in range(node.num_outputs()):
            s = shp[k] if k < len(shp) else None
            if s is None or any(d <= 0 for d in s):
                raise MXNetError(f"export_model: cannot infer the shape of output {k} of node "
                                 f"{node.name!r} ({node.opname}); check in_shapes and params")
            dyn: frozenset = frozenset()
            if res2 is not None:
                s2 = res2.out_shapes[id(node)][k]
                dyn = frozenset(i for i, (a, b) in enumerate(zip(s, s2)) if a != b)
            info[(id(node), k)] = (tuple(s), dts[k] if k < len(dts) and dts[k] else "float32", dyn)
    return info


def _label_only(graph: Graph, names: list) -> set:
    """Data inputs used only as the label of loss heads (dropped at inference, as MXNet does)."""
    uses: dict = {n: [] for n in names}
    for node in graph.nodes:
        if node.op is None:
            continue
        for slot, (src, _) in enumerate(node.inputs):
            if src.op is None and src.name in uses:
                uses[src.name].append(node.op.name in _LOSS_HEADS and slot == 1)
    return {n for n, u in uses.items() if u and all(u)}


def graph_to_model(graph: Graph, params: dict, input_shapes: dict, input_dtypes: Optional[dict] = None,
                   dynamic_dims: Optional[dict] = None, opset_version: Optional[int] = None,
                   output_names: Optional[Sequence[str]] = None) -> Any:
    """An ``onnx.ModelProto`` for ``graph`` (inference mode).

    ``params``: name -> array for the parameter variables; ``input_shapes``/``input_dtypes``:
    name -> shape / dtype for the data inputs; ``dynamic_dims``: name -> dims that are dynamic.
    """
    from ..formats import onnx as fo
    input_dtypes = {k: dtype_name(v) for k, v in (input_dtypes or {}).items()}
    dynamic_dims = {k: set(v) for k, v in (dynamic_dims or {}).items()}
    shapes = {k: tuple(int(d) for d in v) for k, v in input_shapes.items()}
    dtypes = dict(input_dtypes)
    for k, v in params.items():
        shapes[k] = tuple(v.shape)
        dtypes[k] = dtype_name(v.dtype)
    info = _shape_info(graph, shapes, dtypes, dynamic_dims)
    inputs = []
    for v in graph.variables():
        if v.name in input_shapes and v.name not in params:
            dyn = dynamic_dims.get(v.name, set())
            shape = tuple(None if i in dyn else d for i, d in enumerate(shapes[v.name]))
            inputs.append((v.name, shape, info[(id(v), 0)][1]))
    return fo.graph_to_onnx(graph, params, inputs, info,
                            opset=int(opset_version or fo.DEFAULT_OPSET), output_names=output_names)


def _resolve(sym: Any) -> tuple:
    """(graph, data input names, default shapes, block params, output names); None where unknown."""
    from ..symbol.symbol import Symbol, load as sym_load
    if isinstance(sym, (str, os.PathLike)):
        s = sym_load(os.fspath(sym))
        return s._graph(), None, None, None, s.list_outputs()
    if isinstance(sym, Symbol):
        return sym._graph(), None, None, None, sym.list_outputs()
    cached = getattr(sym, "_cached_graph", None)
    if cached is not None and hasattr(sym, "collect_params"):
        if not cached:
            raise MXNetError("export_model: hybridize() the block and call it once before exporting "
                             "(as for HybridBlock.export)")
        data, out = cached
        params = {k: p for k, p in sym.collect_params().items()}
        return (out._graph(), [d.name for d in data], cached.in_shapes, params,
                out.list_outputs())
    raise MXNetError(f"export_model: sym must be a Symbol, a -symbol.json path or a hybridized "
                     f"HybridBlock, got {type(sym).__name__}")


def export_model(sym: Any, params: Any = None, in_shapes: Optional[Sequence] = None,
                 in_types: Any = np.float32, onnx_file_path: str = "model.onnx", verbose: bool = False,
                 dynamic: bool = False, dynamic_input_shapes: Optional[Sequence] = None,
                 run_shape_inference: bool = False, input_type: Any = None, input_shape: Any = None,
                 large_model: bool = False, opset_version: Optional[int] = None) -> str:
    """Export ``sym`` with ``params`` to an ONNX file; returns ``onnx_file_path`` (MXNet 1.9.1's
    ``mx.onnx.export_model``; ``input_shape``/``input_type`` are its deprecated spellings)."""
    if input_shape is not None:
        in_shapes = input_shape
    if input_type is not None:
        in_types = input_type
    graph, data_names, block_shapes, block_params, out_names = _resolve(sym)
    if block_params is not None:
        p = _load_params(params) if params is not None else {}
        for k, v in block_params.items():
            if k not in p:
                p[k] = _to_numpy(v)
        pdict = p
    else:
        pdict = _load_params(params)
    var_names = [v.name for v in graph.variables()]
    if data_names is None:
        data_names = [n for n in var_names if n not in pdict]
    else:
        data_names = [n for n in data_names if n in var_names]
    if in_shapes is None and block_shapes:
        in_shapes = [block_shapes[n] for n in data_names]
    if in_shapes is None:
        raise MXNetError(f"export_model: give in_shapes for the data inputs {data_names}")
    in_shapes = [tuple(s) for s in in_shapes]
    if len(in_shapes) != len(data_names):
        labels = _label_only(graph, data_names)
        kept = [n for n in data_names if n not in labels]
        if len(in_shapes) == len(kept):
            data_names = kept
        else:
            raise MXNetError(f"export_model: {len(in_shapes)} in_shapes for {len(data_names)} data "
                             f"inputs {data_names} (variables not in params are data inputs)")
    types = list(in_types) if isinstance(in_types, (list, tuple)) else [in_types] * len(data_names)
    if len(types) != len(data_names):
        raise MXNetError(f"export_model: {len(types)} in_types for {len(data_names)} data inputs {data_names}")
    dyn: dict = {}
    if dynamic:
        if dynamic_input_shapes is None:
            dyn = {n: {0} for n in data_names}
        else:
            if len(dynamic_input_shapes) != len(data_names):
                raise MXNetError(f"export_model: {len(dynamic_input_shapes)} dynamic_input_shapes for "
                                 f"{len(data_names)} data inputs {data_names}")
            for n, ds, s in zip(data_names, dynamic_input_shapes, in_shapes):
                if len(ds) != len(s):
                    raise MXNetError(f"export_model: dynamic shape {tuple(ds)} of input {n!r} does not "
                                     f"match its in_shape {s}")
                dyn[n] = {i for i, d in enumerate(ds) if d is None}
    model = graph_to_model(graph, pdict, dict(zip(data_names, in_shapes)),
                           dict(zip(data_names, [dtype_name(t) for t in types])), dyn, opset_version,
                           output_names=out_names)
    import onnx
    if run_shape_inference:
        model = onnx.shape_inference.infer_shapes(model)
    if verbose:
        printer = getattr(onnx, "printer", None)
        print(printer.to_text(model.graph) if printer is not None else onnx.helper.printable_graph(model.graph))
    _save(onnx, model, os.fspath(onnx_file_path), large_model)
    return onnx_file_path


def _save(onnx: Any, model: Any, path: str, large_model: bool) -> None:
    """Write the model atomically; ``large_model`` keeps the weights in ``<path>.data``."""
    from ..formats.atomic import write_atomic
    if large_model:  # weights in a side file next to the model, as MXNet's large_model=True
        from onnx.external_data_helper import convert_model_to_external_data
        convert_model_to_external_data(model, all_tensors_to_one_file=True,
                                       location=os.path.basename(path) + ".data")
        onnx.save_model(model, path)
        return
    write_atomic(path, model.SerializeToString())
