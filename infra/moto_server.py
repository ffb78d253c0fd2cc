"""moto's server (DynamoDB + SQS on 127.0.0.1) with DynamoDB requests made atomic.

moto_server handles requests on threads, and its DynamoDB backend is not safe under them: a
conditional write checks, then writes, without a lock, and a cancelled TransactWriteItems rolls
back by restoring a copy of the whole table taken when it started, erasing any write that landed
meanwhile. Concurrent writers therefore lose updates on moto that DynamoDB itself (where every
request, and every transaction, is atomic) never loses.

This launcher runs the same application with one lock around each DynamoDB request, which
restores DynamoDB's per-request atomicity. Clients still race freely: their requests interleave
in any order, as they would against DynamoDB.

moto's SQS has the same kind of race on FIFO queues: a ReceiveMessage notes which message groups
are in flight when it starts, so two receives at once can each take a message of the same group,
and a task's events go out of order (SQS itself never hands out a group's next message while one
is in flight). So ReceiveMessage calls on one queue take turns, each under that queue's lock.
Sends and every other call are not serialised. A long poll is made of short ones that take the
lock in turn (see sqs_receives for why), so it holds up nobody while it waits.

moto also lists its own package's folders on every request to route it; the list never changes,
so it is read once. And werkzeug's line per request is not logged (a twentieth of moto's CPU in
the test command); requests slower than SLOW_SECONDS are, with long garbage collections.

Two more layers make it behave like AWS where moto does not:

- AWS's limits that moto 5.2.5 leaves out (aws_limits, always on): a TransactWriteItems of more
  than 4 MB, an SQS message (or batch) over 256 KiB. What moto already enforces is left to it:
  the 400 KB item (PutItem, UpdateItem, TransactWriteItems, BatchWriteItem; moto counts about
  405,000 bytes its own way), 100 items per TransactWriteItems, the 1 MB Query/Scan page,
  BatchGetItem's 100 keys and 16 MB, and DelaySeconds <= 900 (infra/test_moto_server.py checks
  each, so a moto upgrade that drops one is noticed).
- A FIFO queue's deduplication window (fifo_deduplication_window): SQS drops a message whose
  deduplication id it accepted in the last 5 minutes, whether or not that first message was
  received and deleted since; moto compares it only with the messages still in the queue, so a
  push job sent again after its first was delivered (a stream batch retried) went out twice.
- The faults AWS produces (inject_faults, off unless A2A_FAULT_RATE is set): throttles, 500s,
  slow answers, connections reset before a request reaches moto or after it was applied,
  answers lost after a write landed, SQS messages delivered twice and deletes that fail after
  succeeding. Seeded and rate-controlled; each fault is logged and counted per kind, and
  /fault-api/ turns them on or off and reports the counts (see FAULT_HELP).

Usage: python infra/moto_server.py -H 127.0.0.1 -p PORT   (started by infra/moto.sh)
"""

import argparse
import base64
import gc
import importlib
import io
import json
import logging
import os
import random
import signal
import socket
import struct
import sys
import threading
import time
from functools import cache
from urllib.parse import urlsplit

from werkzeug.serving import run_simple

from moto import backends
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def whole_body(result):
    """The whole body of a WSGI application's result, which is then closed."""
    try:
        return b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()


def serialise_dynamodb(app):
    lock = threading.Lock()

    def wrapped(environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return app(environ, start_response)
        with lock:
            # Produce the whole response inside the lock: the work may happen lazily.
            body = whole_body(app(environ, start_response))
        return [body]

    return wrapped


def whole_response(app, environ):
    """Calls `app` and returns its status, headers and whole body."""
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, headers
        return lambda _data: None

    body = whole_body(app(environ, start_response))
    return answer["status"], answer["headers"], body


# SQS calls after which a queue may hold a message a waiting receive should have.
QUEUE_CHANGES = {
    "AmazonSQS.SendMessage",
    "AmazonSQS.SendMessageBatch",
    "AmazonSQS.DeleteMessage",
    "AmazonSQS.DeleteMessageBatch",
    "AmazonSQS.ChangeMessageVisibility",
    "AmazonSQS.ChangeMessageVisibilityBatch",
}

# How often a waiting receive looks again when nothing was sent: a message whose visibility
# timeout or delay ends becomes receivable without any call (moto's own wait looks once a second).
IDLE_LOOK = 1.0


def sqs_receives(app):
    """ReceiveMessage calls on one queue take turns, and a long poll is a series of short ones.

    Turns: see the module's doc. Short polls: moto's own long poll spins on a FIFO queue. Its
    wait ends as soon as the queue holds a visible message, but a message whose group is in
    flight is visible and not receivable, so the loop finds nothing and goes round again at
    once, for the whole wait (up to 20 s), taking the interpreter from every other request (the
    DynamoDB ones time out behind it). Here a receive with a wait asks moto with no wait, and
    between asks sleeps until a call changes its queue (or IDLE_LOOK passes), then asks again,
    until it gets messages or its wait is over.
    """
    locks = {}
    guard = threading.Lock()
    changed = threading.Condition()
    changes = {}  # queue -> how many changing calls it has had

    def queue_of(raw):
        try:
            url = json.loads(raw or b"{}").get("QueueUrl", "")
        except ValueError:
            url = ""
        # The path names the queue whichever host name a client uses.
        return urlsplit(url).path

    def wrapped(environ, start_response):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target != "AmazonSQS.ReceiveMessage" and target not in QUEUE_CHANGES:
            return app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        queue = queue_of(raw)

        if target in QUEUE_CHANGES:
            status, headers, body = whole_response(app, environ)
            with changed:
                changes[queue] = changes.get(queue, 0) + 1
                changed.notify_all()
            start_response(status, headers)
            return [body]

        with guard:
            lock = locks.setdefault(queue, threading.Lock())
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = {}  # moto answers what is wrong with it
        wait = request.get("WaitTimeSeconds")
        if not isinstance(wait, int) or wait <= 0:
            # No wait asked (one absent means the queue's own default, left to moto).
            with lock:
                status, headers, body = whole_response(app, environ)
            start_response(status, headers)
            return [body]

        request["WaitTimeSeconds"] = 0
        short = json.dumps(request).encode()
        deadline = time.monotonic() + wait
        while True:
            with changed:
                seen = changes.get(queue, 0)
            # A fresh environ each time: the application may keep what it parsed in it.
            attempt = dict(environ, CONTENT_LENGTH=str(len(short)))
            attempt["wsgi.input"] = io.BytesIO(short)
            with lock:
                status, headers, body = whole_response(app, attempt)
            left = deadline - time.monotonic()
            if left <= 0 or not status.startswith("200") or json.loads(body).get("Messages"):
                start_response(status, headers)
                return [body]
            with changed:
                changed.wait_for(lambda: changes.get(queue, 0) != seen, min(IDLE_LOOK, left))

    return wrapped


SLOW_SECONDS = 1.0


def note(text):
    sys.stderr.write(f"moto_server: {time.strftime('%H:%M:%S')} {text}\n")
    sys.stderr.flush()


def report_slow_requests(app):
    """Logs every request moto took over SLOW_SECONDS to answer (waits for a lock included),
    so a client's timeout in a test can be told apart from a stall of the emulator."""

    def wrapped(environ, start_response):
        started = time.monotonic()
        body = whole_body(app(environ, start_response))
        took = time.monotonic() - started
        target = environ.get("HTTP_X_AMZ_TARGET") or environ.get("PATH_INFO", "")
        # A long poll is slow on purpose.
        if took > SLOW_SECONDS and target != "AmazonSQS.ReceiveMessage":
            note(f"slow request: {target} took {took:.2f}s")
        return [body]

    return wrapped


def report_long_collections():
    """Logs Python's garbage collections that pause every thread for over 0.1 s."""
    started = {}

    def callback(phase, info):
        if phase == "start":
            started["at"] = time.monotonic()
        elif "at" in started:
            took = time.monotonic() - started.pop("at")
            if took > 0.1:
                note(f"garbage collection of generation {info['generation']} took {took:.2f}s")

    gc.callbacks.append(callback)


# ---------------------------------------------------------------------------------------------
# AWS's limits that moto does not enforce.

def request_body(environ):
    """The request's body, read once; environ gets a fresh stream over it for the next layer."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(raw)
    return raw


def json_error(start_response, status, error_type, message, query_error=None):
    """An AWS JSON-protocol error answer (`__type` and `message`, as DynamoDB and SQS send)."""
    body = json.dumps({"__type": error_type, "message": message}).encode()
    headers = [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(body)))]
    if query_error:
        # SQS's JSON protocol names its (query-protocol) error code here too.
        headers.append(("x-amzn-query-error", query_error))
    start_response(status, headers)
    return [body]


def attribute_size(value):
    """The size DynamoDB counts for one attribute value in DynamoDB JSON (its documented rules:
    strings and binaries by their bytes, numbers about one byte per two digits plus one,
    booleans and nulls one byte, lists and maps three bytes plus one per element)."""
    (kind, inner), = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        return len(inner.strip("-").lstrip("0").replace(".", "")) // 2 + 2
    if kind == "B":
        return len(base64.b64decode(inner))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(v.encode()) for v in inner)
    if kind == "NS":
        return sum(attribute_size({"N": v}) for v in inner)
    if kind == "BS":
        return sum(len(base64.b64decode(v)) for v in inner)
    if kind == "L":
        return 3 + sum(1 + attribute_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + attribute_size(v) for k, v in inner.items())
    return 0


def item_size(item):
    """An item's size as DynamoDB counts it: its attribute names and values."""
    return sum(len(name.encode()) + attribute_size(value) for name, value in (item or {}).items())


# DynamoDB: "The aggregate size of the items in the transaction cannot exceed 4 MB."
TRANSACTION_MAX_BYTES = 4 * 1024 * 1024
# SQS: a message (body and attributes), and a whole SendMessageBatch, at most 256 KiB. (SQS
# lets a queue raise MaximumMessageSize to 1 MiB; the template's queues keep the default.)
SQS_MESSAGE_MAX_BYTES = 256 * 1024


def transaction_size(request):
    """The aggregate size of what a TransactWriteItems writes or names: each Put's item, each
    other action's key (and an Update's new values)."""
    total = 0
    for action in request.get("TransactItems") or []:
        for name, body in action.items():
            if name == "Put":
                total += item_size(body.get("Item"))
            else:
                total += item_size(body.get("Key"))
                total += item_size(body.get("ExpressionAttributeValues"))
    return total


def sqs_message_size(entry):
    """A message's size as SQS counts it: its body and its attributes' names, types and values."""
    size = len((entry.get("MessageBody") or "").encode())
    for name, attribute in (entry.get("MessageAttributes") or {}).items():
        size += len(name.encode()) + len((attribute.get("DataType") or "").encode())
        if "StringValue" in attribute:
            size += len(attribute["StringValue"].encode())
        if "BinaryValue" in attribute:
            size += len(base64.b64decode(attribute["BinaryValue"]))
    return size


def aws_limits(app):
    """Answers requests over AWS's limits that moto lets through with the error AWS gives."""
    checked = {
        "DynamoDB_20120810.TransactWriteItems",
        "AmazonSQS.SendMessage",
        "AmazonSQS.SendMessageBatch",
    }

    def wrapped(environ, start_response):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target not in checked:
            return app(environ, start_response)
        try:
            request = json.loads(request_body(environ) or b"{}")
        except ValueError:
            return app(environ, start_response)  # moto answers what is wrong with it
        if not isinstance(request, dict):
            return app(environ, start_response)
        if target == "DynamoDB_20120810.TransactWriteItems":
            if transaction_size(request) > TRANSACTION_MAX_BYTES:
                note(f"limit: {target} over 4 MB refused")
                return json_error(
                    start_response,
                    "400 Bad Request",
                    "com.amazon.coral.validate#ValidationException",
                    "Transaction request cannot be larger than 4 MB",
                )
        elif target == "AmazonSQS.SendMessage":
            if sqs_message_size(request) > SQS_MESSAGE_MAX_BYTES:
                note(f"limit: {target} over 256 KiB refused")
                return json_error(
                    start_response,
                    "400 Bad Request",
                    "com.amazonaws.sqs#InvalidParameterValue",
                    "One or more parameters are invalid. Reason: Message must be shorter than "
                    f"{SQS_MESSAGE_MAX_BYTES} bytes.",
                    "InvalidParameterValue;Sender",
                )
        else:
            total = sum(sqs_message_size(e) for e in request.get("Entries") or [])
            if total > SQS_MESSAGE_MAX_BYTES:
                note(f"limit: {target} over 256 KiB refused")
                return json_error(
                    start_response,
                    "400 Bad Request",
                    "com.amazonaws.sqs#BatchRequestTooLong",
                    f"Batch requests cannot be longer than {SQS_MESSAGE_MAX_BYTES} bytes. "
                    f"You have sent {total} bytes.",
                    "AWS.SimpleQueueService.BatchRequestTooLong;Sender",
                )
        return app(environ, start_response)

    return wrapped


# ---------------------------------------------------------------------------------------------
# The faults AWS produces.

FAULT_HELP = """Faults (off unless A2A_FAULT_RATE > 0):
  A2A_FAULT_RATE          share of AWS requests (DynamoDB, SQS) faulted, 0..1 (e.g. 0.05)
  A2A_FAULT_SEED          seed of the choices (default 0): the same seed, the same draws
  A2A_FAULT_KINDS         comma-separated kinds (default: all of FAULT_KINDS)
  A2A_FAULT_SLOW_SECONDS  how late a slow answer comes (default 3.5: longer than the adapters'
                          3 s per attempt, shared/adapters/aws/src/timeouts.rs)
Admin (never faulted, nor is /moto-api):
  GET  /fault-api/state   {"on", "rate", "seed", "kinds", "requests", "faults": {kind: n}}
  POST /fault-api/on      faults on; a JSON body may set rate, seed, kinds, slow_seconds
  POST /fault-api/off     faults off (the counts stay)
"""

# Each kind, and which requests it may hit.
FAULT_KINDS = (
    "throttle",  # DynamoDB 400 ProvisionedThroughputExceededException
    "throttling",  # 400 ThrottlingException (DynamoDB), RequestThrottled (SQS)
    "error500",  # 500 InternalServerError (DynamoDB), InternalFailure (SQS); nothing applied
    "slow",  # the answer comes A2A_FAULT_SLOW_SECONDS late (the request is applied then)
    "reset_before",  # the connection is reset before the request reaches moto
    "reset_after",  # the request is applied, then the connection is reset: the answer is lost
    "lost_answer",  # the request is applied, then a 500 the SDK retries: the answer is lost
    "sqs_duplicate",  # a received message is made visible again: it is delivered twice
    "delete_lost",  # an SQS delete is applied, then answered 500: the SDK deletes again
)

# Requests whose answer can be lost after they were applied: those that change something. A
# ReceiveMessage whose answer is lost would hide its messages for the queue's visibility
# timeout (90 minutes for the work queue), which no test run can wait for.
CHANGING = {
    "DynamoDB_20120810." + op
    for op in ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")
} | {
    "AmazonSQS." + op
    for op in (
        "SendMessage",
        "SendMessageBatch",
        "DeleteMessage",
        "DeleteMessageBatch",
        "ChangeMessageVisibility",
        "ChangeMessageVisibilityBatch",
    )
}


def fault_applies(kind, target):
    """Whether `kind` can hit a request to `target` (an X-Amz-Target)."""
    dynamodb = target.startswith("DynamoDB_")
    if kind == "throttle":
        return dynamodb
    if kind in ("reset_after", "lost_answer"):
        return target in CHANGING
    if kind == "sqs_duplicate":
        return target == "AmazonSQS.ReceiveMessage"
    if kind == "delete_lost":
        return target in ("AmazonSQS.DeleteMessage", "AmazonSQS.DeleteMessageBatch")
    return True


class FaultPlan:
    """Which requests get which fault: a seeded draw per AWS request, under a lock, and a count
    per kind of the faults injected."""

    def __init__(self, rate=0.0, seed=0, kinds=FAULT_KINDS, slow_seconds=3.5):
        self.lock = threading.Lock()
        self.requests = 0
        self.counts = {kind: 0 for kind in FAULT_KINDS}
        self.configure(rate=rate, seed=seed, kinds=kinds, slow_seconds=slow_seconds)
        self.on = self.rate > 0

    @classmethod
    def from_env(cls, env):
        kinds = env.get("A2A_FAULT_KINDS")
        return cls(
            rate=float(env.get("A2A_FAULT_RATE") or 0),
            seed=int(env.get("A2A_FAULT_SEED") or 0),
            kinds=[k.strip() for k in kinds.split(",") if k.strip()] if kinds else FAULT_KINDS,
            slow_seconds=float(env.get("A2A_FAULT_SLOW_SECONDS") or 3.5),
        )

    def configure(self, rate=None, seed=None, kinds=None, slow_seconds=None):
        if rate is not None:
            rate = float(rate)
            if not 0 <= rate <= 1:
                raise ValueError(f"the fault rate {rate} is not between 0 and 1")
            self.rate = rate
        if seed is not None:
            self.seed = int(seed)
            self.random = random.Random(self.seed)
        if kinds is not None:
            unknown = set(kinds) - set(FAULT_KINDS)
            if unknown:
                raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {FAULT_KINDS}")
            self.kinds = tuple(kinds)
        if slow_seconds is not None:
            self.slow_seconds = float(slow_seconds)

    def draw(self, target):
        """The fault for this request, or None."""
        with self.lock:
            if not self.on:
                return None
            self.requests += 1
            if self.random.random() >= self.rate:
                return None
            kinds = [k for k in self.kinds if fault_applies(k, target)]
            return self.random.choice(kinds) if kinds else None

    def count(self, kind, target):
        with self.lock:
            self.counts[kind] += 1
            n = self.counts[kind]
        note(f"fault {kind} #{n}: {target}")

    def state(self):
        with self.lock:
            return {
                "on": self.on,
                "rate": self.rate,
                "seed": self.seed,
                "kinds": list(self.kinds),
                "slow_seconds": self.slow_seconds,
                "requests": self.requests,
                "faults": dict(self.counts),
            }


def reset_connection(environ):
    """Drops the connection with no answer: shut down both ways at once (the client reads the
    end of the stream where its answer should be), then reset (SO_LINGER 0) when werkzeug
    closes it. Raising ConnectionResetError is how werkzeug is told the connection dropped: it
    writes nothing more, finds the stream ended and closes the socket."""
    sock = environ.get("werkzeug.socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the client went already
    raise ConnectionResetError("fault injected: connection reset")


def server_error(start_response, target):
    if target.startswith("DynamoDB_"):
        return json_error(
            start_response,
            "500 Internal Server Error",
            "com.amazonaws.dynamodb.v20120810#InternalServerError",
            "Internal server error",
        )
    return json_error(
        start_response,
        "500 Internal Server Error",
        "com.amazonaws.sqs#InternalFailure",
        "The request processing has failed because of an unknown error, exception or failure.",
        "InternalFailure;Receiver",
    )


def throttled(start_response, kind, target):
    if kind == "throttle":
        return json_error(
            start_response,
            "400 Bad Request",
            "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            "The level of configured provisioned throughput for the table was exceeded. "
            "Consider increasing your provisioning level with the UpdateTable API.",
        )
    if target.startswith("DynamoDB_"):
        return json_error(
            start_response,
            "400 Bad Request",
            "com.amazon.coral.availability#ThrottlingException",
            "Rate of requests exceeds the allowed throughput.",
        )
    return json_error(
        start_response,
        "400 Bad Request",
        "com.amazonaws.sqs#RequestThrottled",
        "Request is throttled.",
        "RequestThrottled;Sender",
    )


def make_visible_again(app, environ, raw, body):
    """Makes the first message of a ReceiveMessage answer visible at once (a ChangeMessage-
    Visibility through the layers below, so waiting receives hear of it): the next receive
    gets it again. Whether it did."""
    messages = json.loads(body).get("Messages") or []
    if not messages:
        return False
    queue = json.loads(raw or b"{}").get("QueueUrl", "")
    change = json.dumps(
        {"QueueUrl": queue, "ReceiptHandle": messages[0]["ReceiptHandle"], "VisibilityTimeout": 0}
    ).encode()
    attempt = dict(
        environ,
        CONTENT_LENGTH=str(len(change)),
        HTTP_X_AMZ_TARGET="AmazonSQS.ChangeMessageVisibility",
    )
    attempt["wsgi.input"] = io.BytesIO(change)
    status, _headers, _body = whole_response(app, attempt)
    return status.startswith("200")


def fault_api(plan, environ, start_response):
    """The admin endpoint /fault-api/ (see FAULT_HELP)."""
    path = environ.get("PATH_INFO", "")
    method = environ.get("REQUEST_METHOD", "GET")
    status = "200 OK"
    try:
        if method == "POST" and path in ("/fault-api/on", "/fault-api/off"):
            settings = json.loads(request_body(environ) or b"{}")
            with plan.lock:
                plan.configure(
                    **{k: settings[k] for k in ("rate", "seed", "kinds", "slow_seconds") if k in settings}
                )
                plan.on = path.endswith("/on") and plan.rate > 0
            note(f"faults {'on' if plan.on else 'off'} (rate {plan.rate}, seed {plan.seed})")
            answer = plan.state()
        elif path == "/fault-api/state":
            answer = plan.state()
        else:
            status, answer = "404 Not Found", {"error": FAULT_HELP}
    except (ValueError, TypeError) as e:
        status, answer = "400 Bad Request", {"error": str(e)}
    body = json.dumps(answer).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def inject_faults(app, plan):
    """Faults AWS produces, on AWS requests (those with an X-Amz-Target): never on moto's own
    /moto-api nor on /fault-api. Outside the locks below, so a slow answer holds up nobody."""

    def wrapped(environ, start_response):
        if environ.get("PATH_INFO", "").startswith("/fault-api/"):
            return fault_api(plan, environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith(("DynamoDB_", "AmazonSQS.")):
            return app(environ, start_response)
        kind = plan.draw(target)
        if kind is None:
            return app(environ, start_response)
        if kind in ("throttle", "throttling"):
            plan.count(kind, target)
            return throttled(start_response, kind, target)
        if kind == "error500":
            plan.count(kind, target)
            return server_error(start_response, target)
        if kind == "reset_before":
            plan.count(kind, target)
            reset_connection(environ)
        if kind == "slow":
            plan.count(kind, target)
            time.sleep(plan.slow_seconds)
            return app(environ, start_response)
        if kind == "sqs_duplicate":
            raw = request_body(environ)
            status, headers, body = whole_response(app, environ)
            if status.startswith("200") and make_visible_again(app, environ, raw, body):
                plan.count(kind, target)
            start_response(status, headers)
            return [body]
        # reset_after, lost_answer, delete_lost: applied, then the answer is lost.
        status, _headers, _body = whole_response(app, environ)
        if not status.startswith("200"):
            # It was not applied (moto refused it): no fault to inject.
            start_response(status, _headers)
            return [_body]
        plan.count(kind, target)
        if kind == "reset_after":
            reset_connection(environ)
        return server_error(start_response, target)

    return wrapped


# SQS's deduplication interval for FIFO queues.
DEDUPLICATION_SECONDS = 300


def fifo_deduplication_window():
    """Makes moto's FIFO queues drop a message whose deduplication id (given, or the body's hash
    under content-based deduplication) was accepted in the last DEDUPLICATION_SECONDS, as SQS
    does, instead of only while an earlier copy is still queued. Each queue remembers the ids
    it accepted in that window (then forgets them: memory stays bounded by the send rate)."""
    from moto.sqs import models

    add_message = models.Queue.add_message
    accepted = {}  # (queue ARN, deduplication id) -> when accepted (monotonic seconds)
    lock = threading.Lock()

    def deduplicated_add_message(self, message):
        dedup = getattr(message, "deduplication_id", None) if self.fifo_queue else None
        if dedup is not None:
            now = time.monotonic()
            with lock:
                if len(accepted) > 10_000:
                    for key in [k for k, at in accepted.items() if now - at >= DEDUPLICATION_SECONDS]:
                        del accepted[key]
                key = (self.queue_arn, dedup)
                at = accepted.get(key)
                if at is not None and now - at < DEDUPLICATION_SECONDS:
                    return None
                accepted[key] = now
        return add_message(self, message)

    models.Queue.add_message = deduplicated_add_message


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    report_long_collections()
    # Everything imported so far lives as long as the server: leave it out of the collections,
    # which otherwise walk all of moto's modules each time (half a second per full collection).
    for service in ("dynamodb", "dynamodbstreams", "sqs", "secretsmanager"):
        importlib.import_module(f"moto.{service}.models")
    gc.freeze()
    fifo_deduplication_window()
    backends.list_of_moto_modules = cache(lambda listed=backends.list_of_moto_modules: tuple(listed()))
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    plan = FaultPlan.from_env(os.environ)
    if plan.on:
        note(f"faults on: rate {plan.rate}, seed {plan.seed}, kinds {','.join(plan.kinds)}")
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        args.host,
        args.port,
        report_slow_requests(inject_faults(aws_limits(sqs_receives(serialise_dynamodb(app))), plan)),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
