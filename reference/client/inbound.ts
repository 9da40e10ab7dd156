/**
 * The requester's receive checks, in the order the spec fixes: size → JSON → envelope →
 * version → signature → identity → duplicate → type → handshake phase → payload schema
 * (spec: errors#order-of-checks). Pure and synchronous: one frame in, one verdict out.
 */
import type { DecodedEnvelope, TapMessage } from '../../schemas/src/index.ts';
import {
  allowedBeforeHandshake,
  checkSignature,
  decodeFrame,
  DEFAULT_SKEW_MS,
  errorPayload,
  isCompatibleProtocol,
  mayReceive,
  validateDecoded,
  type Hmac,
} from '../core/index.ts';
import type { InboundFrame } from '../transports/index.ts';
import type { ErrorPayload } from './types.ts';

/** What the receiver knows when a frame arrives. */
export interface InboundContext {
  /** The negotiated max_message_bytes (or the proposal, before the ack). */
  maxMessageBytes: number;
  /** The negotiated version, or the one proposed first before the ack. */
  version: string;
  /** This requester's agent id: every message must target it. */
  selfId: string;
  /** The agent's id once known (from the ack, or given up front). */
  peerId?: string;
  /** The session id once the ack fixed it. */
  sessionId?: string;
  /** Whether handshake.go has arrived. */
  established: boolean;
  /**
   * True while the core handshake machine is in charge: it checks signatures, identities and the
   * order of handshake messages itself, so only decoding, type and schema are checked here.
   */
  handshake: boolean;
  /** Now, in ms since the epoch, for the skew window. */
  now: number;
  /** The skew window for signed messages, in ms (default 300 000). */
  skewMs?: number;
  /** The pre-shared key when integrity was proposed. */
  integrity?: { keyId: string; key: Uint8Array; hmac: Hmac };
  /** Whether this client follows a task id (its stream may be replayed from an earlier session). */
  follows(taskId: string): boolean;
  /** Whether a message id was already processed in this session. */
  seen(messageId: string): boolean;
}

/** The verdict on one frame. */
export type Inbound =
  | { kind: 'accept'; message: TapMessage; text: string }
  | { kind: 'duplicate'; message: TapMessage; text: string }
  | {
      kind: 'reject';
      error: ErrorPayload;
      /** Whether to send the error back: never to an `error`, never without an addressable peer. */
      answer: boolean;
      replyTo?: string;
      taskId?: string;
      /** The offender's source, when readable: where an answer goes before the ack. */
      source?: string;
      text?: string;
    };

const MESSAGE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

/** Runs the checks on one frame. */
export function checkInbound(frame: InboundFrame, ctx: InboundContext): Inbound {
  const decoded = decodeFrame(frame, {
    maxMessageBytes: ctx.maxMessageBytes,
    // Under integrity duplicate member names are refused (spec: integrity#duplicate-members).
    rejectDuplicateMembers: ctx.integrity !== undefined,
  });
  if (!decoded.ok) {
    const peek = peekEnvelope(frame);
    return reject(decoded.error, {
      answer: peek.type !== 'error',
      ...(decoded.replyTo !== undefined ? { replyTo: decoded.replyTo } : {}),
      ...(decoded.taskId !== undefined ? { taskId: decoded.taskId } : {}),
      ...(peek.source !== undefined ? { source: peek.source } : {}),
    });
  }
  const msg = decoded.message as DecodedEnvelope;

  if (!isCompatibleProtocol(String(msg.protocol), ctx.version)) {
    return refuseMessage(
      errorPayload(
        'UNSUPPORTED_VERSION',
        `protocol ${String(msg.protocol)} is not spoken here`,
        { supported: [ctx.version] },
        { fatal: true },
      ),
      msg,
      decoded.text,
    );
  }

  if (ctx.handshake) return afterIdentity(msg, decoded.text, ctx);

  if (ctx.integrity) {
    const outcome = checkSignature(msg, ctx.integrity.key, ctx.integrity.hmac, ctx.integrity.keyId);
    if (outcome !== 'ok') return refuseMessage(errorPayload('INVALID_SIGNATURE', `the signature is ${outcome}`), msg, decoded.text);
    // Only first-seen messages without a sequence are held to the window, so replays pass (spec: integrity#skew).
    const skew = ctx.skewMs ?? DEFAULT_SKEW_MS;
    if (msg.sequence === undefined && !ctx.seen(msg.message_id) && !(Math.abs(ctx.now - Date.parse(String(msg.timestamp))) <= skew)) {
      return refuseMessage(
        errorPayload('REPLAY_DETECTED', `the timestamp ${String(msg.timestamp)} lies outside the ${skew} ms skew window`),
        msg,
        decoded.text,
      );
    }
  }

  if (msg.target !== ctx.selfId) {
    return refuseMessage(
      errorPayload('IDENTITY_MISMATCH', `target ${msg.target} is not this requester (${ctx.selfId})`),
      msg,
      decoded.text,
    );
  }
  if (ctx.peerId !== undefined && msg.source !== ctx.peerId) {
    return refuseMessage(
      errorPayload('IDENTITY_MISMATCH', `source ${msg.source} is not the agent of this session (${ctx.peerId})`),
      msg,
      decoded.text,
    );
  }
  // A replayed task-stream message is byte for byte the original, so after a cross-session attach
  // (spec: resume#attachment) it carries the session it was first sent in; the task's sequence
  // dedupes it. Anything else must name this session (spec: integrity#session-binding).
  const replayOfFollowedTask = typeof msg.sequence === 'number' && typeof msg.task_id === 'string' && ctx.follows(msg.task_id);
  if (ctx.sessionId !== undefined && msg.session_id !== undefined && msg.session_id !== ctx.sessionId && !replayOfFollowedTask) {
    const code = ctx.integrity ? 'INVALID_SIGNATURE' : 'PROTOCOL_VIOLATION';
    return refuseMessage(errorPayload(code, `session_id ${String(msg.session_id)} is not this session`), msg, decoded.text);
  }

  return afterIdentity(msg, decoded.text, ctx);
}

type Where = { answer: boolean; replyTo?: string; taskId?: string; source?: string; text?: string };

/** The checks after identity: duplicate, type, handshake phase, payload schema. */
function afterIdentity(msg: DecodedEnvelope, text: string, ctx: InboundContext): Inbound {
  if (ctx.seen(msg.message_id)) return { kind: 'duplicate', message: msg as unknown as TapMessage, text };

  if (!mayReceive('requester', msg.type)) {
    return refuseMessage(errorPayload('UNKNOWN_MESSAGE_TYPE', `a requester does not receive ${msg.type}`), msg, text);
  }
  if (!ctx.handshake && !ctx.established && !allowedBeforeHandshake(msg.type)) {
    return refuseMessage(errorPayload('HANDSHAKE_REQUIRED', `${msg.type} arrived before handshake.go; it had no effect`), msg, text);
  }
  const issues = validateDecoded(msg);
  if (issues) {
    return refuseMessage(
      errorPayload('INVALID_MESSAGE', `${msg.type} does not match its schema`, { issues: issues.slice(0, 20) }),
      msg,
      text,
    );
  }
  return { kind: 'accept', message: msg as unknown as TapMessage, text };
}

/** Refuses a decoded message, answered where its own ids say (built only when one is refused). */
function refuseMessage(error: ErrorPayload, msg: DecodedEnvelope, text: string): Inbound {
  const where: Where = { replyTo: msg.message_id, source: msg.source, text, answer: msg.type !== 'error' };
  if (typeof msg.task_id === 'string') where.taskId = msg.task_id;
  return reject(error, where);
}

function reject(error: ErrorPayload, where: Where): Inbound {
  const out: Extract<Inbound, { kind: 'reject' }> = { kind: 'reject', error, answer: where.answer };
  if (where.replyTo !== undefined && MESSAGE_ID.test(where.replyTo)) out.replyTo = where.replyTo;
  if (where.taskId !== undefined && IDENTIFIER.test(where.taskId)) out.taskId = where.taskId;
  if (where.source !== undefined && IDENTIFIER.test(where.source)) out.source = where.source;
  if (where.text !== undefined) out.text = where.text;
  return out;
}

/** Reads `type` and `source` from a frame that failed decoding, when it is readable JSON at all. */
function peekEnvelope(frame: InboundFrame): { type?: string; source?: string } {
  if (frame.oversized) return {};
  try {
    const value: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(frame.bytes));
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
    const v = value as Record<string, unknown>;
    return {
      ...(typeof v.type === 'string' ? { type: v.type } : {}),
      ...(typeof v.source === 'string' ? { source: v.source } : {}),
    };
  } catch {
    return {};
  }
}
