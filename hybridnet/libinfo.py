"""``mxnet.libinfo``: where libmxnet and its headers are. ``__version__`` is the MXNet API level
hybridnet implements; ``find_lib_path``/``find_include_path``/``find_conf_path`` raise
:class:`~hybridnet.cpp_only.CppOnlyError` (there is no libmxnet to find)."""
from __future__ import annotations

from .cpp_only import module_getattr, unavailable
__version__ = "1.9.1"  # the MXNet API level (hybridnet.MXNET_API_VERSION; tests hold them equal)

_WHY = "it locates libmxnet and MXNet's C++ headers."
find_lib_path = unavailable("libinfo", "find_lib_path", _WHY)
find_include_path = unavailable("libinfo", "find_include_path", _WHY)
find_conf_path = unavailable("libinfo", "find_conf_path", _WHY)
__getattr__ = module_getattr("libinfo", _WHY)
