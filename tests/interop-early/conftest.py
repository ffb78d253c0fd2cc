"""Fixtures for the early-protocol interop suite: PyPI ``python-a2a`` (0.5.10) as the client.

python-a2a speaks the pre-0.2 A2A protocol (``tasks/send``, ``sessionId``,
``type``-tagged parts, the card at ``/.well-known/agent.json``). Its client
posts each JSON-RPC method to a path named after it under the agent URL
(``POST {url}/tasks/send``, ``/tasks/get``, ``/tasks/cancel``) and swallows
most errors into a synthetic Task, so every test also reads the exchange on
the wire: the ``wire`` fixture records each request the client sends (it uses
``requests``) and the response it got.

The server is reached through ``A2A_BASE_URL``; with ``A2A_BEARER_TOKEN`` set,
every request carries ``Authorization: Bearer $A2A_BEARER_TOKEN``.
"""

from __future__ import annotations

import json
import os

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import requests

from python_a2a.models.task import Task


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get('A2A_BASE_URL'):
        raise pytest.UsageError(
            'A2A_BASE_URL is not set (e.g. A2A_BASE_URL=http://127.0.0.1:9000)'
        )


@pytest.fixture(scope='session')
def base_url() -> str:
    return os.environ['A2A_BASE_URL'].rstrip('/')


def auth_headers() -> dict[str, str]:
    """The credentials every client of this run sends (``A2A_BEARER_TOKEN``)."""
    token = os.environ.get('A2A_BEARER_TOKEN')
    return {'Authorization': f'Bearer {token}'} if token else {}


@pytest.fixture(scope='session', autouse=True)
def early_message_shape() -> Iterator[None]:
    """Messages with ``parts`` (``{"type": "text", ...}``), as the early protocol has them.

    python-a2a's default message shape (``content``) is its own; its "Google
    A2A" mode, switched on here through its public API, is the early protocol's.
    """
    Task.enable_google_a2a_compatibility(True)
    yield
    Task.enable_google_a2a_compatibility(False)


@dataclass
class Exchange:
    method: str
    url: str
    body: dict | None
    status: int
    response: dict | None


@dataclass
class Wire:
    """Every HTTP exchange of the python-a2a client in a test, in order."""

    entries: list[Exchange] = field(default_factory=list)

    def posts(self) -> list[Exchange]:
        return [e for e in self.entries if e.method == 'POST']

    def last_post(self, method: str) -> Exchange:
        """The last JSON-RPC request of ``method`` the client sent."""
        found = [e for e in self.posts() if (e.body or {}).get('method') == method]
        assert found, f'the client sent no {method}: {[(e.method, e.url) for e in self.entries]}'
        return found[-1]


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    recorded = Wire()
    send = requests.Session.send

    def recording_send(self, request, **kwargs):
        response = send(self, request, **kwargs)
        try:
            body = json.loads(request.body) if request.body else None
        except ValueError:
            body = None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        recorded.entries.append(
            Exchange(request.method, request.url, body, response.status_code, answer)
        )
        return response

    monkeypatch.setattr(requests.Session, 'send', recording_send)
    return recorded
