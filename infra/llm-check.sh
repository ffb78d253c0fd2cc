#!/usr/bin/env bash
# The LLM adapter (shared/adapters/llm) and a project from `a2a-local new --llm`. The adapter is
# its own workspace (rig-core turns on serde_json's `preserve_order`: docs/llm-agents.md), so the
# kit's cargo fmt, clippy and test runs do not reach it: this script does. Its formatting, clippy
# with warnings as errors, its tests (a scripted OpenAI-compatible server and a2a-local's server
# on 127.0.0.1, the embedded store); then a generated LLM project: formatted, and its own test.
# Both build on the kit's target directory (the kit's crates are compiled again for their
# feature set with rig; the native libraries are reused). The project's artifacts are removed at
# the end.
#
#   cargo build -p a2a-local && infra/llm-check.sh      (the same CARGO_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
a2a_local="$CARGO_TARGET_DIR/debug/a2a-local"
say() { echo "llm-check: $*" >&2; }
[[ -x "$a2a_local" ]] || { say "no $a2a_local: build it first (cargo build -p a2a-local)"; exit 1; }
start=$SECONDS

say "the adapter: cargo fmt --check, clippy, its tests"
(
  cd shared/adapters/llm
  cargo fmt --check
  # Not --locked: its lock file is the kit's plus rig's, and a dependency the kit's crates gain
  # on main is added to it here rather than failing the run.
  cargo clippy --all-targets -- -D warnings
  cargo test
)
say "the adapter took $((SECONDS - start)) s"

work=$(mktemp -d)
name=my-llm-agent
project="$work/$name"
cleanup() {
  if [[ -f "$project/Cargo.toml" ]]; then (cd "$project" && cargo clean -q -p "$name") || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

say "a2a-local new --llm $project: formatted, its own test"
"$a2a_local" new --llm "$project"
cd "$project"
cargo fmt --check
cargo test
say "done in $((SECONDS - start)) s"
