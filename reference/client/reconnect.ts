/** The WebSocket client with reconnect and resume (spec: bindings#websocket, sessions#resume). */
import { connectWebSocket, type ConnectWebSocketOptions } from '../transports/index.ts';
import { connectWith, type TapClient } from './client.ts';
import type { ConnectOptions, ReconnectPolicy } from './options.ts';

/** Options of `connectWs`. */
export interface ConnectWsOptions extends ConnectOptions {
  /** How to reconnect after a loss (default 8 attempts, 200 ms base); false: never. */
  reconnect?: Partial<ReconnectPolicy> | false;
  /** Options of the WebSocket connection itself (subprotocols, headers, timeouts). */
  ws?: ConnectWebSocketOptions;
}

/**
 * Connects to a TAP agent at a ws:// or wss:// URL. When the connection drops (or the agent
 * misses three pings) the client reconnects with backoff and sends handshake.init with
 * `resume { session_id, resume_token, tasks: [{ task_id, last_sequence }] }`; replayed messages
 * are deduplicated, so no event is lost or repeated. A declined resume fails the open handles
 * with RESUME_UNAVAILABLE.
 */
export function connectWs(url: string, options: ConnectWsOptions): Promise<TapClient> {
  return connectWith(() => connectWebSocket(url, options.ws), options);
}
