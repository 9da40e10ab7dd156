/**
 * Building outbound messages: a fresh message_id, an RFC 3339 UTC timestamp, the envelope members
 * in their usual order, and the error message shape (spec: envelope#fields).
 */
import type { MessageOf, MessageType, PayloadOf } from '../../schemas/src/index.ts';
import { PROTOCOL } from './catalogue.ts';
import type { ErrorPayload } from './errors.ts';
import { newMessageId, webRandom, type RandomSource } from './ids.ts';

/** Where fresh ids and the time come from; both injected so composition stays deterministic in tests. */
export interface ComposeContext {
  random?: RandomSource;
  /** The sender's message ids (see messageIds); without it each id is 128 random bits from `random`. */
  nextId?: () => string;
  /** Milliseconds since the epoch. */
  now?: () => number;
  /** The envelope protocol; defaults to PROTOCOL. */
  protocol?: string;
}

/** The envelope members a sender chooses; message_id, timestamp and protocol are filled in unless given. */
export interface MessageFields<T extends MessageType> {
  type: T;
  source: string;
  target: string;
  payload: PayloadOf<T>;
  message_id?: string;
  timestamp?: string;
  session_id?: string;
  task_id?: string;
  reply_to?: string;
  sequence?: number;
  deadline?: string;
  idempotency_key?: string;
  metadata?: MessageOf<T>['metadata'];
}

let lastMs = Number.NaN;
let lastText = '';
let otherMs = Number.NaN;
let otherText = '';

/**
 * An RFC 3339 UTC timestamp with millisecond precision and a trailing "Z"; the texts of the last
 * two milliseconds asked for are kept, so messages built within one millisecond share one Date,
 * even when a deadline is written between them (spec: envelope#timestamps).
 */
export function timestamp(ms: number): string {
  if (ms === lastMs) return lastText;
  if (ms === otherMs) {
    otherMs = lastMs;
    lastMs = ms;
    const text = otherText;
    otherText = lastText;
    lastText = text;
    return text;
  }
  otherMs = lastMs;
  otherText = lastText;
  lastText = new Date(ms).toISOString();
  lastMs = ms;
  return lastText;
}

/** The envelope members composeMessage copies when present, in their usual order. */
const OPTIONAL_MEMBERS = ['session_id', 'task_id', 'reply_to', 'sequence', 'deadline', 'idempotency_key', 'metadata'] as const;

/** Optional envelope members given apart from the rest, e.g. a request's own beside its session's. */
export type ExtraMembers<T extends MessageType> = Partial<Pick<MessageFields<T>, (typeof OPTIONAL_MEMBERS)[number]>>;

/**
 * Builds a message with the envelope members in their usual order, omitting the absent ones; a
 * member of `extra` wins over the same member of `fields`, so that a caller adds its own without
 * copying `fields` first (spec: envelope#fields).
 */
export function composeMessage<T extends MessageType>(
  ctx: ComposeContext,
  fields: MessageFields<T>,
  extra?: ExtraMembers<T>,
): MessageOf<T> {
  const msg: Record<string, unknown> = {
    protocol: ctx.protocol ?? PROTOCOL,
    message_id: fields.message_id ?? (ctx.nextId ? ctx.nextId() : newMessageId(ctx.random ?? webRandom)),
    type: fields.type,
    source: fields.source,
    target: fields.target,
    timestamp: fields.timestamp ?? timestamp((ctx.now ?? Date.now)()),
  };
  for (const k of OPTIONAL_MEMBERS) {
    const value = extra?.[k] !== undefined ? extra[k] : fields[k];
    if (value !== undefined) msg[k] = value;
  }
  msg.payload = fields.payload;
  return msg as MessageOf<T>;
}

/** Where an error goes and what it answers. */
export interface ErrorAddress {
  source: string;
  target: string;
  /** The message_id of the offending message, when it was readable (spec: errors#correlation). */
  replyTo?: string;
  taskId?: string;
  sessionId?: string;
}

/** Builds an `error` message answering an offending message (spec: errors#error-payload). */
export function composeError(ctx: ComposeContext, to: ErrorAddress, error: ErrorPayload): MessageOf<'error'> {
  return composeMessage(ctx, {
    type: 'error',
    source: to.source,
    target: to.target,
    reply_to: to.replyTo,
    task_id: to.taskId,
    session_id: to.sessionId,
    payload: error,
  });
}
