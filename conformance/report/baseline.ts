/**
 * Expected-failures baselines: a JSON list of `{ "id", "reason" }` naming cases an agent is
 * known to fail. Listed failures do not fail the run; a listed case that now passes (a stale
 * entry) does, so the baseline shrinks as the agent improves.
 */
import { readFileSync } from 'node:fs';
import type { LevelTarget } from '../options.ts';
import type { Verdict } from '../verdict.ts';
import { required, type BaselineCheck, type BaselineEntry } from './model.ts';

export type { BaselineCheck, BaselineEntry } from './model.ts';

/** Reads and checks a baseline file; throws an Error with a one-line reason when it is unusable. */
export function readBaseline(file: string): BaselineEntry[] {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(e.code === 'ENOENT' ? `${file}: no such file` : `${file} is not valid JSON: ${e.message}`);
  }
  const list = Array.isArray(data) ? data : (data as { expected_failures?: unknown })?.expected_failures;
  if (!Array.isArray(list)) throw new Error(`${file} must hold a JSON array of { "id", "reason" }`);
  return list.map((e, i) => {
    if (typeof e === 'string') return { id: e, reason: '' };
    const o = e as Partial<BaselineEntry>;
    if (typeof o?.id !== 'string') throw new Error(`${file}: entry ${i} has no string "id"`);
    return { id: o.id, reason: typeof o.reason === 'string' ? o.reason : '' };
  });
}

/**
 * Compares results with a baseline. `known` holds every case id of the suite: an entry naming no
 * case is stale; an entry for a case this run did not select is left alone.
 */
export function checkBaseline(
  file: string,
  entries: readonly BaselineEntry[],
  results: readonly { id: string; verdict: Verdict; level: string }[],
  known: ReadonlySet<string>,
  target: LevelTarget,
): BaselineCheck {
  const byId = new Map(results.map((r) => [r.id, r]));
  const check: BaselineCheck = { file, matched: [], stale: [] };
  for (const e of entries) {
    if (!known.has(e.id)) {
      check.stale.push({ id: e.id, why: 'no case has this id' });
      continue;
    }
    const r = byId.get(e.id);
    if (!r) continue;
    if (required(r, target)) check.matched.push(e.id);
    else check.stale.push({ id: e.id, why: `now ${r.verdict}: remove it from the baseline` });
  }
  return check;
}

/** Case results that fail the run once the baseline is applied. */
export function unexpectedFailures<T extends { id: string; verdict: Verdict; level: string }>(
  results: readonly T[],
  target: LevelTarget,
  baseline?: BaselineCheck,
): T[] {
  const tolerated = new Set(baseline?.matched ?? []);
  return results.filter((r) => required(r, target) && !tolerated.has(r.id));
}
