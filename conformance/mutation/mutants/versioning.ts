/** Mutants that break the rules of spec/1.0/versioning.md (spec: versioning). */
import type { Msg } from '../layer.ts';
import { both, envelope, errorOf, is, out, payload, refuse } from '../operators.ts';
import { type Row, wrongCode } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-VER-001:minor-refused',
    'a message in a later 1.x minor before the ack is refused',
    () =>
      refuse((m, v) => !v.established && /^tap\/1\.[1-9]/.test(String(m.protocol)) && m.type === 'handshake.init', 'UNSUPPORTED_VERSION', {
        fatal: true,
        details: { supported: ['1.0'] },
      }),
  ],
  [
    'TAP-VER-002:major-accepted',
    'a message in another major version is refused with INVALID_MESSAGE',
    wrongCode('UNSUPPORTED_VERSION', undefined, 'INVALID_MESSAGE'),
  ],
  [
    'TAP-VER-003:extension-members',
    'the agent adds an extension member without the x- prefix',
    () =>
      out(
        is('task.result'),
        payload((p) => ({ ...p, vendor_trace: 'abc' })),
      ),
  ],
  [
    'TAP-VER-004:metadata-changes-meaning',
    'metadata changes how the agent behaves',
    () => refuse((m) => m.type === 'task.request' && m.metadata !== undefined, 'INVALID_MESSAGE'),
  ],
  [
    'TAP-VER-005:reserved-name',
    'the card declares a tap.* capability the spec does not define',
    () =>
      out(
        is('handshake.ack'),
        payload((p) => {
          const card = p.agent as { capabilities: Array<Record<string, unknown>> };
          return { ...p, agent: { ...card, capabilities: [...card.capabilities, { ...card.capabilities[0], name: 'tap.custom.thing' }] } };
        }),
      ),
  ],
  [
    'TAP-VER-040:stray-minor-fatal',
    'a message in another minor version after the ack gets a fatal UNSUPPORTED_VERSION',
    () => out((m, v) => errorOf('UNSUPPORTED_VERSION')(m, v) && v.established && m.payload?.fatal !== true, payload({ fatal: true })),
  ],
  [
    'TAP-VER-042:major-not-fatal',
    'a message in another major version gets UNSUPPORTED_VERSION not marked fatal, and the session goes on',
    () => {
      const otherMajor = (m: Msg | undefined) => /^tap\/(?!1\.)\d+\.\d+$/.test(String(m?.protocol));
      return {
        out: (m, v) => (errorOf('UNSUPPORTED_VERSION')(m, v) && otherMajor(v.answers(m)) ? payload({ fatal: false })(m) : undefined),
        close: async (info, _v, close) => {
          if (info?.reason !== 'UNSUPPORTED_VERSION') await close();
        },
      };
    },
  ],
  [
    'TAP-VER-041:unprefixed-details',
    'an error adds a details member of its own without the x- prefix',
    () =>
      out(
        both(is('error'), (m) => m.payload?.code === 'UNKNOWN_TASK'),
        payload((p) => ({ ...p, details: { ...(p.details as object), hint: 'check the task id' } })),
      ),
  ],
  [
    'TAP-VER-101:refuses-1-0',
    'an agent of 1.1 refuses a requester that offers only 1.0',
    () =>
      refuse(
        (m) => m.type === 'handshake.init' && Array.isArray(m.payload?.versions) && !(m.payload.versions as unknown[]).includes('1.1'),
        'UNSUPPORTED_VERSION',
        { fatal: true, details: { supported: ['1.1'] } },
      ),
  ],
  [
    'TAP-VER-102:stamps-1-1-in-1-0',
    'in a session that negotiated 1.0, the agent writes tap/1.1 on its messages',
    () => out((m, v) => v.version === '1.0' && m.type !== 'handshake.ack' && m.session_id !== undefined, envelope({ protocol: 'tap/1.1' })),
  ],
  [
    'TAP-VER-102:extensions-in-1-0',
    'in a session that negotiated 1.0, the ack lists extensions, a member only 1.1 defines',
    () => out((m) => m.type === 'handshake.ack' && m.payload?.version === '1.0', payload({ extensions: [] })),
  ],
  [
    'TAP-VER-102:trace-context-in-1-0',
    "in a session that negotiated 1.0, the agent carries the request's traceparent on the task's stream",
    () =>
      out(
        (m, v) => v.version === '1.0' && ['task.accepted', 'task.event', 'task.result'].includes(m.type),
        (m) => ({
          ...m,
          metadata: {
            ...(m.metadata as Record<string, unknown> | undefined),
            traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
          },
        }),
      ),
  ],
];
