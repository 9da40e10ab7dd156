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
  /** Cases left out by id glob (--skip). */
  skip?: readonly string[];
}

/** The profiles a run covers: the requested ones, or every profile that fits the binding. */
export function profilesOf(sel: Selection, all: readonly Profile[]): Profile[] {
  if (sel.profiles.length > 0) return [...sel.profiles];
  // Each binding's own profiles apply to that binding only; the registry profile only with --registry.
  const own: Partial<Record<Profile, Selection['binding']>> = {
    stdio: 'stdio',
    websocket: 'websocket',
    nats: 'nats',
    'nats-durable': 'nats',
  };
  return all.filter(
    (p) => (own[p] === undefined || sel.binding === undefined || own[p] === sel.binding) && (p !== 'registry' || sel.registry === true),
  );
}

/** The cases of a run, in suite order. */
export function selectCases(cases: readonly Case[], sel: Selection, all: readonly Profile[]): Case[] {
  const profiles = new Set(profilesOf(sel, all));
  return cases.filter(
    (c) =>
      profiles.has(c.profile) &&
      LEVEL_RANK[c.level] <= TARGET_RANK[sel.level] &&
      (sel.only.length === 0 || sel.only.some((g) => globMatch(g, c.id))) &&
      !sel.skip?.some((g) => globMatch(g, c.id)),
  );
}
