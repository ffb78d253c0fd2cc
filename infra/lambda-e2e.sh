#!/usr/bin/env bash
# The Lambda functions end to end, as CI runs them: starts moto + `cargo lambda watch` + the
# SQS poller + the local router (infra/lambda-local.sh), runs infra/lambda-e2e.py (every check,
# "worker dies mid-run" included: it kills the worker process and replaces it with
# `infra/lambda-local.sh restart-watch`; and a delegated task that waits a minute for a slow
# remote agent, with the worker killed mid-wait, counting every function's invocations and
# billed milliseconds meanwhile) and the Python and JS SDK interop suites (tests/interop,
# tests/interop-js) through the router, then the older versions' clients (the 0.3 suites,
# tests/interop-v03 and tests/interop-js-v03, and the python-a2a early-protocol suite,
# tests/interop-early; about 30 s together), and stops everything.
# Then the front door FunctionUrl (the router sends every request to the one front function):
# infra/lambda-e2e.py and the 1.0 Python and JS interop suites again (not the older versions:
# the front function mounts the same a2a_http router, and CI time matters).
# Then a base path (/a2a) through both front doors: API Gateway's stage, the Function URL's
# BasePath (infra/lambda-e2e.py's checks under the prefix, and the Python interop suite).
# Then the same with auth on (AuthMode jwt, a test issuer): infra/lambda-e2e-auth.py and the
# interop suites with a bearer token behind API Gateway, infra/lambda-e2e-auth.py behind the
# Function URL, and the A2A-Lite webhook channel behind both (infra/lambda-e2e-lite.py, about
# 30 s each); no token may reach a log.
# About 9.5 min after a workspace build (first run: +1 min of pip installs).
set -euo pipefail
cd "$(dirname "$0")/.."
# One local cloud at a time (its ports and .venv-lambda/run): infra/llm-check.sh runs a
# generated project's stack on it too, beside this suite in infra/test-all.sh.
mkdir -p .venv-lambda
exec 9>.venv-lambda/session.lock
flock 9
issuer=""
receiver=""
# `if`, not `&&`: under set -e a failed `&&` list (a process already gone) would end the trap
# before the local cloud is stopped, and fail the run.
trap 'if [ -n "$issuer" ]; then kill "$issuer" 2>/dev/null || true; fi
if [ -n "$receiver" ]; then kill "$receiver" 2>/dev/null || true; fi
infra/lambda-local.sh stop' EXIT
infra/lambda-local.sh stop >/dev/null 2>&1 || true
lambda_env=$(infra/lambda-local.sh start)   # an assignment, so a failure stops the run
eval "$lambda_env"
say() { printf '\nlambda-e2e: %s\n' "$*"; }

# Lambda freezes a function's process once its answer is sent; every call below goes through
# a2a-lambda-freezer, which does the same. First, that it does: a function that leaves work
# running past its answer (infra/lambda-tools/src/bin/a2a-freeze-probe.rs, the defect a freeze
# catches) has that work wait for its next invocation.
say "the freeze: work left running after an answer waits for the next invocation"
probe="$A2A_WATCH_URL/2015-03-31/functions/a2a-freeze-probe/invocations"
marker=$(mktemp)
pid=$(curl -fsS -X POST -H 'Content-Type: application/json' \
  -d "{\"marker\":\"$marker\",\"after_ms\":500}" "$probe" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])')
process_state() { awk '{print $3}' "/proc/$pid/stat" 2>/dev/null; }
for _ in $(seq 1 100); do [ "$(process_state)" = T ] && break; sleep 0.05; done
[ "$(process_state)" = T ] || { echo "the probe's process $pid was not stopped after its answer" >&2; exit 1; }
# Three times the work's delay: a process left running would have done it by now.
sleep 1.5
if grep -q after "$marker"; then
  echo "work left running after the probe's answer ran while it was frozen" >&2; exit 1
fi
curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' -d '{"hold_ms":300}' "$probe"
grep -q after "$marker" || { echo "the probe's left work did not run at its next invocation" >&2; exit 1; }
rm -f "$marker"
echo "lambda-e2e: the probe's left work waited, frozen, for its next invocation"
say "end-to-end checks (infra/lambda-e2e.py)"
python3 infra/lambda-e2e.py
say "Python SDK interop suite through the router"
A2A_BASE_URL="$A2A_BASE_URL" tests/interop/run.sh -q
say "JS SDK interop suite through the router"
A2A_BASE_URL="$A2A_BASE_URL" tests/interop-js/run.sh
# The older versions (issue #16), served by the same functions: 0.3 on /jsonrpc and /v1/…,
# the early protocol on /jsonrpc and its own paths.
say "A2A 0.3 Python SDK interop suite through the router"
A2A_BASE_URL="$A2A_BASE_URL" tests/interop-v03/run.sh -q
say "A2A 0.3 JS SDK interop suite through the router"
A2A_BASE_URL="$A2A_BASE_URL" tests/interop-js-v03/run.sh
say "early-protocol (python-a2a) interop suite through the router"
A2A_BASE_URL="$A2A_BASE_URL" tests/interop-early/run.sh -q

# Front door FunctionUrl: the same functions' store and queues, one function for every route.
say "front door FunctionUrl: every request to the front function"
infra/lambda-local.sh front-door FunctionUrl
# The delegated task's minute-long wait ran behind API Gateway; here a short one shows the
# relay function serving the relay route on its own URL (the second router), where the relay
# URLs point.
A2A_E2E_DELEGATE_SECS=6 python3 infra/lambda-e2e.py
A2A_BASE_URL="$A2A_BASE_URL" tests/interop/run.sh -q
A2A_BASE_URL="$A2A_BASE_URL" tests/interop-js/run.sh
infra/lambda-local.sh front-door ApiGateway

# A base path through both front doors (issue #31): behind API Gateway the stage is the base
# path (the router takes /a2a off, as API Gateway does, and the public URL names it); behind the
# Function URL the front function serves the whole surface under BasePath itself.
state=.venv-lambda/run
base_checks="card signed_card echo stream_rest stream_rpc draft_1_1 push_secrets tenant"
# Both base-path phases also export spans (SpanExport, docs/tracing.md): to an OTLP receiver of
# the tests' own on 127.0.0.1 (infra/lambda-tools/src/bin/a2a-otlp-receiver.rs), which writes
# each span it takes to spans.jsonl and checks the SigV4 signatures. Behind API Gateway as
# SpanExport=xray deploys it (signed for X-Ray; X-Ray's endpoint swapped for the receiver),
# behind the Function URL as a collector's URL (unsigned).
spans_file="$state/spans.jsonl"
: >"$spans_file"
"${CARGO_TARGET_DIR:-target}/debug/a2a-otlp-receiver" --out "$spans_file" --secret test >"$state/otlp.url" &
receiver=$!
for _ in $(seq 1 100); do [ -s "$state/otlp.url" ] && break; sleep 0.1; done
otlp_url=$(cat "$state/otlp.url")
[ -n "$otlp_url" ] || { echo "the OTLP receiver did not start" >&2; exit 1; }
export A2A_E2E_SPANS_FILE="$spans_file"
# Each restart waits for the card at A2A_E2E_PATH_PREFIX through the router as it then runs, so
# the router and the functions change in the order that keeps the card served.
say "base path /a2a behind API Gateway (the stage)"
# A local override (to every function): API Gateway's request context names the stage, from
# which the functions take their URL; the events of `cargo lambda watch` carry none.
printf '# the stage API Gateway names in each request, which watch does not\nA2A_PUBLIC_BASE_URL=%s/a2a\n' \
  "$A2A_BASE_URL" >"$state/stage.env"
printf 'SpanExport=xray\n# the test receiver in place of X-Ray'"'"'s endpoint\nOTEL_EXPORTER_OTLP_TRACES_ENDPOINT=%s\n' \
  "$otlp_url" >>"$state/stage.env"
export A2A_ROUTER_STAGE=/a2a
A2A_E2E_PATH_PREFIX=/a2a infra/lambda-local.sh front-door ApiGateway
A2A_E2E_PATH_PREFIX=/a2a infra/lambda-local.sh restart-watch "$state/stage.env"
A2A_E2E_SPANS_SIGNED=xray A2A_BASE_URL="$A2A_BASE_URL/a2a" python3 infra/lambda-e2e.py $base_checks spans
say "base path /a2a behind the Function URL (BasePath)"
printf 'BasePath=/a2a\nSpanExport=%s\n' "$otlp_url" >"$state/base-path.env"
unset A2A_ROUTER_STAGE
infra/lambda-local.sh front-door FunctionUrl
A2A_E2E_PATH_PREFIX=/a2a infra/lambda-local.sh restart-watch "$state/base-path.env"
A2A_BASE_URL="$A2A_BASE_URL/a2a" python3 infra/lambda-e2e.py $base_checks spans
A2A_BASE_URL="$A2A_BASE_URL/a2a" tests/interop/run.sh -q
infra/lambda-local.sh restart-watch -
unset A2A_E2E_SPANS_FILE
kill "$receiver" 2>/dev/null || true
receiver=""
infra/lambda-local.sh front-door ApiGateway

# The same functions with authentication on (AuthMode jwt), as a deployment runs by default:
# a throwaway OpenID issuer on 127.0.0.1 (tests/src/bin/test-issuer.rs) mints the tokens, and
# the functions are restarted as the stack deployed with those parameters (auth.env: template
# parameters, and the A2A-Lite channel's local A2A_LITE_* standing in for its secret).
state=.venv-lambda/run
issuer=$(infra/test-issuer.sh "$state/issuer.out")
value() { sed -n "s/^$1=//p" "$state/issuer.out"; }
# CORS on too (the template's CorsAllowedOrigins), so the auth checks see 401s and streams
# as a browser does.
cors_origin=https://inspector.example
printf 'AuthMode=jwt\nJwtIssuer=%s\nJwtAudience=a2a-e2e\nCorsAllowedOrigins=%s\n' \
  "$(value issuer)" "$cors_origin" >"$state/auth.env"
# The A2A-Lite webhook channel too (infra/lambda-e2e-lite.py is the chat, listening on
# lite_port), acting as the principal of the test token's subject (`interop`), so that token
# reads the rooms' tasks.
lite_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
lite_token=$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')
issuer_url=$(value issuer)
printf 'LiteChannels=on\nA2A_LITE_WEBHOOK_TOKEN=%s\nA2A_LITE_WEBHOOK_REPLY_URL=http://127.0.0.1:%s/hook\nLitePrincipal=jwt:%s:%sinterop\n' \
  "$lite_token" "$lite_port" "${#issuer_url}" "$issuer_url" >>"$state/auth.env"
# $1: where the chat posts its webhooks (default: the front door).
lite_check() {
  A2A_LITE_LISTEN_PORT=$lite_port A2A_LITE_TOKEN=$lite_token A2A_TOKEN=$(value token) \
    A2A_OTHER_TOKEN=$(value other_token) A2A_LITE_WEBHOOK_BASE=${1:-$A2A_BASE_URL} \
    python3 infra/lambda-e2e-lite.py
}
say "the same functions with authentication on (AuthMode jwt)"
infra/lambda-local.sh restart-watch "$state/auth.env"
A2A_TOKEN=$(value token) A2A_OTHER_TOKEN=$(value other_token) A2A_READ_TOKEN=$(value read_token) \
  A2A_CORS_ORIGIN=$cors_origin python3 infra/lambda-e2e-auth.py
A2A_BEARER_TOKEN=$(value token) tests/interop/run.sh -q
A2A_BEARER_TOKEN=$(value token) tests/interop-js/run.sh
say "the A2A-Lite webhook channel (the channel function, pushes back through the push function)"
lite_check
say "authentication on, front door FunctionUrl"
infra/lambda-local.sh front-door FunctionUrl
A2A_TOKEN=$(value token) A2A_OTHER_TOKEN=$(value other_token) A2A_READ_TOKEN=$(value read_token) \
  A2A_CORS_ORIGIN=$cors_origin python3 infra/lambda-e2e-auth.py
say "the A2A-Lite webhook channel behind the Function URL (the relay function's own URL)"
lite_check "$A2A_RELAY_URL"
say "no invocation reached its function's Timeout, in any pass (the freezer counts them)"
python3 infra/lambda-e2e.py no_timeouts
for name in token other_token read_token; do
  if grep -qF "$(value "$name")" "$state"/*.log; then
    echo "a log of the functions, router or pollers holds a bearer token" >&2; exit 1
  fi
done
if grep -qF "$lite_token" "$state"/*.log; then
  echo "a log of the functions, router or pollers holds the A2A-Lite webhook token" >&2; exit 1
fi
echo "lambda-e2e: no bearer token in the logs"
