/** The deadline cases against agents whose cards declare a short max_task_seconds (spec: tasks#deadlines). */
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { memoryTarget, notPassingInMemory, stopMemoryAgents } from './memory-target.testkit.ts';

const EFFECTIVE = ALL_CASES.filter((c) => c.id === 'tasks.deadline.effective');

afterAll(stopMemoryAgents);

describe('tasks.deadline.effective and the card max_task_seconds', () => {
  // An agent may declare any max_task_seconds: the case's envelope deadline and timeout_ms must
  // still be the earliest bound, or a correct agent with a limit of 30 s fails it.
  for (const seconds of [30, 10, 3])
    it(`passes the reference agent with max_task_seconds ${seconds}`, { timeout: 30_000 }, async () => {
      expect(EFFECTIVE).toHaveLength(1);
      const target = memoryTarget(undefined, undefined, { max_concurrent_tasks: 8, max_task_seconds: seconds });
      expect(await notPassingInMemory(EFFECTIVE, 1, target)).toEqual([]);
    });

  // The README's WebSocket certification starts the agent with TAP_MAX_TASK_SECONDS=2 and suggests
  // heartbeatMs: 1000: the cases that hold a task past four heartbeats or two reminders see it end
  // timed_out first. They used to FAIL that agent; they cannot judge it, and say why.
  it('never fails an agent whose max_task_seconds of 2 s ends the task a timer case waits on: SKIPPED, saying so', {
    timeout: 30_000,
  }, async () => {
    const ids = ['core.limits.peer-gone', 'plans.holding.never-decides'];
    const target = memoryTarget(undefined, undefined, { max_concurrent_tasks: 8, max_task_seconds: 2 });
    const out = await notPassingInMemory(
      ALL_CASES.filter((c) => ids.includes(c.id)),
      2,
      target,
    );
    expect(out.map((line) => line.split(':')[0]).sort()).toEqual(ids.map((id) => `SKIPPED ${id}`).sort());
    for (const line of out) expect(line).toMatch(/: the task ended timed_out, its max_task_seconds \(2 s\) run out, before /);
  });
});
