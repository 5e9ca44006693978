"""``import mxnet`` resolved to hybridnet's own modules (one module object per name).

A finder first on ``sys.meta_path`` answers every ``mxnet`` / ``mxnet.<x>`` import, lazily:

* ``mxnet`` is one thin module object (:class:`MXNetModule`) that forwards every attribute to
  ``hybridnet`` but reports ``__version__`` as the MXNet API level hybridnet implements
  ("1.9.1"), so libraries' version checks pass while ``hybridnet.__version__`` stays ours.
* ``mxnet.<x>.<y>`` IS ``hybridnet.<x>.<y>``: the very module object, registered under the
  second name, so ``mxnet.gluon.nn is hybridnet.gluon.nn`` and ``isinstance`` checks agree.
  Where hybridnet keeps a namespace as a module-valued attribute rather than a file (``mx.nd``
  is ``hybridnet.ndarray``), that module object is used.
* ``mxnet.*`` names never fall through to another finder, so a real MXNet installed in the same
  environment is never mixed in; if one is already imported, :func:`alias_mxnet` refuses.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Optional, Sequence

ALIAS = "mxnet"
TARGET = "hybridnet"


class AliasConflictError(RuntimeError):
    """A real MXNet (or another package posing as ``mxnet``) is already imported."""


class MXNetModule(types.ModuleType):
    """The top-level ``mxnet`` module: hybridnet's namespace with MXNet's API version.

    Reads, writes and deletes of ordinary attributes go to ``hybridnet`` itself, so
    ``mx.gluon is hybridnet.gluon`` and monkeypatching ``mx.x`` patches ``hybridnet.x``; only
    module metadata (``__version__``, ``__name__``, ``__spec__``, ...) belongs to this object.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.modules[TARGET], name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") and name.endswith("__"):
            super().__setattr__(name, value)
        else:
            setattr(sys.modules[TARGET], name, value)

    def __delattr__(self, name: str) -> None:
        if name.startswith("__") and name.endswith("__"):
            super().__delattr__(name)
        else:
            delattr(sys.modules[TARGET], name)

    def __dir__(self) -> list:
        return sorted(set(dir(sys.modules[TARGET])) | set(self.__dict__))

    @property
    def __all__(self) -> list:
        """What ``from mxnet import *`` binds: exactly what ``from hybridnet import *`` binds."""
        target = sys.modules[TARGET]
        names = getattr(target, "__all__", None)
        if names is None:
            names = [n for n in vars(target) if not n.startswith("_")]
        return list(names)


def _new_mxnet_module() -> MXNetModule:
    target = importlib.import_module(TARGET)
    module = MXNetModule(ALIAS, target.__doc__)
    module.__version__ = target.MXNET_API_VERSION
    module.__file__ = target.__file__
    module.__path__ = list(target.__path__)
    module.__package__ = ALIAS
    return module


def _is_ours(module: Any) -> bool:
    name = getattr(module, "__name__", None)
    return isinstance(module, MXNetModule) or (
        isinstance(name, str) and (name == TARGET or name.startswith(TARGET + ".")))


class _ExistingModuleLoader(importlib.abc.Loader):
    """Hands importlib an already-initialised module instead of executing anything.

    importlib overwrites ``module.__spec__`` with the alias spec; the module's own spec (its
    real name and file) is put back, so ``hybridnet.x.__spec__.name`` stays ``"hybridnet.x"``.
    """

    def __init__(self, module: types.ModuleType):
        self._module = module
        self._own_spec = module.__dict__.get("__spec__")

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self._module

    def exec_module(self, module: types.ModuleType) -> None:
        if self._own_spec is not None:
            module.__spec__ = self._own_spec


class MXNetAliasFinder(importlib.abc.MetaPathFinder):
    """Answers ``mxnet`` and ``mxnet.*`` imports with hybridnet's modules (never a real MXNet)."""

    def __init__(self) -> None:
        self._top: Optional[MXNetModule] = None

    def top_module(self) -> MXNetModule:
        if self._top is None:
            self._top = _new_mxnet_module()
        return self._top

    def _resolve(self, fullname: str) -> types.ModuleType:
        if fullname == ALIAS:
            return self.top_module()
        parent_alias, _, leaf = fullname.rpartition(".")
        parent = sys.modules.get(parent_alias)
        parent_real = TARGET if parent is None or isinstance(parent, MXNetModule) \
            else parent.__name__
        real = f"{parent_real}.{leaf}"
        try:
            return importlib.import_module(real)
        except ModuleNotFoundError as err:
            if err.name != real:  # something the module itself imports is missing
                raise
        # A namespace hybridnet keeps as a module-valued attribute (mx.nd is hybridnet.ndarray).
        attr = getattr(sys.modules.get(parent_real), leaf, None)
        if isinstance(attr, types.ModuleType) and _is_ours(attr):
            return attr
        raise ModuleNotFoundError(
            f"No module named {fullname!r}: hybridnet, which answers for MXNet here, has no "
            f"{real!r}", name=fullname)

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[types.ModuleType] = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        module = self._resolve(fullname)
        return importlib.machinery.ModuleSpec(
            fullname, _ExistingModuleLoader(module),
            is_package=hasattr(module, "__path__"))


_FINDER: Optional[MXNetAliasFinder] = None


def _foreign_mxnet_modules() -> list:
    return [(name, mod) for name, mod in list(sys.modules.items())
            if (name == ALIAS or name.startswith(ALIAS + ".")) and mod is not None
            and not _is_ours(mod)]


def install() -> MXNetAliasFinder:
    """Put the alias finder first on ``sys.meta_path`` (idempotent); see :func:`alias_mxnet`."""
    global _FINDER
    foreign = _foreign_mxnet_modules()
    if foreign:
        name, mod = foreign[0]
        where = getattr(mod, "__file__", None) or repr(mod)
        raise AliasConflictError(
            f"cannot make 'mxnet' resolve to hybridnet: a different {name!r} is already "
            f"imported (from {where}). Mixing two frameworks under one name would give two "
            f"NDArray classes and two autograd engines. Turn the alias on before anything "
            f"imports mxnet (first lines of the program, or run it with "
            f"'python -m hybridnet script.py'), or uninstall the real mxnet.")
    if _FINDER is None:
        _FINDER = MXNetAliasFinder()
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    return _FINDER


def is_installed() -> bool:
    """Whether ``import mxnet`` currently resolves to hybridnet through this alias."""
    return _FINDER is not None and _FINDER in sys.meta_path
