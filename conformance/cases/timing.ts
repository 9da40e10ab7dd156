/**
 * Timed rules (spec: conformance#timing): a MUST that an event happens within the allowance and
 * never early, and a SHOULD that it happens punctually, judged on one observation that the two
 * cases share (made once per run by whichever runs first).
 */
import { defineCase, type Case, type CaseHead, type Needs, type Profile } from '../case.ts';
import type { CaseContext } from '../context.ts';
import { judgeOccurrence, judgePunctuality, timingWindow, type Observed, type Outcome } from '../verdict.ts';

/** An observation of a timed event: `problem` when something kept it from being made. */
export interface Timed {
  problem?: Outcome;
}

/** A timed rule and the two cases that judge it. */
export interface TimedRule<T extends Timed> {
  profile: Profile;
  needs?: Needs;
  budgetMs?: number;
  /** The name the two cases share the observation under. */
  key: string;
  observe: (ctx: CaseContext) => Promise<T>;
  /** The nominal time of the event in ms. */
  nominalMs: number | ((r: T) => number);
  /** When the event was observed (undefined: it never came). */
  at: (r: T) => Observed;
  /** The event, as the verdicts name it. */
  what: string | ((r: T) => string);
  /**
   * The MUST case: the event comes within the allowance, never early (with `upperBound`, earlier
   * is allowed: the nominal time is a limit); `also` judges the rest once the timing passed.
   */
  occurrence: CaseHead & { what?: string; upperBound?: boolean; also?: (r: T) => Outcome | null };
  /** The SHOULD case: the event comes punctually. */
  punctuality: CaseHead & { what?: string };
}

/** The MUST and the SHOULD case of a timed rule. */
export function timedCases<T extends Timed>(rule: TimedRule<T>): Case[] {
  const { occurrence, punctuality, profile, needs, budgetMs } = rule;
  const common = { profile, ...(needs ? { needs } : {}), ...(budgetMs !== undefined ? { budgetMs } : {}) };
  const observed = async (ctx: CaseContext) => {
    const r = await ctx.shared(rule.key, rule.observe);
    const nominal = typeof rule.nominalMs === 'number' ? rule.nominalMs : rule.nominalMs(r);
    const what = typeof rule.what === 'string' ? rule.what : rule.what(r);
    return { r, window: timingWindow(nominal, ctx.env.timeScale), what };
  };
  const { what: mustWhat, upperBound, also, ...mustHead } = occurrence;
  const { what: shouldWhat, ...shouldHead } = punctuality;
  return [
    defineCase({
      ...mustHead,
      ...common,
      run: async (ctx) => {
        const { r, window, what } = await observed(ctx);
        if (r.problem) return r.problem;
        const o = judgeOccurrence(upperBound ? { ...window, earliestMs: 0 } : window, rule.at(r), mustWhat ?? what);
        if (o.verdict !== 'PASS' || !also) return o;
        return also(r) ?? o;
      },
    }),
    defineCase({
      ...shouldHead,
      ...common,
      run: async (ctx) => {
        const { r, window, what } = await observed(ctx);
        if (r.problem) return r.problem;
        return judgePunctuality(window, rule.at(r), shouldWhat ?? what);
      },
    }),
  ];
}
