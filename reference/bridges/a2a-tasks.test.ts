/**
 * One TAP task seen as an A2A task, fed a scripted stream: a mesh task that moved to a second
 * agent keeps its "tap/sequence" growing, so a resubscription after a sequence of the first
 * attempt loses nothing of the second (spec: bridge-a2a#mesh).
 */
import { Role, type Message, type StreamResponse } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import type { StreamMessage } from '../client/index.ts';
import { A2A_STATE } from './a2a-mapping.ts';
import { A2aTask, type A2aFollowed } from './a2a-tasks.ts';
import { outputEvents } from './a2a.testkit.ts';

const first: Message = {
  messageId: 'm-1',
  contextId: 'c',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
};

/** A followed task whose stream is `messages`, then the result `completed` with `output`. */
function scripted(messages: Array<Record<string, unknown>>, output: unknown): A2aFollowed & { cancelled: string[] } {
  const cancelled: string[] = [];
  return {
    taskId: String(messages.at(-1)?.task_id),
    events: (async function* () {})(),
    messages: (async function* () {
      for (const m of messages) yield m as unknown as StreamMessage;
    })(),
    result: Promise.resolve({ status: 'completed', output }),
    async cancel(reason?: string) {
      cancelled.push(reason ?? '');
      return {} as never;
    },
    async decide() {
      return {} as never;
    },
    cancelled,
  };
}

const output = (taskId: string, sequence: number, index: number) => ({
  type: 'task.event',
  task_id: taskId,
  sequence,
  payload: { kind: 'output', data: { index } },
});

const outputs = outputEvents;

async function all(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

describe('an A2A task over a TAP stream (spec: bridge-a2a#mesh)', () => {
  it("numbers the stream of a later attempt on from the last sequence before it, naming each attempt's TAP task id", async () => {
    const task = new A2aTask({ id: 'a2a-1', contextId: 'c' }, first, 'tap.test.stream');
    task.follow(
      scripted(
        [
          { type: 'task.accepted', task_id: 'on-first', sequence: 1, payload: {} },
          output('on-first', 2, 0),
          output('on-first', 3, 1),
          // The first agent was lost; the task moved and starts again at sequence 1 under a new id.
          { type: 'task.accepted', task_id: 'on-second', sequence: 1, payload: {} },
          output('on-second', 2, 0),
          output('on-second', 3, 1),
          output('on-second', 4, 2),
          { type: 'task.result', task_id: 'on-second', sequence: 5, payload: { status: 'completed', output: { count: 3 } } },
        ],
        { count: 3 },
      ),
    );
    const whole = await all(task.stream(0));
    expect(outputs(whole)).toEqual([
      [2, 0],
      [3, 1],
      [5, 0],
      [6, 1],
      [7, 2],
    ]);
    const last = whole.at(-1)!.payload;
    expect(last?.$case === 'statusUpdate' && [last.value.status?.state, last.value.metadata]).toEqual([
      A2A_STATE.COMPLETED,
      { 'tap/sequence': 8, 'tap/type': 'task.result', 'tap/task_id': 'on-second' },
    ]);
    // After the first attempt's last output, a resubscription gets the whole second attempt and nothing twice.
    expect(outputs(await all(task.stream(3)))).toEqual([
      [5, 0],
      [6, 1],
      [7, 2],
    ]);
  });

  it('cancels a task that asks for input it cannot carry, shows no INPUT_REQUIRED, and says why in its status', async () => {
    const task = new A2aTask({ id: 'a2a-2', contextId: 'c' }, first, 'tap.test.ask');
    const handle = scripted(
      [
        { type: 'task.accepted', task_id: 't', sequence: 1, payload: {} },
        { type: 'task.event', task_id: 't', sequence: 2, payload: { kind: 'state', state: 'input_required' } },
        { type: 'input.request', task_id: 't', sequence: 3, payload: { request_id: 'r', prompt: 'Which?', schema: {} } },
        { type: 'task.result', task_id: 't', sequence: 4, payload: { status: 'cancelled' } },
      ],
      null,
    );
    task.follow(handle, { inputCannotReach: 'no input over a mesh' });
    const events = await all(task.stream(0));
    expect(handle.cancelled).toEqual(['no input over a mesh']);
    const states = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value.status?.state] : []));
    expect(states).not.toContain(A2A_STATE.INPUT_REQUIRED);
    expect(task.snapshot().status?.state).toBe(A2A_STATE.CANCELED);
    expect(task.snapshot().status?.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'cancelled: no input over a mesh' });
  });
});
