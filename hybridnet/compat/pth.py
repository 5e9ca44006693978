"""The environment-wide opt-in: a ``.pth`` file that makes every ``import mxnet`` give hybridnet.

For libraries that ``import mxnet`` themselves (GluonCV, GluonNLP, ...) in programs you do not
start yourself (notebooks, test runners). ``python -m hybridnet.compat install-pth`` writes
``hybridnet-mxnet-alias.pth`` into site-packages. At interpreter start-up it only puts a tiny
finder on ``sys.meta_path`` -- nothing is imported, so programs that never import mxnet pay
nothing. The first ``import mxnet`` imports hybridnet and turns the alias on
(:func:`hybridnet.compat.alias_mxnet`). A process started with ``HYBRIDNET_ALIAS_MXNET=0``
opts out (then ``import mxnet`` finds whatever else is installed, if anything).
"""
from __future__ import annotations

import os
import sysconfig
from typing import Optional

from ..formats.atomic import write_atomic

__all__ = ["PTH_NAME", "ENV_VAR", "install_pth", "uninstall_pth", "default_site_dir"]

PTH_NAME = "hybridnet-mxnet-alias.pth"
ENV_VAR = "HYBRIDNET_ALIAS_MXNET"

# Executed by `site` at start-up in a fresh namespace. Keep it free of hybridnet imports.
_STARTUP_SOURCE = f'''
import os, sys

class HybridnetMXNetAliasOnFirstImport:
    """From hybridnet's {PTH_NAME}: turns the mxnet alias on at the first `import mxnet`."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "mxnet" and not name.startswith("mxnet."):
            return None
        if cls in sys.meta_path:
            sys.meta_path.remove(cls)
        try:
            import hybridnet.compat
        except ImportError as err:
            raise ImportError(
                "{PTH_NAME} makes `import mxnet` give hybridnet, but hybridnet cannot be "
                "imported (%s). Remove the file with `python -m hybridnet.compat uninstall-pth`, "
                "or set {ENV_VAR}=0 to opt out in one process." % (err,), name=name) from err
        hybridnet.compat.alias_mxnet()
        return hybridnet.compat.alias.install().find_spec(name, path, target)

if os.environ.get("{ENV_VAR}", "1") != "0":
    sys.meta_path.insert(0, HybridnetMXNetAliasOnFirstImport)
'''


def _pth_line() -> str:
    # `site` executes a .pth line that starts with "import"; everything must fit on that line.
    return (f"import sys; exec(compile({_STARTUP_SOURCE!r}, {PTH_NAME!r}, 'exec'), "
            f"{{'__name__': 'hybridnet_mxnet_alias_pth'}})\n")


def default_site_dir() -> str:
    """The running interpreter's site-packages (``sysconfig``'s ``purelib``)."""
    return sysconfig.get_paths()["purelib"]


def install_pth(site_dir: Optional[str] = None) -> str:
    """Write the ``.pth`` into ``site_dir`` (default: this interpreter's site-packages)."""
    directory = site_dir or default_site_dir()
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"site directory {directory!r} does not exist")
    path = os.path.join(directory, PTH_NAME)
    write_atomic(path, _pth_line().encode("utf-8"))
    return path


def uninstall_pth(site_dir: Optional[str] = None) -> Optional[str]:
    """Remove the ``.pth`` from ``site_dir``; returns its path, or None if it was not there."""
    path = os.path.join(site_dir or default_site_dir(), PTH_NAME)
    try:
        os.remove(path)
    except FileNotFoundError:
        return None
    return path
