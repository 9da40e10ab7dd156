/**
 * The error registry, the table schemas/v1/error-codes.json is emitted from, and the one error
 * shape built from it (spec: errors#registry).
 */
import type { ErrorCodeEntry, PayloadOf } from '../../schemas/src/index.ts';
import { ERROR_CODES, type ErrorCodeName } from '../../schemas/src/tables.ts';

/** A code of the TAP 1.0 error registry, derived from the registry's literal table (spec: errors#registry): a misspelt code does not compile. */
export type ErrorCode = ErrorCodeName;

/** The payload of an `error` message, and the error of a failed task (spec: errors#error-payload). */
export type ErrorPayload = PayloadOf<'error'>;

/** Every registered code, in registry order: the table that error-codes.json is emitted from. */
export const ERROR_REGISTRY: readonly ErrorCodeEntry[] = ERROR_CODES;

const byCode = new Map<string, ErrorCodeEntry>(ERROR_REGISTRY.map((e) => [e.code, e]));

/** The registry entry of a code, or undefined for a code this version does not define (spec: errors#registry). */
export function errorEntry(code: string): ErrorCodeEntry | undefined {
  return byCode.get(code);
}

/** Options that override the registry defaults of one error. */
export interface ErrorOptions {
  /** Defaults to the registry's value (false for an unregistered code). */
  retryable?: boolean;
  /** True when the sender ends the session after this error; defaults to true for codes the registry marks fatal "always". */
  fatal?: boolean;
}

/**
 * Builds an error payload: `retryable` from the registry unless overridden, `fatal: true` for
 * codes that are always fatal, `details` only when given (spec: errors#error-payload).
 */
export function errorPayload(
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
  options: ErrorOptions = {},
): ErrorPayload {
  return anyErrorPayload(code, message, details, options);
}

/**
 * Builds an error payload for a code that came from outside, such as a test input or a later
 * minor version, which may not be in this registry; an unregistered code is not retryable
 * unless `options` say so (spec: errors#registry).
 */
export function anyErrorPayload(
  code: string,
  message: string,
  details?: Record<string, unknown>,
  options: ErrorOptions = {},
): ErrorPayload {
  const entry = byCode.get(code);
  const payload: ErrorPayload = { code, message, retryable: options.retryable ?? entry?.retryable ?? false };
  if (details !== undefined) payload.details = details;
  const fatal = options.fatal ?? (entry?.fatal === 'always' ? true : undefined);
  if (fatal !== undefined) payload.fatal = fatal;
  return payload;
}

/** True when the sender of this error ends the session after it (spec: errors#fatal-errors). */
export function isFatal(error: ErrorPayload): boolean {
  return error.fatal ?? errorEntry(error.code)?.fatal === 'always';
}

/** An exception that carries a TAP error payload, for code paths that throw (spec: errors#error-payload). */
export class TapError extends Error {
  override name = 'TapError';
  readonly payload: ErrorPayload;

  constructor(payload: ErrorPayload);
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: ErrorOptions);
  constructor(first: ErrorPayload | ErrorCode, message?: string, details?: Record<string, unknown>, options?: ErrorOptions) {
    const payload = typeof first === 'string' ? errorPayload(first, message ?? first, details, options) : first;
    super(`${payload.code}: ${payload.message}`);
    this.payload = payload;
  }

  /** The error's code, e.g. "TASK_TERMINAL". */
  get code(): string {
    return this.payload.code;
  }
}

/** What a failure says, whatever was thrown or rejected with: an Error's message, a string, or what it was. */
export function failureText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : `a failure without an Error (${String(err)})`;
}
