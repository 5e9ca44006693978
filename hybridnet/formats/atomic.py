"""Atomic file writes: write a temporary file beside the target, then rename over it.

Temporary files are named ``.<target name>.<pid>-<random>.tmp`` and created with mode 0o666, so
the finished file gets the user's umask (like ``open(path, "w")``), not ``mkstemp``'s 0600. A
save that is killed leaves its temporary file behind; the next save to the same target removes
the ones whose writing process no longer runs (:func:`remove_stale_temps`).
"""
from __future__ import annotations

import os
import re
import secrets
from typing import IO, Iterable, Tuple, Union

__all__ = ["write_atomic", "make_temp", "remove_stale_temps", "open_atomic_temp"]

PathLike = Union[str, "os.PathLike[str]"]


def _temp_pattern(base: str) -> "re.Pattern[str]":
    return re.compile(r"\." + re.escape(base) + r"\.(\d+)-[0-9a-f]{12}\.tmp\Z")


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # exists (another user's) or cannot tell: keep the file
    return True


def remove_stale_temps(path: PathLike) -> None:
    """Delete temporary files that killed saves to ``path`` left behind (their process is gone)."""
    target = os.path.abspath(os.fspath(path))
    directory, base = os.path.split(target)
    pattern = _temp_pattern(base)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if m is not None and not _process_alive(int(m.group(1))):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def make_temp(path: PathLike) -> Tuple[int, str]:
    """Create the temporary file for a save to ``path`` (after removing stale ones); returns
    ``(fd, temp path)``. Permissions are 0o666 minus the umask."""
    target = os.path.abspath(os.fspath(path))
    directory, base = os.path.split(target)
    remove_stale_temps(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = os.path.join(directory, f".{base}.{os.getpid()}-{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(name, flags, 0o666)
        except FileExistsError:
            continue
        except OSError as e:  # name the file the user asked for, as open(path, "w") would
            raise type(e)(e.errno, e.strerror, os.fspath(path)) from None
        return fd, name
    raise FileExistsError(f"cannot create a temporary file next to {base!r} in {directory!r}")


def open_atomic_temp(path: PathLike, mode: str = "wb") -> Tuple[IO, str]:
    """:func:`make_temp` as an open file object (``mode`` 'wb' or 'w')."""
    fd, tmp = make_temp(path)
    return os.fdopen(fd, mode), tmp


def write_atomic(fname: PathLike, data: Union[bytes, Iterable[bytes]]) -> None:
    """Write ``data`` (bytes or an iterable of chunks) to ``fname`` so that readers see the old
    file or the new one, never a half-written one; on failure the old file is left untouched."""
    path = os.fspath(fname)
    fd, tmp = make_temp(path)
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
