/**
 * The report of a run as one value: what every writer (terminal, JSON, JUnit, HTML, badge)
 * renders. Certification is decided here (spec: conformance#certification; see
 * conformance/INTERPRETING.md).
 */
import { type Erratum, type ErratumRef, errataOf, errataSummary, loadErrata, sinceFirstText } from '../errata.ts';
import type { LevelTarget } from '../options.ts';
import type { CaseResult } from '../runner.ts';
import { countVerdicts, type Verdict } from '../verdict.ts';

export const TOOL = 'tap-conform';
export const SPEC_VERSION = '1.0';

/** One entry of an expected-failures baseline (report/baseline.ts reads them). */
export interface BaselineEntry {
  id: string;
  reason: string;
}

/** What a baseline check found: listed failures tolerated, and stale entries. */
export interface BaselineCheck {
  file: string;
  /** Listed cases that still fail: tolerated. */
  matched: string[];
  /** Listed cases that no longer fail, or that no longer exist: the run fails until they are removed. */
  stale: { id: string; why: string }[];
}

/**
 * One case as the report shows it: its result (runner.ts's CaseResult), with the violations and
 * the wire transcript kept only for a case that did not pass or apply.
 */
export type ReportCase = Omit<CaseResult, 'violations' | 'transcript'> &
  Partial<Pick<CaseResult, 'violations' | 'transcript'>> & {
    /** For a FAIL: the errata of 1.0 among its requirements, which an agent certified before them may not follow. */
    errata?: ErratumRef[];
  };

/** How many failures fall under errata of 1.0 since its first text, when any does. */
export interface ErrataCount {
  /** Cases that FAILed. */
  failures: number;
  /** Of them, those with a requirement an erratum added or changed. */
  under_errata: number;
  /** "3 of 11 failures are errata of 1.0 since its first text: …" */
  summary: string;
}

/** What a partial run covered: the filters given and how many of the suite's cases they kept. */
export interface Scope {
  /** Cases run. */
  cases: number;
  /** Cases of the whole suite for the run's bindings. */
  of: number;
  profiles?: string[];
  level?: LevelTarget;
  only?: string[];
  skip?: string[];
}

/** A profile's verdict, or "not run" for a profile none of whose cases the run selected. */
export type ProfileVerdict = Verdict | 'not run';

export interface Report {
  tool: string;
  version: string;
  spec_version: string;
  target: string;
  transport: 'stdio' | 'websocket' | 'nats';
  agent?: { agent_id?: string; name?: string };
  seed: number;
  started_at: string;
  duration_ms: number;
  level_target: LevelTarget;
  /** The bindings the run's targets spoke (one per target). */
  bindings: string[];
  summary: Record<Verdict, number> & { total: number };
  profiles: Record<string, ProfileVerdict>;
  /**
   * The level reached: "TAP 1.1 Certified over stdio — plans not offered; WebSocket not tested; NATS not tested",
   * "TAP 1.0 Certified, non-strict, over …", "Not certified", or, for a run that left cases out,
   * "Focused run: N of M cases — a certification needs the whole suite".
   */
  level: string;
  /** Only a run of the whole suite for its bindings certifies. */
  certified: boolean;
  strict: boolean;
  /** True when the run left out cases of the suite (--only, --profile, --level). */
  partial: boolean;
  /** For a partial run: what it covered. */
  scope?: Scope;
  /** For a certification: what it did not cover ("plans not offered", "WebSocket not tested"). */
  not_covered?: string[];
  expected_failures?: BaselineCheck;
  /**
   * Set when the run stopped early at a fault of the agent that every case would meet (output
   * that is not TAP, an invalid handshake.ack): why, and how many selected cases did not run.
   */
  stopped?: { reason: string; cases_not_run: number };
  /**
   * For a 1.0 run that certifies to the first text of 1.0 only: the failing cases, each of rules
   * that errata added or changed since (they do not keep it from certifying; the level names them).
   */
  first_text_only?: string[];
  /** Present when a FAIL falls under an erratum of 1.0: how many do (spec/1.0/errata.json). */
  errata?: ErrataCount;
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
export function profileVerdict(cases: readonly { verdict: Verdict; level: string }[]): ProfileVerdict {
  if (cases.length === 0) return 'not run';
  const has = (v: Verdict) => cases.some((c) => c.verdict === v);
  if (has('FAIL')) return 'FAIL';
  if (has('ERROR')) return 'ERROR';
  if (cases.some((c) => c.verdict === 'NOT-TESTED' && c.level === 'MUST')) return 'NOT-TESTED';
  if (has('NON-STRICT') || has('NOT-TESTED')) return 'NON-STRICT';
  if (cases.every((c) => c.verdict === 'UNIMPLEMENTED' || c.verdict === 'SKIPPED')) {
    return cases.some((c) => c.verdict === 'UNIMPLEMENTED') ? 'UNIMPLEMENTED' : 'SKIPPED';
  }
  return 'PASS';
}

export interface ReportInput {
  version: string;
  target: string;
  transport: 'stdio' | 'websocket' | 'nats';
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
  /** How many cases the whole suite has for the run's bindings (default: as many as ran). */
  suiteCases?: number;
  /** The filters of the run, reported in the scope of a partial run. */
  filters?: { profiles: readonly string[]; level: LevelTarget; only: readonly string[]; skip?: readonly string[] };
  /** The bindings of the run's targets, when more than `transport` (a combined run). */
  bindings?: readonly string[];
  /** Every binding the suite knows for this kind of agent (default stdio, websocket and nats: the bindings one command line can name). */
  allBindings?: readonly string[];
  /** Why the run stopped early, if it did: it then certifies nothing and is not called partial. */
  stopped?: string;
  /** How many cases the filters selected (default: as many as ran); those of a stopped run that did not run are counted. */
  selectedCases?: number;
  /** The errata of 1.0 (default: spec/1.0/errata.json). */
  errata?: readonly Erratum[];
  /** The version the run certifies, the one the agent negotiated (default SPEC_VERSION). */
  specVersion?: string;
}

const BINDING_NAME: Record<string, string> = { stdio: 'stdio', websocket: 'WebSocket', nats: 'NATS', workspace: 'the workspace binding' };

/** A binding's name in a sentence. */
export function bindingName(b: string): string {
  return BINDING_NAME[b] ?? b;
}

/** Words joined as a list: "a", "a and b", "a, b and c". */
export function listOf(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}

/** "1 case", "2 cases": a count with its noun, singular or plural. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

/** How a profile that the agent does not offer is named in the level line, where its name alone says little. */
const OFFERED: Record<string, string> = {
  'nats-durable': 'nats-durable (durable queues)',
  security: 'security (client certificates and tokens)',
};

/**
 * What a certification did not cover: optional profiles the agent does not offer, other cases
 * it does not implement, and the bindings no target spoke.
 */
function notCovered(profiles: Record<string, ProfileVerdict>, cases: readonly ReportCase[], untested: readonly string[]): string[] {
  const out: string[] = [];
  const idle = Object.entries(profiles)
    .filter(([, v]) => v === 'UNIMPLEMENTED')
    .map(([p]) => p);
  if (idle.length) out.push(`${listOf(idle.map((p) => OFFERED[p] ?? p))} not offered`);
  // Other cases that did not apply, one entry per reason: "2 cases UNIMPLEMENTED (the agent card …)".
  const reasons = new Map<string, number>();
  for (const c of cases)
    if (c.verdict === 'UNIMPLEMENTED' && !idle.includes(c.profile)) reasons.set(c.detail, (reasons.get(c.detail) ?? 0) + 1);
  for (const [why, n] of reasons) out.push(`${count(n, 'case')} UNIMPLEMENTED (${bracketed(why)})`);
  for (const b of untested) out.push(`${bindingName(b)} not tested`);
  return out;
}

/**
 * A reason as the level line brackets it: its own brackets, which a reason made of runtime text (an
 * agent's message, a server's error) may hold, become square ones, and its lines one, so that the
 * line's own pair still closes where the reason ends.
 */
function bracketed(why: string): string {
  return why
    .replace(/\(/g, '[')
    .replace(/\)/g, ']')
    .replace(/\s*\n\s*/g, ' ');
}

/** Builds the report value. */
export function buildReport(i: ReportInput): Report {
  const specVersion = i.specVersion ?? SPEC_VERSION;
  const cases: ReportCase[] = i.results.map(({ violations, transcript, ...result }) => {
    const c: ReportCase = { ...result };
    if (c.verdict !== 'PASS' && c.verdict !== 'SKIPPED' && c.verdict !== 'UNIMPLEMENTED') {
      if (violations.length) c.violations = violations;
      c.transcript = transcript;
    }
    // The errata of 1.0 speak to agents certified to its first text; a run of 1.1 is held to the text as it is.
    if (c.verdict === 'FAIL' && specVersion === '1.0') {
      const errata = errataOf(c.requirements, i.errata ?? loadErrata());
      if (errata.length) c.errata = errata;
    }
    return c;
  });
  const counts = countVerdicts(cases.map((c) => c.verdict));
  const profiles: Record<string, ProfileVerdict> = {};
  for (const p of i.allProfiles) profiles[p] = profileVerdict(cases.filter((c) => c.profile === p));
  const bindings = [...(i.bindings ?? [i.transport])];
  const suiteCases = i.suiteCases ?? cases.length;
  const filtered = (i.selectedCases ?? cases.length) < suiteCases;
  const partial = i.stopped === undefined ? cases.length < suiteCases : filtered;
  // A 1.0 agent that fails only cases of rules its errata added or changed since the first text
  // certifies to that first text, and the level names the errata it fails (spec/1.0/errata.json).
  const errata = i.errata ?? loadErrata();
  // A case is of the rule of its first requirement (its level and anchor come from it).
  const amended = (c: ReportCase) => c.verdict === 'FAIL' && specVersion === '1.0' && sinceFirstText(c.requirements.slice(0, 1), errata);
  const firstTextOnly = cases.filter(amended);
  const clean = cases.length > 0 && !cases.some((c) => blocksCertified(c) && !amended(c));
  // spec: conformance#verdicts — certified when every profile is PASS; certified, non-strict when
  // some are NON-STRICT and none is worse. Only the whole suite certifies, and a stopped run never.
  const certified = clean && !partial && i.stopped === undefined;
  const strict = certified && i.levelTarget !== 'must' && !cases.some((c) => blocksStrict(c) && !amended(c));
  const untested = (i.allBindings ?? ['stdio', 'websocket', 'nats']).filter((b) => !bindings.includes(b));
  const gaps = certified ? notCovered(profiles, cases, untested) : [];
  const failedErrata = [...new Set(firstTextOnly.flatMap((c) => (c.errata ?? []).map((e) => e.id)))];
  if (certified && failedErrata.length > 0)
    gaps.unshift(`fails ${count(failedErrata.length, 'erratum', 'errata')} of 1.0 since its first text (${failedErrata.join(', ')})`);
  const over = `${firstTextOnly.length > 0 && certified ? 'to its first text, ' : ''}over ${listOf(bindings.map(bindingName))}`;
  const level =
    i.stopped !== undefined
      ? 'Not certified'
      : partial
        ? `Focused run: ${cases.length} of ${count(suiteCases, 'case')} — a certification needs the whole suite`
        : strict
          ? `TAP ${specVersion} Certified ${over}${gaps.length ? ` — ${gaps.join('; ')}` : ''}`
          : certified
            ? `TAP ${specVersion} Certified, non-strict, ${over}${gaps.length ? ` — ${gaps.join('; ')}` : ''}`
            : 'Not certified';
  const report: Report = {
    tool: TOOL,
    version: i.version,
    spec_version: specVersion,
    target: i.target,
    transport: i.transport,
    bindings,
    seed: i.seed,
    started_at: i.startedAt.toISOString(),
    duration_ms: Math.round(i.durationMs),
    level_target: i.levelTarget,
    summary: { ...counts, total: cases.length },
    profiles,
    level,
    certified,
    strict,
    partial,
    cases,
  };
  if (partial) {
    const scope: Scope = { cases: i.selectedCases ?? cases.length, of: suiteCases };
    if (i.filters?.profiles.length) scope.profiles = [...i.filters.profiles];
    if (i.filters && i.filters.level !== 'may') scope.level = i.filters.level;
    if (i.filters?.only.length) scope.only = [...i.filters.only];
    if (i.filters?.skip?.length) scope.skip = [...i.filters.skip];
    report.scope = scope;
  }
  if (certified) report.not_covered = gaps;
  if (certified && firstTextOnly.length > 0) report.first_text_only = firstTextOnly.map((c) => c.id);
  if (i.stopped !== undefined)
    report.stopped = { reason: i.stopped, cases_not_run: Math.max(0, (i.selectedCases ?? cases.length) - cases.length) };
  const failures = cases.filter((c) => c.verdict === 'FAIL');
  const underErrata = failures.filter((c) => c.errata).length;
  const summary = errataSummary(underErrata, failures.length);
  if (summary) report.errata = { failures: failures.length, under_errata: underErrata, summary };
  if (i.agent) report.agent = i.agent;
  if (i.baseline) report.expected_failures = i.baseline;
  return report;
}
