/**
 * A durable task's stream in TAP_EVENTS (spec: bindings-nats#event-streams): the runner publishes
 * `task.accepted`, the `running` state event and `task.result` of each task to
 * `<prefix>.events.<agent_id>.<task_id>`, each with `Nats-Msg-Id: <task_id>:<sequence>`, so that a
 * redelivery to any runner within the stream's de-duplication window stores each sequence once.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { composeMessage } from '../core/compose.ts';
import type { TaskRecord } from '../workspace/record.ts';
import { eventSubject, type DurableNames } from './streams.ts';

/** The sequences of the messages a one-phase durable task sends. */
export const EventSequence = Object.freeze({ ACCEPTED: 1, RUNNING: 2, RESULT: 3 });

/** Who the task's messages are addressed to: the submitter named in the record, else the agent's requesters at large. */
function requesterOf(record: TaskRecord): string {
  const by = (record.metadata as { 'x-requester'?: unknown } | undefined)?.['x-requester'];
  return typeof by === 'string' && by !== '' ? by : 'tap.durable-requester';
}

/** The deadline task.accepted announces: the record's creation plus its timeout. */
function deadlineOf(record: TaskRecord): string {
  const created = Date.parse(record.created_at);
  const base = Number.isFinite(created) ? created : Date.now();
  return new Date(base + (record.requirements.timeout_seconds ?? 300) * 1000).toISOString();
}

/** Publishes one message of a task's stream and waits for the server's acknowledgement (spec: bindings-nats#event-streams). */
async function publish(
  js: JetStreamClient,
  names: DurableNames,
  agentId: string,
  record: TaskRecord,
  sequence: number,
  type: 'task.accepted' | 'task.event' | 'task.result',
  payload: Record<string, unknown>,
): Promise<void> {
  const msg = composeMessage(
    {},
    {
      type,
      source: agentId,
      target: requesterOf(record),
      task_id: record.task_id,
      sequence,
      payload: payload as never,
    },
  );
  await js.publish(eventSubject(names, agentId, record.task_id), JSON.stringify(msg), { msgID: `${record.task_id}:${sequence}` });
}

/** task.accepted and the running state event, before the phase runs. */
export async function publishStart(js: JetStreamClient, names: DurableNames, agentId: string, record: TaskRecord): Promise<void> {
  const capability = record.next_phase ?? '';
  await publish(js, names, agentId, record, EventSequence.ACCEPTED, 'task.accepted', { capability, deadline: deadlineOf(record) });
  await publish(js, names, agentId, record, EventSequence.RUNNING, 'task.event', { kind: 'state', state: 'running' });
}

/** task.result from the finished record, before the record is stored and the delivery acknowledged. */
export async function publishResult(js: JetStreamClient, names: DurableNames, agentId: string, done: TaskRecord): Promise<void> {
  const payload =
    done.state.status === 'completed'
      ? { status: 'completed', output: done.context.history.at(-1)?.output ?? null }
      : {
          status: 'failed',
          error: { code: done.state.last_error?.code ?? 'EXECUTION_FAILED', message: done.state.last_error?.message ?? '' },
        };
  await publish(js, names, agentId, done, EventSequence.RESULT, 'task.result', payload);
}
