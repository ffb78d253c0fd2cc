#!/usr/bin/env python3
"""End-to-end checks of the Lambda functions under `cargo lambda watch` (infra/lambda-local.sh),
through the local router, against moto. Standard library only.

    eval "$(infra/lambda-local.sh start)"; python3 infra/lambda-e2e.py

Covers: the card and JWKS; an inline echo send; a queued job through SQS and the worker
function to COMPLETED; SSE from `stream` (REST) and `rpc` (JSON-RPC) arriving incrementally;
subscribe with Last-Event-ID; cancel; a push delivered by the push function to a listener on
127.0.0.1; a job whose worker process dies mid-run ending terminal after redelivery.
"""
import http.client
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid

BASE = os.environ.get("A2A_BASE_URL", "http://127.0.0.1:9100").rstrip("/")
HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}


def call(method, path, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method, headers={**HEADERS, **(headers or {})})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"null")


def message(text, **config):
    body = {"message": {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": text}]}}
    if config:
        body["configuration"] = config
    return body


def sse(method, path, body=None, headers=None, limit=None):
    """Yields (arrival time, id, data) of each event; stops after `limit` events."""
    u = urllib.parse.urlsplit(BASE + path)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    conn.request(method, u.path, body=json.dumps(body) if body is not None else None,
                 headers={**HEADERS, "Accept": "text/event-stream", **(headers or {})})
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read()[:300])
    assert r.getheader("Content-Type", "").startswith("text/event-stream"), r.getheader("Content-Type")
    n, ev_id, data = 0, None, []
    try:
        while True:
            line = r.readline()
            if not line:
                return
            line = line.decode().rstrip("\r\n")
            if line.startswith("id:"):
                ev_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and data:
                yield time.monotonic(), ev_id, json.loads("\n".join(data))
                n, ev_id, data = n + 1, None, []
                if limit and n >= limit:
                    return
    finally:
        conn.close()


def state_of(ev):
    ev = ev.get("result", ev)  # JSON-RPC envelope
    if "task" in ev:
        return ev["task"]["status"]["state"]
    if "statusUpdate" in ev:
        return ev["statusUpdate"]["status"]["state"]
    return None


def wait_state(task_id, want, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        state = call("GET", f"/tasks/{task_id}")["status"]["state"]
        if state in want:
            return state
        time.sleep(0.5)
    raise AssertionError(f"task {task_id} is {state}, not {want} after {seconds} s")


def check(name, fn):
    started = time.time()
    fn()
    print(f"ok   {name} ({time.time() - started:.1f} s)", flush=True)


def card():
    c = call("GET", "/.well-known/agent-card.json")
    urls = {i["protocolBinding"]: i["url"] for i in c["supportedInterfaces"]}
    assert urls == {"JSONRPC": BASE + "/jsonrpc", "HTTP+JSON": BASE}, urls
    assert "GRPC" not in urls
    assert call("GET", "/.well-known/jwks.json")["keys"], "no signing keys"


def echo():
    t = call("POST", "/message:send", message("hello lambda"))["task"]
    assert t["status"]["state"] == "TASK_STATE_COMPLETED", t["status"]
    assert t["artifacts"][0]["parts"][0]["text"] == "hello lambda"


def queued_job():
    t = call("POST", "/message:send", message("job 2 300", returnImmediately=True))["task"]
    assert t["status"]["state"] not in TERMINAL
    wait_state(t["id"], {"TASK_STATE_COMPLETED"}, 60)


def incremental(events):
    times = [t for t, _, _ in events]
    assert len(times) >= 5, len(times)
    # Chunks 400 ms apart must arrive apart, not in one buffered burst at the end.
    assert times[-1] - times[1] > 1.0, [round(t - times[0], 2) for t in times]
    assert state_of(events[-1][2]) == "TASK_STATE_COMPLETED", events[-1][2]


def stream_rest():
    incremental(list(sse("POST", "/message:stream", message("slow 4 400"))))


def stream_rpc():
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": message("slow 4 400")}
    incremental(list(sse("POST", "/jsonrpc", body)))


def subscribe_resume():
    t = call("POST", "/message:send", message("job 4 700", returnImmediately=True))["task"]
    first = list(sse("GET", f"/tasks/{t['id']}:subscribe", limit=2))
    last_id = first[-1][1]
    assert last_id, "events carry ids"
    rest = list(sse("GET", f"/tasks/{t['id']}:subscribe", headers={"Last-Event-ID": last_id}))
    ids = [int(i) for _, i, _ in rest if i]
    assert ids and min(ids) > int(last_id), (last_id, ids)
    assert state_of(rest[-1][2]) == "TASK_STATE_COMPLETED", rest[-1][2]


def cancel():
    t = call("POST", "/message:send", message("job 20 1000", returnImmediately=True))["task"]
    c = call("POST", f"/tasks/{t['id']}:cancel", {})
    assert c["status"]["state"] == "TASK_STATE_CANCELED", c["status"]
    time.sleep(3)
    assert call("GET", f"/tasks/{t['id']}")["status"]["state"] == "TASK_STATE_CANCELED"


def push():
    received = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received.append((dict(self.headers), json.loads(body)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        t = call("POST", "/message:send", message("job 2 300", returnImmediately=True,
                                                  taskPushNotificationConfig={"url": url, "token": "tok-1"}))["task"]
        deadline = time.time() + 90
        while time.time() < deadline and not any(state_of(b) == "TASK_STATE_COMPLETED" for _, b in received):
            time.sleep(0.5)
        states = [state_of(b) for _, b in received]
        assert "TASK_STATE_COMPLETED" in states, states
        headers = {k.lower(): v for k, v in received[-1][0].items()}
        assert any("signature" in k or k == "authorization" for k in headers), headers.keys()
        assert t["id"] in json.dumps(received[-1][1])
    finally:
        server.shutdown()


def worker_pids():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    exe = os.path.join(root, "target", "debug", "worker")
    pids = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.readlink(f"/proc/{pid}/exe") == exe:
                    pids.append(int(pid))
            except OSError:
                pass
    return pids


def worker_dies():
    t = call("POST", "/message:send", message("job 30 1000", returnImmediately=True))["task"]
    wait_state(t["id"], {"TASK_STATE_WORKING"}, 60)
    pids = worker_pids()
    assert pids, "no worker process"
    for pid in pids:  # the worker function's process, started by our cargo lambda watch
        os.kill(pid, 9)
    # Redelivered after the visibility timeout (30 s locally), the lease expired: it ends.
    state = wait_state(t["id"], TERMINAL, 240)
    print(f"     worker died mid-run; after redelivery the task is {state}")


if __name__ == "__main__":
    only = sys.argv[1:]
    for name, fn in [("card", card), ("echo", echo), ("queued job", queued_job),
                     ("SSE from stream", stream_rest), ("SSE from rpc", stream_rpc),
                     ("subscribe with Last-Event-ID", subscribe_resume), ("cancel", cancel),
                     ("push", push), ("worker dies mid-run", worker_dies)]:
        # `cargo lambda watch` does not restart a function process that died (it logs
        # "command killed code=ForceStop" and later invocations fail), so the redelivered job
        # never reaches a worker: run worker_dies only when asked by name.
        if (not only and fn is not worker_dies) or fn.__name__ in only:
            check(name, fn)
