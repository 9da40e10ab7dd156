/** The quiet-task cases of TAP 1.1 against the reference agent in memory (spec: tasks#quiet-tasks). */
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { notPassingInMemory, stopMemoryAgents } from './memory-target.testkit.ts';

const QUIET = ALL_CASES.filter((c) => c.id.startsWith('tasks.quiet.'));

afterAll(stopMemoryAgents);

describe('quiet tasks (spec: tasks#quiet-tasks)', () => {
  it('the reference agent passes every quiet-task case, each of TAP 1.1', { timeout: 60_000 }, async () => {
    expect(QUIET.map((c) => c.id).sort()).toEqual([
      'tasks.quiet.cancel',
      'tasks.quiet.duplicate',
      'tasks.quiet.outcome-only',
      'tasks.quiet.plan',
      'tasks.quiet.refused',
      'tasks.quiet.repeat-and-resume',
      'tasks.quiet.sequences',
      'tasks.quiet.session-1-0',
    ]);
    expect(QUIET.every((c) => c.needs?.version === '1.1')).toBe(true);
    expect(await notPassingInMemory(QUIET, 4)).toEqual([]);
  });
});
