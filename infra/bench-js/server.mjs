// The reference agent's echo skill on the official A2A JS SDK's server (its in-memory task
// store, JSON-RPC over Express), so that infra/bench.sh --compare-js measures both servers
// under the same load in the same run. Like a2a-local's echo, a task is created WORKING, gets one
// artifact named `echo` holding the text received, and COMPLETES with the same text.
//
//   PORT=0 node server.mjs     prints "serving on http://127.0.0.1:<port>" once it listens
import { randomUUID } from 'node:crypto';
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

// The SDK's generated types number the enums (TaskState, Role).
const WORKING = 2;
const COMPLETED = 3;
const ROLE_AGENT = 2;

const textPart = (value) => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});
const textOf = (message) =>
  message.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const now = () => new Date().toISOString();

const echo = {
  async execute(ctx, bus) {
    const received = ctx.userMessage;
    const text = textOf(received);
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    bus.publish(AgentEvent.task({
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: WORKING, message: undefined, timestamp: now() },
      artifacts: [],
      history: [received],
      metadata: undefined,
    }));
    bus.publish(AgentEvent.artifactUpdate({
      ...ids,
      artifact: {
        artifactId: randomUUID(),
        name: 'echo',
        description: '',
        parts: [textPart(text)],
        metadata: undefined,
        extensions: [],
      },
      append: false,
      lastChunk: true,
      metadata: undefined,
    }));
    bus.publish(AgentEvent.statusUpdate({
      ...ids,
      status: {
        state: COMPLETED,
        message: {
          messageId: randomUUID(),
          ...ids,
          role: ROLE_AGENT,
          parts: [textPart(text)],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
        timestamp: now(),
      },
      metadata: undefined,
    }));
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address();
  const card = {
    name: 'echo',
    description: 'The reference agent\'s echo skill, for benchmarks',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `http://127.0.0.1:${port}/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    ],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
  app.use(express.json());
  app.use('/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`serving on http://127.0.0.1:${port}`);
});
