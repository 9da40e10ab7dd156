/** Mutants that break the rules of spec/1.0/security.md (spec: security). */
import { inn, payload } from '../operators.ts';
import type { Row } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-SEC-003:token-in-error',
    'error messages quote the resume token',
    () => ({
      out: (m, v) => {
        if (m.type === 'handshake.ack') v.memo.set('token', m.payload?.resume_token);
        return m.type === 'error'
          ? payload((p) => ({ ...p, message: `${p.message} (token ${String(v.memo.get('token'))})` }))(m)
          : undefined;
      },
    }),
  ],
  [
    'TAP-SEC-004:input-widens',
    'a permission named in the input or metadata is granted',
    () =>
      inn(
        (m) => m.type === 'task.request' && JSON.stringify({ i: m.payload?.input, x: m.metadata }).includes('tap.test.write'),
        (m) => payload((p) => ({ ...p, authorization: { ...(p.authorization as object), permissions: ['tap.test.write'] } }))(m),
      ),
  ],
];
