#!/usr/bin/env bash
# Runs every check and test of the project, from a fresh clone, with nothing installed by hand:
#   1. formatting and lints (cargo fmt; clippy with warnings as errors, as the build's compiler)
#   2. the Rust suites: unit tests per layer, the store contract on SQLite and on DynamoDB,
#      the SQS queues and the races (against moto's server, pinned, in a local venv, with AWS's
#      limits moto leaves out and a fault mode: infra/test_moto_server.py), the end-to-end
#      tests over real sockets, and a mixed workload under 5 % of AWS's faults (tests/faults.rs)
#   3. interoperability: the official Python SDK client (a2a-sdk, pinned, in a local venv) and
#      the official JS SDK client (@a2a-js/sdk, pinned, npm ci into tests/interop-js) drive
#      a2a-local over JSON-RPC and HTTP+JSON, without and with bearer tokens; then the older
#      versions on the same server: the official A2A 0.3 clients (a2a-sdk 0.3, @a2a-js/sdk
#      0.3, each pinned in its own venv or lock) and an early-protocol client (python-a2a);
#      A2A-Lite over Matrix (a real Synapse and a matrix-nio client, pinned, in a local venv);
#      the README's walkthroughs run as written, their output compared with what it shows
#   4. the Lambda deployment: sam validate + cfn-lint on template.yaml (SAM CLI, pinned, own
#      venv), and the real functions under `cargo lambda watch` against moto, end to end and
#      with the Python and JS SDK clients (and the Python 0.3 and early-protocol clients)
#   5. the LLM adapter (its own workspace) and a project from `a2a-local new --llm`: its test,
#      its template's checks, served by `cargo run` against a scripted model and driven by the
#      `a2a` command and the Python SDK client, streaming, then its Lambda binary serving its own
#      template's stack on the local cloud through both front doors (infra/llm-check.sh; after
#      the Lambda suite is done with the local cloud), beside the suites
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# What the suites need beyond cargo, checked before a run of half an hour rather than in it.
for tool in python3 node npm cc; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "infra/test-all.sh needs $tool on the PATH (README.md, Quick start: what you need)" >&2
    exit 1
  }
done
target_dir="${CARGO_TARGET_DIR:-$root/target}"
# No incremental compilation: a run from a fresh clone never reuses those caches, and they were
# 4.2 of the 10 GB a run leaves in target/ (CI once ran out of disk in the build step). Every
# cargo command below, and the checks' `cargo lambda watch` and `cargo run`, inherit it, so one
# build serves them all. A developer who wants them kept between runs sets CARGO_INCREMENTAL=1.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# Clippy lints as the build compiles: every member of the kit's workspace goes through clippy's
# driver with warnings as errors (infra/rustc-clippy.sh), what `cargo clippy --all-targets -- -D
# warnings` found, without a clippy step that checked every dependency before the build
# compiled it again (the Rust tests started at 12 min 19 s before, at 11 min 5 s with it, idle).
# Dependencies build as without it. The checks of other workspaces below start without it (a
# generated project builds as a user's cargo does); the LLM adapter's check sets it for the
# adapter's own tests, the same way.
command -v clippy-driver >/dev/null 2>&1 || {
  echo "infra/test-all.sh needs clippy (rustup component add clippy; rust-toolchain.toml lists it)" >&2
  exit 1
}
export RUSTC_WORKSPACE_WRAPPER="$root/infra/rustc-clippy.sh"

# Progress: each step says when it starts, and a ticker in the background says every minute
# which step is still running and for how long, so a long silent step (a clean build, a test
# binary that prints nothing until it ends) still shows a line at least once a minute.
progress=$(mktemp)
run_start=$(date +%s)
step() {
  printf '\n==> %s\n' "$*"
  printf '%s %s\n' "$(date +%s)" "$*" >"$progress"
}
minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
ticker() {
  local nap=""
  # Stops at once, and takes its sleep with it.
  trap '[ -n "$nap" ] && kill "$nap" 2>/dev/null; exit 0' TERM
  while :; do
    sleep 60 &
    nap=$!
    wait "$nap" || true
    local since name now
    read -r since name <"$progress" || continue
    now=$(date +%s)
    # One write of one whole line, to stderr (where cargo's own progress goes).
    printf '... still running: %s (%s in this step, %s in all)\n' "$name" \
      "$(minutes $((now - since)))" "$(minutes $((now - run_start)))" >&2
  done
}
ticker &
ticker_pid=$!

# What the later steps install (moto, the SAM CLI, the interop clients of every version,
# Synapse, cargo-lambda: pinned, into local venvs) installs in the background from the start,
# while the build compiles: mostly downloads and unpacking beside mostly compiling.
# Each script installs only what is missing; every step still calls its own set-up, then a
# no-op. Its own session, so that a failed run stops all of it (pip included).
setup_log="$progress.setup"
setsid bash -c 'set -e
  infra/moto.sh setup
  tests/interop/run.sh --setup
  infra/check-template.sh --setup
  tests/interop-v03/run.sh --setup
  tests/interop-early/run.sh --setup
  tests/lite-matrix/run.sh --setup
  infra/lambda-local.sh setup' >"$setup_log" 2>&1 </dev/null &
setup_pid=$!
# Waits for the background set-up, prints what it said, and stops the run if it failed.
setup_done() {
  [ -n "$setup_pid" ] || return 0
  local status=0
  wait "$setup_pid" || status=$?
  setup_pid=""
  cat "$setup_log"
  rm -f "$setup_log"
  [ "$status" = 0 ] || { echo "installing the test tools failed (status $status)" >&2; exit 1; }
}

stop_ticker() {
  kill "$ticker_pid" 2>/dev/null || true
  wait "$ticker_pid" 2>/dev/null || true
  if [ -n "${setup_pid:-}" ]; then
    kill -- -"$setup_pid" 2>/dev/null || true
    wait "$setup_pid" 2>/dev/null || true
  fi
  rm -f "$progress" "$progress.setup"
}
trap stop_ticker EXIT

# One feature set for the whole run: every cargo command below selects the whole workspace
# (`--workspace`), so each dependency is compiled once. Selecting fewer packages (`-p a2a-e2e`)
# resolves other features (hyper without http2, ...) and compiles hyper and everything above it
# again. No dev-dependency may add a feature either (checked after the build), so that the
# members' binaries alone, as `cargo lambda watch` builds them, resolve the same.

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo package: the kit's library crates package on their own (manifests; tests/tests/packaging.rs checks their sources)"
# Every member without `publish = false`; --no-verify: the sources are checked by a test, and a
# verifying build of every crate would compile the whole tree again.
publishable=$(cargo metadata --no-deps --format-version 1 --locked | python3 -c 'import json, sys
print(" ".join("-p " + p["name"] for p in json.load(sys.stdin)["packages"] if p.get("publish") != []))')
cargo package --no-verify --locked --allow-dirty $publishable >"$progress.package" 2>&1 ||
  { cat "$progress.package"; exit 1; }
rm -f "$progress.package"

step "build, linted: clippy compiles every member (warnings are errors); the end-to-end tests start the a2a-local binary"
cargo build --workspace --all-targets --locked
# `cargo lambda watch` runs `cargo run --bin <function>` at the workspace root: the members'
# binaries without dev-dependencies. If a dev-dependency enabled a feature of a third-party
# crate (tokio's test-util once did), that selection would compile it and everything above it
# again, minutes of a run; it must reuse this build instead. (The test crates' own features
# differ, so those two compile again: seconds.)
cargo build --workspace --bins --locked 2>&1 | tee "$progress.bins" >&2
# Registry crates print `Compiling name vX.Y.Z`; the workspace's own add their path.
if grep -qE '^ +Compiling [^ ]+ v[^ ]+$' "$progress.bins"; then
  echo "cargo build --workspace --bins compiled third-party crates again after --all-targets: a dev-dependency changes their features (cargo tree -e features -i <crate>)" >&2
  exit 1
fi
rm -f "$progress.bins"

step "the test tools (installed in the background since the start), then moto on 127.0.0.1"
setup_done
cleanup() {
  stop_ticker
  for pid in ${server:-} ${auth_server:-} ${issuer:-}; do
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  done
  # The checks run in the background, each its whole session: the new agent project's (its
  # cargo and server), the Lambda suite's (its script, its functions, moto, the router).
  if [ -n "${new_agent:-}" ]; then
    kill -- -"$new_agent" 2>/dev/null || true; wait "$new_agent" 2>/dev/null || true
  fi
  if [ -n "${llm_check:-}" ]; then
    kill -- -"$llm_check" 2>/dev/null || true; wait "$llm_check" 2>/dev/null || true
  fi
  if [ -n "${lambda_suite:-}" ]; then
    kill -- -"$lambda_suite" 2>/dev/null || true; wait "$lambda_suite" 2>/dev/null || true
    "$root/infra/lambda-local.sh" stop >/dev/null 2>&1 || true
  fi
  [ -n "${data_dir:-}" ] && rm -rf "$data_dir"
  "$root/infra/moto.sh" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
moto_env=$("$root/infra/moto.sh" env-start)   # an assignment, so a failure stops the run
eval "$moto_env"
# The emulator's own layer: AWS's limits moto leaves out and the fault mode (about 25 s).
"$root/.venv-moto/bin/python" "$root/infra/test_moto_server.py"
# Here a missing emulator fails the emulator-backed tests instead of skipping them.
export A2A_REQUIRE_EMULATOR=1
# The `a2a` command's tests also run against an agent on the Python SDK's server, in the
# interop venv: create it first, and fail those tests rather than skip them without it.
"$root/tests/interop/run.sh" --setup
export A2A_REQUIRE_INTEROP=1
# The template and IAM tests read SAM's own translation of template.yaml (the SAM CLI venv, a
# no-op once installed): fail them rather than skip them without it.
"$root/infra/check-template.sh" --setup
export A2A_REQUIRE_SAM=1

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
# Still the whole workspace's selection (the same build), running only a2a-e2e's tests.
export A2A_E2E_STORE=dynamodb
if cargo nextest --version >/dev/null 2>&1; then
  # One retry, a safety net: on two loaded cores moto once answered past the adapters' call
  # limits (an INTERNAL_ERROR in a test that passes alone; infra/moto_server.py's SQS receives
  # were why). A test that passes only on its retry is listed as FLAKY in the summary, so it is
  # seen, not hidden; moto's slow requests are in .venv-moto/moto.log.
  # The fault run (tests/faults.rs) starts a2a-local on a moto of its own, whatever the store:
  # it ran in the first pass.
  cargo nextest run --locked --no-fail-fast --retries 1 --workspace \
    -E 'package(a2a-e2e) and not binary(faults)'
else
  # Plain cargo test cannot pick one package's tests out of a workspace selection: list the
  # test executables of the workspace build and run a2a-e2e's (in its directory, as cargo does).
  cargo test --workspace --locked --no-run --message-format=json |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"] \
            and m["package_id"].split("#")[-1].startswith("a2a-e2e@") \
            and m["target"]["name"] != "faults":
        print(m["executable"])' >"$progress.e2e"
  [ -s "$progress.e2e" ] || { echo "no a2a-e2e test executables found" >&2; exit 1; }
  status=0
  while read -r exe; do (cd "$root/tests" && "$exe") || status=1; done <"$progress.e2e"
  rm -f "$progress.e2e"
  [ "$status" = 0 ]
fi
unset A2A_E2E_STORE
echo "moto answered $(grep -c 'slow request' "$root/.venv-moto/moto.log" || true) requests in over a second so far (.venv-moto/moto.log)"

step "What each operation costs on DynamoDB and SQS (see docs/cost.md)"
# The same build as above (the whole workspace), so nothing is compiled again.
cargo test --workspace --locked --test cost -- --nocapture 2>&1 | grep -E '^\|' || true

data_dir=$(mktemp -d)
# The Lambda suite (about 10 minutes: its own moto, the functions under `cargo lambda watch`, the
# router and pollers on ports 9100-9300) mostly waits on sockets, as the steps below do (the
# benchmark smoke run, the cold starts, the interop suites, the template checks, which run
# prebuilt binaries and no cargo): it runs beside them, in its own session (stopped with the
# run if that fails); its log is printed, and its status read, after them. It builds nothing
# (A2A_LAMBDA_PREBUILT: the build step did) and its functions start from their binaries
# without cargo's lock (infra/lambda-tools/prebuilt/cargo).
A2A_LAMBDA_PREBUILT=1 setsid "$root/infra/lambda-e2e.sh" >"$data_dir/lambda.log" 2>&1 </dev/null &
lambda_suite=$!
echo "Lambda functions end to end: run in the background from here; its log follows the SAM template step"
# The new agent project's check compiles the kit's crates again for the project's feature set
# (minutes of CPU, where the suites beside it mostly wait): in the background too, niced so the
# suites' servers keep the CPU they ask for; its log and status follow the Lambda suite's.
setsid nice -n 10 env -u RUSTC_WORKSPACE_WRAPPER "$root/infra/new-agent-check.sh" \
  >"$data_dir/new-agent.log" 2>&1 </dev/null &
new_agent=$!
# The LLM adapter is its own workspace (rig changes serde_json's features), outside the steps
# above: its checks, tests and a generated LLM project, compiled the same way, beside them too
# (the SAM and interop venvs it uses were set up above).
setsid nice -n 10 env -u RUSTC_WORKSPACE_WRAPPER "$root/infra/llm-check.sh" \
  >"$data_dir/llm.log" 2>&1 </dev/null &
llm_check=$!

step "Benchmark smoke run: a2a-local under wrk for a second per run (docs/performance.md)"
# Asserts only that every request succeeded and the counts add up; the figures are printed.
# The JS SDK's echo server (the comparison of README's figures) is run too, so it stays working.
A2A_BENCH_BIN="$target_dir/debug/a2a-local" "$root/infra/bench.sh" --smoke --compare-js
# Its comparison of two builds (here the same one twice), so that it keeps working.
A2A_BENCH_BIN="$target_dir/debug/a2a-local" "$root/infra/bench.sh" --smoke --against "$target_dir/debug/a2a-local"

step "Instructions per request under callgrind, a smoke run (infra/instructions.py, docs/performance.md)"
# The debug build, small counts: every request must succeed; the figures are printed, never
# asserted (the optimised build's are docs/performance.md's). The local server's requests, then
# the Lambda functions' warm send and get (a2a-cold-start's fake Runtime API, against moto).
python3 "$root/infra/instructions.py" --smoke --bin "$target_dir/debug/a2a-local" \
  --function-bin "$target_dir/debug/a2a-function" --kinds echo,get,chunk,lambda-send,lambda-get

step "Cold start: each function's init and first request, fake Runtime API + moto (docs/lambda.md)"
# A smoke run: every function must start and answer; the times are printed, never asserted.
"$target_dir/debug/a2a-cold-start" --runs 1 --warm 2 --check

step "Python SDK interoperability (a2a-sdk client against a2a-local)"
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

step "JS SDK interoperability (@a2a-js/sdk client against the same a2a-local)"
A2A_BASE_URL="$base" "$root/tests/interop-js/run.sh"

# The older versions on the same server (issue #16): their clients send no A2A-Version.
step "A2A 0.3 interoperability, Python (a2a-sdk 0.3 client against the same a2a-local)"
A2A_BASE_URL="$base" "$root/tests/interop-v03/run.sh" -q

step "A2A 0.3 interoperability, JS (@a2a-js/sdk 0.3 client against the same a2a-local)"
A2A_BASE_URL="$base" "$root/tests/interop-js-v03/run.sh"

step "Early-protocol interoperability (python-a2a client against the same a2a-local)"
A2A_BASE_URL="$base" "$root/tests/interop-early/run.sh" -q

step "A2A-Lite over Matrix: a real Synapse, a2a-local as its application service, matrix-nio"
# Its own a2a-local and homeserver on free ports, in a temporary directory (docs/a2a-lite.md).
A2A_LOCAL_BIN="$target_dir/debug/a2a-local" "$root/tests/lite-matrix/run.sh" -q

step "Python SDK interoperability again, with bearer tokens (a2a-local --auth jwt, test issuer)"
# A throwaway OpenID issuer on 127.0.0.1 (tests/src/bin/test-issuer.rs) prints its URL and a
# token for audience a2a-e2e with every a2a:* scope; a2a-local verifies against its JWKS.
issuer_out="$data_dir/issuer.out"
issuer=$("$root/infra/test-issuer.sh" "$issuer_out")
issuer_url=$(sed -n 's/^issuer=//p' "$issuer_out")
token=$(sed -n 's/^token=//p' "$issuer_out")
[ -n "$token" ] || { echo "test-issuer printed no token" >&2; exit 1; }
auth_log="$data_dir/server-auth.log"
A2A_AUTH=jwt A2A_JWT_ISSUER="$issuer_url" A2A_JWT_AUDIENCE=a2a-e2e \
  "$target_dir/debug/a2a-local" --addr 127.0.0.1:0 --data-dir "$data_dir/store-auth" 2>"$auth_log" &
auth_server=$!
auth_base=""
for _ in $(seq 1 300); do
  auth_base=$(grep -o 'serving on http://[0-9.:]*' "$auth_log" | head -n1 | sed 's/serving on //' || true)
  [ -n "$auth_base" ] && break
  kill -0 "$auth_server" 2>/dev/null || { cat "$auth_log"; echo "a2a-local --auth jwt exited early" >&2; exit 1; }
  sleep 0.1
done
[ -n "$auth_base" ] || { cat "$auth_log"; echo "a2a-local --auth jwt did not start" >&2; exit 1; }
A2A_BASE_URL="$auth_base" A2A_BEARER_TOKEN="$token" "$root/tests/interop/run.sh"

step "JS SDK interoperability again, with bearer tokens (the same a2a-local --auth jwt)"
A2A_BASE_URL="$auth_base" A2A_BEARER_TOKEN="$token" "$root/tests/interop-js/run.sh"

step "A2A 0.3 interoperability, Python, with bearer tokens (the same a2a-local --auth jwt)"
A2A_BASE_URL="$auth_base" A2A_BEARER_TOKEN="$token" "$root/tests/interop-v03/run.sh" -q
if grep -qF "$token" "$auth_log"; then
  echo "a2a-local logged the bearer token" >&2; exit 1
fi

step "The README's walkthroughs, pasted as written (quick start, curl, the a2a command, API keys)"
# Each block's commands in one shell in an empty directory, their output checked against the
# lines the README shows under them (infra/walkthrough-check.py says what it adapts: the built
# binaries for cargo run, free ports); about 10 seconds.
A2A_BIN_DIR="$target_dir/debug" "$root/infra/walkthrough-check.py"

step "SAM template: sam validate, cfn-lint, routes and streaming modes"
"$root/infra/check-template.sh"

# Waits for a check started in the background (its pid, its log, its script), prints its log,
# and stops the run if it failed.
finish_background() {
  local status=0
  wait "$1" || status=$?
  cat "$2"
  [ "$status" = 0 ] || { echo "$3 failed (status $status)" >&2; exit 1; }
}

step "Lambda functions end to end under cargo lambda watch (moto, local router, SQS poller), run beside the steps since the cost step"
finish_background "$lambda_suite" "$data_dir/lambda.log" infra/lambda-e2e.sh
lambda_suite=""

step "A new agent project (a2a-local new): build, its test, cargo run, the Python client, sam validate; run beside the steps since the cost step"
finish_background "$new_agent" "$data_dir/new-agent.log" infra/new-agent-check.sh
new_agent=""

step "The LLM adapter (its own workspace: fmt, clippy, its tests) and an a2a-local new --llm project (its test, sam validate, served and streamed to by the a2a command and the Python client, then its Lambda functions through both front doors); run beside the steps since the cost step"
finish_background "$llm_check" "$data_dir/llm.log" infra/llm-check.sh
llm_check=""
