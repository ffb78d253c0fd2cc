#!/usr/bin/env python3
"""Instructions per request of a2a-lambda's local server, under Valgrind's callgrind: a measure
that does not move with how busy the machine is (docs/performance.md, "Instructions per request").

For each request kind, a2a-local (the embedded SQLite store) serves a small and a large number of
the same requests, sequentially over one keep-alive connection, each time in a fresh server under
callgrind; the instructions per request are the difference of the two totals divided by the
difference of the counts, so start-up, shutdown and the first request's warm-up cancel out. What
the server's background loops execute while it waits (the worker and push loops' polls, a few
thousand instructions per poll) is counted too, in proportion to the wall time of the larger run.

    infra/instructions.py                 the optimised build (the benchmark profile of
                                          infra/bench.sh, in target/bench), full counts
    infra/instructions.py --smoke         the debug build, small counts: checks that every
                                          request succeeds and prints the figures (the test
                                          command); debug figures are not comparable to release
    infra/instructions.py --bin PATH      measure that a2a-local binary (another commit's)
    infra/instructions.py --kinds lambda-send,lambda-get
                                          the Lambda functions' warm requests (below); needs
                                          the emulator (eval "$(infra/moto.sh env-start)")
                                          and the a2a-cold-start tool (cargo build --workspace)
    --function-bin PATH                   measure that a2a-function binary instead of the
                                          optimised build of this checkout

The kinds: `echo` (blocking JSON-RPC SendMessage, a unique messageId each), `get` (REST GetTask of
one completed task), `chunk` (one artifact chunk of a streamed REST SendStreamingMessage: the
reference agent's `slow N 0`, streams of 60 chunks against streams of 10). `lambda-send` and
`lambda-get`: one warm request of the `send` function (a blocking JSON-RPC echo, its message a
new one each time) and of the `get` function (REST GetTask, of a task that does not exist: one
GetItem), each its one binary `a2a-function` under callgrind behind `a2a-cold-start`'s fake
Lambda Runtime API, against the emulator through its keep-alive relay: instances answering 110
warm requests against 10 (smoke: 6 against 2), so init and the cold first request cancel out.
Prints one line per kind, `<kind> <instructions per request>`, and a table.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# glibc copies and clears large blocks with `rep movsb` / `rep stosb`, which Valgrind counts as
# one instruction per byte (a 128 KB memset: 131,000 "instructions", a few thousand cycles on
# the CPU). Past these thresholds glibc uses its vector loops instead, which callgrind counts
# as the CPU runs them (the same memset: 7,200), so a large copy or clear no longer outweighs
# the code around it (docs/performance.md, "What a count leaves out").
REP_STRINGS_OFF = "glibc.cpu.x86_rep_stosb_threshold=0x7fffffff:glibc.cpu.x86_rep_movsb_threshold=0x7fffffff"
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def build(release, package="a2a-local"):
    """The binary of `package` to measure, built if needed."""
    if not release:
        subprocess.run(["cargo", "build", "-p", package, "--locked"], cwd=ROOT, check=True)
        return os.path.join(TARGET, "debug", package)
    bench = os.environ.get("A2A_BENCH_TARGET_DIR", os.path.join(TARGET, "bench"))
    env = dict(
        os.environ,
        CARGO_PROFILE_RELEASE_OPT_LEVEL="3",
        CARGO_PROFILE_RELEASE_LTO="false",
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS="16",
        CARGO_PROFILE_RELEASE_STRIP="false",
        CARGO_PROFILE_RELEASE_DEBUG="line-tables-only",
        CARGO_TARGET_DIR=bench,
    )
    subprocess.run(
        ["nice", "-n", "5", "cargo", "build", "--release", "--locked", "-p", package],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return os.path.join(bench, "release", package)


class Server:
    """a2a-local under callgrind, on an empty store in a temporary directory."""

    def __init__(self, binary, work):
        self.out = os.path.join(work, "callgrind.out")
        self.log = open(os.path.join(work, "server.log"), "w+")
        data = os.path.join(work, "data")
        self.proc = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={self.out}",
                binary,
                "--addr",
                "127.0.0.1:0",
                "--data-dir",
                data,
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env=dict(os.environ, RUST_LOG="warn,a2a_local=info"),
        )
        self.port = self.wait_for_port()

    def wait_for_port(self):
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            self.log.seek(0)
            found = re.search(r"serving on http://127\.0\.0\.1:(\d+)", self.log.read())
            if found:
                return int(found.group(1))
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.log.seek(0)
        sys.exit(f"instructions: a2a-local did not start under callgrind:\n{self.log.read()}")

    def stop(self):
        """Stops the server as Ctrl-C does and returns the instructions it executed."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            sys.exit("instructions: a2a-local did not stop on SIGINT")
        with open(self.out) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    return int(line.split()[1])
        sys.exit("instructions: callgrind wrote no total")


def call(conn, method, path, body=None, headers=None):
    head = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    head.update(headers or {})
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=head)
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        sys.exit(f"instructions: {method} {path} answered {response.status}: {data[:300]!r}")
    return data


def message(text, n):
    return {"messageId": f"instr-{os.getpid()}-{n}-{time.monotonic_ns()}", "role": "ROLE_USER",
            "parts": [{"text": text}]}


def echo(conn, count):
    for n in range(count):
        body = {"jsonrpc": "2.0", "id": n, "method": "SendMessage",
                "params": {"message": message("hello", n)}}
        answer = json.loads(call(conn, "POST", "/jsonrpc", body))
        state = answer.get("result", {}).get("task", {}).get("status", {}).get("state")
        if state != "TASK_STATE_COMPLETED":
            sys.exit(f"instructions: an echo answered {answer}")


def get(conn, count):
    task = json.loads(call(conn, "POST", "/message:send", {"message": message("hello", -1)}))
    task_id = task["task"]["id"]
    for _ in range(count):
        if json.loads(call(conn, "GET", f"/tasks/{task_id}"))["id"] != task_id:
            sys.exit("instructions: GetTask answered another task")


def chunks(per_stream):
    def run(conn, streams):
        for n in range(streams):
            data = call(conn, "POST", "/message:stream",
                        {"message": message(f"slow {per_stream} 0", n)},
                        {"Accept": "text/event-stream"}).decode()
            got = data.count('"artifactUpdate"')
            if got != per_stream or "TASK_STATE_COMPLETED" not in data:
                sys.exit(f"instructions: a stream of {per_stream} chunks carried {got}")
    return run


def measure(binary, workload, count):
    with tempfile.TemporaryDirectory() as work:
        server = Server(binary, work)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
        workload(conn, count)
        conn.close()
        return server.stop()


def per_request(binary, workload, small, large, scale=1):
    low = measure(binary, workload, small)
    high = measure(binary, workload, large)
    return (high - low) / ((large - small) * scale), low, high


def lambda_total(function_bin, function, warm):
    """The instructions an instance of `function` executed in all, answering its cold first
    request and `warm` more (a2a-cold-start --callgrind)."""
    tool = os.path.join(TARGET, "debug", "a2a-cold-start")
    if not os.path.exists(tool):
        sys.exit(f"instructions: no {tool}: cargo build --workspace first")
    with tempfile.TemporaryDirectory() as work:
        run = subprocess.run(
            [tool, "--bin-dir", os.path.dirname(function_bin), "--functions", function,
             "--runs", "1", "--warm", str(warm), "--callgrind", work, "--timeout-secs", "600",
             "--check"],
            capture_output=True, text=True,
        )
    found = re.search(rf"^instructions {function} {warm} (\d+)$", run.stderr, re.M)
    if run.returncode != 0 or not found:
        sys.exit(f"instructions: {function} under callgrind:\n{run.stdout}\n{run.stderr}")
    return int(found.group(1))


def lambda_per_request(function_bin, function, small, large):
    low = lambda_total(function_bin, function, small)
    high = lambda_total(function_bin, function, large)
    return (high - low) / (large - small), low, high


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--bin")
    parser.add_argument("--function-bin")
    parser.add_argument("--kinds", default="echo,get,chunk")
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        # As infra/bench.sh installs wrk: the Debian package, when this is a root shell with apt.
        if os.geteuid() == 0 and shutil.which("apt-get"):
            install = ["apt-get", "install", "-y", "-qq", "valgrind"]
            if subprocess.run(install, stdout=subprocess.DEVNULL).returncode != 0:
                subprocess.run(["apt-get", "update", "-qq"], check=True)
                subprocess.run(install, stdout=subprocess.DEVNULL, check=True)
        else:
            sys.exit("instructions: needs valgrind (Debian: apt-get install valgrind)")
    os.environ.setdefault("GLIBC_TUNABLES", REP_STRINGS_OFF)
    kinds_asked = args.kinds.split(",")
    on_lambda = [kind.startswith("lambda-") for kind in kinds_asked]
    binary = (args.bin or build(release=not args.smoke)) if not all(on_lambda) else None
    function_bin = None
    if any(on_lambda):
        if not os.environ.get("AWS_ENDPOINT_URL"):
            sys.exit('instructions: the lambda kinds need the emulator: eval "$(infra/moto.sh env-start)"')
        function_bin = args.function_bin or build(not args.smoke, "a2a-function")
    warm_small, warm_large = (2, 6) if args.smoke else (10, 110)
    small, large = (5, 25) if args.smoke else (50, 450)
    streams = 2 if args.smoke else 10
    kinds = {
        "echo": lambda: per_request(binary, echo, small, large),
        "get": lambda: per_request(binary, get, small, large),
        # Streams of 10 chunks against streams of 60: 50 chunks more per stream.
        "chunk": lambda: (
            lambda low, high: ((high - low) / (50 * streams), low, high)
        )(measure(binary, chunks(10), streams), measure(binary, chunks(60), streams)),
        "lambda-send": lambda: lambda_per_request(function_bin, "send", warm_small, warm_large),
        "lambda-get": lambda: lambda_per_request(function_bin, "get", warm_small, warm_large),
    }
    print(f"instructions per request of {binary or function_bin}")
    for kind in kinds_asked:
        figure, low, high = kinds[kind]()
        print(f"{kind} {figure:.0f}  (totals {low:,} and {high:,})", flush=True)


if __name__ == "__main__":
    main()
