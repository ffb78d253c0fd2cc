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
Sends and every other call are not serialised, so a long poll holds up nothing but other
receives on its own queue.

Usage: python infra/moto_server.py -H 127.0.0.1 -p PORT   (started by infra/moto.sh)
"""

import argparse
import io
import json
import signal
import sys
import threading

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def serialise_dynamodb(app):
    lock = threading.Lock()

    def wrapped(environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return app(environ, start_response)
        with lock:
            # Produce the whole response inside the lock: the work may happen lazily.
            result = app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]

    return wrapped


def serialise_sqs_receives(app):
    locks = {}
    guard = threading.Lock()

    def wrapped(environ, start_response):
        if environ.get("HTTP_X_AMZ_TARGET", "") != "AmazonSQS.ReceiveMessage":
            return app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        try:
            queue = json.loads(raw or b"{}").get("QueueUrl", "")
        except ValueError:
            queue = ""
        with guard:
            lock = locks.setdefault(queue, threading.Lock())
        with lock:
            result = app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]

    return wrapped


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        args.host,
        args.port,
        serialise_sqs_receives(serialise_dynamodb(app)),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
