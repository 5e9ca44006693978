"""hybridnet: the Gluon hybrid programming model (MXNet 1.9.1 compatible) on PyTorch kernels.

``import hybridnet as mx`` gives MXNet's namespace: ``mx.nd``, ``mx.sym``, ``mx.gluon``,
``mx.autograd``, ``mx.init``, ``mx.optimizer``, ``mx.metric``, ``mx.lr_scheduler``, ...
"""
from __future__ import annotations

__version__ = "0.1.0"

from .base import MXNetError  # noqa: F401
from .context import Context, cpu, gpu, cpu_pinned, num_gpus, current_context  # noqa: F401
from . import context  # noqa: F401
from . import base  # noqa: F401
from . import ops  # noqa: F401
from . import autograd  # noqa: F401
from . import ndarray  # noqa: F401
from . import ndarray as nd  # noqa: F401
from . import random  # noqa: F401

import importlib as _importlib

# Layers above the core; each is imported when present.
for _name, _alias in (("symbol", "sym"), ("name", None), ("attribute", None), ("initializer", "init"),
                      ("optimizer", None), ("lr_scheduler", None), ("metric", None), ("kvstore", "kv"),
                      ("gluon", None), ("recordio", None), ("test_utils", None), ("io", None),
                      ("util", None), ("profiler", None), ("engine", None), ("model", None)):
    try:
        _mod = _importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_name}":
            raise
        continue
    globals()[_name] = _mod
    if _alias:
        globals()[_alias] = _mod

if "attribute" in globals():
    AttrScope = attribute.AttrScope  # noqa: F821
