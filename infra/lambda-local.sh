#!/usr/bin/env bash
# Runs the Lambda functions locally, as deployed but on 127.0.0.1:
#   moto (DynamoDB + SQS)  ←  functions under `cargo lambda watch`  ←  a2a-lambda-freezer (stops a
#   function's process between its invocations, as Lambda freezes it)  ←  a2a-lambda-router (the
#   front door, from shared/hosts/lambda/routes.json),  a2a-sqs-poller (the SQS event source mappings)  and
#   a2a-stream-poller (the fan-out function's DynamoDB stream event source).
#
#   infra/lambda-local.sh setup   only install cargo-lambda (pinned, into .venv-lambda), moto
#                                 (infra/moto.sh's .venv-moto) and the SAM CLI
#                                 (infra/check-template.sh --setup's .venv-sam)
#   infra/lambda-local.sh start   install (as setup), build, start everything in
#                                 the background, start every function (one request each, so
#                                 no test pays a function's start); prints
#                                 A2A_BASE_URL=http://127.0.0.1:PORT
#   infra/lambda-local.sh stop    stop what `start` started (moto too)
#   infra/lambda-local.sh env     print the export lines of a running setup
#   infra/lambda-local.sh front-door ApiGateway|FunctionUrl
#                                 the stack as deployed with that FrontDoor: its functions'
#                                 environments, and the router sending each route to its
#                                 function (ApiGateway, the default; also A2A_FRONT_DOOR at
#                                 `start`), or every request to the one front function, as its
#                                 Function URL would (FunctionUrl); restarts the router and
#                                 `cargo lambda watch`
#   infra/lambda-local.sh restart-watch [SETTINGS_FILE|-]
#                                 replace the function processes, as Lambda replaces an
#                                 execution environment that died: restarts only `cargo lambda
#                                 watch` (same port; moto, the pollers and the router keep
#                                 running) and waits until every function serves again. Needed
#                                 after a function process was killed: watch 1.9.2 never starts
#                                 a function again once its process is gone. Without an
#                                 argument the functions keep their environments; with
#                                 SETTINGS_FILE they get those of the stack deployed with its
#                                 settings (`Name=Value` a line: template parameters such as
#                                 AuthMode=jwt, the A2A-Lite channels' local A2A_LITE_*, and
#                                 any other variable as a local override given to every
#                                 function: infra/lambda-e2e.sh does this); `-` goes back to
#                                 the defaults.
#
# A generated project's stack (`a2a-local new`, infra/llm-check.sh): A2A_LAMBDA_TEMPLATE=its
# template.yaml and A2A_LAMBDA_BINARY=its Lambda binary (built by the caller) at `start` run
# that binary for every function (each its role from its A2A_FUNCTION), with the environments
# that template gives them, until `stop`.
#
# Each function's environment is the one template.yaml gives it (SAM's translation, resolved
# with the default parameters but AuthMode none, the FrontDoor in use and a SETTINGS_FILE's),
# with only the endpoints swapped for local ones and the local allowances a2a-lambda-setup
# lists (its "overrides": loopback push and agent targets, the work visibility):
# infra/sam-translate.py --local-env writes .venv-lambda/run/env/<function>.env, and `cargo
# lambda watch` gives each function its own file (functions/Cargo.toml's
# [package.metadata.lambda.bin.<function>.watch]) beside the --env-file every function gets
# (runtime.env: what Lambda's runtime sets, and moto's endpoint). Nothing of the caller's
# shell's A2A_* reaches a function.
#
# Work jobs: the worker's A2A_WORK_VISIBILITY_SECS (900 deployed) is 20 here (set
# A2A_WORK_VISIBILITY_SECS before `start` to change it): the visibility the poller receives
# with, the worker's heartbeat (every third of it) and its lease. A job whose worker died comes
# back within that time.
#
# Ports: A2A_ROUTER_PORT (default 9100) for the router, A2A_WATCH_PORT (default 9200) for
# cargo lambda watch, A2A_MOTO_PORT for moto (default: a free port). This script runs its own moto
# (infra/moto_server.py, the same pinned moto as infra/moto.sh) rather than the instance of
# infra/moto.sh, which the adapter tests reset and stop while they run. State (pids, logs, env file, signing keys) lives in .venv-lambda/run/ (git-ignored).
set -euo pipefail
# Descriptor 9 is the session lock its callers hold (infra/lambda-e2e.sh, infra/llm-check.sh):
# the processes started here outlive this script and must not keep that lock.
exec 9>&-
cd "$(dirname "$0")/.."
ROOT=$(pwd)

STATE=.venv-lambda/run
VENV=.venv-lambda
ROUTER_PORT=${A2A_ROUTER_PORT:-9100}
# Behind the front door FunctionUrl, the relay function has a Function URL of its own: a second
# router plays it (A2A_RELAY_ROUTER_PORT, default 9101), sending every request to that function.
RELAY_PORT=${A2A_RELAY_ROUTER_PORT:-9101}
RELAY=http://127.0.0.1:$RELAY_PORT
WATCH_PORT=${A2A_WATCH_PORT:-9200}
PREFIX=${A2A_LAMBDA_PREFIX:-a2a-lambda-local}
BASE=http://127.0.0.1:$ROUTER_PORT
# The path every URL starts with while a base path is tried (infra/lambda-e2e.sh): the router's
# stage (A2A_ROUTER_STAGE) or the front function's A2A_BASE_PATH; the waits for the card use it.
PATH_PREFIX=${A2A_E2E_PATH_PREFIX:-}
# Every caller reaches the functions through the freezer (a2a-lambda-freezer, on
# A2A_FREEZER_PORT, default 9300), which stops a function's process between its invocations as
# Lambda does; cargo lambda watch itself listens on WATCH_PORT.
FREEZER_PORT=${A2A_FREEZER_PORT:-9300}
WATCH=http://127.0.0.1:$FREEZER_PORT
MOTO_PORT=${A2A_MOTO_PORT:-}
WORK_VISIBILITY_SECS=${A2A_WORK_VISIBILITY_SECS:-20}
FRONT_DOOR=${A2A_FRONT_DOOR:-ApiGateway}

say() { printf 'lambda-local.sh: %s\n' "$*" >&2; }

install() {
  # moto from infra/moto.sh's venv (the same pin); cargo-lambda in this script's own.
  infra/moto.sh setup
  infra/check-template.sh --setup
  if [ -x "$VENV/bin/cargo-lambda" ] && "$VENV/bin/cargo-lambda" lambda --version 2>/dev/null | grep -q 1.9.2; then
    return
  fi
  say "installing cargo-lambda==1.9.2 and ziglang==0.17.1 into $VENV (about a minute, once)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check cargo-lambda==1.9.2 ziglang==0.17.1 >&2
}

alive() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

stop_one() {
  if alive "$1"; then
    # Each was started as its own process group leader (setsid): stop the group.
    kill -- "-$(cat "$STATE/$1.pid")" 2>/dev/null || kill "$(cat "$STATE/$1.pid")" 2>/dev/null || true
  fi
  rm -f "$STATE/$1.pid"
}

# The processes `cargo lambda watch` started (the functions): its children.
watch_children() { pgrep -P "$(cat "$STATE/watch.pid")" 2>/dev/null || true; }

# Writes each function's environment ($STATE/env/<function>.env) for the stack deployed with
# the parameters of $STATE/params and the settings of $STATE/settings.env (if any), and prints
# the functions that stack has.
write_env() {
  local extra=()
  [ -f "$STATE/settings.env" ] && extra=(--local-extra "$STATE/settings.env")
  # shellcheck disable=SC2046
  .venv-sam/bin/python infra/sam-translate.py --template "$(cat "$STATE/template" 2>/dev/null || echo template.yaml)" --local-env "$STATE/env" --local "$STATE/local.json" \
    "${extra[@]}" $(cat "$STATE/params")
}

# Starts `cargo lambda watch` on $WATCH_PORT, appending to watch.log: every function gets
# runtime.env, and its own env file ($STATE/env/<function>.env, through functions/Cargo.toml).
# The `cargo` watch calls is infra/lambda-tools/prebuilt/cargo: `cargo run --bin <function>`
# runs the binary `start` built, without cargo's build lock.
start_watch() {
  # A function's environment is its env files' only: none of the caller's A2A_* (an
  # A2A_FUNCTION would give every function the same role, an A2A_TABLE a variable the template
  # does not give it), nor the AWS_* this script exported for its own calls.
  local unset=() name
  for name in $(compgen -e | grep -E '^(A2A_|AWS_)'); do unset+=(-u "$name"); done
  # But the binary of a generated project's stack: read by infra/lambda-tools/prebuilt/cargo,
  # which unsets it before the function starts.
  PATH="$ROOT/infra/lambda-tools/prebuilt:$ROOT/$VENV/bin:$PATH" setsid env "${unset[@]}" \
    A2A_LAMBDA_BINARY="$(cat "$STATE/binary" 2>/dev/null)" "$VENV/bin/cargo-lambda" lambda watch -A 127.0.0.1 -P "$WATCH_PORT" \
    --ignore-changes --env-file "$STATE/runtime.env" >>"$STATE/watch.log" 2>&1 &
  echo $! >"$STATE/watch.pid"
}

# Stops `cargo lambda watch` and waits until it and the function processes it started are
# gone (it stops them itself on SIGTERM; any left after 5 s get SIGKILL), so that none of them
# is left to poll the runtime API of the next watch on the same port.
stop_watch() {
  alive watch || { rm -f "$STATE/watch.pid"; return 0; }
  local pid children
  pid=$(cat "$STATE/watch.pid")
  children=$(watch_children)
  # A function the freezer stopped would not see watch's SIGTERM until it went on.
  for p in $children; do kill -CONT "$p" $(pgrep -P "$p" 2>/dev/null) 2>/dev/null || true; done
  stop_one watch
  for _ in $(seq 1 50); do
    local left=""
    for p in $pid $children; do
      if kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" != Z ]; then
        left="$left $p"
      fi
    done
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  say "still running after 5 s, killing:$left"
  for p in $left; do kill -KILL "$p" 2>/dev/null || true; done
}

wait_for() { # url seconds
  for _ in $(seq 1 "$(($2 * 10))"); do
    if curl -fsS -o /dev/null "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

# Starts every function, one cheap request each, one after the other: watch starts a function
# (`cargo run` of its binary, the prebuilt binary itself through infra/lambda-tools/prebuilt)
# on its first request, and no test should pay that start, or time out on it.
# Any HTTP answer will do (an HTTP function answers a path it does not serve with 404, or
# 401 with auth on); the queue functions get an empty SQS batch through the Invoke API.
warm_functions() {
  local f failed="" http
  # Behind a Function URL only the front and relay functions serve HTTP.
  if [ "$(cat "$STATE/front-door" 2>/dev/null)" = FunctionUrl ]; then
    http=$(python3 -c 'import json; r=json.load(open("shared/hosts/lambda/routes.json")); print(r["frontFunction"]["name"], r["relayFunction"]["name"])')
  else
    http=$(python3 -c 'import json; print(" ".join(json.load(open("shared/hosts/lambda/routes.json"))["functions"]))')
  fi
  for f in $http; do
    # A function the stack does not deploy (the channel function without LiteChannels).
    [ -f "$STATE/env/$f.env" ] || continue
    curl -sS -o /dev/null --max-time 300 "$WATCH/lambda-url/$f/.well-known/agent-card.json" ||
      failed="$failed $f"
  done
  for f in $(python3 -c 'import json; r=json.load(open("shared/hosts/lambda/routes.json")); print(" ".join(list(r["queueFunctions"]) + list(r["streamFunctions"])))'); do
    curl -fsS -o /dev/null --max-time 300 -X POST -H 'Content-Type: application/json' \
      -d '{"Records": []}' "$WATCH/2015-03-31/functions/$f/invocations" || failed="$failed $f"
  done
  if [ -n "$failed" ]; then
    say "functions that did not answer their first request:$failed; see $STATE/watch.log"
    return 1
  fi
}

print_env() {
  echo "export A2A_BASE_URL=$BASE"
  echo "export A2A_WATCH_URL=$WATCH"
  echo "export A2A_RELAY_URL=$RELAY"
  grep -E '^(AWS_|A2A_(TABLE|WORK_QUEUE_URL|PUSH_QUEUE_URL))' "$STATE/lambda.env" | sed 's/^/export /'
}

start() {
  local bin="${CARGO_TARGET_DIR:-target}/debug"
  mkdir -p "$STATE"
  install
  # The workspace as infra/test-all.sh builds it (a no-op after it), then what watch's
  # `cargo run --bin <function>` at the workspace root resolves: every member's binaries, no
  # dev-dependencies. The two resolve the same features (no dev-dependency adds one; test-all
  # checks it). Watch's `cargo run` then runs these binaries as they are
  # (infra/lambda-tools/prebuilt/cargo): no function compiles, or waits on cargo's lock, when
  # it starts. A2A_LAMBDA_PREBUILT=1 skips the build (infra/test-all.sh built it all, and its
  # other builds must not make this one wait).
  if [ "${A2A_LAMBDA_PREBUILT:-}" != 1 ]; then
    say "building the functions and local tools (minutes from an empty target directory; cargo's progress follows)"
    cargo build --workspace --all-targets >&2
    cargo build --workspace --bins >&2
  fi
  if alive watch; then say "already running"; print_env; return; fi
  if ! alive moto; then
    [ -n "$MOTO_PORT" ] || MOTO_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo "$MOTO_PORT" >"$STATE/moto.port"
    setsid .venv-moto/bin/python infra/moto_server.py -H 127.0.0.1 -p "$MOTO_PORT" >"$STATE/moto.log" 2>&1 </dev/null &
    echo $! >"$STATE/moto.pid"
  fi
  MOTO=http://127.0.0.1:$(cat "$STATE/moto.port")
  wait_for "$MOTO/moto-api/data.json" 30 || { say "moto did not start; see $STATE/moto.log"; exit 1; }
  export AWS_ENDPOINT_URL=$MOTO AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
  local urls
  urls=$("$bin"/a2a-lambda-setup --prefix "$PREFIX" --env-file "$STATE/lambda.env" \
    --runtime-env-file "$STATE/runtime.env" --local-file "$STATE/local.json" \
    --public-base-url "$BASE" --relay-url "$RELAY" --keys-file "$ROOT/$STATE/push-signing-keys.json" \
    --work-visibility-secs "$WORK_VISIBILITY_SECS")
  # The stack as the suites deploy it: the template's defaults, but no auth (the suites with
  # auth restart the functions with AuthMode jwt), and the front door asked for.
  printf 'AuthMode=none\nFrontDoor=%s\n' "$FRONT_DOOR" >"$STATE/params"
  printf '%s\n' "${A2A_LAMBDA_TEMPLATE:-template.yaml}" >"$STATE/template"
  printf '%s\n' "${A2A_LAMBDA_BINARY:-}" >"$STATE/binary"
  rm -f "$STATE/settings.env"
  write_env >/dev/null
  local work_url push_url
  work_url=$(printf '%s\n' "$urls" | sed -n 's/^WORK_QUEUE_URL=//p')
  push_url=$(printf '%s\n' "$urls" | sed -n 's/^PUSH_QUEUE_URL=//p')

  say "starting cargo lambda watch on 127.0.0.1:$WATCH_PORT, behind the freezer on $WATCH"
  : >"$STATE/watch.log"
  start_watch
  setsid "$bin"/a2a-lambda-freezer --addr "127.0.0.1:$FREEZER_PORT" \
    --watch "http://127.0.0.1:$WATCH_PORT" --watch-pid-file "$STATE/watch.pid" --env-dir "$STATE/env" \
    >"$STATE/freezer.log" 2>&1 &
  echo $! >"$STATE/freezer.pid"
  set -a; . "$STATE/lambda.env"; set +a
  setsid "$bin"/a2a-sqs-poller --watch "$WATCH" --visibility-secs "$A2A_WORK_VISIBILITY_SECS" \
    --invoke-timeout-secs 120 --queue "$work_url=worker" >"$STATE/poller-work.log" 2>&1 &
  echo $! >"$STATE/poller-work.pid"
  # One push job per invocation, as the template's BatchSize: the attempt number is the
  # receive count (docs/push.md).
  setsid "$bin"/a2a-sqs-poller --watch "$WATCH" --invoke-timeout-secs 60 --batch-size 1 --wait-secs 1 \
    --queue "$push_url=push" \
    >"$STATE/poller-push.log" 2>&1 &
  echo $! >"$STATE/poller-push.pid"
  # The fan-out function's event source: the table's stream, filtered as the template does.
  setsid "$bin"/a2a-stream-poller --watch "$WATCH" --table "$A2A_TABLE" \
    >"$STATE/poller-stream.log" 2>&1 &
  echo $! >"$STATE/poller-stream.pid"
  : >"$STATE/router.log"
  : >"$STATE/router-relay.log"
  start_router "$FRONT_DOOR"
  # The first request starts the card function (cargo run): give it time.
  if ! wait_for "$BASE$PATH_PREFIX/.well-known/agent-card.json" 120; then
    say "the card function did not answer; see $STATE/watch.log"
    exit 1
  fi
  say "starting every function (one request each)"
  warm_functions || exit 1
  say "ready: agent card at $BASE/.well-known/agent-card.json"
  print_env
}

# Starts the router as the front door $1 (ApiGateway or FunctionUrl), appending to router.log.
start_router() {
  local bin="${CARGO_TARGET_DIR:-target}/debug" mode
  case "$1" in
    ApiGateway) mode=api-gateway ;;
    FunctionUrl) mode=function-url ;;
    *) say "unknown front door $1 (ApiGateway or FunctionUrl)"; exit 2 ;;
  esac
  echo "$1" >"$STATE/front-door"
  setsid "$bin"/a2a-lambda-router --addr "127.0.0.1:$ROUTER_PORT" --watch "$WATCH" \
    --routes shared/hosts/lambda/routes.json --front-door "$mode" >>"$STATE/router.log" 2>&1 &
  echo $! >"$STATE/router.pid"
  if [ "$1" = FunctionUrl ]; then
    setsid "$bin"/a2a-lambda-router --addr "127.0.0.1:$RELAY_PORT" --watch "$WATCH" \
      --routes shared/hosts/lambda/routes.json --front-door function-url --function relay \
      >>"$STATE/router-relay.log" 2>&1 &
    echo $! >"$STATE/router-relay.pid"
  fi
}

front_door() {
  if ! alive watch; then say "not running: use infra/lambda-local.sh start"; exit 1; fi
  case "$1" in ApiGateway | FunctionUrl) ;; *) say "unknown front door $1 (ApiGateway or FunctionUrl)"; exit 2 ;; esac
  # The functions of the stack with that front door, with their environments.
  sed -i "s/^FrontDoor=.*/FrontDoor=$1/" "$STATE/params"
  write_env >/dev/null
  stop_one router
  stop_one router-relay
  for _ in $(seq 1 50); do
    curl -s -o /dev/null "$BASE/" 2>/dev/null || break
    sleep 0.1
  done
  stop_watch
  echo "---- lambda-local.sh front-door $1 $(date -u +%FT%TZ)" >>"$STATE/watch.log"
  start_watch
  start_router "$1"
  if ! wait_for "$BASE$PATH_PREFIX/.well-known/agent-card.json" 120; then
    say "the router did not answer as front door $1; see $STATE/router.log"
    exit 1
  fi
  warm_functions || exit 1
  say "front door $1: serving at $BASE"
}

stop() {
  for p in router router-relay poller-work poller-push poller-stream; do stop_one "$p"; done
  stop_watch
  stop_one freezer
  stop_one moto
}

restart_watch() {
  if ! alive router || [ ! -f "$STATE/lambda.env" ]; then
    say "not running: use infra/lambda-local.sh start"
    exit 1
  fi
  say "restarting cargo lambda watch on $WATCH (moto, the pollers and the router keep running)"
  case "${1:-}" in
    "") ;;
    -) rm -f "$STATE/settings.env"; write_env >/dev/null ;;
    *) cp "$1" "$STATE/settings.env.new" && mv "$STATE/settings.env.new" "$STATE/settings.env"; write_env >/dev/null ;;
  esac
  stop_watch
  echo "---- lambda-local.sh restart-watch ${1:-} $(date -u +%FT%TZ)" >>"$STATE/watch.log"
  start_watch
  # Through the router, as in start: watch listens again and the card function starts.
  if ! wait_for "$BASE$PATH_PREFIX/.well-known/agent-card.json" 120; then
    say "cargo lambda watch did not come back; see $STATE/watch.log"
    exit 1
  fi
  warm_functions || exit 1
  say "cargo lambda watch is serving again, every function started"
}

case "${1:-start}" in
  start) start ;;
  setup) install ;;
  stop) stop ;;
  env) print_env ;;
  restart-watch) restart_watch "${2:-}" ;;
  front-door) front_door "${2:?ApiGateway or FunctionUrl}" ;;
  *) say "usage: infra/lambda-local.sh [start|setup|stop|env|restart-watch|front-door]"; exit 2 ;;
esac
