/**
 * The reference agent as tap-reference-agent builds it (the runtime of reference/agent with the
 * conformance capabilities and the same card), with its task limits raised to --max-tasks so that
 * 64 tasks in flight, or 10,000 open ones, are not refused with BUSY. Over stdio by default;
 * with --listen ws://127.0.0.1:0 it serves WebSocket sessions and prints the URL on stdout;
 * --max-connections raises its connection table, in all and for one source (every bench client
 * connects from 127.0.0.1), for the row that opens a thousand sessions at once.
 * Only warnings and errors are logged (to stderr).
 */
import { parseArgs } from 'node:util';
import { createAgent } from '../../dist/reference/agent/index.js';
import { benchAgentOptions } from '../lib/agent-options.ts';

const { values } = parseArgs({
  options: {
    listen: { type: 'string' },
    'max-tasks': { type: 'string', default: '100000' },
    'max-connections': { type: 'string' },
  },
});
const maxConnections = values['max-connections'] === undefined ? undefined : Number(values['max-connections']);
const agent = createAgent({
  ...benchAgentOptions(Number(values['max-tasks'])),
  ...(maxConnections ? { maxConnections, maxConnectionsPerSource: maxConnections } : {}),
});
process.on('SIGTERM', () => process.exit(0));

if (values.listen !== undefined) {
  const url = new URL(values.listen);
  const listener = await agent.listen({ host: url.hostname, port: Number(url.port || 0) });
  process.stdout.write(`${listener.url}\n`);
} else {
  await agent.serveStdio();
  process.exit(0);
}
