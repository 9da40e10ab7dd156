/** The NATS client with reconnect and resume (spec: bindings-nats#opening, resume#reconnect). */
import type { ConnectNatsOptions } from '../transports/nats/connect.ts';
import { connectWith, type TapClient } from './client.ts';
import type { ConnectOptions, ReconnectPolicy } from './options.ts';

/** Options of `connectNats`. */
export interface ConnectNatsClientOptions extends ConnectOptions {
  /** How to reconnect after a loss (default 8 attempts, 200 ms base); false: never. */
  reconnect?: Partial<ReconnectPolicy> | false;
  /** Options of the NATS connection itself (subject prefix, keepalives, credentials, timeouts). */
  nats?: Omit<ConnectNatsOptions, 'agentId'>;
}

/**
 * Connects, as the requester `options.agentId`, to a TAP agent through the NATS server at a
 * nats:// URL: the agent named by `options.target`, else by the URL's path
 * (`nats://host:port/<agent_id>`). When the connection is lost (a close, missed keepalives, a
 * missing message, or the NATS connection failing) the client opens a new one and resumes the
 * session, as over WebSocket.
 */
export async function connectNats(url: string, options: ConnectNatsClientOptions): Promise<TapClient> {
  // The NATS client library is loaded on first use: a program that never connects over NATS never loads it.
  const [{ connectNatsTransport }, { parseNatsUrl }] = await Promise.all([
    import('../transports/nats/connect.ts'),
    import('../transports/nats/url.ts'),
  ]);
  const target = options.target ?? parseNatsUrl(url).agentId;
  if (target === undefined)
    throw new TypeError(`connectNats: ${url} names no agent: end the URL with its id (nats://host:port/<agent_id>) or give { target }`);
  return connectWith(() => connectNatsTransport(url, { ...options.nats, agentId: target }), { ...options, target });
}
