"""Fixtures for the a2a-sdk 0.3 (Python) interop suite.

The server under test is reached through ``A2A_BASE_URL`` (for example
``http://127.0.0.1:9000``). A 0.3 client finds the agent the way the 0.3 SDK
does: ``A2ACardResolver`` fetches ``$A2A_BASE_URL/.well-known/agent-card.json``
and validates it against the 0.3 ``AgentCard`` model; ``ClientFactory`` then
picks a transport from the card's ``preferredTransport``/``url`` and
``additionalInterfaces``. Every test runs once per binding (JSONRPC and
HTTP+JSON); the client is offered only that binding.

The 0.3 client sends no ``A2A-Version`` header: to the server the request
*is* 0.3 (the 1.0 spec's rule for an absent header).

With ``A2A_BEARER_TOKEN`` set, every request carries
``Authorization: Bearer $A2A_BEARER_TOKEN`` (the server runs with ``--auth jwt``).
"""

from __future__ import annotations

import json
import os
import sys

from pathlib import Path
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import pytest

from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.types import AgentCard, TransportProtocol


BINDINGS = [TransportProtocol.jsonrpc.value, TransportProtocol.http_json.value]
TRANSPORT_CLASS = {'JSONRPC': JsonRpcTransport, 'HTTP+JSON': RestTransport}

# Generous per-request timeout: a debug build or a queued task can be slow,
# but nothing in this suite should legitimately take this long.
HTTP_TIMEOUT_S = float(os.environ.get('A2A_INTEROP_HTTP_TIMEOUT', '30'))


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


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return request.param


@dataclass
class Exchange:
    """One HTTP request the SDK client sent, and the status it got."""

    method: str
    url: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    status: int | None = None


@dataclass
class RequestLog:
    """Every HTTP exchange of the SDK client, in order."""

    entries: list[Exchange] = field(default_factory=list)

    async def on_request(self, request: httpx.Request) -> None:
        # Requests built from json= carry their body in memory already.
        body = request.content if hasattr(request, '_content') else b''
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.entries.append(
            Exchange(request.method, str(request.url), headers, body)
        )

    async def on_response(self, response: httpx.Response) -> None:
        for entry in reversed(self.entries):
            if entry.url == str(response.request.url) and entry.status is None:
                entry.status = response.status_code
                break

    def json_bodies(self) -> list[dict]:
        return [json.loads(e.body) for e in self.entries if e.body]


ClientMaker = Callable[..., Awaitable[Client]]


def new_http(log: RequestLog | None = None) -> httpx.AsyncClient:
    hooks = (
        {'request': [log.on_request], 'response': [log.on_response]}
        if log is not None
        else {}
    )
    return httpx.AsyncClient(
        timeout=HTTP_TIMEOUT_S, headers=auth_headers(), event_hooks=hooks
    )


@pytest.fixture
def request_log() -> RequestLog:
    return RequestLog()


@pytest.fixture
async def make_client(
    base_url: str, binding: str, request_log: RequestLog
) -> AsyncIterator[ClientMaker]:
    """Factory: ``await make_client(streaming=..., polling=...)`` -> a Client on ``binding``.

    Built the way an application builds one: ``ClientFactory.connect`` resolves
    the card from the base URL and picks the transport from it, with the
    client's own list restricted to the binding under test.
    """
    clients: list[Client] = []

    async def _make(*, streaming: bool = False, polling: bool = False) -> Client:
        config = ClientConfig(
            streaming=streaming,
            polling=polling,
            httpx_client=new_http(request_log),
            supported_transports=[binding],
            use_client_preference=True,
        )
        client = await ClientFactory.connect(base_url, client_config=config)
        clients.append(client)
        transport = client._transport  # noqa: SLF001
        assert isinstance(transport, TRANSPORT_CLASS[binding]), (
            f'client picked {type(transport).__name__} for binding {binding}'
        )
        return client

    yield _make

    for client in clients:
        await client.close()


@pytest.fixture
async def agent_card(base_url: str) -> AgentCard:
    # The public card needs no credentials: fetch it without any.
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
        return await A2ACardResolver(http, base_url).get_agent_card()


def transport_url(card: AgentCard, binding: str) -> str:
    """The URL a 0.3 client uses for ``binding``, as ClientFactory reads the card."""
    offered = {card.preferred_transport or 'JSONRPC': card.url}
    offered.update({i.transport: i.url for i in card.additional_interfaces or []})
    assert binding in offered, f'the 0.3 card offers no {binding}: {offered}'
    return offered[binding].rstrip('/')


# --------------------------------------------------------------------------
# A real webhook receiver on 127.0.0.1 (stdlib only; the same receiver as the
# 1.0 suite's tests/interop/conftest.py, which runs in another venv).
# --------------------------------------------------------------------------


# The webhook receiver is shared by the Python suites of every version.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'interop-common'))
from webhook_receiver import ReceivedPush, WebhookReceiver  # noqa: E402


@pytest.fixture
async def webhook() -> AsyncIterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    await receiver.start()
    yield receiver
    await receiver.close()
