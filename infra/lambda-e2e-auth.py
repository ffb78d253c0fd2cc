#!/usr/bin/env python3
"""The Lambda functions with authentication on (AuthMode jwt), under `cargo lambda watch`,
through the local router, against moto. Standard library only.

Needs the functions started with A2A_AUTH=jwt against tests/src/bin/test-issuer.rs (see
infra/lambda-e2e.sh) and, in the environment: A2A_BASE_URL, A2A_TOKEN (every scope),
A2A_OTHER_TOKEN (another owner, every scope), A2A_READ_TOKEN (same owner as A2A_TOKEN, read only).

Covers: the card declares the scheme; missing and invalid credentials get 401 with
WWW-Authenticate on REST, JSON-RPC and the streaming routes; a missing permission gets 403;
another owner's task is TaskNotFound on every operation and absent from ListTasks; the
extended card needs a token. With A2A_CORS_ORIGIN set (the functions started with
A2A_CORS_ORIGINS naming it): answers to that origin (401s on REST and JSON-RPC, an SSE stream)
carry the functions' CORS headers, answers to another origin do not.
"""
import http.client
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid

BASE = os.environ.get("A2A_BASE_URL", "http://127.0.0.1:9100").rstrip("/")
TOKEN = os.environ["A2A_TOKEN"]
OTHER = os.environ["A2A_OTHER_TOKEN"]
READ_ONLY = os.environ["A2A_READ_TOKEN"]
CORS_ORIGIN = os.environ.get("A2A_CORS_ORIGIN")


def request(method, path, body=None, token=None, accept="application/json", extra=None):
    """(status, headers, parsed body or raw text)."""
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0", "Accept": accept, **(extra or {})}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            status, head, raw = r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        status, head, raw = e.code, dict(e.headers), e.read()
    head = {k.lower(): v for k, v in head.items()}
    try:
        return status, head, json.loads(raw or b"null")
    except ValueError:
        return status, head, raw.decode(errors="replace")


def rpc(method, params, token=None, extra=None):
    return request("POST", "/jsonrpc", {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, token,
                   extra=extra)


def message(text):
    return {"message": {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": text}]}}


def check(name, fn):
    print(f"  - {name} ...", flush=True)
    fn()
    print(f"    ok: {name}", flush=True)


def card():
    status, _, c = request("GET", "/.well-known/agent-card.json")
    assert status == 200, status
    assert c["securitySchemes"], c.get("securitySchemes")
    assert c["securityRequirements"], c.get("securityRequirements")
    assert c["capabilities"].get("extendedAgentCard") is True, c["capabilities"]
    status, _, _ = request("GET", "/extendedAgentCard")
    assert status == 401, status
    status, _, ext = request("GET", "/extendedAgentCard", token=READ_ONLY)
    assert status == 200 and ext["name"], (status, ext)


def unauthenticated():
    for token, error in [(None, None), ("not-a-jwt", "invalid_token"), (TOKEN[:-4] + "AAAA", "invalid_token")]:
        status, head, body = request("GET", "/tasks", token=token)
        assert status == 401, (status, body)
        challenge = head.get("www-authenticate", "")
        assert challenge.startswith("Bearer"), challenge
        if error:
            assert error in challenge, challenge
        assert body["error"]["status"] == "UNAUTHENTICATED", body
        # JSON-RPC: the HTTP status too, and a JSON-RPC error echoing the id.
        status, head, body = rpc("ListTasks", {}, token)
        assert status == 401, (status, body)
        assert head.get("www-authenticate", "").startswith("Bearer"), head
        assert body["id"] == 7 and body["error"]["code"] == -31401, body
        # A streaming route opens no stream for an unauthenticated caller.
        status, _, body = request("POST", "/message:stream", message("hi"), token, accept="text/event-stream")
        assert status == 401, (status, body)


def forbidden():
    status, head, body = request("POST", "/message:send", message("hi"), READ_ONLY)
    assert status == 403, (status, body)
    assert 'error="insufficient_scope"' in head.get("www-authenticate", ""), head
    assert body["error"]["status"] == "PERMISSION_DENIED", body
    status, _, body = rpc("SendMessage", message("hi"), READ_ONLY)
    assert status == 403 and body["error"]["code"] == -31403, (status, body)


def other_owners():
    status, _, sent = request("POST", "/message:send", message("hold"), TOKEN)
    assert status == 200, (status, sent)
    task = sent["task"]
    tid = task["id"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task["status"]
    # The owner sees it.
    status, _, got = request("GET", f"/tasks/{tid}", token=TOKEN)
    assert status == 200 and got["id"] == tid, (status, got)
    status, _, listed = request("GET", "/tasks", token=TOKEN)
    assert tid in [t["id"] for t in listed["tasks"]], listed
    # Another owner: absent everywhere, and nothing changes.
    for method, path, body in [
        ("GET", f"/tasks/{tid}", None),
        ("POST", f"/tasks/{tid}:cancel", {}),
        ("GET", f"/tasks/{tid}/pushNotificationConfigs", None),
        ("POST", f"/tasks/{tid}/pushNotificationConfigs", {"url": "https://example.com/hook"}),
    ]:
        status, _, body = request(method, path, body, OTHER)
        assert status == 404, (method, path, status, body)
        assert body["error"]["details"][0]["reason"] == "TASK_NOT_FOUND", body
    status, _, body = request("POST", "/message:send",
                              {"message": {**message("more")["message"], "taskId": tid}}, OTHER)
    assert status == 404, (status, body)
    status, _, listed = request("GET", "/tasks", token=OTHER)
    assert tid not in [t["id"] for t in listed.get("tasks", [])], listed
    status, _, body = rpc("GetTask", {"id": tid}, OTHER)
    assert status == 200 and body["error"]["code"] == -32001, body
    status, _, body = request("POST", f"/tasks/{tid}:subscribe", None, OTHER, accept="text/event-stream")
    assert status == 404, (status, body)
    # Still there for its owner, untouched.
    status, _, got = request("GET", f"/tasks/{tid}", token=TOKEN)
    assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", got["status"]


def streaming_with_a_token():
    u = urllib.parse.urlsplit(BASE + "/message:stream")
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request("POST", u.path, body=json.dumps(message("slow 2 50")), headers={
        "Content-Type": "application/json", "A2A-Version": "1.0", "Accept": "text/event-stream",
        "Authorization": f"Bearer {TOKEN}"})
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read()[:300])
    text = r.read().decode()
    assert "TASK_STATE_COMPLETED" in text, text[-500:]


def cors():
    # `cargo lambda watch` has a CORS layer of its own: it answers every OPTIONS itself (so
    # preflights never reach the functions here; the glue's tests run API Gateway's OPTIONS
    # events through each function's router instead) and echoes any Origin on every answer. So
    # only what the functions add shows here: the headers they expose to the allowed origin.
    def exposed(head):
        return "WWW-Authenticate" in head.get("access-control-expose-headers", "")
    status, head, _ = request("GET", "/acme/tasks", extra={"Origin": CORS_ORIGIN})
    assert status == 401 and head.get("access-control-allow-origin") == CORS_ORIGIN and exposed(head), head
    status, head, _ = request("GET", "/acme/tasks", extra={"Origin": "https://evil.example"})
    assert status == 401 and not exposed(head), (status, head)
    status, head, _ = rpc("GetTask", {"id": "t1"}, extra={"Origin": CORS_ORIGIN})
    assert status == 401 and exposed(head), (status, head)
    u = urllib.parse.urlsplit(BASE + "/message:stream")
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request("POST", u.path, body=json.dumps(message("slow 1 10")), headers={
        "Content-Type": "application/json", "A2A-Version": "1.0", "Accept": "text/event-stream",
        "Authorization": f"Bearer {TOKEN}", "Origin": CORS_ORIGIN})
    r = conn.getresponse()
    assert r.status == 200 and "A2A-Version" in (r.getheader("access-control-expose-headers") or ""), \
        (r.status, r.getheaders())
    assert "TASK_STATE_COMPLETED" in r.read().decode()

if __name__ == "__main__":
    only = sys.argv[1:]
    checks = [("the card declares the scheme", card), ("401 without valid credentials", unauthenticated),
              ("403 without the permission", forbidden), ("another owner's task is not found", other_owners),
              ("SSE with a bearer token", streaming_with_a_token)]
    if CORS_ORIGIN:
        checks.append(("CORS headers from the functions", cors))
    for name, fn in checks:
        if not only or fn.__name__ in only:
            check(name, fn)
