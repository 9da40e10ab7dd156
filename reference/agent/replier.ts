/**
 * What requests, the handshake and shutdown need of a connection: the runtime and task runner
 * it serves, the session it carries, and the direct reply, refusal, send and close (spec:
 * messages#requests-and-replies, errors#fatal-errors). Connection implements it.
 */
import type { ErrorPayload } from '../core/errors.ts';
import type { Reply } from './duplicates.ts';
import type { Runtime } from './runtime.ts';
import type { Link, Session } from './sessions.ts';
import type { TaskRunner } from './task-runner.ts';

/** Where a refusal goes: the message it answers and, before the session, who sent it. */
export interface RefusalTarget {
  replyTo?: string;
  taskId?: string;
  type?: unknown;
  source?: unknown;
  /** Refused before the duplicate check: its repeat gets the same error byte for byte. */
  early?: boolean;
}

/** A connection as requests, the handshake and shutdown use it. */
export interface Replier extends Link {
  readonly rt: Runtime;
  readonly runner: TaskRunner;
  /** The established session this connection carries. */
  readonly session?: Session;
  /** Closed by this side on purpose (a resume elsewhere, an ended session): no loss handling. */
  readonly deliberate: boolean;
  /** The text of the message being handled, as it came (spec: conformance#input-forms). */
  readonly frameText?: string;
  /** Sends the direct reply to the message being handled and remembers it for duplicates (spec: idempotency#duplicate-table). */
  reply(text: string, rebuild?: { rebuild: () => string; bytes: number }): void;
  /** Remembers, for duplicates of the message being handled, a reply that is not sent now (spec: tasks#quiet-requests). */
  remember(reply: Reply): void;
  /** Answers an offending message with `error`; closes after a fatal one (spec: errors#fatal-errors). */
  refuse(error: ErrorPayload, to?: RefusalTarget): void;
}

/** The close code after a fatal error: 1011 for INTERNAL_ERROR, else 1008 (spec: bindings-websocket#close-codes). */
export function fatalCloseCode(code: string | undefined): number {
  return code === 'INTERNAL_ERROR' ? 1011 : 1008;
}
