#!/usr/bin/env bash
# Run the @a2a-js/sdk (JavaScript) interop suite against a running A2A server.
#
#   A2A_BASE_URL=http://127.0.0.1:9000 tests/interop-js/run.sh [node --test args...]
#
# With A2A_BEARER_TOKEN set, every client request carries it and auth.test.js runs too.
# package.json pins the official client exactly; package-lock.json pins every package and its
# integrity hash. `npm ci` installs exactly that into tests/interop-js/node_modules, from the npm
# registry, with install scripts off (the pinned packages need none, and none may fetch anything
# from outside the registry). Needs Node 20+.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -z "${A2A_BASE_URL:-}" ]]; then
  echo "run.sh: set A2A_BASE_URL (e.g. A2A_BASE_URL=http://127.0.0.1:9000)" >&2
  exit 2
fi

cd "$here"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
exec node --test --test-reporter=spec "$@" interop.test.js auth.test.js card-signature.test.js
