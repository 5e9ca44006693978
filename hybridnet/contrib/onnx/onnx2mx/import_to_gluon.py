"""``import_to_gluon`` (MXNet 1.9.1's ``onnx2mx.import_to_gluon``)."""
from __future__ import annotations

from typing import Any

from .import_onnx import GraphProto, load_model_proto, model_opset

__all__ = ["import_to_gluon"]


def import_to_gluon(model_file: Any, ctx: Any = None) -> Any:
    """Import an ONNX model file into a ``gluon.SymbolBlock`` with its parameters on ``ctx``
    (a Context or a list of them; default the current context). The block's inputs are the
    model's graph inputs that are not initializers, in order; it hybridizes like any SymbolBlock.
    """
    model, base, where = load_model_proto(model_file)
    graph = GraphProto()
    graph.where, graph.base = where, base
    return graph.graph_to_gluon(model.graph, ctx, model_opset(model, where))
