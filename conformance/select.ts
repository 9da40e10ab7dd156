/** Which cases a run executes: by binding, profile, level and id glob. */
import type { Case, Profile } from './case.ts';
import { globMatch, type LevelTarget } from './options.ts';
import type { Level } from './verdict.ts';

const LEVEL_RANK: Record<Level, number> = { MUST: 0, SHOULD: 1, MAY: 2 };
const TARGET_RANK: Record<LevelTarget, number> = { must: 0, should: 1, may: 2 };

export interface Selection {
  binding?: 'stdio' | 'websocket' | 'nats';
  /** Whether the run was given the agent's mesh registry (the registry profile applies then). */
  registry?: boolean;
  profiles: readonly Profile[];
  level: LevelTarget;
  only: readonly string[];
}

/** The profiles a run covers: the requested ones, or every profile that fits the binding. */
export function profilesOf(sel: Selection, all: readonly Profile[]): Profile[] {
  if (sel.profiles.length > 0) return [...sel.profiles];
  // Each binding's own profile applies to that binding only.
  const own: readonly Profile[] = ['stdio', 'websocket', 'nats'];
  return all.filter(
    (p) => (!own.includes(p) || sel.binding === undefined || p === sel.binding) && (p !== 'registry' || sel.registry === true),
  );
}

/** The cases of a run, in suite order. */
export function selectCases(cases: readonly Case[], sel: Selection, all: readonly Profile[]): Case[] {
  const profiles = new Set(profilesOf(sel, all));
  return cases.filter(
    (c) =>
      profiles.has(c.profile) &&
      LEVEL_RANK[c.level] <= TARGET_RANK[sel.level] &&
      (sel.only.length === 0 || sel.only.some((g) => globMatch(g, c.id))),
  );
}
