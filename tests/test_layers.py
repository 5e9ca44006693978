"""Imports point down only, function bodies included (ARCHITECTURE.md, "Layers").

The layer list is read from ARCHITECTURE.md (its ```layers block, bottom layer first); every
``import`` / ``from ... import`` of every module of hybridnet/ is read with ``ast`` at any depth
(inside functions, methods and ``if`` blocks too) and must name a module of the same layer or a
lower one. Import circles may only join modules of one folder, and each must be listed, with its
reason, in ARCHITECTURE.md's ```circles block. Imports spelled as strings
(``importlib.import_module``) are not read.
"""
from __future__ import annotations

import ast
import functools
import pathlib
import re
from typing import Dict, List, Optional, Set, Tuple

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "hybridnet"
ARCHITECTURE = PACKAGE.parent / "ARCHITECTURE.md"

Layers = List[Tuple[str, List[str]]]  # (layer name, entries: "ops/" folders, "base.py" files)


def read_block(text: str, tag: str) -> List[str]:
    """The non-empty, non-comment lines of the fenced block opened by ```<tag>."""
    m = re.search(rf"^```{tag}\n(.*?)^```", text, re.S | re.M)
    assert m, f"ARCHITECTURE.md has no ```{tag} block"
    return [ln.strip() for ln in m.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def read_layers(text: str) -> Layers:
    """``name: entry entry ...`` lines, bottom layer first."""
    layers = []
    for line in read_block(text, "layers"):
        name, _, entries = line.partition(":")
        layers.append((name.strip(), entries.split()))
    return layers


def read_circles(text: str) -> List[Tuple[frozenset, str]]:
    """``file file ...: reason`` lines: the import circles allowed, inside one folder each."""
    out = []
    for line in read_block(text, "circles"):
        files, _, reason = line.partition(":")
        out.append((frozenset(files.split()), reason.strip()))
    return out


def package_sources(root: pathlib.Path = PACKAGE) -> Dict[str, str]:
    """path relative to hybridnet/ ("ndarray/ndarray.py") -> source, for every module."""
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.py"))}


def _dotted(path: str) -> str:
    parts = ["hybridnet"] + path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=None)
def _import_statements(path: str, source: str) -> Tuple[Tuple[int, int, str, Tuple[str, ...]], ...]:
    """(line, level, module, names) of every import statement in ``source``, at any depth;
    ``import a.b`` gives level -1 (names are then the imported modules)."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import):
            found.append((node.lineno, -1, "", tuple(a.name for a in node.names)))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.level, node.module or "", tuple(a.name for a in node.names)))
    return tuple(sorted(found))


def imports(path: str, source: str, by_name: Dict[str, str]) -> List[Tuple[int, str]]:
    """(line, imported module's path) of every import of a hybridnet module in ``source``, at
    any depth. ``from X import y`` imports module ``X.y`` where that is a module, else ``X``."""
    here = _dotted(path).split(".")
    if not path.endswith("__init__.py"):
        here = here[:-1]  # the package a relative import starts from
    found: List[Tuple[int, str]] = []
    for line, level, module, names in _import_statements(path, source):
        if level < 0:
            targets = list(names)
        else:
            base = ".".join(here[:len(here) - level + 1] + ([module] if module else [])) if level else module
            targets = [f"{base}.{n}" if f"{base}.{n}" in by_name else base for n in names]
        for t in targets:
            while t and t not in by_name:  # `import hybridnet.ops.registry.x` -> its module
                t = t.rpartition(".")[0]
            if t and (line, by_name[t]) not in found:
                found.append((line, by_name[t]))
    return found


def layer_of(path: str, layers: Layers) -> Optional[int]:
    """Index of the layer holding ``path``: a file entry, else the deepest folder entry."""
    best, depth = None, -1
    for i, (_, entries) in enumerate(layers):
        for e in entries:
            if e == path:
                return i
            if e.endswith("/") and path.startswith(e) and len(e) > depth:
                best, depth = i, len(e)
    return best


def import_graph(sources: Dict[str, str]) -> Dict[str, List[Tuple[int, str]]]:
    by_name = {_dotted(p): p for p in sources}
    return {p: imports(p, src, by_name) for p, src in sources.items()}


def upward_imports(sources: Dict[str, str], layers: Layers) -> List[str]:
    """One line per import that runs from a lower layer to a higher one."""
    bad = []
    for path, edges in import_graph(sources).items():
        lo = layer_of(path, layers)
        for line, target in edges:
            hi = layer_of(target, layers)
            if lo is not None and hi is not None and hi > lo:
                bad.append(f"hybridnet/{path}:{line} imports {target}: layer {layers[lo][0]!r} "
                           f"-> higher layer {layers[hi][0]!r}")
    return bad


def circles(sources: Dict[str, str]) -> List[frozenset]:
    """The import circles (strongly connected components of more than one module; Tarjan)."""
    graph = {p: sorted({t for _, t in edges if t != p}) for p, edges in import_graph(sources).items()}
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.add(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        found.append(frozenset(comp))
    return found


def _folder(path: str) -> str:
    return path.rpartition("/")[0]


def circles_across_folders(sources: Dict[str, str]) -> List[frozenset]:
    return [c for c in circles(sources) if len({_folder(p) for p in c}) > 1]


# ---- the package as it is --------------------------------------------------------------------
@pytest.fixture(scope="module")
def sources() -> Dict[str, str]:
    found = package_sources()
    assert len(found) > 150  # the scan sees the whole package
    return found


@pytest.fixture(scope="module")
def doc() -> str:
    return ARCHITECTURE.read_text()


def test_every_module_has_a_layer(sources, doc):
    layers = read_layers(doc)
    unplaced = [p for p in sources if layer_of(p, layers) is None]
    assert not unplaced, ("place these modules in ARCHITECTURE.md's ```layers block:\n"
                          + "\n".join(unplaced))
    entries = [e for _, es in layers for e in es]
    missing = [e for e in entries if not (PACKAGE / e).exists()]
    assert not missing, f"ARCHITECTURE.md's ```layers block names what does not exist: {missing}"
    assert len(entries) == len(set(entries)), "an entry is listed in two layers"


def test_no_import_runs_upward(sources, doc):
    bad = upward_imports(sources, read_layers(doc))
    assert not bad, ("imports must point down (ARCHITECTURE.md, Layers); move the service these "
                     "need into a lower layer:\n" + "\n".join(bad))


def test_no_circle_spans_two_folders(sources):
    bad = circles_across_folders(sources)
    assert not bad, ("import circles across folders:\n"
                     + "\n".join(" ".join(sorted(c)) for c in bad))


def test_circles_are_the_documented_ones(sources, doc):
    documented = read_circles(doc)
    assert all(reason for _, reason in documented), "every circle in ARCHITECTURE.md needs a reason"
    allowed = {files for files, _ in documented}
    actual = set(circles(sources))
    assert actual - allowed == set(), ("import circles not in ARCHITECTURE.md's ```circles block "
                                       "(list them with a reason, or break them):\n"
                                       + "\n".join(" ".join(sorted(c)) for c in actual - allowed))
    assert allowed - actual == set(), ("ARCHITECTURE.md lists circles that are gone:\n"
                                       + "\n".join(" ".join(sorted(c)) for c in allowed - actual))


# ---- the checker itself ----------------------------------------------------------------------
def test_reader_sees_function_level_and_relative_imports():
    srcs = {"__init__.py": "", "base.py": "", "ops/__init__.py": "", "ops/shape.py": "",
            "ops/nn.py": ("import os\nfrom . import shape\n\ndef f():\n    from ..base import X\n"
                          "    import hybridnet.ops.shape.deeper\n"),
            "gluon/__init__.py": "from .. import ops\nfrom ..ops import nn as _nn\n"}
    graph = import_graph(srcs)
    assert graph["ops/nn.py"] == [(2, "ops/shape.py"), (5, "base.py"), (6, "ops/shape.py")]
    assert graph["gluon/__init__.py"] == [(1, "ops/__init__.py"), (2, "ops/nn.py")]


def test_checker_fails_on_a_planted_upward_import(sources, doc):
    layers = read_layers(doc)
    planted = dict(sources)
    src = planted["ops/shape.py"]
    planted["ops/shape.py"] = src + "\n\ndef _planted():\n    from ..gluon import nn\n    return nn\n"
    line = src.count("\n") + 4
    new = set(upward_imports(planted, layers)) - set(upward_imports(sources, layers))
    assert new == {f"hybridnet/ops/shape.py:{line} imports gluon/nn/__init__.py: layer 'ops' "
                   f"-> higher layer 'gluon'"}


def test_checker_fails_on_a_circle_across_folders():
    srcs = {"__init__.py": "", "a/__init__.py": "", "b/__init__.py": "",
            "a/x.py": "from ..b import y\n", "b/y.py": "def f():\n    from ..a import x\n",
            "a/p.py": "from . import q\n", "a/q.py": "def g():\n    from . import p\n"}
    layers = [("one", ["__init__.py", "a/", "b/"])]
    assert upward_imports(srcs, layers) == []
    assert set(circles(srcs)) == {frozenset({"a/x.py", "b/y.py"}), frozenset({"a/p.py", "a/q.py"})}
    assert circles_across_folders(srcs) == [frozenset({"a/x.py", "b/y.py"})]
