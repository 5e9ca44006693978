"""File formats: MXNet 1.9.1's ``params`` (NDArray lists, ``.params``) and ``symbol_json``
(``-symbol.json`` <-> the graph IR), ``onnx`` export, and ``optimizer_states`` (hybridnet's safe
replacement for the pickle in MXNet's ``Updater.get_states``). Pure NumPy/IR code: no torch, no
pickle."""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["params", "symbol_json", "onnx", "optimizer_states"]


def __getattr__(name: str) -> Any:  # lazy: ``params`` must not pull in the IR and the registry
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
