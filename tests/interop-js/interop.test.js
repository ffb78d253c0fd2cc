// Interop suite: the official JS SDK client (@a2a-js/sdk, pinned in package.json) against our
// server, the same checks as the Python suite (tests/interop/test_interop.py), once per binding.
// The agent's behaviour (`hello` echo, `hold`, `slow N MS`) is fixed in
// shared/reference-agent.md.
//
// Requests are written the way a JavaScript application writes them: only the fields it means,
// so the SDK sends what it sends for the rest (`"pageSize": null` on
// ListTaskPushNotificationConfigs, for one). Nothing sleeps to synchronise: streams are read to
// their end and webhook deliveries are awaited, all under explicit timeouts.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { Role, TaskState } from '@a2a-js/sdk';
import { A2AError } from '@a2a-js/sdk/errors';

import {
  BINDINGS,
  TERMINAL,
  TEST_OPTIONS,
  WebhookReceiver,
  agentCard,
  collect,
  kind,
  makeClient,
  sendBlocking,
  stateName,
  streamOptions,
  texts,
  userMessage,
} from './helpers.js';

function assertState(task, state) {
  assert.equal(
    task.status?.state,
    state,
    `task ${task.id}: expected ${stateName(state)}, got ${stateName(task.status?.state)}`,
  );
}

function echoArtifactText(task) {
  const echo = task.artifacts.filter((a) => a.name === 'echo');
  assert.equal(echo.length, 1, `expected one artifact named "echo": ${JSON.stringify(task.artifacts)}`);
  assert.ok(echo[0].artifactId, 'artifact without artifactId');
  return texts(echo[0].parts).join('');
}

/**
 * Asserts that `promise` rejects with the A2A error of `reason`. An error event inside a JSON-RPC
 * stream reaches the caller as a plain Error whose `cause` is the typed A2A error (that is how
 * this SDK reports stream errors), so the typed error is looked for there too.
 */
async function rejectsWith(promise, reason) {
  await assert.rejects(promise, (err) => {
    const a2a = err instanceof A2AError ? err : err?.cause;
    assert.ok(a2a instanceof A2AError, `not an A2AError: ${err}`);
    assert.equal(a2a.reason, reason, String(err));
    return true;
  });
}

// The SDK writes a missing `status` as "UNRECOGNIZED" (its TypeScript type makes the field
// required), so ListTasks calls name TASK_STATE_UNSPECIFIED, which means "no filter".
const ANY_STATE = { status: TaskState.TASK_STATE_UNSPECIFIED };

for (const binding of BINDINGS) {
  describe(binding, () => {
    test('agent card', TEST_OPTIONS, async () => {
      const card = await agentCard();
      assert.ok(card.name, 'card.name is empty');
      assert.equal(card.capabilities?.streaming, true);
      assert.equal(card.capabilities?.pushNotifications, true);
      // The first interface of each binding, the one a 1.0 client takes; interfaces of older
      // protocol versions on the same binding may follow it.
      const byBinding = new Map();
      for (const i of card.supportedInterfaces) {
        if (!byBinding.has(i.protocolBinding)) byBinding.set(i.protocolBinding, i);
      }
      for (const b of BINDINGS) {
        assert.ok(byBinding.has(b), `card lists no ${b} interface: ${[...byBinding.keys()]}`);
      }
      const iface = byBinding.get(binding);
      assert.deepEqual(iface.protocolVersion.split('.').slice(0, 2), ['1', '0']);
      assert.match(iface.url, /^https?:\/\//);
      // The SDK can build a client for this binding from the card.
      const { client } = await makeClient(binding);
      assert.equal(client.transport.protocolName, binding);
    });

    test('blocking send: echo', TEST_OPTIONS, async () => {
      const { client, log } = await makeClient(binding);
      const task = await sendBlocking(client, userMessage('hello'));
      assert.ok(task.id, 'server did not assign a task id');
      assert.ok(task.contextId, 'server did not assign a context id');
      assertState(task, TaskState.TASK_STATE_COMPLETED);
      assert.equal(echoArtifactText(task), 'hello');
      // reference agent: the completed status message carries the same text
      assert.deepEqual(texts(task.status.message?.parts), ['hello']);
      assert.equal(task.status.message.role, Role.ROLE_AGENT);

      // The request really went over the binding under test.
      const card = await agentCard();
      const ifaceUrl = card.supportedInterfaces
        .find((i) => i.protocolBinding === binding)
        .url.replace(/\/+$/, '');
      const last = log.at(-1);
      assert.equal(last.method, 'POST');
      if (binding === 'JSONRPC') {
        assert.equal(last.url.replace(/\/+$/, ''), ifaceUrl);
        assert.equal(JSON.parse(last.body).method, 'SendMessage');
      } else {
        assert.equal(last.url, `${ifaceUrl}/message:send`);
      }
    });

    test('get task', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const sent = await sendBlocking(client, userMessage('hello'));
      const got = await client.getTask({ id: sent.id });
      assert.equal(got.id, sent.id);
      assert.equal(got.contextId, sent.contextId);
      assertState(got, TaskState.TASK_STATE_COMPLETED);
      assert.equal(echoArtifactText(got), 'hello');
      // historyLength 0 means "no messages"; 1 means at most the most recent one.
      const none = await client.getTask({ id: sent.id, historyLength: 0 });
      assert.equal(none.id, sent.id);
      assert.equal(none.history.length, 0, JSON.stringify(none.history));
      const one = await client.getTask({ id: sent.id, historyLength: 1 });
      assert.ok(one.history.length <= 1, JSON.stringify(one.history));
    });

    test('a resent message returns the same task', TEST_OPTIONS, async () => {
      // A client retrying after a timeout sends the same message (same messageId) again: the
      // server answers with the task the first copy started instead of running it twice.
      const { client } = await makeClient(binding);
      const message = userMessage('hello once');
      const first = await sendBlocking(client, message);
      const again = await sendBlocking(client, message);
      assert.equal(again.id, first.id, 'a resent message made a second task');
      assertState(again, TaskState.TASK_STATE_COMPLETED);
      assert.equal(echoArtifactText(again), 'hello once');
    });

    test('get unknown task: TaskNotFound', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      await rejectsWith(client.getTask({ id: randomUUID() }), 'TASK_NOT_FOUND');
    });

    test('list tasks by context, with artifacts, and by page', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const first = await sendBlocking(client, userMessage('hello'));
      const ctx = first.contextId;
      // A new task (no taskId) in the same context.
      const second = await sendBlocking(client, userMessage('hello', { contextId: ctx }));
      assert.equal(second.contextId, ctx);
      assert.notEqual(second.id, first.id);
      // An unrelated task in another context must not show up.
      const other = await sendBlocking(client, userMessage('hello'));
      assert.notEqual(other.contextId, ctx);

      const listed = await client.listTasks({ contextId: ctx, ...ANY_STATE });
      assert.deepEqual(listed.tasks.map((t) => t.id).sort(), [first.id, second.id].sort());
      assert.ok(listed.tasks.every((t) => t.contextId === ctx));
      assert.equal(listed.nextPageToken, '');
      assert.equal(listed.totalSize, 2);
      for (const t of listed.tasks) {
        assertState(t, TaskState.TASK_STATE_COMPLETED);
        // includeArtifacts defaults to false: artifacts are omitted.
        assert.equal(t.artifacts.length, 0, `artifacts present without includeArtifacts: ${t.id}`);
      }

      const withArtifacts = await client.listTasks({
        contextId: ctx,
        includeArtifacts: true,
        ...ANY_STATE,
      });
      assert.equal(withArtifacts.tasks.length, 2);
      for (const t of withArtifacts.tasks) assert.equal(echoArtifactText(t), 'hello');

      // Paging with a cursor walks both tasks exactly once.
      const page1 = await client.listTasks({ contextId: ctx, pageSize: 1, ...ANY_STATE });
      assert.equal(page1.tasks.length, 1);
      assert.notEqual(page1.nextPageToken, '');
      const page2 = await client.listTasks({
        contextId: ctx,
        pageSize: 1,
        pageToken: page1.nextPageToken,
        ...ANY_STATE,
      });
      assert.equal(page2.tasks.length, 1);
      assert.equal(page2.nextPageToken, '');
      assert.deepEqual(
        new Set([page1.tasks[0].id, page2.tasks[0].id]),
        new Set([first.id, second.id]),
      );
    });

    test('null fields read as absent', TEST_OPTIONS, async () => {
      // An application that passes its unset values along: the SDK sends them as `null`.
      const { client, log } = await makeClient(binding);
      const sent = await sendBlocking(client, userMessage('hello'));
      const listed = await client.listTasks({
        contextId: null,
        pageToken: null,
        historyLength: 0,
        ...ANY_STATE,
      });
      assert.ok(
        listed.tasks.some((t) => t.id === sent.id),
        'the new task is listed without a context filter',
      );
      const configs = await client.listTaskPushNotificationConfig({ taskId: sent.id });
      assert.deepEqual(configs.configs, []);
      if (binding === 'JSONRPC') {
        const params = log.map((e) => JSON.parse(e.body ?? '{}').params ?? {});
        assert.ok(
          params.some((p) => p.contextId === null),
          'ListTasks sent contextId: null',
        );
        assert.ok(
          params.some((p) => p.taskId === sent.id && p.pageSize === null),
          'ListTaskPushNotificationConfigs sent pageSize: null',
        );
      }
    });

    test('cancel a held task, then again', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const held = await sendBlocking(client, userMessage('hold'));
      // Blocking send returns at the interrupted state.
      assertState(held, TaskState.TASK_STATE_INPUT_REQUIRED);
      const canceled = await client.cancelTask({ id: held.id });
      assert.equal(canceled.id, held.id);
      assertState(canceled, TaskState.TASK_STATE_CANCELED);
      const afterCancel = await client.getTask({ id: held.id });
      assertState(afterCancel, TaskState.TASK_STATE_CANCELED);
      // A terminal task cannot be canceled again.
      await rejectsWith(client.cancelTask({ id: held.id }), 'TASK_NOT_CANCELABLE');
    });

    test('cancel unknown task: TaskNotFound', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      await rejectsWith(client.cancelTask({ id: randomUUID() }), 'TASK_NOT_FOUND');
    });

    test('message to a terminal task: UnsupportedOperation', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const done = await sendBlocking(client, userMessage('hello'));
      assertState(done, TaskState.TASK_STATE_COMPLETED);
      await rejectsWith(
        sendBlocking(client, userMessage('again', { taskId: done.id })),
        'UNSUPPORTED_OPERATION',
      );
    });

    test('streaming send: slow', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      let events = await collect(
        client.sendMessageStream({ message: userMessage('slow 3 50') }, streamOptions()),
      );
      let kinds = events.map(kind);
      // Optionally the server re-sends a final Task snapshot before closing.
      if (events.length === 7 && kinds.at(-1) === 'task') {
        assertState(events.at(-1).payload.value, TaskState.TASK_STATE_COMPLETED);
        events = events.slice(0, -1);
        kinds = kinds.slice(0, -1);
      }
      assert.deepEqual(kinds, [
        'task',
        'statusUpdate',
        'artifactUpdate',
        'artifactUpdate',
        'artifactUpdate',
        'statusUpdate',
      ]);
      const task = events[0].payload.value;
      assert.ok(task.id && task.contextId);
      assert.ok(!TERMINAL.has(task.status.state), stateName(task.status.state));
      for (const e of events.slice(1)) {
        assert.equal(e.payload.value.taskId, task.id);
        assert.equal(e.payload.value.contextId, task.contextId);
      }
      assert.equal(events[1].payload.value.status.state, TaskState.TASK_STATE_WORKING);

      const chunks = events.slice(2, 5).map((e) => e.payload.value);
      assert.equal(new Set(chunks.map((c) => c.artifact.artifactId)).size, 1, 'chunks of one artifact');
      assert.ok(chunks[0].artifact.artifactId);
      assert.deepEqual(chunks.map((c) => c.append), [false, true, true]);
      assert.deepEqual(chunks.map((c) => c.lastChunk), [false, false, true]);
      assert.deepEqual(
        chunks.map((c) => texts(c.artifact.parts).join('')),
        ['chunk-1 ', 'chunk-2 ', 'chunk-3 '],
      );
      assert.equal(events[5].payload.value.status.state, TaskState.TASK_STATE_COMPLETED);

      // The stored task agrees with what was streamed.
      const stored = await client.getTask({ id: task.id });
      assertState(stored, TaskState.TASK_STATE_COMPLETED);
      assert.equal(stored.artifacts.length, 1);
      assert.equal(texts(stored.artifacts[0].parts).join(''), 'chunk-1 chunk-2 chunk-3 ');
    });

    test('subscribe to a running task', TEST_OPTIONS, async () => {
      const { client: sender } = await makeClient(binding);
      const { client: subscriber } = await makeClient(binding);
      const started = await sendBlocking(sender, userMessage('slow 5 200'), {
        returnImmediately: true,
      });
      assert.ok(started.id);
      assert.ok(
        !TERMINAL.has(started.status.state),
        `returnImmediately send came back terminal: ${stateName(started.status.state)}`,
      );

      const events = await collect(subscriber.resubscribeTask({ id: started.id }, streamOptions()));
      assert.ok(events.length, 'subscription produced no events');
      // First event is the Task snapshot.
      assert.equal(kind(events[0]), 'task', events.map(kind).join());
      const snapshot = events[0].payload.value;
      assert.equal(snapshot.id, started.id);
      assert.equal(snapshot.contextId, started.contextId);
      assert.ok(!TERMINAL.has(snapshot.status.state));
      for (const e of events.slice(1)) {
        assert.notEqual(kind(e), 'message', 'a task stream must not carry a Message');
        assert.equal(e.payload.value.taskId, started.id);
      }
      // The stream ends at the terminal state.
      const last = events.at(-1);
      assert.ok(['task', 'statusUpdate'].includes(kind(last)), kind(last));
      assert.equal(last.payload.value.status.state, TaskState.TASK_STATE_COMPLETED);
      // Nothing non-terminal is reported after a terminal status.
      const states = events
        .filter((e) => kind(e) === 'statusUpdate')
        .map((e) => e.payload.value.status.state);
      assert.ok(
        states.slice(0, -1).every((s) => !TERMINAL.has(s)),
        states.map(stateName).join(),
      );

      const stored = await sender.getTask({ id: started.id });
      assertState(stored, TaskState.TASK_STATE_COMPLETED);
      assert.equal(stored.artifacts.length, 1);
      assert.equal(
        texts(stored.artifacts[0].parts).join(''),
        [1, 2, 3, 4, 5].map((i) => `chunk-${i} `).join(''),
      );
      // Subscribing to a terminal task is UnsupportedOperation.
      await rejectsWith(
        collect(subscriber.resubscribeTask({ id: started.id }, streamOptions())),
        'UNSUPPORTED_OPERATION',
      );
    });

    test('push config CRUD', TEST_OPTIONS, async () => {
      const { client } = await makeClient(binding);
      const held = await sendBlocking(client, userMessage('hold'));
      assertState(held, TaskState.TASK_STATE_INPUT_REQUIRED);

      // Nobody listens here; configs are deleted before the task changes again.
      const url = `https://example.com/a2a-webhook/${randomUUID()}`;
      const token = randomUUID();
      const created = await client.createTaskPushNotificationConfig({
        taskId: held.id,
        url,
        token,
        authentication: { scheme: 'Bearer', credentials: 's3cret' },
      });
      assert.ok(created.id, 'server did not assign a config id');
      assert.equal(created.taskId, held.id);
      assert.equal(created.url, url);
      assert.equal(created.token, token);
      assert.equal(created.authentication?.scheme.toLowerCase(), 'bearer');

      const got = await client.getTaskPushNotificationConfig({ taskId: held.id, id: created.id });
      assert.equal(got.id, created.id);
      assert.equal(got.taskId, held.id);
      assert.equal(got.url, url);
      // Secrets are written, never read back: no token, no credentials (the scheme stays).
      assert.ok(!got.token, `no token on read: ${got.token}`);
      assert.equal(got.authentication?.scheme.toLowerCase(), 'bearer');
      assert.ok(!got.authentication?.credentials, 'no credentials on read');

      // A second config with a client-chosen id.
      const secondId = `cfg-${randomUUID()}`;
      const second = await client.createTaskPushNotificationConfig({
        taskId: held.id,
        id: secondId,
        url: `${url}/2`,
      });
      assert.equal(second.id, secondId);
      assert.notEqual(second.id, created.id);

      let listed = await client.listTaskPushNotificationConfig({ taskId: held.id });
      const byId = new Map(listed.configs.map((c) => [c.id, c]));
      assert.deepEqual(new Set(byId.keys()), new Set([created.id, second.id]));
      assert.equal(byId.get(created.id).url, url);
      assert.ok(!byId.get(created.id).token && !byId.get(created.id).authentication?.credentials);
      assert.ok(listed.configs.every((c) => c.taskId === held.id));

      await client.deleteTaskPushNotificationConfig({ taskId: held.id, id: created.id });
      listed = await client.listTaskPushNotificationConfig({ taskId: held.id });
      assert.deepEqual(listed.configs.map((c) => c.id), [second.id]);
      await assert.rejects(
        client.getTaskPushNotificationConfig({ taskId: held.id, id: created.id }),
        A2AError,
      );

      await client.deleteTaskPushNotificationConfig({ taskId: held.id, id: second.id });
      listed = await client.listTaskPushNotificationConfig({ taskId: held.id });
      assert.equal(listed.configs.length, 0);

      // Push ops on an unknown task: TaskNotFound.
      await rejectsWith(
        client.listTaskPushNotificationConfig({ taskId: randomUUID() }),
        'TASK_NOT_FOUND',
      );

      const canceled = await client.cancelTask({ id: held.id });
      assertState(canceled, TaskState.TASK_STATE_CANCELED);
    });

    describe('push delivery', () => {
      let webhook;
      before(async () => {
        webhook = await new WebhookReceiver().start();
      });
      after(async () => {
        await webhook.close();
      });

      test('push delivered to a webhook', TEST_OPTIONS, async () => {
        const { client } = await makeClient(binding);
        const held = await sendBlocking(client, userMessage('hold'));
        assertState(held, TaskState.TASK_STATE_INPUT_REQUIRED);

        const path = `/webhook/${randomUUID()}`;
        const token = `tok-${randomUUID()}`;
        const credentials = `cred-${randomUUID()}`;
        const created = await client.createTaskPushNotificationConfig({
          taskId: held.id,
          url: webhook.url(path),
          token,
          authentication: { scheme: 'Bearer', credentials },
        });
        assert.ok(created.id);

        // The follow-up completes the held task (echo of the follow-up).
        const done = await sendBlocking(client, userMessage('done', { taskId: held.id }));
        assert.equal(done.id, held.id);
        assertState(done, TaskState.TASK_STATE_COMPLETED);
        assert.equal(echoArtifactText(done), 'done');

        for (;;) {
          const push = await webhook.next();
          assert.equal(push.method, 'POST');
          assert.equal(push.path, path);
          assert.equal(push.headers['x-a2a-notification-token'], token);
          assert.equal(push.headers.authorization, `Bearer ${credentials}`);
          const body = JSON.parse(push.body);
          const present = ['task', 'message', 'statusUpdate', 'artifactUpdate'].filter(
            (k) => k in body,
          );
          assert.equal(present.length, 1, `push body is not a StreamResponse: ${push.body}`);
          const payload = body[present[0]];
          const pushedTaskId = present[0] === 'task' ? payload.id : payload.taskId;
          assert.equal(pushedTaskId, held.id);
          if (payload.status?.state === 'TASK_STATE_COMPLETED') break;
        }
      });
    });
  });
}
