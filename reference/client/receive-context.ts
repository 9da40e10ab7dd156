/**
 * The receive checks' view of a requester's session (reference/client/inbound.ts), made again
 * only when the phase, the session or the frame limit changed; per frame only the time is set
 * (spec: errors#order-of-checks).
 */
import type { EstablishedSession, Hmac } from '../core/index.ts';
import type { InboundContext } from './inbound.ts';
import type { AgentCard, Clock } from './types.ts';

/** What of the session's configuration the checks read. */
export interface ReceiveConfig {
  card: AgentCard;
  versions: string[];
  hmac: Hmac;
  clock: Clock;
  seen: { has(id: string): boolean };
  follows(taskId: string): boolean;
}

/** The context of the last frame, and what it was made from. */
export class ReceiveContexts {
  private last?: { phase: string; session?: EstablishedSession; maxBytes: number; ctx: InboundContext };

  constructor(private readonly config: ReceiveConfig) {}

  /** The context for a frame arriving now, in `phase`, on `session` (once established), under `maxBytes`. */
  for(phase: 'new' | 'handshake' | 'open' | 'closed', session: EstablishedSession | undefined, maxBytes: number): InboundContext {
    const { config } = this;
    const last = this.last;
    if (last && last.phase === phase && last.session === session && last.maxBytes === maxBytes) {
      last.ctx.now = config.clock.now();
      return last.ctx;
    }
    const ctx: InboundContext = {
      maxMessageBytes: maxBytes,
      version: session?.version ?? config.versions[0] ?? '1.0',
      selfId: config.card.agent_id,
      ...(session ? { peerId: session.peer.agent_id, sessionId: session.sessionId } : {}),
      established: phase === 'open',
      handshake: phase === 'handshake',
      ...(session?.integrity ? { integrity: { ...session.integrity, hmac: config.hmac } } : {}),
      now: config.clock.now(),
      seen: (id) => config.seen.has(id),
      follows: (taskId) => config.follows(taskId),
    };
    this.last = { phase, session, maxBytes, ctx };
    return ctx;
  }
}
