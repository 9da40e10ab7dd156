/**
 * The reference agent of the round-trip rows, serving TAP sessions over the NATS binding: the same
 * agent as tap-agent.ts (conformance capabilities, raised task limits), listening on the server
 * given by --server as tap.reference-agent. The tasks it keeps (finished ones stay for the resume
 * window) are those of benchAgentOptions, more than a full run's hundred thousand and more round
 * trips from one principal, which are not refused with BUSY. Prints "ready" once it answers open requests.
 */
import { parseArgs } from 'node:util';
import { createAgent } from '../../dist/reference/agent/index.js';
import { benchAgentOptions } from '../lib/agent-options.ts';

const { values } = parseArgs({ options: { server: { type: 'string' }, 'max-tasks': { type: 'string', default: '100000' } } });
const maxTasks = Number(values['max-tasks']);
const agent = createAgent(benchAgentOptions(maxTasks));
process.on('SIGTERM', () => process.exit(0));
await agent.listenNats({ url: values.server! });
process.stdout.write('ready\n');
