// Shared pieces of the @a2a-js/sdk interop suite: the server under test, clients forced onto
// one binding, a request log, and a webhook receiver on 127.0.0.1.
//
// The server is reached through A2A_BASE_URL (its card at /.well-known/agent-card.json must list
// a JSONRPC and an HTTP+JSON interface). With A2A_BEARER_TOKEN set, every client request carries
// `Authorization: Bearer $A2A_BEARER_TOKEN` (the server runs with --auth jwt).

import { randomUUID } from 'node:crypto';

import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

export const BINDINGS = ['JSONRPC', 'HTTP+JSON'];

if (!process.env.A2A_BASE_URL) {
  throw new Error('A2A_BASE_URL is not set (e.g. A2A_BASE_URL=http://127.0.0.1:9000)');
}
export const BASE_URL = process.env.A2A_BASE_URL.replace(/\/+$/, '');
export const BEARER_TOKEN = process.env.A2A_BEARER_TOKEN || undefined;

// Generous: a debug build or a queued task can be slow, but nothing here should take this long.
export const TIMEOUT_MS = Number(process.env.A2A_INTEROP_HTTP_TIMEOUT ?? '30') * 1000;
export const TEST_OPTIONS = { timeout: 3 * TIMEOUT_MS };

export const TERMINAL = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** A `fetch` that sends the run's credentials (if any) and records each request in `log`. */
export function authFetch(log = [], token = BEARER_TOKEN) {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (token) headers.set('Authorization', `Bearer ${token}`);
    log.push({ method: init.method ?? 'GET', url: String(url), body: init.body });
    return fetch(url, { ...init, headers });
  };
}

/** The public card, fetched without credentials through the SDK's resolver. */
export async function agentCard() {
  return new DefaultAgentCardResolver().resolve(BASE_URL);
}

/**
 * A Client built the way an application builds one: the card is resolved from the base URL by
 * `ClientFactory.createFromUrl`, with only the transport of `binding` on offer.
 * Returns `{ client, log }`; `log` lists every HTTP request the client made.
 */
export async function makeClient(binding, { token = BEARER_TOKEN } = {}) {
  const log = [];
  const fetchImpl = authFetch(log, token);
  const transport =
    binding === 'JSONRPC'
      ? new JsonRpcTransportFactory({ fetchImpl })
      : new RestTransportFactory({ fetchImpl });
  const factory = new ClientFactory({
    transports: [transport],
    preferredTransports: [binding],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  const client = await factory.createFromUrl(BASE_URL);
  if (client.transport.protocolName !== binding) {
    throw new Error(`client picked ${client.transport.protocolName} for binding ${binding}`);
  }
  return { client, log };
}

/** A user message with one text part. */
export function userMessage(text, { taskId, contextId, messageId = randomUUID() } = {}) {
  return {
    messageId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text } }],
    ...(taskId ? { taskId } : {}),
    ...(contextId ? { contextId } : {}),
  };
}

/** The texts of text parts. */
export function texts(parts = []) {
  return parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value);
}

/** Non-streaming SendMessage whose result must be a Task. */
export async function sendBlocking(client, message, configuration) {
  const result = await client.sendMessage(
    { message, ...(configuration ? { configuration } : {}) },
    { signal: AbortSignal.timeout(TIMEOUT_MS) },
  );
  if (!result || 'messageId' in result || !result.id) {
    throw new Error(`expected a Task result, got ${JSON.stringify(result)}`);
  }
  return result;
}

/** Reads a stream to its end (the server closes it at the terminal state). */
export async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** Options that bound one streaming call. */
export function streamOptions() {
  return { signal: AbortSignal.timeout(TIMEOUT_MS) };
}

/** The kind of a StreamResponse: task, message, statusUpdate or artifactUpdate. */
export function kind(event) {
  const k = event?.payload?.$case;
  if (!['task', 'message', 'statusUpdate', 'artifactUpdate'].includes(k)) {
    throw new Error(`StreamResponse without payload: ${JSON.stringify(event)}`);
  }
  return k;
}

export function stateName(state) {
  return TaskState[state] ?? String(state);
}

export { WebhookReceiver } from '../interop-common/webhook-receiver.mjs';
