/**
 * The error registry, read from schemas/v1/error-codes.json, and the one error shape built from
 * it (spec: errors#registry).
 */
import type { ErrorCodeEntry, PayloadOf } from '../../schemas/src/index.ts';
import registry from '../../schemas/v1/error-codes.json' with { type: 'json' };

/**
 * Every code of error-codes.json, in registry order; errors.test.ts checks that the two agree, so
 * ErrorCode below is derived from the registry and a misspelt code does not compile.
 */
export const ERROR_CODE_NAMES = [
  'MALFORMED_MESSAGE',
  'INVALID_MESSAGE',
  'UNSUPPORTED_VERSION',
  'UNKNOWN_MESSAGE_TYPE',
  'HANDSHAKE_REQUIRED',
  'MESSAGE_TOO_LARGE',
  'IDENTITY_MISMATCH',
  'INVALID_SIGNATURE',
  'AUTH_REQUIRED',
  'UNKNOWN_TASK',
  'TASK_EXISTS',
  'TASK_TERMINAL',
  'INVALID_TRANSITION',
  'CAPABILITY_NOT_SUPPORTED',
  'PERMISSION_DENIED',
  'AUTHORIZATION_EXPIRED',
  'IDEMPOTENCY_CONFLICT',
  'DEADLINE_EXCEEDED',
  'BUSY',
  'RATE_LIMITED',
  'SHUTTING_DOWN',
  'PLAN_REJECTED',
  'INTERNAL_ERROR',
  'PROTOCOL_VIOLATION',
  'REPLAY_DETECTED',
  'RESUME_UNAVAILABLE',
  'SESSION_LOST',
  'MAX_ATTEMPTS',
] as const;

/** A code of the TAP 1.0 error registry (spec: errors#registry). */
export type ErrorCode = (typeof ERROR_CODE_NAMES)[number];

/** The payload of an `error` message, and the error of a failed task (spec: errors#error-payload). */
export type ErrorPayload = PayloadOf<'error'>;

/** Every registered code, in registry order. */
export const ERROR_REGISTRY: readonly ErrorCodeEntry[] = registry.codes as ErrorCodeEntry[];

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
