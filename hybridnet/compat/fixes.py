"""Known libraries' import-time checks that are wrong under hybridnet, fixed without editing them.

Each entry of :data:`KNOWN_FIXES` names one module of one library and a function applied to
that module right after it executes (before anything else can call into it). The finder that
applies them is installed together with the ``mxnet`` alias, so a fix only ever touches a
library that is being run on hybridnet-as-mxnet. Users never edit site-packages.

The list (keep it short; every entry has a test in ``tests/compat/test_fixes.py``):

``gluoncv.check`` (GluonCV 0.10.x)
    ``gluoncv/__init__`` calls ``_require_pytorch_version('1.4.0', '2.0.0')``, which raises
    ``RuntimeError`` (not ``ImportError``) whenever torch >= 2.0 is importable -- a check written
    when torch and MXNet were alternative back ends. Under hybridnet torch is the kernel library,
    always present, and GluonCV runs on its MXNet side. The fix makes the check report
    "no PyTorch back end" (``ImportError``, which GluonCV handles) once GluonCV's MXNet side has
    imported; otherwise it raises the ImportError that GluonCV's ``__init__`` swallowed (as a
    RuntimeError naming the module), so a missing name shows up as itself rather than as
    "missing mxnet & torch".
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Callable, Dict, Optional, Sequence

__all__ = ["KNOWN_FIXES", "LibraryFixFinder", "install"]

# GluonCV's __init__ imports these inside `try: ... except ImportError: pass`.
_GLUONCV_MXNET_SIDE = ("data", "model_zoo", "nn", "utils", "loss")


def _fix_gluoncv_check(check: types.ModuleType) -> None:
    package = check.__name__.rpartition(".")[0]

    def _require_pytorch_version(torch_version: str, max_torch_version: str = "2.0.0") -> None:
        """hybridnet's replacement: torch here is hybridnet's kernel library, not a back end."""
        for sub in _GLUONCV_MXNET_SIDE:
            if f"{package}.{sub}" not in sys.modules:
                # GluonCV's __init__ swallowed why this failed; importing it again shows the cause
                # (as a RuntimeError, which GluonCV's `except ImportError` does not swallow).
                try:
                    importlib.import_module(f"{package}.{sub}")
                except ImportError as err:
                    raise RuntimeError(f"{package}.{sub} cannot be imported on hybridnet: "
                                       f"{err}") from err
        raise ImportError(f"{package} runs on hybridnet (MXNet {_api_version()} API); its "
                          f"PyTorch back end is not used (torch is hybridnet's kernel library)")

    _require_pytorch_version.__module__ = check.__name__
    setattr(check, "_require_pytorch_version", _require_pytorch_version)


def _api_version() -> str:
    return sys.modules["hybridnet"].MXNET_API_VERSION


KNOWN_FIXES: Dict[str, Callable[[types.ModuleType], None]] = {
    "gluoncv.check": _fix_gluoncv_check,
}


class _FixingLoader(importlib.abc.Loader):
    """Runs the library's own loader, then the fix; everything else is the original loader's."""

    def __init__(self, loader: Any, fix: Callable[[types.ModuleType], None]):
        self._loader, self._fix = loader, fix

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        self._fix(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class LibraryFixFinder(importlib.abc.MetaPathFinder):
    """Finds a fixed module with the other finders and wraps its loader with the fix."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[types.ModuleType] = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        fix = KNOWN_FIXES.get(fullname)
        if fix is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _FixingLoader(spec.loader, fix)
                return spec
        return None


_FINDER: Optional[LibraryFixFinder] = None


def install() -> LibraryFixFinder:
    """Put the fix finder on ``sys.meta_path`` (idempotent) and fix modules already imported."""
    global _FINDER
    if _FINDER is None:
        _FINDER = LibraryFixFinder()
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name, fix in KNOWN_FIXES.items():
        module = sys.modules.get(name)
        if module is not None:
            fix(module)
    return _FINDER
