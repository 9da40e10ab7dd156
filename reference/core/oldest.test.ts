import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OldestKey } from './oldest.ts';

describe('OldestKey (spec: limits#bounded-tables)', () => {
  it('gives the key a fresh iterator would give, through any mix of adds, re-adds, deletes and evictions', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key: fc.nat({ max: 40 }) }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.nat({ max: 40 }) }),
      fc.record({ kind: fc.constant('evict' as const) }),
      fc.record({ kind: fc.constant('clear' as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const map = new Map<number, number>();
        const oldest = new OldestKey(map);
        for (const o of ops) {
          if (o.kind === 'set') {
            map.delete(o.key);
            map.set(o.key, o.key);
          } else if (o.kind === 'delete') map.delete(o.key);
          else if (o.kind === 'clear') map.clear();
          else if (map.size > 0) {
            const want = map.keys().next().value;
            const got = oldest.take();
            expect(got).toBe(want);
            map.delete(got);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('keeps a bounded set of the latest ids after many evictions', () => {
    const ids = new Set<string>();
    const oldest = new OldestKey(ids);
    for (let i = 0; i < 50_000; i++) {
      ids.add(`m-${i}`);
      if (ids.size > 1000) ids.delete(oldest.take());
    }
    expect(ids.size).toBe(1000);
    expect(ids.has('m-48999')).toBe(false);
    expect(ids.has('m-49000')).toBe(true);
    expect([...ids][0]).toBe('m-49000');
  });
});
