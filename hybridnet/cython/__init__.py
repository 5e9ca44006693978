"""``mxnet.cython`` (Cython bindings of MXNet's C API): imports; any name raises
:class:`~hybridnet.cpp_only.CppOnlyError`."""
from __future__ import annotations

from ..cpp_only import module_getattr

__getattr__ = module_getattr("cython", "it binds MXNet's C API with Cython.")
