"""``python -m hybridnet.compat install-pth | uninstall-pth | status [--site-dir DIR]``.

Turns the environment-wide ``mxnet`` alias on or off (see :mod:`hybridnet.compat.pth`).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from .pth import ENV_VAR, PTH_NAME, default_site_dir, install_pth, uninstall_pth


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hybridnet.compat",
        description="Make every `import mxnet` in this environment give hybridnet "
                    f"(writes {PTH_NAME} into site-packages).")
    parser.add_argument("command", choices=["install-pth", "uninstall-pth", "status"])
    parser.add_argument("--site-dir", default=None,
                        help="site-packages directory (default: this interpreter's, "
                             f"{default_site_dir()})")
    args = parser.parse_args(argv)
    site_dir = args.site_dir or default_site_dir()
    if args.command == "install-pth":
        try:
            path = install_pth(site_dir)
        except OSError as err:
            print(f"python -m hybridnet.compat: {err}", file=sys.stderr)
            return 1
        print(f"installed {path}: `import mxnet` now gives hybridnet in every process of this "
              f"environment ({ENV_VAR}=0 opts a process out)")
    elif args.command == "uninstall-pth":
        removed = uninstall_pth(site_dir)
        print(f"removed {removed}" if removed else f"{PTH_NAME} was not installed in {site_dir}")
    else:
        path = os.path.join(site_dir, PTH_NAME)
        installed = os.path.exists(path)
        print(f"{path}: {'installed' if installed else 'not installed'}; "
              f"{ENV_VAR}={os.environ.get(ENV_VAR, '(unset)')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
