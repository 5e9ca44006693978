"""``mx.contrib.onnx.onnx2mx``: ONNX import (MXNet 1.9.1's module path)."""
from __future__ import annotations

from . import import_model
from . import import_onnx
from . import import_to_gluon

__all__ = ["import_model", "import_onnx", "import_to_gluon"]
