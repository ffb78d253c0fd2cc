#!/usr/bin/env bash
# Starts the throwaway OpenID issuer of the tests (tests/src/bin/test-issuer.rs, built by
# `cargo build --workspace`) in the background, its lines (issuer=, other_token=, read_token=,
# token=) going to OUT; waits until it has printed its token and prints its pid.
#
#   issuer_pid=$(infra/test-issuer.sh OUT)      # an assignment, so a failure stops set -e scripts
set -euo pipefail
out=${1:?usage: infra/test-issuer.sh OUT}
bin="${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/.." && pwd)/target}/debug/test-issuer"
"$bin" >"$out" &
pid=$!
for _ in $(seq 1 300); do
  if grep -q '^token=' "$out"; then echo "$pid"; exit 0; fi
  kill -0 "$pid" 2>/dev/null || { echo "test-issuer exited early" >&2; exit 1; }
  sleep 0.1
done
kill "$pid" 2>/dev/null || true
echo "test-issuer printed no token within 30 s" >&2
exit 1
