/**
 * tap-conform: certifies a TAP agent over stdio or WebSocket. Exit codes: 0 every required case
 * passed, 1 the agent failed a case, 2 usage error, 3 the harness could not run.
 */
import { join } from 'node:path';
import { PROFILES, type Case } from './case.ts';
import { ALL_CASES } from './cases/index.ts';
import type { RunEnv } from './context.ts';
import { fromB64u, newKey } from './mac.ts';
import { HARNESS_ID, HARNESS_SIGNED_ID, parseCli, shellQuote, USAGE, type Config } from './options.ts';
import { checkBaseline, readBaseline, type BaselineCheck } from './report/baseline.ts';
import { buildReport, count } from './report/model.ts';
import { finishRun, toolVersion } from './report/finish.ts';
import { painter, progressLine } from './report/terminal.ts';
import { defaultJobs, probe, runCases, type CaseResult } from './runner.ts';
import { profilesOf, selectCases } from './select.ts';
import type { HmacKey } from './session-state.ts';
import { CannotRun, checkCommand, type TargetSpec } from './target.ts';
import { WORKSPACE_USAGE, wantsWorkspace } from './workspace/options.ts';

/** Thrown to end the program with an exit code and a one-line reason. */
export class Exit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The command line that replays one case. */
export function replayCommand(cfg: Config, id: string, extra = '', target: TargetSpec = cfg.target!): string {
  const t = target;
  const parts = ['tap-conform'];
  if (t.kind === 'websocket') {
    parts.push(t.url);
    if (cfg.hmac)
      parts.push('--hmac-key-id', shellQuote(cfg.hmac.keyId), '--hmac-key', '"$TAP_HMAC_KEY"', '--hmac-peer', shellQuote(cfg.hmac.peer));
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

function runKey(cfg: Config, target: TargetSpec): HmacKey | undefined {
  if (target.kind === 'stdio') return { keyId: 'tap-conform-key', key: newKey(), peer: HARNESS_SIGNED_ID };
  if (!cfg.hmac) return undefined;
  const key = fromB64u(cfg.hmac.key);
  if (!key) throw new Exit(2, '--hmac-key is not base64url');
  if (key.length < 32) throw new Exit(2, `--hmac-key holds ${key.length} bytes; a pre-shared key has at least 32`);
  if (!/^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/.test(cfg.hmac.keyId))
    throw new Exit(2, `--hmac-key-id "${cfg.hmac.keyId}" is not a valid key id (lowercase letters, digits, "_", "-", dots)`);
  return { keyId: cfg.hmac.keyId, key, peer: cfg.hmac.peer };
}

function listCases(cfg: Config): string {
  const cases = selectCases(ALL_CASES, { profiles: cfg.profiles, level: cfg.level, only: cfg.only }, PROFILES);
  const w = Math.max(...cases.map((c) => c.id.length), 2);
  const rows = cases.map((c) => `${c.id.padEnd(w)}  ${c.level.padEnd(6)}  ${c.profile.padEnd(16)}  ${c.spec.padEnd(30)}  ${c.title}`);
  return [`${'id'.padEnd(w)}  level   profile           spec                            title`, ...rows, count(cases.length, 'case')].join(
    '\n',
  );
}

/** Runs the program; resolves with the exit code. Output goes to the given streams. */
export async function main(
  argv: readonly string[],
  out: NodeJS.WriteStream = process.stdout,
  err: NodeJS.WriteStream = process.stderr,
): Promise<number> {
  // The workspace binding has options of its own (conformance/workspace).
  if (wantsWorkspace(argv)) return (await import('./workspace/cli.ts')).workspaceMain(argv, out, err);
  const parsed = parseCli(argv);
  if (!parsed.ok) {
    err.write(`tap-conform: ${parsed.error} (exit 2; see tap-conform --help)\n`);
    return 2;
  }
  const cfg = parsed.config;
  if (cfg.help) {
    out.write(`${USAGE}\n\n${WORKSPACE_USAGE}\n`);
    return 0;
  }
  if (cfg.version) {
    out.write(`tap-conform ${toolVersion()} (TAP 1.0)\n`);
    return 0;
  }
  try {
    if (cfg.list) {
      out.write(`${listCases(cfg)}\n`);
      return 0;
    }
    return await certify(cfg, out, err);
  } catch (e) {
    if (e instanceof Exit) {
      err.write(`tap-conform: ${e.message} (exit ${e.code})\n`);
      return e.code;
    }
    if (e instanceof CannotRun) {
      err.write(`tap-conform: ${e.message} (exit 3)\n`);
      return 3;
    }
    err.write(
      `tap-conform: internal error: ${cfg.debug ? ((e as Error).stack ?? String(e)) : (e as Error).message} (exit 3; rerun with --debug and report it)\n`,
    );
    return 3;
  }
}

/** One target's part of a run: its probe and its case results. */
interface TargetRun {
  target: TargetSpec;
  results: CaseResult[];
  card?: { agent_id?: string; name?: string };
  suiteCases: number;
}

async function certify(cfg: Config, out: NodeJS.WriteStream, err: NodeJS.WriteStream): Promise<number> {
  const sel = (binding: 'stdio' | 'websocket') => ({ binding, profiles: cfg.profiles, level: cfg.level, only: cfg.only });
  const plans = cfg.targets.map((target) => ({ target, cases: selectCases(ALL_CASES, sel(target.kind), PROFILES) }));
  if (plans.every((p) => p.cases.length === 0))
    throw new Exit(2, `no case matches ${cfg.only.length ? `--only ${cfg.only.join(',')}` : 'the selection'} (list them with --list)`);
  const baselineEntries = cfg.expectedFailures !== undefined ? safeBaseline(cfg.expectedFailures) : undefined;
  for (const { target } of plans) {
    if (target.kind !== 'stdio') continue;
    const bad = checkCommand(target.command);
    if (bad) throw new CannotRun(`could not start ${bad}`);
  }
  const paint = painter(cfg.color && err.isTTY === true);
  const startedAt = new Date();
  const t0 = Date.now();
  const runs: TargetRun[] = [];
  for (const { target, cases } of plans) {
    const whole = selectCases(ALL_CASES, { binding: target.kind, profiles: [], level: 'may', only: [] }, PROFILES).length;
    if (cases.length === 0) {
      runs.push({ target, results: [], suiteCases: whole });
      continue;
    }
    if (plans.length > 1) err.write(`tap-conform: ${target.display} (${target.kind}): ${count(cases.length, 'case')}\n`);
    runs.push({ ...(await runTarget(cfg, target, cases, err, paint)), suiteCases: whole });
  }
  // In a combined run the transcripts of each binding go to their own folder.
  const results = runs.flatMap((r) => r.results);
  let baseline: BaselineCheck | undefined;
  if (baselineEntries) {
    baseline = checkBaseline(cfg.expectedFailures!, baselineEntries, results, new Set(ALL_CASES.map((c) => c.id)), cfg.level);
  }
  const card = runs.find((r) => r.card)?.card;
  const all = [...new Set(cfg.targets.flatMap((t) => profilesOf({ binding: t.kind, profiles: [], level: 'may', only: [] }, PROFILES)))];
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
    filters: { profiles: cfg.profiles, level: cfg.level, only: cfg.only },
  });
  return finishRun(report, { cfg, baseline, out, err, usage: (m) => new Exit(2, m) });
}

/** Probes one target and runs its cases. */
async function runTarget(
  cfg: Config,
  target: TargetSpec,
  cases: Case[],
  err: NodeJS.WriteStream,
  paint: ReturnType<typeof painter>,
): Promise<Omit<TargetRun, 'suiteCases'>> {
  const base: Omit<RunEnv, 'probe' | 'startupMs'> = {
    target,
    selfId: HARNESS_ID,
    key: runKey(cfg, target),
    stepTimeoutMs: cfg.timeoutMs * cfg.timeScale,
    timeScale: cfg.timeScale,
    seed: cfg.seed,
    runs: cfg.runs,
    path: cfg.path,
    replay: (id, extra) => replayCommand(cfg, id, extra, target),
    debug: cfg.debug,
    shared: new Map(),
  };
  const found = await probe(base);
  if (found.problem) err.write(`tap-conform: the first handshake failed: ${found.problem}\n`);
  // A fresh agent may take a while to start, more so when cases run in parallel: its first reply
  // may take three times the probe's start-up plus 2 s, and never less than 30 s.
  const startupMs = Math.max(base.stepTimeoutMs, ((found.startupMs ?? 0) * 3 + 2000) * cfg.timeScale, 30_000 * cfg.timeScale);
  const env: RunEnv = { ...base, probe: found, startupMs };
  const progress = progressLine(err, paint);
  const transcriptsDir = cfg.transcripts && cfg.targets.length > 1 ? join(cfg.transcripts, target.kind) : cfg.transcripts;
  const results = await runCases(cases, env, cfg.jobs ?? defaultJobs(target.kind), cfg.repeat, {
    onProgress: (done, total, running) => progress.update(done, total, running),
    transcriptsDir,
  });
  progress.clear();
  if (cfg.targets.length > 1) for (const r of results) r.binding = target.kind;
  return { target, results, card: found.card };
}

function safeBaseline(file: string) {
  try {
    return readBaseline(file);
  } catch (e) {
    throw new Exit(2, `--expected-failures: ${(e as Error).message}`);
  }
}

const isMain = process.argv[1] !== undefined && /(?:tap-conform(?:\.mjs)?|conformance[\\/]cli\.ts)$/.test(process.argv[1]);
if (isMain) {
  // A reader that goes away (tap-conform --list | head) is not an error of ours.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
  // Children and sockets are closed by now; do not wait for stray timers.
  setTimeout(() => process.exit(code), 50).unref();
}
