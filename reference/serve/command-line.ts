/**
 * The command line of an agent process: which binding it serves (stdio by default, `--listen`,
 * `--nats`, `--mesh`, `--durable`) and the few settings a person starting it may change. One parser
 * and one usage text for every agent built on the library, tap-reference-agent included.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { TlsFiles } from '../transports/tls.ts';
import { HEARTBEAT_MAX_MS, HEARTBEAT_MIN_MS } from '../core/params.ts';

/** A command line that cannot be served: the process prints it with a pointer to --help and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** What the command line asks an agent process to serve. */
export interface ServeOptions {
  /** Serve WebSocket sessions at this ws:// or wss:// URL instead of stdio (spec: bindings-websocket). */
  listen?: URL;
  /** Serve sessions through the NATS server at this URL (spec: bindings-nats). */
  nats?: string;
  /** With nats: also serve the capabilities on their durable JetStream queues (spec: bindings-nats#task-queue). */
  durable?: { leaseMs: number; maxDeliver: number };
  /** Keep an entry in the registry of the mesh on this NATS server, signed with the key in `keyFile` when given (spec: registry). */
  mesh?: { url: string; heartbeatMs?: number; ttlMs?: number; keyFile?: string };
  /** Append a trace record per message of every NATS session to this file (spec: mesh#trace-records). */
  trace?: string;
  /** This agent's Ed25519 signing key file (spec: bindings-nats#signed-records). */
  signingKey?: string;
  /** The trust file: the principals whose signed records a durable runner takes (spec: bindings-nats#signed-records). */
  trust?: string;
  /**
   * TLS files: with a wss:// --listen, the agent's certificate and key and the authorities of the
   * client certificates it requires (mutual TLS); with --nats or --mesh, its client certificate
   * and key and the authorities of the server's (spec: security#transport-security).
   */
  tls?: TlsFiles;
  /** Verify bearer tokens as JWTs of this issuer, for this audience, against these keys, and require one of every session (spec: security#bearer-tokens). */
  jwt?: { issuer: string; audience: string; keys: string };
  stateDir?: string;
  /** Serve GET /healthz, /livez and /metrics on this port (0: any free one) of `host` (default 127.0.0.1); the --listen port serves them beside sessions. */
  metrics?: { port: number; host?: string };
  /** Keep an audit trail of every finished task in this file, rotated past maxBytes keeping `keep` files. */
  audit?: { file: string; maxBytes?: number; keep?: number };
  graceMs?: number;
  heartbeatMs?: number;
  resumeWindowMs?: number;
  /** --help was given: print the usage and exit 0. */
  help: boolean;
}

/** The options every agent process takes, as node:util's parseArgs reads them. */
const SERVE_OPTIONS = {
  listen: { type: 'string' },
  nats: { type: 'string' },
  durable: { type: 'boolean' },
  'lease-ms': { type: 'string' },
  'max-deliver': { type: 'string' },
  mesh: { type: 'string' },
  'mesh-heartbeat-ms': { type: 'string' },
  'mesh-ttl-ms': { type: 'string' },
  'mesh-key': { type: 'string' },
  trace: { type: 'string' },
  'signing-key': { type: 'string' },
  trust: { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-ca': { type: 'string' },
  'jwt-issuer': { type: 'string' },
  'jwt-audience': { type: 'string' },
  'jwt-keys': { type: 'string' },
  'state-dir': { type: 'string' },
  'metrics-port': { type: 'string' },
  'metrics-host': { type: 'string' },
  'audit-file': { type: 'string' },
  'audit-max-bytes': { type: 'string' },
  'audit-keep': { type: 'string' },
  'grace-ms': { type: 'string' },
  'heartbeat-ms': { type: 'string' },
  'resume-window-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

/** The usage lines of the options every agent process takes. */
export const SERVE_USAGE = `  --listen URL        serve WebSocket sessions at URL, e.g. ws://127.0.0.1:8787/tap, or
                      wss://… with --tls-cert and --tls-key (port 0 picks a free port);
                      prints the URL on stdout once ready.
                      Without --listen, --nats or --mesh the agent serves one session on
                      stdin/stdout, and stdout carries only TAP messages.
  --nats URL          serve sessions through the NATS server at URL, e.g. nats://127.0.0.1:4222
                      (user:password@ in the URL authenticates); prints nats://host:port/<agent-id>
                      on stdout once ready (spec: bindings-nats)
  --durable           with --nats, also serve the capabilities on their durable JetStream
                      queues (spec: bindings-nats#task-queue)
  --lease-ms MS       with --durable, the lease (the consumers' ack_wait, default 30000); a consumer
                      left with another lease is set to this one, with a warning on stderr
  --max-deliver N     with --durable, deliveries before a dead letter (default 5)
  --signing-key FILE  this agent's Ed25519 key (tapctl nats permissions writes one); with --durable,
                      every message the runners store in TAP_EVENTS carries its signature
  --trust FILE        with --durable and --signing-key, the trust file: only task records signed by
                      a principal in it run, and the others become dead letters; without it the
                      runners trust every publisher on the server (spec: bindings-nats#signed-records)
  --mesh URL          join the mesh whose registry is on the NATS server at URL: keep an entry
                      with this agent's card, endpoint and load, renewed every heartbeat and
                      withdrawn on shutdown (spec: registry). Without --nats or --listen the
                      agent serves sessions through the same server.
  --mesh-heartbeat-ms MS
                      how often the registry entry is renewed (default 5000, at least 100)
  --mesh-ttl-ms MS    how long the entry lives after its last renewal (default 3 × the heartbeat)
  --mesh-key FILE     sign every write of the registry entry with the Ed25519 key in FILE (JSON:
                      principal, public_key, private_key), whose principal is this agent's id;
                      readers holding the trust file then refuse entries forged under its id
                      (spec: registry#signatures)
  --trace FILE        with --nats or --mesh, append a trace record (one JSON line) per traced
                      message of every session to FILE (spec: mesh#trace-records)
  --tls-cert FILE     the agent's certificate (PEM): served on a wss:// --listen URL, or
                      presented to the NATS server of --nats and --mesh (mutual TLS)
  --tls-key FILE      the private key of --tls-cert (PEM)
  --tls-ca FILE       the authorities to trust (PEM): with wss://, every client must present a
                      certificate they signed, and its identity is the session's principal;
                      with NATS, those that signed the server's certificate
  --jwt-issuer ISS    verify bearer tokens as JWTs (RFC 7519) issued by ISS and require one in
                      every handshake (AUTH_REQUIRED otherwise); with --jwt-audience and --jwt-keys
  --jwt-audience AUD  the audience the tokens must name (this agent)
  --jwt-keys FILE     the issuer's public keys: a JWK Set (JSON) or a PEM public key. A token's
                      principal is jwt:<iss>#<sub>, and its scopes bound the permissions of every
                      grant (spec: security#bearer-tokens)
  --state-dir DIR     keep a journal in DIR: tasks survive a restart (durability "restart")
  --metrics-port PORT serve GET /healthz (200 ready, 503 draining), /livez and /metrics
                      (Prometheus text) on PORT of 127.0.0.1 (0: any free port; the URL is
                      printed on stderr); the --listen port itself serves them beside sessions
  --metrics-host HOST the interface of --metrics-port (default 127.0.0.1)
  --audit-file FILE   append one chained JSON record per finished task to FILE (who asked for
                      what under which grant, and how it ended); tapctl audit verify checks it
  --audit-max-bytes N rotate the audit file past N bytes (default 16777216): FILE.1, FILE.2, …
  --audit-keep N      rotated audit files kept (default 5)
  --grace-ms MS       grace period on SIGTERM/SIGINT and at the end of input (default 10000)
  --heartbeat-ms MS   the heartbeat_ms the agent proposes in its sessions, 1000 to 60000
                      (default 15000, or the heartbeatMs given to runAgent)
  --resume-window-ms MS
                      how long a session that lost its transport stays resumable (default 300000)
  -h, --help          show this help

Environment:
  TAP_CONFORMANCE=1   offer the conformance capabilities tap.test.* (tap-conform sets it for
                      the agents it starts; give it yourself to an agent tap-conform connects to)
  TAP_HMAC_KEY_ID, TAP_HMAC_KEY, TAP_HMAC_PEER
                      a pre-shared key (base64url, at least 32 bytes) bound to the requester
                      agent id TAP_HMAC_PEER; set all three or none (spec: conformance#key-provisioning)
  TAP_MAX_TASK_SECONDS
                      with TAP_CONFORMANCE=1, the card's max_task_seconds (tap-conform sets it for
                      the case that waits a task out; spec: conformance#case-limits)
  TAP_METRICS_PORT, TAP_METRICS_HOST
                      as --metrics-port and --metrics-host (the options win)
  TAP_AUDIT_FILE, TAP_AUDIT_MAX_BYTES, TAP_AUDIT_KEEP
                      as --audit-file, --audit-max-bytes and --audit-keep (the options win)`;

/** A whole-number option within [min, max], or `fallback` when absent. */
export function wholeOption(
  values: Record<string, unknown>,
  name: string,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} ${String(raw)} is not a whole number ${range}`);
  }
  return n;
}

const natsUrl = (url: string): boolean => /^(nats|tls):\/\//i.test(url);

/**
 * Parses an agent's command line: the options above plus `extra` (the program's own). Throws
 * UsageError with one sentence for anything it cannot serve.
 */
export function parseCommandLine<E extends NonNullable<ParseArgsConfig['options']>>(
  argv: readonly string[],
  extra: E = {} as E,
): { serve: ServeOptions; values: Record<string, string | boolean | undefined> } {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], options: { ...SERVE_OPTIONS, ...extra }, allowPositionals: false, strict: true }) as {
      values: Record<string, string | boolean | undefined>;
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const text = (name: string): string | undefined => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  if (values.help) return { serve: { help: true }, values };
  let listen: URL | undefined;
  const listenText = text('listen');
  if (listenText !== undefined) {
    try {
      listen = new URL(listenText);
    } catch {
      throw new UsageError(`--listen ${listenText} is not a URL; give one like ws://127.0.0.1:8787/tap`);
    }
    if (listen.protocol !== 'ws:' && listen.protocol !== 'wss:')
      throw new UsageError(`--listen needs a ws:// or wss:// URL, not ${listen.protocol}//`);
  }
  const nats = text('nats');
  const mesh = text('mesh');
  if (nats !== undefined) {
    if (listen) throw new UsageError('--listen and --nats each serve sessions; give one of them');
    if (!natsUrl(nats)) throw new UsageError(`--nats needs a nats:// URL, e.g. nats://127.0.0.1:4222, not ${nats}`);
  }
  if (mesh !== undefined && !natsUrl(mesh))
    throw new UsageError(`--mesh needs the nats:// URL of the registry's server, e.g. nats://127.0.0.1:4222, not ${mesh}`);
  if (
    mesh === undefined &&
    (values['mesh-heartbeat-ms'] !== undefined || values['mesh-ttl-ms'] !== undefined || values['mesh-key'] !== undefined)
  )
    throw new UsageError('--mesh-heartbeat-ms, --mesh-ttl-ms and --mesh-key belong to --mesh; give --mesh URL too');
  // spec: registry#entry: a mesh agent must be reachable; without another binding it serves through the registry's server.
  const servedNats = nats ?? (mesh !== undefined && listen === undefined ? mesh : undefined);
  if (values.durable && servedNats === undefined)
    throw new UsageError('--durable serves durable queues on a NATS server: give --nats URL too');
  if (!values.durable && (values['lease-ms'] !== undefined || values['max-deliver'] !== undefined))
    throw new UsageError('--lease-ms and --max-deliver belong to --durable; give --durable too');
  const signingKey = text('signing-key');
  const trust = text('trust');
  if (trust !== undefined && !values.durable)
    throw new UsageError('--trust tells the durable runners whose records to run: give --durable too');
  if (trust !== undefined && signingKey === undefined)
    throw new UsageError('--trust needs --signing-key: runners that verify signatures sign what they store too');
  if (signingKey !== undefined && servedNats === undefined)
    throw new UsageError('--signing-key signs what the agent stores on a NATS server: give --nats URL too');
  const trace = text('trace');
  if (trace !== undefined && servedNats === undefined)
    throw new UsageError('--trace records the sessions served through NATS: give --nats URL or --mesh URL too');
  const tls = tlsFiles(text, listen, servedNats ?? mesh);
  const jwt = jwtOptions(text);
  const optional = (name: string, min: number): number | undefined =>
    values[name] === undefined ? undefined : wholeOption(values, name, 0, min);
  const metricsHost = text('metrics-host');
  if (metricsHost !== undefined && values['metrics-port'] === undefined)
    throw new UsageError('--metrics-host is the interface of --metrics-port: give --metrics-port PORT too');
  const auditFile = text('audit-file');
  if (auditFile === undefined && (values['audit-max-bytes'] !== undefined || values['audit-keep'] !== undefined))
    throw new UsageError('--audit-max-bytes and --audit-keep belong to --audit-file; give --audit-file FILE too');
  return {
    serve: {
      help: false,
      ...(listen ? { listen } : {}),
      ...(servedNats !== undefined ? { nats: servedNats } : {}),
      ...(values.durable
        ? { durable: { leaseMs: wholeOption(values, 'lease-ms', 30_000, 100), maxDeliver: wholeOption(values, 'max-deliver', 5, 1) } }
        : {}),
      ...(mesh !== undefined
        ? {
            mesh: {
              url: mesh,
              heartbeatMs: optional('mesh-heartbeat-ms', 100),
              ttlMs: optional('mesh-ttl-ms', 200),
              ...(text('mesh-key') !== undefined ? { keyFile: text('mesh-key') } : {}),
            },
          }
        : {}),
      ...(trace !== undefined ? { trace } : {}),
      ...(signingKey !== undefined ? { signingKey } : {}),
      ...(trust !== undefined ? { trust } : {}),
      ...(tls ? { tls } : {}),
      ...(jwt ? { jwt } : {}),
      ...(text('state-dir') !== undefined ? { stateDir: text('state-dir') } : {}),
      ...(values['metrics-port'] !== undefined
        ? {
            metrics: {
              port: wholeOption(values, 'metrics-port', 0, 0, 65_535),
              ...(metricsHost !== undefined ? { host: metricsHost } : {}),
            },
          }
        : {}),
      ...(auditFile !== undefined
        ? {
            audit: {
              file: auditFile,
              ...(values['audit-max-bytes'] !== undefined ? { maxBytes: wholeOption(values, 'audit-max-bytes', 0, 1024) } : {}),
              ...(values['audit-keep'] !== undefined ? { keep: wholeOption(values, 'audit-keep', 0, 1) } : {}),
            },
          }
        : {}),
      ...(values['grace-ms'] !== undefined ? { graceMs: wholeOption(values, 'grace-ms', 10_000, 0) } : {}),
      ...(values['heartbeat-ms'] !== undefined
        ? { heartbeatMs: wholeOption(values, 'heartbeat-ms', HEARTBEAT_MIN_MS, HEARTBEAT_MIN_MS, HEARTBEAT_MAX_MS) }
        : {}),
      ...(values['resume-window-ms'] !== undefined ? { resumeWindowMs: wholeOption(values, 'resume-window-ms', 300_000, 1000) } : {}),
    },
    values,
  };
}

/** The TLS files of the command line, checked against the bindings it serves. */
function tlsFiles(text: (name: string) => string | undefined, listen: URL | undefined, nats: string | undefined): TlsFiles | undefined {
  const files: TlsFiles = {};
  for (const name of ['cert', 'key', 'ca'] as const) {
    const path = text(`tls-${name}`);
    if (path !== undefined) files[name] = path;
  }
  const given = Object.keys(files).length > 0;
  if (listen?.protocol === 'wss:' && (files.cert === undefined || files.key === undefined))
    throw new UsageError(`--listen ${listen.href} serves TLS: give the agent's certificate and key with --tls-cert FILE --tls-key FILE`);
  if ((files.cert === undefined) !== (files.key === undefined)) throw new UsageError('--tls-cert and --tls-key go together: give both');
  if (given && listen?.protocol === 'ws:')
    throw new UsageError(`the --tls-* options serve wss://: give --listen wss://${listen.host}${listen.pathname} instead of ws://`);
  if (given && listen === undefined && nats === undefined)
    throw new UsageError('the --tls-* options are for --listen wss://… and --nats/--mesh; over stdio there is no TLS');
  return given ? files : undefined;
}

/** The JWT options of the command line: all three or none. */
function jwtOptions(text: (name: string) => string | undefined): ServeOptions['jwt'] {
  const [issuer, audience, keys] = ['jwt-issuer', 'jwt-audience', 'jwt-keys'].map(text);
  if (issuer === undefined && audience === undefined && keys === undefined) return undefined;
  if (issuer === undefined || audience === undefined || keys === undefined)
    throw new UsageError('--jwt-issuer, --jwt-audience and --jwt-keys go together: give all three');
  return { issuer, audience, keys };
}
