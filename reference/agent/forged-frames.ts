/**
 * Under integrity, the test a connection gives its transport of an authentic new message of its
 * peer: signed with the session key, from the peer, to this agent, in this session, and not seen
 * before. A frame forged into the connection fails it and takes no number of the peer's (spec:
 * bindings-nats#forged-frames).
 */
import { decodeFrame } from '../core/index.ts';
import type { InboundFrame } from '../core/frame.ts';
import type { Hmac } from '../core/signing.ts';
import type { Envelope } from './inbound.ts';
import { verifyIncoming } from './integrity.ts';
import type { SigningKey } from './outbound.ts';

/** What the test reads of the connection, each time: its session may be established meanwhile. */
export interface ScreenContext {
  maxBytes(): number;
  key(): SigningKey | undefined;
  peer(): string | undefined;
  sessionId(): string | undefined;
  agentId: string;
  hmac: Hmac;
  /** True when the message id was seen before (a duplicate takes no new number). */
  seen(msg: Envelope, text: string): boolean;
  /** Keeps the decoded frame, so that the pipeline does not decode it again. */
  keep(frame: InboundFrame, decoded: ReturnType<typeof decodeFrame>): void;
}

/** The screen: true for an authentic new message of the peer. */
export function authenticScreen(c: ScreenContext): (frame: InboundFrame) => boolean {
  return (frame) => {
    const decoded = decodeFrame(frame, { maxMessageBytes: c.maxBytes(), rejectDuplicateMembers: true });
    c.keep(frame, decoded);
    if (!decoded.ok) return false;
    const msg = decoded.message as Envelope;
    const key = c.key();
    if (!key || verifyIncoming(msg, key, c.hmac) !== 'ok') return false;
    if (msg.source !== c.peer() || msg.target !== c.agentId || msg.session_id !== c.sessionId()) return false;
    return !c.seen(msg, decoded.text);
  };
}
