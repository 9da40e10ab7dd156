/** Mutants that break the rules of spec/1.0/tasks.md (spec: tasks). */
import { randomBytes } from 'node:crypto';
import { type Msg, type Mutator, STREAM, type View } from '../layer.ts';
import {
  dropFromStream,
  dropOut,
  envelope,
  errorOf,
  inn,
  is,
  next,
  out,
  payload,
  replyTo,
  requestFor,
  resultOf,
  stateEvent,
} from '../operators.ts';
import { any, completedInstead, fakeAccepted, fakeSnapshot, repairIn, type Row, wrongCode } from '../rows.ts';

/** True when the request of task `taskId` carried neither a deadline nor timeout_ms: only max_task_seconds bounds it. */
function onlyMaxTaskBounds(v: View, taskId: unknown): boolean {
  const request = [...v.requests.values()].find((r) => r.type === 'task.request' && r.task_id === taskId);
  return request !== undefined && request.deadline === undefined && request.payload?.timeout_ms === undefined;
}

export const rows: Row[] = [
  ['TAP-EVT-001:no-running-event', 'the state event into running is not sent', () => dropFromStream(stateEvent('running'))],
  [
    'TAP-EVT-002:output-when-not-streaming',
    'an output event precedes the result although streaming is false',
    () =>
      out(
        (m, v) => m.type === 'task.result' && v.memo.get('streaming') === false,
        (m, v) => [
          v.make('task.event', { kind: 'output', data: 'extra' }, { task_id: m.task_id, sequence: m.sequence }),
          { ...m, sequence: (m.sequence as number) + 1 },
        ],
      ),
  ],
  [
    'TAP-EVT-003:accepted-sequence-0',
    'task.accepted carries sequence 0',
    () => {
      return out(
        (m) => STREAM.has(m.type) && typeof m.sequence === 'number',
        (m) => ({ ...m, sequence: (m.sequence as number) - 1 }),
      );
    },
  ],
  [
    'TAP-EVT-004:sequence-gap',
    'every stream skips sequence 2',
    () =>
      out(
        (m) => STREAM.has(m.type) && typeof m.sequence === 'number' && (m.sequence as number) >= 2,
        (m) => ({ ...m, sequence: (m.sequence as number) + 1 }),
      ),
  ],
  [
    'TAP-EVT-004:sequence-repeat',
    'the second event repeats the sequence of the first',
    () =>
      out(
        (m) => STREAM.has(m.type) && typeof m.sequence === 'number' && (m.sequence as number) >= 3,
        (m) => ({ ...m, sequence: (m.sequence as number) - 1 }),
      ),
  ],
  [
    'TAP-EVT-005:out-of-order',
    'output events are sent two at a time, swapped',
    () => {
      let held: Msg | undefined;
      return out(any, (m) => {
        if (m.type === 'task.event' && m.payload?.kind === 'output' && !held) {
          held = m;
          return null;
        }
        if (held && m.task_id === held.task_id) {
          const h = held;
          held = undefined;
          return [m, h];
        }
        return undefined;
      });
    },
  ],
  [
    'TAP-TASK-002:refusal-as-snapshot',
    'a task.request for an unknown capability is answered with a snapshot',
    () => out(errorOf('CAPABILITY_NOT_SUPPORTED', 'task.request'), (m, v) => fakeSnapshot(v, v.answers(m)!, 'failed')),
  ],
  [
    'TAP-TASK-002:refusal-as-accepted',
    'a task.request for an unknown capability is answered with task.accepted',
    () => out(errorOf('CAPABILITY_NOT_SUPPORTED', 'task.request'), (m, v) => fakeAccepted(v, v.answers(m)!)),
  ],
  [
    'TAP-TASK-003:no-deadline',
    'task.accepted gives no deadline',
    () =>
      out(
        is('task.accepted'),
        payload((p) => ({ ...p, deadline: undefined })),
      ),
  ],
  [
    'TAP-TASK-003:wrong-capability',
    'task.accepted names another capability',
    () => out(is('task.accepted'), payload({ capability: 'tap.test.other' })),
  ],
  ['TAP-TASK-005:accepted-to-completed', 'a task goes from accepted straight to completed', () => dropFromStream(stateEvent('running'))],
  [
    'TAP-TASK-005:cancelling-timed-out',
    'a task in cancelling ends timed_out',
    () => ({
      out: (m, v) => {
        if (m.type === 'task.event' && m.payload?.state === 'cancelling') v.memo.set(`c:${m.task_id}`, true);
        if (m.type === 'task.result' && m.payload?.status === 'cancelled' && v.memo.get(`c:${m.task_id}`) === true)
          return payload({ status: 'timed_out', error: { code: 'DEADLINE_EXCEEDED', message: 'late', retryable: false } })(m);
        return undefined;
      },
    }),
  ],
  [
    'TAP-TASK-006:event-after-result',
    'a log event follows the result',
    () => out(is('task.result'), (m, v) => [m, next(m, v, 'task.event', { kind: 'log', level: 'info', message: 'done' })]),
  ],
  ['TAP-TASK-007:no-result', 'completed tasks get no task.result', () => dropOut(resultOf('completed'))],
  [
    'TAP-TASK-007:two-results',
    'every task.result is sent twice',
    () => out(is('task.result'), (m, v) => [m, { ...next(m, v, 'task.result', m.payload ?? {}) }]),
  ],
  [
    'TAP-TASK-008:output-and-error',
    'a completed result carries an error too',
    () =>
      out(
        resultOf('completed'),
        payload((p) => ({ ...p, error: { code: 'INTERNAL_ERROR', message: 'x', retryable: false } })),
      ),
  ],
  [
    'TAP-TASK-008:failed-without-error',
    'a failed result carries no error',
    () =>
      out(
        resultOf('failed'),
        payload((p) => ({ ...p, error: undefined })),
      ),
  ],
  ['TAP-TASK-009:too-large-sent', 'a result too large is truncated and completed', completedInstead('MESSAGE_TOO_LARGE', 'truncated')],
  [
    'TAP-TASK-010:timeout-wrong-code',
    'a timed_out result carries INTERNAL_ERROR',
    () =>
      out(
        resultOf('timed_out'),
        payload((p) => ({ ...p, error: { ...(p.error as object), code: 'INTERNAL_ERROR' } })),
      ),
  ],
  [
    'TAP-TASK-011:stale-snapshot',
    'snapshots report last_sequence one behind',
    () =>
      out(
        replyTo('task.status', 'task.snapshot'),
        payload((p) => ({ ...p, last_sequence: Math.max(0, Number(p.last_sequence) - 1) })),
      ),
  ],
  [
    'TAP-TASK-011:snapshot-after-effects',
    'a cancel is answered with a snapshot already in cancelling',
    () =>
      out(
        replyTo('task.cancel', 'task.snapshot'),
        payload((p) => (p.state === 'running' ? { ...p, state: 'cancelling' } : p)),
      ),
  ],
  [
    'TAP-TASK-012:result-missing-in-snapshot',
    'a terminal snapshot carries no result',
    () =>
      out(
        (m) => m.type === 'task.snapshot' && m.payload?.result !== undefined,
        payload((p) => ({ ...p, result: undefined })),
      ),
  ],
  ['TAP-TASK-013:unknown-task-code', 'a status for an unknown task is answered INVALID_MESSAGE', wrongCode('UNKNOWN_TASK', 'task.status')],
  [
    'TAP-TASK-014:late-request-run',
    'a task.request past its deadline is run',
    repairIn(
      (m) => m.type === 'task.request' && typeof m.deadline === 'string' && Date.parse(m.deadline) < Date.now(),
      (m) => ({ ...m, deadline: undefined }),
    ),
  ],
  [
    'TAP-TASK-015:deadline-ignored',
    'a task whose deadline passed ends failed',
    () => out(resultOf('timed_out'), payload({ status: 'failed' })),
  ],
  [
    'TAP-TASK-015:max-task-seconds-ignored',
    'a task that neither a deadline nor timeout_ms bounds runs on past max_task_seconds: its timed_out result is never sent',
    () => dropOut((m, v) => resultOf('timed_out')(m, v) && onlyMaxTaskBounds(v, m.task_id)),
  ],
  [
    'TAP-TASK-019:late-terminal',
    'a cancel after the result was queued is answered as if the task still ran',
    () => out(errorOf('TASK_TERMINAL', 'task.cancel'), (m, v) => fakeSnapshot(v, v.answers(m)!, 'running')),
  ],
  [
    'TAP-TASK-021:forgets-after-restart',
    'after a restart, tasks of the earlier process are unknown',
    () => {
      const mine = new Set<string>();
      return out(any, (m, v) => {
        if (m.type === 'task.accepted') mine.add(m.task_id as string);
        const to = v.answers(m);
        if (m.type === 'task.snapshot' && to?.type === 'task.status' && !mine.has(m.task_id as string)) return v.error(to, 'UNKNOWN_TASK');
        return undefined;
      });
    },
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-TASK-022:not-indeterminate',
    'a task interrupted by a crash ends failed without details.indeterminate',
    () =>
      out(
        (m) => m.type === 'task.result' && m.payload?.status === 'failed',
        payload((p) => ({ ...p, error: { ...(p.error as object), details: {} } })),
      ),
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-TASK-017:request-timeout-ends',
    "a task is cancelled once the requester's request_timeout_ms has passed",
    () => {
      const injected = new Set<string>();
      return {
        in: (m, v) => {
          const wait = Number(v.memo.get('request_timeout_ms'));
          if (m.type === 'task.request' && v.established && typeof m.task_id === 'string' && Number.isFinite(wait)) {
            const cancel = v.makeIn('task.cancel', {}, { task_id: m.task_id });
            injected.add(cancel.message_id as string);
            setTimeout(() => v.inject(cancel), wait).unref?.();
          }
          return undefined;
        },
        out: (m) => (typeof m.reply_to === 'string' && injected.has(m.reply_to) ? null : undefined),
      };
    },
  ],
  [
    'TAP-TASK-018:cancel-unseen',
    'a task whose cancel was answered cancelling ends completed, as if the completion had not seen the cancel',
    () => {
      const cancelling = new Set<string>();
      return out(any, (m, v) => {
        if (m.type === 'task.snapshot' && v.answers(m)?.type === 'task.cancel' && m.payload?.state === 'cancelling')
          cancelling.add(m.task_id as string);
        if (m.type === 'task.event' && m.payload?.state === 'cancelling') cancelling.add(m.task_id as string);
        if (m.type === 'task.result' && m.payload?.status === 'cancelled' && cancelling.has(m.task_id as string))
          return payload({ status: 'completed', error: undefined, output: null })(m);
        return undefined;
      });
    },
  ],
  [
    'TAP-TASK-020:journal-after-effect',
    'idempotency records are not kept across a restart: a keyed retry after it runs again',
    () => {
      const fresh = new Map<string, string>();
      return inn(
        (m) => m.type === 'task.request' && typeof m.idempotency_key === 'string',
        (m) => {
          const key = m.idempotency_key as string;
          if (!fresh.has(key)) fresh.set(key, `${key}-${randomBytes(4).toString('hex')}`);
          return envelope({ idempotency_key: fresh.get(key) })(m);
        },
      );
    },
    undefined,
    { binding: 'stdio' },
  ],
  [
    'TAP-TASK-040:snapshot-size-ignored',
    'a result that fits in task.result but not in a snapshot ends completed, and its snapshots carry it',
    () => echoKeptDespite((reason) => reason !== 'nesting'),
  ],
  [
    'TAP-TASK-042:snapshot-depth-ignored',
    'a result whose snapshot would nest deeper than 64 levels ends completed, and its snapshots carry it',
    () => echoKeptDespite((reason) => reason === 'nesting'),
  ],
  [
    'TAP-LIM-014:deeper-than-64',
    'the agent sends a task.event snapshot nested deeper than 64 levels (the echo of a 62-level input)',
    () => echoKeptDespite((reason) => reason === 'nesting'),
  ],
  [
    'TAP-TASK-041:lost-without-cancelling',
    'a running task ended SESSION_LOST on stdio skips cancelling',
    () => dropFromStream(stateEvent('cancelling')),
    undefined,
    { binding: 'stdio' },
  ],
  // TAP 1.1 quiet tasks (spec: tasks#quiet-tasks).
  [
    'TAP-QUIET-101:accepted-sent',
    'a quiet request of a 1.1 session is answered with task.accepted (sequence 1), as if it were not quiet',
    () => inn(quietRequest, (m, v, answer) => void answer(fakeAccepted(v, m))),
  ],
  [
    'TAP-QUIET-102:plan-not-sent',
    "a quiet task's plan.submit is not sent, so its plan waits for a decision nobody was asked for",
    () => dropFromStream((m, v) => m.type === 'plan.submit' && quietTask(m, v)),
  ],
  [
    'TAP-QUIET-103:numbered-from-1',
    "a quiet task's stream is numbered from 1: its first message sent carries sequence 1",
    () =>
      out(
        (m, v) => STREAM.has(m.type) && typeof m.sequence === 'number' && quietTask(m, v),
        (m) => ({ ...m, sequence: (m.sequence as number) - 1 }),
      ),
  ],
  [
    'TAP-QUIET-104:duplicate-unanswered',
    'a duplicate of a quiet request is given no answer, even once the task has ended',
    () => {
      const seen = new Set<string>();
      return inn(quietRequest, (m) => {
        if (seen.has(m.message_id as string)) return null;
        seen.add(m.message_id as string);
        return undefined;
      });
    },
  ],
  [
    'TAP-QUIET-105:quiet-in-1-0',
    'in a session of 1.0 a request with quiet gets a quiet stream: no task.accepted, no events',
    () => dropFromStream((m, v) => v.version === '1.0' && (m.type === 'task.accepted' || m.type === 'task.event') && requested(m, v, true)),
  ],
];

/**
 * An echo that ended failed MESSAGE_TOO_LARGE (of a `details.reason` that `which` picks) is
 * reported completed with its input as output, and its snapshots carry that result.
 */
function echoKeptDespite(which: (reason: unknown) => boolean): Mutator {
  const inputs = new Map<string, unknown>();
  const kept = new Map<string, Record<string, unknown>>();
  return {
    in: (m, v) => {
      if (requestFor('tap.test.echo')(m, v) && typeof m.task_id === 'string') inputs.set(m.task_id, m.payload?.input);
      return undefined;
    },
    out: (m, v) => {
      const id = m.task_id as string;
      const result = kept.get(id);
      if (m.type === 'task.snapshot' && result) return payload({ state: 'completed', result })(m);
      const error = m.payload?.error as { code?: string; details?: { reason?: unknown } } | undefined;
      if (m.type !== 'task.result' || error?.code !== 'MESSAGE_TOO_LARGE' || !which(error.details?.reason) || !inputs.has(id))
        return undefined;
      const done = payload({ status: 'completed', error: undefined, output: inputs.get(id) })(m);
      if (Buffer.byteLength(JSON.stringify(done)) > Number(v.memo.get('max_message_bytes') ?? 1_048_576)) return undefined;
      kept.set(id, done.payload ?? {});
      return done;
    },
  };
}

/** The task.request of `m`'s task seen on this connection carried `quiet: true` (spec: tasks#quiet-tasks). */
function requested(m: Msg, v: View, quiet: boolean): boolean {
  for (const r of v.requests.values())
    if (r.type === 'task.request' && r.task_id === m.task_id) return (r.payload?.quiet === true) === quiet;
  return false;
}

/** A quiet request of a session of 1.1. */
const quietRequest = (m: Msg, v: View): boolean => m.type === 'task.request' && m.payload?.quiet === true && v.version !== '1.0';

/** A message of a quiet task of a session of 1.1. */
const quietTask = (m: Msg, v: View): boolean => v.version !== '1.0' && requested(m, v, true);
