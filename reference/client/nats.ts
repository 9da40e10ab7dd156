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
 * Connects to the TAP agent `options.agentId` through the NATS server at a nats:// URL. When
 * the connection is lost (a close, missed keepalives, a missing message, or the NATS
 * connection failing) the client opens a new one and resumes the session, as over WebSocket.
 */
export function connectNats(url: string, options: ConnectNatsClientOptions): Promise<TapClient> {
  // The NATS client library is loaded on first use: a program that never connects over NATS never loads it.
  return connectWith(async () => {
    const { connectNatsTransport } = await import('../transports/nats/connect.ts');
    return connectNatsTransport(url, { ...options.nats, agentId: options.agentId });
  }, options);
}
