#!/usr/bin/env bash
# Starts moto's server (DynamoDB + SQS on the real AWS wire protocol) on 127.0.0.1 for the
# AWS adapter tests, or stops it.
#
#   infra/moto.sh          install moto (pinned) into .venv-moto if missing, start it on a free
#                          port in the background, wait until it answers, and print
#                          AWS_ENDPOINT_URL=http://127.0.0.1:PORT on stdout (nothing else).
#                          If one started by this script is already running, print its address.
#   infra/moto.sh setup    only install moto (pinned) into .venv-moto if missing
#                          (infra/lambda-local.sh runs its own server from this venv).
#   infra/moto.sh stop     stop the server this script started.
#   infra/moto.sh env      print the export lines for a running server (eval-able).
#
# Typical use:
#   eval "$(infra/moto.sh env-start)"      # starts if needed, exports AWS_* for this shell
#   cargo test -p a2a-aws
#   infra/moto.sh stop
#
# AWS's limits that moto leaves out are always enforced; the faults AWS produces are off unless
# A2A_FAULT_RATE (with A2A_FAULT_SEED, A2A_FAULT_KINDS) is in this script's environment, or are
# turned on later with POST /fault-api/on (see infra/moto_server.py, FAULT_HELP).
#
# The state lives in .venv-moto/ (git-ignored): the venv, moto.pid, moto.port and moto.log.
# Messages go to stderr so stdout stays machine-readable.
set -euo pipefail
cd "$(dirname "$0")/.."

MOTO_VERSION="5.2.5"
venv=".venv-moto"
pid_file="$venv/moto.pid"
port_file="$venv/moto.port"
log_file="$venv/moto.log"

say() { printf 'moto.sh: %s\n' "$*" >&2; }

running() {
  [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

endpoint() {
  printf 'http://127.0.0.1:%s' "$(cat "$port_file")"
}

install() {
  if [ -x "$venv/bin/python" ] &&
    "$venv/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
    return
  fi
  say "installing moto[server]==$MOTO_VERSION into $venv (about a minute, once)"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "moto[server]==$MOTO_VERSION" >&2
}

free_port() {
  # Bind port 0 and report what the kernel picked. Another process could take it before moto
  # binds it; start() then notices moto exiting and tries again with a new port.
  "$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

answers() {
  # Any HTTP answer from moto's own API means the server is up.
  "$venv/bin/python" - "$1" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/data.json", timeout=1).read()
EOF
}

start() {
  if running; then
    echo "AWS_ENDPOINT_URL=$(endpoint)"
    return
  fi
  install
  for _attempt in 1 2 3; do
    port=$(free_port)
    # moto's server behind a lock that makes each DynamoDB request atomic, as it is on AWS
    # (see infra/moto_server.py for why plain moto_server loses concurrent updates).
    # setsid: the server must not die with the shell (or CI step) that started it.
    setsid "$venv/bin/python" infra/moto_server.py -H 127.0.0.1 -p "$port" >"$log_file" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$pid_file"
    echo "$port" >"$port_file"
    for _ in $(seq 1 150); do
      if answers "$port"; then
        say "moto $MOTO_VERSION listening on 127.0.0.1:$port (pid $pid, log $log_file)"
        echo "AWS_ENDPOINT_URL=$(endpoint)"
        return
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    say "moto did not come up on port $port; retrying"
    kill "$pid" 2>/dev/null || true
    rm -f "$pid_file" "$port_file"
  done
  say "moto failed to start; see $log_file"
  cat "$log_file" >&2 || true
  exit 1
}

stop() {
  if running; then
    pid=$(cat "$pid_file")
    kill "$pid"
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    say "stopped moto (pid $pid)"
  else
    say "moto is not running"
  fi
  rm -f "$pid_file" "$port_file"
}

print_env() {
  running || { say "moto is not running: start it with infra/moto.sh"; exit 1; }
  cat <<EOF
export AWS_ENDPOINT_URL=$(endpoint)
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
EOF
}

case "${1:-start}" in
  start) start ;;
  setup) install ;;
  stop) stop ;;
  env) print_env ;;
  env-start)
    start >/dev/null
    print_env
    ;;
  *)
    say "usage: infra/moto.sh [start|setup|stop|env|env-start]"
    exit 2
    ;;
esac
