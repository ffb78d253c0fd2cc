#!/usr/bin/env bash
# Run the @a2a-js/sdk 0.3 (JavaScript) interop suite against a running A2A server: the official JS
# client of A2A 0.3, over JSON-RPC and the 0.3 REST binding (/v1), sending no A2A-Version header.
#
#   A2A_BASE_URL=http://127.0.0.1:9000 tests/interop-js-v03/run.sh [node --test args...]
#
# package.json pins the client exactly (the newest 0.3.x); package-lock.json pins every package
# and its integrity hash. `npm ci` installs exactly that into tests/interop-js-v03/node_modules,
# from the npm registry, with install scripts off. Needs Node 20+.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -z "${A2A_BASE_URL:-}" ]]; then
  echo "run.sh: set A2A_BASE_URL (e.g. A2A_BASE_URL=http://127.0.0.1:9000)" >&2
  exit 2
fi

cd "$here"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
exec node --test --test-reporter=spec "$@" interop.test.js
