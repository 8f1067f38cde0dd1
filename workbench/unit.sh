#!/bin/bash
# The workbench's own unit tests (TAP parser, splat scanner, export).
. "$(dirname "$0")/lib.sh"
"$TOP/workbench/deps.sh"
exec "$VENV/bin/python" -m pytest -q "$TOP/tests" "$@"
