/**
 * A conformance case is data plus a run function: a stable id, the requirement ids it proves
 * (their sentences, levels and anchors are read from spec/1.0/requirements.json), its profile,
 * what it needs from the agent, and `run`, which returns an Outcome value
 * (spec: conformance#cases). Its level and spec anchor follow from its first requirement.
 */
import type { CaseContext, RunEnv } from './context.ts';
import { loadRequirements, REQUIREMENTS_FILE } from './requirements.ts';
import type { Got, Level, Outcome } from './verdict.ts';

/** The profiles, in report order (spec: conformance#profiles). */
export const PROFILES = [
  'core',
  'tasks',
  'cancellation',
  'streaming-resume',
  'idempotency',
  'authorization',
  'plans',
  'shutdown',
  'integrity',
  'security',
  'stdio',
  'websocket',
  'nats',
  'nats-durable',
  'registry',
] as const;
export type Profile = (typeof PROFILES)[number];

/** What a case needs from the agent or the run; a missing need decides the verdict without running it. */
export interface Needs {
  /** Capabilities: a missing tap.test.* one is NOT-TESTED, any other UNIMPLEMENTED. */
  capabilities?: string[];
  /** HMAC integrity with the run's key: UNIMPLEMENTED when the agent refuses it, SKIPPED when no key was given. */
  integrity?: boolean;
  /** Only against agents whose card declares durability "restart" (UNIMPLEMENTED otherwise, RESTART_UNDECLARED). */
  restart?: boolean;
  /**
   * Only over this binding (SKIPPED otherwise): resume after a reconnect and several sessions
   * need a binding with connections, "websocket", which the NATS binding's connections also meet.
   */
  binding?: 'stdio' | 'websocket' | 'nats';
  /** The mesh registry the agent joined (--registry): SKIPPED without one (spec: registry). */
  registry?: boolean;
  /** The trust file of the agent's signing key (--registry-trust): SKIPPED without one (spec: registry#signatures). */
  registryTrust?: boolean;
  /** Leave to stop the agent's process (--agent-pid): SKIPPED without it. */
  agentPid?: boolean;
  /** The command that starts another process of the agent (--agent-command): SKIPPED without it. */
  agentCommand?: boolean;
  /**
   * The material of the security profile (spec: security): a client certificate of a wss:// run,
   * a second one (in a run without tokens), or the token issuer's key. UNIMPLEMENTED without it.
   */
  security?: 'client-certificate' | 'two-client-certificates' | 'tokens';
  /**
   * The protocol version the case's rules belong to: a case of "1.1" runs only against an agent
   * whose first handshake negotiated 1.1, and is SKIPPED against a 1.0 agent. Set by defineCase
   * from the case's first requirement (spec: conformance#verdicts, versioning#tap-1-1).
   */
  version?: '1.1';
  /** Two principals: NOT-TESTED in a run whose sessions all present one client certificate and no token. */
  principals?: 'two';
  /** Sessions that authenticate nobody: UNIMPLEMENTED in a run whose sessions all present a client certificate or a token. */
  anonymous?: boolean;
}

export interface Case {
  /** Stable id, e.g. "core.handshake.version-negotiation"; never reused for another meaning. */
  id: string;
  /** One line: what the case checks, as a sentence. */
  title: string;
  level: Level;
  profile: Profile;
  /** The spec anchor, e.g. "handshake#versions" (never a section number). */
  spec: string;
  /** The requirement ids the case proves, from spec/1.0/requirements.json. */
  requirements: string[];
  needs?: Needs;
  /**
   * Runs after every other case of the run, one at a time, in suite order: for cases that change
   * what other cases observe (the load of the agent) or end the agent (its shutdown). A function
   * decides per run.
   */
  exclusive?: boolean | ((env: RunEnv) => boolean);
  /**
   * The most tasks the case holds at the agent at once (default: 1 when it needs a capability,
   * else 0). Over a binding where every case shares one agent, a case starts only when these fit
   * the agent's declared limits beside the tasks the suite already holds (spec: limits#concurrency).
   */
  tasks?: number;
  /**
   * Set on a case that fills the agent's task limits on purpose (a flood): it runs alone after
   * the others, and a BUSY its own load draws is part of what it observes.
   */
  fillsLimits?: boolean;
  /** Time budget of the whole case in ms at time-scale 1 (default 20 000). */
  budgetMs?: number;
  run(ctx: CaseContext): Promise<Outcome>;
}

/**
 * The level and anchor of a case that are not its first requirement's, with the reason why; a
 * case that names neither takes both from its first requirement.
 */
export type Override =
  | { level?: undefined; spec?: undefined; reason?: undefined }
  | {
      level?: Level;
      spec?: string;
      /** Why the level or the anchor is not the first requirement's, as a sentence. */
      reason: string;
    };

/**
 * A case as its file writes it: `level` and `spec` are left out, as they follow from the first
 * requirement (or an Override says why not). `run` may end early with `need` and `require`.
 */
export type CaseDefinition = Omit<Case, 'level' | 'spec'> & Override;

/** What tells one case of a family from the others: its id, title and requirements (and an Override). */
export type CaseHead = Pick<Case, 'id' | 'title' | 'requirements'> & Override;

/**
 * Defines a case: its level and spec anchor are those of its first requirement (or the stated
 * override), and its body runs inside `attempt`. Throws, naming the case, when a requirement id is
 * not in the index or an override states nothing new.
 */
export function defineCase(d: CaseDefinition): Case {
  const { level, spec, reason, run, ...rest } = d;
  const index = loadRequirements();
  if (!index) throw new Error(`case ${d.id}: ${REQUIREMENTS_FILE} is missing; run npm run requirements to build it`);
  const first = index.get(d.requirements[0] ?? '');
  if (!first)
    throw new Error(`case ${d.id} cites ${d.requirements[0] ?? 'no requirement'} first, which ${REQUIREMENTS_FILE} does not list`);
  if (reason !== undefined && (level ?? first.level) === first.level && (spec ?? first.anchor) === first.anchor) {
    throw new Error(
      `case ${d.id} gives a reason, but its level and spec are those of ${first.id} (${first.level}, ${first.anchor}): drop level, spec and reason`,
    );
  }
  const needs = first.since === '1.1' ? { ...rest.needs, version: '1.1' as const } : rest.needs;
  return { ...rest, ...(needs ? { needs } : {}), level: level ?? first.level, spec: spec ?? first.anchor, run: attempt(run) };
}

/** Ends a case early with the outcome that explains why (thrown by `need` and `require`, caught by `attempt`). */
export class Stop {
  constructor(readonly outcome: Outcome) {}
}

/** Returns the value, or stops the case with the outcome that explains its absence. */
export function need<T>(g: Got<T>): T {
  if (!g.ok) throw new Stop(g.outcome);
  return g.value;
}

/** Stops the case with `o` when it is not null. */
export function require(o: Outcome | null): void {
  if (o) throw new Stop(o);
}

/**
 * Runs a case body written with `need` and `require`: a Stop carries the agent's fault as a
 * value; anything else thrown is a harness error (re-thrown for the runner).
 */
export function attempt<A extends unknown[]>(body: (...args: A) => Promise<Outcome>): (...args: A) => Promise<Outcome> {
  return async (...args) => {
    try {
      return await body(...args);
    } catch (e) {
      if (e instanceof Stop) return e.outcome;
      throw e;
    }
  };
}

/** The most tasks a case holds at the agent at once (see Case.tasks). */
export function tasksOf(c: Case): number {
  return c.tasks ?? (c.needs?.capabilities?.length ? 1 : 0);
}

/** Why a case of `version` does not run against an agent that negotiated `negotiated` (spec: conformance#verdicts, versioning#tap-1-1). */
export function versionSkip(version: string, negotiated: string | undefined): string {
  return `a case of TAP ${version}: the agent negotiated ${negotiated ?? 'no version'}, and is certified at that version`;
}

/** True if a run over binding `kind` meets a case's need for `binding` (spec: bindings-nats#nats). */
export function meetsBinding(binding: NonNullable<Needs['binding']>, kind: NonNullable<Needs['binding']>): boolean {
  return binding === kind || (binding === 'websocket' && kind === 'nats');
}

/** Why a restart case does not apply to an agent, and how a state folder per case makes it apply (spec: tasks#durability). */
export const RESTART_UNDECLARED =
  'the agent card does not declare durability "restart"; an agent that keeps its tasks in a state folder gets one per case with tap-conform -- <command> --state-dir {state}';
