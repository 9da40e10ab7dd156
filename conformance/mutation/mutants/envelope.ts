/** Mutants that break the rules of spec/1.0/envelope.md (spec: envelope). */
import { envelope, errorOf, inn, is, out, recode, refuse } from '../operators.ts';
import { any, repairIn, type Row, wrongCode } from '../rows.ts';

const ENVELOPE_MEMBERS = new Set([
  'protocol',
  'message_id',
  'type',
  'source',
  'target',
  'timestamp',
  'session_id',
  'reply_to',
  'task_id',
  'sequence',
  'deadline',
  'idempotency_key',
  'authorization',
  'metadata',
  'signature',
  'payload',
]);

export const rows: Row[] = [
  [
    'TAP-ENV-001:malformed-as-invalid',
    'a frame that is not JSON is refused with INVALID_MESSAGE',
    wrongCode('MALFORMED_MESSAGE', undefined, 'INVALID_MESSAGE'),
  ],
  ['TAP-ENV-002:i-json-accepted', 'an integer beyond 2^53-1 is accepted', () => recode(errorOf('INVALID_MESSAGE'), 'MALFORMED_MESSAGE')],
  [
    'TAP-ENV-003:duplicate-member',
    'pong carries its type member twice',
    () => out(is('pong'), (m) => JSON.stringify(m).replace('"type":"pong"', '"type":"pong","type":"pong"')),
  ],
  [
    'TAP-ENV-005:protocol-drops-version',
    'messages after the ack say "tap/1"',
    () => out((m, v) => v.established && m.type !== 'handshake.go', envelope({ protocol: 'tap/1' })),
  ],
  [
    'TAP-ENV-006:message-id-reused',
    'two different messages share a message_id',
    () => {
      let first: string | undefined;
      return out(
        (_m, v) => v.established,
        (m) => {
          if (first === undefined) {
            first = m.message_id as string;
            return undefined;
          }
          return m.type === 'pong' ? envelope({ message_id: first })(m) : undefined;
        },
      );
    },
  ],
  ['TAP-ENV-007:wrong-target', 'messages name the wrong target', () => out((_m, v) => v.established, envelope({ target: 'someone-else' }))],
  [
    'TAP-ENV-007:malformed-after-ack-unknown',
    'after the ack, the error for a frame that is not JSON is addressed to unknown, not to the bound requester',
    () => out((m, v) => errorOf('MALFORMED_MESSAGE')(m, v) && v.established, envelope({ target: 'unknown' })),
  ],
  [
    'TAP-ENV-009:target-star-accepted',
    'a message other than handshake.init with target "*" is accepted',
    repairIn(
      (m) => m.type !== 'handshake.init' && m.target === '*',
      (m, v) => ({ ...m, target: v.agent }),
    ),
  ],
  [
    'TAP-ENV-010:local-time',
    'timestamps without the trailing Z',
    () => out(any, (m) => envelope({ timestamp: String(m.timestamp).replace('Z', '+00:00') })(m)),
  ],
  [
    'TAP-ENV-011:no-session-id',
    'messages after the ack carry no session_id',
    () => out((m, v) => v.agent !== undefined && m.type !== 'handshake.ack', envelope({ session_id: undefined })),
  ],
  [
    'TAP-ENV-012:ack-session-differs',
    "the ack's envelope session_id differs from its payload's",
    () => out(is('handshake.ack'), envelope({ session_id: 'AAAAAAAAAAAAAAAAAAAAAAAA' })),
  ],
  [
    'TAP-ENV-013:reply-to-on-event',
    'a state event carries reply_to',
    () => out(is('task.event'), (m) => envelope({ reply_to: m.message_id })(m)),
  ],
  [
    'TAP-ENV-014:deadline-obeyed-elsewhere',
    'a deadline on task.status is checked',
    () => refuse((m) => m.type === 'task.status' && m.deadline !== undefined, 'DEADLINE_EXCEEDED'),
  ],
  [
    'TAP-ENV-015:unknown-member-refused',
    'a message with an unknown member is refused',
    () => refuse((m) => Object.keys(m).some((k) => !ENVELOPE_MEMBERS.has(k)), 'INVALID_MESSAGE'),
  ],
  // TAP 1.1, trace context (spec: envelope#trace-context).
  [
    'TAP-TRACE-101:malformed-accepted',
    'a task.request with a malformed traceparent is taken, its traceparent repaired',
    () =>
      inn(
        (m) => m.type === 'task.request' && typeof meta(m).traceparent === 'string' && !W3C.test(String(meta(m).traceparent)),
        (m) => ({ ...m, metadata: { ...meta(m), traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } }),
      ),
  ],
  [
    'TAP-TRACE-102:disagreement-accepted',
    'a task.request whose traceparent disagrees with trace_id is taken',
    () =>
      inn(
        (m) =>
          m.type === 'task.request' &&
          typeof meta(m).traceparent === 'string' &&
          typeof meta(m).trace_id === 'string' &&
          !String(meta(m).traceparent).includes(String(meta(m).trace_id)),
        (m) => ({ ...m, metadata: { ...meta(m), trace_id: undefined, span_id: undefined } }),
      ),
  ],
  [
    'TAP-TRACE-103:context-dropped',
    "the messages of a task's stream lose the request's traceparent",
    () =>
      out(
        (m) => ['task.accepted', 'task.event', 'task.result'].includes(m.type) && meta(m).traceparent !== undefined,
        (m) => ({ ...m, metadata: { ...meta(m), traceparent: undefined } }),
      ),
  ],
];

/** A message's metadata as an open object. */
function meta(m: object): Record<string, unknown> {
  return ((m as { metadata?: unknown }).metadata ?? {}) as Record<string, unknown>;
}

/** A well-formed traceparent of version 00. */
const W3C = /^00-(?!0{32}-)[0-9a-f]{32}-(?!0{16}-)[0-9a-f]{16}-[0-9a-f]{2}$/;
