/**
 * Routing policies: which of a submission's candidates get its copies (spec: mesh#routing).
 * Pure: the candidates, the requester's own copies in flight and the turn counters come in, the
 * chosen agents go out.
 */
import { textOrder } from '../core/text-order.ts';

/** A routing policy (spec: mesh#routing). */
export type RoutePolicy = 'least-loaded' | 'round-robin' | 'broadcast';

/** What routing needs of a candidate: its id and the load its entry reports (spec: registry#load). */
export interface Candidate {
  agentId: string;
  running: number;
  max: number;
}

/** The requester's view used by routing: its copies in flight per agent and a turn per capability. */
export interface RouteState {
  inFlight(agentId: string): number;
  /** Returns the turn for `key` and advances it. */
  nextTurn(key: string): number;
}

/** The load ratio of a candidate, counting the requester's own copies in flight (spec: mesh#routing). */
export function loadOf(c: Candidate, state: RouteState): number {
  return (c.running + state.inFlight(c.agentId)) / Math.max(1, c.max);
}

/**
 * Chooses up to `fanoutLimit` distinct candidates under `policy`; `broadcast` without a limit
 * takes all of them. Full candidates come last (spec: mesh#routing, TAP-MESH-003..006).
 */
export function route(
  policy: RoutePolicy,
  candidates: readonly Candidate[],
  state: RouteState,
  options: { capability: string; fanoutLimit?: number },
): Candidate[] {
  if (candidates.length === 0) return [];
  const limit = Math.max(1, Math.min(options.fanoutLimit ?? (policy === 'broadcast' ? candidates.length : 1), candidates.length));
  // Discovery lists entries in agent-id order already: sorting is then only a check.
  const byId = inIdOrder(candidates) ? candidates : [...candidates].sort((a, b) => textOrder(a.agentId, b.agentId));
  if (policy === 'round-robin') {
    const turn = state.nextTurn(`rr:${options.capability}`);
    const rotated = byId.map((_, i) => byId[(turn + i) % byId.length]!);
    // Full agents wait their turn behind those with room (TAP-MESH-006).
    const open = rotated.filter((c) => loadOf(c, state) < 1);
    const full = rotated.filter((c) => loadOf(c, state) >= 1);
    return [...open, ...full].slice(0, limit);
  }
  // least-loaded, and broadcast beyond its limit: ascending load, ties taken in turn.
  const turn = state.nextTurn(`ll:${options.capability}`);
  if (limit === 1) return leastLoaded(byId, turn, state);
  const rotated = byId.map((_, i) => byId[(turn + i) % byId.length]!);
  const loads = new Map(rotated.map((c) => [c.agentId, loadOf(c, state)]));
  const ordered = rotated
    .map((c, i) => ({ c, i }))
    .sort((a, b) => loads.get(a.c.agentId)! - loads.get(b.c.agentId)! || a.i - b.i)
    .map((x) => x.c);
  return ordered.slice(0, limit);
}

function inIdOrder(candidates: readonly Candidate[]): boolean {
  for (let i = 1; i < candidates.length; i++) if (textOrder(candidates[i - 1]!.agentId, candidates[i]!.agentId) > 0) return false;
  return true;
}

/**
 * The one candidate `route` takes under least-loaded with a limit of 1, without sorting: the
 * lowest load, the first in turn among equals (from `turn` on, in the order of `byId`).
 */
function leastLoaded(byId: readonly Candidate[], turn: number, state: RouteState): Candidate[] {
  let best = byId[turn % byId.length]!;
  let bestLoad = loadOf(best, state);
  for (let i = 1; i < byId.length; i++) {
    const c = byId[(turn + i) % byId.length]!;
    const load = loadOf(c, state);
    if (load < bestLoad) {
      best = c;
      bestLoad = load;
    }
  }
  return [best];
}
