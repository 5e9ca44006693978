"""``import_model`` and ``get_model_metadata`` (MXNet 1.9.1's ``onnx2mx.import_model``)."""
from __future__ import annotations

from typing import Any

from .import_onnx import GraphProto, load_model_proto, model_opset

__all__ = ["import_model", "get_model_metadata"]


def import_model(model_file: Any) -> tuple:
    """Import an ONNX model file into ``(sym, arg_params, aux_params)``.

    ``sym`` is a Symbol of registry operators; ``arg_params``/``aux_params`` map variable names
    to NDArrays (BatchNorm's moving statistics are auxiliary states). ``model_file`` is a path
    (or the model's bytes). Needs the ``onnx`` package; raises MXNetError for a file that is not
    a valid ONNX model or uses what the import does not support, naming the node.
    """
    model, base, where = load_model_proto(model_file)
    graph = GraphProto()
    graph.where, graph.base = where, base
    return graph.from_onnx(model.graph, opset_version=model_opset(model, where))


def get_model_metadata(model_file: Any) -> dict:
    """Names and shapes of the model's inputs and outputs.

    Returns ``{'input_tensor_data': [(name, shape, onnx_elem_type)], 'output_tensor_data':
    [(name, shape)]}`` as MXNet 1.9.1 does (dynamic dimensions read 0; initializers are not
    inputs).
    """
    model, _, _ = load_model_proto(model_file)
    return GraphProto().get_graph_metadata(model.graph)
