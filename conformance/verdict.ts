/**
 * Verdicts and outcomes: what a conformance case concludes, as a value (spec: conformance#verdicts).
 */

/** The verdicts a case can reach, from best to worst. */
export const VERDICTS = ['PASS', 'NON-STRICT', 'UNIMPLEMENTED', 'SKIPPED', 'NOT-TESTED', 'FAIL', 'ERROR'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** The level of a requirement, as RFC 2119 keywords. */
export type Level = 'MUST' | 'SHOULD' | 'MAY';
export const LEVELS: readonly Level[] = ['MUST', 'SHOULD', 'MAY'];

/** Why a peer did not answer, found by pinging it after the wait ran out. */
export type Silence = 'crashed' | 'hung' | 'ignoring';

/** What a case concluded. `expected` and `observed` are for people, one or a few lines each. */
export interface Outcome {
  verdict: Verdict;
  /** One line: what happened. */
  detail: string;
  expected?: string;
  observed?: string;
  /** Set when the verdict depends only on timing; such a verdict is never harsher than NON-STRICT. */
  timingOnly?: boolean;
  /** Set on a missing reply. */
  silence?: Silence;
  /** The requirements the failure breaks, when fewer than the case cites (a property names the one it broke). */
  requirements?: string[];
}

/** The case passed. */
export function pass(detail = 'as required'): Outcome {
  return { verdict: 'PASS', detail };
}

/** The agent broke the requirement. */
export function fail(detail: string, expected?: string, observed?: string): Outcome {
  const o: Outcome = { verdict: 'FAIL', detail };
  if (expected !== undefined) o.expected = expected;
  if (observed !== undefined) o.observed = observed;
  return o;
}

/** A SHOULD was missed. */
export function nonStrict(detail: string, expected?: string, observed?: string): Outcome {
  return { ...fail(detail, expected, observed), verdict: 'NON-STRICT' };
}

/** The agent does not declare the optional feature the case needs. */
export function unimplemented(detail: string): Outcome {
  return { verdict: 'UNIMPLEMENTED', detail };
}

/** The case does not apply to this run (transport, missing key, and so on). */
export function skipped(detail: string): Outcome {
  return { verdict: 'SKIPPED', detail };
}

/** The agent lacks a tap.test.* conformance capability the case needs; counts against the agent. */
export function notTested(detail: string): Outcome {
  return { verdict: 'NOT-TESTED', detail };
}

/** The harness failed on its own; never the agent's fault. */
export function harnessError(detail: string): Outcome {
  return { verdict: 'ERROR', detail };
}

/** Position of a verdict in VERDICTS: higher is worse. */
export function severity(v: Verdict): number {
  return VERDICTS.indexOf(v);
}

/** The worse of two verdicts. */
export function worse(a: Verdict, b: Verdict): Verdict {
  return severity(a) >= severity(b) ? a : b;
}

/**
 * Applies the timing rule (spec: conformance#timing): a verdict that depends only on timing is
 * never harsher than NON-STRICT.
 */
export function capTiming(o: Outcome): Outcome {
  if (!o.timingOnly) return o;
  if (o.verdict === 'FAIL') return { ...o, verdict: 'NON-STRICT' };
  return o;
}

/**
 * A SHOULD case that the agent misses is NON-STRICT, not FAIL; a MAY case the agent does not
 * exhibit is UNIMPLEMENTED (an exhibited but broken MAY behaviour stays FAIL).
 */
export function applyLevel(level: Level, o: Outcome): Outcome {
  if (level === 'SHOULD' && o.verdict === 'FAIL') return { ...o, verdict: 'NON-STRICT' };
  return o;
}

/**
 * True for verdicts that keep an agent from certification when a MUST case reaches them.
 * NON-STRICT (a missed SHOULD, or a timing-only miss) keeps it only from the strict level.
 */
export function blocksCertification(v: Verdict): boolean {
  return v === 'FAIL' || v === 'ERROR' || v === 'NOT-TESTED';
}

/** Counts per verdict, every verdict present (zero when absent). */
export function countVerdicts(verdicts: Iterable<Verdict>): Record<Verdict, number> {
  const counts = Object.fromEntries(VERDICTS.map((v) => [v, 0])) as Record<Verdict, number>;
  for (const v of verdicts) counts[v]++;
  return counts;
}

/**
 * Timing of an event that must happen after `nominalMs` (spec: conformance#timing, the
 * two-requirement rule). The MUST half fails only when the event came before the nominal
 * time, never came within nominal × 3 + 2 s (scaled), or came out of order; the SHOULD half
 * is missed (NON-STRICT) when the event came later than the punctuality tolerance.
 */
export interface TimingWindow {
  nominalMs: number;
  /** Earliest acceptable time: the nominal time minus a small clock tolerance. */
  earliestMs: number;
  /** The MUST deadline: nominal × 3 + 2 s, scaled by --time-scale. */
  latestMs: number;
  /** The SHOULD punctuality bound: (nominal × 1.2 + 0.5 s), scaled. */
  punctualMs: number;
}

/** Clock tolerance for "not before the nominal time": timers may fire a little early. */
export const EARLY_TOLERANCE_MS = 50;

/** The timing window of a rule whose nominal delay is `nominalMs`, under `timeScale`. */
export function timingWindow(nominalMs: number, timeScale = 1): TimingWindow {
  return {
    nominalMs,
    earliestMs: Math.max(0, nominalMs - EARLY_TOLERANCE_MS),
    latestMs: (nominalMs * 3 + 2000) * timeScale,
    punctualMs: (nominalMs * 1.2 + 500) * timeScale,
  };
}

/**
 * When an event happened relative to the instant its clock started, as far as the harness can
 * tell: exactly, or within [low, high] when the start is only known to lie between two of its
 * own observations (the agent's clock started somewhere between a send and the next reply).
 */
export type Observed = number | { low: number; high: number } | undefined;

function bounds(o: Exclude<Observed, undefined>): { low: number; high: number } {
  return typeof o === 'number' ? { low: o, high: o } : o;
}

function ms(o: Exclude<Observed, undefined>): string {
  const b = bounds(o);
  return b.low === b.high ? `${Math.round(b.low)} ms` : `${Math.round(b.low)}–${Math.round(b.high)} ms`;
}

/**
 * Judges the MUST half of a timed rule: occurrence within the allowance, never early. An event is
 * early only if even the latest possible reading is before the nominal time, and late only if
 * even the earliest possible reading is after the allowance.
 */
export function judgeOccurrence(w: TimingWindow, observed: Observed, what: string): Outcome {
  if (observed === undefined) {
    return fail(
      `${what} never came within ${Math.round(w.latestMs)} ms (nominal ${w.nominalMs} ms × 3 + 2 s)`,
      `${what} after about ${w.nominalMs} ms`,
      'nothing',
    );
  }
  const b = bounds(observed);
  if (b.high < w.earliestMs) {
    return fail(
      `${what} came too early: after ${ms(observed)}, before the nominal ${w.nominalMs} ms`,
      `${what} no earlier than ${w.nominalMs} ms`,
      ms(observed),
    );
  }
  if (b.low > w.latestMs) {
    return fail(
      `${what} came after ${ms(observed)}, beyond ${Math.round(w.latestMs)} ms`,
      `${what} within ${Math.round(w.latestMs)} ms`,
      ms(observed),
    );
  }
  return pass(`${what} after ${ms(observed)} (nominal ${w.nominalMs} ms)`);
}

/** The detail of judgePunctuality's miss, as reports carry it: a verdict on timing alone. */
export const PUNCTUALITY_MISS = /; punctual is within \d+ ms$/;

/** Judges the SHOULD half of a timed rule: punctuality; late is NON-STRICT and timing-only. */
export function judgePunctuality(w: TimingWindow, observed: Observed, what: string): Outcome {
  if (observed === undefined || bounds(observed).low > w.punctualMs) {
    const seen = observed === undefined ? 'not at all' : `after ${ms(observed)}`;
    return {
      ...nonStrict(`${what} came ${seen}; punctual is within ${Math.round(w.punctualMs)} ms`),
      timingOnly: true,
    };
  }
  return pass(`${what} after ${ms(observed)}, punctual (nominal ${w.nominalMs} ms)`);
}

/** A reading known to lie between `low` and `high` ms. */
export function between(low: number, high: number): Observed {
  return { low: Math.min(low, high), high: Math.max(low, high) };
}

/** A value the agent was supposed to provide, or the outcome explaining why it did not. */
export type Got<T> = { ok: true; value: T } | { ok: false; outcome: Outcome };

/** Wraps a value the agent provided. */
export function got<T>(value: T): Got<T> {
  return { ok: true, value };
}

/** Wraps the outcome that ends a case early. */
export function miss<T = never>(outcome: Outcome): Got<T> {
  return { ok: false, outcome };
}
