/**
 * Case limits (spec: conformance#case-limits): the case that waits a task out past
 * max_task_seconds (TAP-TASK-015) asks its agent for a short limit through TAP_MAX_TASK_SECONDS;
 * it passes the reference and an agent of runAgent's options (which takes the variable in
 * conformance mode), fails an agent that lets such a task run on, and is SKIPPED, saying what to
 * do, against an agent that keeps a long limit.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type Agent, createAgent } from '../../reference/agent/index.ts';
import { withCaseLimits } from '../../reference/serve/run.ts';
import { createMemoryPair } from '../../reference/transports/memory.ts';
import { ALL_CASES } from '../cases/index.ts';
import { runCases } from '../runner.ts';
import type { TargetSpec } from '../target.ts';
import { runMutation } from '../../tools/mutation.ts';
import { memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

const CASE = ALL_CASES.find((c) => c.id === 'tasks.deadline.max-task-seconds')!;
const MUTANT = 'TAP-TASK-015:max-task-seconds-ignored';

const agents: Agent[] = [];
afterAll(async () => {
  await stopMemoryAgents();
  await Promise.all(agents.map((a) => a.shutdown()));
});

describe('tasks.deadline.max-task-seconds (spec: tasks#deadlines, conformance#case-limits)', () => {
  it('passes the reference agent and catches the agent that lets a task outlive max_task_seconds', { timeout: 40_000 }, async () => {
    const report = await runMutation({ only: [MUTANT], scope: 'citing', jobs: 1 });
    expect(report.unstable).toEqual([]);
    const [r] = report.results;
    expect(r?.ran_citing).toContain(CASE.id);
    expect(r?.citing).toEqual([CASE.id]);
  });

  it('is SKIPPED, naming TAP_MAX_TASK_SECONDS, against an agent that keeps max_task_seconds 3600', async () => {
    const reference = memoryTarget();
    if (reference.kind !== 'memory') throw new Error('memoryTarget gave no memory target');
    // An agent started without regard to the case's environment, as a WebSocket agent is.
    const deaf: TargetSpec = { kind: 'memory', display: 'memory://long-limit', open: (o) => reference.open({ ...o, env: {} }) };
    const env = await memoryEnv(deaf, { debug: false });
    const [result] = await runCases([CASE], env, 1, 1);
    expect(result?.verdict).toBe('SKIPPED');
    expect(result?.detail).toMatch(/max_task_seconds 3600.*TAP_MAX_TASK_SECONDS=2/);
  });

  it("passes an agent of runAgent's options whose card says 60 s: started for the case, it declares and keeps the 2 s asked", async () => {
    const declared: number[] = [];
    // Each connection reaches an agent started as tap-conform starts a stdio agent: TAP_CONFORMANCE=1 and the case's environment.
    const target: TargetSpec = {
      kind: 'memory',
      display: 'memory://run-agent',
      open: async (o) => {
        const agent = createAgent(
          withCaseLimits({
            card: {
              agent_id: 'example.word-counter',
              name: 'Word counter',
              description: 'The card of the README agent.',
              capabilities: [],
              limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1_048_576 },
            },
            capabilities: {},
            env: { TAP_CONFORMANCE: '1', ...o.env },
            logger: () => {},
          }),
        );
        agents.push(agent);
        declared.push(agent.card.limits.max_task_seconds);
        const [harness, far] = createMemoryPair({ schedule: (f) => setImmediate(f) });
        agent.attach(far);
        return { transport: harness };
      },
    };
    const env = await memoryEnv(target, { debug: false });
    const [result] = await runCases([CASE], env, 1, 1);
    expect(result?.verdict, result?.detail).toBe('PASS');
    expect(declared).toContain(2);
  });
});
