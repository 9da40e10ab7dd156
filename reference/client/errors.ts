/** The one error class the client rejects with (spec: errors). */
import type { ErrorPayload } from './types.ts';

/** Codes the client uses for failures it observes itself; agent errors keep their registry code. */
export const ClientCode = Object.freeze({
  /** No reply came within request_timeout_ms: the outcome is unknown (spec: tasks#indeterminate). */
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
  /** The client was closed before the outcome arrived. */
  CLOSED: 'CLOSED',
  /** The handshake did not complete. */
  HANDSHAKE_FAILED: 'HANDSHAKE_FAILED',
  /** No session could be opened to any agent a mesh copy tried: nothing was sent (spec: mesh#moving, TAP-MESH-024). */
  UNREACHABLE: 'UNREACHABLE',
  /** A mesh was asked about an agent its registry holds no live entry of: nothing was sent. */
  UNKNOWN_AGENT: 'UNKNOWN_AGENT',
});

/**
 * A request or task that did not reach an outcome. `code` is the registry code when the agent
 * sent an error (then `payload` holds it), or one of ClientCode; `indeterminate` is true when
 * the work may or may not have happened; `unsent` is true when the request was never written to
 * any transport, so nothing of it can have happened (spec: mesh#moving).
 */
export class TapClientError extends Error {
  override readonly name = 'TapClientError';
  readonly code: string;
  readonly retryable: boolean;
  readonly indeterminate: boolean;
  readonly unsent: boolean;
  readonly payload?: ErrorPayload;
  readonly taskId?: string;

  constructor(
    code: string,
    message: string,
    options: {
      retryable?: boolean;
      indeterminate?: boolean;
      unsent?: boolean;
      payload?: ErrorPayload;
      taskId?: string;
      cause?: unknown;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.indeterminate = options.indeterminate ?? false;
    this.unsent = options.unsent ?? false;
    if (options.payload) this.payload = options.payload;
    if (options.taskId !== undefined) this.taskId = options.taskId;
  }

  /** The error an agent sent, as a client error. */
  static fromPayload(payload: ErrorPayload, taskId?: string): TapClientError {
    const where = taskId === undefined ? '' : ` (task ${taskId})`;
    return new TapClientError(payload.code, `${payload.code}: ${payload.message}${where}`, {
      retryable: payload.retryable,
      payload,
      ...(taskId === undefined ? {} : { taskId }),
    });
  }
}

/** Marks a promise as handled so an unobserved rejection never ends the process; returns it unchanged. */
export function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(ignore);
  return promise;
}

function ignore(): void {}
