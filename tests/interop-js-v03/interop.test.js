// Interop suite: the official JS SDK client of A2A 0.3 (@a2a-js/sdk, pinned in package.json)
// against our server: the same checks as the 1.0 suite (tests/interop-js/interop.test.js) where
// 0.3 has the operation (0.3 has no ListTasks), once per binding: JSON-RPC and the 0.3 REST
// binding under /v1. The agent's behaviour (`hello` echo, `hold`, `slow N MS`) is fixed in
// shared/reference-agent.md. Nothing sleeps to synchronise: streams are read to their end and
// webhook deliveries are awaited, all under explicit timeouts.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import {
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/client';

import {
  BASE_URL,
  BEARER_TOKEN,
  BINDINGS,
  TERMINAL,
  TEST_OPTIONS,
  WebhookReceiver,
  agentCard,
  callOptions,
  collect,
  makeClient,
  sendBlocking,
  texts,
  transportUrl,
  userMessage,
} from './helpers.js';

function assertState(task, state) {
  assert.equal(task.status?.state, state, `task ${task.id}: expected ${state}, got ${task.status?.state}`);
}

function echoArtifactText(task) {
  const echo = (task.artifacts ?? []).filter((a) => a.name === 'echo');
  assert.equal(echo.length, 1, `expected one artifact named "echo": ${JSON.stringify(task.artifacts)}`);
  assert.ok(echo[0].artifactId, 'artifact without artifactId');
  return texts(echo[0].parts).join('');
}

/**
 * Asserts that `promise` rejects with the SDK's typed A2A error `type`. An error event inside a
 * JSON-RPC stream reaches the caller as a plain Error whose `cause` is the typed error (that is
 * how this SDK reports stream errors), so it is looked for there too.
 */
async function rejectsWith(promise, type) {
  await assert.rejects(promise, (err) => {
    const typed = err instanceof type ? err : err?.cause;
    assert.ok(typed instanceof type, `not a ${type.name}: ${err}`);
    return true;
  });
}

for (const binding of BINDINGS) {
  describe(binding, () => {
    test('agent card', TEST_OPTIONS, async () => {
      const card = await agentCard();
      assert.ok(card.name, 'card.name is empty');
      assert.deepEqual(card.protocolVersion.split('.').slice(0, 2), ['0', '3']);
      assert.equal(card.capabilities?.streaming, true);
      assert.equal(card.capabilities?.pushNotifications, true);
      const url = transportUrl(card, binding);
      assert.match(url, /^https?:\/\//);
      // The SDK finds the card at the 0.3 well-known path and builds a client for this binding.
      const { client, log } = await makeClient(binding);
      assert.equal(log[0].url, `${BASE_URL}/.well-known/agent-card.json`);
      assert.equal(log[0].status, 200);
      assert.equal(client.transport.endpoint.replace(/\/+$/, ''), url);
    });

    test('extended card', TEST_OPTIONS, async () => {
      const { client, log } = await makeClient(binding);
      const card = await client.getAgentCard();
      assert.ok(card.name);
      assert.deepEqual(card.protocolVersion.split('.').slice(0, 2), ['0', '3']);
      if (client.agentCard.supportsAuthenticatedExtendedCard) {
        const last = log.at(-1);
        if (binding === 'JSONRPC') {
          assert.equal(JSON.parse(last.body).method, 'agent/getAuthenticatedExtendedCard');
        } else {
          assert.match(last.url, /\/v1\/card$/);
        }
        assert.equal(last.status, 200);
      }
    });

    test('blocking send: echo', TEST_OPTIONS, async () => {
      const { client, log } = await makeClient(binding);
      const task = await sendBlocking(client, userMessage('hello'));
      assert.ok(task.id, 'server did not assign a task id');
      assert.ok(task.contextId, 'server did not assign a context id');
      assertState(task, 'completed');
      assert.equal(echoArtifactText(task), 'hello');
      // reference agent: the completed status message carries the same text
      assert.deepEqual(texts(task.status.message?.parts), ['hello']);
      assert.equal(task.status.message.role, 'agent');

      // The request really went over the binding under test, as 0.3: no A2A-Version header.
      const url = transportUrl(await agentCard(), binding);
      const last = log.at(-1);
      assert.equal(last.method, 'POST');
      assert.equal(last.headers.get('a2a-version'), null);
      if (binding === 'JSONRPC') {
        assert.equal(last.url.replace(/\/+$/, ''), url);
        assert.equal(JSON.parse(last.body).method, 'message/send');
      } else {
        assert.equal(last.url, `${url}/v1/message:send`);
      }
    });

    test('get task', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const sent = await sendBlocking(client, userMessage('hello'));
      const got = await client.getTask({ id: sent.id });
      assert.equal(got.id, sent.id);
      assert.equal(got.contextId, sent.contextId);
      assertState(got, 'completed');
      assert.equal(echoArtifactText(got), 'hello');
      // historyLength 0 means "no messages"; 1 means at most the most recent one.
      const none = await client.getTask({ id: sent.id, historyLength: 0 });
      assert.equal(none.id, sent.id);
      assert.equal((none.history ?? []).length, 0, JSON.stringify(none.history));
      const one = await client.getTask({ id: sent.id, historyLength: 1 });
      assert.ok((one.history ?? []).length <= 1, JSON.stringify(one.history));
    });

    test('a resent message returns the same task', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const message = userMessage('hello once');
      const first = await sendBlocking(client, message);
      const again = await sendBlocking(client, message);
      assert.equal(again.id, first.id, 'a resent message made a second task');
      assertState(again, 'completed');
      assert.equal(echoArtifactText(again), 'hello once');
    });

    test('get unknown task: TaskNotFound', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      await rejectsWith(client.getTask({ id: randomUUID() }), TaskNotFoundError);
    });

    test('cancel a held task, then again', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const held = await sendBlocking(client, userMessage('hold'));
      // Blocking send returns at the interrupted state.
      assertState(held, 'input-required');
      const canceled = await client.cancelTask({ id: held.id });
      assert.equal(canceled.id, held.id);
      assertState(canceled, 'canceled');
      assertState(await client.getTask({ id: held.id }), 'canceled');
      // A terminal task cannot be canceled again.
      await rejectsWith(client.cancelTask({ id: held.id }), TaskNotCancelableError);
    });

    test('cancel unknown task: TaskNotFound', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      await rejectsWith(client.cancelTask({ id: randomUUID() }), TaskNotFoundError);
    });

    test('message to a terminal task: UnsupportedOperation', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const done = await sendBlocking(client, userMessage('hello'));
      assertState(done, 'completed');
      await rejectsWith(
        sendBlocking(client, userMessage('again', { taskId: done.id, contextId: done.contextId })),
        UnsupportedOperationError,
      );
    });

    test('streaming send: slow', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      let events = await collect(
        client.sendMessageStream({ message: userMessage('slow 3 50') }, callOptions()),
      );
      let kinds = events.map((e) => e.kind);
      // Optionally the server re-sends a final Task snapshot before closing.
      if (events.length === 7 && kinds.at(-1) === 'task') {
        assertState(events.at(-1), 'completed');
        events = events.slice(0, -1);
        kinds = kinds.slice(0, -1);
      }
      assert.deepEqual(kinds, [
        'task',
        'status-update',
        'artifact-update',
        'artifact-update',
        'artifact-update',
        'status-update',
      ]);
      const task = events[0];
      assert.ok(task.id && task.contextId);
      assert.ok(!TERMINAL.has(task.status.state), task.status.state);
      for (const e of events.slice(1)) {
        assert.equal(e.taskId, task.id);
        assert.equal(e.contextId, task.contextId);
      }
      assert.equal(events[1].status.state, 'working');
      assert.equal(Boolean(events[1].final), false);

      const chunks = events.slice(2, 5);
      assert.equal(new Set(chunks.map((c) => c.artifact.artifactId)).size, 1, 'chunks of one artifact');
      // The SDK's REST converter drops `append` (FromProto.taskArtifactUpdateEvent in 0.3.14
      // copies lastChunk only), so only its JSON-RPC transport shows it.
      if (binding === 'JSONRPC') {
        assert.deepEqual(chunks.map((c) => Boolean(c.append)), [false, true, true]);
      }
      assert.deepEqual(chunks.map((c) => Boolean(c.lastChunk)), [false, false, true]);
      assert.deepEqual(
        chunks.map((c) => texts(c.artifact.parts).join('')),
        ['chunk-1 ', 'chunk-2 ', 'chunk-3 '],
      );
      // 0.3 marks the last status event of a stream final.
      assert.equal(events[5].status.state, 'completed');
      assert.equal(events[5].final, true);

      const stored = await client.getTask({ id: task.id });
      assertState(stored, 'completed');
      assert.equal(stored.artifacts.length, 1);
      assert.equal(texts(stored.artifacts[0].parts).join(''), 'chunk-1 chunk-2 chunk-3 ');
    });

    test('resubscribe to a running task', TEST_OPTIONS, async () => {
      const { client: sender } = await makeClient(binding, { polling: true }); // blocking: false
      const { client: subscriber } = await makeClient(binding);
      const started = await sendBlocking(sender, userMessage('slow 5 200'));
      assert.ok(started.id);
      assert.ok(
        !TERMINAL.has(started.status.state),
        `non-blocking send came back terminal: ${started.status.state}`,
      );

      const events = await collect(subscriber.resubscribeTask({ id: started.id }, callOptions()));
      assert.ok(events.length, 'resubscription produced no events');
      for (const e of events) {
        assert.notEqual(e.kind, 'message', 'a task stream must not carry a Message');
        assert.equal(e.kind === 'task' ? e.id : e.taskId, started.id);
      }
      // The stream ends at the terminal state, marked final.
      const last = events.at(-1);
      assert.ok(['task', 'status-update'].includes(last.kind), last.kind);
      assert.equal(last.status.state, 'completed');
      if (last.kind === 'status-update') assert.equal(last.final, true);
      const statuses = events.filter((e) => e.kind === 'status-update');
      assert.ok(statuses.slice(0, -1).every((s) => !TERMINAL.has(s.status.state) && !s.final));

      const stored = await sender.getTask({ id: started.id });
      assertState(stored, 'completed');
      assert.equal(stored.artifacts.length, 1);
      assert.equal(
        texts(stored.artifacts[0].parts).join(''),
        [1, 2, 3, 4, 5].map((i) => `chunk-${i} `).join(''),
      );
      // Resubscribing to a terminal task is refused.
      await assert.rejects(collect(subscriber.resubscribeTask({ id: started.id }, callOptions())));
    });

    test('push config set, get, list, delete', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const held = await sendBlocking(client, userMessage('hold'));
      assertState(held, 'input-required');

      // Nobody listens here; configs are deleted before the task changes again.
      const url = `https://example.com/a2a-webhook/${randomUUID()}`;
      const token = randomUUID();
      const created = await client.setTaskPushNotificationConfig({
        taskId: held.id,
        pushNotificationConfig: {
          url,
          token,
          authentication: { schemes: ['Bearer'], credentials: 's3cret' },
        },
      });
      const config = created.pushNotificationConfig;
      assert.ok(config.id, 'server did not assign a config id');
      assert.equal(created.taskId, held.id);
      assert.equal(config.url, url);
      assert.equal(config.token, token);
      assert.deepEqual(config.authentication.schemes.map((s) => s.toLowerCase()), ['bearer']);

      const got = await client.getTaskPushNotificationConfig({
        id: held.id,
        pushNotificationConfigId: config.id,
      });
      assert.equal(got.taskId, held.id);
      assert.equal(got.pushNotificationConfig.id, config.id);
      assert.equal(got.pushNotificationConfig.url, url);
      // Secrets are written, never read back (in every generation).
      assert.ok(!got.pushNotificationConfig.token, 'no token on read');

      // A second config with a client-chosen id.
      const secondId = `cfg-${randomUUID()}`;
      const second = await client.setTaskPushNotificationConfig({
        taskId: held.id,
        pushNotificationConfig: { id: secondId, url: `${url}/2` },
      });
      assert.equal(second.pushNotificationConfig.id, secondId);

      let listed = await client.listTaskPushNotificationConfig({ id: held.id });
      const byId = new Map(listed.map((c) => [c.pushNotificationConfig.id, c]));
      assert.deepEqual(new Set(byId.keys()), new Set([config.id, secondId]));
      assert.equal(byId.get(config.id).pushNotificationConfig.url, url);
      assert.ok(listed.every((c) => c.taskId === held.id));

      await client.deleteTaskPushNotificationConfig({ id: held.id, pushNotificationConfigId: config.id });
      listed = await client.listTaskPushNotificationConfig({ id: held.id });
      assert.deepEqual(listed.map((c) => c.pushNotificationConfig.id), [secondId]);
      await assert.rejects(
        client.getTaskPushNotificationConfig({ id: held.id, pushNotificationConfigId: config.id }),
      );

      await client.deleteTaskPushNotificationConfig({ id: held.id, pushNotificationConfigId: secondId });
      listed = await client.listTaskPushNotificationConfig({ id: held.id });
      assert.equal(listed.length, 0);

      // Push config calls on an unknown task: TaskNotFound.
      await rejectsWith(client.listTaskPushNotificationConfig({ id: randomUUID() }), TaskNotFoundError);

      assertState(await client.cancelTask({ id: held.id }), 'canceled');
    });

    describe('push delivery', () => {
      let webhook;
      before(async () => {
        webhook = await new WebhookReceiver().start();
      });
      after(async () => {
        await webhook.close();
      });

      test('push delivered to a webhook, 0.3-shaped', TEST_OPTIONS, async () => {
        const { client } = await makeClient(binding);
        const held = await sendBlocking(client, userMessage('hold'));
        assertState(held, 'input-required');

        const path = `/webhook/${randomUUID()}`;
        const token = `tok-${randomUUID()}`;
        const credentials = `cred-${randomUUID()}`;
        const created = await client.setTaskPushNotificationConfig({
          taskId: held.id,
          pushNotificationConfig: {
            url: webhook.url(path),
            token,
            authentication: { schemes: ['Bearer'], credentials },
          },
        });
        assert.ok(created.pushNotificationConfig.id);

        // The follow-up completes the held task (echo of the follow-up).
        const done = await sendBlocking(
          client,
          userMessage('done', { taskId: held.id, contextId: held.contextId }),
        );
        assert.equal(done.id, held.id);
        assertState(done, 'completed');
        assert.equal(echoArtifactText(done), 'done');

        // A config set by a 0.3 client gets what a 0.3 receiver reads: the Task, with its kind.
        for (;;) {
          const push = await webhook.next();
          assert.equal(push.method, 'POST');
          assert.equal(push.path, path);
          assert.equal(push.headers['x-a2a-notification-token'], token);
          assert.equal(push.headers.authorization, `Bearer ${credentials}`);
          const body = JSON.parse(push.body);
          assert.equal(body.kind, 'task', push.body);
          assert.equal(body.id, held.id);
          if (body.status?.state === 'completed') {
            assert.equal(echoArtifactText(body), 'done');
            break;
          }
        }
      });
    });

    test('a task from the 0.3 client, read with a 1.0 request', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const sent = await sendBlocking(client, userMessage('hello'));
      const raw = await (await fetch(`${BASE_URL}/.well-known/agent-card.json`)).json();
      const iface = (raw.supportedInterfaces ?? []).find(
        (i) => i.protocolBinding === binding && i.protocolVersion?.startsWith('1.'),
      );
      assert.ok(iface, `no 1.0 ${binding} interface: ${JSON.stringify(raw.supportedInterfaces)}`);
      const url = iface.url.replace(/\/+$/, '');
      const headers = {
        'A2A-Version': '1.0',
        'Content-Type': 'application/json',
        ...(BEARER_TOKEN ? { Authorization: `Bearer ${BEARER_TOKEN}` } : {}),
      };
      let task;
      if (binding === 'JSONRPC') {
        const response = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: sent.id } }),
        });
        assert.equal(response.status, 200);
        const body = await response.json();
        assert.equal(body.error, undefined, JSON.stringify(body));
        task = body.result;
      } else {
        const response = await fetch(`${url}/tasks/${sent.id}`, { headers });
        assert.equal(response.status, 200);
        task = await response.json();
      }
      assert.equal(task.id, sent.id);
      assert.equal(task.contextId, sent.contextId);
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
      assert.equal(task.kind, undefined, 'a 1.0 answer carries no 0.3 kind discriminator');
      const echo = task.artifacts.filter((a) => a.name === 'echo');
      assert.deepEqual(echo[0].parts.map((p) => p.text), ['hello']);
    });
  });
}
