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
});
