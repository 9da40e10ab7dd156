/**
 * The check of a task's input before it is sent: an input that is not I-JSON (a number beyond
 * ±(2^53−1), which is an integer however it is written, a lone surrogate, nesting too deep) makes a
 * message the agent must refuse, so the requester refuses it first and sends nothing
 * (spec: envelope#encoding, TAP-ENV-002).
 */
import { inspectValue } from '../core/ijson.ts';
import { TapClientError } from './errors.ts';

/** The unsent INVALID_MESSAGE error of an input that is not I-JSON, or undefined when it is. */
export function inputRefusal(capability: string, input: unknown): TapClientError | undefined {
  const found = inspectValue(input, 3);
  if (!found) return undefined;
  const where = found.path === '' ? 'the input itself' : `${found.path} in the input`;
  return new TapClientError(
    'INVALID_MESSAGE',
    `the input of this ${capability} task is not I-JSON, so it was not sent: at ${where}, ${found.message} (TAP-ENV-002, spec: envelope#encoding). Send such a number as a string, or one within ±(2^53−1)`,
    { unsent: true },
  );
}
