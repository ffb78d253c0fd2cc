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

Usage: python infra/moto_server.py -H 127.0.0.1 -p PORT   (started by infra/moto.sh)
"""

import argparse
import gc
import importlib
import io
import json
import logging
import signal
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
    backends.list_of_moto_modules = cache(lambda listed=backends.list_of_moto_modules: tuple(listed()))
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        args.host,
        args.port,
        report_slow_requests(sqs_receives(serialise_dynamodb(app))),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
