"""Running unchanged MXNet code on hybridnet: the ``mxnet`` alias and known-library fixes.

Three ways to turn it on (see README, "Running unchanged MXNet code"):

* in a program, before anything imports mxnet::

      import hybridnet.compat
      hybridnet.compat.alias_mxnet()
      import mxnet as mx            # hybridnet's modules; mx.__version__ == "1.9.1"

* as a runner: ``python -m hybridnet script.py args...`` or ``python -m hybridnet -m module``;
* for a whole environment (libraries that ``import mxnet`` themselves):
  ``python -m hybridnet.compat install-pth`` (undo with ``uninstall-pth``; a process started
  with ``HYBRIDNET_ALIAS_MXNET=0`` opts out).

Nothing below ``gluon`` imports this package.
"""
from __future__ import annotations

from .alias import AliasConflictError, MXNetModule, is_installed
from . import alias as _alias
from . import fixes as _fixes
from . import numpy1 as _numpy1

__all__ = ["alias_mxnet", "is_mxnet_aliased", "AliasConflictError", "MXNetModule"]


def alias_mxnet(numpy1_names: bool = True) -> None:
    """Make ``import mxnet`` / ``import mxnet.x.y`` give hybridnet's own modules from now on.

    Idempotent. Also installs the fixes for known libraries' import-time checks
    (:mod:`hybridnet.compat.fixes`) and, unless ``numpy1_names=False`` or the environment sets
    ``HYBRIDNET_NUMPY1_NAMES=0``, the NumPy 1.x names MXNet-era code uses and NumPy 2 removed
    (``np.NaN``, ``np.float``, ``np.product``...; each warns once: :mod:`hybridnet.compat.numpy1`).
    Raises :class:`AliasConflictError` if a real MXNet (or anything else calling itself
    ``mxnet``) is already imported in this process.
    """
    _alias.install()
    _fixes.install()
    if numpy1_names and _numpy1.enabled_by_env():
        _numpy1.install()


def is_mxnet_aliased() -> bool:
    """Whether ``import mxnet`` resolves to hybridnet in this process."""
    return is_installed()
