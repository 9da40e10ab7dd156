/** What the client's tests against the reference agent runtime share: its card, and clean-ups run after each test. */
import { afterEach } from 'vitest';
import type { AgentCard } from '../../schemas/src/index.ts';

/** The card of the reference agent runtime the client's tests serve the conformance capabilities with. */
export const REFERENCE_CARD: AgentCard = {
  agent_id: 'reference-agent',
  name: 'Reference agent',
  description: 'Runs the conformance capabilities.',
  capabilities: [],
  limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1048576 },
};

/** A list of clean-ups (agents to shut down, clients to close) run in reverse order after each test of the file. */
export function cleanupsAfterEach(): Array<() => Promise<unknown>> {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
  });
  return cleanups;
}
