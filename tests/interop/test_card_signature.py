"""The agent card's JWS signatures, checked by a2a-sdk's own verifier.

The SDK's card resolver takes a ``signature_verifier``; the one built by
``a2a.utils.signing.create_signature_verifier`` canonicalises the card the way
the SDK reads it (RFC 8785 over the card without ``signatures``) and checks
the detached JWS with the key the protected header's ``kid`` names. The keys
come from the JWKS the header's ``jku`` points to, which must be the agent's
own ``/.well-known/jwks.json`` (under its base path, if it has one).
"""

from __future__ import annotations

import base64
import json

from urllib.parse import urlsplit

import httpx
import pytest

from jwt import PyJWK

from a2a.client import A2ACardResolver
from a2a.types import AgentCard, GetExtendedAgentCardRequest
from a2a.utils.signing import (
    InvalidSignaturesError,
    NoSignatureError,
    create_signature_verifier,
)
from conftest import HTTP_TIMEOUT_S, auth_headers, bearer_token


def _protected(signature) -> dict:
    text = signature.protected + '=' * (-len(signature.protected) % 4)
    return json.loads(base64.urlsafe_b64decode(text))


def _key_provider(base_url: str):
    """kid, jku -> the key, from the agent's own JWKS only (fetched once)."""
    fetched: dict[str, dict] = {}

    def provide(kid: str | None, jku: str | None) -> PyJWK:
        assert jku, 'the protected header names the JWKS (jku)'
        # A jku elsewhere would let anyone sign "our" card: only the agent's own origin.
        assert urlsplit(jku)[:2] == urlsplit(base_url)[:2], jku
        assert jku == f'{base_url}/.well-known/jwks.json', jku
        if jku not in fetched:
            fetched[jku] = httpx.get(jku, timeout=HTTP_TIMEOUT_S).json()
        keys = [k for k in fetched[jku]['keys'] if k.get('kid') == kid]
        assert keys, f'the JWKS has the key {kid}'
        return PyJWK(keys[0])

    return provide


async def test_the_card_verifies_with_the_sdk_verifier(base_url) -> None:
    verifier = create_signature_verifier(_key_provider(base_url), ['ES256', 'RS256'])
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
        # The resolver calls the verifier on the card it fetched and raises if it fails.
        card = await A2ACardResolver(http, base_url).get_agent_card(
            signature_verifier=verifier
        )
    assert card.signatures, 'the card is signed'
    for signature in card.signatures:
        header = _protected(signature)
        assert header['alg'] in ('ES256', 'RS256'), header
        assert header['typ'] == 'JOSE', header
        assert header['kid'], header


async def test_a_tampered_card_is_refused(base_url) -> None:
    verifier = create_signature_verifier(_key_provider(base_url), ['ES256', 'RS256'])
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
    verifier(card)
    for tamper in (
        lambda c: setattr(c, 'description', c.description + ' (changed)'),
        lambda c: setattr(c.supported_interfaces[0], 'url', 'https://attacker.example/'),
        lambda c: c.skills.pop(),
    ):
        changed = AgentCard()
        changed.CopyFrom(card)
        tamper(changed)
        with pytest.raises(InvalidSignaturesError):
            verifier(changed)
    unsigned = AgentCard()
    unsigned.CopyFrom(card)
    del unsigned.signatures[:]
    with pytest.raises(NoSignatureError):
        verifier(unsigned)


async def test_the_extended_card_is_signed_too(base_url, make_client) -> None:
    if not bearer_token():
        pytest.skip('the extended card needs an authenticated run (A2A_BEARER_TOKEN)')
    client = await make_client()
    card = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
    verifier = create_signature_verifier(_key_provider(base_url), ['ES256', 'RS256'])
    verifier(card)
    assert card.signatures, 'the extended card is signed on its own'
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
        public = await A2ACardResolver(http, base_url).get_agent_card()
    assert len(card.skills) > len(public.skills)
    assert auth_headers()
