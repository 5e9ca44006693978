"""``mxnet.space`` (a link to MXNet's ``contrib/tvmop/space.py``: the tuning space of its
TVM-generated operators). Imports; any name raises :class:`~hybridnet.cpp_only.CppOnlyError`."""
from __future__ import annotations

from .cpp_only import module_getattr

__getattr__ = module_getattr("space", "it describes the tuning space of TVM operators compiled "
                                      "into libmxnet (mxnet.tvmop).")
