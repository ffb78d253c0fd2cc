#!/usr/bin/env bash
# Run the a2a-sdk 0.3 (Python) interop suite against a running A2A server: the official client of
# A2A 0.3, over JSON-RPC and the 0.3 REST binding (/v1), sending no A2A-Version header.
#
#   A2A_BASE_URL=http://127.0.0.1:9000 tests/interop-v03/run.sh [pytest args...]
#   tests/interop-v03/run.sh --setup    # only create/update the venv
#
# The venv lives at ${A2A_VENV:-<repo>/.venv-interop-v03} and is created on first use;
# requirements.txt pins the client (a2a-sdk==0.3.26, the newest 0.3 release).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${A2A_VENV:-$repo/.venv-interop-v03}"
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
