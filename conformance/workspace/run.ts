/**
 * `tap-conform --workspace <dir> -- <command>`: certifies an agent over the workspace binding.
 * The harness initialises the workspace, starts the agent once, runs the message-protocol cases
 * over mailboxes and the workspace cases over task records (those that pause or stop the agent
 * alone, and last), and reports like every other run (spec: conformance, bindings-workspace).
 */
import type { Case } from '../case.ts';
import type { RunEnv } from '../context.ts';
import { newKey } from '../mac.ts';
import { HARNESS_ID, HARNESS_SIGNED_ID, probedEnv, runSettings, shellQuote, type Config } from '../options.ts';
import { checkBaseline, readBaseline, type BaselineCheck } from '../report/baseline.ts';
import { buildReport, type Report } from '../report/model.ts';
import { finishRun, toolVersion } from '../report/finish.ts';
import { painter, progressLine } from '../report/terminal.ts';
import { probe } from '../probe.ts';
import { runCases, type CaseResult } from '../runner.ts';
import type { HmacKey } from '../session-state.ts';
import { keyEnv, type TargetSpec } from '../target.ts';
import { WORKSPACE_CASES } from './cases/index.ts';
import { WORKSPACE_PROFILE, bindRun, type WorkspaceCase } from './kit.ts';
import type { WorkspaceOptions } from './options.ts';
import { MAILBOX_PROFILES, mailboxCases } from './protocol.ts';
import { selectCases } from '../select.ts';
import { WorkspaceRun } from './workspace-run.ts';

/** A usage problem of the workspace options (exit 2). */
export class WorkspaceUsage extends Error {}

/** Every case of a workspace run, in report order: the message protocol, then the workspace binding. */
export function workspaceSelection(cfg: Config, wo: WorkspaceOptions): Case[] {
  const onlyWorkspace = wo.workspaceProfile && cfg.profiles.length === 0;
  const protocol = onlyWorkspace ? [] : mailboxCases({ profiles: cfg.profiles, level: cfg.level, only: cfg.only, skip: cfg.skip });
  const withWorkspace = wo.workspaceProfile || cfg.profiles.length === 0;
  const workspace = withWorkspace
    ? selectCases(WORKSPACE_CASES, { profiles: [WORKSPACE_PROFILE], level: cfg.level, only: cfg.only, skip: cfg.skip }, [WORKSPACE_PROFILE])
    : [];
  return [...protocol, ...workspace];
}

/** The profiles a workspace run reports. */
function reportedProfiles(cfg: Config, wo: WorkspaceOptions): string[] {
  if (wo.workspaceProfile && cfg.profiles.length === 0) return [WORKSPACE_PROFILE];
  const base = cfg.profiles.length > 0 ? cfg.profiles.filter((p) => MAILBOX_PROFILES.includes(p)) : [...MAILBOX_PROFILES];
  return wo.workspaceProfile || cfg.profiles.length === 0 ? [...base, WORKSPACE_PROFILE] : base;
}

/** The command line that replays one case of a workspace run. */
export function workspaceReplay(cfg: Config, wo: WorkspaceOptions, id: string, extra = ''): string {
  const t = cfg.target!;
  const parts = ['tap-conform', '--workspace', shellQuote(wo.dir)];
  if (wo.agentId !== 'tap.workspace-agent') parts.push('--agent-id', wo.agentId);
  parts.push('--seed', String(cfg.seed));
  if (cfg.timeScale !== 1) parts.push('--time-scale', String(cfg.timeScale));
  if (extra) parts.push(extra);
  parts.push('--only', shellQuote(id), '--', t.display);
  return parts.join(' ');
}

/** Runs the selected cases of a workspace run and returns the report and the exit code. */
export async function certifyWorkspace(
  cfg: Config,
  wo: WorkspaceOptions,
  out: NodeJS.WriteStream,
  err: NodeJS.WriteStream,
): Promise<number> {
  const target = cfg.target;
  if (target?.kind !== 'stdio') throw new WorkspaceUsage('--workspace needs the command that starts the agent, after "--"');
  const cases = workspaceSelection(cfg, wo);
  if (cases.length === 0)
    throw new WorkspaceUsage(
      `no case matches ${cfg.only.length ? `--only ${cfg.only.join(',')}` : 'the selection'} (list them with --list --workspace <dir>)`,
    );
  const baselineEntries = cfg.expectedFailures !== undefined ? safeBaseline(cfg.expectedFailures) : undefined;
  const key: HmacKey = { keyId: 'tap-conform-key', key: newKey(), peer: HARNESS_SIGNED_ID };
  const paint = painter(cfg.color && err.isTTY === true);
  const startedAt = new Date();
  const t0 = Date.now();
  const run = await WorkspaceRun.start({
    options: wo,
    command: target.command,
    args: target.args,
    env: keyEnv(key),
    timeScale: cfg.timeScale,
    selfId: HARNESS_ID,
    onLine: cfg.debug ? (stream, line) => err.write(`[agent ${stream}] ${line}\n`) : undefined,
  });
  bindRun(run);
  let results: CaseResult[];
  let found;
  try {
    const display = `--workspace ${shellQuote(run.root)} -- ${target.display}`;
    const wsTarget: TargetSpec = { kind: 'workspace', display, open: (o) => run.open(o) };
    const base: Omit<RunEnv, 'probe' | 'startupMs'> = {
      ...runSettings(cfg),
      target: wsTarget,
      key,
      replay: (id, extra) => workspaceReplay(cfg, wo, id, extra),
    };
    found = await probe(base);
    if (found.problem && cfg.debug) err.write(`tap-conform: the first handshake over mailboxes failed: ${found.problem}\n`);
    const env = probedEnv(cfg, base, found);
    const progress = progressLine(err, paint);
    const hooks = {
      onProgress: (done: number, total: number, running: string[]) => progress.update(done, total, running),
      transcriptsDir: cfg.transcripts,
    };
    const alone = (c: Case) => (c as WorkspaceCase).exclusive === true || (c as WorkspaceCase).last === true;
    const together = cases.filter((c) => !alone(c));
    const exclusive = cases.filter((c) => (c as WorkspaceCase).exclusive === true && !(c as WorkspaceCase).last);
    const last = cases.filter((c) => (c as WorkspaceCase).last === true);
    const byId = new Map<string, CaseResult>();
    for (const group of [
      { list: together, jobs: cfg.jobs ?? 8 },
      { list: exclusive, jobs: 1 },
      { list: last, jobs: 1 },
    ]) {
      if (group.list.length === 0) continue;
      for (const r of await runCases(group.list, env, group.jobs, cfg.repeat, hooks)) byId.set(r.id, r);
    }
    progress.clear();
    results = cases.map((c) => byId.get(c.id)!);
  } finally {
    bindRun(null);
    await run.close(10_000);
  }
  let baseline: BaselineCheck | undefined;
  if (baselineEntries)
    baseline = checkBaseline(cfg.expectedFailures!, baselineEntries, results, new Set(cases.map((c) => c.id)), cfg.level);
  const report: Report = buildReport({
    version: toolVersion(),
    target: `--workspace ${run.root} -- ${target.display}`,
    transport: 'websocket',
    agent: found?.card ? { agent_id: found.card.agent_id, name: found.card.name } : { agent_id: wo.agentId },
    seed: cfg.seed,
    startedAt,
    durationMs: Date.now() - t0,
    levelTarget: cfg.level,
    profiles: reportedProfiles(cfg, wo),
    allProfiles: [...MAILBOX_PROFILES, WORKSPACE_PROFILE],
    results,
    baseline,
    bindings: ['workspace'],
    allBindings: ['workspace'],
    // Only the whole suite of the workspace binding certifies.
    suiteCases: workspaceSelection({ ...cfg, profiles: [], level: 'may', only: [], skip: [] }, { ...wo, workspaceProfile: false }).length,
    filters: { profiles: cfg.profiles, level: cfg.level, only: cfg.only, skip: cfg.skip },
  });
  // The report model names the two connection transports; this run's is the workspace binding.
  (report as { transport: string }).transport = 'workspace';
  return finishRun(report, { cfg, baseline, out, err, usage: (m) => new WorkspaceUsage(m) });
}

function safeBaseline(file: string) {
  try {
    return readBaseline(file);
  } catch (e) {
    throw new WorkspaceUsage(`--expected-failures: ${(e as Error).message}`);
  }
}
