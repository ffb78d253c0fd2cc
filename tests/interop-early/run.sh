#!/usr/bin/env bash
# Run the early-protocol (pre-0.2, `tasks/send`) interop suite against a running A2A server, with
# the client of PyPI python-a2a (pinned). See README.md for what it covers.
#
#   A2A_BASE_URL=http://127.0.0.1:9000 tests/interop-early/run.sh [pytest args...]
#   tests/interop-early/run.sh --setup    # only create/update the venv
#
# The venv lives at ${A2A_VENV:-<repo>/.venv-interop-early} and is created on first use.
# requirements.txt pins every package, installed with --no-deps: python-a2a declares LLM SDKs
# (openai, anthropic, boto3, langchain) as dependencies that its client never imports.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${A2A_VENV:-$repo/.venv-interop-early}"
python="${PYTHON:-python3}"

if [[ -z "${A2A_BASE_URL:-}" && "${1:-}" != "--setup" ]]; then
  echo "run.sh: set A2A_BASE_URL (e.g. A2A_BASE_URL=http://127.0.0.1:9000)" >&2
  exit 2
fi

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$here/requirements.txt"
if [[ "${1:-}" == "--setup" ]]; then exit 0; fi

cd "$here"
exec "$venv/bin/python" -m pytest -c "$here/pytest.ini" "$here" "$@"
