"""``mx.log``: MXNet's logger factory (``get_logger``) with its glog-style, coloured format
(``W0505 00:29:47 3525 file:func:line] message``)."""
from __future__ import annotations

import logging
import warnings
from typing import Optional

__all__ = ["get_logger", "getLogger", "CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET"]

CRITICAL = logging.CRITICAL
ERROR = logging.ERROR
WARNING = logging.WARNING
INFO = logging.INFO
DEBUG = logging.DEBUG
NOTSET = logging.NOTSET

_LABELS = {CRITICAL: "C", ERROR: "E", WARNING: "W", INFO: "I", DEBUG: "D"}


class _Formatter(logging.Formatter):
    """A one-letter level, date, process id and call site, coloured by level (MXNet's)."""

    def __init__(self) -> None:
        super().__init__(datefmt="%m%d %H:%M:%S")

    @staticmethod
    def _get_color(level: int) -> str:
        if level >= logging.WARNING:
            return "\x1b[31m"
        if level >= logging.INFO:
            return "\x1b[32m"
        return "\x1b[34m"

    def format(self, record: logging.LogRecord) -> str:
        self._style._fmt = (self._get_color(record.levelno) + _LABELS.get(record.levelno, "U")
                            + "%(asctime)s %(process)d %(pathname)s:%(funcName)s:%(lineno)d]"
                            + "\x1b[0m %(message)s")
        return super().format(record)


def get_logger(name: Optional[str] = None, filename: Optional[str] = None,
               filemode: Optional[str] = None, level: int = WARNING) -> logging.Logger:
    """A named logger set up once (MXNet's): a file handler when ``filename`` is given (mode
    ``filemode``, default 'a'), else a stream handler with the coloured format; the root logger
    (``name=None``) is returned untouched."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", None):
        logger._init_done = True  # type: ignore[attr-defined]
        if filename:
            handler: logging.Handler = logging.FileHandler(filename, filemode or "a")
        else:
            handler = logging.StreamHandler()
            handler.setFormatter(_Formatter())
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger


def getLogger(name: Optional[str] = None, filename: Optional[str] = None,
              filemode: Optional[str] = None, level: int = WARNING) -> logging.Logger:
    """Deprecated name of :func:`get_logger` (warns, as MXNet does)."""
    warnings.warn("getLogger is deprecated, Use get_logger instead.", DeprecationWarning, stacklevel=2)
    return get_logger(name, filename, filemode, level)
