/** Mutants that break the rules of spec/1.0/errors.md (spec: errors). */
import { both, envelope, errorOf, inn, is, out, payload, replyTo } from '../operators.ts';
import { type Row, wrongCode } from '../rows.ts';

/** An identifier (identifier.schema.json) and a message_id (envelope.schema.json). */
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

const MESSAGE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** A frame whose top-level object, before any nested one, has "type":"error". */
const TOP_LEVEL_ERROR = /^\s*\{[^{}]*"type"\s*:\s*"error"/;

/** The default skew window (spec: integrity#skew). */
const SKEW_MS = 300_000;

export const rows: Row[] = [
  [
    'TAP-ERR-001:retryable-flipped',
    'errors carry the wrong retryable',
    () =>
      out(
        is('error'),
        payload((p) => ({ ...p, retryable: !p.retryable })),
      ),
  ],
  [
    'TAP-ERR-002:unknown-code-refused',
    'an error with an unknown code is answered',
    () =>
      inn(
        (m) => m.type === 'error',
        (m, v, answer) => {
          answer(
            v.make(
              'error',
              { code: 'INVALID_MESSAGE', message: 'unknown code', retryable: false, fatal: false },
              { reply_to: m.message_id },
            ),
          );
          return null;
        },
      ),
  ],
  ['TAP-ERR-003:no-reply-to', 'errors do not carry reply_to', () => out(is('error'), envelope({ reply_to: undefined }))],
  [
    'TAP-ERR-003:no-task-id',
    'errors do not carry task_id',
    () => out((m) => m.type === 'error' && m.task_id !== undefined, envelope({ task_id: undefined })),
  ],
  [
    'TAP-ERR-004:error-answered',
    'an error from the requester is answered with an error',
    () =>
      inn(is('error'), (m, v, answer) => {
        answer(
          v.make('error', { code: 'PROTOCOL_VIOLATION', message: 'an error', retryable: false, fatal: false }, { reply_to: m.message_id }),
        );
        return null;
      }),
  ],
  [
    'TAP-ERR-005:fatal-not-fatal',
    'an always-fatal error is marked fatal: false and the session stays',
    () => ({
      out: (m) => (m.type === 'error' && m.payload?.fatal === true ? payload({ fatal: false })(m) : undefined),
      close: async () => {},
    }),
  ],
  [
    'TAP-ERR-006:non-fatal-closes',
    'the session ends after a non-fatal error: a farewell, then silence',
    () => {
      let over = false;
      return {
        out: (m, v, send) => {
          if (over) return null;
          if (m.type === 'error' && m.payload?.fatal !== true && v.established) {
            over = true;
            send(v.make('session.farewell', { reason: 'closing' }));
          }
          return undefined;
        },
        in: () => (over ? null : undefined),
      };
    },
  ],
  [
    'TAP-ERR-007:fatal-flag-lies',
    'non-fatal errors are marked fatal: true',
    () => out((m) => m.type === 'error' && m.payload?.fatal !== true, payload({ fatal: true })),
  ],
  [
    'TAP-ERR-008:stops-answering',
    'after a malformed frame the agent stops answering',
    () => {
      let mute = false;
      return {
        in: (_m) => (mute ? null : undefined),
        out: (m) => {
          if (m.type === 'error' && m.payload?.code === 'MALFORMED_MESSAGE') mute = true;
          return mute && m.type !== 'error' ? null : undefined;
        },
      };
    },
  ],
  [
    'TAP-ERR-009:refused-has-effect',
    'a refused task.request is accepted as well',
    () =>
      out(both(is('error'), replyTo('task.request')), (m, v, send) => {
        const to = v.answers(m)!;
        if (typeof to.task_id === 'string' && m.payload?.code !== 'TASK_EXISTS' && m.payload?.code !== 'IDEMPOTENCY_CONFLICT')
          send(
            v.make(
              'task.accepted',
              { capability: to.payload?.capability ?? 'x', deadline: new Date(Date.now() + 3.6e6).toISOString() },
              { task_id: `${to.task_id}`, sequence: 1 },
            ),
          );
        return undefined;
      }),
  ],
  [
    'TAP-ERR-010:order-swapped',
    'CAPABILITY_NOT_SUPPORTED is reported as INVALID_MESSAGE',
    wrongCode('CAPABILITY_NOT_SUPPORTED', 'task.request'),
  ],
  [
    'TAP-ERR-010:skew-before-signature',
    'under integrity a stale first-seen message is refused with REPLAY_DETECTED before its signature is checked',
    () => {
      const seen = new Set<unknown>();
      return inn(
        (m, v) => {
          const first = !seen.has(m.message_id);
          seen.add(m.message_id);
          const age = Math.abs(Date.now() - Date.parse(String(m.timestamp)));
          return v.integrity && v.established && first && m.sequence === undefined && age > SKEW_MS;
        },
        (m, v, answer) => {
          answer(v.error(m, 'REPLAY_DETECTED'));
          return null;
        },
      );
    },
  ],
  [
    'TAP-ERR-010:version-before-envelope',
    'a message in another major version gets the fatal UNSUPPORTED_VERSION even when its envelope fails the schema',
    () =>
      inn(
        (m, v) => v.established && /^tap\/(?!1\.)\d+\.\d+$/.test(String(m.protocol)),
        (m, v, answer) => {
          answer(v.error(m, 'UNSUPPORTED_VERSION', { fatal: true, details: { supported: ['1.0'] } }));
          void v.close({ code: 1008, reason: 'UNSUPPORTED_VERSION' });
          return null;
        },
      ),
  ],
  [
    'TAP-ERR-010:shutdown-before-plan-checks',
    'while shutting down, an approval of an open task is refused with SHUTTING_DOWN before the plan checks',
    () => {
      let stopping = false;
      const ended = new Set<unknown>();
      return {
        out: (m) => {
          if (m.type === 'task.result') ended.add(m.task_id);
          return undefined;
        },
        in: (m, v, answer) => {
          if (m.type === 'shutdown.request') stopping = true;
          if (!stopping || m.type !== 'plan.decision' || m.payload?.decision === 'rejected' || ended.has(m.task_id)) return undefined;
          answer(v.error(m, 'SHUTTING_DOWN', { retryable: true }));
          return null;
        },
      };
    },
  ],
  [
    'TAP-ERR-030:nested-error-unanswered',
    'a malformed frame that says "type":"error" anywhere is left unanswered, as if it were an error',
    () => out(errorOf('MALFORMED_MESSAGE'), (_m, v) => (/\\?"type\\?":\s*\\?"error/.test(v.lastUndecoded ?? '') ? null : undefined)),
  ],
  [
    'TAP-ERR-040:ill-formed-echoed',
    'an error echoes an ill-formed task_id or message_id',
    () => {
      const bad: { taskId?: string; messageId?: string } = {};
      return {
        in: (m) => {
          if (typeof m.task_id === 'string' && !IDENTIFIER.test(m.task_id)) bad.taskId = m.task_id;
          if (typeof m.message_id === 'string' && !MESSAGE_ID.test(m.message_id)) bad.messageId = m.message_id;
          return undefined;
        },
        out: (m) => {
          if (m.type !== 'error' || m.payload?.code !== 'INVALID_MESSAGE') return undefined;
          if (m.task_id === undefined && bad.taskId !== undefined) return envelope({ task_id: bad.taskId })(m);
          if (m.reply_to === undefined && bad.messageId !== undefined) return envelope({ reply_to: bad.messageId })(m);
          return undefined;
        },
      };
    },
  ],
  [
    'TAP-ERR-041:target-always-unknown',
    'every error before the ack is addressed to unknown, even when the source could be read',
    () => out((m, v) => m.type === 'error' && v.agent === undefined && m.target !== 'unknown', envelope({ target: 'unknown' })),
  ],
  [
    'TAP-ERR-030:oversized-error-answered',
    'an oversized frame whose kept prefix shows a top-level "type":"error" is answered with MESSAGE_TOO_LARGE',
    () => ({
      raw: (frame, v, answer) => {
        const prefix = new TextDecoder().decode(frame.bytes);
        if (!frame.oversized || !TOP_LEVEL_ERROR.test(prefix)) return undefined;
        const id = /"message_id"\s*:\s*"([A-Za-z0-9_-]{1,128})"/.exec(prefix)?.[1];
        answer(
          v.make(
            'error',
            { code: 'MESSAGE_TOO_LARGE', message: 'the message is too large', retryable: false, fatal: false },
            id ? { reply_to: id } : {},
          ),
        );
        return true;
      },
    }),
  ],
  [
    'TAP-ERR-030:oversized-nested-error-unanswered',
    'an oversized frame whose kept prefix says "type":"error" anywhere is left unanswered, as if it were an error',
    () => out(errorOf('MESSAGE_TOO_LARGE'), (_m, v) => (/"type"\s*:\s*"error"/.test(v.lastOversized ?? '') ? null : undefined)),
  ],
  [
    'TAP-ERR-041:guessed-target',
    'before the ack, the error for a frame that is not JSON is addressed to a guessed agent id, neither a source its text shows nor unknown',
    () => out((m, v) => errorOf('MALFORMED_MESSAGE')(m, v) && v.agent === undefined, envelope({ target: 'requester' })),
  ],
  [
    'TAP-ERR-042:farewell-after-fatal',
    'a session.farewell follows a fatal error',
    () =>
      out(
        (m, v) => m.type === 'error' && m.payload?.fatal === true && v.established,
        (m, v) => [m, v.make('session.farewell', { reason: 'a fatal error' })],
      ),
  ],
  [
    'TAP-ERR-044:details-other-task',
    'TASK_EXISTS names another task than the existing one in details.task_id',
    () =>
      out(
        errorOf('TASK_EXISTS'),
        payload((p) => ({ ...p, details: { ...(p.details as object), task_id: 'another-task' } })),
      ),
  ],
  // TAP 1.1: the capability's own failure (spec: errors#capability-failed).
  [
    'TAP-ERR-101:internal-error',
    "a capability's own failure ends with INTERNAL_ERROR in a session of 1.1",
    () =>
      out(
        failedWith('CAPABILITY_FAILED'),
        payload((p) => ({ ...p, error: { ...(p.error as object), code: 'INTERNAL_ERROR' } })),
      ),
  ],
  [
    'TAP-ERR-102:retryable',
    'CAPABILITY_FAILED comes retryable though the capability did not say so',
    () =>
      out(
        failedWith('CAPABILITY_FAILED'),
        payload((p) => ({ ...p, error: { ...(p.error as object), retryable: true } })),
      ),
  ],
  [
    'TAP-ERR-103:registry-retryable-in-1-0',
    "in a session of 1.0 a capability's own failure comes as INTERNAL_ERROR with the registry's retryable: true",
    () =>
      out(
        (m, v) => v.version === '1.0' && failedWith('INTERNAL_ERROR')(m),
        payload((p) => ({ ...p, error: { ...(p.error as object), retryable: true } })),
      ),
  ],
];

/** A task.result whose error has this code. */
function failedWith(code: string): (m: { type: string; payload?: Record<string, unknown> }) => boolean {
  return (m) => m.type === 'task.result' && (m.payload?.error as { code?: unknown } | undefined)?.code === code;
}
