"""Fixtures for the a2a-sdk (Python, 1.3.0) interop suite.

The server under test is reached through ``A2A_BASE_URL`` (for example
``http://127.0.0.1:9000``). Its card lives at
``$A2A_BASE_URL/.well-known/agent-card.json`` and must list a ``JSONRPC`` and
an ``HTTP+JSON`` interface. Every test runs once per binding; the client is
forced onto that binding.

With ``A2A_BEARER_TOKEN`` set, every client sends
``Authorization: Bearer $A2A_BEARER_TOKEN`` on every request (the server runs
with ``--auth jwt``), and ``test_auth.py`` checks the authentication itself.
"""

from __future__ import annotations

import os
import sys
import uuid

from pathlib import Path
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import pytest

from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.transports.base import ClientTransport
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.client.transports.tenant_decorator import TenantTransportDecorator
from a2a.types import AgentCard


BINDINGS = ['JSONRPC', 'HTTP+JSON']
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


def bearer_token() -> str | None:
    """The bearer token of an authenticated run (``A2A_BEARER_TOKEN``), if any."""
    return os.environ.get('A2A_BEARER_TOKEN') or None


def auth_headers() -> dict[str, str]:
    """The credentials every client of this run sends."""
    token = bearer_token()
    return {'Authorization': f'Bearer {token}'} if token else {}


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return request.param


@dataclass
class RequestLog:
    """Every HTTP request the SDK client sent: (method, url, body)."""

    entries: list[tuple[str, str, bytes]] = field(default_factory=list)

    async def hook(self, request: httpx.Request) -> None:
        # Requests built from json= carry their body in memory already.
        body = request.content if hasattr(request, '_content') else b''
        self.entries.append((request.method, str(request.url), body))


ClientMaker = Callable[..., Awaitable[Client]]


def _unwrap(transport: ClientTransport) -> ClientTransport:
    while isinstance(transport, TenantTransportDecorator):
        transport = transport._base  # noqa: SLF001
    return transport


@pytest.fixture
def request_log() -> RequestLog:
    return RequestLog()


@pytest.fixture
async def make_client(
    base_url: str, binding: str, request_log: RequestLog
) -> AsyncIterator[ClientMaker]:
    """Factory: ``await make_client(streaming=...)`` -> a Client on ``binding``.

    The client is built the way an application would build it: resolve the
    card from the base URL with ``ClientFactory.create_from_url``, with the
    client's preference restricted to the one binding under test.
    """
    http_clients: list[httpx.AsyncClient] = []
    clients: list[Client] = []

    async def _make(*, streaming: bool = False) -> Client:
        http = httpx.AsyncClient(
            timeout=HTTP_TIMEOUT_S,
            headers=auth_headers(),
            event_hooks={'request': [request_log.hook]},
        )
        http_clients.append(http)
        config = ClientConfig(
            streaming=streaming,
            httpx_client=http,
            supported_protocol_bindings=[binding],
            use_client_preference=True,
        )
        client = await ClientFactory(config).create_from_url(base_url)
        clients.append(client)
        transport = _unwrap(client._transport)  # noqa: SLF001
        assert isinstance(transport, TRANSPORT_CLASS[binding]), (
            f'client picked {type(transport).__name__} for binding {binding}'
        )
        return client

    yield _make

    for client in clients:
        await client.close()
    for http in http_clients:
        await http.aclose()


@pytest.fixture
async def agent_card(base_url: str) -> AgentCard:
    # The public card needs no credentials: fetch it without any.
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
        return await A2ACardResolver(http, base_url).get_agent_card()


# --------------------------------------------------------------------------
# A real webhook receiver on 127.0.0.1 (no extra dependencies).
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

