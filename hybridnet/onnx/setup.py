"""``mx.onnx.setup``: in MXNet 1.9.1 a setuptools script that packages ``mx2onnx`` on its own.
hybridnet's exporter is part of the package, so importing this module runs nothing; it states
the same package facts for code that reads them."""
from __future__ import annotations

NAME = "mx2onnx"
INSTALL_REQUIRES = ["onnx >= 1.7.0"]
PYTHON_REQUIRES = ">=3.6"
