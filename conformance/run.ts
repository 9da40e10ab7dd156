/**
 * One conformance run from code: the cases selected for each target, run against the agent and
 * turned into the report model that every report writer and the CLI's summary print.
 * `runConformance` is the library's entry point; tap-conform calls `runConfigured` with its parsed
 * command line.
 */
import { join } from 'node:path';
import { type Case, PROFILES, type Profile, tasksOf } from './case.ts';
import { capacityOf, limitsOf } from './load.ts';
import { ALL_CASES } from './cases/index.ts';
import type { Probe, RunEnv } from './context.ts';
import {
  type Config,
  DEFAULT_RUNS,
  DEFAULT_SEED,
  DEFAULT_JWT_SCOPE,
  DEFAULT_TIMEOUT_MS,
  HARNESS_SIGNED_ID,
  type LevelTarget,
  probedEnv,
  runSettings,
  shellQuote,
} from './options.ts';
import { type BaselineCheck, checkBaseline, readBaseline } from './report/baseline.ts';
import { toolVersion } from './report/finish.ts';
import { buildReport, count, SPEC_VERSION, type Report } from './report/model.ts';
import { lowestVersion } from '../reference/core/versions.ts';
import { probe } from './probe.ts';
import { type CaseResult, defaultJobs, runCases } from './runner.ts';
import { profilesOf, selectCases } from './select.ts';
import { CannotRun, checkCommand, type BindingTarget } from './target.ts';
import { whenListening } from './wait-listening.ts';
import { parseNatsUrl } from '../reference/transports/nats/url.ts';
import { readTrustFile, type TrustFile } from '../reference/trust.ts';
import type { TlsOptions } from '../reference/transports/tls.ts';
import { durableKey, Exit, runKey, securityOf } from './credentials.ts';

export { Exit } from './credentials.ts';

/** The command line that replays one case. */
export function replayCommand(cfg: Config, id: string, extra = '', target: BindingTarget = cfg.target!): string {
  const t = target;
  const parts = ['tap-conform'];
  if (t.kind === 'websocket' || t.kind === 'nats') {
    parts.push(t.url);
    if (cfg.hmac)
      parts.push('--hmac-key-id', shellQuote(cfg.hmac.keyId), '--hmac-key="$TAP_HMAC_KEY"', '--hmac-peer', shellQuote(cfg.hmac.peer));
    if (cfg.tls?.ca !== undefined) parts.push('--tls-ca', shellQuote(cfg.tls.ca));
    for (const c of cfg.tls?.clients ?? []) parts.push('--tls-cert', shellQuote(c.cert), '--tls-key', shellQuote(c.key));
  }
  if (cfg.jwt) {
    parts.push(
      '--jwt-key',
      shellQuote(cfg.jwt.key),
      '--jwt-issuer',
      shellQuote(cfg.jwt.issuer),
      '--jwt-audience',
      shellQuote(cfg.jwt.audience),
    );
    if (cfg.jwt.scope !== DEFAULT_JWT_SCOPE) parts.push('--jwt-scope', shellQuote(cfg.jwt.scope));
  }
  if (cfg.registry) {
    parts.push('--registry', shellQuote(cfg.registry.url));
    if (cfg.registry.trustFile !== undefined) parts.push('--registry-trust', shellQuote(cfg.registry.trustFile));
    if (cfg.registry.agentCommand !== undefined) parts.push('--agent-command', shellQuote(cfg.registry.agentCommand));
  }
  parts.push('--seed', String(cfg.seed));
  if (cfg.timeScale !== 1) parts.push('--time-scale', String(cfg.timeScale));
  if (extra) parts.push(extra);
  parts.push('--only', shellQuote(id));
  if (t.kind === 'stdio') {
    if (t.args.length === 0 && t.command.includes('/')) parts.push(shellQuote(t.command));
    else parts.push('--', t.display);
  }
  return parts.join(' ');
}

/** The table `tap-conform --list` prints. */
export function listCases(cfg: Pick<Config, 'profiles' | 'level' | 'only'> & { skip?: readonly string[] }): string {
  const cases = selectCases(
    ALL_CASES,
    { profiles: cfg.profiles, level: cfg.level, only: cfg.only, skip: cfg.skip, registry: true },
    PROFILES,
  );
  const w = Math.max(...cases.map((c) => c.id.length), 2);
  const rows = cases.map((c) => `${c.id.padEnd(w)}  ${c.level.padEnd(6)}  ${c.profile.padEnd(16)}  ${c.spec.padEnd(30)}  ${c.title}`);
  return [`${'id'.padEnd(w)}  level   profile           spec                            title`, ...rows, count(cases.length, 'case')].join(
    '\n',
  );
}

/** What `runConformance` needs: the agent, and optionally the selection and the run's settings. */
export interface ConformanceOptions {
  /** A ws:// or wss:// URL, a nats://host:port/<agent_id> URL, an executable's path, or a command line as [command, ...args]. */
  target: string | readonly string[];
  /** Profiles to run (default: every profile of the target's binding). Any filter makes a partial run. */
  profiles?: Profile[];
  /** Cases up to this level (default "may": everything). */
  level?: LevelTarget;
  /** How long to wait for a WebSocket or NATS agent to accept connections, in ms (default 20 000). */
  listenWaitMs?: number;
  /** Case id globs (`*`, `?`); only matching cases run. */
  only?: string[];
  /** Case id globs left out; like `only`, they make the run partial. */
  skip?: string[];
  seed?: number;
  /** Runs per property (default 20). */
  runs?: number;
  /** Runs of each case, to find flaky ones (default 1). */
  repeat?: number;
  /** How long each step waits for a reply, in ms (default 10 000). */
  timeoutMs?: number;
  /** Stretches every timing tolerance (slow machines, CI). */
  timeScale?: number;
  /** Cases run at once (default 8; 4 over stdio on a one-core machine). */
  jobs?: number;
  /** WebSocket agents: the pre-shared key the agent was started with (key in base64url). */
  hmac?: { keyId: string; key: string; peer?: string };
  /** A JSON baseline [{ "id", "reason" }] of known failures. */
  expectedFailures?: string;
  /** A folder for every case's wire transcript as NDJSON. */
  transcriptsDir?: string;
  /** Called as cases finish. */
  onProgress?: (done: number, total: number, running: string[]) => void;
  /** The NATS server of the mesh registry the agent joined: runs the registry profile (spec: registry). */
  registry?: string;
  /** The agent's process id: the registry profile may stop it with SIGTERM to see its entry withdrawn. */
  agentPid?: number;
  /** A shell command that starts another process of the agent (its agent id, its registry): the registry profile sees it refuse to join. */
  agentCommand?: string;
  /** The file of a key in the trust file of the agent's durable runners: the signed-records cases run (spec: bindings-nats#signed-records). */
  signingKey?: string;
  /** wss:// and NATS agents: the authorities to trust and up to two client certificates (PEM files), as --tls-ca, --tls-cert and --tls-key. */
  tls?: Config['tls'];
  /** Bearer tokens: the issuer's private key file, issuer, audience and scopes (default tap.test.write), as --jwt-*. */
  jwt?: Omit<NonNullable<Config['jwt']>, 'scope'> & { scope?: string };
  /** The trust file (or its path) that binds the agent id to its signing key: its registry entry must be signed (spec: registry#signatures). */
  registryTrust?: TrustFile | string;
  /** Receives the lines tap-conform writes on stderr for the person running it (what a run removed or left on a server, say). */
  log?: (line: string) => void;
}

/** The target a string or argv names. */
export function targetOf(target: string | readonly string[]): BindingTarget {
  if (typeof target !== 'string') {
    if (target.length === 0) throw new Exit(2, 'the target command is empty');
    return { kind: 'stdio', command: target[0]!, args: target.slice(1), display: target.map(shellQuote).join(' ') };
  }
  if (/^wss?:\/\//i.test(target)) {
    try {
      new URL(target);
    } catch {
      throw new Exit(2, `"${target}" is not a valid WebSocket URL`);
    }
    return { kind: 'websocket', url: target, display: target };
  }
  if (/^(nats|tls):\/\//i.test(target)) return natsTarget(target);
  return { kind: 'stdio', command: target, args: [], display: shellQuote(target) };
}

/** The target a nats:// URL names; the URL must end with the agent id (spec: bindings-nats#addressing). */
export function natsTarget(url: string): BindingTarget {
  let agentId: string | undefined;
  try {
    agentId = parseNatsUrl(url).agentId;
  } catch (err) {
    throw new Exit(2, (err as Error).message);
  }
  if (agentId === undefined)
    throw new Exit(2, `"${url}" names no agent: end it with the agent id, e.g. nats://127.0.0.1:4222/tap.reference-agent`);
  return { kind: 'nats', url, display: url };
}

/** Runs the suite against an agent and resolves with the report (spec: conformance). */
export async function runConformance(options: ConformanceOptions): Promise<Report> {
  const target = targetOf(options.target);
  const cfg: Config = {
    target,
    targets: [target],
    list: false,
    help: false,
    version: false,
    profiles: options.profiles ?? [],
    level: options.level ?? 'may',
    only: options.only ?? [],
    skip: options.skip ?? [],
    seed: options.seed ?? DEFAULT_SEED,
    runs: options.runs ?? DEFAULT_RUNS,
    repeat: options.repeat ?? 1,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    timeScale: options.timeScale ?? 1,
    listenWaitMs: options.listenWaitMs ?? 20_000,
    jobs: options.jobs,
    expectedFailures: options.expectedFailures,
    transcripts: options.transcriptsDir,
    color: false,
    debug: false,
  };
  if (options.registry) {
    const trust = options.registryTrust;
    cfg.registry = {
      url: options.registry,
      ...(options.agentPid !== undefined ? { agentPid: options.agentPid } : {}),
      ...(options.agentCommand !== undefined ? { agentCommand: options.agentCommand } : {}),
      ...(typeof trust === 'string' ? { trustFile: trust } : trust ? { trust } : {}),
    };
  }
  if (options.signingKey !== undefined) cfg.signingKey = options.signingKey;
  if (options.hmac) cfg.hmac = { keyId: options.hmac.keyId, key: options.hmac.key, peer: options.hmac.peer ?? HARNESS_SIGNED_ID };
  if (options.tls) cfg.tls = options.tls;
  if (options.jwt) cfg.jwt = { ...options.jwt, scope: options.jwt.scope ?? DEFAULT_JWT_SCOPE };
  const onProgress = options.onProgress ? () => ({ update: options.onProgress!, clear: () => {} }) : undefined;
  return (await runConfigured(cfg, { onProgress, ...(options.log ? { log: options.log } : {}) })).report;
}

/** Hooks of a configured run: progress per target, and lines worth telling a person. */
export interface RunHooks {
  onProgress?: (target: BindingTarget) => { update: (done: number, total: number, running: string[]) => void; clear: () => void };
  log?: (line: string) => void;
}

/** One target's part of a run: its probe and its case results. */
interface TargetRun {
  target: BindingTarget;
  results: CaseResult[];
  card?: { agent_id?: string; name?: string };
  suiteCases: number;
  /** Why the run of this target stopped early, if it did (the probe's `stop`). */
  stopped?: string;
  /** The version the target's first handshake negotiated. */
  version?: string;
}

/** The case a stopped run still runs: the handshake, where the probe found the fault. */
const STOP_CASE = 'core.handshake.complete';

/** Runs the cases a parsed configuration selects, target by target, into one report. */
export async function runConfigured(cfg: Config, hooks: RunHooks = {}): Promise<{ report: Report; baseline?: BaselineCheck }> {
  const log = hooks.log ?? (() => {});
  const registry = cfg.registry !== undefined;
  if (cfg.registry?.trustFile !== undefined && cfg.registry.trust === undefined) {
    try {
      cfg.registry.trust = readTrustFile(cfg.registry.trustFile);
    } catch (err) {
      throw new Exit(2, `--registry-trust: ${(err as Error).message}`);
    }
  }
  const sel = (binding: 'stdio' | 'websocket' | 'nats') => ({
    binding,
    registry,
    profiles: cfg.profiles,
    level: cfg.level,
    only: cfg.only,
    skip: cfg.skip,
  });
  const plans = cfg.targets.map((target) => ({ target, cases: selectCases(ALL_CASES, sel(target.kind), PROFILES) }));
  if (plans.every((p) => p.cases.length === 0))
    throw new Exit(2, `no case matches ${cfg.only.length ? `--only ${cfg.only.join(',')}` : 'the selection'} (list them with --list)`);
  const baselineEntries = cfg.expectedFailures !== undefined ? safeBaseline(cfg.expectedFailures) : undefined;
  for (const { target } of plans) {
    if (target.kind !== 'stdio') continue;
    const bad = checkCommand(target.command);
    if (bad) throw new CannotRun(`could not start ${bad}`);
  }
  const startedAt = new Date();
  const t0 = Date.now();
  const runs: TargetRun[] = [];
  for (const { target, cases } of plans) {
    const whole = selectCases(ALL_CASES, { binding: target.kind, registry, profiles: [], level: 'may', only: [] }, PROFILES).length;
    if (cases.length === 0) {
      runs.push({ target, results: [], suiteCases: whole });
      continue;
    }
    if (plans.length > 1) log(`tap-conform: ${target.display} (${target.kind}): ${count(cases.length, 'case')}`);
    runs.push({ ...(await runTarget(cfg, target, cases, hooks)), suiteCases: whole });
  }
  // In a combined run the transcripts of each binding go to their own folder.
  const results = runs.flatMap((r) => r.results);
  let baseline: BaselineCheck | undefined;
  if (baselineEntries) {
    baseline = checkBaseline(cfg.expectedFailures!, baselineEntries, results, new Set(ALL_CASES.map((c) => c.id)), cfg.level);
  }
  const card = runs.find((r) => r.card)?.card;
  const stopped = runs.filter((r) => r.stopped).map((r) => (runs.length > 1 ? `${r.target.kind}: ${r.stopped}` : r.stopped!));
  const all = [
    ...new Set(cfg.targets.flatMap((t) => profilesOf({ binding: t.kind, registry, profiles: [], level: 'may', only: [] }, PROFILES))),
  ];
  const report = buildReport({
    version: toolVersion(),
    target: cfg.targets.map((t) => t.display).join(' + '),
    transport: cfg.targets[0]!.kind,
    bindings: cfg.targets.map((t) => t.kind),
    agent: card ? { agent_id: card.agent_id, name: card.name } : undefined,
    seed: cfg.seed,
    startedAt,
    durationMs: Date.now() - t0,
    levelTarget: cfg.level,
    profiles: cfg.profiles.length ? cfg.profiles : all,
    allProfiles: PROFILES.filter((p) => all.includes(p)),
    results,
    baseline,
    suiteCases: runs.reduce((n, r) => n + r.suiteCases, 0),
    filters: { profiles: cfg.profiles, level: cfg.level, only: cfg.only, skip: cfg.skip },
    selectedCases: plans.reduce((n, p) => n + p.cases.length, 0),
    ...(stopped.length ? { stopped: stopped.join('; ') } : {}),
    specVersion: runVersion(runs.map((r) => r.version)),
  });
  return { report, baseline };
}

/**
 * The version a run certifies: the lowest its targets negotiated, so that a combined run names
 * one every target met; 1.0 when no target got that far (spec: conformance#verdicts).
 */
export function runVersion(versions: readonly (string | undefined)[]): string {
  return lowestVersion(versions.filter((v): v is string => v !== undefined)) ?? SPEC_VERSION;
}

/** Probes one target and runs its cases. */
async function runTarget(cfg: Config, given: BindingTarget, cases: Case[], hooks: RunHooks): Promise<Omit<TargetRun, 'suiteCases'>> {
  const { target, security } = securityOf(cfg, given);
  const base: Omit<RunEnv, 'probe' | 'startupMs'> = {
    target,
    ...(security ? { security } : {}),
    ...runSettings(cfg),
    key: runKey(cfg, target),
    replay: (id, extra) => replayCommand(cfg, id, extra, target),
    // The registry, with the trust file read when the run began.
    ...(cfg.registry ? { registry: cfg.registry } : {}),
    ...(target.kind === 'nats' && cfg.signingKey !== undefined ? { signingKey: durableKey(cfg) } : {}),
    ...(hooks.log ? { log: hooks.log } : {}),
  };
  await whenListening(target, cfg.listenWaitMs, hooks.log ?? ((line) => process.stderr.write(`${line}\n`))).catch((err: Error) => {
    throw new CannotRun(err.message);
  });
  const found = await probe(base);
  // A fault every case would meet at its handshake is said once, and only the handshake case runs.
  // A binding fault is judged by its own case, run even when the selection left it out.
  const after = found.stopCase ? `the case that checks it (${found.stopCase})` : `the handshake case (${STOP_CASE})`;
  if (found.stop) hooks.log?.(`tap-conform: ${found.stop}. The run stops after ${after}.`);
  else if (found.problem) hooks.log?.(`tap-conform: the first handshake failed: ${found.problem}`);
  const stopCases = found.stopCase ? ALL_CASES.filter((c) => c.id === found.stopCase) : cases.filter((c) => c.id === STOP_CASE);
  const selected = found.stop ? stopCases : cases;
  const jobs = cfg.jobs ?? defaultJobs(target.kind);
  const load = loadNote(target, found.card, selected, jobs);
  if (load) hooks.log?.(load);
  if (target.kind === 'nats' && !found.stop) await oneProcess(target.url, base.stepTimeoutMs, target.tls);
  const env = probedEnv(cfg, base, found);
  const progress = hooks.onProgress?.(target);
  const transcriptsDir = cfg.transcripts && cfg.targets.length > 1 ? join(cfg.transcripts, target.kind) : cfg.transcripts;
  const results = await runCases(selected, env, jobs, cfg.repeat, {
    onProgress: (done, total, running) => progress?.update(done, total, running),
    transcriptsDir,
  });
  progress?.clear();
  if (cfg.targets.length > 1) for (const r of results) r.binding = target.kind;
  return {
    target,
    results,
    card: found.card,
    ...(found.stop ? { stopped: found.stop } : {}),
    ...(found.version ? { version: found.version } : {}),
  };
}

/**
 * The line that says, before a run over a shared agent, that the agent's task limits will hold
 * the cases back (spec: limits#concurrency); undefined when they do not.
 */
export function loadNote(target: BindingTarget, card: Probe['card'], cases: readonly Case[], jobs: number): string | undefined {
  if (target.kind === 'stdio') return undefined;
  const limits = limitsOf(card);
  const capacity = capacityOf(limits);
  const most = cases
    .map(tasksOf)
    .sort((a, b) => b - a)
    .slice(0, jobs)
    .reduce((n, t) => n + t, 0);
  if (!(capacity < most)) return undefined;
  const which = capacity === limits.total ? 'limits.max_concurrent_tasks' : 'limits.max_tasks_per_principal';
  return `tap-conform: the agent's card allows ${capacity} tasks at once (${which}); every case shares this agent, so a case starts only when its tasks fit beside those the suite holds there`;
}

/** Stops a run when several processes answer for the agent id: the suite judges one (spec: bindings-nats#opening). */
async function oneProcess(url: string, timeoutMs: number, tls?: TlsOptions): Promise<void> {
  const { answeringProcesses, severalProcesses } = await import('./nats-processes.ts');
  const n = await answeringProcesses(url, timeoutMs, 'tap', tls).catch(() => undefined);
  if (n !== undefined && n > 1) throw new CannotRun(severalProcesses(parseNatsUrl(url).agentId!, url, n));
}

function safeBaseline(file: string) {
  try {
    return readBaseline(file);
  } catch (e) {
    throw new Exit(2, `--expected-failures: ${(e as Error).message}`);
  }
}
