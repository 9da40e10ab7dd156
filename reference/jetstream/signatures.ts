/**
 * Who wrote what on the durable queue (spec: bindings-nats#signed-records): a submitter signs its
 * task record with its Ed25519 key, and a runner signs each message it stores in a task's stream,
 * so that a runner holding the trust file can tell a record's principal and a stored task.result
 * from a forgery by anyone else who can publish on the server.
 */
import { signValue, verifyValue, type SigningKey, type TrustFile } from '../trust.ts';
import type { TaskRecord } from '../workspace/record.ts';

/** The metadata member that carries a record's signature: `{ "principal", "value" }`. */
export const RECORD_SIGNATURE = 'x-signature';

/** The NATS header of a stored stream message's signature by the runner that published it. */
export const STREAM_SIGNATURE_HEADER = 'Tap-Signature';

/** Metadata members that a queue's operator may change after the submit, so the signature leaves them out. */
const UNSIGNED_METADATA = [RECORD_SIGNATURE, 'x-requeued'];

/** What a record's signature covers: the record without `state` (the queue's bookkeeping) and the unsigned metadata. */
function signedPart(record: TaskRecord): Record<string, unknown> {
  const { state: _state, metadata, ...rest } = record;
  const kept = Object.fromEntries(Object.entries(metadata ?? {}).filter(([k]) => !UNSIGNED_METADATA.includes(k)));
  return { ...rest, metadata: kept };
}

/** The record with `key`'s signature in `metadata["x-signature"]`. */
export function signRecord(record: TaskRecord, key: SigningKey): TaskRecord {
  const { [RECORD_SIGNATURE]: _old, ...metadata } = structuredClone(record.metadata ?? {});
  const unsigned: TaskRecord = { ...structuredClone(record), metadata };
  return {
    ...unsigned,
    metadata: { ...metadata, [RECORD_SIGNATURE]: { principal: key.principal, value: signValue(signedPart(unsigned), key) } },
  };
}

/** Why a record's signature is not accepted: a registry code and a sentence for the dead letter. */
export interface SignatureProblem {
  code: 'INVALID_SIGNATURE' | 'INVALID_MESSAGE' | 'IDENTITY_MISMATCH';
  message: string;
}

/**
 * The principal whose signature the record carries, checked against the trust file; or why it is
 * refused: no signature, one of the wrong shape, a principal the trust file does not know, a
 * signature that does not verify, or an idempotency principal other than the signer.
 */
export function verifyRecord(record: TaskRecord, trust: TrustFile): { ok: true; principal: string } | ({ ok: false } & SignatureProblem) {
  const sig = record.metadata?.[RECORD_SIGNATURE] as { principal?: unknown; value?: unknown } | undefined;
  if (sig === undefined)
    return {
      ok: false,
      code: 'INVALID_SIGNATURE',
      message: `the record is not signed: this runner takes only records with metadata["${RECORD_SIGNATURE}"]`,
    };
  if (typeof sig !== 'object' || sig === null || typeof sig.principal !== 'string' || typeof sig.value !== 'string')
    return {
      ok: false,
      code: 'INVALID_MESSAGE',
      message: `metadata["${RECORD_SIGNATURE}"] must be { "principal": string, "value": string }`,
    };
  const principal = sig.principal;
  if (!Object.hasOwn(trust.principals, principal))
    return {
      ok: false,
      code: 'INVALID_SIGNATURE',
      message: `the record is signed by ${JSON.stringify(principal.slice(0, 128))}, whom the trust file does not know`,
    };
  if (!verifyValue(signedPart(record), principal, sig.value, trust))
    return {
      ok: false,
      code: 'INVALID_SIGNATURE',
      message: `the record's signature is not ${principal}'s: it was altered or signed with another key`,
    };
  const idem = record.metadata['x-idempotency'] as { principal?: unknown } | undefined;
  if (idem !== undefined && idem.principal !== principal)
    return {
      ok: false,
      code: 'IDENTITY_MISMATCH',
      message: `the record claims the idempotency key of ${JSON.stringify(String(idem.principal).slice(0, 128))} but is signed by ${principal}`,
    };
  return { ok: true, principal };
}

/** What a stream message's signature covers: the message and the attempt (`Tap-Attempt`) it was published in. */
const streamPart = (message: object, attempt: number): Record<string, unknown> => ({ attempt, message });

/** The `Tap-Signature` of a stream message published in `attempt`. */
export function signStreamMessage(message: object, attempt: number, key: SigningKey): string {
  return signValue(streamPart(message, attempt), key);
}

/**
 * True when a stored stream message is signed by the runner its `source` names, and that runner
 * is one of `runners` (spec: bindings-nats#signed-records).
 */
export function verifyStreamMessage(
  message: object,
  attempt: number | undefined,
  signature: string | undefined,
  trust: TrustFile,
  runners: readonly string[],
): boolean {
  const source = (message as { source?: unknown }).source;
  if (typeof source !== 'string' || !runners.includes(source) || attempt === undefined) return false;
  return verifyValue(streamPart(message, attempt), source, signature, trust);
}
