"""``mx.gluon``: Blocks, Parameters, hybridize, layers, losses, Trainer, data, model zoo."""
from __future__ import annotations

import importlib as _importlib

from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict  # noqa: F401
from .block import Block, HybridBlock, SymbolBlock  # noqa: F401
from . import nn  # noqa: F401

for _name in ("utils", "data", "loss", "trainer", "rnn", "model_zoo", "contrib"):
    try:
        _importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_name}":
            raise
        continue
    globals()[_name] = _importlib.import_module(f"{__name__}.{_name}")

if "trainer" in globals():
    Trainer = trainer.Trainer  # noqa: F821
