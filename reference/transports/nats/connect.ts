import type { Msg } from '@nats-io/transport-node';
import { asConnection, connect, headers as natsHeaders } from './client.ts';
import type { NatsConnectionLike, NatsConnectOptions } from './shape.ts';
import { DEFAULT_MAX_FRAME_BYTES, checkMaxFrameBytes } from '../frame.ts';
import { checkKeepalive, DEFAULT_KEEPALIVE_MS, MAX_KEEPALIVE_MS, MIN_KEEPALIVE_MS, parseKeepalive } from './keepalive.ts';
import { NatsTransport } from './nats-transport.ts';
import { DEFAULT_PREFIX, Header, checkAgentId, checkPrefix, newConnectionId, subjectsOf } from './subjects.ts';
import type { TlsOptions } from '../tls.ts';
import { LEAN_CLIENT, natsClientOptions, parseNatsUrl } from './url.ts';
import { MissingPeerError } from '../../peers.ts';

/** Options of `connectNatsTransport`. */
export interface ConnectNatsOptions {
  /** The agent to open a connection to (default: the URL's path). */
  agentId?: string;
  /** An open NATS connection to share; otherwise the transport opens its own and closes it with itself. */
  nc?: NatsConnectionLike;
  /** Extra options of an own NATS connection (authenticator, tls, name): a Partial<ConnectionOptions> of @nats-io/transport-node. */
  connectOptions?: NatsConnectOptions;
  /** TLS of an own NATS connection: the authorities to trust for the server and this client's certificate and key (mutual TLS). */
  tls?: TlsOptions;
  /** The subject prefix (default "tap"). */
  prefix?: string;
  /** The frame limit until the handshake lowers it (default 16 MiB). */
  maxFrameBytes?: number;
  /** A frame above this closes the connection with 1009 (default 2 × maxFrameBytes). */
  ceilingBytes?: number;
  /** How often this side sends keepalives, in ms (default 1000). */
  keepaliveMs?: number;
  /** How long the open request may take, in ms (default 10 000). */
  timeoutMs?: number;
}

/**
 * Opens a TAP connection to an agent over NATS and resolves with its transport, not yet
 * started (spec: bindings-nats#opening); rejects with one line when no agent answers, the
 * agent refuses, or the server cannot be reached.
 */
export async function connectNatsTransport(url: string, options: ConnectNatsOptions = {}): Promise<NatsTransport> {
  const address = parseNatsUrl(url);
  const agentId = checkAgentId(options.agentId ?? address.agentId ?? '');
  const prefix = checkPrefix(options.prefix ?? DEFAULT_PREFIX);
  const maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
  const keepaliveMs = options.keepaliveMs ?? DEFAULT_KEEPALIVE_MS;
  checkKeepalive(keepaliveMs);
  let nc = options.nc && asConnection(options.nc);
  if (!nc) {
    try {
      nc = await connect({
        ...natsClientOptions(address, options.tls),
        name: `tap requester of ${agentId}`,
        ...LEAN_CLIENT,
        ...options.connectOptions,
      });
    } catch (err) {
      // Without the NATS client there is nothing to connect with: say what to install (reference/peers.ts).
      if (err instanceof MissingPeerError) throw err;
      throw new Error(`could not connect to ${url}: ${(err as Error).message}`, { cause: err });
    }
  }
  const owned = options.nc === undefined;
  const id = newConnectionId();
  const subjects = subjectsOf(prefix, agentId, id);
  const transport = new NatsTransport({
    nc,
    publishTo: subjects.toAgent,
    subscribeTo: subjects.toRequester,
    maxFrameBytes,
    ceilingBytes: options.ceilingBytes,
    keepaliveMs,
    ownsConnection: owned,
    connectionId: id,
  });
  const fail = async (why: string, cause?: unknown): Promise<never> => {
    transport.terminate();
    if (owned) await nc.close().catch(() => {});
    throw new Error(`could not connect to ${url}: ${why}`, { cause });
  };
  const h = natsHeaders();
  h.set(Header.CONNECTION, id);
  h.set(Header.KEEPALIVE_MS, String(keepaliveMs));
  let reply: Msg;
  try {
    await nc.flush();
    reply = await nc.request(subjects.open, new Uint8Array(0), { timeout: options.timeoutMs ?? 10_000, headers: h });
  } catch (err) {
    const e = err as Error;
    if (/no responders/i.test(e.message) || e.name === 'NoRespondersError')
      return fail(`no agent ${agentId} listens there (nobody answers on ${subjects.open})`, err);
    if (/timeout/i.test(e.message) || e.name === 'TimeoutError')
      return fail(`agent ${agentId} did not answer the open request in time`, err);
    return fail(e.message, err);
  }
  const verdict = reply.headers?.get(Header.OPEN) ?? '';
  if (verdict !== 'ok') return fail(`agent ${agentId} refused the connection (${verdict || 'no Tap-Open'}): ${reply.string()}`);
  // spec: bindings-nats#liveness: an interval outside the range is not obeyed; the connection is closed.
  const announced = reply.headers?.get(Header.KEEPALIVE_MS) ?? '';
  const peerKeepalive = announced === '' ? DEFAULT_KEEPALIVE_MS : parseKeepalive(announced);
  if (peerKeepalive === undefined) {
    await transport.close({ code: 1008, reason: 'Tap-Keepalive-Ms out of range' });
    return fail(
      `agent ${agentId} announced Tap-Keepalive-Ms "${announced.slice(0, 32)}", not a whole number of milliseconds from ${MIN_KEEPALIVE_MS} to ${MAX_KEEPALIVE_MS}`,
    );
  }
  transport.expectKeepalivesEvery(peerKeepalive);
  if (owned) void nc.closed().then(() => transport.connectionClosed('the NATS connection closed'));
  return transport;
}
