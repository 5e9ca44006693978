"""``mxnet.library``: loading compiled operator libraries (``.so`` built against MXNet's C++
extension API) into libmxnet. Imports; ``load`` raises :class:`~hybridnet.cpp_only.CppOnlyError`.
Custom operators written in Python work: ``mx.operator.CustomOp`` / ``register``."""
from __future__ import annotations

from .cpp_only import module_getattr, unavailable

_WHY = ("it loads C++ operator libraries built against MXNet's extension API into libmxnet. "
        "Write the operator in Python with mx.operator.CustomOp instead.")
load = unavailable("library", "load", _WHY)
__getattr__ = module_getattr("library", _WHY)
