"""``mx.runtime``: which features this build has (MXNet's ``mx.runtime.Features``), answered from torch."""
from __future__ import annotations

from collections import OrderedDict
from typing import Optional

__all__ = ["Feature", "Features", "feature_list"]


class Feature:
    """One library feature: ``name``, ``enabled`` and its ``index`` in the feature list."""

    def __init__(self, name: str, enabled: bool, index: int):
        self.name = name
        self.enabled = bool(enabled)
        self.index = index

    def __repr__(self) -> str:
        return ("✔ " if self.enabled else "✖ ") + self.name


_FEATURE_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
                  "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
                  "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
                  "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
                  "SIGNAL_HANDLER", "DEBUG", "TVM_OP")
# later MXNet names of the same features
_FEATURE_ALIASES = {"ONEDNN": "MKLDNN", "DNNL": "MKLDNN"}


def _cpu_flags() -> set:
    """The CPU flags of /proc/cpuinfo (empty where it cannot be read, e.g. not Linux)."""
    try:
        with open("/proc/cpuinfo", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags") or line.startswith("Features"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _detect_features() -> dict:
    """Feature name -> enabled, from what the torch backend of hybridnet provides."""
    import platform
    import torch
    cfg = ""
    try:
        cfg = torch.__config__.show().lower()
    except Exception:  # pragma: no cover - depends on the torch build
        pass
    flags = _cpu_flags()
    x86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")
    cuda = bool(torch.cuda.is_available())
    try:
        dist = bool(torch.distributed.is_available())
        nccl = dist and cuda and bool(torch.distributed.is_nccl_available())
    except Exception:  # pragma: no cover
        dist = nccl = False
    blas_info = ""
    for line in cfg.splitlines():
        line = line.strip().strip(",")
        for item in line.replace(",", " ").split():
            if item.startswith("blas_info="):
                blas_info = item.split("=", 1)[1]
    return {
        "CUDA": cuda,
        "CUDNN": cuda and bool(torch.backends.cudnn.is_available()),
        "NCCL": nccl,
        "CUDA_RTC": False,
        "TENSORRT": False,
        "CPU_SSE": x86 and ("sse" in flags or not flags),
        "CPU_SSE2": x86 and ("sse2" in flags or not flags),
        "CPU_SSE3": x86 and "pni" in flags,
        "CPU_SSE4_1": x86 and "sse4_1" in flags,
        "CPU_SSE4_2": x86 and "sse4_2" in flags,
        "CPU_SSE4A": x86 and "sse4a" in flags,
        "CPU_AVX": x86 and "avx" in flags,
        "CPU_AVX2": x86 and "avx2" in flags,
        "OPENMP": bool(torch.backends.openmp.is_available()),
        "SSE": x86 and ("sse2" in flags or not flags),
        "F16C": x86 and "f16c" in flags,
        "JEMALLOC": False,
        "BLAS_OPEN": "open" in blas_info,
        "BLAS_ATLAS": "atlas" in blas_info,
        "BLAS_MKL": "mkl" in blas_info,
        "BLAS_APPLE": "accelerate" in blas_info,
        "LAPACK": bool(torch.backends.mkl.is_available()) or "lapack is enabled" in cfg
                  or "use_lapack" in cfg,
        "MKLDNN": bool(torch.backends.mkldnn.is_available()),
        "OPENCV": False,
        "CAFFE": False,
        "PROFILER": False,
        "DIST_KVSTORE": dist,
        "CXX14": True,
        "INT64_TENSOR_SIZE": True,
        "SIGNAL_HANDLER": False,
        "DEBUG": bool(getattr(torch.version, "debug", False)),
        "TVM_OP": False,
    }


class Features(OrderedDict):
    """The features of this build, as MXNet's ``mx.runtime.Features``: an ordered mapping from
    MXNet's feature names ('CUDA', 'CUDNN', 'MKLDNN', 'OPENMP', 'BLAS_OPEN', ...) to
    :class:`Feature`, answered from the torch backend (e.g. 'CUDA' is
    ``torch.cuda.is_available()``, 'MKLDNN' (alias 'ONEDNN') is ``torch.backends.mkldnn``).
    A single instance is shared.
    """

    instance: Optional["Features"] = None

    def __new__(cls) -> "Features":
        if cls.instance is None:
            inst = super().__new__(cls)
            OrderedDict.__init__(inst)
            detected = _detect_features()
            for i, name in enumerate(_FEATURE_NAMES):
                OrderedDict.__setitem__(inst, name, Feature(name, detected.get(name, False), i))
            cls.instance = inst
        return cls.instance

    def __init__(self) -> None:  # filled once in __new__
        pass

    def __repr__(self) -> str:
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether ``feature_name`` (case-insensitive) is enabled. Names MXNet 1.9.1 lists are
        answered from the backend; 'ONEDNN'/'DNNL' mean 'MKLDNN'. An unknown name raises
        RuntimeError listing the known ones, as MXNet does (a typo is not a missing feature)."""
        name = str(feature_name).upper()
        name = _FEATURE_ALIASES.get(name, name)
        feature = self.get(name)
        if feature is None:
            raise RuntimeError(f"Feature {feature_name!r} is unknown, known features are: "
                               f"{', '.join(self.keys())}")
        return bool(feature.enabled)


def feature_list() -> list:
    """The list of :class:`Feature` of this build (MXNet's ``mx.runtime.feature_list``)."""
    return list(Features().values())
