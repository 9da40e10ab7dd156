/**
 * A conformance case is data plus a run function: a stable id, the spec anchor, the requirement
 * ids it proves (their sentences are read from spec/1.0/requirements.json), its level and
 * profile, what it needs from the agent, and `run`, which returns an Outcome value
 * (spec: conformance#cases).
 */
import type { CaseContext, RunEnv } from './context.ts';
import type { Level, Outcome } from './verdict.ts';

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
  /** Only against agents whose card declares durability "restart" (UNIMPLEMENTED otherwise). */
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
  /**
   * The material of the security profile (spec: security): a client certificate of a wss:// run,
   * a second one (in a run without tokens), or the token issuer's key. UNIMPLEMENTED without it.
   */
  security?: 'client-certificate' | 'two-client-certificates' | 'tokens';
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

/** Defines a case; a function only so that case files read as lists of declarations. */
export function defineCase(c: Case): Case {
  return c;
}

/** The most tasks a case holds at the agent at once (see Case.tasks). */
export function tasksOf(c: Case): number {
  return c.tasks ?? (c.needs?.capabilities?.length ? 1 : 0);
}

/** True if a run over binding `kind` meets a case's need for `binding` (spec: bindings-nats#nats). */
export function meetsBinding(binding: NonNullable<Needs['binding']>, kind: NonNullable<Needs['binding']>): boolean {
  return binding === kind || (binding === 'websocket' && kind === 'nats');
}
