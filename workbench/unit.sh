#!/bin/bash
# The workbench's own unit tests (tests/, pytest).
. "$(dirname "$0")/lib.sh"
"$TOP/workbench/deps.sh"
exec "$VENV/bin/python" -m pytest -q "$TOP/tests" "$@"
