import { describe, expect, it } from 'vitest';
import { buildMessage, iso, type OutboundContext } from './outbound.ts';
import { snapshotOf, type Task } from './tasks.ts';
import { SNAPSHOT_EXTRA_BYTES } from './task-runner.ts';

const out: OutboundContext = {
  agentId: 'a'.repeat(128),
  clock: { now: () => Date.parse('2026-01-01T00:00:00Z'), setTimeout: () => 0, clearTimeout: () => {} },
  random: (n) => new Uint8Array(n).fill(7),
  hmac: () => new Uint8Array(32),
};
const to = { target: 'r'.repeat(128), sessionId: 's'.repeat(128) };
const longest = (c: string) => c.repeat(128);

describe('the snapshot of a finished task (spec: tasks#result-size)', () => {
  it('holds at most SNAPSHOT_EXTRA_BYTES more than its task.result, with every member at its largest', () => {
    for (const result of [
      { status: 'completed', output: { text: 'é'.repeat(500) } },
      { status: 'failed', error: { code: 'INTERNAL_ERROR', message: 'x'.repeat(300), retryable: false } },
    ] as const) {
      const task = {
        taskId: longest('t'),
        state: 'needs_revision',
        capability: `${longest('c').slice(0, 60)}.${longest('d').slice(0, 67)}`,
        lastSequence: Number.MAX_SAFE_INTEGER - 1,
        createdAt: Date.parse('2026-01-01T00:00:00.123Z'),
        updatedAt: Date.parse('2026-12-31T23:59:59.999Z'),
        result,
        plans: [{ plan: { plan_id: longest('p') }, state: 'needs_revision' }],
        previousTaskId: longest('q'),
      } as unknown as Task;
      const text = buildMessage(out, to, 'task.result', result, {
        task_id: task.taskId,
        sequence: task.lastSequence + 1,
      });
      const snapshot = buildMessage(out, to, 'task.snapshot', snapshotOf(task, iso), { task_id: task.taskId, reply_to: longest('x') });
      const bytes = (s: string) => new TextEncoder().encode(s).length;
      expect(bytes(snapshot) - bytes(text)).toBeGreaterThan(300);
      expect(bytes(snapshot) - bytes(text)).toBeLessThanOrEqual(SNAPSHOT_EXTRA_BYTES);
    }
  });
});
