"""``mxnet.api`` (MXNet's C++ FFI function table, registered by libmxnet): imports; any name
raises :class:`~hybridnet.cpp_only.CppOnlyError`."""
from __future__ import annotations

from .cpp_only import module_getattr

__getattr__ = module_getattr("api", "it lists functions registered by MXNet's C++ library.")
