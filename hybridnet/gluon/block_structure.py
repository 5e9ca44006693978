"""``Block.save(prefix)`` / ``Block.load(prefix)``: MXNet 1.9.1's model-structure files.

``save`` writes ``<prefix>-model.json`` (the tree of blocks: each block's original name, the
name its parent gives it and, for hybridized HybridBlocks, the traced graph as symbol JSON with
its input/output formats) and ``<prefix>-model.params`` (``save_parameters``). ``load`` walks a
freshly built model of the same architecture in the same order, gives every block the name it
had when saved (so parameter names match the saved graphs), restores the traced graphs and
loads the parameters. The architecture itself is not rebuilt, exactly as in MXNet.

The JSON is read with ``json`` and the graphs with the symbol JSON reader: no code is loaded.
"""
from __future__ import annotations

import json
from typing import Any

from ..base import MXNetError
from ..formats.atomic import write_atomic

__all__ = ["save_structure", "load_structure"]


def _entry_key(block: Any, index: int) -> str:
    """The key of a block in the file: its class name (lower case) and its visiting order."""
    return type(block).__name__.lower() + str(index)


def save_structure(root: Any, prefix: str) -> None:
    """Write ``prefix-model.json`` and ``prefix-model.params`` for ``root``."""
    from .block import HybridBlock

    counter = [0]

    def visit(block: Any, into: dict) -> None:
        entry: dict = {"orig_name": block.name}
        into[_entry_key(block, counter[0])] = entry
        if isinstance(block, HybridBlock):
            trace = block._cached_graph
            if trace:
                inputs, out = trace
                entry["in_format"] = trace.in_format
                entry["out_format"] = trace.out_format
                entry["inputs"] = [s.tojson() for s in inputs]
                entry["symbol"] = out.tojson()
                entry["hybridized"] = True
            else:
                entry["hybridized"] = False
        children: dict = {}
        entry["children"] = children
        for child_key, child in block._children.items():
            counter[0] += 1
            children[child.name] = child_key
            visit(child, entry)

    model: dict = {}
    visit(root, model)
    write_atomic(prefix + "-model.json", json.dumps(model).encode("utf-8"))
    root.save_parameters(prefix + "-model.params")


def load_structure(root: Any, prefix: str) -> None:
    """Rename ``root``'s blocks and parameters as saved, restore traced graphs, load values."""
    from dataclasses import replace

    from .. import symbol as sym
    from .block import HybridBlock, TracedGraph

    fname = prefix + "-model.json"
    with open(fname, encoding="utf-8") as f:
        model = json.load(f)
    counter = [0]

    def visit(block: Any, saved: dict) -> None:
        key = _entry_key(block, counter[0])
        if not isinstance(saved, dict) or key not in saved:
            raise MXNetError(f"{fname}: no entry {key!r} for block {block.name!r}; load() needs a "
                             f"model built the same way, in the same order, as the saved one")
        entry = saved[key]
        block._name = entry["orig_name"]
        if isinstance(block, HybridBlock) and entry.get("hybridized"):
            block._clear_cached_op()
            block._cached_graph = TracedGraph([sym.load_json(s) for s in entry["inputs"]],
                                              sym.load_json(entry["symbol"]),
                                              entry["in_format"], entry["out_format"])
            block._options = replace(block._options, active=True)
        params = block.params._params
        for old in list(params.keys()):
            param = params.pop(old)
            params[block.name + "_" + old[len(block.params.prefix):]] = param
        for child in block._children.values():
            counter[0] += 1
            visit(child, entry)
        saved_keys = entry["children"]
        renamed = [(saved_keys.get(child.name), child) for child in block._children.values()]
        missing = [child.name for k, child in renamed if k is None]
        if missing:
            raise MXNetError(f"{fname}: children {missing} of block {block.name!r} are not in the "
                             f"saved model")
        block._children.clear()
        block._children.update(renamed)

    visit(root, model)
    root.load_parameters(prefix + "-model.params")
