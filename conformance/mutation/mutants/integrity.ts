/** Mutants that break the rules of spec/1.0/integrity.md (spec: integrity). */
import { signMessage } from '../../mac.ts';
import type { Msg, View } from '../layer.ts';
import { both, envelope, errorOf, inn, is, out, payload, recode, refuse } from '../operators.ts';
import { repairIn, type Row, wrongCode } from '../rows.ts';

/** Signs a message with the session's key (for a message the layer repairs or makes). */
function signMessageFor(v: View, m: Msg): Msg {
  if (!v.key) return m;
  const { signature: _old, ...rest } = m;
  return signMessage(rest as Msg, v.key.key, v.key.keyId);
}

export const rows: Row[] = [
  [
    'TAP-INT-001:forged-source-obeyed',
    'a message whose source is not the peer is obeyed',
    repairIn(
      (m, v) => v.established && v.requester !== undefined && m.source !== v.requester,
      (m, v) => ({ ...m, source: v.requester }),
    ),
  ],
  [
    'TAP-INT-002:forged-farewell-obeyed',
    'a forged session.farewell ends the session',
    () =>
      inn(
        (m, v) => m.type === 'session.farewell' && v.established && m.source !== v.requester,
        (m, v, answer) => {
          answer(v.make('session.farewell', { reason: 'bye' }));
          return { ...m, source: v.requester };
        },
      ),
  ],
  [
    'TAP-INT-003:session-id-not-checked',
    'a message with another session_id is obeyed',
    repairIn(
      (m, v) => v.established && m.session_id !== v.sessionId && !String(m.type).startsWith('handshake.'),
      (m, v) => ({ ...m, session_id: v.sessionId }),
    ),
  ],
  [
    'TAP-INT-003:missing-session-id-obeyed',
    'after the ack, a message without session_id is obeyed as if it named the session',
    repairIn(
      (m, v) => v.sessionId !== undefined && m.session_id === undefined && m.type !== 'handshake.init',
      (m, v) => ({ ...m, session_id: v.sessionId }),
    ),
  ],
  [
    'TAP-INT-004:integrity-dropped',
    'a proposed integrity is left out of the final params',
    () =>
      out(is('handshake.ack'), (m, v) => {
        const p = m.payload?.params as Record<string, unknown>;
        if (!p || typeof p.integrity !== 'object') return undefined;
        v.integrity = false;
        return payload({ params: { ...p, integrity: 'none' } })(m);
      }),
  ],
  [
    'TAP-INT-005:downgrade-accepted',
    'a keyed requester is let in without integrity',
    () => out(errorOf('AUTH_REQUIRED', 'handshake.init'), () => null),
  ],
  [
    'TAP-INT-006:unsigned-replies',
    'replies under integrity are sent unsigned',
    () =>
      out(
        (m, v) => v.integrity && m.type === 'pong',
        (m) => envelope({ signature: undefined })(m),
      ),
  ],
  [
    'TAP-INT-008:key-not-bound',
    'a key is accepted from another agent id than the one it is bound to',
    wrongCode('AUTH_REQUIRED', 'handshake.init', 'INVALID_SIGNATURE'),
  ],
  [
    'TAP-INT-009:mac-over-text',
    'the signature value is computed wrongly (padded base64)',
    () =>
      out(
        (m) => typeof m.signature === 'object' && m.signature !== null && m.type === 'task.result',
        (m) => JSON.stringify({ ...m, signature: { ...(m.signature as object), value: `${(m.signature as { value: string }).value}=` } }),
      ),
  ],
  [
    'TAP-INT-010:unknown-members-unsigned',
    'a message whose signature covers only known members is accepted',
    () => recode(errorOf('INVALID_SIGNATURE'), 'INVALID_MESSAGE'),
  ],
  [
    'TAP-INT-011:bad-signature-accepted',
    'a wrong signature is accepted',
    repairIn(
      (m, v) => v.integrity && m.signature !== undefined,
      (m, v) => {
        const { signature: _s, ...rest } = m;
        return v.key ? signMessageFor(v, rest as Msg) : m;
      },
    ),
  ],
  [
    'TAP-INT-011:missing-signature-accepted',
    'an unsigned message under integrity is accepted',
    () =>
      inn(
        (m, v) => v.integrity && m.signature === undefined,
        (m, v) => signMessageFor(v, m),
      ),
  ],
  [
    'TAP-INT-012:duplicate-members-accepted',
    'duplicate members under integrity are refused with INVALID_SIGNATURE',
    () =>
      recode(
        both(errorOf('MALFORMED_MESSAGE'), (_m, v) => v.integrity),
        'INVALID_SIGNATURE',
      ),
  ],
  [
    'TAP-INT-014:skew-ignored',
    'an old timestamp under integrity is accepted',
    repairIn(
      (m, v) =>
        v.integrity &&
        m.signature !== undefined &&
        typeof m.timestamp === 'string' &&
        Math.abs(Date.parse(m.timestamp) - Date.now()) > 60_000,
      (m, v) => signMessageFor(v, { ...m, timestamp: new Date().toISOString() }),
    ),
  ],
  [
    'TAP-INT-015:skew-without-integrity',
    'the skew check is applied without integrity',
    () =>
      refuse(
        (m, v) =>
          !v.integrity && v.established && typeof m.timestamp === 'string' && Math.abs(Date.parse(m.timestamp) - Date.now()) > 300_000,
        'INVALID_SIGNATURE',
      ),
  ],
  [
    'TAP-INT-015:skew-on-duplicates',
    'under integrity a repeated message_id whose timestamp has left the skew window gets REPLAY_DETECTED instead of its original reply',
    () => {
      const seen = new Set<unknown>();
      return inn(
        (m, v) => {
          const repeat = seen.has(m.message_id);
          seen.add(m.message_id);
          return v.integrity && repeat && m.sequence === undefined && Math.abs(Date.parse(String(m.timestamp)) - Date.now()) > 300_000;
        },
        (m, v, answer) => {
          answer(v.error(m, 'REPLAY_DETECTED'));
          return null;
        },
      );
    },
  ],
  [
    'TAP-INT-016:signed-refusal',
    'the refusal of an integrity init is signed',
    () =>
      out(
        (m, v) =>
          m.type === 'error' &&
          v.answers(m)?.type === 'handshake.init' &&
          typeof (v.answers(m)?.payload?.params as { integrity?: unknown } | undefined)?.integrity === 'object',
        (m, v) => signMessageFor(v, m),
      ),
  ],
  [
    'TAP-INT-040:shape-as-invalid-signature',
    'a signature member of the wrong shape gets INVALID_SIGNATURE',
    () => recode((m, v) => errorOf('INVALID_MESSAGE')(m, v) && v.answers(m)?.signature !== undefined, 'INVALID_SIGNATURE'),
  ],
  [
    'TAP-INT-041:later-init-fatal',
    'a later handshake.init proposing integrity gets a fatal PROTOCOL_VIOLATION',
    () =>
      out(
        (m, v) => {
          const integrity = (v.answers(m)?.payload?.params as { integrity?: unknown } | undefined)?.integrity;
          return (
            errorOf('PROTOCOL_VIOLATION', 'handshake.init')(m, v) && v.established && typeof integrity === 'object' && integrity !== null
          );
        },
        payload({ fatal: true }),
      ),
  ],
];
