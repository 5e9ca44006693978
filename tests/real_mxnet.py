"""Where a Python with real MXNet 1.9.1 is, for the tests that compare with it (never a
dependency): $HYBRIDNET_MXNET_PYTHON, else the side virtualenvs /tmp/mxvenv or /work/mxvenv
(set up with: python3 -m venv mxvenv && mxvenv/bin/pip install mxnet==1.9.1 "numpy<1.24").
Tests needing it skip cleanly when ``MXNET_PYTHON`` is None."""
import os
import subprocess
from typing import Optional

_CANDIDATES = (os.environ.get("HYBRIDNET_MXNET_PYTHON"), "/tmp/mxvenv/bin/python", "/work/mxvenv/bin/python")


def _find() -> Optional[str]:
    """The first candidate interpreter that imports MXNet 1.9.1 (each asked once)."""
    for python in _CANDIDATES:
        if not python or not os.path.exists(python):
            continue
        try:
            out = subprocess.run([python, "-c", "import mxnet; print(mxnet.__version__)"],
                                 capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip().splitlines()[-1:] == ["1.9.1"]:
            return python
    return None


MXNET_PYTHON = _find()
SKIP_REASON = "real MXNet 1.9.1 not available (set HYBRIDNET_MXNET_PYTHON)"
