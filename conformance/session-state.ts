/**
 * What the harness knows about one TAP session, shared by every connection of that session
 * (a resume opens a new connection to the same session): identities, negotiated params, the
 * integrity key, and the per-task streams used to check sequences and re-sends.
 */
import type { Envelope } from '../schemas/src/index.ts';

/** A message as it travels: the envelope (schemas/src/envelope.ts) with its payload read by field, and any member an agent adds. */
export type Wire = Omit<Envelope, 'payload' | 'metadata'> & {
  /** Open: trace members and extensions ("x-…"). */
  metadata?: Record<string, unknown>;
  // Agent data is untrusted and shaped by schemas checked at run time.
  // biome-ignore lint/suspicious/noExplicitAny: a message of any type, read by field after the schema validated it
  payload: Record<string, any>;
  [extra: string]: unknown;
};

/** The pre-shared key a signed session uses. */
export interface HmacKey {
  keyId: string;
  key: Uint8Array;
  /** The requester agent id the key is bound to. */
  peer: string;
}

/** Unique ids for the harness's messages and tasks within one case. */
export class IdSource {
  private n = 0;
  private t = 0;
  constructor(private readonly nonce: string) {}

  /** A fresh message id. */
  message(): string {
    return `tc-${this.nonce}-${++this.n}`;
  }

  /** A fresh task id (a valid Identifier). */
  task(label = 'task'): string {
    return `${label}-${this.nonce}-${++this.t}`;
  }
}

/** The per-session knowledge shared by every connection of one session. */
export class SessionState {
  /** The harness's agent id in this session. */
  selfId: string;
  /** The agent's id: from the probe until the ack names it. */
  agentId: string | undefined;
  sessionId: string | undefined;
  resumeToken: string | undefined;
  version: string | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: a message of any type, read by field after the schema validated it
  params: Record<string, any> | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: a message of any type, read by field after the schema validated it
  card: Record<string, any> | undefined;
  /** Set once integrity is proposed (signing starts with handshake.init). */
  integrity: HmacKey | undefined;
  /** What every handshake.init of the session presents (a bearer token of the run), unless a case gives its own. */
  credentials: { scheme: string; token?: string } | undefined;
  /** True from handshake.ready on: the envelope carries session_id. */
  bound = false;
  /** True from handshake.go on. */
  established = false;
  /**
   * Set when the harness itself loses inbound messages on purpose (chaos): a sequence gap is then
   * the harness's doing, and streams are checked after recovery instead.
   */
  lenientGaps = false;
  /** Tasks the harness requested quiet in a session of 1.1: their streams hold only their outcome (spec: tasks#quiet-tasks). */
  readonly quietTasks = new Set<string>();
  /** Tasks whose streams began in another session (before a restart): not checked from sequence 1 here. */
  readonly adopted = new Set<string>();
  /** Agent message ids seen, with the exact text first received (a digest of a long one, inspect.ts fingerprint()). */
  readonly agentMessages = new Map<string, string>();
  /** Per task: sequence → exact text (a digest of a long one). */
  readonly streams = new Map<string, Map<number, string>>();
  /** Per task: the sequence of its task.result, once seen. */
  readonly resultSeq = new Map<string, number>();
  /** Harness message id → the agent's direct reply to it: its type and exact text. */
  readonly replies = new Map<string, { type: string; text: string }>();
  /** Message ids of errors the harness sent (nothing may answer them). */
  readonly sentErrors = new Set<string>();
  /** True once the agent's session.farewell arrived: nothing may follow it (spec: shutdown#farewell). */
  agentFarewell = false;
  /**
   * The principal the handshake authenticated, shared by the sessions of one key or one set of
   * credentials; undefined for a session that authenticated nobody, a principal of its own
   * (spec: authorization#principals).
   */
  principal: string | undefined;
  /** The max_concurrent_tasks the harness proposed, beside the final one in `params`. */
  proposedConcurrency: number | undefined;
  /** How long the agent keeps the session resumable once orphaned, from its ack (spec: resume#orphaned-sessions). */
  resumeWindowMs: number | undefined;

  constructor(selfId: string, agentId?: string) {
    this.selfId = selfId;
    this.agentId = agentId;
  }

  /** The last sequence seen for a task (0 for none). */
  lastSequence(taskId: string): number {
    const s = this.streams.get(taskId);
    if (!s || s.size === 0) return 0;
    return Math.max(...s.keys());
  }
}
