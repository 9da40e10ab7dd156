/**
 * runAgent's options from the environment of a conformance run: the max_task_seconds that
 * TAP_MAX_TASK_SECONDS asks of the agent of one case (spec: conformance#case-limits), taken in
 * conformance mode only (conformance/test/case-limits.slow.test.ts runs the case against it).
 */
import { describe, expect, it } from 'vitest';
import type { AgentOptions } from '../agent/index.ts';
import { withCaseLimits } from './run.ts';

/** The options of the README's agent (its card's max_task_seconds of 60 is longer than the case waits a task out). */
const readmeAgentOptions = (env: Record<string, string>): AgentOptions => ({
  card: {
    agent_id: 'example.word-counter',
    name: 'Word counter',
    description: 'Counts the words of a plain text.',
    capabilities: [],
    limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1_048_576 },
  },
  capabilities: {},
  env,
  logger: () => {},
});

const declared = (o: AgentOptions): number => o.card.limits.max_task_seconds;

describe('withCaseLimits (spec: conformance#case-limits)', () => {
  it('takes TAP_MAX_TASK_SECONDS for the card in conformance mode, and leaves the card alone otherwise', () => {
    expect(declared(withCaseLimits(readmeAgentOptions({ TAP_CONFORMANCE: '1', TAP_MAX_TASK_SECONDS: '2' })))).toBe(2);
    expect(declared(withCaseLimits({ ...readmeAgentOptions({ TAP_MAX_TASK_SECONDS: '2' }), conformance: true }))).toBe(2);
    expect(declared(withCaseLimits(readmeAgentOptions({ TAP_MAX_TASK_SECONDS: '2' })))).toBe(60);
    expect(declared(withCaseLimits(readmeAgentOptions({ TAP_CONFORMANCE: '1' })))).toBe(60);
    expect(declared(withCaseLimits({ ...readmeAgentOptions({}), env: false, conformance: true }))).toBe(60);
  });

  it('refuses a TAP_MAX_TASK_SECONDS that is no whole number of seconds, naming the variable', () => {
    expect(() => withCaseLimits(readmeAgentOptions({ TAP_CONFORMANCE: '1', TAP_MAX_TASK_SECONDS: '1.5' }))).toThrow(
      'TAP_MAX_TASK_SECONDS=1.5 is not a whole number of seconds of at least 1: unset it, or give one such as 2',
    );
  });
});
