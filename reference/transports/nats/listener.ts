import type { Msg } from '@nats-io/transport-node';
import { asConnection, connect, headers as natsHeaders } from './client.ts';
import type { NatsConnectionLike, NatsConnectOptions } from './shape.ts';
import { DEFAULT_MAX_FRAME_BYTES, checkMaxFrameBytes } from '../frame.ts';
import { checkKeepalive, DEFAULT_KEEPALIVE_MS, MAX_KEEPALIVE_MS, MIN_KEEPALIVE_MS, parseKeepalive } from './keepalive.ts';
import { NatsCloseCode, NatsTransport } from './nats-transport.ts';
import { DEFAULT_PREFIX, Header, checkAgentId, checkPrefix, isConnectionId, openSubject, subjectsOf } from './subjects.ts';
import type { TlsOptions } from '../tls.ts';
import { LEAN_CLIENT, natsClientOptions, parseNatsUrl } from './url.ts';
import { MissingPeerError } from '../../peers.ts';

/** Options of `createNatsListener`. */
export interface NatsListenerOptions {
  /** The agent's id: it accepts connections on `<prefix>.open.<agentId>`. */
  agentId: string;
  /** A nats:// URL to connect to (credentials may be in it); or give `nc`. */
  url?: string;
  /** An open NATS connection to use instead of `url`; the listener does not close it. */
  nc?: NatsConnectionLike;
  /** Extra options of the NATS connection (authenticator, tls, name): a Partial<ConnectionOptions> of @nats-io/transport-node. */
  connectOptions?: NatsConnectOptions;
  /** TLS of the NATS connection: the authorities to trust for the server and this client's certificate and key (mutual TLS). */
  tls?: TlsOptions;
  /** The subject prefix (default "tap"). */
  prefix?: string;
  /** Frames above this arrive as oversized prefixes until the handshake lowers it (default 16 MiB). */
  maxFrameBytes?: number;
  /** A frame above this closes its connection with 1009 (default 2 × maxFrameBytes). */
  ceilingBytes?: number;
  /** How often the agent sends keepalives on each connection, in ms (default 1000). */
  keepaliveMs?: number;
  /**
   * The open requests come through a service import that shares the requester's client
   * information, so the NATS server writes the `Nats-Request-Info` header itself: its account
   * and user become each connection's origin. Without it every connection has the shared origin
   * "nats", since anything else on an open request is the requester's own choice (spec: limits#sources).
   */
  trustRequestInfo?: boolean;
  /** Refuses a new connection with 1013 when this returns a reason; `origin` is given for a user the server named. */
  admit?: (origin?: string) => string | undefined;
  /** Called once per accepted connection with its transport, not yet started. */
  onSession: (transport: NatsTransport, connection: string) => void;
}

/** An agent's listening NATS endpoint. */
export interface TapNatsListener {
  /** nats://host:port/<agent_id> of the first server. */
  readonly url: string;
  /** The open connections. */
  readonly transports: ReadonlySet<NatsTransport>;
  /** Closes every connection with 1001, stops accepting, and closes its own NATS connection. */
  close(): Promise<void>;
}

/** The origin of every NATS connection whose requester the server did not name (spec: limits#sources). */
export const SHARED_NATS_ORIGIN = 'nats';

/** The origin the server's `Nats-Request-Info` header names: "nats:<account>/<user>", or undefined. */
export function requestInfoOrigin(header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined;
  try {
    const info = JSON.parse(header) as { acc?: unknown; user?: unknown; nkey?: unknown };
    const user = typeof info.user === 'string' && info.user !== '' ? info.user : typeof info.nkey === 'string' ? info.nkey : '';
    if (typeof info.acc !== 'string' || info.acc === '') return undefined;
    return `nats:${info.acc}/${user}`;
  } catch {
    return undefined;
  }
}

/** Answers an open request with a refusal: the close code in Tap-Open, the reason as the body. */
function refuse(msg: Msg, code: number, reason: string): void {
  const h = natsHeaders();
  h.set(Header.OPEN, String(code));
  msg.respond(reason, { headers: h });
}

/**
 * Accepts TAP connections for one agent over NATS (spec: bindings-nats#opening): it answers
 * requests on `<prefix>.open.<agent_id>` (a queue group, so several processes may share an
 * id), subscribes to the connection's inbound subject before it replies, and hands each
 * transport to `onSession`.
 */
export async function createNatsListener(options: NatsListenerOptions): Promise<TapNatsListener> {
  const agentId = checkAgentId(options.agentId);
  const prefix = checkPrefix(options.prefix ?? DEFAULT_PREFIX);
  const maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
  const keepaliveMs = options.keepaliveMs ?? DEFAULT_KEEPALIVE_MS;
  checkKeepalive(keepaliveMs);
  let nc = options.nc && asConnection(options.nc);
  let server = '';
  if (!nc) {
    if (!options.url) throw new TypeError('createNatsListener needs a url or an open NATS connection (nc)');
    const address = parseNatsUrl(options.url);
    server = address.servers[0]!;
    try {
      nc = await connect({
        ...natsClientOptions(address, options.tls),
        name: `tap agent ${agentId}`,
        maxReconnectAttempts: -1,
        ...LEAN_CLIENT,
        ...options.connectOptions,
      });
    } catch (err) {
      // Without the NATS client there is nothing to connect with: say what to install (reference/peers.ts).
      if (err instanceof MissingPeerError) throw err;
      throw new Error(`could not connect to NATS at ${address.servers.join(',')}: ${(err as Error).message}`, { cause: err });
    }
  } else server = nc.getServer();
  const conn = nc;
  const transports = new Set<NatsTransport>();
  const byId = new Map<string, NatsTransport>();
  let closing: Promise<void> | undefined;

  const open = (msg: Msg): void => {
    if (closing || !msg.reply) return;
    const id = msg.headers?.get(Header.CONNECTION) ?? '';
    if (!isConnectionId(id)) return refuse(msg, NatsCloseCode.POLICY_VIOLATION, `Tap-Connection "${id}" is not a connection id`);
    if (byId.has(id)) return refuse(msg, NatsCloseCode.POLICY_VIOLATION, `connection ${id} is already open`);
    // spec: bindings-nats#liveness: an announced interval outside the range is refused, not obeyed.
    const announced = msg.headers?.get(Header.KEEPALIVE_MS) ?? '';
    const peerKeepalive = announced === '' ? DEFAULT_KEEPALIVE_MS : parseKeepalive(announced);
    if (peerKeepalive === undefined) {
      return refuse(
        msg,
        NatsCloseCode.POLICY_VIOLATION,
        `Tap-Keepalive-Ms "${announced.slice(0, 32)}" is not a whole number of milliseconds from ${MIN_KEEPALIVE_MS} to ${MAX_KEEPALIVE_MS}`,
      );
    }
    const named = options.trustRequestInfo ? requestInfoOrigin(msg.headers?.get('Nats-Request-Info')) : undefined;
    const busy = options.admit?.(named);
    if (busy !== undefined) return refuse(msg, NatsCloseCode.TRY_AGAIN_LATER, busy);
    const subjects = subjectsOf(prefix, agentId, id);
    const transport = new NatsTransport({
      nc: conn,
      publishTo: subjects.toRequester,
      subscribeTo: subjects.toAgent,
      maxFrameBytes,
      ceilingBytes: options.ceilingBytes,
      keepaliveMs,
      connectionId: id,
      origin: named ?? SHARED_NATS_ORIGIN,
      peerKeepaliveMs: peerKeepalive,
    });
    transports.add(transport);
    byId.set(id, transport);
    const previous = transport.onclose;
    transport.onclose = (info) => {
      transports.delete(transport);
      byId.delete(id);
      previous?.(info);
    };
    // The inbound subscription reaches the server before the reply, so no frame is missed.
    void conn
      .flush()
      .then(() => {
        const h = natsHeaders();
        h.set(Header.OPEN, 'ok');
        h.set(Header.KEEPALIVE_MS, String(keepaliveMs));
        msg.respond(new Uint8Array(0), { headers: h });
        options.onSession(transport, id);
      })
      .catch(() => transport.connectionClosed('the NATS connection closed while opening'));
  };

  conn.subscribe(openSubject(prefix, agentId), { queue: 'tap-agents', callback: (err, msg) => (err ? undefined : open(msg)) });
  await conn.flush();
  void conn.closed().then(() => {
    for (const t of [...transports]) t.connectionClosed('the NATS connection closed');
  });

  return {
    url: `${server.includes('://') ? server : `nats://${server}`}/${agentId}`,
    transports,
    close() {
      closing ??= (async () => {
        await Promise.all([...transports].map((t) => t.close({ code: NatsCloseCode.GOING_AWAY, reason: 'the agent stops listening' })));
        if (!options.nc) await conn.close().catch(() => {});
      })();
      return closing;
    },
  };
}
