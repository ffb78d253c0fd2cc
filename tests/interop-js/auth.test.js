// Authentication as the official JS client sees it, like tests/interop/test_auth.py.
//
// These tests run only in the authenticated run (A2A_BEARER_TOKEN set, the server started with
// --auth jwt against the test issuer); interop.test.js then runs with the token on every request.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';

import { TaskState } from '@a2a-js/sdk';

import {
  BASE_URL,
  BEARER_TOKEN,
  BINDINGS,
  TEST_OPTIONS,
  agentCard,
  makeClient,
  userMessage,
} from './helpers.js';

const skip = BEARER_TOKEN ? false : 'authenticated run only (set A2A_BEARER_TOKEN)';

describe('auth', { skip }, () => {
  test('the card declares bearer tokens', TEST_OPTIONS, async () => {
    const card = await agentCard();
    const bearer = Object.values(card.securitySchemes ?? {})
      .map((s) => s.scheme)
      .filter((s) => s?.$case === 'httpAuthSecurityScheme')
      .map((s) => s.value);
    assert.ok(bearer.length, `no httpAuthSecurityScheme in ${JSON.stringify(card.securitySchemes)}`);
    assert.equal(bearer[0].scheme.toLowerCase(), 'bearer');
    assert.equal(bearer[0].bearerFormat, 'JWT');
    assert.ok(card.securityRequirements?.length, 'no securityRequirements');
    assert.equal(card.capabilities?.extendedAgentCard, true);
  });

  for (const binding of BINDINGS) {
    describe(binding, () => {
      test('the extended card shows more skills', TEST_OPTIONS, async () => {
        const { client } = await makeClient(binding);
        // The SDK fetches the extended card when the public one offers it.
        const extended = await client.getAgentCard();
        const pub = new Set((await agentCard()).skills.map((s) => s.id));
        const ext = new Set(extended.skills.map((s) => s.id));
        assert.ok(
          [...pub].every((id) => ext.has(id)) && ext.size > pub.size,
          `public ${[...pub]} vs extended ${[...ext]}`,
        );
      });

      test('requests without the token are refused', TEST_OPTIONS, async () => {
        // Raw HTTP: a 401 with a Bearer challenge, on both bindings.
        const rest = await fetch(`${BASE_URL}/tasks`, { headers: { 'A2A-Version': '1.0' } });
        assert.equal(rest.status, 401, await rest.clone().text());
        assert.match(rest.headers.get('www-authenticate') ?? '', /^Bearer/);
        assert.equal((await rest.json()).error.status, 'UNAUTHENTICATED');
        const rpc = await fetch(`${BASE_URL}/jsonrpc`, {
          method: 'POST',
          headers: { 'A2A-Version': '1.0', 'Content-Type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
        });
        assert.equal(rpc.status, 401, await rpc.clone().text());
        assert.equal((await rpc.json()).error.code, -31401);

        // The SDK client without credentials: it reads the public card, and every operation
        // fails.
        const { client } = await makeClient(binding, { token: null });
        await assert.rejects(client.listTasks({ status: TaskState.TASK_STATE_UNSPECIFIED }));
        await assert.rejects(client.sendMessage({ message: userMessage('hello') }));
        await assert.rejects(client.getTask({ id: randomUUID() }));
      });
    });
  }
});
