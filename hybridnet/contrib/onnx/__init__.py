"""``mx.contrib.onnx``: ONNX import, MXNet 1.9.1's ``mx.contrib.onnx``.

``import_model(path) -> (sym, arg_params, aux_params)``, ``import_to_gluon(path, ctx) ->
gluon.SymbolBlock`` and ``get_model_metadata(path)`` read an ONNX model into registry operators;
``export_model`` is MXNet's old spelling of :func:`mx.onnx.export_model`. The ``onnx`` package is
needed only when a model is read (``pip install onnx``).
"""
from __future__ import annotations

from typing import Any

from . import onnx2mx
from .onnx2mx.import_model import get_model_metadata, import_model
from .onnx2mx.import_to_gluon import import_to_gluon

__all__ = ["onnx2mx", "import_model", "import_to_gluon", "get_model_metadata", "export_model",
           "supported_ops"]


def export_model(*args: Any, **kwargs: Any) -> Any:
    """MXNet 1.9.1's deprecated path of ``mx.onnx.export_model`` (same arguments)."""
    from ...onnx import export_model as _export
    return _export(*args, **kwargs)


def supported_ops() -> list:
    """The ONNX operator types the import reads (sorted)."""
    from .onnx2mx._op_translations import supported
    return supported()
