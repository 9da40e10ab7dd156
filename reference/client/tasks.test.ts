/**
 * The client's task table stays bounded: what is open, and the newest ended tasks
 * (spec: limits#bounded-tables).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentCard } from '../../schemas/src/index.ts';
import { createAgent, withConformanceCapabilities } from '../agent/index.ts';
import { createMemoryPair } from '../transports/index.ts';
import { HANDLE_LOG_LIMIT } from './feed.ts';
import { connect, type StreamMessage, type TaskHandle } from './index.ts';
import { TaskStream } from './stream.ts';
import { ENDED_TASKS_KEPT, TaskTable } from './tasks.ts';

const card: AgentCard = {
  agent_id: 'reference-agent',
  name: 'Reference agent',
  description: 'Runs the conformance capabilities.',
  capabilities: [],
  limits: { max_concurrent_tasks: 16, max_task_seconds: 60, max_message_bytes: 1048576 },
};

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

const random = (n: number) => new Uint8Array(n).fill(7);
const message = (taskId: string, sequence: number, type: 'task.accepted' | 'task.event' | 'task.result'): StreamMessage =>
  ({
    type,
    task_id: taskId,
    sequence,
    payload:
      type === 'task.result' ? { status: 'completed', output: null } : type === 'task.event' ? { kind: 'output', data: sequence } : {},
  }) as unknown as StreamMessage;

describe('the client task table', () => {
  it('forgets the oldest ended tasks beyond ENDED_TASKS_KEPT, keeps the newest and every open one', async () => {
    const agent = createAgent({ card, capabilities: withConformanceCapabilities(), logger: () => {} });
    cleanups.push(() => agent.shutdown());
    const [a, b] = createMemoryPair();
    agent.attach(b);
    const client = await connect(a, { agentId: 'test-requester' });
    cleanups.push(() => client.close());

    const open = client.submit('tap.test.sleep', { ms: 60_000 });
    await open.accepted;
    const ended: TaskHandle[] = [];
    const total = ENDED_TASKS_KEPT + 40;
    for (let i = 0; i < total; i += 8) {
      const batch = Array.from({ length: Math.min(8, total - i) }, (_, k) => client.submit('tap.test.echo', { n: i + k }));
      await Promise.all(batch.map((h) => h.result));
      ended.push(...batch);
    }
    const known = ended.filter((h) => client.task(h.taskId) === h).length;
    expect(known).toBe(ENDED_TASKS_KEPT);
    expect(client.task(ended[0]!.taskId)).toBeUndefined();
    expect(client.task(ended.at(-1)!.taskId)).toBe(ended.at(-1));
    // The open task is never forgotten, however many end after it.
    expect(client.task(open.taskId)).toBe(open);
    // A handle the table forgot still holds its own outcome.
    expect((await ended[0]!.result).output).toEqual({ n: 0 });
    await open.cancel();
  });

  it('takes a late copy of a recently ended task as a duplicate, and one of a forgotten task as unknown', () => {
    const table = new TaskTable(random);
    const ids = Array.from({ length: ENDED_TASKS_KEPT + 1 }, () => table.newTaskId());
    for (const id of ids) {
      table.open(id);
      expect(table.ingest(message(id, 1, 'task.accepted'))?.kind).toBe('delivered');
      expect(table.ingest(message(id, 2, 'task.result'))?.kind).toBe('delivered');
    }
    expect(table.ingest(message(ids.at(-1)!, 2, 'task.result'))?.kind).toBe('duplicate');
    expect(table.ingest(message(ids.at(-1)!, 3, 'task.event'))?.kind).toBe('late');
    expect(table.follows(ids[0]!)).toBe(false);
    expect(table.ingest(message(ids[0]!, 2, 'task.result'))).toBeUndefined();
    expect(table.follows(ids[1]!)).toBe(true);
  });

  it('keeps a task open again after it was forgotten as failed', () => {
    const table = new TaskTable(random);
    const id = table.newTaskId();
    table.open(id);
    table.ingest(message(id, 1, 'task.accepted'));
    table.failOpen(new Error('gone'));
    table.open(id);
    for (let i = 0; i < ENDED_TASKS_KEPT + 1; i++) {
      const other = table.newTaskId();
      table.open(other);
      table.ingest(message(other, 1, 'task.accepted'));
      table.ingest(message(other, 2, 'task.result'));
    }
    expect(table.follows(id)).toBe(true);
  });

  it("keeps a stream's newest messages, not all of them", () => {
    const stream = new TaskStream('task-1');
    const count = 5 * HANDLE_LOG_LIMIT;
    for (let seq = 1; seq <= count; seq++) stream.ingest(message('task-1', seq, seq === 1 ? 'task.accepted' : 'task.event'));
    expect(stream.log.length).toBeGreaterThanOrEqual(HANDLE_LOG_LIMIT);
    expect(stream.log.length).toBeLessThanOrEqual(2 * HANDLE_LOG_LIMIT);
    expect(stream.log.at(-1)!.sequence).toBe(count);
    expect(stream.log.map((m) => m.sequence)).toEqual(
      Array.from({ length: stream.log.length }, (_, k) => count - stream.log.length + 1 + k),
    );
  });
});
