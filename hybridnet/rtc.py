"""``mxnet.rtc``: CUDA kernels compiled at run time through libmxnet (NVRTC). Imports;
``CudaModule``/``CudaKernel`` raise :class:`~hybridnet.cpp_only.CppOnlyError`."""
from __future__ import annotations

from .cpp_only import module_getattr, unavailable

_WHY = ("it compiles CUDA source with NVRTC inside libmxnet. Write a custom operator "
        "(mx.operator.CustomOp) whose forward calls torch or a torch CUDA extension instead.")
CudaModule = unavailable("rtc", "CudaModule", _WHY)
CudaKernel = unavailable("rtc", "CudaKernel", _WHY)
__getattr__ = module_getattr("rtc", _WHY)
