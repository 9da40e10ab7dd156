import { describe, expect, it } from 'vitest';
import { type MutantResult, type MutationReport, mergeReports } from './mutation.ts';

const result = (id: string, caught: boolean, byCiting: boolean): MutantResult => ({
  id,
  requirement: id.split(':')[0]!,
  breaks: 'a rule',
  failed: caught ? ['some.case'] : [],
  citing: byCiting ? ['some.case'] : [],
  ran_citing: ['some.case'],
  caught,
  caught_by_citing: byCiting,
  fired: 1,
  ms: 10,
});

const report = (results: MutantResult[], extra: Partial<MutationReport> = {}): MutationReport => ({
  mutants: results.length,
  caught: 0,
  caught_by_citing: 0,
  score: 0,
  citing_score: 0,
  survivors: results.filter((r) => !r.caught_by_citing).map((r) => r.id),
  explained: [],
  unexplained: [],
  unstable: [],
  results,
  ...extra,
});

describe('mergeReports (the mutation run in chunks of child processes)', () => {
  it('scores the mutants of every chunk together and keeps each survivor, reason and unstable case once', () => {
    const merged = mergeReports([
      report([result('TAP-A-001:x', true, true), result('TAP-A-002:y', true, false)], {
        explained: [{ mutant: 'TAP-A-002:y', reason: 'why' }],
        unstable: ['c.one (memory: FAIL)'],
      }),
      report([result('TAP-B-001:z', false, false), result('TAP-B-002:w', true, true)], {
        unexplained: ['TAP-B-001:z'],
        unstable: ['c.one (memory: FAIL)'],
      }),
    ]);
    expect(merged.mutants).toBe(4);
    expect(merged.caught).toBe(3);
    expect(merged.caught_by_citing).toBe(2);
    expect(merged.score).toBe(0.75);
    expect(merged.citing_score).toBe(0.5);
    expect(merged.survivors).toEqual(['TAP-A-002:y', 'TAP-B-001:z']);
    expect(merged.explained).toEqual([{ mutant: 'TAP-A-002:y', reason: 'why' }]);
    expect(merged.unexplained).toEqual(['TAP-B-001:z']);
    expect(merged.unstable).toEqual(['c.one (memory: FAIL)']);
    expect(merged.results.map((r) => r.id)).toEqual(['TAP-A-001:x', 'TAP-A-002:y', 'TAP-B-001:z', 'TAP-B-002:w']);
  });
});
