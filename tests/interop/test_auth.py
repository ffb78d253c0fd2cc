"""Authentication as the official Python client sees it (a2a-sdk 1.3.0).

These tests run only in the authenticated run (``A2A_BEARER_TOKEN`` set, the
server started with ``--auth jwt`` against the test issuer); the rest of the
suite then runs with the token on every request.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    GetExtendedAgentCardRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
)

from conftest import HTTP_TIMEOUT_S, bearer_token


pytestmark = pytest.mark.skipif(
    bearer_token() is None,
    reason='authenticated run only (set A2A_BEARER_TOKEN)',
)


async def test_card_declares_bearer_tokens(agent_card) -> None:
    schemes = agent_card.security_schemes
    bearer = [
        s.http_auth_security_scheme
        for s in schemes.values()
        if s.HasField('http_auth_security_scheme')
    ]
    assert bearer, f'no httpAuthSecurityScheme in {schemes}'
    assert bearer[0].scheme.lower() == 'bearer'
    assert bearer[0].bearer_format == 'JWT'
    assert agent_card.security_requirements, 'no securityRequirements'
    assert agent_card.capabilities.extended_agent_card is True


async def test_extended_card_shows_more_skills(agent_card, make_client) -> None:
    client = await make_client()
    extended = await client.get_extended_agent_card(
        GetExtendedAgentCardRequest()
    )
    public = {s.id for s in agent_card.skills}
    extended_ids = {s.id for s in extended.skills}
    assert public < extended_ids, (public, extended_ids)


async def test_requests_without_the_token_are_refused(
    base_url: str, binding: str
) -> None:
    # Raw HTTP: a 401 with a Bearer challenge, on both bindings.
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
        rest = await http.get(
            f'{base_url}/tasks', headers={'A2A-Version': '1.0'}
        )
        assert rest.status_code == 401, rest.text
        assert rest.headers['www-authenticate'].startswith('Bearer')
        assert rest.json()['error']['status'] == 'UNAUTHENTICATED'
        rpc = await http.post(
            f'{base_url}/jsonrpc',
            headers={'A2A-Version': '1.0'},
            json={
                'jsonrpc': '2.0',
                'id': 1,
                'method': 'ListTasks',
                'params': {},
            },
        )
        assert rpc.status_code == 401, rpc.text
        assert rpc.json()['error']['code'] == -31401

        # The SDK client without credentials: it reads the public card, and
        # every operation fails.
        config = ClientConfig(
            httpx_client=http,
            supported_protocol_bindings=[binding],
            use_client_preference=True,
        )
        client = await ClientFactory(config).create_from_url(base_url)
        with pytest.raises(Exception):  # noqa: B017 (the SDK's error type varies by binding)
            await client.list_tasks(ListTasksRequest())
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text='hello')],
        )
        with pytest.raises(Exception):  # noqa: B017
            async for _ in client.send_message(
                SendMessageRequest(message=message)
            ):
                pass
