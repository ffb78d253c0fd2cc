#!/usr/bin/env python3
"""The A2A-Lite webhook channel of the Lambda functions, under `cargo lambda watch`, through the
local router, against moto. Standard library only.

Needs the functions started (infra/lambda-e2e.sh does it) with A2A_LITE_WEBHOOK_TOKEN and
A2A_LITE_WEBHOOK_REPLY_URL=http://127.0.0.1:$A2A_LITE_LISTEN_PORT/hook, with auth on (AuthMode
jwt) and A2A_LITE_PRINCIPAL the principal of A2A_TOKEN's subject; in the environment:
A2A_BASE_URL, A2A_LITE_LISTEN_PORT, A2A_LITE_TOKEN, A2A_TOKEN, A2A_OTHER_TOKEN.

This script is the chat: it POSTs outgoing webhooks to /a2a-lite/webhook (the channel function,
or behind a Function URL the relay function's URL, A2A_LITE_WEBHOOK_BASE) and listens on the reply URL, where the function
posts the agent's messages: its replies from the request itself, the status and result messages
from the push function (the task's push comes back to /a2a-lite/events and becomes a room
message there). Covers: a wrong token is 401 and nothing else; discover gets the card; a task
gets an ack and its result; a queued job its working status and result; a task waiting for
input continues; a cancel ends a job; malformed markers get a plain reply; a forged push is
refused; the tasks belong to the channel's principal (GetTask with its token, 404 for another);
an A2A task of ours delegating to an agent in the room (`delegate lite:webhook:general …`: the
worker posts the room task, the room's result through the webhook completes ours).
"""
import http.server
import json
import os
import queue
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

BASE = os.environ.get("A2A_BASE_URL", "http://127.0.0.1:9100").rstrip("/")
# Where the chat posts its webhooks (and a forger its pushes): the front door, or behind the
# Function URL the relay function's own URL (A2A_LITE_WEBHOOK_BASE), as the template's
# LiteWebhookUrl says.
HOOK_BASE = os.environ.get("A2A_LITE_WEBHOOK_BASE", BASE).rstrip("/")
PORT = int(os.environ["A2A_LITE_LISTEN_PORT"])
CHAT_TOKEN = os.environ["A2A_LITE_TOKEN"]
TOKEN = os.environ["A2A_TOKEN"]
OTHER = os.environ["A2A_OTHER_TOKEN"]
# Each run is another sender (the script runs behind both front doors on one store): its task
# ids are its own, and its chat messages new.
SENDER = f"U{uuid.uuid4().hex[:10]}"
# Queued work goes through the SQS poller, the worker, the stream poller, the fan-out and the
# push function before the room hears of it: generous, on a busy machine.
WAIT_S = 90

posted = queue.Queue()


class Chat(http.server.BaseHTTPRequestHandler):
    """The chat's incoming webhook: records each message the agent posts."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        posted.put((self.headers.get("Content-Type"), json.loads(body)))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what.splitlines()[0][:100]}")


def post_webhook(fields, content_type="application/x-www-form-urlencoded"):
    if content_type.startswith("application/json"):
        data = json.dumps(fields).encode()
    else:
        data = urllib.parse.urlencode(fields).encode()
    req = urllib.request.Request(HOOK_BASE + "/a2a-lite/webhook", data=data, method="POST",
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


counter = [0]


def say(text, user=SENDER):
    counter[0] += 1
    status, _ = post_webhook({"token": CHAT_TOKEN, "channel_id": "C1", "channel_name": "general",
                              "user_id": user, "user_name": user, "text": text,
                              "timestamp": f"1700000000.{counter[0]:06d}"})
    check(status == 200, f"the webhook takes {text!r}")


def heard():
    try:
        content_type, body = posted.get(timeout=WAIT_S)
    except queue.Empty:
        check(False, f"the agent posts to the room within {WAIT_S} s")
    check(content_type.startswith("application/json") and set(body) == {"text", "channel"},
          f"incoming-webhook JSON: {body}")
    check(body["channel"] == "general", "posted to the channel it was asked in")
    return body["text"]


def a2a_get(path, token):
    req = urllib.request.Request(BASE + path, headers={"A2A-Version": "1.0",
                                                       "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None


def a2a_post(path, token, body):
    req = urllib.request.Request(BASE + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"A2A-Version": "1.0", "Content-Type": "application/json",
                                          "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def task_of(ack):
    found = re.search(r"A2A task ([0-9a-f-]{36})", ack)
    check(found is not None, f"the ack names the A2A task: {ack}")
    return found.group(1)


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Chat)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    for fields in ({"token": "wrong", "channel_name": "general", "text": "[A2A:discover]"},
                   {"channel_name": "general", "text": "[A2A:discover]"}):
        status, body = post_webhook(fields)
        check(status == 401 and body == b"", f"a webhook without the token is 401 and nothing else ({fields})")
    forged = urllib.request.Request(
        HOOK_BASE + f"/a2a-lite/events?channel=webhook&room=general&sender={SENDER}&task=t1",
        data=json.dumps({"statusUpdate": {"taskId": "x", "contextId": "c",
                                          "status": {"state": "TASK_STATE_COMPLETED"}}}).encode(),
        method="POST", headers={"Content-Type": "application/json",
                                "X-A2A-Notification-Token": "forged"})
    try:
        urllib.request.urlopen(forged, timeout=60)
        check(False, "a forged push is refused")
    except urllib.error.HTTPError as e:
        check(e.code == 401, f"a forged push to the receiver is 401 (got {e.code})")

    say("[A2A:discover]\nwhat can you do?")
    card = heard()
    check(card.startswith("[A2A:card]\nI am ") and '"protocol": "a2a-lite/1.0"' in card,
          f"discover gets the card (nothing was posted before it): {card[:80]}")

    say("[A2A:task id=t1]\nhello from the chat")
    ack = heard()
    check(ack.startswith("[A2A:ack task=t1]\n"), f"ack: {ack}")
    result = heard()
    check(result == "[A2A:result task=t1 state=completed]\nhello from the chat", f"result: {result}")
    task_id = task_of(ack)
    status, task = a2a_get(f"/tasks/{task_id}", TOKEN)
    check(status == 200 and task["status"]["state"] == "TASK_STATE_COMPLETED",
          "the room's task is an A2A task of the channel's principal")
    check(task["history"][0]["metadata"]["a2aLite"]["room"] == "general", "with the room in its metadata")
    status, _ = a2a_get(f"/tasks/{task_id}", OTHER)
    check(status == 404, "another owner does not see it")

    say("[A2A:task id=j1]\njob 2 500")
    heard()  # the ack
    working = heard()
    check(working.startswith("[A2A:status task=j1 state=working]"), f"a queued job says it works: {working}")
    while True:
        said = heard()
        if not said.startswith("[A2A:status task=j1 state=working]"):
            break
    check(said.startswith("[A2A:result task=j1 state=completed]"), f"then its result: {said}")

    say("[A2A:task id=h1]\nhold")
    heard()  # the ack
    question = heard()
    check(question.startswith("[A2A:status task=h1 state=input-required]"), f"input-required: {question}")
    say("[A2A:task id=h1]\nmy answer")
    check(heard() == "[A2A:ack task=h1]\nReceived your answer.", "the answer is acknowledged")
    check(heard() == "[A2A:result task=h1 state=completed]\nmy answer", "and completes the task")

    # Before the long job below (cargo lambda watch runs one worker: a canceled job holds it
    # until its step ends). The other direction: an A2A task of ours delegates to an agent in the room. The worker
    # posts the room task; the room agent's result (this script, as another user) comes in
    # through the webhook, ends the durable wait, and a resume completes ours.
    sent = a2a_post("/message:send", TOKEN, {
        "message": {"role": "ROLE_USER", "messageId": str(uuid.uuid4()),
                    "parts": [{"text": "delegate lite:webhook:general summarise the thread"}]},
        "configuration": {"returnImmediately": True}})
    ours = sent["task"]["id"]
    given = heard()
    found = re.match(r"\[A2A:task id=(\S+)\]\nsummarise the thread$", given)
    check(found is not None, f"our delegate gives the room a task: {given}")
    room_task = found.group(1)
    say(f"[A2A:status task={room_task} state=working]\nreading it", user="Uroomagent")
    say(f"[A2A:result task={room_task} state=completed]\nthe thread, summarised", user="Uroomagent")
    deadline = time.time() + WAIT_S
    while True:
        status, task = a2a_get(f"/tasks/{ours}", TOKEN)
        state = task["status"]["state"] if status == 200 else status
        if state in ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED") or time.time() > deadline:
            break
        time.sleep(0.5)
    check(state == "TASK_STATE_COMPLETED", f"the room's result completes our task ({state})")
    texts = ["".join(p.get("text", "") for p in a["parts"]) for a in task.get("artifacts", [])]
    check(texts == ["the thread, summarised"], f"with the room's result as its artifact: {texts}")

    say("[A2A:task id=c1]\njob 3 60000")
    heard()  # the ack
    check(heard().startswith("[A2A:status task=c1 state=working]"), "the long job works")
    say("[A2A:cancel task=c1]")
    ended = heard()
    check(ended.startswith("[A2A:result task=c1 state=cancelled]"), f"a cancel ends it: {ended}")

    say("[A2A:task]\nno id")
    reply = heard()
    check(reply.startswith("Your A2A message was not accepted: [A2A:task] needs id=")
          and reply.endswith("Nothing was started."), f"a malformed marker is explained: {reply}")
    server.shutdown()
    print("lambda-e2e-lite: all checks passed")


if __name__ == "__main__":
    main()
