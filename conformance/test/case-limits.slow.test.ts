/**
 * Case limits (spec: conformance#case-limits): the case that waits a task out past
 * max_task_seconds (TAP-TASK-015) asks its agent for a short limit through TAP_MAX_TASK_SECONDS;
 * it passes the reference, fails an agent that lets such a task run on, and is SKIPPED, saying
 * what to do, against an agent that keeps a long limit.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { runCases } from '../runner.ts';
import type { TargetSpec } from '../target.ts';
import { runMutation } from '../../tools/mutation.ts';
import { memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

const CASE = ALL_CASES.find((c) => c.id === 'tasks.deadline.max-task-seconds')!;
const MUTANT = 'TAP-TASK-015:max-task-seconds-ignored';

afterAll(stopMemoryAgents);

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
});
