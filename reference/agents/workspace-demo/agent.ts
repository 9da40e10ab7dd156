/**
 * One agent of the workspace demo, as its own process: `agent.ts <workspace> <role>` with role
 * analyst, coder or reviewer. It serves its phase until SIGTERM or SIGINT, then releases what it
 * holds and exits 0. It prints one line on stdout once it is watching.
 */
import { runWorkspaceAgent } from '../../workspace/runner.ts';
import { ROLES, type Role } from './handlers.ts';

const [dir, role] = process.argv.slice(2);
if (!dir || !role || !(role in ROLES)) {
  process.stderr.write(`usage: agent.ts <workspace> <${Object.keys(ROLES).join('|')}>\n`);
  process.exit(2);
}
const r = ROLES[role as Role];
const agent = await runWorkspaceAgent({
  workspace: dir,
  agentId: r.agentId,
  phases: { [r.phase]: r.handler },
  card: { name: r.name, description: r.description },
  pollMs: 250,
  handleSignals: true,
  logger: (level, message) => {
    if (level !== 'debug') process.stderr.write(`[${level}] ${message}\n`);
  },
});
process.stdout.write(`${r.agentId} is watching ${dir} for phase ${r.phase}\n`);
await agent.stopped;
process.exit(0);
