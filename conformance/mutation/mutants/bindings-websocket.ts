/** Mutants that break the rules of spec/1.0/bindings-websocket.md (spec: bindings-websocket). */
import { randomBytes } from 'node:crypto';
import type { Msg } from '../layer.ts';
import { errorOf, is, out } from '../operators.ts';
import { any, type Row, wrongCode } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-WS-010:farewell-close-1001',
    'the connection is closed with code 1001 after the farewells',
    () => ({ close: async (info, _v, close) => close(info?.code === 1000 ? { ...info, code: 1001 } : info) }),
  ],
  [
    'TAP-WS-011:fatal-close-1000',
    'the connection is closed with code 1000 after a fatal error',
    () => ({ close: async (info, _v, close) => close(info?.code === 1008 ? { ...info, code: 1000 } : info) }),
  ],
  [
    'TAP-WS-004:two-messages-one-frame',
    'two messages are sent in one frame',
    () => out(is('task.result'), (m) => `${JSON.stringify(m)}\n${JSON.stringify({ ...m, message_id: 'x' })}`),
  ],
  [
    'TAP-WS-005:binary-ignored',
    'a binary frame is refused with INVALID_MESSAGE',
    wrongCode('MALFORMED_MESSAGE', undefined, 'INVALID_MESSAGE'),
  ],
  [
    'TAP-WS-007:ceiling-at-limit',
    'a frame above max_message_bytes closes the connection (1009) instead of getting MESSAGE_TOO_LARGE',
    () =>
      out(
        (m, v) => errorOf('MESSAGE_TOO_LARGE')(m, v) && v.established,
        (_m, v) => {
          void v.close({ code: 1009, reason: 'frame too large' });
          return null;
        },
      ),
  ],
  [
    'TAP-WS-009:second-session',
    'a second handshake.init on an established connection opens another session',
    () =>
      out(any, (m, v) => {
        if (m.type === 'handshake.ack' && !v.memo.has('ack')) v.memo.set('ack', m);
        const to = v.answers(m);
        const later = errorOf('PROTOCOL_VIOLATION', 'handshake.init')(m, v) && v.established && to?.payload?.resume === undefined;
        if (!later || !to) return undefined;
        const ack = v.memo.get('ack') as Msg;
        return v.make('handshake.ack', { ...ack.payload, session_id: randomBytes(18).toString('base64url') }, { reply_to: to.message_id });
      }),
  ],
];
