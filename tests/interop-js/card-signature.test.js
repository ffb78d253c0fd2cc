// The agent card's JWS signatures, checked by @a2a-js/sdk's own verifier
// (`verifyAgentCardSignature`: JCS over the card as the SDK reads it, without `signatures`),
// with the key the protected header's `kid` names in the agent's own JWKS (its `jku`, which
// must be on the agent's origin).
//
// The verifier is given the card as served (JSON), which it reads with `AgentCard.fromJSON`. The
// SDK's card resolver returns its internal form instead (oneofs as `{$case, value}`), which
// `fromJSON` does not read back: given that form, the verifier drops the security schemes from
// what it checks, and a card that has any does not verify (an SDK quirk, not a property of the
// card: the same card as JSON verifies, and so does a2a-sdk's verifier).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { verifyAgentCardSignature } from '@a2a-js/sdk';

import { BASE_URL, TEST_OPTIONS } from './helpers.js';

/** The public card as served to a 1.0 client. */
async function agentCard() {
  const response = await fetch(`${BASE_URL}/.well-known/agent-card.json`, {
    headers: { 'A2A-Version': '1.0' },
  });
  assert.equal(response.status, 200);
  return response.json();
}

function keyProvider() {
  return async (kid, jku) => {
    assert.ok(jku, 'the protected header names the JWKS (jku)');
    assert.equal(new URL(jku).origin, new URL(BASE_URL).origin, jku);
    assert.equal(jku, `${BASE_URL}/.well-known/jwks.json`);
    const jwks = await (await fetch(jku)).json();
    const key = jwks.keys.find((k) => k.kid === kid);
    assert.ok(key, `the JWKS has the key ${kid}`);
    return key;
  };
}

// The SDK logs each signature that fails at debug level; the tampered cards make some.
console.debug = () => {};

test('the card verifies with the SDK verifier', TEST_OPTIONS, async () => {
  const card = await agentCard();
  assert.ok(card.signatures?.length, 'the card is signed');
  await verifyAgentCardSignature(keyProvider())(card);
});

test('a tampered card is refused', TEST_OPTIONS, async () => {
  const card = await agentCard();
  const verify = verifyAgentCardSignature(keyProvider());
  for (const tamper of [
    (c) => { c.description += ' (changed)'; },
    (c) => { c.supportedInterfaces[0].url = 'https://attacker.example/'; },
    (c) => { c.skills.pop(); },
  ]) {
    const changed = structuredClone(card);
    tamper(changed);
    await assert.rejects(verify(changed), /No valid signatures/);
  }
  await assert.rejects(verify({ ...card, signatures: [] }), /No signatures/);
});
