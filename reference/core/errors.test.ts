import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../schemas/src/index.ts';
import { anyErrorPayload, ERROR_REGISTRY, errorEntry, errorPayload, isFatal, TapError, type ErrorCode } from './errors.ts';
import registry from '../../schemas/v1/error-codes.json' with { type: 'json' };
import { validateAgainst } from './validate.ts';

describe('errors', () => {
  it('reads the registry from its table, which error-codes.json holds too (spec: errors#registry)', () => {
    expect(ERROR_REGISTRY).toEqual(ERROR_CODES);
    expect(ERROR_REGISTRY).toEqual(registry.codes);
    expect(errorEntry('BUSY')?.category).toBe('capacity');
    expect(errorEntry('NOPE')).toBeUndefined();
  });

  it.each([
    ['BUSY', true],
    ['RATE_LIMITED', true],
    ['SHUTTING_DOWN', true],
    ['INTERNAL_ERROR', true],
    ['SESSION_LOST', true],
    ['PROTOCOL_VIOLATION', false],
    ['REPLAY_DETECTED', false],
    ['RESUME_UNAVAILABLE', false],
    ['MAX_ATTEMPTS', false],
    ['TASK_TERMINAL', false],
  ] as [ErrorCode, boolean][])('takes retryable for %s from the registry: %s (spec: errors#registry)', (code, retryable) => {
    expect(errorPayload(code, 'x').retryable).toBe(retryable);
  });

  it('builds a payload that passes its schema, with details only when given (spec: errors#error-payload)', () => {
    const plain = errorPayload('TASK_TERMINAL', 'the task has ended');
    expect(plain).toEqual({ code: 'TASK_TERMINAL', message: 'the task has ended', retryable: false });
    const detailed = errorPayload('PERMISSION_DENIED', 'no', { required_permission: 'tap.test.write' });
    expect(detailed.details).toEqual({ required_permission: 'tap.test.write' });
    expect(validateAgainst('error-payload.schema.json', detailed)).toBeNull();
  });

  it('marks always-fatal codes fatal, and lets the caller decide for the others (spec: errors#fatal-errors)', () => {
    expect(errorPayload('AUTH_REQUIRED', 'x').fatal).toBe(true);
    // UNSUPPORTED_VERSION may be fatal or not: a stray minor after the ack is not (spec: versioning#stray-minor).
    expect(errorPayload('UNSUPPORTED_VERSION', 'x').fatal).toBeUndefined();
    expect(errorPayload('PROTOCOL_VIOLATION', 'x').fatal).toBeUndefined();
    expect(errorPayload('PROTOCOL_VIOLATION', 'x', undefined, { fatal: true }).fatal).toBe(true);
    expect(isFatal(errorPayload('PROTOCOL_VIOLATION', 'x'))).toBe(false);
    expect(isFatal({ code: 'AUTH_REQUIRED', message: 'x', retryable: false })).toBe(true);
    expect(isFatal({ code: 'BUSY', message: 'x', retryable: true, fatal: true })).toBe(true);
  });

  it('lets the caller override retryable, and defaults an unregistered code to not retryable', () => {
    expect(errorPayload('TASK_TERMINAL', 'x', undefined, { retryable: true }).retryable).toBe(true);
    expect(anyErrorPayload('X_LATER_CODE', 'x').retryable).toBe(false);
  });

  it('carries the payload in TapError, built from a payload or from parts', () => {
    const e = new TapError('UNKNOWN_TASK', 'no such task', { task_id: 't-1' });
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe('UNKNOWN_TASK');
    expect(e.message).toBe('UNKNOWN_TASK: no such task');
    expect(e.payload.details).toEqual({ task_id: 't-1' });
    expect(new TapError(errorPayload('BUSY', 'full')).payload.retryable).toBe(true);
  });

  it('types every code as one of the registry, so a misspelt code does not compile (spec: errors#registry)', () => {
    expect(errorPayload('TASK_TERMINAL', 'x').code).toBe('TASK_TERMINAL');
    // @ts-expect-error TASK_TERMINATED is not a registered code; TASK_TERMINAL is.
    expect(errorPayload('TASK_TERMINATED', 'x').code).toBe('TASK_TERMINATED');
  });
});
