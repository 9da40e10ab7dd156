/**
 * The command line of an agent process: which binding it serves (stdio by default, `--listen`,
 * `--nats`, `--mesh`, `--durable`) and the few settings a person starting it may change. One parser
 * and one usage text for every agent built on the library, tap-reference-agent included.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

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
  stateDir?: string;
  graceMs?: number;
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
  'state-dir': { type: 'string' },
  'grace-ms': { type: 'string' },
  'resume-window-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

/** The usage lines of the options every agent process takes. */
export const SERVE_USAGE = `  --listen URL        serve WebSocket sessions at URL, e.g. ws://127.0.0.1:8787/tap
                      (port 0 picks a free port); prints the URL on stdout once ready.
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
  --state-dir DIR     keep a journal in DIR: tasks survive a restart (durability "restart")
  --grace-ms MS       grace period on SIGTERM/SIGINT and at the end of input (default 10000)
  --resume-window-ms MS
                      how long a session that lost its transport stays resumable (default 300000)
  -h, --help          show this help

Environment:
  TAP_CONFORMANCE=1   offer the conformance capabilities tap.test.* (tap-conform sets it for
                      the agents it starts; give it yourself to an agent tap-conform connects to)
  TAP_HMAC_KEY_ID, TAP_HMAC_KEY, TAP_HMAC_PEER
                      a pre-shared key (base64url, at least 32 bytes) bound to the requester
                      agent id TAP_HMAC_PEER; set all three or none (spec: conformance#key-provisioning)`;

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
    if (listen.protocol !== 'ws:') throw new UsageError(`--listen needs a ws:// URL, not ${listen.protocol}//`);
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
  const trace = text('trace');
  if (trace !== undefined && servedNats === undefined)
    throw new UsageError('--trace records the sessions served through NATS: give --nats URL or --mesh URL too');
  const optional = (name: string, min: number): number | undefined =>
    values[name] === undefined ? undefined : wholeOption(values, name, 0, min);
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
      ...(text('state-dir') !== undefined ? { stateDir: text('state-dir') } : {}),
      ...(values['grace-ms'] !== undefined ? { graceMs: wholeOption(values, 'grace-ms', 10_000, 0) } : {}),
      ...(values['resume-window-ms'] !== undefined ? { resumeWindowMs: wholeOption(values, 'resume-window-ms', 300_000, 1000) } : {}),
    },
    values,
  };
}
