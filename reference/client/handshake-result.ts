/** What a completed handshake fixed, as the client shows it (spec: handshake#ack). */
import type { EstablishedSession } from '../core/index.ts';
import type { AgentCard, SessionParams } from './types.ts';

/** What a completed handshake fixed (spec: handshake#ack). */
export interface HandshakeResult {
  version: string;
  sessionId: string;
  resumeToken: string;
  /** Whether a requested resume was granted. */
  resumed: boolean;
  /** The agent's card and id. */
  agent: AgentCard;
  agentId: string;
  granted: string[];
  missing: string[];
  /** The extensions the session uses, as the ack lists them; empty in a session of 1.0 (spec: handshake#negotiated-extensions). */
  extensions: string[];
  params: SessionParams;
  resumeWindowMs: number;
  maxRetainedMessages: number;
}

/** The result of the handshake that established `s`. */
export function handshakeResult(s: EstablishedSession): HandshakeResult {
  return {
    version: s.version,
    sessionId: s.sessionId,
    resumeToken: s.resumeToken,
    resumed: s.resumed,
    agent: s.peer,
    agentId: s.peer.agent_id,
    granted: s.granted,
    missing: s.missing,
    extensions: s.extensions,
    params: s.params,
    resumeWindowMs: s.resumeWindowMs,
    maxRetainedMessages: s.maxRetainedMessages,
  };
}
