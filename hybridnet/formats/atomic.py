"""Atomic file writes: write a temporary file beside the target, then rename over it."""
from __future__ import annotations

import os
import secrets
from typing import Iterable, Union

__all__ = ["write_atomic"]


def _make_temp(directory: str, base: str) -> tuple:
    """Create ``.<base>.<random>.tmp`` in ``directory`` with the usual (umask) permissions."""
    for _ in range(100):
        name = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        return fd, name
    raise FileExistsError(f"cannot create a temporary file next to {base!r} in {directory!r}")


def write_atomic(fname: Union[str, os.PathLike], data: Union[bytes, Iterable[bytes]]) -> None:
    """Write ``data`` (bytes or an iterable of chunks) to ``fname`` so that readers see the old
    file or the new one, never a half-written one; on failure the old file is left untouched."""
    path = os.fspath(fname)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = _make_temp(directory, os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in ([data] if isinstance(data, (bytes, bytearray, memoryview)) else data):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
