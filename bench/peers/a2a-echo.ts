/**
 * A plain A2A server built on @a2a-js/sdk alone, the baseline of the A2A facade's row: express,
 * the SDK's JSON-RPC and agent-card handlers over its DefaultRequestHandler and in-memory task
 * store, and an AgentExecutor that echoes. Each message becomes a task that ends completed with
 * one artifact holding the message's data, the shape the facade answers tap.test.echo with.
 * Listens on 127.0.0.1 (any free port) and prints its URL on stdout.
 */
import type { AddressInfo } from 'node:net';
import type { AgentCard, Part } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';

const COMPLETED = 3;

/** The message's first DataPart, echoed. */
const echoOf = (parts: Part[]): Part[] => parts.filter((p) => p.content?.$case === 'data').slice(0, 1);

const executor: AgentExecutor = {
  async execute(context, bus) {
    const message = context.userMessage;
    bus.publish(
      AgentEvent.task({
        id: context.taskId,
        contextId: context.contextId,
        status: { state: COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [
          { artifactId: 'result', name: 'result', description: '', parts: echoOf(message.parts), metadata: undefined, extensions: [] },
        ],
        history: [message],
        metadata: undefined,
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
const server = await new Promise<ReturnType<typeof app.listen>>((resolve, reject) => {
  const s = app.listen(0, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(s)));
});
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
const card: AgentCard = {
  name: 'A2A echo',
  description: 'Echoes the data of each message as a completed task.',
  supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  provider: undefined,
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['application/json'],
  defaultOutputModes: ['application/json'],
  skills: [
    {
      id: 'echo',
      name: 'echo',
      description: 'Echoes its input.',
      tags: [],
      examples: [],
      inputModes: ['application/json'],
      outputModes: ['application/json'],
      securityRequirements: [],
    },
  ],
  signatures: [],
};
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
process.on('SIGTERM', () => process.exit(0));
process.stdout.write(`${url}\n`);
