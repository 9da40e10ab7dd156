/**
 * The report of a run as one value: what every writer (terminal, JSON, JUnit, HTML, badge)
 * renders. Certification is decided here (spec: conformance#certification; see
 * conformance/INTERPRETING.md).
 */
import type { LevelTarget } from '../options.ts';
import type { CaseResult } from '../runner.ts';
import type { WireEntry } from '../transcript.ts';
import { countVerdicts, type Verdict } from '../verdict.ts';
import type { BaselineCheck } from './baseline.ts';

export const TOOL = 'tap-conform';
export const SPEC_VERSION = '1.0';

export interface ReportCase {
  id: string;
  title: string;
  level: string;
  profile: string;
  spec: string;
  requirement: string;
  requirements: string[];
  quote: string;
  verdict: Verdict;
  detail: string;
  expected?: string;
  observed?: string;
  silence?: string;
  duration_ms: number;
  repeats?: Verdict[];
  replay: string;
  violations?: string[];
  /** The wire transcript, kept for cases that did not pass. */
  transcript?: WireEntry[];
}

export interface Report {
  tool: string;
  version: string;
  spec_version: string;
  target: string;
  transport: 'stdio' | 'websocket';
  agent?: { agent_id?: string; name?: string };
  seed: number;
  started_at: string;
  duration_ms: number;
  level_target: LevelTarget;
  summary: Record<Verdict, number> & { total: number };
  profiles: Record<string, Verdict>;
  /** The certification level reached: "TAP 1.0 Certified", "TAP 1.0 Certified, non-strict" or "Not certified". */
  level: string;
  certified: boolean;
  strict: boolean;
  expected_failures?: BaselineCheck;
  cases: ReportCase[];
}

/** Verdicts that keep the agent below "certified" when they hit a case. */
export function blocksCertified(c: { verdict: Verdict; level: string }): boolean {
  if (c.verdict === 'FAIL' || c.verdict === 'ERROR') return true;
  return c.verdict === 'NOT-TESTED' && c.level === 'MUST';
}

/** Verdicts that keep a certified agent below "strict". */
export function blocksStrict(c: { verdict: Verdict; level: string }): boolean {
  return blocksCertified(c) || c.verdict === 'NON-STRICT' || c.verdict === 'NOT-TESTED';
}

/** True if the case keeps the run from exiting 0 at this level target. */
export function required(c: { verdict: Verdict; level: string }, target: LevelTarget): boolean {
  return target === 'must' ? blocksCertified(c) : blocksStrict(c);
}

/**
 * The cases that keep a run from being perfect: every verdict but PASS, except a SKIPPED case of
 * the other binding. The reference agent is held to this, with every seed and on both bindings.
 */
export function notPerfect<T extends { verdict: Verdict; detail: string }>(cases: readonly T[]): T[] {
  return cases.filter((c) => c.verdict !== 'PASS' && !(c.verdict === 'SKIPPED' && / binding only$/.test(c.detail)));
}

/**
 * One verdict for a profile (spec: conformance#verdicts): FAIL if any case failed, else ERROR if
 * any errored, else NOT-TESTED if a MUST case was not tested, else NON-STRICT if any case was,
 * else PASS; a profile none of whose cases applied is UNIMPLEMENTED (or SKIPPED).
 */
export function profileVerdict(cases: readonly { verdict: Verdict; level: string }[]): Verdict {
  const has = (v: Verdict) => cases.some((c) => c.verdict === v);
  if (has('FAIL')) return 'FAIL';
  if (has('ERROR')) return 'ERROR';
  if (cases.some((c) => c.verdict === 'NOT-TESTED' && c.level === 'MUST')) return 'NOT-TESTED';
  if (has('NON-STRICT') || has('NOT-TESTED')) return 'NON-STRICT';
  if (cases.length > 0 && cases.every((c) => c.verdict === 'UNIMPLEMENTED' || c.verdict === 'SKIPPED')) {
    return cases.some((c) => c.verdict === 'UNIMPLEMENTED') ? 'UNIMPLEMENTED' : 'SKIPPED';
  }
  return 'PASS';
}

export interface ReportInput {
  version: string;
  target: string;
  transport: 'stdio' | 'websocket';
  agent?: { agent_id?: string; name?: string };
  seed: number;
  startedAt: Date;
  durationMs: number;
  levelTarget: LevelTarget;
  /** The profiles of the run, in order; a subset qualifies the level. */
  profiles: readonly string[];
  allProfiles: readonly string[];
  results: readonly CaseResult[];
  baseline?: BaselineCheck;
}

/** Builds the report value. */
export function buildReport(i: ReportInput): Report {
  const cases: ReportCase[] = i.results.map((r) => {
    const c: ReportCase = {
      id: r.id,
      title: r.title,
      level: r.level,
      profile: r.profile,
      spec: r.spec,
      requirement: r.requirement,
      requirements: r.requirements,
      quote: r.quote,
      verdict: r.verdict,
      detail: r.detail,
      duration_ms: r.duration_ms,
      replay: r.replay,
    };
    if (r.expected !== undefined) c.expected = r.expected;
    if (r.observed !== undefined) c.observed = r.observed;
    if (r.silence !== undefined) c.silence = r.silence;
    if (r.repeats) c.repeats = r.repeats;
    if (r.verdict !== 'PASS' && r.verdict !== 'SKIPPED' && r.verdict !== 'UNIMPLEMENTED') {
      if (r.violations.length) c.violations = r.violations;
      c.transcript = r.transcript;
    }
    return c;
  });
  const counts = countVerdicts(cases.map((c) => c.verdict));
  const profiles: Record<string, Verdict> = {};
  for (const p of i.profiles) profiles[p] = profileVerdict(cases.filter((c) => c.profile === p));
  const certified = cases.length > 0 && !cases.some(blocksCertified);
  const strict = certified && i.levelTarget !== 'must' && !cases.some(blocksStrict);
  const partial = i.profiles.length < i.allProfiles.length ? ` (${i.profiles.join(', ')})` : '';
  // spec: conformance#verdicts — certified when every profile is PASS; certified, non-strict when
  // some are NON-STRICT and none is worse.
  const level = strict
    ? `TAP ${SPEC_VERSION} Certified${partial}`
    : certified
      ? `TAP ${SPEC_VERSION} Certified, non-strict${partial}`
      : 'Not certified';
  const report: Report = {
    tool: TOOL,
    version: i.version,
    spec_version: SPEC_VERSION,
    target: i.target,
    transport: i.transport,
    seed: i.seed,
    started_at: i.startedAt.toISOString(),
    duration_ms: Math.round(i.durationMs),
    level_target: i.levelTarget,
    summary: { ...counts, total: cases.length },
    profiles,
    level,
    certified,
    strict,
    cases,
  };
  if (i.agent) report.agent = i.agent;
  if (i.baseline) report.expected_failures = i.baseline;
  return report;
}
