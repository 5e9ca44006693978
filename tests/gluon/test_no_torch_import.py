"""gluon/ and optimizer/ never import torch (ARCHITECTURE.md: they go through ops, ndarray, symbol
and compiler); formats/ is NumPy and IR code only."""
from __future__ import annotations

import ast
import pathlib

import pytest

import hybridnet.formats
import hybridnet.gluon
import hybridnet.optimizer


def torch_imports(source: str) -> list:
    """(line, statement) of every ``import torch...`` / ``from torch... import`` in ``source``,
    at any depth (inside functions and ``if TYPE_CHECKING`` blocks too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n == "torch" or n.startswith("torch.") for n in names):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_scanner_finds_torch_imports():
    src = "import os\nimport torch.nn as nn\ndef f():\n    from torch import cat\nfrom .torch import x\n"
    assert [line for line, _ in torch_imports(src)] == [2, 4]


@pytest.mark.parametrize("package, min_files", [(hybridnet.gluon, 20), (hybridnet.optimizer, 4),
                                               (hybridnet.formats, 6)])
def test_package_does_not_import_torch(package, min_files):
    root = pathlib.Path(package.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) >= min_files   # the scan sees the whole package
    offenders = [f"{f.relative_to(root.parent)}:{line}: {stmt}"
                 for f in files for line, stmt in torch_imports(f.read_text())]
    assert not offenders, (f"{root.name} must not import torch; move the tensor code into ndarray/ "
                           "or an operator in ops/:\n" + "\n".join(offenders))
