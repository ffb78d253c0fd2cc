#!/usr/bin/env bash
# A generated agent project works: `a2a-local new` writes one into a temporary directory; every
# package it resolves is one the kit's Cargo.lock pinned (infra/pinned.py); it builds on the
# kit's target directory without compiling the native libraries again, its code is formatted,
# it passes its own test, serves with `cargo run` on a free port and answers the official
# Python client (a2a-sdk 1.x, tests/interop's venv) with the shouted text, its server
# issues, lists and revokes API keys, its local build has no Lambda dependency, its Lambda
# binary (the `lambda` feature) refuses to start without a role, and its template.yaml passes
# `sam validate` and cfn-lint (infra/check-template.sh's venv). Everything it made is removed
# at the end.
#
#   cargo build -p a2a-local && infra/new-agent-check.sh      (the same CARGO_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
a2a_local="$CARGO_TARGET_DIR/debug/a2a-local"
say() { echo "new-agent-check: $*" >&2; }
[[ -x "$a2a_local" ]] || { say "no $a2a_local: build it first (cargo build -p a2a-local)"; exit 1; }

work=$(mktemp -d)
name=hello-agent
project="$work/$name"
server=""
cleanup() {
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  # The project's artifacts stay in the shared target directory (the next run overwrites
  # them): `cargo clean -p` removes by target name, and both generated projects' tests are
  # named `agent`, so one check's clean deleted the other's test binary while it ran.
  rm -rf "$work"
}
trap cleanup EXIT

say "a2a-local new $project"
"$a2a_local" new "$project"
cd "$project"
# Its first resolution keeps to the lock file it was given (the kit's), the Lambda binary's
# dependencies included.
python3 "$root/infra/pinned.py" >&2

say "cargo build (on $CARGO_TARGET_DIR, shared with the kit)"
cargo build --all-targets 2>&1 | tee "$work/build.log" >&2
# What the kit compiled is reused when the project builds it the same way: the same toolchain
# (rust-toolchain.toml), the same profiles, the same features. The project's features are not
# the whole workspace's (no dev-dependency of the kit's crates, none of its other members), so
# Rust crates whose features differ are compiled again; the native libraries, the slowest part
# of a first build, must not be.
for native in aws-lc-sys libsqlite3-sys; do
  if grep -qE "^ +Compiling $native v" "$work/build.log"; then
    say "$native was compiled again instead of reused from $CARGO_TARGET_DIR"; exit 1
  fi
done
# Registry crates print `Compiling name vX.Y.Z`; path crates (the kit's, the project) add a path.
say "$(grep -cE '^ +Compiling [^ ]+ v[^ ]+$' "$work/build.log" || true) third-party crates compiled for the project's feature set"
# Its binaries alone resolve the same features as with its test: `cargo run` compiles nothing.
cargo build 2>&1 | tee "$work/build-bins.log" >&2
if grep -q Compiling "$work/build-bins.log"; then
  say "cargo build after cargo build --all-targets compiled again: dev-dependencies change features"; exit 1
fi
cargo fmt --check
# The Lambda binary's dependencies are the `lambda` feature: the local server's first build
# (`cargo run`) compiles neither the Lambda runtime nor the AWS SDK.
tree=$(cargo tree -e normal,build --prefix none --locked)
for lambda_only in lambda_runtime aws-sdk-dynamodb aws-sdk-sqs; do
  if grep -q "^$lambda_only v" <<<"$tree"; then
    say "the local server's build depends on $lambda_only: it belongs behind the lambda feature"; exit 1
  fi
done
grep -q '^lambda_runtime v' <<<"$(cargo tree -e normal --prefix none --locked --features lambda)" ||
  { say "the lambda feature does not bring the Lambda runtime"; exit 1; }

say "cargo test (the project's own test)"
cargo test

say "cargo run: the project's local server on a free port"
log="$work/server.log"
cargo run -q -- --addr 127.0.0.1:0 --data-dir "$work/data" 2>"$log" &
server=$!
base=""
for _ in $(seq 1 300); do
  base=$(grep -o 'serving on http://[0-9.:]*' "$log" | head -n1 | sed 's/serving on //' || true)
  [[ -n "$base" ]] && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; say "the project's server exited early"; exit 1; }
  sleep 0.1
done
[[ -n "$base" ]] || { cat "$log" >&2; say "the project's server did not start"; exit 1; }

say "the official Python client (a2a-sdk) sends it a message at $base"
"$root/tests/interop/run.sh" --setup
"${A2A_VENV:-$root/.venv-interop}/bin/python" - "$base" "$name" <<'PY'
import asyncio
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState


async def main(base: str, name: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = (await http.get(f"{base}/.well-known/agent-card.json")).json()
        assert card["name"] == name, card
        client = await ClientFactory(
            ClientConfig(streaming=False, httpx_client=http)
        ).create_from_url(base)
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text="hello from python")],
        )
        events = [e async for e in client.send_message(SendMessageRequest(message=message))]
        await client.close()
    assert len(events) == 1 and events[0].WhichOneof("payload") == "task", events
    task = events[0].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    texts = [p.text for a in task.artifacts for p in a.parts]
    assert texts == ["HELLO FROM PYTHON"], texts
    print(f"new-agent-check: {name} answered {texts[0]!r}", file=sys.stderr)


asyncio.run(main(sys.argv[1], sys.argv[2]))
PY
kill "$server"; wait "$server" 2>/dev/null || true; server=""

say "keys: the project's server issues, lists and revokes API keys"
keys_dir="$work/keys"
key=$(cargo run -q -- keys --data-dir "$keys_dir" issue --description check 2>/dev/null)
[[ "$key" == a2a_* ]] || { say "keys issue printed no key: $key"; exit 1; }
listed=$(cargo run -q -- keys --data-dir "$keys_dir" list)
key_id=$(cut -f1 <<<"$listed")
[[ -n "$key_id" && "$key" == "a2a_${key_id}_"* ]] || { say "keys list does not list the key issued: $listed"; exit 1; }
grep -qF "$key" "$keys_dir/api-keys.json" && { say "the key itself was stored"; exit 1; }
cargo run -q -- keys --data-dir "$keys_dir" revoke "$key_id" 2>/dev/null
grep -q REVOKED <<<"$(cargo run -q -- keys --data-dir "$keys_dir" list)" || { say "keys revoke did not revoke"; exit 1; }

say "the Lambda binary (cargo build --features lambda, as sam build's cargo lambda) refuses to start without a role (A2A_FUNCTION)"
cargo build --features lambda --bin "$name-lambda"
if out=$(env -u AWS_LAMBDA_FUNCTION_NAME A2A_FUNCTION=no-such-role \
    "$CARGO_TARGET_DIR/debug/$name-lambda" 2>&1); then
  say "$name-lambda started without a valid role"; exit 1
fi
grep -q A2A_FUNCTION <<<"$out" || { echo "$out" >&2; say "its error does not name A2A_FUNCTION"; exit 1; }

say "sam validate and cfn-lint on the project's template.yaml"
"$root/infra/check-template.sh" --setup
export AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0
"$root/.venv-sam/bin/sam" validate --template-file template.yaml
"$root/.venv-sam/bin/cfn-lint" template.yaml

say "ok"
