/** Mutants that break the rules of spec/1.0/conformance.md (spec: conformance). */
import { answerInstead, both, errorOf, inn, out, payload, recode, requestFor, resultOf } from '../operators.ts';
import type { Row } from '../rows.ts';

export const rows: Row[] = [
  [
    'TAP-CONF-009:echo-changes-input',
    'tap.test.echo returns something else than its input',
    () =>
      out(
        both(resultOf('completed'), (m) => m.payload?.output !== undefined),
        payload({ output: { changed: true } }),
      ),
  ],
  [
    'TAP-CONF-010:bad-input-accepted',
    'a tap.test.* task with an ill-formed input is run',
    () => recode(errorOf('INVALID_MESSAGE', 'task.request'), 'INTERNAL_ERROR'),
  ],
  [
    'TAP-CONF-011:key-not-held',
    'the provisioned key is refused',
    () =>
      answerInstead(
        (m) => m.type === 'handshake.init' && typeof (m.payload?.params as { integrity?: unknown } | undefined)?.integrity === 'object',
        (m, v) => v.error(m, 'AUTH_REQUIRED', { fatal: true }),
      ),
  ],
  [
    'TAP-CONF-040:bound-refused',
    'tap.test.sleep refuses the bound ms 0 of its input form',
    () =>
      answerInstead(
        (m, v) => requestFor('tap.test.sleep')(m, v) && (m.payload?.input as { ms?: unknown } | undefined)?.ms === 0,
        (m, v) => v.error(m, 'INVALID_MESSAGE'),
      ),
  ],
  [
    'TAP-CONF-040:fraction-accepted',
    'an integer of an input form written with a fraction or an exponent (ms 5.0) is accepted: only the parsed value is read',
    // Serialized again, 5.0 reaches the agent as 5.
    () =>
      inn(
        (m, v) => requestFor('tap.test.sleep')(m, v) || requestFor('tap.test.stream')(m, v),
        (m) => ({ ...m }),
      ),
  ],
  [
    'TAP-CONF-040:long-sleep-refused',
    'tap.test.sleep refuses ms over one minute, though its form allows up to 2^53-1',
    () =>
      answerInstead(
        (m, v) => requestFor('tap.test.sleep')(m, v) && Number((m.payload?.input as { ms?: unknown } | undefined)?.ms) > 60_000,
        (m, v) => v.error(m, 'INVALID_MESSAGE'),
      ),
  ],
];
