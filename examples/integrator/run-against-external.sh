#!/bin/sh
# The integrator's tests against a separately started `mock-server` (the CI recipe of docs/from-tests.md), in one command:
#   examples/integrator/run-against-external.sh [pytest arguments...]
# `mock-server` and `pytest` come from PATH (in this repository: .venv/bin).
set -e
cd "$(dirname "$0")"
LOG=$(mktemp)
mock-server --port 0 > "$LOG" &
MOCK_PID=$!
trap 'kill "$MOCK_PID" 2>/dev/null || true; rm -f "$LOG"' EXIT
MOCK_URL=$(mock-server wait --ready-file "$LOG" --pid "$MOCK_PID" --timeout 30)
pytest --mock-server-url "$MOCK_URL" "$@"
mock-server healthcheck "$MOCK_URL"
