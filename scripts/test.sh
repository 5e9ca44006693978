#!/usr/bin/env bash
# Set up a virtualenv (if needed) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${HYBRIDNET_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "torch==2.13.0" numpy pytest pytest-xdist onnx onnxruntime mypy pillow
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .
# one torch thread per test worker: two workers share the two cores without oversubscription
export OMP_NUM_THREADS=1
exec "$VENV/bin/python" -m pytest -n 2 "$@"
