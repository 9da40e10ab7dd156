/** Mutants that break the rules of spec/1.0/limits.md (spec: limits). */
import { randomBytes } from 'node:crypto';
import type { Msg, Mutator, View } from '../layer.ts';
import { answerInstead, dropOut, envelope, errorOf, is, out, payload, recode } from '../operators.ts';
import { fakeAccepted, forgetDuplicates, repairIn, type Row, wrongCode } from '../rows.ts';

/** The limits of the card in a handshake.init. */
const cardLimits = (m: Msg) =>
  ((m.payload?.agent as { limits?: Record<string, unknown> } | undefined)?.limits ?? {}) as Record<string, unknown>;

const cardLimit = (m: Msg) =>
  typeof cardLimits(m).max_message_bytes === 'number' ? (cardLimits(m).max_message_bytes as number) : undefined;

/**
 * Makes the agent forget an idempotency record once `after` other task.requests arrived since the
 * key was first used (from other connections only, with `others`): the key gets a fresh value.
 */
function forgetKeys(o: { after: number; others: boolean }): () => Mutator {
  const keys = new Map<string, { total: number; own: number; by: View; fresh?: string }>();
  const counts = new Map<View, number>();
  let total = 0;
  return () => ({
    in: (m, v) => {
      if (m.type !== 'task.request') return undefined;
      total++;
      counts.set(v, (counts.get(v) ?? 0) + 1);
      const key = m.idempotency_key;
      if (typeof key !== 'string') return undefined;
      const k = keys.get(key);
      if (!k) {
        keys.set(key, { total, own: counts.get(v)!, by: v });
        return undefined;
      }
      const since = total - k.total - (o.others ? (counts.get(k.by) ?? 0) - k.own : 0);
      if (k.fresh === undefined && since < o.after) return undefined;
      k.fresh ??= `${key}-${randomBytes(4).toString('hex')}`;
      return envelope({ idempotency_key: k.fresh })(m);
    },
  });
}

export const rows: Row[] = [
  [
    'TAP-LIM-001:too-large-closes',
    'MESSAGE_TOO_LARGE is sent as INVALID_MESSAGE',
    wrongCode('MESSAGE_TOO_LARGE', undefined, 'INVALID_MESSAGE'),
  ],
  [
    'TAP-LIM-002:oversized-output',
    // The first few of a connection only: the memory pair has no back-pressure, and a flood case's
    // thousands of padded results would be the harness's memory, not the rule, under test.
    "the first 16 task.results of a connection are padded beyond the session's max_message_bytes",
    () => {
      let padded = 0;
      return out(
        (m, v) => is('task.result')(m, v) && padded++ < 16,
        (m, v) => payload((p) => ({ ...p, 'x-pad': 'x'.repeat(Number(v.memo.get('max_message_bytes') ?? 1048576)) }))(m),
      );
    },
  ],
  [
    'TAP-LIM-003:size-not-first',
    'an oversized frame is refused as malformed',
    wrongCode('MESSAGE_TOO_LARGE', undefined, 'MALFORMED_MESSAGE'),
  ],
  ['TAP-LIM-004:busy-ignored', 'BUSY is sent as PERMISSION_DENIED', wrongCode('BUSY', 'task.request', 'PERMISSION_DENIED')],
  ['TAP-LIM-006:no-pings', 'the agent never pings an idle peer', () => dropOut((m, v) => m.type === 'ping' && v.established)],
  ['TAP-LIM-008:no-pong', 'pings are not answered', () => dropOut(is('pong'))],
  [
    'TAP-LIM-012:closes-on-bad-input',
    'the session ends after the third bad frame: a farewell, then silence',
    () => {
      let bad = 0;
      let over = false;
      return {
        out: (m, v, send) => {
          if (over) return null;
          if (m.type === 'error' && (m.payload?.code === 'MALFORMED_MESSAGE' || m.payload?.code === 'INVALID_MESSAGE') && ++bad === 3) {
            over = true;
            send(v.make('session.farewell', { reason: 'too much bad input' }));
          }
          return undefined;
        },
        in: () => (over ? null : undefined),
      };
    },
  ],
  [
    'TAP-LIM-009:gone-after-one-ping',
    'the peer is taken as gone after one unanswered ping',
    () => {
      const answered = new Set<string>();
      return {
        in: (m) => {
          if (m.type === 'pong' && typeof m.reply_to === 'string') answered.add(m.reply_to);
          return undefined;
        },
        out: (m, v) => {
          if (m.type !== 'ping' || !v.established) return undefined;
          const id = m.message_id as string;
          const wait = Number(v.memo.get('heartbeat_ms') ?? 10_000);
          setTimeout(() => {
            if (!answered.has(id)) void v.close({ code: 1001, reason: 'the peer is gone' });
          }, wait).unref?.();
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-LIM-013:nesting-as-invalid',
    'a message deeper than 64 levels gets INVALID_MESSAGE',
    () =>
      recode((m) => m.type === 'error' && (m.payload?.details as { reason?: string } | undefined)?.reason === 'nesting', 'INVALID_MESSAGE'),
  ],
  [
    'TAP-LIM-015:deep-frame-ends-session',
    'after a frame too deep, the session answers nothing more',
    () => {
      let dead = false;
      return {
        in: () => (dead ? null : undefined),
        out: (m) => {
          if (dead) return null;
          if (m.type === 'error' && (m.payload?.details as { reason?: string } | undefined)?.reason === 'nesting') dead = true;
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-LIM-016:pre-handshake-small',
    'before the ack, a frame above 16 384 bytes gets MESSAGE_TOO_LARGE',
    () =>
      answerInstead(
        (m, v) => v.agent === undefined && JSON.stringify(m).length > 16_384,
        (m, v) => v.error(m, 'MESSAGE_TOO_LARGE', { details: { max_message_bytes: 16_384, byte_length: JSON.stringify(m).length } }),
      ),
  ],
  [
    'TAP-LIM-018:duplicate-table-short',
    'the duplicate table keeps only the last 256 task.status requests',
    forgetDuplicates(is('task.status'), { keep: 256 }),
  ],
  [
    'TAP-LIM-019:flood-erases-records',
    "another principal's flood of tasks erases an idempotency record",
    forgetKeys({ after: 2000, others: true }),
  ],
  [
    'TAP-LIM-020:forgets-instead-of-busy',
    'a full table forgets an idempotency record within its retention instead of refusing new tasks with BUSY',
    forgetKeys({ after: 2000, others: false }),
  ],
  [
    'TAP-LIM-020:forgets-oldest-task-instead-of-busy',
    "at the cap a principal's oldest finished task is forgotten within its retention, and the new task taken instead of refused with BUSY",
    () => {
      const finished: string[] = [];
      const forgotten = new Set<string>();
      return {
        out: (m, v) => {
          if (m.type === 'task.result' && typeof m.task_id === 'string' && !forgotten.has(m.task_id)) finished.push(m.task_id);
          if (!errorOf('BUSY', 'task.request')(m, v) || finished.length === 0) return undefined;
          const to = v.answers(m)!;
          forgotten.add(finished.shift()!);
          const done = v.make(
            'task.result',
            { status: 'completed', output: to.payload?.input ?? null },
            { task_id: to.task_id, sequence: 2 },
          );
          return [fakeAccepted(v, to), done];
        },
        in: (m, v, answer) => {
          if (!['task.status', 'task.resume'].includes(m.type) || !forgotten.has(m.task_id as string)) return undefined;
          answer(v.error(m, 'UNKNOWN_TASK'));
          return null;
        },
      };
    },
  ],
  [
    'TAP-LIM-040:card-limit-after-ack',
    "after the ack the agent holds its messages to its own card's limit, not the final max_message_bytes: a task.result above the final limit goes out",
    () =>
      out(
        (m, v) => m.type === 'task.result' && v.established && Number(v.memo.get('max_message_bytes')) < 1_048_576,
        (m, v) => payload((p) => ({ ...p, 'x-padding': 'p'.repeat(Number(v.memo.get('max_message_bytes'))) }))(m),
      ),
  ],
  [
    'TAP-LIM-040:pre-handshake-limit-until-go',
    'between the ack and go the agent still reads under the pre-handshake limit: a handshake.ready above the final max_message_bytes is taken',
    () => ({
      frameLimit: (n, v) => (v.established ? n : Math.max(n, 65_536)),
      in: (m, v) => {
        const final = Number(v.memo.get('max_message_bytes'));
        if (m.type !== 'handshake.ready' || v.established || !(Buffer.byteLength(JSON.stringify(m)) > final)) return undefined;
        // The agent would measure the frame against the final limit: the layer hands it the ready without its padding.
        const params = Object.fromEntries(Object.entries(m.payload?.params ?? {}).filter(([k]) => !k.startsWith('x-')));
        return payload({ params })(m);
      },
    }),
  ],
  [
    'TAP-LIM-041:ack-over-card-limit',
    "the handshake.ack is measured against the agent's own limit, not the requester's card",
    repairIn(
      (m, v) => m.type === 'handshake.init' && v.agent === undefined && cardLimit(m) !== undefined && cardLimit(m)! < 65_536,
      (m) => payload((p) => ({ ...p, agent: { ...(p.agent as object), limits: { ...cardLimits(m), max_message_bytes: 1_048_576 } } }))(m),
    ),
  ],
  [
    'TAP-LIM-042:too-large-details',
    "MESSAGE_TOO_LARGE for an oversized ack gives the agent's own limit in details",
    () =>
      out(
        errorOf('MESSAGE_TOO_LARGE', 'handshake.init'),
        payload((p) => ({ ...p, details: { ...(p.details as object), max_message_bytes: 1_048_576 } })),
      ),
  ],
  [
    'TAP-LIM-043:heartbeat-drifts',
    "the agent's own heartbeat_ms grows by a second with each session",
    (() => {
      let sessions = 0;
      return () =>
        out(is('handshake.ack'), (m) => {
          const params = (m.payload?.params ?? {}) as { heartbeat_ms?: number };
          const drift = 1000 * sessions++;
          return drift ? payload({ params: { ...params, heartbeat_ms: Number(params.heartbeat_ms) + drift } })(m) : undefined;
        });
    })(),
  ],
];
