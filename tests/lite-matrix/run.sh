#!/usr/bin/env bash
# The A2A-Lite Matrix suite: a real Synapse homeserver (pinned, from PyPI, SQLite, on
# 127.0.0.1) pushes room events to a2a-local as an application service, and a matrix-nio client
# plays an OpenClaw-style agent in the room (tests/lite-matrix/conftest.py starts everything in a
# temporary directory and stops it).
#
#   tests/lite-matrix/run.sh [pytest args...]   # a2a-local from $A2A_LOCAL_BIN or target/debug
#   tests/lite-matrix/run.sh --setup            # only create/update the venv
#
# The venv lives at ${A2A_LITE_MATRIX_VENV:-<repo>/.venv-lite-matrix}, created on first use
# (about a minute); the suite itself takes about 20 s.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${A2A_LITE_MATRIX_VENV:-$repo/.venv-lite-matrix}"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
if [[ "${1:-}" == "--setup" ]]; then exit 0; fi

cd "$here"
exec "$venv/bin/python" -m pytest -c "$here/pytest.ini" "$here" "$@"
