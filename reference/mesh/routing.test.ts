import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { route, type Candidate, type RouteState } from './routing.ts';

function state(inFlight: Record<string, number> = {}): RouteState {
  const turns = new Map<string, number>();
  return {
    inFlight: (id) => inFlight[id] ?? 0,
    nextTurn: (key) => {
      const t = turns.get(key) ?? 0;
      turns.set(key, t + 1);
      return t;
    },
  };
}

const c = (agentId: string, running: number, max = 4): Candidate => ({ agentId, running, max });
const ids = (cs: Candidate[]) => cs.map((x) => x.agentId);

describe('routing policies (spec: mesh#routing)', () => {
  it('least-loaded picks the lowest load ratio, counting the requester’s own copies in flight (TAP-MESH-003)', () => {
    expect(ids(route('least-loaded', [c('a', 3), c('b', 1), c('c', 2)], state(), { capability: 'x' }))).toEqual(['b']);
    // b reports 1 running, but this requester has 2 more in flight there since the last heartbeat.
    expect(ids(route('least-loaded', [c('a', 2), c('b', 1)], state({ b: 2 }), { capability: 'x' }))).toEqual(['a']);
    // The ratio, not the count: 2 of 8 is lighter than 1 of 2.
    expect(ids(route('least-loaded', [c('a', 1, 2), c('b', 2, 8)], state(), { capability: 'x' }))).toEqual(['b']);
  });

  it('least-loaded takes candidates of equal load in turn', () => {
    const s = state();
    const picks = [1, 2, 3, 4].map(() => ids(route('least-loaded', [c('a', 0), c('b', 0)], s, { capability: 'x' }))[0]);
    expect(picks).toEqual(['a', 'b', 'a', 'b']);
  });

  it('least-loaded with one copy takes what the full ordering puts first, whatever the loads, copies in flight and turn', () => {
    const candidates = fc.uniqueArray(
      fc.record({
        agentId: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
        running: fc.nat({ max: 8 }),
        max: fc.integer({ min: 1, max: 8 }),
      }),
      { selector: (x) => x.agentId, minLength: 1 },
    );
    fc.assert(
      fc.property(
        candidates,
        fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.nat({ max: 4 })),
        fc.nat({ max: 12 }),
        (cs, inFlight, turns) => {
          const one = state(inFlight);
          const all = state(inFlight);
          for (let t = 0; t < turns; t++) {
            one.nextTurn('ll:x');
            all.nextTurn('ll:x');
          }
          const first = route('least-loaded', cs, one, { capability: 'x' });
          const ordered = route('least-loaded', cs, all, { capability: 'x', fanoutLimit: cs.length });
          expect(ids(first)).toEqual(ids(ordered).slice(0, 1));
        },
      ),
    );
  });

  it('round-robin gives successive copies to successive agents in agent-id order, wrapping, full ones last (TAP-MESH-004, TAP-MESH-006)', () => {
    const s = state();
    const cands = [c('c', 0), c('a', 0), c('b', 0)];
    expect([1, 2, 3, 4].map(() => ids(route('round-robin', cands, s, { capability: 'x' }))[0])).toEqual(['a', 'b', 'c', 'a']);
    const full = [c('a', 4), c('b', 0)];
    expect(ids(route('round-robin', full, state(), { capability: 'x' }))).toEqual(['b']);
  });

  it('broadcast goes to every candidate, or to the least loaded fanout_limit of them, never twice to one (TAP-MESH-005)', () => {
    const cands = [c('a', 3), c('b', 0), c('c', 1)];
    expect(ids(route('broadcast', cands, state(), { capability: 'x' })).sort()).toEqual(['a', 'b', 'c']);
    expect(ids(route('broadcast', cands, state(), { capability: 'x', fanoutLimit: 2 }))).toEqual(['b', 'c']);
    expect(ids(route('least-loaded', cands, state(), { capability: 'x', fanoutLimit: 10 })).length).toBe(3);
    expect(route('least-loaded', [], state(), { capability: 'x' })).toEqual([]);
  });
});
