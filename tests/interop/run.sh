#!/usr/bin/env bash
# Run the a2a-sdk (Python) interop suite against a running A2A server.
#
#   A2A_BASE_URL=http://127.0.0.1:9000 tests/interop/run.sh [pytest args...]
#   tests/interop/run.sh --setup    # only create/update the venv (the `a2a` command's tests
#                                   # run tests/interop/sdk_server.py in it)
#
# The venv lives at ${A2A_VENV:-<repo>/.venv-interop} and is created on first
# use; requirements.txt pins the official client (a2a-sdk==1.3.0).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${A2A_VENV:-$repo/.venv-interop}"
python="${PYTHON:-python3}"

if [[ -z "${A2A_BASE_URL:-}" && "${1:-}" != "--setup" ]]; then
  echo "run.sh: set A2A_BASE_URL (e.g. A2A_BASE_URL=http://127.0.0.1:9000)" >&2
  exit 2
fi

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
if [[ "${1:-}" == "--setup" ]]; then exit 0; fi

cd "$here"
exec "$venv/bin/python" -m pytest -c "$here/pytest.ini" "$here" "$@"
