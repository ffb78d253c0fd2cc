#!/usr/bin/env bash
# Runs every check and test of the project, from a fresh clone, with nothing installed by hand:
#   1. formatting and lints (cargo fmt, clippy with warnings as errors)
#   2. the Rust suites: unit tests per layer, the store contract on SQLite and on DynamoDB,
#      the SQS queues and the races (against moto's server, pinned, in a local venv), and the
#      end-to-end tests over real sockets
#   3. interoperability: the official Python SDK client (a2a-sdk, pinned, in a local venv)
#      drives a2a-local over JSON-RPC and HTTP+JSON
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
target_dir="${CARGO_TARGET_DIR:-$root/target}"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "build (the end-to-end tests start the a2a-local binary)"
cargo build --workspace --all-targets --locked

step "moto (DynamoDB + SQS on 127.0.0.1, for the AWS adapter tests)"
cleanup() {
  [ -n "${server:-}" ] && { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
  [ -n "${data_dir:-}" ] && rm -rf "$data_dir"
  "$root/infra/moto.sh" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
moto_env=$("$root/infra/moto.sh" env-start)   # an assignment, so a failure stops the run
eval "$moto_env"

# nextest runs test binaries in parallel processes; plain cargo test works too, only slower.
run_tests() {
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --locked --no-fail-fast "$@"
  else
    cargo test --locked --no-fail-fast "$@"
  fi
}

step "Rust tests"
run_tests --workspace

step "End-to-end tests again, with a2a-local on DynamoDB + SQS (moto)"
export A2A_E2E_STORE=dynamodb
run_tests -p a2a-e2e
unset A2A_E2E_STORE

step "What each operation costs on DynamoDB and SQS (see docs/cost.md)"
# The same build as above (the whole workspace), so nothing is compiled again.
cargo test --workspace --locked --test cost -- --nocapture 2>&1 | grep -E '^\|' || true

step "Python SDK interoperability (a2a-sdk client against a2a-local)"
data_dir=$(mktemp -d)
log="$data_dir/server.log"
"$target_dir/debug/a2a-local" --addr 127.0.0.1:0 --data-dir "$data_dir/store" 2>"$log" &
server=$!
base=""
for _ in $(seq 1 300); do
  base=$(grep -o 'serving on http://[0-9.:]*' "$log" | head -n1 | sed 's/serving on //' || true)
  [ -n "$base" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; echo "a2a-local exited early" >&2; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { cat "$log"; echo "a2a-local did not start" >&2; exit 1; }
A2A_BASE_URL="$base" "$root/tests/interop/run.sh"

