"""``mx.onnx.mx2onnx``: MXNet 1.9.1's module path of the ONNX exporter (``export_model``,
``get_operator_support``); the exporter is :mod:`hybridnet.onnx`."""
from __future__ import annotations

from .. import export_model, get_operator_support

__all__ = ["export_model", "get_operator_support"]
