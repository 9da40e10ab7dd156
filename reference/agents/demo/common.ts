/**
 * What the three demo agents share: how their cards are built and how each serves one session
 * on stdio and exits 0 when it is over.
 */
import { stderrLogger, type Agent } from '../../agent/index.ts';
import type { AgentCard, Capability } from '../../../schemas/src/index.ts';

/** A capability entry of a demo card. */
export function capability(name: string, description: string, extra: Partial<Capability> = {}): Capability {
  return {
    name,
    version: '1.0.0',
    description,
    input_formats: ['json'],
    output_formats: ['json'],
    streaming: true,
    side_effects: false,
    ...extra,
  };
}

/** A demo agent's card. */
export function demoCard(agentId: string, name: string, description: string, capabilities: Capability[]): AgentCard {
  return {
    agent_id: agentId,
    name,
    description,
    capabilities,
    limits: { max_concurrent_tasks: 4, max_task_seconds: 120, max_message_bytes: 1048576 },
  };
}

/** Serves one session on stdin/stdout; exits 0 when it is over or, through the runtime, on SIGTERM/SIGINT. */
export async function serveStdio(agent: Agent): Promise<void> {
  process.on('unhandledRejection', (err) => stderrLogger('error', `unhandled: ${(err as Error)?.stack ?? String(err)}`));
  await agent.serveStdio();
  await agent.shutdown('the session is over');
  process.exit(0);
}

/** True when `moduleUrl` is the script node was started with. */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  return new URL(moduleUrl).pathname === entry || new URL(moduleUrl).pathname.replace(/\.ts$/, '') === entry;
}
