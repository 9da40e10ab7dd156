/** Mutants that break the rules of spec/1.0/handshake.md (spec: handshake). */
import { randomBytes } from 'node:crypto';
import { answerInstead, both, dropOut, errorOf, inn, is, out, payload, recode, refuse, swallow } from '../operators.ts';
import { fakeAccepted, refuseOnceSeen, repairIn, type Row } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-HS-016:farewell-on-timeout',
    'a handshake step that times out is closed with a session.farewell first',
    () => ({
      close: async (info, v, close, send) => {
        if (!v.established && v.agent !== undefined) await send(v.make('session.farewell', { reason: 'the handshake timed out' }));
        return close(info);
      },
    }),
  ],
  [
    'TAP-HS-003:identity-not-checked',
    'a handshake.init whose source is not its agent_id is accepted',
    repairIn(is('handshake.init'), (m) => {
      const a = (m.payload?.agent as { agent_id?: string } | undefined)?.agent_id;
      return a && m.source !== a ? { ...m, source: a } : m;
    }),
  ],
  [
    'TAP-HS-003:target-not-checked',
    "a handshake.init for another agent's id is accepted",
    repairIn(
      (m, _v) => m.type === 'handshake.init' && m.target !== '*' && m.target !== 'tap.reference-agent',
      (m) => ({ ...m, target: '*' }),
    ),
  ],
  [
    'TAP-HS-004:lowest-version',
    'the lowest common version is chosen',
    () => repairIn(is('handshake.init'), (m) => payload({ versions: ['1.0'] })(m))(),
  ],
  [
    'TAP-HS-004:version-echoed',
    'the ack names the first version the requester listed',
    () =>
      out(is('handshake.ack'), (m, v) => {
        const req = v.answers(m);
        const first = (req?.payload?.versions as string[] | undefined)?.[0];
        return first && first !== m.payload?.version ? payload({ version: first })(m) : undefined;
      }),
  ],
  [
    'TAP-HS-005:no-supported-list',
    'UNSUPPORTED_VERSION without details.supported',
    () =>
      out(
        errorOf('UNSUPPORTED_VERSION'),
        payload((p) => ({ ...p, details: {} })),
      ),
  ],
  ['TAP-HS-005:stays-open', 'the transport stays open after UNSUPPORTED_VERSION', () => ({ close: async () => {} })],
  [
    'TAP-HS-006:short-session-id',
    'session ids are short and predictable',
    () => {
      let n = 0;
      return out(is('handshake.ack'), (m, v) => {
        const id = `session${String(++n).padStart(17, '0')}`;
        v.sessionId = id;
        return payload({ session_id: id })(m);
      });
    },
  ],
  [
    'TAP-HS-006:few-random-bits',
    'session ids are 22 characters long but hold 32 random bits (12 zero bytes and 4 random ones)',
    () =>
      out(is('handshake.ack'), (m, v) => {
        const id = Buffer.concat([Buffer.alloc(12), randomBytes(4)]).toString('base64url');
        v.sessionId = id;
        return payload({ session_id: id })(m);
      }),
  ],
  [
    'TAP-HS-007:missing-dropped',
    'a required capability the agent lacks is left out of missing',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => ({ ...p, missing: [] })),
      ),
  ],
  [
    'TAP-HS-008:refuses-when-missing',
    'a handshake that requires an unknown capability is refused',
    () =>
      out(
        (m) => m.type === 'handshake.ack' && Array.isArray(m.payload?.missing) && (m.payload.missing as unknown[]).length > 0,
        (m, v) => ({
          ...v.error(v.answers(m) ?? m, 'UNKNOWN_CAPABILITY', { fatal: true }),
        }),
      ),
  ],
  [
    'TAP-HS-009:heartbeat-not-negotiated',
    'the final heartbeat_ms ignores the proposal',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => ({ ...p, params: { ...(p.params as object), heartbeat_ms: 1234 } })),
      ),
  ],
  [
    'TAP-HS-009:heartbeat-out-of-range-refused',
    'a heartbeat_ms proposal outside [1000, 60000] is refused with INVALID_MESSAGE instead of clamped',
    () =>
      answerInstead(
        (m) => {
          const hb = (m.payload?.params as { heartbeat_ms?: unknown } | undefined)?.heartbeat_ms;
          return m.type === 'handshake.init' && typeof hb === 'number' && (hb < 1000 || hb > 60_000);
        },
        (m, v) => v.error(m, 'INVALID_MESSAGE', { fatal: true, message: 'heartbeat_ms must lie in [1000, 60000]' }),
      ),
  ],
  [
    'TAP-HS-009:limits-not-negotiated',
    'the final max_message_bytes is larger than either proposal',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => ({ ...p, params: { ...(p.params as object), max_message_bytes: 99_000_000 } })),
      ),
  ],
  [
    'TAP-HS-010:ready-compared-as-text',
    'a handshake.ready whose params are serialized in another member order is refused',
    () =>
      inn(is('handshake.ready'), (m, v, answer) => {
        const ack = [...v.requests.values()].length;
        void ack;
        const order = Object.keys((m.payload?.params as object) ?? {});
        if (order.join() === [...order].sort().join()) return undefined;
        answer(v.error(m, 'PROTOCOL_VIOLATION', { fatal: true }));
        return null;
      }),
  ],
  [
    'TAP-HS-011:ready-mismatch-accepted',
    'a handshake.ready with other params is accepted',
    () => ({
      out: (m, v) => {
        if (m.type === 'handshake.ack') v.memo.set('ack-params', m.payload?.params);
        return undefined;
      },
      in: (m, v) =>
        m.type === 'handshake.ready' && v.memo.get('ack-params') ? payload({ params: v.memo.get('ack-params') })(m) : undefined,
    }),
  ],
  ['TAP-HS-012:no-go', 'a valid handshake.ready is never answered', () => dropOut(is('handshake.go'))],
  [
    'TAP-HS-014:work-before-go',
    'a task.request before handshake.go is run',
    () => recode(errorOf('HANDSHAKE_REQUIRED'), 'PROTOCOL_VIOLATION'),
  ],
  ['TAP-HS-014:silent-before-go', 'a message before the handshake is left unanswered', () => dropOut(errorOf('HANDSHAKE_REQUIRED'))],
  [
    'TAP-HS-015:out-of-order-code',
    'a handshake message out of order is refused with HANDSHAKE_REQUIRED',
    () =>
      recode(
        both(errorOf('PROTOCOL_VIOLATION'), (m, v) => String(v.answers(m)?.type).startsWith('handshake.')),
        'HANDSHAKE_REQUIRED',
      ),
  ],
  [
    'TAP-HS-015:ready-schema-first',
    'a handshake.ready before any ack and without session_id is refused INVALID_MESSAGE, its payload read before its phase',
    () =>
      recode(
        both(errorOf('PROTOCOL_VIOLATION', 'handshake.ready'), (m, v) => v.agent === undefined && v.answers(m)?.session_id === undefined),
        'INVALID_MESSAGE',
      ),
  ],
  [
    'TAP-HS-018:card-id-differs',
    "the ack's card names another agent_id than its source",
    () =>
      out(
        is('handshake.ack'),
        payload((p) => ({ ...p, agent: { ...(p.agent as object), agent_id: 'someone.else' } })),
      ),
  ],
  [
    'TAP-HS-019:duplicate-capability',
    'the card lists a capability twice',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => {
          const card = p.agent as { capabilities: unknown[] };
          return { ...p, agent: { ...card, capabilities: [...card.capabilities, card.capabilities[0]] } };
        }),
      ),
  ],
  [
    'TAP-HS-021:state-after-error',
    'after a refused init, the next init is refused too',
    refuseOnceSeen({ seen: errorOf('IDENTITY_MISMATCH'), refused: is('handshake.init'), code: 'IDENTITY_MISMATCH', perTask: false }),
  ],
  [
    'TAP-HS-001:ping-needs-init',
    'a ping before handshake.init is left unanswered, as if init had to come first',
    () =>
      swallow((m, v) => m.type === 'ping' && v.agent === undefined && ![...v.requests.values()].some((r) => r.type === 'handshake.init')),
  ],
  [
    'TAP-HS-002:several-versions-refused',
    'a handshake.init listing more than one version is refused with UNSUPPORTED_VERSION',
    () =>
      answerInstead(
        (m) => m.type === 'handshake.init' && Array.isArray(m.payload?.versions) && (m.payload.versions as unknown[]).length > 1,
        (m, v) => v.error(m, 'UNSUPPORTED_VERSION', { fatal: true, details: { supported: ['1.0'] } }),
      ),
  ],
  [
    'TAP-HS-013:accepted-before-go',
    'a task.request between ack and go is accepted: task.accepted goes out before the session is established',
    () =>
      out(
        (m, v) => errorOf('HANDSHAKE_REQUIRED', 'task.request')(m, v) && !v.established && v.agent !== undefined,
        (m, v) => fakeAccepted(v, v.answers(m)!),
      ),
  ],
  [
    'TAP-HS-040:ready-extra-refused',
    'a handshake.ready whose params hold members the final params lack is refused',
    () => ({
      out: (m, v) => {
        if (m.type === 'handshake.ack') v.memo.set('final-keys', Object.keys((m.payload?.params as object) ?? {}));
        return undefined;
      },
      in: (m, v, answer) => {
        const keys = v.memo.get('final-keys') as string[] | undefined;
        const params = (m.payload?.params as object | undefined) ?? {};
        if (m.type !== 'handshake.ready' || !keys || Object.keys(params).every((k) => keys.includes(k))) return undefined;
        answer(v.error(m, 'PROTOCOL_VIOLATION', { fatal: true, message: 'handshake.ready params differ from the ack' }));
        return null;
      },
    }),
  ],
  [
    'TAP-HS-041:star-as-stranger',
    'a later handshake.init from the bound requester with target "*" gets IDENTITY_MISMATCH',
    () =>
      out(
        (m, v) => errorOf('PROTOCOL_VIOLATION', 'handshake.init')(m, v) && v.established && v.answers(m)?.target === '*',
        payload({ code: 'IDENTITY_MISMATCH' }),
      ),
  ],
  [
    'TAP-HS-041:other-target-as-later-init',
    'a later handshake.init from the bound requester naming another agent as target gets PROTOCOL_VIOLATION, as if it were addressed to the agent',
    () =>
      out(
        (m, v) => {
          const to = v.answers(m);
          return errorOf('IDENTITY_MISMATCH', 'handshake.init')(m, v) && v.established && to?.source === v.requester;
        },
        payload({ code: 'PROTOCOL_VIOLATION' }),
      ),
  ],
  // TAP 1.1, negotiated extensions (spec: handshake#negotiated-extensions).
  [
    'TAP-EXT-101:lists-none',
    'the ack of 1.1 lists no extension, even one offered that the agent supports',
    () => out((m) => m.type === 'handshake.ack' && Array.isArray(m.payload?.extensions), payload({ extensions: [] })),
  ],
  [
    'TAP-EXT-102:card-omits-used',
    "the agent's card in an ack that lists extensions does not list them",
    () =>
      out(
        (m) => m.type === 'handshake.ack' && Array.isArray(m.payload?.extensions) && (m.payload.extensions as unknown[]).length > 0,
        payload((p) => ({ ...p, agent: { ...(p.agent as Record<string, unknown>), extensions: undefined } })),
      ),
  ],
  [
    'TAP-EXT-103:unknown-optional-refused',
    'an init that offers an extension the agent does not support, not required, is refused with EXTENSION_REQUIRED',
    () =>
      refuse(
        (m) => m.type === 'handshake.init' && offered(m).some((e) => e.uri !== 'urn:tap:test:stamp' && e.required !== true),
        'EXTENSION_REQUIRED',
        { details: { missing: [], extensions: [] } },
      ),
  ],
  [
    'TAP-EXT-104:required-ignored',
    'an init that requires an extension the agent does not support opens a session anyway',
    () =>
      inn(
        (m) => m.type === 'handshake.init' && offered(m).some((e) => e.required === true),
        (m) => ({
          ...m,
          payload: {
            ...m.payload,
            agent: { ...(m.payload?.agent as Record<string, unknown>), extensions: offered(m).map((e) => ({ uri: e.uri })) },
          },
        }),
      ),
  ],
  [
    'TAP-EXT-105:unused-stamped',
    'in a session of 1.1 that uses no extension, the messages of a task carry the conformance extension member',
    () =>
      out(
        (m, v) =>
          v.version === '1.1' &&
          ['task.accepted', 'task.event', 'task.result'].includes(m.type) &&
          (m.metadata as Record<string, unknown> | undefined)?.['tap-test-stamp'] === undefined,
        (m) => ({ ...m, metadata: { ...(m.metadata as Record<string, unknown> | undefined), 'tap-test-stamp': 'urn:tap:test:stamp' } }),
      ),
  ],
];

/** The extensions the card of a handshake.init offers. */
function offered(m: { payload?: Record<string, unknown> }): { uri: string; required?: boolean }[] {
  const list = (m.payload?.agent as { extensions?: unknown } | undefined)?.extensions;
  return Array.isArray(list) ? (list as { uri: string; required?: boolean }[]) : [];
}
