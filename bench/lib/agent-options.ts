/** The options the bench builds the reference agent with: tap-reference-agent's card, task limits raised. */
import { stderrLogger, withConformanceCapabilities, type AgentOptions } from '../../dist/reference/agent/index.js';

/**
 * tap-reference-agent's card and capabilities, with max_concurrent_tasks and max_tasks_per_session
 * set to `maxTasks`, and room to keep every finished task of a run (a run makes more than the
 * default 4,096 per principal within their retention window, which would answer BUSY).
 */
export function benchAgentOptions(maxTasks: number): AgentOptions {
  return {
    card: {
      agent_id: 'tap.reference-agent',
      name: 'TAP reference agent',
      description:
        'The reference implementation of a TAP 1.0 agent. It offers the conformance capabilities tap.test.* ' +
        'and is good at proving what the protocol requires; it does no useful work of its own.',
      capabilities: [],
      limits: { max_concurrent_tasks: maxTasks, max_task_seconds: 3600, max_message_bytes: 1048576, max_tasks_per_session: maxTasks },
    },
    capabilities: withConformanceCapabilities(),
    maxTasksKeptPerPrincipal: KEPT,
    maxTasksKept: KEPT,
    logger: (level, message) => {
      if (level === 'warn' || level === 'error') stderrLogger(level, message);
    },
  };
}

/** Finished tasks the bench's agent may keep: more than any run makes. */
const KEPT = 1 << 22;

/** The requester id the bench's clients use. */
export const REQUESTER_ID = 'bench.requester';
