#!/usr/bin/env bash
# Benchmarks a2a-local (the embedded SQLite store) on loopback and prints req/s, p50 and p99 for:
#   - blocking echo SendMessage over JSON-RPC and over REST (a unique messageId per request)
#   - GetTask and ListTasks (REST)
#   - streaming: events/s one SendStreamingMessage subscriber receives from one task
#   - RSS of the server with N open streams
# Method and latest figures: docs/performance.md.
#
#   infra/bench.sh            optimised build, 10 s per run, 16 connections, 1,000 streams
#   infra/bench.sh --smoke    the debug build, ~1 s per run, tiny counts; asserts only that every
#                             request succeeded and that the counts add up (infra/test-all.sh)
#   infra/bench.sh --compare-js   also runs the JSON-RPC echo load, right after a2a-local's, against
#                             the same agent on the official JS SDK's server (infra/bench-js: its
#                             pinned @a2a-js/sdk and Express, installed with npm ci; Node 20+)
#   infra/bench.sh --scale N  the runs on an empty store, then again on a store preloaded with N
#                             finished tasks of the same owner (the example bench-fill of
#                             a2a-embedded writes them), and the ratios of the two (issue #32's
#                             targets); the server's RSS fresh and after the runs on each.
#                             --smoke always does this, with N = 2,000.
#   infra/bench.sh --against B  two builds side by side: the blocking JSON-RPC echo only, in
#                             alternating rounds (A, the build measured as above, then B; the
#                             next round B first), each a fresh server on an empty store warmed
#                             up (BENCH_WARM s, its write-ahead log past its first restart) and
#                             then measured (BENCH_SECS, 5 by default); the server on CPU 0 and
#                             wrk on CPU 1 (taskset; BENCH_PIN=0 shares both), so neither steals
#                             the other's core. Prints each round and the medians: req/s, B/A,
#                             and requests per second of server CPU (docs/performance.md, "One
#                             core each"). BENCH_ROUNDS: 12 by default; --smoke: 2, no warm-up.
#
# Environment: A2A_BENCH_BIN (a built a2a-local to measure instead of building one),
# A2A_BENCH_FILL (a built bench-fill; default: beside the binary, or built), BENCH_SECS,
# BENCH_CONNECTIONS, BENCH_THREADS, BENCH_STREAMS, BENCH_STREAM_EVENTS, BENCH_SCALE_TASKS (N),
# BENCH_SCALE_STORE=DIR (keep the preloaded store there: filled when it holds another N or
# nothing, copied for each run; the directory is replaced when refilled),
# and BENCH_PERF=FILE: record a CPU profile (perf) of the JSON-RPC send run, top frames into FILE
# (of the preloaded store's run with --scale).
# The load generator is wrk (Debian package; installed with apt-get when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
target_dir="${CARGO_TARGET_DIR:-$root/target}"

smoke=false
compare_js=false
against=""
scale=${BENCH_SCALE_TASKS:-}
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=true ;;
    --compare-js) compare_js=true ;;
    --scale) scale=${2:?--scale needs a number of tasks}; shift ;;
    --against) against=${2:?--against needs an a2a-local binary}; shift ;;
    *) echo "bench: unknown argument $1 (--smoke, --compare-js, --scale N, --against BIN)" >&2; exit 2 ;;
  esac
  shift
done

if $smoke; then
  secs=${BENCH_SECS:-1}; conns=${BENCH_CONNECTIONS:-2}; threads=${BENCH_THREADS:-1}
  streams=${BENCH_STREAMS:-10}; stream_events=${BENCH_STREAM_EVENTS:-50}
  scale=${scale:-2000}
else
  secs=${BENCH_SECS:-10}; conns=${BENCH_CONNECTIONS:-16}; threads=${BENCH_THREADS:-2}
  streams=${BENCH_STREAMS:-1000}; stream_events=${BENCH_STREAM_EVENTS:-1000}
fi
case ${scale:-0} in
  ''|*[!0-9]*) echo "bench: --scale takes a number of tasks" >&2; exit 2 ;;
esac
pin_server=() pin_load=()
if [ -n "$against" ]; then
  [ -x "$against" ] || { echo "bench: --against $against: not an executable" >&2; exit 2; }
  [ -z "$scale" ] || $smoke || { echo "bench: --against compares on an empty store: no --scale" >&2; exit 2; }
  scale=""
  if $smoke; then
    secs=${BENCH_SECS:-1}; rounds=${BENCH_ROUNDS:-2}; warm=${BENCH_WARM:-0}
  else
    secs=${BENCH_SECS:-5}; rounds=${BENCH_ROUNDS:-12}; warm=${BENCH_WARM:-12}
  fi
  if [ "${BENCH_PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
    pin_server=(taskset -c 0); pin_load=(taskset -c 1); threads=1
  fi
fi

# --- the server binary (and the store filler of --scale) -----------------------------------
# The release profile tuned for Lambda (opt-level "s", fat LTO, stripped) takes long to build
# and leaves no symbols to profile; the local server is measured at opt-level 3 with line
# tables instead, in a target directory of its own so the two never rebuild each other.
bench_target="${A2A_BENCH_TARGET_DIR:-$target_dir/bench}"
bench_build() {
  CARGO_PROFILE_RELEASE_OPT_LEVEL=3 CARGO_PROFILE_RELEASE_LTO=false \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_STRIP=false \
  CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_TARGET_DIR="$bench_target" \
    nice -n 5 cargo build --release --locked "$@"
}
if [ -n "${A2A_BENCH_BIN:-}" ]; then
  bin=$A2A_BENCH_BIN
elif $smoke; then
  cargo build -p a2a-local --locked
  bin="$target_dir/debug/a2a-local"
else
  bench_build -p a2a-local
  bin="$bench_target/release/a2a-local"
fi
fill=""
if [ -n "$scale" ]; then
  if [ -n "${A2A_BENCH_FILL:-}" ]; then
    fill=$A2A_BENCH_FILL
  elif [ -x "$(dirname "$bin")/examples/bench-fill" ]; then
    fill="$(dirname "$bin")/examples/bench-fill"
  elif $smoke || [ -n "${A2A_BENCH_BIN:-}" ]; then
    cargo build -p a2a-embedded --example bench-fill --locked
    fill="$target_dir/debug/examples/bench-fill"
  else
    bench_build -p a2a-embedded --example bench-fill
    fill="$bench_target/release/examples/bench-fill"
  fi
fi

# --- the load generator ----------------------------------------------------------------------
if ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
  else
    echo "bench: wrk is missing; install it (Debian/Ubuntu: apt-get install wrk)" >&2; exit 1
  fi
fi

# --- the JS SDK's server, to compare with ---------------------------------------------------
if $compare_js; then
  command -v node >/dev/null 2>&1 || { echo "bench: --compare-js needs Node.js 20 or later" >&2; exit 1; }
  js_dir="$target_dir/bench-js"
  mkdir -p "$js_dir"
  cp infra/bench-js/package.json infra/bench-js/package-lock.json infra/bench-js/server.mjs "$js_dir/"
  (cd "$js_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

work=$(mktemp -d)
server=""
js_server=""
stop_server() {
  [ -n "$server" ] && { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
  server=""
}
cleanup() {
  stop_server
  [ -n "$js_server" ] && { kill "$js_server" 2>/dev/null || true; wait "$js_server" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
ulimit -n 8192 2>/dev/null || true

# Prints the URL a server started with its output in LOG prints ("serving on URL") once it
# listens; fails, showing the log, if it exits or takes over 30 s.
serving_url() { # log pid name
  local url
  for _ in $(seq 1 300); do
    url=$(grep -o 'serving on http://[0-9.:]*' "$1" | head -n1 | sed 's/serving on //' || true)
    [ -n "$url" ] && { echo "$url"; return 0; }
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  cat "$1" >&2; echo "bench: $3 did not start" >&2; return 1
}

# Starts a2a-local on the data directory DIR: sets $server and $base.
start_server() { # dir
  "${pin_server[@]}" "$bin" --addr 127.0.0.1:0 --data-dir "$1" --max-connections $((streams + 64)) \
    2>"$work/server.log" &
  server=$!
  base=$(serving_url "$work/server.log" "$server" a2a-local) || exit 1
}

# A process's resident memory, in MB.
rss_mb() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

# A wrk script that counts answers whose body holds $2 (the success mark); the others are
# failures. With a body template, each request gets a unique messageId (thread, counter).
write_script() { # name mark method path [body-with-MSGID]
  local name=$1 mark=$2 method=$3 path=$4 body=${5:-}
  cat >"$work/$name.lua" <<LUA
local threads = {}
local n = 0
function setup(thread)
  n = n + 1
  thread:set("tid", n)
  table.insert(threads, thread)
end
local counter = 0
ok = 0
failed = 0
local prefix = ""
function init(args)
  prefix = string.format("bench-%d-%d-", os.time(), tid)
end
wrk.method = "$method"
wrk.path = "$path"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"
local template = [[$body]]
if template ~= "" then
  request = function()
    counter = counter + 1
    local body = template:gsub("MSGID", prefix .. counter)
    return wrk.format(nil, nil, nil, body)
  end
end
function response(status, headers, body)
  if status == 200 and body:find('$mark', 1, true) then ok = ok + 1 else failed = failed + 1 end
end
function done(summary, latency, requests)
  local total_ok, total_failed = 0, 0
  for _, t in ipairs(threads) do
    total_ok = total_ok + t:get("ok")
    total_failed = total_failed + t:get("failed")
  end
  io.write(string.format("COUNTS ok=%d failed=%d requests=%d errors=%d\n", total_ok, total_failed,
    summary.requests, summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout))
end
LUA
}

message='{"messageId":"MSGID","role":"ROLE_USER","parts":[{"text":"hello"}]}'
write_script send-jsonrpc TASK_STATE_COMPLETED POST /jsonrpc \
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":$message}}"
write_script send-rest TASK_STATE_COMPLETED POST /message:send "{\"message\":$message}"

failures=0
printf '\nmachine: %s (%s), %s CPUs, load average %s; a2a-local %s; wrk -t%s -c%s -d%ss\n' \
  "$(uname -m)" "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)" "$(nproc)" \
  "$(cut -d" " -f1-3 /proc/loadavg)" "$bin" "$threads" "$conns" "$secs"

# A server's CPU time so far (user + system), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# The figures of each run, by "phase/run": req/s, p99 in ms, max latency in ms.
declare -A rps_of p99_of max_of cpu_of
phase=""

# A wrk latency ("812.00us", "4.10ms", "1.02s") in milliseconds.
to_ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0;
  else if (v ~ /m$/) n *= 60000; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'; }

# Runs wrk with a script against the server PID at URL and prints one line; a failed or
# missing request fails the run. KEY names the run in the figures kept for the summary.
run_wrk_on() { # pid url label script key [path-override]
  local pid=$1 url=$2 label=$3 script=$4 key=$5 out cpu_before cpu_after
  cpu_before=$(cpu_ticks "$pid")
  out=$("${pin_load[@]}" wrk -t"$threads" -c"$conns" -d"${secs}s" --latency -s "$work/$script.lua" "$url${6:-}" 2>&1)
  local rps p50 p99 max counts ok failed requests errors
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  max=$(awk '$1 == "Latency" {print $4}' <<<"$out")
  counts=$(grep '^COUNTS' <<<"$out" || true)
  ok=$(sed -n 's/.*ok=\([0-9]*\).*/\1/p' <<<"$counts")
  failed=$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' <<<"$counts")
  requests=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<<"$counts")
  errors=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$counts")
  cpu_after=$(cpu_ticks "$pid")
  # Requests per second of the server's own CPU time: comparable across runs on a busy machine.
  local per_cpu=?
  if [ -n "${requests:-}" ] && [ "$cpu_after" -gt "$cpu_before" ]; then
    per_cpu=$(( requests * $(getconf CLK_TCK) / (cpu_after - cpu_before) ))
  fi
  printf '%-44s %10s %9s %9s %9s %s (%s) %s\n' "$label" "${rps:-?}" "${p50:-?}" "${p99:-?}" "${max:-?}" \
    "${requests:-?}" "${failed:-?}" "$per_cpu"
  rps_of[$phase/$key]=${rps:-0}
  cpu_of[$phase/$key]=$per_cpu
  p99_of[$phase/$key]=$(to_ms "${p99:-0}")
  max_of[$phase/$key]=$(to_ms "${max:-0}")
  if [ -z "$counts" ] || [ "$failed" != 0 ] || [ "$errors" != 0 ] || [ "$ok" != "$requests" ] \
     || [ "$requests" = 0 ]; then
    echo "  FAILED: $counts" >&2; echo "$out" >&2; failures=$((failures + 1))
  fi
}

# run_wrk_on a2a-local.
run_wrk() { run_wrk_on "$server" "$base" "$@"; }

# The usual runs against the server started on the current store, as phase PHASE.
run_suite() { # phase
  phase=$1
  printf '\n%-44s %10s %9s %9s %9s %s\n' "run ($phase)" "req/s" "p50" "p99" "max" \
    "requests (failed) per-server-CPU-second"
  if [ -n "${BENCH_PERF:-}" ] && { [ -z "$scale" ] || [ "$phase" != empty ]; }; then
    # A CPU profile of the server during the JSON-RPC send run (docs/performance.md).
    perf record -F 999 -g -o "$work/perf.data" -p "$server" -- sleep "$secs" >/dev/null 2>&1 &
    perf_pid=$!
    run_wrk "SendMessage JSON-RPC (blocking echo)" send-jsonrpc send-jsonrpc
    wait "$perf_pid" || true
    # `head` closes the pipe early: the report's SIGPIPE is not a failure.
    { perf report -i "$work/perf.data" --no-children --sort symbol --stdio 2>/dev/null \
      | grep -E '^ +[0-9.]+%' | sed -E 's/ +- +- *$//' | head -n 40 >"$BENCH_PERF"; } || true
    echo "profile: top frames in $BENCH_PERF"
  else
    run_wrk "SendMessage JSON-RPC (blocking echo)" send-jsonrpc send-jsonrpc
  fi
  if $compare_js && [ "$phase" = empty ]; then
    # The same load on the JS SDK's server, while a2a-local idles; then a2a-local's runs go on.
    (cd "$js_dir" && exec node server.mjs) >"$work/js-server.log" 2>&1 &
    js_server=$!
    js_base=$(serving_url "$work/js-server.log" "$js_server" "the JS SDK's server") || exit 1
    run_wrk_on "$js_server" "$js_base" "JS SDK server: SendMessage JSON-RPC" send-jsonrpc js
    kill "$js_server" 2>/dev/null || true; wait "$js_server" 2>/dev/null || true
    js_server=""
  fi
  run_wrk "SendMessage REST (blocking echo)" send-rest send-rest

  # Reads: one task to get, and every task of the owner to list.
  local task_id total
  task_id=$(curl -sf -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' \
    -d "{\"message\":${message/MSGID/bench-get-task-$phase}}" "$base/message:send" | jq -r '.task.id')
  [ -n "$task_id" ] && [ "$task_id" != null ] || { echo "bench: no task to get" >&2; exit 1; }
  write_script get-task "\"$task_id\"" GET "/tasks/$task_id"
  write_script list-tasks '"totalSize"' GET "/tasks?pageSize=50"
  total=$(curl -sf -H 'A2A-Version: 1.0' "$base/tasks?pageSize=1" | jq -r '.totalSize')
  totals[$phase]=$total
  run_wrk "GetTask REST" get-task get-task
  run_wrk "ListTasks REST (50 of $total tasks)" list-tasks list-tasks
  rss_after[$phase]=$(rss_mb "$server")
  printf '%-44s %10s   fresh server %s MB\n' "RSS after these runs (MB)" "${rss_after[$phase]}" \
    "${rss_fresh[$phase]}"
  streams_run || failures=$((failures + 1))
}

# Streaming and open streams: a small asyncio client speaking HTTP/1.1 on raw sockets, so
# that a thousand open streams cost the client a few MB, not a thousand processes.
streams_run() {
python3 - "$base" "$server" "$stream_events" "$streams" "$smoke" <<'PY'
import asyncio, json, sys, time, urllib.parse

base, pid, events, streams, smoke = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "true"
url = urllib.parse.urlparse(base)

def rss_mb():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")

async def open_stream(text, msg_id):
    reader, writer = await asyncio.open_connection(url.hostname, url.port, limit=1 << 20)
    body = json.dumps({"message": {"messageId": msg_id, "role": "ROLE_USER", "parts": [{"text": text}]}})
    writer.write((f"POST /message:stream HTTP/1.0\r\nHost: {url.netloc}\r\nA2A-Version: 1.0\r\n"
                  f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"stream answered {status!r}")
    while (await reader.readline()) not in (b"\r\n", b"\n"):
        pass
    return reader, writer

async def next_event(reader):
    """The data of the next SSE event (HTTP/1.0: the body is the plain event stream)."""
    data = None
    while True:
        line = await reader.readline()
        if not line:
            return None
        line = line.rstrip(b"\r\n")
        if line.startswith(b"data:"):
            data = line[5:].strip()
        elif line == b"" and data is not None:
            return json.loads(data)

async def one_stream(run):
    reader, writer = await open_stream(f"slow {events} 0", f"bench-stream-{time.time()}-{run}")
    # The clock runs while the bytes arrive; the events are parsed and checked once the last
    # one is in, so that the figure is the server's rate, not this client's JSON parsing.
    started = time.perf_counter()
    body = bytearray()
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            break
        body += chunk
        if body.endswith(b"\n\n") and b"TASK_STATE_COMPLETED" in body[-4096:]:
            break
    elapsed = time.perf_counter() - started
    writer.close()
    datas = [line[5:].strip() for line in bytes(body).split(b"\n") if line.startswith(b"data:")]
    parsed = [json.loads(d) for d in datas]
    count = len(parsed)
    last = parsed[-1] if parsed else None
    # The Task, WORKING, one artifact chunk per event asked, COMPLETED.
    expected = events + 3
    if count != expected or last.get("statusUpdate", {}).get("status", {}).get("state") != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"stream delivered {count} events, expected {expected}; last {last}")
    chunks = [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in parsed if "artifactUpdate" in e]
    if chunks != [f"chunk-{i} " for i in range(1, events + 1)]:
        raise RuntimeError("stream delivered the chunks out of order or changed")
    return count / elapsed

async def main():
    rates = [await one_stream(run) for run in range(1 if smoke else 5)]
    rates.sort()
    print(f"{'streaming, one task (events/s)':<44} {rates[len(rates) // 2]:>10.0f}   median of {len(rates)}, {events + 3} events each")

    before = rss_mb()
    # Each stream's task works on: two chunks a minute apart keep it open.
    opened = []
    for i in range(0, streams, 100):
        opened += await asyncio.gather(*(open_stream("slow 2 60000", f"bench-open-{time.time()}-{j}")
                                         for j in range(i, min(streams, i + 100))))
    firsts = await asyncio.gather(*(next_event(r) for r, _ in opened))
    got = sum(1 for ev in firsts if ev and "task" in ev)
    await asyncio.sleep(1)
    after = rss_mb()
    per_stream = (after - before) * 1024 / streams
    print(f"{'RSS with %d open streams (MB)' % streams:<44} {after:>10.1f}   idle server {before:.1f} MB: the streams cost {after - before:.1f} MB, {per_stream:.1f} KB each")
    for _, w in opened:
        w.close()
    if got != streams:
        raise RuntimeError(f"{got} of {streams} streams delivered their first event")

asyncio.run(main())
PY
}

declare -A totals rss_fresh rss_after

if [ -n "$against" ]; then
  # The same load on two builds, alternating, so that what the machine does meanwhile falls on
  # both alike; each round's servers start on an empty store.
  phase=ab
  ab_run() { # label binary key
    local bin=$2 # start_server's binary
    start_server "$work/$3"
    if [ "$warm" -gt 0 ]; then
      "${pin_load[@]}" wrk -t"$threads" -c"$conns" -d"${warm}s" -s "$work/send-jsonrpc.lua" "$base" >/dev/null 2>&1
    fi
    run_wrk "$1" send-jsonrpc "$3"
    stop_server
    rm -rf "${work:?}/$3"
  }
  echo "A: $bin"
  echo "B: $against"
  printf '%s round(s), warmed %s s, measured %s s, %s\n' "$rounds" "$warm" "$secs" \
    "$([ ${#pin_server[@]} -gt 0 ] && echo "the server on CPU 0, wrk on CPU 1" || echo "unpinned")"
  printf '\n%-44s %10s %9s %9s %9s %s\n' "run" "req/s" "p50" "p99" "max" \
    "requests (failed) per-server-CPU-second"
  figures=""
  for round in $(seq 1 "$rounds"); do
    if [ $((round % 2)) = 1 ]; then
      ab_run "round $round: A" "$bin" a; ab_run "round $round: B" "$against" b
    else
      ab_run "round $round: B" "$against" b; ab_run "round $round: A" "$bin" a
    fi
    figures+="${rps_of[ab/a]} ${rps_of[ab/b]} ${cpu_of[ab/a]} ${cpu_of[ab/b]}"$'\n'
  done
  python3 - "$figures" <<'PY'
import statistics, sys
rows = [line.split() for line in sys.argv[1].splitlines() if line.strip()]
num = lambda v: float(v) if v.replace(".", "", 1).isdigit() else None
a, b = [num(r[0]) for r in rows], [num(r[1]) for r in rows]
ratios = [y / x for x, y in zip(a, b) if x and y]
cpu = [num(r[3]) / num(r[2]) for r in rows if num(r[2]) and num(r[3])]
print(f"\nB/A per round: {' '.join(f'{r:.3f}' for r in ratios)}")
if ratios:
    print(f"median B/A {statistics.median(ratios):.3f} (rounds {min(ratios):.3f}-{max(ratios):.3f});"
          f" median req/s A {statistics.median(x for x in a if x):,.0f}, B {statistics.median(y for y in b if y):,.0f}")
if cpu:
    print(f"requests per server CPU-second, median B/A {statistics.median(cpu):.3f}")
PY
  [ "$failures" = 0 ] || { echo "bench: $failures run(s) failed" >&2; exit 1; }
  exit 0
fi

# The empty store.
start_server "$work/store"
rss_fresh[empty]=$(rss_mb "$server")
run_suite empty

if [ -n "$scale" ]; then
  # The same runs on a store that already holds $scale finished tasks of the same owner.
  stop_server
  echo
  if [ -n "${BENCH_SCALE_STORE:-}" ]; then
    # A preloaded store kept between runs: filled once (a million tasks take minutes), then
    # copied, so every run starts from the same file and none writes into the kept one.
    if [ "$(cat "$BENCH_SCALE_STORE/bench-fill-tasks" 2>/dev/null)" != "$scale" ]; then
      if [ -f "$BENCH_SCALE_STORE/bench-fill-tasks" ]; then
        rm -rf "$BENCH_SCALE_STORE"
      elif [ -e "$BENCH_SCALE_STORE" ] && [ -n "$(ls -A "$BENCH_SCALE_STORE")" ]; then
        echo "bench: $BENCH_SCALE_STORE holds something other than a preloaded store" >&2; exit 2
      fi
      "$fill" "$BENCH_SCALE_STORE" "$scale"
      echo "$scale" >"$BENCH_SCALE_STORE/bench-fill-tasks"
    fi
    cp -r "$BENCH_SCALE_STORE" "$work/filled"
    # On disk before the server starts: otherwise its first checkpoint's fsync waits for the
    # copy's gigabytes to be written back, and the runs measure that.
    sync "$work/filled"/*
    echo "bench: a copy of the store preloaded with $scale tasks in $BENCH_SCALE_STORE"
  else
    "$fill" "$work/filled" "$scale"
  fi
  start_server "$work/filled"
  rss_fresh[filled]=$(rss_mb "$server")
  run_suite filled

  # The targets of issue #32, as ratios of the two phases of this run.
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'; }
  printf '\n%s tasks preloaded (%s listed) against an empty store (%s listed):\n' \
    "$scale" "${totals[filled]}" "${totals[empty]}"
  printf '  %-38s %8s  %s\n' "blocking echo req/s, filled/empty" \
    "$(ratio "${rps_of[filled/send-jsonrpc]}" "${rps_of[empty/send-jsonrpc]}")" "target >= 0.80 (JSON-RPC)"
  printf '  %-38s %8s  %s\n' "blocking echo p99, filled/empty" \
    "$(ratio "${p99_of[filled/send-jsonrpc]}" "${p99_of[empty/send-jsonrpc]}")" \
    "target <= 2 (${p99_of[filled/send-jsonrpc]} / ${p99_of[empty/send-jsonrpc]} ms)"
  printf '  %-38s %8s  %s\n' "REST echo req/s, filled/empty" \
    "$(ratio "${rps_of[filled/send-rest]}" "${rps_of[empty/send-rest]}")" "p99 ${p99_of[filled/send-rest]} / ${p99_of[empty/send-rest]} ms"
  printf '  %-38s %8s  %s\n' "GetTask req/s, filled/empty" \
    "$(ratio "${rps_of[filled/get-task]}" "${rps_of[empty/get-task]}")" "target >= 0.50"
  printf '  %-38s %8s  %s\n' "ListTasks req/s, filled/empty" \
    "$(ratio "${rps_of[filled/list-tasks]}" "${rps_of[empty/list-tasks]}")" "target >= 0.50"
  printf '  %-38s %8s  %s\n' "echo max latency (filled), ms" "${max_of[filled/send-jsonrpc]}" \
    "the longest any write waited, checkpoints included"
  printf '  %-38s %8s  %s\n' "RSS after the wrk runs, filled/fresh" \
    "$(ratio "${rss_after[filled]}" "${rss_fresh[empty]}")" \
    "target <= 2 (${rss_after[filled]} MB, fresh server ${rss_fresh[empty]} MB; after the same runs on the empty store ${rss_after[empty]} MB)"
fi

if [ "$failures" != 0 ]; then
  echo "bench: $failures run(s) failed" >&2; exit 1
fi
