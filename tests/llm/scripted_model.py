#!/usr/bin/env python3
"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 (the standard library only).

infra/llm-check.sh points a generated LLM project at it (`OPENAI_BASE_URL`). Every
`POST /v1/chat/completions` gets the same streamed answer, as the OpenAI API streams one:
chat-completion chunks in server-sent events, the first half of ANSWER's tokens, then the rest
once the check releases it (`POST /release`: its client saw the first chunk, so the answer
reached it while the model was still writing), a finish chunk, a usage chunk and `[DONE]`.

    python3 tests/llm/scripted_model.py PORT_FILE
        writes its port to PORT_FILE once it listens
    GET /requests    the request bodies so far, as a JSON list
    GET /keys        the API key each of them carried (`Authorization: Bearer KEY`), in order
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = ["Hello", " from", " the", " scripted", " model", "."]
USAGE = {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
# How long an answer waits for its release before it fails: a safety net against a check that
# never releases it, not a pace.
RELEASE_WITHIN_S = 120

requests: list[dict] = []
keys: list[str | None] = []
releases = threading.Semaphore(0)
lock = threading.Lock()


def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "scripted",
        "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write("scripted model: " + (format % args) + "\n")

    def reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/requests":
            with lock:
                self.reply(200, requests)
        elif self.path == "/keys":
            with lock:
                self.reply(200, keys)
        else:
            self.reply(404, {"error": {"message": f"no {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        if self.path == "/release":
            releases.release()
            self.reply(200, {})
            return
        if self.path != "/v1/chat/completions":
            self.reply(404, {"error": {"message": f"no {self.path}"}})
            return
        request = json.loads(body)
        authorization = self.headers.get("authorization", "")
        with lock:
            requests.append(request)
            keys.append(authorization[7:] if authorization.startswith("Bearer ") else None)
        if not request.get("stream"):
            self.reply(400, {"error": {"message": "this server only streams"}})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        # No length: the stream ends when the connection closes.
        self.send_header("connection", "close")
        self.end_headers()
        half = len(ANSWER) // 2
        self.send(b"".join(chunk({"content": t}) for t in ANSWER[:half]))
        if not releases.acquire(timeout=RELEASE_WITHIN_S):
            sys.stderr.write("scripted model: the answer was never released\n")
            return
        rest = b"".join(chunk({"content": t}) for t in ANSWER[half:])
        self.send(rest + chunk({}, "stop") + chunk({}, usage=USAGE) + b"data: [DONE]\n\n")

    def send(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # Whole or not there: the check reads it as soon as it exists.
    with open(sys.argv[1] + ".tmp", "w") as port_file:
        port_file.write(str(server.server_address[1]))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
