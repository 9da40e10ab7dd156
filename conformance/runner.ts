/**
 * Runs cases: each against a fresh connection (a fresh process over stdio), a few at a time,
 * and turns what it observed into a verdict per case. Agent faults are values; only the
 * harness's own failures become ERROR (spec: conformance#running).
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { meetsBinding, RESTART_UNDECLARED, tasksOf, versionSkip, type Case } from './case.ts';
import { capacityOf, limitsOf, TaskGate, TaskLedger } from './load.ts';
import { bindingOf } from './target.ts';
import { CaseContext, caseRun, certificatePrincipals, tidyShared, type RunEnv } from './context.ts';
import { quoteOf } from './requirements.ts';
import type { Received } from './peer.ts';
import { judgeHistory } from './judge/history.ts';
import type { SessionState } from './session-state.ts';
import type { WireEntry } from './transcript.ts';
import {
  applyLevel,
  capTiming,
  fail,
  harnessError,
  notTested,
  severity,
  skipped,
  unimplemented,
  type Level,
  type Outcome,
  type Silence,
  type Verdict,
} from './verdict.ts';

/** The result of one case, as every report sees it. */
export interface CaseResult {
  id: string;
  title: string;
  level: Level;
  profile: string;
  spec: string;
  /** The first requirement id (the report's `requirement`). */
  requirement: string;
  requirements: string[];
  quote: string;
  verdict: Verdict;
  detail: string;
  expected?: string;
  observed?: string;
  silence?: Silence;
  duration_ms: number;
  /** The binding the case ran over, in a run that combines several targets. */
  binding?: 'stdio' | 'websocket' | 'nats';
  /** Verdicts of each repetition, when --repeat > 1. */
  repeats?: Verdict[];
  /** Agent and harness violations seen during the case. */
  violations: string[];
  transcript: WireEntry[];
  /** The command that replays this case alone. */
  replay: string;
}

export interface RunHooks {
  /** Called when a case starts and when it ends. */
  onProgress?: (done: number, total: number, running: string[]) => void;
  /** Where to write per-case transcripts (NDJSON), if anywhere. */
  transcriptsDir?: string;
}

/**
 * Default concurrency: 8 cases at once. A stdio case starts its own agent process and mostly waits on it, so 8 suit a
 * machine of two cores or more; on one core, where those starts are the work, 4 over stdio. Over a shared agent
 * (WebSocket, NATS) the gate of `sharedLoad` holds cases back further, to the card's task limits.
 */
export function defaultJobs(kind: 'stdio' | 'websocket' | 'nats'): number {
  return kind === 'stdio' && availableParallelism() < 2 ? 4 : 8;
}

/** Decides a case without running it when a need is not met; null when it can run. */
export async function unmetNeed(c: Case, env: RunEnv): Promise<Outcome | null> {
  const n = c.needs;
  if (!n) return null;
  if (n.binding && !meetsBinding(n.binding, bindingOf(env.target))) return skipped(`applies to the ${n.binding} binding only`);
  if (n.version && n.version !== env.probe.version) return skipped(versionSkip(n.version, env.probe.version));
  const declared = new Set<string>((env.probe.card?.capabilities ?? []).map((cap: { name?: string }) => cap.name));
  for (const cap of n.capabilities ?? []) {
    if (declared.has(cap)) continue;
    // The plans profile applies to agents that submit plans (spec: conformance#profiles).
    if (cap === 'tap.test.plan')
      return unimplemented('the agent offers no tap.test.plan: the plans profile applies to agents that submit plans');
    return cap.startsWith('tap.test.')
      ? notTested(`the agent does not offer the conformance capability ${cap}`)
      : unimplemented(`the agent does not offer ${cap}`);
  }
  if (n.registry && !env.registry)
    return skipped('no registry was given: pass --registry nats://host:port, the server of the mesh the agent joined');
  if (n.registryTrust && env.registry?.trust === undefined)
    return skipped('no trust file was given: pass --registry-trust FILE, which binds the agent id to the key of its entry');
  if (n.agentPid && env.registry?.agentPid === undefined)
    return skipped('the suite may not stop the agent: pass --agent-pid with the process id of the agent (it receives SIGTERM)');
  if (n.agentCommand && env.registry?.agentCommand === undefined)
    return skipped('the suite cannot start a second process of the agent: pass --agent-command, the shell command that starts it');
  if (n.restart && env.probe.card?.durability !== 'restart') return unimplemented(RESTART_UNDECLARED);
  // The integrity profile applies to an agent given a key, which it must hold (spec: conformance#key-provisioning).
  if (n.integrity && !env.key)
    return unimplemented(
      'no key was given: pass --hmac-key-id, --hmac-key and --hmac-peer (and start the agent with the same TAP_HMAC_* values)',
    );
  return securityNeed(n, env) ?? overLimits(c, env);
}

/**
 * ERROR for a case that would hold more tasks at once than the agent allows (its card, or the
 * per-session limit its probe's ack stated; a case keeps its tasks in one session): the suite
 * does not load an agent past its limits (spec: limits#concurrency).
 */
function overLimits(c: Case, env: RunEnv): Outcome | null {
  const need = tasksOf(c);
  const { total, perPrincipal, perSession } = limitsOf(env.probe.card, env.probe.params);
  if (c.fillsLimits) return null;
  const which =
    total !== undefined && total < need
      ? `limits.max_concurrent_tasks ${total}`
      : perPrincipal !== undefined && perPrincipal < need
        ? `limits.max_tasks_per_principal ${perPrincipal}`
        : perSession !== undefined && perSession < need
          ? `${perSession} per session`
          : undefined;
  if (!which) return null;
  return harnessError(
    `the case holds up to ${need} tasks at once and the agent allows ${which}: the suite does not load an agent past its limits, so it cannot run this case; to certify, serve the conformance run with limits of at least ${need}`,
  );
}

/** The security profile's material and the principals a run can make (spec: security); null when the case can run. */
function securityNeed(n: NonNullable<Case['needs']>, env: RunEnv): Outcome | null {
  const sec = env.security;
  const certificates = sec?.clients.length ?? 0;
  if (n.security === 'tokens' && !sec?.tokens)
    return unimplemented('no token issuer was given: pass --jwt-key, --jwt-issuer and --jwt-audience (the agent must trust that issuer)');
  if (n.security === 'client-certificate' || n.security === 'two-client-certificates') {
    const wss = env.target.kind === 'websocket' && /^wss:/i.test(env.target.url);
    const why =
      env.target.kind === 'nats'
        ? "over NATS a client certificate authenticates the client to the NATS server, not a principal to the agent (spec: security#client-certificates): these cases run against the agent's wss:// URL, with --tls-ca, --tls-cert and --tls-key"
        : 'no client certificate was given for a wss:// agent: pass its wss:// URL with --tls-ca, --tls-cert and --tls-key';
    if (!wss || certificates === 0) return unimplemented(why);
    if (n.security === 'two-client-certificates' && certificates < 2)
      return unimplemented('one client certificate was given: pass a second --tls-cert and --tls-key, of another identity');
    if (n.security === 'two-client-certificates' && sec?.tokens)
      return unimplemented("the run's tokens decide each session's principal: run the certificate cases without --jwt-*");
  }
  // A certificate run without tokens: every session proves the same certificate (spec: security#client-certificates).
  if (n.principals === 'two' && certificatePrincipals(env) && certificates < 2)
    return notTested(
      'every session of this run presents the same client certificate, so it is one principal: pass a second --tls-cert and --tls-key, of another identity, to test isolation between principals',
    );
  if (n.anonymous && ((certificates > 0 && env.target.kind === 'websocket') || sec?.tokens))
    return unimplemented(
      'every session of this run authenticates a principal (a client certificate or a token): none authenticates nobody',
    );
  return null;
}

async function withBudget(p: Promise<Outcome>, ms: number, id: string): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Outcome>((resolve) => {
    timer = setTimeout(
      () =>
        resolve(
          harnessError(
            `the case did not finish within its budget of ${Math.round(ms)} ms; every wait of ${id} is bounded, so the harness or the machine is at fault (on a loaded machine, rerun with --time-scale 3)`,
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs one case once; never throws. Over a shared agent it starts once its tasks fit the agent's limits (env.load.gate). */
export async function runCase(c: Case, env: RunEnv): Promise<{ outcome: Outcome; ctx?: CaseContext; ms: number }> {
  const need = await unmetNeed(c, env);
  if (need) return { outcome: need, ms: 0 };
  const owner = caseRun(c.id);
  await env.load?.gate?.enter(owner, tasksOf(c));
  const started = Date.now();
  const ctx = new CaseContext(env, c.id, { fillsLimits: c.fillsLimits === true, owner });
  let outcome: Outcome;
  try {
    outcome = await withBudget(
      c
        .run(ctx)
        .catch((err: unknown) =>
          harnessError(`the case threw: ${env.debug ? ((err as Error).stack ?? String(err)) : ((err as Error).message ?? String(err))}`),
        ),
      (c.budgetMs ?? 20_000) * env.timeScale + env.startupMs * 3 + env.stepTimeoutMs * 4,
      c.id,
    );
  } finally {
    await ctx.dispose().catch(() => {});
    env.load?.gate?.leave(owner);
  }
  const history = historyViolations(ctx.findings.received);
  for (const text of history) ctx.findings.violations.push({ by: 'agent', text, at: ctx.transcript.now() });
  outcome = judge(c, outcome, ctx.findings.violations, ctx.findings.busyByLoad);
  return { outcome, ctx, ms: Date.now() - started };
}

/**
 * Checks the agent's messages of each session against the task rules (legal transitions, one
 * result, gap-free sequences, nothing after the result) with the harness's own judge (spec: tasks#states).
 */
export function historyViolations(received: readonly Received[]): string[] {
  const bySession = new Map<SessionState, Received[]>();
  for (const r of received) {
    let list = bySession.get(r.session);
    if (!list) bySession.set(r.session, (list = []));
    list.push(r);
  }
  const out: string[] = [];
  for (const [state, list] of bySession) {
    // Where the harness dropped messages on purpose, judge the streams as recovered by resume.
    const own = list.filter((r) => r.msg.task_id === undefined || !state.adopted.has(r.msg.task_id));
    const msgs = state.lenientGaps ? recovered(own) : own.map((r) => r.msg);
    for (const v of judgeHistory(msgs, state)) out.push(`the agent's task stream breaks the rules (${v.rule}): ${v.message}`);
  }
  return out;
}

/**
 * The messages of a session with each task's stream rebuilt in sequence order from every copy
 * received (first copy of each sequence), other messages in arrival order before them.
 */
export function recovered(list: readonly Received[]): unknown[] {
  const others: unknown[] = [];
  const streams = new Map<string, Map<number, unknown>>();
  for (const r of list) {
    const { task_id: id, sequence: seq } = r.msg;
    if (typeof id !== 'string' || typeof seq !== 'number') {
      others.push(r.msg);
      continue;
    }
    let s = streams.get(id);
    if (!s) streams.set(id, (s = new Map()));
    if (!s.has(seq)) s.set(seq, r.msg);
  }
  const out = [...others.filter((m) => (m as { type: string }).type !== 'task.snapshot')];
  for (const s of streams.values()) out.push(...[...s.entries()].sort((a, b) => a[0] - b[0]).map(([, m]) => m));
  return out;
}

/**
 * The final verdict: the level rule (a missed SHOULD is NON-STRICT), then every violation seen on
 * the wire (harness faults are ERROR; agent faults FAIL a case that would otherwise pass), then
 * the timing cap. A case that failed after a BUSY the suite's own load may have drawn (`busy`)
 * is ERROR: the fault may be the suite's (spec: conformance#verdicts, TAP-CONF-002).
 */
export function judge(
  c: Case,
  o: Outcome,
  violations: readonly { by: 'agent' | 'harness'; text: string }[],
  busy: readonly string[] = [],
): Outcome {
  let out = applyLevel(c.level, o);
  if (busy.length > 0 && (out.verdict === 'FAIL' || out.verdict === 'NON-STRICT')) {
    return harnessError(`${busy[0]} (the case then saw: ${out.detail}); rerun the case alone to judge the agent, or with fewer --jobs`);
  }
  const harness = violations.filter((v) => v.by === 'harness');
  const agent = violations.filter((v) => v.by === 'agent');
  if (harness.length > 0 && out.verdict !== 'ERROR') {
    out = harnessError(`${harness[0]!.text} (a harness bug, not the agent's fault)`);
  } else if (agent.length > 0 && severity(out.verdict) < severity('FAIL')) {
    const more = agent.length > 1 ? ` (and ${agent.length - 1} more violation${agent.length > 2 ? 's' : ''})` : '';
    out = fail(`${agent[0]!.text}${more}`, 'every message valid and consistent with the session', agent[0]!.text);
  }
  return capTiming(out);
}

/**
 * Runs the selected cases with bounded parallelism, each `repeat` times (the repetitions of a case
 * run side by side like other cases, each with its own shared scenarios), then removes what they
 * left on the agent's server (tidy.ts); results in the order of `cases`, one per case.
 */
export async function runCases(
  cases: readonly Case[],
  env: RunEnv,
  jobs: number,
  repeat: number,
  hooks: RunHooks = {},
): Promise<CaseResult[]> {
  const reps = Math.max(1, repeat);
  const runs: Run[][] = cases.map(() => []);
  const isAlone = (c: Case): boolean =>
    (typeof c.exclusive === 'function' ? c.exclusive(env) : c.exclusive === true) || c.fillsLimits === true;
  // Long cases start first, so they overlap with the many short ones; repetitions follow one another.
  const order = cases
    .map((c, i) => ({ i, budget: c.budgetMs ?? 20_000 }))
    .filter((x) => !isAlone(cases[x.i]!))
    .sort((a, b) => b.budget - a.budget || a.i - b.i)
    .flatMap((x) => Array.from({ length: reps }, (_, rep) => ({ i: x.i, rep })));
  // Exclusive cases, and those that fill the agent's limits, follow the others, one at a time, in suite order.
  const alone = cases
    .map((c, i) => ({ c, i }))
    .filter((x) => isAlone(x.c))
    .flatMap((x) => Array.from({ length: reps }, (_, rep) => ({ i: x.i, rep })));
  const load = env.load ?? sharedLoad(env);
  // A scenario shared by the two halves of a timed rule is observed once per repetition.
  const shared = Array.from({ length: reps }, (_, rep) => (rep === 0 ? env.shared : new Map<string, Promise<unknown>>()));
  let next = 0;
  let done = 0;
  const running = new Map<string, number>();
  const names = () => [...running.keys()];
  hooks.onProgress?.(0, cases.length, []);
  const worker = async (): Promise<void> => {
    while (next < order.length) {
      const { i, rep } = order[next++]!;
      const c = cases[i]!;
      running.set(c.id, (running.get(c.id) ?? 0) + 1);
      hooks.onProgress?.(done, cases.length, names());
      runs[i]![rep] = await runCase(c, { ...env, shared: shared[rep]!, ...(load ? { load } : {}) });
      const left = running.get(c.id)! - 1;
      if (left === 0) running.delete(c.id);
      else running.set(c.id, left);
      if (runs[i]!.filter(Boolean).length === reps) done++;
      hooks.onProgress?.(done, cases.length, names());
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, order.length)) }, worker));
  order.push(...alone);
  await worker().then(() => Promise.all(shared.map((s) => tidyShared(s, env.log))));
  return cases.map((c, i) => resultOf(c, runs[i]!, env, repeat, hooks));
}

type Run = { outcome: Outcome; ctx?: CaseContext; ms: number };

/**
 * The load of a run whose cases share one agent (WebSocket, NATS): a ledger of the tasks the suite
 * holds there, and a gate that keeps them within the limits of the agent's card. Over stdio each
 * case has its own agent process, and counts its own tasks.
 */
export function sharedLoad(env: RunEnv): RunEnv['load'] {
  if (env.target.kind === 'stdio') return undefined;
  const limits = limitsOf(env.probe.card);
  const ledger = new TaskLedger(limits, env.timeScale);
  const capacity = capacityOf(limits);
  // Tasks left running by finished cases keep the next case waiting at most a few steps.
  return Number.isFinite(capacity) ? { ledger, gate: new TaskGate(ledger, capacity, env.stepTimeoutMs * 3) } : { ledger };
}

/** One result from the runs of a case: the worst run, marked flaky when the verdicts differ. */
function resultOf(c: Case, runs: readonly Run[], env: RunEnv, repeat: number, hooks: RunHooks): CaseResult {
  const verdicts = runs.map((r) => r.outcome.verdict);
  let worst: Run | undefined;
  let total = 0;
  for (const r of runs) {
    total += r.ms;
    if (!worst || severity(r.outcome.verdict) > severity(worst.outcome.verdict)) worst = r;
  }
  const w = worst!;
  let outcome = w.outcome;
  const distinct = new Set(verdicts);
  if (distinct.size > 1) {
    const tally = [...distinct].map((v) => `${v} ${verdicts.filter((x) => x === v).length}/${verdicts.length}`).join(', ');
    outcome = { ...outcome, detail: `flaky (${tally}): ${outcome.detail}` };
  }
  const transcript = w.ctx?.transcript.entries ?? [];
  if (hooks.transcriptsDir) {
    mkdirSync(hooks.transcriptsDir, { recursive: true });
    writeFileSync(
      join(hooks.transcriptsDir, `${c.id}.ndjson`),
      transcript.map((e) => JSON.stringify(e)).join('\n') + (transcript.length ? '\n' : ''),
    );
  }
  // A failure that names the requirement it broke is reported under that one, not all the case cites.
  const broken = outcome.requirements?.length ? outcome.requirements : c.requirements;
  const result: CaseResult = {
    id: c.id,
    title: c.title,
    level: c.level,
    profile: c.profile,
    spec: c.spec,
    requirement: broken[0] ?? '',
    requirements: [...broken],
    quote: quoteOf(broken),
    verdict: outcome.verdict,
    detail: outcome.detail,
    duration_ms: Math.round(total / runs.length),
    violations: (w.ctx?.findings.violations ?? []).map((v) => `${v.by}: ${v.text}`),
    transcript,
    replay: env.replay(c.id),
  };
  if (outcome.expected !== undefined) result.expected = outcome.expected;
  if (outcome.observed !== undefined) result.observed = outcome.observed;
  if (outcome.silence !== undefined) result.silence = outcome.silence;
  if (repeat > 1) result.repeats = verdicts;
  return result;
}
