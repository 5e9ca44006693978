"""Atomic file writes: write a temporary file beside the target, then rename over it."""
from __future__ import annotations

import os
import tempfile
from typing import Union


def write_atomic(fname: Union[str, os.PathLike], data: bytes) -> None:
    """Write ``data`` to ``fname`` so that readers see the old file or the new one, never half."""
    fname = os.fspath(fname)
    directory = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(fname)[-32:], dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, fname)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
