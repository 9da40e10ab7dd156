/**
 * Building outgoing messages: the envelope, the signature when integrity was agreed, and the
 * serialized text that is sent, retained and re-sent byte for byte (spec: envelope,
 * integrity#mac, messages#resend).
 */
import type { MessageType, PayloadOf } from '../../schemas/src/index.ts';
import { PROTOCOL } from '../core/catalogue.ts';
import { newMessageId, type RandomSource } from '../core/ids.ts';
import { timestamp } from '../core/compose.ts';
import { issueList, validateMessage } from '../core/validate.ts';
import { sign, type Hmac } from '../core/signing.ts';
import { OldestKey } from '../core/oldest.ts';
import type { Clock } from '../core/platform.ts';

/** The key every outgoing message of a session is signed with. */
export interface SigningKey {
  keyId: string;
  key: Uint8Array;
}

/** Who sends and how: shared by every message of one agent. */
export interface OutboundContext {
  agentId: string;
  clock: Clock;
  random: RandomSource;
  hmac: Hmac;
  /** The agent's message ids (messageIds); without it each id is 128 random bits from `random`. */
  nextId?: () => string;
  /**
   * Check every built message against its type's schema and throw on a mismatch: a debugging aid
   * (option validateOutbound, or TAP_VALIDATE_OUTBOUND=1). Off, the runtime trusts the typed
   * values it builds from (spec: messages#payload-validation).
   */
  validate?: boolean;
}

/** Where one message goes. */
export interface Addressing {
  target: string;
  /** The envelope protocol: the session's negotiated version; PROTOCOL before there is one (spec: versioning#tap-1-1). */
  protocol?: string;
  sessionId?: string;
  signing?: SigningKey;
}

/** Envelope members set per message. */
export interface EnvelopeExtras {
  task_id?: string;
  reply_to?: string;
  sequence?: number;
  /** Envelope metadata, e.g. the trace of the task the message belongs to (spec: mesh#trace). */
  metadata?: object;
  /** The id and timestamp of a message being rebuilt byte for byte (spec: idempotency#duplicate-messages). */
  rebuild?: { message_id: string; timestamp: string };
}

/** RFC 3339 UTC text of a clock reading, cached per millisecond (spec: envelope#timestamps). */
export function iso(ms: number): string {
  return timestamp(ms);
}

/** Serializes one message of `type`, signing it when the addressing carries a key. */
export function buildMessage<T extends MessageType>(
  out: OutboundContext,
  to: Addressing,
  type: T,
  payload: PayloadOf<T>,
  extras: EnvelopeExtras = {},
): string {
  const msg: Record<string, unknown> = {
    protocol: to.protocol ?? PROTOCOL,
    message_id: extras.rebuild?.message_id ?? (out.nextId ? out.nextId() : newMessageId(out.random)),
    type,
    source: out.agentId,
    target: to.target,
    timestamp: extras.rebuild?.timestamp ?? iso(out.clock.now()),
  };
  if (to.sessionId !== undefined) msg.session_id = to.sessionId;
  if (extras.task_id !== undefined) msg.task_id = extras.task_id;
  if (extras.reply_to !== undefined) msg.reply_to = extras.reply_to;
  if (extras.sequence !== undefined) msg.sequence = extras.sequence;
  if (extras.metadata !== undefined) msg.metadata = extras.metadata;
  msg.payload = payload;
  const final = to.signing ? sign(msg, to.signing.key, to.signing.keyId, out.hmac) : msg;
  if (out.validate) checkOutbound(final);
  return JSON.stringify(final);
}

/** Throws when a message the runtime built does not match its type's schema: a bug in the runtime or a handler. */
export function checkOutbound(msg: Record<string, unknown>): void {
  const issues = validateMessage(msg);
  if (issues) {
    throw new Error(
      `outbound ${String(msg.type)} does not match its schema: ${issueList(issues)} (checked because validateOutbound or TAP_VALIDATE_OUTBOUND=1 is set)`,
    );
  }
}

/** A bounded map that forgets its oldest entries first (duplicate tables; spec: limits#bounded-tables). */
export class BoundedMap<K, V> {
  private readonly map = new Map<K, V>();
  private readonly oldest = new OldestKey(this.map);

  constructor(private readonly max: number) {}

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.max) this.map.delete(this.oldest.take());
  }

  entries(): IterableIterator<[K, V]> {
    return this.map.entries();
  }
}
