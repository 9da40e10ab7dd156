/**
 * The command line of tap-conform, parsed into a run configuration (a value), or into the
 * one-line usage error a person can act on. No I/O here.
 */
import { parseNatsUrl } from '../reference/transports/nats/url.ts';
import { parseArgs } from 'node:util';
import { PROFILES, type Profile } from './case.ts';
import type { Probe, RunEnv } from './context.ts';
import type { BindingTarget } from './target.ts';
import type { TrustFile } from '../reference/trust.ts';

export type LevelTarget = 'must' | 'should' | 'may';

export interface Config {
  /** The first target (the only one, unless the run combines a stdio command and a ws:// URL). */
  target?: BindingTarget;
  /** Every target of the run: at most one per binding, all of the same agent. */
  targets: BindingTarget[];
  list: boolean;
  help: boolean;
  version: boolean;
  profiles: Profile[];
  level: LevelTarget;
  only: string[];
  /** Cases left out by id glob; like --only, a run with them is partial. */
  skip: string[];
  seed: number;
  path?: string;
  runs: number;
  repeat: number;
  timeoutMs: number;
  timeScale: number;
  /** How long to wait for a WebSocket or NATS agent to accept connections, in ms (default 20 000). */
  listenWaitMs: number;
  jobs?: number;
  json?: string;
  junit?: string;
  html?: string;
  markdown?: string;
  /** Where report links to spec anchors and requirement ids point (default: the built site, relative). */
  specBaseUrl?: string;
  badge?: string;
  expectedFailures?: string;
  transcripts?: string;
  color: boolean;
  debug: boolean;
  hmac?: { keyId: string; key: string; peer: string };
  /** The mesh registry the agent joined (--registry), the process the suite may stop (--agent-pid), and the trust file of its keys (--registry-trust; read when the run starts). */
  registry?: { url: string; agentPid?: number; trustFile?: string; trust?: TrustFile; agentCommand?: string };
  /** The file of an Ed25519 key in the trust file of the agent's durable runners (--signing-key). */
  signingKey?: string;
  /**
   * TLS files of wss:// and NATS targets: the authorities to trust (--tls-ca) and client
   * certificates with their keys (--tls-cert, --tls-key): the first is the run's, a second
   * another principal's (spec: security#client-certificates).
   */
  tls?: { ca?: string; clients: { cert: string; key: string }[] };
  /** Bearer tokens the run mints: the issuer's private key file, issuer, audience and scopes (spec: security#bearer-tokens). */
  jwt?: { key: string; issuer: string; audience: string; scope: string };
}

export const DEFAULT_SEED = 20250314;
export const DEFAULT_RUNS = 20;
export const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * The longest lease (a durable queue's ack_wait) that the nats-durable lease cases wait out: they
 * run a task of 2.5 leases, and tasks that wait longer than a lease for a place; a longer lease
 * leaves them NOT-TESTED.
 */
export const LONGEST_LEASE_MS = 120_000;
/** The harness's agent id in unsigned sessions; signed sessions use the key's peer id. */
export const HARNESS_ID = 'tap-conform';
/** The requester id the run's key is bound to over stdio. */
export const HARNESS_SIGNED_ID = 'tap-conform.hmac';
/** The scopes of the tokens a run mints unless --jwt-scope says otherwise: the permission tap.test.guarded requires. */
export const DEFAULT_JWT_SCOPE = 'tap.test.write';

/** What a run's environment takes from its command line, whatever its target (the rest of RunEnv is the target's). */
export function runSettings(
  cfg: Config,
): Pick<RunEnv, 'selfId' | 'stepTimeoutMs' | 'timeScale' | 'seed' | 'runs' | 'path' | 'debug' | 'shared'> {
  return {
    selfId: HARNESS_ID,
    stepTimeoutMs: cfg.timeoutMs * cfg.timeScale,
    timeScale: cfg.timeScale,
    seed: cfg.seed,
    runs: cfg.runs,
    path: cfg.path,
    debug: cfg.debug,
    shared: new Map(),
  };
}

/**
 * The environment of a run once its probe is done. A fresh agent may take a while to start, more
 * so when cases run in parallel: its first reply may take three times the probe's start-up plus
 * 2 s, and never less than 30 s.
 */
export function probedEnv(cfg: Pick<Config, 'timeScale'>, base: Omit<RunEnv, 'probe' | 'startupMs'>, found: Probe): RunEnv {
  const startupMs = Math.max(base.stepTimeoutMs, ((found.startupMs ?? 0) * 3 + 2000) * cfg.timeScale, 30_000 * cfg.timeScale);
  return { ...base, probe: found, startupMs };
}

export type Parsed = { ok: true; config: Config } | { ok: false; error: string };

function positiveInt(name: string, v: string | undefined, min = 1): number | string {
  if (v === undefined) return `${name} needs a value`;
  if (!/^\d+$/.test(v) || Number(v) < min) return `${name} must be an integer of at least ${min}, not "${v}"`;
  return Number(v);
}

/**
 * Parses argv (without node and the script). `env` gives the conformance key of a WebSocket or NATS
 * agent when no --hmac-* option does: TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER, the
 * variables the agent itself was started with (spec: conformance#key-provisioning).
 */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): Parsed {
  const dashdash = argv.indexOf('--');
  const head = dashdash === -1 ? [...argv] : argv.slice(0, dashdash);
  const command = dashdash === -1 ? undefined : argv.slice(dashdash + 1);
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: head,
      allowPositionals: true,
      strict: true,
      options: {
        profile: { type: 'string', multiple: true },
        level: { type: 'string' },
        only: { type: 'string', multiple: true },
        skip: { type: 'string', multiple: true },
        seed: { type: 'string' },
        path: { type: 'string' },
        runs: { type: 'string' },
        repeat: { type: 'string' },
        timeout: { type: 'string' },
        'time-scale': { type: 'string' },
        wait: { type: 'string' },
        jobs: { type: 'string' },
        json: { type: 'string' },
        junit: { type: 'string' },
        html: { type: 'string' },
        markdown: { type: 'string' },
        'spec-base-url': { type: 'string' },
        badge: { type: 'string' },
        'expected-failures': { type: 'string' },
        transcripts: { type: 'string' },
        'hmac-key-id': { type: 'string' },
        'hmac-key': { type: 'string' },
        'hmac-peer': { type: 'string' },
        registry: { type: 'string' },
        'agent-pid': { type: 'string' },
        'agent-command': { type: 'string' },
        'signing-key': { type: 'string' },
        'tls-ca': { type: 'string' },
        'tls-cert': { type: 'string', multiple: true },
        'tls-key': { type: 'string', multiple: true },
        'jwt-key': { type: 'string' },
        'jwt-issuer': { type: 'string' },
        'jwt-audience': { type: 'string' },
        'jwt-scope': { type: 'string' },
        'registry-trust': { type: 'string' },
        'no-color': { type: 'boolean' },
        debug: { type: 'boolean' },
        list: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    }));
  } catch (err) {
    const lines = (err as Error).message.split('\n');
    // A value that starts with "-" (a base64url key may) is taken for an option: say how to write it.
    const dash = lines.find((l) => l.startsWith('To specify an option argument starting with a dash'));
    const first = lines[0]!.replace(/\. To specify a positional.*$/, '');
    return { ok: false, error: dash ? `${first.replace(/\.$/, '')}: ${dash.replace(/^To specify/, 'to give')}` : first };
  }
  const s = (k: string) => values[k] as string | undefined;
  const cfg: Config = {
    targets: [],
    list: values.list === true,
    help: values.help === true,
    version: values.version === true,
    profiles: [],
    level: 'may',
    only: ((values.only as string[] | undefined) ?? []).flatMap((o) => o.split(',')).filter((o) => o !== ''),
    skip: ((values.skip as string[] | undefined) ?? []).flatMap((o) => o.split(',')).filter((o) => o !== ''),
    seed: DEFAULT_SEED,
    runs: DEFAULT_RUNS,
    repeat: 1,
    timeoutMs: DEFAULT_TIMEOUT_MS,
    timeScale: 1,
    listenWaitMs: 20_000,
    color: values['no-color'] !== true && !process.env.NO_COLOR,
    debug: values.debug === true,
  };
  for (const p of ((values.profile as string[] | undefined) ?? []).flatMap((x) => x.split(','))) {
    if (!(PROFILES as readonly string[]).includes(p))
      return { ok: false, error: `unknown profile "${p}"; profiles are ${PROFILES.join(', ')}` };
    if (!cfg.profiles.includes(p as Profile)) cfg.profiles.push(p as Profile);
  }
  const level = s('level');
  if (level !== undefined) {
    if (level !== 'must' && level !== 'should' && level !== 'may')
      return { ok: false, error: `--level is must, should or may, not "${level}"` };
    cfg.level = level;
  }
  const ints: [string, keyof Config, number][] = [
    ['seed', 'seed', 0],
    ['runs', 'runs', 1],
    ['repeat', 'repeat', 1],
    ['timeout', 'timeoutMs', 1],
    ['jobs', 'jobs', 1],
  ];
  for (const [flag, key, min] of ints) {
    if (values[flag] === undefined) continue;
    const n = positiveInt(`--${flag}`, s(flag), min);
    if (typeof n === 'string') return { ok: false, error: n };
    (cfg as unknown as Record<string, unknown>)[key] = n;
  }
  const scale = s('time-scale');
  if (scale !== undefined) {
    const x = Number(scale);
    if (!Number.isFinite(x) || x <= 0) return { ok: false, error: `--time-scale must be a positive number, not "${scale}"` };
    cfg.timeScale = x;
  }
  const wait = s('wait');
  if (wait !== undefined) {
    if (!/^\d+(\.\d+)?$/.test(wait)) return { ok: false, error: `--wait must be a number of seconds, not "${wait}"` };
    cfg.listenWaitMs = Math.round(Number(wait) * 1000);
  }
  for (const k of ['path', 'json', 'junit', 'html', 'markdown', 'badge', 'transcripts'] as const) if (s(k) !== undefined) cfg[k] = s(k);
  if (s('spec-base-url') !== undefined) cfg.specBaseUrl = s('spec-base-url');
  if (s('expected-failures') !== undefined) cfg.expectedFailures = s('expected-failures');
  const keyId = s('hmac-key-id');
  const key = s('hmac-key');
  if ((keyId === undefined) !== (key === undefined)) return { ok: false, error: '--hmac-key-id and --hmac-key go together' };
  if (keyId !== undefined && key !== undefined) {
    const peer = s('hmac-peer') ?? HARNESS_SIGNED_ID;
    if (peer === HARNESS_ID)
      return { ok: false, error: `--hmac-peer must differ from "${HARNESS_ID}", the id the harness uses in unsigned sessions` };
    cfg.hmac = { keyId, key, peer };
  } else if (s('hmac-peer') !== undefined) return { ok: false, error: '--hmac-peer needs --hmac-key-id and --hmac-key' };
  const registry = s('registry');
  if (registry !== undefined) {
    if (!/^(nats|tls):\/\/[^/]+\/?$/i.test(registry))
      return { ok: false, error: `--registry needs the nats:// URL of a server, e.g. nats://127.0.0.1:4222, not "${registry}"` };
    cfg.registry = { url: registry };
    if (s('agent-pid') !== undefined) {
      const pid = positiveInt('--agent-pid', s('agent-pid'));
      if (typeof pid === 'string') return { ok: false, error: pid };
      cfg.registry.agentPid = pid;
    }
    if (s('registry-trust') !== undefined) cfg.registry.trustFile = s('registry-trust');
    const command = s('agent-command');
    if (command !== undefined) {
      if (command.trim() === '')
        return { ok: false, error: '--agent-command is empty: give the shell command that starts another process of the agent' };
      cfg.registry.agentCommand = command;
    }
  } else if (s('agent-command') !== undefined) return { ok: false, error: '--agent-command belongs to --registry: give the registry too' };
  else if (s('agent-pid') !== undefined) return { ok: false, error: '--agent-pid belongs to --registry: give the registry too' };
  else if (s('registry-trust') !== undefined) return { ok: false, error: '--registry-trust belongs to --registry: give the registry too' };
  if (s('signing-key') !== undefined) cfg.signingKey = s('signing-key');
  const security = securityOptions(values);
  if (typeof security === 'string') return { ok: false, error: security };
  Object.assign(cfg, security);
  if (cfg.profiles.includes('registry') && registry === undefined && !cfg.list)
    return { ok: false, error: 'the registry profile needs the mesh registry the agent joined: add --registry nats://host:port' };
  if (cfg.help || cfg.version) return { ok: true, config: cfg };

  if (command !== undefined) {
    if (command.length === 0) return { ok: false, error: 'nothing after "--": give the command that starts the agent' };
    cfg.targets.push({ kind: 'stdio', command: command[0]!, args: command.slice(1), display: command.map(shellQuote).join(' ') });
  }
  for (const t of positionals) {
    if (/^wss?:\/\//i.test(t)) {
      try {
        new URL(t);
      } catch {
        return { ok: false, error: `"${t}" is not a valid WebSocket URL` };
      }
      cfg.targets.push({ kind: 'websocket', url: t, display: t });
    } else if (/^(nats|tls):\/\//i.test(t)) {
      let agentId: string | undefined;
      try {
        agentId = parseNatsUrl(t).agentId;
      } catch (err) {
        return { ok: false, error: (err as Error).message };
      }
      if (agentId === undefined)
        return { ok: false, error: `"${t}" names no agent: end it with the agent id, e.g. nats://127.0.0.1:4222/tap.reference-agent` };
      cfg.targets.push({ kind: 'nats', url: t, display: t });
    } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(t)) {
      return { ok: false, error: `"${t}": only ws://, wss:// and nats:// URLs are supported` };
    } else {
      cfg.targets.push({ kind: 'stdio', command: t, args: [], display: shellQuote(t) });
    }
  }
  // One run may combine the bindings of one agent: a stdio command and a ws:// URL.
  for (const kind of ['stdio', 'websocket', 'nats'] as const) {
    const same = cfg.targets.filter((t) => t.kind === kind);
    if (same.length > 1)
      return {
        ok: false,
        error: `one agent at a time: got ${same.map((t) => `"${t.display}"`).join(', ')} (at most one stdio command and one ws:// URL of the same agent; put a command with arguments after "--")`,
      };
  }
  // The stdio target first: its cases run first in a combined run.
  cfg.targets.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'stdio' ? -1 : 1));
  cfg.target = cfg.targets[0];
  if (!cfg.list && !cfg.target) return { ok: false, error: 'no agent given: name its executable, a ws:// URL, or a command after "--"' };
  const has = (kind: 'stdio' | 'websocket' | 'nats') => cfg.targets.some((t) => t.kind === kind);
  if (cfg.hmac && cfg.targets.length > 0 && !has('websocket') && !has('nats'))
    return { ok: false, error: 'the --hmac-* options are for WebSocket agents; over stdio the harness provisions a key itself' };
  if (!cfg.hmac && (has('websocket') || has('nats'))) {
    const fromEnv = envKey(env);
    if (typeof fromEnv === 'string') return { ok: false, error: fromEnv };
    if (fromEnv) cfg.hmac = fromEnv;
  }
  if (cfg.targets.length > 0) {
    for (const wrong of ['stdio', 'websocket', 'nats'] as const)
      if (cfg.profiles.includes(wrong) && !has(wrong))
        return {
          ok: false,
          error: `the ${wrong} profile applies only to an agent reached over the ${wrong} binding`,
        };
  }
  if (cfg.tls && cfg.targets.length > 0) {
    const plain = cfg.targets.find((t) => t.kind === 'websocket' && !/^wss:/i.test(t.url));
    if (plain)
      return { ok: false, error: `the --tls-* options are for wss:// and NATS agents; "${plain.display}" is not TLS: give its wss:// URL` };
    if (!has('websocket') && !has('nats'))
      return { ok: false, error: 'the --tls-* options are for wss:// and NATS agents; over stdio there is no TLS' };
  }
  if (cfg.path !== undefined && cfg.only.length === 0) return { ok: false, error: '--path replays one failure: give the case with --only' };
  return { ok: true, config: cfg };
}

/** --tls-* and --jwt-*: the run's security material, or a sentence when the options do not go together. */
function securityOptions(values: Record<string, unknown>): Pick<Config, 'tls' | 'jwt'> | string {
  const out: Pick<Config, 'tls' | 'jwt'> = {};
  const certs = (values['tls-cert'] as string[] | undefined) ?? [];
  const keys = (values['tls-key'] as string[] | undefined) ?? [];
  if (certs.length !== keys.length)
    return `give each --tls-cert its --tls-key (got ${certs.length} certificate(s) and ${keys.length} key(s)), in the same order`;
  if (certs.length > 2) return "at most two client certificates: the run's, and another principal's";
  const ca = values['tls-ca'] as string | undefined;
  if (ca !== undefined || certs.length > 0)
    out.tls = { ...(ca !== undefined ? { ca } : {}), clients: certs.map((cert, i) => ({ cert, key: keys[i]! })) };
  const [key, issuer, audience] = (['jwt-key', 'jwt-issuer', 'jwt-audience'] as const).map((k) => values[k] as string | undefined);
  if (key !== undefined || issuer !== undefined || audience !== undefined || values['jwt-scope'] !== undefined) {
    if (key === undefined || issuer === undefined || audience === undefined)
      return "--jwt-key, --jwt-issuer and --jwt-audience go together: the issuer's private key, its name, and the agent's audience";
    out.jwt = { key, issuer, audience, scope: (values['jwt-scope'] as string | undefined) ?? DEFAULT_JWT_SCOPE };
  }
  return out;
}

/**
 * The key of TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER, undefined when none is set, or a
 * sentence when they cannot be used.
 */
function envKey(env: Readonly<Record<string, string | undefined>>): Config['hmac'] | string | undefined {
  const [keyId, key, peer] = [env.TAP_HMAC_KEY_ID, env.TAP_HMAC_KEY, env.TAP_HMAC_PEER].map((v) => (v === '' ? undefined : v));
  if (keyId === undefined && key === undefined && peer === undefined) return undefined;
  if (keyId === undefined || key === undefined || peer === undefined)
    return 'TAP_HMAC_KEY_ID, TAP_HMAC_KEY and TAP_HMAC_PEER go together: set all three (as for the agent) or none';
  if (peer === HARNESS_ID) return `TAP_HMAC_PEER must differ from "${HARNESS_ID}", the id the harness uses in unsigned sessions`;
  return { keyId, key, peer };
}

/** Quotes an argument for a POSIX shell when it needs it. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_./:=@%+,-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** True if `id` matches the glob (`*` any run of characters, `?` one). */
export function globMatch(glob: string, id: string): boolean {
  const re = new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  return re.test(id);
}
