#!/usr/bin/env bash
# Set up a virtualenv (if needed) and run the demo: LeNet on handwritten digits, eager then
# hybridized, export + re-import, training curves in demo-output/.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${HYBRIDNET_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "torch==2.13.0" numpy tqdm scikit-learn matplotlib
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .
exec "$VENV/bin/python" examples/demo.py "$@"
