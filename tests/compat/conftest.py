"""Helpers for the compat tests: most run a fresh interpreter, because turning the ``mxnet`` alias
on is process-wide and the rest of the suite must not see it."""
import os
import subprocess
import sys
import textwrap
from typing import List, Optional

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child_env(extra_path: Optional[List[str]] = None, **env: str) -> dict:
    """The environment for a child python that imports this checkout's hybridnet first."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join((extra_path or []) + [REPO] + (
        [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    out.setdefault("OMP_NUM_THREADS", "1")
    out.update(env)
    return out


@pytest.fixture
def run_python(tmp_path):
    """``run_python(args, code=None, cwd=tmp_path, extra_path=None, **env)`` -> CompletedProcess.

    ``args`` follow the interpreter (``["-m", "hybridnet", "prog.py"]``); ``code`` is run with
    ``-c`` after dedenting when given instead.
    """
    def run(args=(), code=None, cwd=None, extra_path=None, timeout=300, **env):
        argv = [sys.executable] + (["-c", textwrap.dedent(code)] if code is not None else []) \
            + list(args)
        return subprocess.run(argv, cwd=str(cwd or tmp_path), env=child_env(extra_path, **env),
                              capture_output=True, text=True, timeout=timeout)
    return run
