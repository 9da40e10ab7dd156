/** Steps that several case files of the nats profile share. */
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import { NatsTransport } from '../../../reference/transports/nats/index.ts';

export const NATS = { binding: 'nats' as const };

/** The harness's NATS transport of a peer, for fault injection. */
export function natsOf(ctx: CaseContext, peer: Peer): NatsTransport {
  const t = ctx.connectionOf(peer)?.transport;
  if (!(t instanceof NatsTransport)) throw new Error('the connection is not a NATS transport');
  return t;
}
