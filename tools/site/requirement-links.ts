/**
 * The requirement → conformance case links: each case of tap-conform names the requirement
 * ids it proves and the spec anchor it tests; this module turns those into the two maps the
 * requirement index shows (spec: conventions#requirement-ids).
 */
import type { Requirement } from '../requirements/chapter.ts';

/** What the site needs of a conformance case (a subset of conformance/case.ts Case). */
export interface CaseRef {
  id: string;
  title: string;
  level: 'MUST' | 'SHOULD' | 'MAY';
  profile: string;
  /** `<chapter>#<anchor>` the case tests. */
  spec: string;
  /** The requirement ids the case proves. */
  requirements: string[];
}

export interface RequirementLinks {
  /** Requirement id → the cases that name it, in case order. */
  checkedBy: Map<string, CaseRef[]>;
  /** `<chapter>#<anchor>` → the cases whose spec anchor it is. */
  bySection: Map<string, CaseRef[]>;
  /** Ids a case names that are not in the requirement index. */
  unknown: Array<{ caseId: string; requirement: string }>;
}

/** Links every requirement to the cases that check it. */
export function linkRequirements(requirements: readonly Requirement[], cases: readonly CaseRef[]): RequirementLinks {
  const known = new Set(requirements.map((r) => r.id));
  const checkedBy = new Map<string, CaseRef[]>();
  const bySection = new Map<string, CaseRef[]>();
  const unknown: RequirementLinks['unknown'] = [];
  for (const c of cases) {
    for (const id of new Set(c.requirements)) {
      if (!known.has(id)) {
        unknown.push({ caseId: c.id, requirement: id });
        continue;
      }
      const list = checkedBy.get(id) ?? [];
      list.push(c);
      checkedBy.set(id, list);
    }
    const list = bySection.get(c.spec) ?? [];
    list.push(c);
    bySection.set(c.spec, list);
  }
  return { checkedBy, bySection, unknown };
}

/** Counts of the requirement index by level, and how many of each have at least one case. */
export function coverage(
  requirements: readonly Requirement[],
  links: RequirementLinks,
): Record<'MUST' | 'SHOULD' | 'MAY', { total: number; checked: number }> {
  const out = { MUST: { total: 0, checked: 0 }, SHOULD: { total: 0, checked: 0 }, MAY: { total: 0, checked: 0 } };
  for (const r of requirements) {
    out[r.level].total++;
    if ((links.checkedBy.get(r.id)?.length ?? 0) > 0) out[r.level].checked++;
  }
  return out;
}
