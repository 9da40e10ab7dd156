/**
 * "The same request": the fingerprint a task and its idempotency record keep, against which a
 * repeated task_id or idempotency key is compared (spec: idempotency#fingerprint).
 */
import { createHash } from 'node:crypto';
import { canonicalize } from '../core/jcs.ts';

/** The longest fingerprint kept as the RFC 8785 text itself; a longer one is kept as its SHA-256 digest. */
export const FINGERPRINT_TEXT_MAX = 128;

/** The fingerprint of (capability, input): their RFC 8785 form, compacted (compactFingerprint). */
export function fingerprint(capability: string, input: unknown): string {
  return compactFingerprint(canonicalize([capability, input === undefined ? null : input]));
}

/**
 * A fingerprint as it is kept: the RFC 8785 text up to FINGERPRINT_TEXT_MAX characters, else
 * "sha256:" and the text's digest, so that what a kept task costs does not grow with its input
 * (spec: limits#table-limits). Two texts compact to the same string exactly when they are equal
 * (but for a SHA-256 collision). A compacted fingerprint is returned unchanged, and a journal
 * written when fingerprints were kept whole is compacted as it is read.
 */
export function compactFingerprint(text: string): string {
  return text.length <= FINGERPRINT_TEXT_MAX ? text : `sha256:${createHash('sha256').update(text).digest('base64url')}`;
}
