#!/usr/bin/env bash
# The Lambda functions end to end, as CI runs them: starts moto + `cargo lambda watch` + the
# SQS poller + the local router (infra/lambda-local.sh), runs infra/lambda-e2e.py and the
# Python SDK interop suite (tests/interop) through the router, and stops everything.
# About 4 min after a workspace build (first run: +1 min of pip installs).
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'infra/lambda-local.sh stop' EXIT
infra/lambda-local.sh stop >/dev/null 2>&1 || true
lambda_env=$(infra/lambda-local.sh start)   # an assignment, so a failure stops the run
eval "$lambda_env"
python3 infra/lambda-e2e.py
A2A_BASE_URL="$A2A_BASE_URL" tests/interop/run.sh -q
