#!/usr/bin/env python3
"""End-to-end checks of the Lambda functions under `cargo lambda watch` (infra/lambda-local.sh),
through the local router, against moto. Standard library only.

    eval "$(infra/lambda-local.sh start)"; python3 infra/lambda-e2e.py

    python3 infra/lambda-e2e.py tenant worker_dies    # only these checks

Covers: the card and JWKS; an inline echo send; a queued job through SQS and the worker
function to COMPLETED; a blocking send of an agent that outlasts the buffered route's wait,
COMPLETED through `rpc` and `front`, handed over (WORKING, then completed once) through `send`; SSE from `stream` (REST) and `rpc` (JSON-RPC) arriving incrementally;
subscribe with Last-Event-ID; cancel; a push delivered by the push function to a listener on
127.0.0.1; the `/{tenant}` routes and JSON-RPC's `params.tenant` scoping tasks; JSON-RPC at
`/jsonrpc/`; a job whose worker process dies mid-run ending terminal after SQS redelivers it to
a fresh worker (`infra/lambda-local.sh restart-watch` replaces the dead process); the signed card;
the A2A 1.1 draft (long-polling GetTask on both bindings, ifGenerationMatch); push config secrets
not read back; a delegated task waiting for a slow remote agent (an a2a-local on 127.0.0.1) with
no function running, its worker killed mid-wait, and the invocations and billed milliseconds of
every function meanwhile (A2A_E2E_DELEGATE_SECS, 60 by default); and answers lost after the work
was done (the worker's, the fan-out's: a2a-lambda-freezer's `POST /faults`), retried as Lambda's
event sources retry, with nothing run or pushed twice.
"""
import http.client
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

BASE = os.environ.get("A2A_BASE_URL", "http://127.0.0.1:9100").rstrip("/")
HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
STATE = os.path.join(ROOT, ".venv-lambda", "run")  # infra/lambda-local.sh's pids, logs, env file
# The core ends a task FAILED on the receive after this many (ServiceConfig::max_job_receives);
# the work queue's redrive moves a message to the dead-letter queue after 6 receives.
MAX_JOB_RECEIVES = 5


def call(method, path, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method, headers={**HEADERS, **(headers or {})})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"null")


def status_of(method, path, body=None):
    """(HTTP status, JSON body) without raising on an error status."""
    try:
        return 200, call(method, path, body)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def reason(body):
    """The A2A error reason of a REST error body (google.rpc.Status with an ErrorInfo)."""
    details = ((body or {}).get("error") or {}).get("details") or [{}]
    return details[0].get("reason")


def rpc(method, params, path="/jsonrpc"):
    r = call("POST", path, {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params})
    return r.get("result"), r.get("error")


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


def request_limits():
    """AWS's request limits at the front door: a 7 MB send never reaches a function (Lambda's
    6 MB event), a 2 MB one does and the function refuses it with its own 1 MiB limit."""
    door = open(os.path.join(STATE, "front-door")).read().strip()
    code, body = status_of("POST", "/message:send", message("x" * 7_000_000))
    assert code == 413, (code, body)
    if door == "FunctionUrl":
        assert "smaller than 6291456 bytes" in body["Message"], body
    else:
        assert body == {"message": "Request Too Long"}, body
    code, body = status_of("POST", "/message:send", message("x" * 2_000_000))
    assert code == 413, (code, body)
    assert "error" in body and "Request Too Long" not in json.dumps(body), body


def queued_job():
    t = call("POST", "/message:send", message("job 2 300", returnImmediately=True))["task"]
    assert t["status"]["state"] not in TERMINAL
    wait_state(t["id"], {"TASK_STATE_COMPLETED"}, 60)


def buffered_wait():
    """How long a blocking send waits on the buffered REST route behind API Gateway: the
    template's BlockingTimeoutSeconds (its default, as the local stack is deployed)."""
    template = open(os.path.join(ROOT, "template.yaml")).read()
    found = re.search(r"\n  BlockingTimeoutSeconds:\n(?:    .*\n)*?    Default: (\d+)\n", template)
    return int(found.group(1))


def blocking_sends():
    """Issue 45, item 3: a blocking SendMessage waits as long as its front door allows. An agent
    that outlasts the buffered route's wait (BlockingTimeoutSeconds; a queued `job`, 6 s
    longer) answers COMPLETED through JSON-RPC behind API Gateway (the streaming `rpc`
    function, 240 s) and through the Function URL (the `front` function, 840 s); through the
    buffered REST `send` behind API Gateway it is handed over: the answer is the task WORKING,
    and the worker, which ran the agent once, completes it. Were rpc or front given the
    buffered route's wait, they would answer WORKING too, and this check fail."""
    buffered = buffered_wait()
    # Two steps, together 6 s past the buffered wait: a send that waits only that long answers
    # WORKING, and the check takes no longer than that allows.
    step_ms = (buffered + 6) * 1000 // 2
    text = f"job 2 {step_ms}"
    offset = os.path.getsize(os.path.join(STATE, "poller-work.log"))
    answers = {}
    # Behind API Gateway JSON-RPC and REST reach two functions (`rpc`, `send`); behind the
    # Function URL both reach `front`, so one send shows its wait. One after the other: the
    # local runs have one worker instance, where a second job would wait out its visibility
    # (20 s here) behind the first and be handed out again.
    handed_over = front_door() == "ApiGateway"
    for kind in ["rest", "rpc"] if handed_over else ["rest"]:
        if kind == "rpc":
            result, error = rpc("SendMessage", message(text))
            assert error is None, error
            task = result["task"]
        else:
            task = call("POST", "/message:send", message(text))["task"]
        answers[kind] = task
        state = task["status"]["state"]
        if kind == "rest" and handed_over:
            # The buffered route answered at its deadline, the agent still running.
            assert state == "TASK_STATE_WORKING", (kind, task["status"])
            state = wait_state(task["id"], TERMINAL, buffered + 60)
        assert state == "TASK_STATE_COMPLETED", (kind, state, task["status"])
        done = call("GET", f"/tasks/{task['id']}")
        reports = [p.get("text") for a in done.get("artifacts", []) for p in a["parts"]]
        assert reports == ["job finished: 2 steps"], (kind, reports)
        # One run of the agent, on the worker: the answer at the deadline ran nothing again.
        wait_for(f"the job of the {kind} send deleted",
                 lambda: (deliveries(task["id"], offset) or [(0, "")])[-1][1] == "done, deleted", 15)
        seen = deliveries(task["id"], offset)
        assert [n for n, what in seen if what == "received"] == [1], (kind, seen)
    print(f"     buffered wait {buffered} s, the agent {2 * step_ms / 1000:.0f} s: "
          + ", ".join(f"{k} answered {t['status']['state'].removeprefix('TASK_STATE_')}"
                      for k, t in sorted(answers.items())))


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


def webhook():
    """A webhook listener on 127.0.0.1 answering 200: (server, its URL, the (headers, body)
    pairs it received). The caller shuts the server down."""
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
    return server, f"http://127.0.0.1:{server.server_address[1]}/hook", received


def push():
    server, url, received = webhook()
    try:
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


def jsonrpc_slash():
    # The card's JSON-RPC URL is BASE/jsonrpc; a client that adds a slash reaches the same
    # function (API Gateway matches /jsonrpc/ to the /jsonrpc resource, and so does the router).
    for path in ("/jsonrpc", "/jsonrpc/"):
        result, error = rpc("ListTasks", {"pageSize": 1}, path)
        assert error is None and "tasks" in result, (path, error, result)


def tenant():
    """The REST binding's /{tenant} prefix and JSON-RPC's params.tenant scope the tasks."""
    t = call("POST", "/acme/message:send", message("hello acme"))["task"]
    assert t["status"]["state"] == "TASK_STATE_COMPLETED", t["status"]
    tid = t["id"]
    assert call("GET", f"/acme/tasks/{tid}")["id"] == tid
    for path in (f"/tasks/{tid}", f"/other/tasks/{tid}"):
        code, body = status_of("GET", path)
        # The function's TaskNotFound, not the router's "no route".
        assert (code, reason(body)) == (404, "TASK_NOT_FOUND"), (path, code, body)
    listed = [x["id"] for x in call("GET", "/acme/tasks")["tasks"]]
    assert tid in listed, listed
    assert tid not in [x["id"] for x in call("GET", "/other/tasks")["tasks"]]
    # JSON-RPC carries the tenant in params: the same task, and only in that tenant.
    result, error = rpc("GetTask", {"id": tid, "tenant": "acme"})
    assert error is None and result["id"] == tid, (error, result)
    result, error = rpc("GetTask", {"id": tid})
    assert result is None and error["code"] == -32001, (error, result)  # TaskNotFoundError
    # Created over JSON-RPC in a tenant, found over REST under its prefix.
    result, error = rpc("SendMessage", {**message("hold"), "tenant": "acme"})
    assert error is None, error
    held = result["task"]["id"]
    assert call("GET", f"/acme/tasks/{held}")["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    # The other functions under the prefix: push-config, cancel (streaming), stream, card.
    hook = {"url": "http://127.0.0.1:9/hook", "token": "tok-acme"}
    cfg = call("POST", f"/acme/tasks/{held}/pushNotificationConfigs", hook)
    assert cfg["taskId"] == held, cfg
    configs = call("GET", f"/acme/tasks/{held}/pushNotificationConfigs")["configs"]
    assert [c["id"] for c in configs] == [cfg["id"]], configs
    assert call("GET", f"/acme/tasks/{held}/pushNotificationConfigs/{cfg['id']}")["id"] == cfg["id"]
    code, body = status_of("GET", f"/tasks/{held}/pushNotificationConfigs/{cfg['id']}")
    assert (code, reason(body)) == (404, "TASK_NOT_FOUND"), (code, body)
    call("DELETE", f"/acme/tasks/{held}/pushNotificationConfigs/{cfg['id']}")
    assert call("POST", f"/acme/tasks/{held}:cancel", {})["status"]["state"] == "TASK_STATE_CANCELED"
    events = list(sse("POST", "/acme/message:stream", message("slow 2 50")))
    streamed = events[0][2]["task"]["id"]
    assert state_of(events[-1][2]) == "TASK_STATE_COMPLETED", events[-1][2]
    assert call("GET", f"/acme/tasks/{streamed}")["id"] == streamed
    # Served by the card function (the demo agent has no extended card), not the router's 404.
    code, body = status_of("GET", "/acme/extendedAgentCard")
    assert code == 200 or reason(body) == "UNSUPPORTED_OPERATION", (code, body)


def target_dir():
    # Where `cargo build` (run from the repository root by infra/lambda-local.sh) puts binaries.
    return os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR") or "target")


def worker_pids():
    """The worker function's processes started by our `cargo lambda watch` (its children)."""
    exe = os.path.join(target_dir(), "debug", "worker")
    try:
        watch = int(open(os.path.join(STATE, "watch.pid")).read())
    except (OSError, ValueError):
        return []
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            path = os.readlink(f"/proc/{pid}/exe")
            ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        # A binary rebuilt while it runs reads as "… (deleted)".
        if path.removesuffix(" (deleted)") == exe and ppid == watch:
            pids.append(int(pid))
    return pids


def local_env():
    """The environment, completed by the functions' env file (queue URLs, moto's endpoint)."""
    env = dict(os.environ)
    try:
        for line in open(os.path.join(STATE, "lambda.env")):
            k, _, v = line.strip().partition("=")
            if k and not k.startswith("#"):
                env.setdefault(k, v)
    except OSError:
        pass
    return env


def sqs(action, **params):
    """An SQS call to moto (JSON protocol; moto checks no signature)."""
    req = urllib.request.Request(local_env()["AWS_ENDPOINT_URL"].rstrip("/") + "/", method="POST",
                                 data=json.dumps(params).encode(), headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AmazonSQS.{action}",
        "Authorization": "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sqs/aws4_request, "
                         "SignedHeaders=host, Signature=0"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def queue_depth(url):
    attrs = sqs("GetQueueAttributes", QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])


def deliveries(task_id, log_offset):
    """What the work poller logged about the task's job since `log_offset`: (receive, what)."""
    with open(os.path.join(STATE, "poller-work.log"), errors="replace") as f:
        f.seek(log_offset)
        text = f.read()
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # tracing's colours
    # One line per step, its fields after the message: `… a2a_sqs_poller: <what> function=…
    # message_id=… task_id=<task> receive=<n>`.
    fields = rf" function=\S+ message_id=\S+ task_id={re.escape(task_id)} receive=(\d+)"
    return [(int(n), what) for what, n in re.findall(r": ([^\n]*?)" + fields, text)]


def worker_dies():
    """Lambda replaces an execution environment that dies mid-invocation; SQS hands the job out
    again after its visibility timeout. Here: kill the worker process while the task is WORKING,
    replace the processes (restart-watch), and follow the job to the end."""
    work_url = local_env()["A2A_WORK_QUEUE_URL"]
    redrive = sqs("GetQueueAttributes", QueueUrl=work_url, AttributeNames=["RedrivePolicy"])["Attributes"]
    redrive = json.loads(redrive["RedrivePolicy"])
    # SQS moves a message to the DLQ when it is received more often than this: the core must
    # have failed the task before (MAX_JOB_RECEIVES + 1 receives).
    assert int(redrive["maxReceiveCount"]) > MAX_JOB_RECEIVES, redrive
    dlq_url = sqs("GetQueueUrl", QueueName=redrive["deadLetterTargetArn"].rsplit(":", 1)[1])["QueueUrl"]
    dlq_before = queue_depth(dlq_url)
    log = os.path.join(STATE, "poller-work.log")
    offset = os.path.getsize(log)
    # The re-run outlives the visibility timeout (A2A_WORK_VISIBILITY_SECS, 20 s locally): only
    # the fresh worker's heartbeat keeps the job from being handed out once more meanwhile.
    visibility = int(local_env().get("A2A_WORK_VISIBILITY_SECS", "20"))
    assert visibility <= 60, f"A2A_WORK_VISIBILITY_SECS={visibility}: the redelivery would take that long"
    steps, step_ms = visibility // 2 + 1, 2000
    t = call("POST", "/message:send", message(f"job {steps} {step_ms}", returnImmediately=True))["task"]
    tid = t["id"]
    wait_state(tid, {"TASK_STATE_WORKING"}, 60)
    pids = worker_pids()
    assert pids, f"no worker process under cargo lambda watch ({os.path.join(target_dir(), 'debug', 'worker')})"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    deadline = time.time() + 10
    while worker_pids() and time.time() < deadline:
        time.sleep(0.1)
    assert not worker_pids(), "the worker did not die"
    at = call("GET", f"/tasks/{tid}")["status"]
    assert at["state"] == "TASK_STATE_WORKING", at  # nobody finishes it now
    # Lambda would start a fresh environment for the next invocation; watch 1.9.2 does not.
    subprocess.run([os.path.join(ROOT, "infra", "lambda-local.sh"), "restart-watch"], check=True,
                   stdout=subprocess.DEVNULL)
    # Redelivery after the visibility, a retry or two while the lease runs out, the re-run.
    state = wait_state(tid, TERMINAL, 2 * visibility + steps * step_ms / 1000 + 60)
    took = time.monotonic() - killed
    task = call("GET", f"/tasks/{tid}")
    # The lease of the dead worker ran out, so the redelivered job ran the agent again, from its
    # message, to the end: COMPLETED (a job that keeps dying would end FAILED on receive 6).
    assert state == "TASK_STATE_COMPLETED", task["status"]
    assert any(p.get("text") == f"job finished: {steps} steps" for a in task.get("artifacts", []) for p in a["parts"]), task
    # The task ends a moment before the invocation returns and the poller deletes the message.
    deadline = time.time() + 15
    while True:
        seen = deliveries(tid, offset)
        if (seen and seen[-1][1] == "done, deleted") or time.time() > deadline:
            break
        time.sleep(0.2)
    receives = [n for n, what in seen if what == "received"]
    assert receives and receives[0] == 1, seen
    assert max(receives) >= 2, f"the job was not redelivered: {seen}"
    assert max(receives) <= MAX_JOB_RECEIVES, f"too many receives, the core would fail the task: {seen}"
    # The receive that ran the job to the end was the last one: its heartbeat held it for longer
    # than the visibility timeout.
    assert seen[-1] == (max(receives), "done, deleted"), seen
    # Nothing left behind: the job is deleted, not waiting for another receive or dead-lettered.
    assert queue_depth(work_url) == 0, "the work queue is not empty"
    assert queue_depth(dlq_url) == dlq_before, "the job went to the dead-letter queue"
    retries = sum(1 for _, what in seen if what == "reported for retry")
    print(f"     killed at {at.get('message', {}).get('parts', [{}])[0].get('text', '?')}; receives {receives} "
          f"({retries} retried while the dead worker's lease ran out); COMPLETED {took:.0f} s after the kill")


# router-relay.log: the relay function's URL behind the front door FunctionUrl (a second router).
INVOKERS = ("router.log", "router-relay.log", "poller-work.log", "poller-push.log", "poller-stream.log")


def log_offsets():
    """Where each invoker's log ends now (the router, the SQS pollers, the stream poller)."""
    return {name: os.path.getsize(os.path.join(STATE, name)) for name in INVOKERS}


def log_since(name, offsets):
    with open(os.path.join(STATE, name), errors="replace") as f:
        f.seek(offsets[name])
        return re.sub(r"\x1b\[[0-9;]*m", "", f.read())  # tracing's colours


def invocations(offsets, task=None):
    """{function: [invocations, billed ms]} of every invocation that ended since `offsets` (only
    those for `task`, if given), as the invokers log them (`invocation ended function=…
    billed_ms=… tasks=…`, a2a_lambda_tools::Invocation: from the event handed over to the
    answer's last byte, rounded up to the millisecond)."""
    seen = {}
    for name in INVOKERS:
        found = re.findall(r"invocation ended function=(\S+) billed_ms=(\d+) tasks=(\S+)", log_since(name, offsets))
        for function, ms, tasks in found:
            if task is not None and task not in tasks.split(","):
                continue
            count = seen.setdefault(function, [0, 0])
            count[0] += 1
            count[1] += int(ms)
    return seen


def workers_in_flight(offsets, task):
    """Worker invocations for `task` handed their job since `offsets` that have not answered."""
    text = log_since("poller-work.log", offsets)
    handed = len(re.findall(rf"received function=worker message_id=\S+ task_id={re.escape(task)} ", text))
    return handed - invocations(offsets, task).get("worker", [0])[0]


def free_port():
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def remote_agent(tmp):
    """A second agent on 127.0.0.1 for ours to call: a2a-local on its own embedded store (the
    functions allow 127.0.0.1 and http for agents: a2a-lambda-setup's env file). Its pushes to
    our relay route go through the router to the send function (the relay function's own URL
    behind a Function URL), as a remote agent's would reach the deployed stack."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("A2A_", "AWS_"))}
    env["RUST_LOG"] = "warn"
    log = open(os.path.join(STATE, "remote-agent.log"), "ab")
    proc = subprocess.Popen([os.path.join(target_dir(), "debug", "a2a-local"), "--addr", f"127.0.0.1:{port}",
                             "--data-dir", tmp], env=env, stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/.well-known/agent-card.json", timeout=5).read()
            return proc, url
        except (urllib.error.URLError, ConnectionError):
            if proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"the remote agent did not start (see {log.name})")
            time.sleep(0.2)


def remote_tasks(url):
    req = urllib.request.Request(url + "/tasks?pageSize=5", headers=HEADERS)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def delegation(seconds, kill):
    """Our task delegates `slow 3 …` (`seconds` long) to a remote a2a-local and is queued
    (returnImmediately): the worker sends to the remote and parks; the remote's pushes reach
    our relay route (the send function behind API Gateway, the relay one behind a Function URL)
    and stream into our task; when the remote ends, a resume job runs the worker again and our
    task completes with its answer. Followed through the invokers' logs, not by polling, so
    that the window holds only the task's own invocations. With `kill`, the worker process is
    killed as soon as the task parks and replaced (as Lambda replaces a lost environment).
    Returns (seconds waited, {function: [invocations, billed ms]} from the send to the end)."""
    import tempfile
    chunks = 3
    step_ms = seconds * 1000 // chunks
    with tempfile.TemporaryDirectory() as tmp:
        remote, remote_url = remote_agent(tmp)
        try:
            offsets = log_offsets()
            work_offset = offsets["poller-work.log"]
            t = call("POST", "/message:send", message(
                f"delegate {remote_url} slow {chunks} {step_ms}", returnImmediately=True))["task"]
            tid = t["id"]

            def done_jobs():
                return sum(1 for _, what in deliveries(tid, work_offset) if what == "done, deleted")

            # Parked: the worker's invocation that sent to the remote has ended (its job done).
            deadline = time.time() + 60
            while done_jobs() < 1:
                assert time.time() < deadline, f"the worker never parked: {deliveries(tid, work_offset)}"
                time.sleep(0.2)
            parked = time.monotonic()
            assert [x["status"]["state"] for x in remote_tasks(remote_url)["tasks"]] == ["TASK_STATE_WORKING"]
            if kill:
                for pid in worker_pids():
                    os.kill(pid, signal.SIGKILL)
                deadline = time.time() + 10
                while worker_pids() and time.time() < deadline:
                    time.sleep(0.1)
                assert not worker_pids(), "the worker did not die"
                subprocess.run([os.path.join(ROOT, "infra", "lambda-local.sh"), "restart-watch"], check=True,
                               stdout=subprocess.DEVNULL)
            else:
                # Mid-wait: the remote's first pushes (WORKING, a chunk) relayed by the send
                # function while it still works, and no worker invocation running.
                deadline = time.time() + seconds + 30
                while invocations(offsets, tid).get(relay_function(), [0])[0] < 2:
                    assert time.time() < deadline, invocations(offsets, tid)
                    time.sleep(0.2)
                assert workers_in_flight(offsets, tid) == 0, log_since("poller-work.log", offsets)[-2000:]
                assert remote_tasks(remote_url)["tasks"][0]["status"]["state"] == "TASK_STATE_WORKING"
            # The end: the resume job done (it answers a moment after the task ends).
            deadline = time.time() + seconds + 120
            while done_jobs() < 2:
                assert time.time() < deadline, f"no resume: {deliveries(tid, work_offset)}"
                time.sleep(0.2)
            waited = time.monotonic() - parked
            counts = invocations(offsets, tid)
        finally:
            remote.terminate()
            remote.wait(10)
    task = call("GET", f"/tasks/{tid}")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    texts = ["".join(p.get("text", "") for p in a["parts"]) for a in task.get("artifacts", [])]
    assert texts == ["".join(f"chunk-{i} " for i in range(1, chunks + 1))], texts
    # Two worker invocations for the task: the one that sent and parked, and the resume.
    runs = [n for n, what in deliveries(tid, work_offset) if what == "received"]
    assert runs == [1, 1], deliveries(tid, work_offset)
    return waited, counts


def relay_function():
    """The function the remote's pushes reach: the send function behind API Gateway; behind the
    Function URL the relay function, on its own URL and reserved concurrency (the relay URLs
    point there: A2A_RELAY_BASE_URL)."""
    return "relay" if front_door() == "FunctionUrl" else "send"


def delegate_waits():
    """A delegated task waits for a slow agent with no function running (issue 28's wait for
    free): while the remote works A2A_E2E_DELEGATE_SECS (60 by default), the only invocations
    are the relay route's, one per push the remote sends, and the worker runs twice (the send
    and the resume). Prints every function's invocations and billed milliseconds."""
    seconds = int(os.environ.get("A2A_E2E_DELEGATE_SECS", "60"))
    waited, counts = delegation(seconds, kill=False)
    assert counts.get("worker", [0])[0] == 2, counts
    relayed = counts.get(relay_function(), [0])[0]
    # The remote's pushes: WORKING, three chunks, COMPLETED.
    assert 4 <= relayed <= 6, counts
    # The task has no push config: the fan-out and push functions have nothing of it.
    mine = counts
    billed = sum(ms for _, ms in mine.values())
    detail = ", ".join(f"{f} {n} ({ms} ms)" for f, (n, ms) in sorted(mine.items()))
    print(f"     waited {waited:.0f} s for the remote; invocations from the send to the end: {detail}; "
          f"{billed} ms billed in all (debug build under cargo lambda watch)")


def delegate_worker_dies():
    """The worker process is gone while a delegated task waits: the remote's answer still
    completes the task, through a fresh worker."""
    waited, _ = delegation(20, kill=True)
    print(f"     the worker was killed as the task parked and replaced; COMPLETED {waited:.0f} s later")


def signed_card():
    """The card function signs the card with the keys it reads (it never creates one)."""
    c = call("GET", "/.well-known/agent-card.json")
    keys = {k["kid"] for k in call("GET", "/.well-known/jwks.json")["keys"]}
    assert c.get("signatures"), "the card is not signed"
    for s in c["signatures"]:
        text = s["protected"] + "=" * (-len(s["protected"]) % 4)
        header = json.loads(__import__("base64").urlsafe_b64decode(text))
        assert header["kid"] in keys and header["typ"] == "JOSE", header
        assert header["jku"] == BASE + "/.well-known/jwks.json", header
    # 0.3 is served by default (Protocol03 on), so its interface is listed too.
    versions = sorted({i["protocolVersion"] for i in c["supportedInterfaces"]})
    assert versions == ["0.3", "1.0", "1.1"], versions


V11 = {"A2A-Version": "1.1"}


def front_door():
    """The front door infra/lambda-local.sh's router plays (ApiGateway or FunctionUrl)."""
    try:
        with open(os.path.join(STATE, "front-door")) as f:
            return f.read().strip()
    except FileNotFoundError:
        return "ApiGateway"


def draft_1_1():
    """The A2A 1.1 draft through the functions: generations, long-polling GetTask on both
    bindings (`get` and `rpc`), ifGenerationMatch (409 / -32010); a 1.0 client sees none of it."""
    held = call("POST", "/message:send", message("hold"), V11)["task"]
    gen = int(held["generation"])
    assert "generation" not in call("GET", f"/tasks/{held['id']}"), "a 1.0 client sees a generation"
    # Stale: refused, nothing changes.
    stale = message("late", ifGenerationMatch=str(gen - 1))
    stale["message"]["taskId"] = held["id"]
    code, body = status_of_v("POST", "/message:send", stale, V11)
    assert (code, reason(body)) == (409, "TASK_GENERATION_MISMATCH"), (code, body)
    r = call("POST", "/jsonrpc", {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": stale}, V11)
    assert r["error"]["code"] == -32010, r
    assert int(call("GET", f"/tasks/{held['id']}", headers=V11)["generation"]) == gen
    # A long poll on each binding, held until the follow-up moves the task on.
    polls = {}

    def poll(kind):
        if kind == "rest":
            polls[kind] = call("GET", f"/tasks/{held['id']}?currentGeneration={gen}", headers=V11)
        else:
            r = call("POST", "/jsonrpc", {"jsonrpc": "2.0", "id": "2", "method": "GetTask",
                                          "params": {"id": held["id"], "currentGeneration": str(gen)}}, V11)
            polls[kind] = r["result"]

    # cargo lambda watch runs one instance per function: behind the Function URL every request
    # goes to the one front function, where a held poll would queue the follow-up it waits for
    # (Lambda runs it on another instance). There the polls come after the follow-up, and must
    # answer at once with the later generation; behind API Gateway they are held.
    fresh = message("now", ifGenerationMatch=gen)
    fresh["message"]["taskId"] = held["id"]
    threads = [threading.Thread(target=poll, args=(k,)) for k in ("rest", "rpc")]
    if front_door() == "FunctionUrl":
        done = call("POST", "/message:send", fresh, V11)["task"]
        for t in threads:
            t.start()
    else:
        for t in threads:
            t.start()
        done = call("POST", "/message:send", fresh, V11)["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done["status"]
    for t in threads:
        t.join(60)
    for kind, task in polls.items():
        assert int(task["generation"]) > gen, (kind, task.get("generation"))
    assert set(polls) == {"rest", "rpc"}, polls.keys()


def status_of_v(method, path, body, headers):
    try:
        return 200, call(method, path, body, headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def push_secrets():
    """Push config secrets are written, never read back (the push-config function)."""
    held = call("POST", "/message:send", message("hold"))["task"]
    cfg = call("POST", f"/tasks/{held['id']}/pushNotificationConfigs",
               {"url": "http://127.0.0.1:9/hook", "token": "tok-secret",
                "authentication": {"scheme": "Bearer", "credentials": "cred-secret"}})
    got = call("GET", f"/tasks/{held['id']}/pushNotificationConfigs/{cfg['id']}")
    listed = call("GET", f"/tasks/{held['id']}/pushNotificationConfigs")
    for answer in (got, listed):
        text = json.dumps(answer)
        assert "tok-secret" not in text and "cred-secret" not in text, text
    assert got["authentication"]["scheme"] == "Bearer", got


def faults(lose=None):
    """The freezer's lost answers (a2a-lambda-freezer, `POST /faults`): with `lose` (function,
    count), the next `count` invocations of that function run and their answers are lost."""
    url = os.environ["A2A_WATCH_URL"].rstrip("/") + "/faults"
    body = None
    if lose is not None:
        body = json.dumps({"function": lose[0], "lose": lose[1]}).encode()
    req = urllib.request.Request(url, data=body, method="POST" if body else "GET",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def wait_for(what, predicate, seconds):
    """Polls `predicate` until it holds; fails, saying `what`, after `seconds`."""
    deadline = time.time() + seconds
    while not predicate():
        if time.time() > deadline:
            raise AssertionError(f"{what}: not within {seconds} s")
        time.sleep(0.2)


def lost_answers():
    """A function that did its work but whose answer was lost: Lambda counts a function error
    and its event source retries. The worker's job comes back from SQS after its visibility
    timeout, once its run left the task waiting for input: it runs nothing again (the task is
    as the first run left it). The fan-out's stream batch is handed over again: no event is
    pushed twice."""
    # The worker.
    offset = os.path.getsize(os.path.join(STATE, "poller-work.log"))
    visibility = int(local_env().get("A2A_WORK_VISIBILITY_SECS", "20"))
    faults(("worker", 1))
    t = call("POST", "/message:send", message("hold", returnImmediately=True))["task"]
    tid = t["id"]
    wait_state(tid, {"TASK_STATE_INPUT_REQUIRED"}, 60)
    first = call("GET", f"/tasks/{tid}")
    assert faults()["lost"].get("worker", 0) >= 1, faults()
    wait_for(f"the job of {tid} handed out again and deleted",
             lambda: any(n >= 2 and what == "done, deleted" for n, what in deliveries(tid, offset)),
             2 * visibility + 60)
    again = call("GET", f"/tasks/{tid}")
    assert again == first, f"the job ran again: {first} then {again}"
    call("POST", f"/tasks/{tid}:cancel", {})

    # The fan-out.
    server, url, received = webhook()
    try:
        offsets = log_offsets()
        lost_before = faults()["lost"].get("fanout", 0)
        faults(("fanout", 1))
        # Steps of 3 s: the fan-out's first batch (lost, then handed over again a second later)
        # holds the task's first writes, and its COMPLETED comes in a later batch. The push
        # queue is FIFO per task, so once COMPLETED is pushed every job queued before it
        # (a copy of the retried batch's, had SQS not dropped it) was pushed too.
        t = call("POST", "/message:send", message("job 2 3000", returnImmediately=True,
                                                  taskPushNotificationConfig={"url": url, "token": "tok-2"}))["task"]
        wait_for("the fan-out's answer lost, and its batch handed over again",
                 lambda: faults()["lost"].get("fanout", 0) > lost_before
                 and invocations(offsets).get("fanout", [0])[0] >= 2, 60)
        assert call("GET", f"/tasks/{t['id']}")["status"]["state"] not in TERMINAL, \
            "the task ended before the fan-out's batch came back: COMPLETED would not be last"
        wait_for("the COMPLETED push",
                 lambda: any(state_of(b) == "TASK_STATE_COMPLETED" for _, b in received), 90)
        bodies = [json.dumps(b, sort_keys=True) for _, b in received]
        assert len(bodies) == len(set(bodies)), f"an event was pushed twice: {bodies}"
        print(f"     the worker's job came back and ran nothing; {len(bodies)} pushes, none twice, "
              f"after the fan-out's retried batch")
    finally:
        server.shutdown()


def exported_spans(trace_id):
    """The spans of trace `trace_id` the OTLP receiver wrote (A2A_E2E_SPANS_FILE)."""
    with open(os.environ["A2A_E2E_SPANS_FILE"]) as f:
        return [s for s in map(json.loads, f) if s["trace_id"] == trace_id]


def spans():
    """The functions' spans (SpanExport; docs/tracing.md, "On Lambda"), exported to the OTLP
    receiver infra/lambda-e2e.sh runs: in the caller's trace, signed for X-Ray when
    A2A_E2E_SPANS_SIGNED says so, and there as soon as the answer is: the freezer stops a
    function once its answer is sent, so a span the exporter had not flushed by then would
    never come. A blocking send (buffered behind API Gateway, streamed by the front function),
    a stream (there once its end is), and a queued job's run in the worker."""
    signed = os.environ.get("A2A_E2E_SPANS_SIGNED", "")

    def traced():
        trace_id, caller = uuid.uuid4().hex, uuid.uuid4().hex[:16]
        return trace_id, caller, {"traceparent": f"00-{trace_id}-{caller}-01"}

    def server_span(trace_id, caller, name):
        got = exported_spans(trace_id)
        ops = [s for s in got if s["name"] == name and s["kind"] == "SPAN_KIND_SERVER"]
        assert len(ops) == 1, f"one {name} span of trace {trace_id} when the answer came: {got}"
        assert ops[0]["parent_span_id"] == caller, ops[0]
        for s in got:
            if signed:
                assert s["signature"].startswith("valid ") and f"/{signed}/aws4_request" in s["signature"], s
            else:
                assert s["signature"] == "absent", s
        return ops[0], got

    trace_id, caller, headers = traced()
    task = call("POST", "/message:send", message("hello"), headers)["task"]
    op, got = server_span(trace_id, caller, "SendMessage")
    assert op["attributes"]["a2a.task.id"] == task["id"], op
    assert op["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED", op
    assert any(s["name"] == "invoke_agent" and s["parent_span_id"] == op["span_id"] for s in got), got
    print(f"     a blocking echo: {len(got)} spans, {op['export_bytes']} bytes exported", flush=True)

    trace_id, caller, headers = traced()
    events = list(sse("POST", "/message:stream", message("slow 3 10"), headers))
    assert state_of(events[-1][2]) == "TASK_STATE_COMPLETED", events[-1]
    server_span(trace_id, caller, "SendStreamingMessage")

    trace_id, caller, headers = traced()
    task = call("POST", "/message:send", message("job 1 100", returnImmediately=True), headers)["task"]
    op, _ = server_span(trace_id, caller, "SendMessage")
    wait_state(task["id"], {"TASK_STATE_COMPLETED"}, 60)
    # The worker's answer (and so its flush) may come a moment after the task's last write.
    ran = lambda: [s for s in exported_spans(trace_id)
                   if s["name"] == "invoke_agent" and s["service"] != op["service"]]
    wait_for("the worker's invoke_agent span", ran, 30)
    assert ran()[0]["attributes"].get("a2a.task.id", task["id"]) == task["id"], ran()


def no_timeouts():
    """No invocation reached its function's Timeout in the checks before (the freezer ends such an
    invocation as Lambda does, and counts it): work Lambda would have ended fails here."""
    timed_out = faults()["timed_out"]
    assert not timed_out, f"invocations ended at their function's Timeout: {timed_out}"


CHECKS = [("card", card), ("signed card", signed_card), ("A2A 1.1 draft", draft_1_1),
          ("push config secrets", push_secrets), ("echo", echo),
          ("AWS's request limits", request_limits), ("queued job", queued_job),
          ("blocking sends wait as long as each front door allows", blocking_sends),
          ("SSE from stream", stream_rest), ("SSE from rpc", stream_rpc),
          ("subscribe with Last-Event-ID", subscribe_resume), ("cancel", cancel),
          ("push", push), ("JSON-RPC at /jsonrpc/", jsonrpc_slash), ("tenant routes", tenant),
          ("a delegated task waits for free", delegate_waits),
          ("the worker dies while a delegated task waits", delegate_worker_dies),
          ("worker dies mid-run", worker_dies), ("answers lost, invocations retried", lost_answers),
          ("no invocation reached its timeout", no_timeouts)]
# Only when the functions export spans (infra/lambda-e2e.sh's phases that turn it on).
if os.environ.get("A2A_E2E_SPANS_FILE"):
    CHECKS.insert(-1, ("spans exported before each answer", spans))


if __name__ == "__main__":
    only = sys.argv[1:]
    unknown = set(only) - {fn.__name__ for _, fn in CHECKS}
    if unknown:
        sys.exit(f"unknown checks {sorted(unknown)}; these exist: {[fn.__name__ for _, fn in CHECKS]}")
    for name, fn in CHECKS:
        if not only or fn.__name__ in only:
            check(name, fn)
