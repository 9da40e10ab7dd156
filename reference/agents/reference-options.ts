/**
 * What makes the reference agent what it is: its own command-line options, its card and its agent
 * options (the conformance capabilities, the heartbeat floor, the logger). Shared by
 * tap-reference-agent (reference-agent.ts) and the mutation score's broken agent
 * (conformance/mutation/broken-agent.ts), which serves the same agent behind a mutation.
 */
import { CONFORMANCE_EXTENSION, stderrLogger, withConformanceCapabilities, type AgentOptions } from '../agent/index.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import { MAX_TASK_VAR, maxTaskSecondsFromEnv } from '../agent/environment.ts';
import { UsageError, wholeOption } from '../serve/command-line.ts';

/** The variable of a conformance case's shorter max_task_seconds (spec: conformance#case-limits); --max-task-seconds wins over it. */
export { MAX_TASK_VAR };

/** The usage lines of the reference agent's own options. */
export const OWN_USAGE = `  --agent-id ID       the agent id (default tap.reference-agent)
  --max-concurrent-tasks N, --max-tasks-per-session N, --max-tasks-per-principal N
                      the card's task limits (defaults 64, 32 and 32); more are refused with BUSY
  --max-task-seconds N
                      how long a task may run, in seconds (default 3600, or TAP_MAX_TASK_SECONDS);
                      a task still running then ends timed_out
`;

/** The reference agent's own options, for parseCommandLine. */
export const OWN_OPTIONS = {
  'agent-id': { type: 'string' },
  'max-concurrent-tasks': { type: 'string' },
  'max-tasks-per-session': { type: 'string' },
  'max-tasks-per-principal': { type: 'string' },
  'max-task-seconds': { type: 'string' },
} as const;

/** The values of the reference agent's own options. */
export interface Own {
  agentId: string;
  maxConcurrentTasks: number;
  maxTasksPerSession: number;
  maxTasksPerPrincipal: number;
  maxTaskSeconds: number;
}

/** Reads the own options from parsed values and `env` (TAP_MAX_TASK_SECONDS); throws a UsageError naming a bad one. */
export function ownOptions(values: Record<string, unknown>, env: Readonly<Record<string, string | undefined>> = process.env): Own {
  const agentId = typeof values['agent-id'] === 'string' ? values['agent-id'] : 'tap.reference-agent';
  if (!/^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/.test(agentId) || agentId.length > 128) {
    throw new UsageError(`--agent-id ${agentId} is not an identifier: lowercase letters, digits, "_" and "-", in dot-separated segments`);
  }
  return {
    agentId,
    maxConcurrentTasks: wholeOption(values, 'max-concurrent-tasks', 64, 1),
    maxTasksPerSession: wholeOption(values, 'max-tasks-per-session', 32, 1),
    maxTasksPerPrincipal: wholeOption(values, 'max-tasks-per-principal', 32, 1),
    maxTaskSeconds: wholeOption(values, 'max-task-seconds', maxTaskFromEnv(env), 1),
  };
}

/** The max_task_seconds TAP_MAX_TASK_SECONDS gives, 3600 without it; throws a UsageError naming a bad value. */
function maxTaskFromEnv(env: Readonly<Record<string, string | undefined>>): number {
  try {
    return maxTaskSecondsFromEnv(env) ?? 3600;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The reference agent's card. */
export function referenceCard(o: Own): AgentCard {
  return {
    agent_id: o.agentId,
    name: 'TAP reference agent',
    description:
      'The reference implementation of a TAP 1.0 agent. It offers the conformance capabilities tap.test.* ' +
      'and is good at proving what the protocol requires; it does no useful work of its own. ' +
      'Limits: nesting 64 levels; 65536-byte frames before the ack; per session 10000 remembered message ids ' +
      'and 4 MiB of remembered replies; per principal 4096 tasks kept and 256 MiB of retained messages, ' +
      '16384 tasks in all, each kept at least the resume window; 4096 sessions, 1024 per source; ' +
      '1024 connections, 256 per address; the anonymous sessions of one address share the per-principal task limit; ' +
      '16 MiB of unread output per connection.',
    capabilities: [],
    limits: {
      max_concurrent_tasks: o.maxConcurrentTasks,
      max_task_seconds: o.maxTaskSeconds,
      max_message_bytes: 1048576,
      max_tasks_per_session: o.maxTasksPerSession,
      max_tasks_per_principal: o.maxTasksPerPrincipal,
    },
  };
}

/** The reference agent's options: its card, the conformance capabilities, the heartbeat floor. */
export function referenceAgentOptions(o: Own): AgentOptions {
  return {
    card: referenceCard(o),
    capabilities: withConformanceCapabilities(),
    // The conformance extension, which the extension cases of 1.1 negotiate (spec: handshake#negotiated-extensions).
    extensions: [CONFORMANCE_EXTENSION],
    // The floor of the range (spec: limits#heartbeats): the final heartbeat_ms is the larger of the
    // proposal and this, so a requester gets what it proposes (1000 ms when it proposes none), and
    // the suite's liveness and late-plan cases wait about a second per heartbeat instead of ten.
    heartbeatMs: 1_000,
    logger: stderrLogger,
  };
}
