/**
 * NATS URLs as TAP names an agent on them: nats://[user:password@]host:port/<agent_id>
 * (spec: bindings-nats#addressing). Several servers of one cluster may be given comma-separated.
 */
import type { TlsOptions } from '../tls.ts';
import { checkAgentId, inboxPrefixOf } from './subjects.ts';

/** What a nats:// URL names. */
export interface NatsAddress {
  /** The server list a NATS client connects to, without credentials. */
  servers: string[];
  /** The agent id from the path, if the URL has one. */
  agentId?: string;
  /** Credentials from the URL's user part. */
  user?: string;
  pass?: string;
  /** A tls:// URL: the connection must use TLS (spec: bindings-nats#addressing). */
  tls?: boolean;
}

/** Parses nats://host:port[,host:port…][/agent_id]; throws a TypeError that says what is wrong. */
export function parseNatsUrl(url: string): NatsAddress {
  const m = /^(nats|tls):\/\/([^/]+)(\/.*)?$/i.exec(url);
  if (!m)
    throw new TypeError(
      `"${url}" is not a NATS URL; give one like nats://127.0.0.1:4222 (the server), or nats://127.0.0.1:4222/my.agent where an agent is named`,
    );
  const scheme = m[1]!.toLowerCase();
  let hosts = m[2]!;
  let user: string | undefined;
  let pass: string | undefined;
  const at = hosts.lastIndexOf('@');
  if (at >= 0) {
    const cred = hosts.slice(0, at);
    hosts = hosts.slice(at + 1);
    const colon = cred.indexOf(':');
    user = decodeURIComponent(colon >= 0 ? cred.slice(0, colon) : cred);
    if (colon >= 0) pass = decodeURIComponent(cred.slice(colon + 1));
  }
  const servers = hosts.split(',').map((h) => {
    if (!/^(\[[0-9a-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/i.test(h)) throw new TypeError(`"${h}" in ${url} is not a host or host:port`);
    return `${scheme}://${h}`;
  });
  const path = decodeURIComponent((m[3] ?? '').replace(/^\/+|\/+$/g, ''));
  const out: NatsAddress = { servers };
  if (path !== '') out.agentId = checkAgentId(path);
  if (user !== undefined) out.user = user;
  if (pass !== undefined) out.pass = pass;
  if (scheme === 'tls') out.tls = true;
  return out;
}

/** What a NATS client connection to an address is given: the servers, the credentials, the inbox prefix and TLS. */
export interface NatsClientOptions {
  servers: string[];
  user?: string;
  pass?: string;
  inboxPrefix?: string;
  tls?: NatsClientTls;
}

/**
 * The client options of an address: its servers and credentials; for a user, the user's own
 * inbox prefix `_INBOX_<user>` (spec: bindings-nats#security), so that a server whose permissions
 * give each user its own inboxes lets the client read its replies and no one else's; and TLS for a
 * tls:// URL or when TLS material is given (natsTlsOption).
 */
/**
 * Options of each connection the library opens itself: the client captures no stack ahead of each
 * request for a later error (two Error objects per request, a fifth of a durable runner's CPU);
 * an error still says what failed and where. A connection given as `nc` keeps its own options.
 */
export const LEAN_CLIENT = Object.freeze({ noAsyncTraces: true });

export function natsClientOptions(address: NatsAddress, tls?: TlsOptions): NatsClientOptions {
  const secure = natsTlsOption(address, tls);
  if (address.user === undefined) return { servers: address.servers, ...secure };
  return { servers: address.servers, user: address.user, pass: address.pass, inboxPrefix: inboxPrefixOf(address.user), ...secure };
}

/** The TLS options of a NATS client connection: the authorities and certificate given, as the client takes them. */
export interface NatsClientTls {
  ca?: string;
  cert?: string;
  key?: string;
}

/**
 * The `tls` connection option for `address`, to spread into a NATS client's options: set (so
 * that the client refuses a server without TLS) for a tls:// URL or when TLS material is given,
 * with the authorities to trust and this client's certificate and key; empty for a nats:// URL
 * without material (spec: bindings-nats#addressing).
 */
export function natsTlsOption(address: NatsAddress, tls?: TlsOptions): { tls?: NatsClientTls } {
  const given = tls !== undefined && (tls.ca !== undefined || tls.cert !== undefined || tls.key !== undefined);
  if (!address.tls && !given) return {};
  const out: NatsClientTls = {};
  for (const name of ['ca', 'cert', 'key'] as const) if (tls?.[name] !== undefined) out[name] = String(tls[name]);
  return { tls: out };
}
