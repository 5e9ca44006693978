"""``mxnet.torch``: Lua Torch functions compiled into libmxnet (MXNet's ``th`` plugin), not
PyTorch. Imports; any name raises :class:`~hybridnet.cpp_only.CppOnlyError`. (hybridnet's own
kernels are PyTorch's; use ``mx.nd`` operators or ``NDArray.to_dlpack`` to reach torch.)"""
from __future__ import annotations

from .cpp_only import module_getattr

__getattr__ = module_getattr("torch", "it exposes Lua Torch functions compiled into libmxnet "
                                      "(MXNet's 'th' plugin).")
