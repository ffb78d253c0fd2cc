#!/usr/bin/env bash
# The LLM adapter (shared/adapters/llm) and a project from `a2a-local new --llm`. The adapter is
# its own workspace (rig-core turns on serde_json's `preserve_order`: docs/llm-agents.md), so the
# kit's cargo fmt, clippy and test runs do not reach it: this script does. Its formatting, clippy
# with warnings as errors, its tests (a scripted OpenAI-compatible server and a2a-local's server
# on 127.0.0.1, the embedded store; tests/crash.rs kills that server's process with SIGKILL
# after a tool ran, restarts it and checks the tool ran once), its lock file current with the
# kit's crates; then a generated LLM project: every package it resolves pinned by the lock file
# it was given (infra/pinned.py), formatted, its own test, its
# template.yaml through `sam validate` and cfn-lint (infra/check-template.sh's venv), and served
# with `cargo run` (a free port, the embedded store) against tests/llm/scripted_model.py (a
# streamed OpenAI-compatible answer that waits, half-way, until the client saw its first chunk):
# the kit's `a2a` command streams a message to it and reads the task back, then the official
# Python client (a2a-sdk, tests/interop's venv) streams another (tests/llm/sdk_stream.py). Then
# the project's Lambda binary, as `sam build` builds it, serves its own template.yaml's stack
# under the local cloud (infra/lambda-local.sh: moto, cargo lambda watch, the freezer, the
# router), deployed with LlmProvider=openai and the model's key in a Secrets Manager secret
# (moto's): the a2a command streams to it through each front door, API Gateway then the
# Function URL, and the key reaches the model and no file of the local cloud. That waits for
# infra/lambda-e2e.sh, if it runs, to finish with the local cloud. Both
# build on the kit's target directory (the kit's crates are compiled again for their feature set
# with rig; the native libraries are reused). The adapter's tests build its dependencies with
# the features the project's Lambda binary asks for, so that binary reuses them: two builds of
# the tree (the tests' and Lambda's, then the local server's), not three. Everything it started
# is stopped, and the project's directory removed, at the end (its artifacts stay in the target
# directory).
#
#   cargo build --workspace && infra/llm-check.sh      (the same CARGO_TARGET_DIR: a2a-local, a2a)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
a2a_local="$CARGO_TARGET_DIR/debug/a2a-local"
a2a="$CARGO_TARGET_DIR/debug/a2a"
say() { echo "llm-check: $*" >&2; }
for bin in "$a2a_local" "$a2a"; do
  [[ -x "$bin" ]] || { say "no $bin: build it first (cargo build --workspace)"; exit 1; }
done
start=$SECONDS

say "the adapter: cargo fmt --check, clippy, its tests"
(
  cd shared/adapters/llm
  cargo fmt --check
  # Its lock file is the kit's plus rig's, and the one a generated LLM project is given: a
  # dependency the kit's crates gained must be pinned there too, not resolved anew here.
  cargo metadata --locked --format-version 1 >/dev/null || {
    say "shared/adapters/llm/Cargo.lock no longer covers the kit's crates: run cargo metadata in shared/adapters/llm, give what it added the kit's versions (cargo update -p <crate> --precise <version>) and commit the lock"
    exit 1
  }
  # Clippy lints this crate as the test build compiles it (infra/rustc-clippy.sh, as the kit's
  # build does): `cargo clippy` first checked every dependency, then the tests compiled them
  # again. With the Lambda host's dependencies (pin-lambda-host, which no code uses), every
  # dependency builds with the features of the generated project's Lambda binary, which reuses
  # them below instead of compiling the whole tree a third time.
  RUSTC_WORKSPACE_WRAPPER="$root/infra/rustc-clippy.sh" cargo test --locked --features pin-lambda-host
)
say "the adapter took $((SECONDS - start)) s"

work=$(mktemp -d)
name=my-llm-agent
project="$work/$name"
model="" server="" sender="" template="" lambda_started=""
cleanup() {
  [[ -n "$lambda_started" ]] && (cd "$root" && infra/lambda-local.sh stop) || true
  for pid in $sender $server $model $template; do
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  done
  # The project's artifacts stay in the shared target directory (the next run overwrites
  # them): `cargo clean -p` removes by target name, and both generated projects' tests are
  # named `agent`, so one check's clean deleted the other's test binary while it ran.
  rm -rf "$work"
}
trap cleanup EXIT
# Waits until the command after `$1` `$2` succeeds, while the process `$1` lives (at most `$2`
# seconds: a safety net against a hang, not a pace).
await() {
  local pid=$1 within=$2; shift 2
  for _ in $(seq 1 $((within * 10))); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

phase=$SECONDS
say "a2a-local new --llm $project: formatted, its own test; sam validate and cfn-lint on its template.yaml meanwhile"
"$a2a_local" new --llm "$project"
cd "$project"
# Its first resolution keeps to the lock file it was given (the adapter's): its Lambda binary's
# dependencies too, not the newest versions of the day.
python3 "$root/infra/pinned.py" >&2
# Installed by infra/test-all.sh before it starts this check; a no-op then.
[[ -x "$root/.venv-sam/bin/sam" ]] || "$root/infra/check-template.sh" --setup
# Half a minute of Python, beside the build rather than after it.
(
  export AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0
  "$root/.venv-sam/bin/sam" validate --template-file template.yaml
  "$root/.venv-sam/bin/cfn-lint" template.yaml
) >"$work/template.log" 2>&1 &
template=$!
cargo fmt --check
cargo test
say "the project's build and test took $((SECONDS - phase)) s"

phase=$SECONDS
say "cargo run, its model tests/llm/scripted_model.py"
python3 "$root/tests/llm/scripted_model.py" "$work/model.port" 2>"$work/model.log" &
model=$!
await "$model" 60 test -s "$work/model.port" || { cat "$work/model.log" >&2; say "the scripted model did not start"; exit 1; }
model_url="http://127.0.0.1:$(cat "$work/model.port")"
log="$work/server.log"
OPENAI_BASE_URL="$model_url/v1" OPENAI_API_KEY=none A2A_LLM_MODEL=scripted \
  cargo run -q -- --addr 127.0.0.1:0 --data-dir "$work/data" 2>"$log" &
server=$!
serving() { base=$(grep -o 'serving on http://[0-9.:]*' "$log" | head -n1 | sed 's/serving on //'); [[ -n "$base" ]]; }
card() { curl -fsS "$base/.well-known/agent-card.json" 2>/dev/null | grep -q "\"$name\""; }
base=""
# Generous: `cargo run` waits for the target directory's lock while another check's build holds
# it (infra/test-all.sh runs infra/new-agent-check.sh beside this one, on the same directory).
await "$server" 900 serving && await "$server" 60 card || { cat "$log" >&2; say "the project's server did not serve its card"; exit 1; }
expected="Hello from the scripted model."

# The kit's `a2a` command streams a message to the agent at $1 (its output files named after $2)
# and reads the task back: the model's answer in more than one chunk, the first while the model
# held the rest (it is released once the command saw that chunk), COMPLETED, with its usage.
stream_and_read() {
  local base=$1 out="$work/a2a-$2" task_id
  say "the a2a command streams a message to $base and reads the task back"
  "$a2a" --json send --stream "$base" "hello from the a2a command" >"$out.out" 2>"$out.err" &
  sender=$!
  # The model holds the rest of its answer until the first chunk reached the command.
  if ! await "$sender" 60 grep -q artifactUpdate "$out.out"; then
    cat "$out.out" "$out.err" >&2; say "the a2a command saw no chunk before the model finished"; return 1
  fi
  curl -fsS -X POST "$model_url/release" >/dev/null
  wait "$sender" || { cat "$out.out" "$out.err" >&2; say "a2a send failed"; return 1; }
  sender=""
  task_id=$(python3 - "$out.out" "$expected" <<'PY'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
states = [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]
text = lambda a: "".join(p.get("text", "") for p in a["artifact"]["parts"])
assert states and states[-1] == "TASK_STATE_COMPLETED", states
assert len(chunks) > 1 and text(chunks[-1]) == sys.argv[2], [text(c) for c in chunks]
# The first chunk came while the model held the rest of its answer.
assert sys.argv[2].startswith(text(chunks[0])) and text(chunks[0]) != sys.argv[2], chunks[0]
print(chunks[-1]["taskId"])
PY
  ) || { cat "$out.out" >&2; say "the a2a command's stream is not the model's answer, COMPLETED"; return 1; }
  "$a2a" --json get "$base" "$task_id" >"$out.task.json"
  python3 - "$out.task.json" "$expected" <<'PY' || { cat "$out.task.json" >&2; say "a2a get: not the answer, COMPLETED, with its usage"; return 1; }
import json, sys
task = json.load(open(sys.argv[1]))
assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
answer = "".join(p.get("text", "") for a in task["artifacts"] for p in a["parts"])
assert answer == sys.argv[2], answer
usage = task["metadata"]["tokenUsage"]
assert usage == {"inputTokens": 12, "outputTokens": 6, "totalTokens": 18, "modelCalls": 1}, usage
PY
}

stream_and_read "$base" local
say "the official Python client (a2a-sdk) streams a message to $base"
# Installed by infra/test-all.sh before it starts this check; a no-op then.
venv="${A2A_VENV:-$root/.venv-interop}"
[[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import a2a.client' 2>/dev/null ||
  "$root/tests/interop/run.sh" --setup
"$venv/bin/python" "$root/tests/llm/sdk_stream.py" "$base" "$model_url" "$expected"
requests=$(curl -fsS "$model_url/requests" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[[ "$requests" == 2 ]] || { say "the model was called $requests times for two messages"; exit 1; }
say "the served project took $((SECONDS - phase)) s"
wait "$template" || { cat "$work/template.log" >&2; say "the project's template.yaml failed sam validate or cfn-lint"; exit 1; }
template=""
say "$(head -n1 "$work/template.log"); cfn-lint found nothing"
kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true
server=""

phase=$SECONDS
say "the project's Lambda binary (cargo build --features lambda, as sam build's cargo lambda)"
cargo build --features lambda --bin "$name-lambda" 2>"$work/lambda-build.log" ||
  { cat "$work/lambda-build.log" >&2; say "the project's Lambda binary did not build"; exit 1; }
# Registry crates print `Compiling name vX.Y.Z`; the adapter's tests built the others already.
say "its build took $((SECONDS - phase)) s, $(grep -cE '^ +Compiling [^ ]+ v[^ ]+$' "$work/lambda-build.log" || true) third-party crates compiled"
cd "$root"
# One local cloud at a time: infra/test-all.sh runs the kit's Lambda suite beside this check.
mkdir -p .venv-lambda
exec 9>.venv-lambda/session.lock
say "waiting for the local cloud (infra/lambda-e2e.sh holds it while it runs)"
flock 9
phase=$SECONDS
say "the project's stack under cargo lambda watch (infra/lambda-local.sh), its model on Bedrock by default"
lambda_started=1
lambda_env=$(A2A_LAMBDA_TEMPLATE="$project/template.yaml" A2A_LAMBDA_BINARY="$CARGO_TARGET_DIR/debug/$name-lambda" \
  A2A_LAMBDA_PREBUILT=1 infra/lambda-local.sh start)
eval "$lambda_env"
# The model's key in a Secrets Manager secret (moto's), as the template asks for it on AWS.
key="sk-llm-check-$RANDOM$RANDOM"
arn=$(KEY="$key" .venv-moto/bin/python - <<'PY'
import os
import boto3
client = boto3.client("secretsmanager", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
print(client.create_secret(Name="my-llm-agent-model-key", SecretString=os.environ["KEY"])["ARN"])
PY
)
say "the stack deployed with LlmProvider=openai and the key's secret, the scripted model as its endpoint"
# OPENAI_BASE_URL is a local override: the template's OpenAiBaseUrl takes https only.
printf 'LlmProvider=openai\nLlmModel=scripted\nOpenAiApiKeySecretArn=%s\nOPENAI_BASE_URL=%s/v1\n' \
  "$arn" "$model_url" >"$work/settings.env"
infra/lambda-local.sh restart-watch "$work/settings.env"
stream_and_read "$A2A_BASE_URL" lambda-api-gateway
infra/lambda-local.sh front-door FunctionUrl
stream_and_read "$A2A_BASE_URL" lambda-function-url
python3 - "$model_url" "$key" <<'PY' || { say "the functions' model calls are not two, each with the secret's key"; exit 1; }
import json, sys, urllib.request
keys = json.load(urllib.request.urlopen(sys.argv[1] + "/keys"))
# Two before (cargo run, OPENAI_API_KEY=none), then one a door.
assert len(keys) == 4 and keys[2:] == [sys.argv[2]] * 2, [k and k[:12] for k in keys]
PY
if grep -rqF "$key" .venv-lambda/run/; then
  say "the model's key is in a log or file of the local cloud:"; grep -rlF "$key" .venv-lambda/run/ >&2; exit 1
fi
say "the Lambda functions took $((SECONDS - phase)) s"
say "done in $((SECONDS - start)) s"
