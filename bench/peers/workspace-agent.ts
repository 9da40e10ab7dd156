/**
 * A workspace agent serving the phase `work` with a handler that returns its input at once, so
 * that what is measured is the binding: claim, record checks, commit, history. Prints "ready"
 * on stdout once it watches the workspace. Usage: workspace-agent.ts --workspace DIR --agent-id ID
 */
import { parseArgs } from 'node:util';
import { runWorkspaceAgent } from '../../dist/reference/workspace/index.js';

const { values } = parseArgs({ options: { workspace: { type: 'string' }, 'agent-id': { type: 'string' } } });
const agent = await runWorkspaceAgent({
  workspace: values.workspace!,
  agentId: values['agent-id']!,
  phases: ['work'],
  handler: async (ctx) => ({ output: ctx.input }),
  pollMs: 100,
  handleSignals: true,
  graceMs: 500,
  logger: (level, message) => {
    if (level === 'warn' || level === 'error') process.stderr.write(`[${level}] ${message}\n`);
  },
});
process.stdout.write('ready\n');
await agent.stopped;
process.exit(0);
