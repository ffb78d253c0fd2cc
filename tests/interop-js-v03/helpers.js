// Shared pieces of the @a2a-js/sdk 0.3 interop suite: the server under test, clients forced onto
// one binding, a request log, and a webhook receiver on 127.0.0.1.
//
// The server is reached through A2A_BASE_URL. A 0.3 client finds the agent as the 0.3 SDK does:
// its resolver fetches /.well-known/agent-card.json, and ClientFactory picks the transport from
// the card's 0.3 fields (`preferredTransport` + `url`, `additionalInterfaces`). It sends no
// A2A-Version header, which makes each request 0.3 to the server. With A2A_BEARER_TOKEN set,
// every client request carries `Authorization: Bearer $A2A_BEARER_TOKEN`.

import { randomUUID } from 'node:crypto';

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

export const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** A `fetch` that sends the run's credentials (if any) and records each request in `log`. */
export function authFetch(log = []) {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (BEARER_TOKEN) headers.set('Authorization', `Bearer ${BEARER_TOKEN}`);
    const entry = { method: init.method ?? 'GET', url: String(url), body: init.body, headers };
    log.push(entry);
    const response = await fetch(url, { ...init, headers });
    entry.status = response.status;
    return response;
  };
}

/** The public card, fetched without credentials through the SDK's resolver. */
export async function agentCard() {
  return new DefaultAgentCardResolver().resolve(BASE_URL);
}

/** The URL a 0.3 client uses for `binding`, read from the card as ClientFactory reads it. */
export function transportUrl(card, binding) {
  const offered = new Map([[card.preferredTransport ?? 'JSONRPC', card.url]]);
  for (const i of card.additionalInterfaces ?? []) offered.set(i.transport, i.url);
  const url = offered.get(binding);
  if (!url) throw new Error(`the 0.3 card offers no ${binding}: ${[...offered.keys()]}`);
  return url.replace(/\/+$/, '');
}

/**
 * A Client built the way an application builds one: `ClientFactory.createFromUrl` resolves the
 * card from the base URL, with only the transport of `binding` on offer.
 * Returns `{ client, log }`; `log` lists every HTTP request the client made.
 */
export async function makeClient(binding, { polling = false } = {}) {
  const log = [];
  const fetchImpl = authFetch(log);
  const transport =
    binding === 'JSONRPC'
      ? new JsonRpcTransportFactory({ fetchImpl })
      : new RestTransportFactory({ fetchImpl });
  const factory = new ClientFactory({
    transports: [transport],
    preferredTransports: [binding],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    clientConfig: { polling },
  });
  const client = await factory.createFromUrl(BASE_URL);
  return { client, log };
}

/** A 0.3 user message with one text part. */
export function userMessage(text, { taskId, contextId, messageId = randomUUID() } = {}) {
  return {
    kind: 'message',
    messageId,
    role: 'user',
    parts: [{ kind: 'text', text }],
    ...(taskId ? { taskId } : {}),
    ...(contextId ? { contextId } : {}),
  };
}

/** The texts of text parts. */
export function texts(parts = []) {
  return parts.filter((p) => p.kind === 'text').map((p) => p.text);
}

/** Non-streaming message/send whose result must be a Task. */
export async function sendBlocking(client, message) {
  const result = await client.sendMessage({ message }, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (result?.kind !== 'task' || !result.id) {
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

/** Options that bound one call. */
export function callOptions() {
  return { signal: AbortSignal.timeout(TIMEOUT_MS) };
}

export { WebhookReceiver } from '../interop-common/webhook-receiver.mjs';
