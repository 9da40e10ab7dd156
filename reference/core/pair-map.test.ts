import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PairMap } from './pair-map.ts';

describe('PairMap', () => {
  it('answers as one map keyed by the pair, through any mix of sets, overwrites and deletes', () => {
    // Few distinct strings, some of them prefixes of others and one with a NUL, so that pairs collide if joined naively.
    const part = fc.constantFrom('', 'a', 'ab', 'b', 'a\u0000b');
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), a: part, b: part, value: fc.nat() }),
      fc.record({ kind: fc.constant('delete' as const), a: part, b: part }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const pairs = new PairMap<number>();
        const model = new Map<string, number>();
        const keyOf = (a: string, b: string) => JSON.stringify([a, b]);
        for (const o of ops) {
          if (o.kind === 'set') {
            pairs.set(o.a, o.b, o.value);
            model.set(keyOf(o.a, o.b), o.value);
          } else {
            expect(pairs.delete(o.a, o.b)).toBe(model.delete(keyOf(o.a, o.b)));
          }
          expect(pairs.size).toBe(model.size);
        }
        for (const a of ['', 'a', 'ab', 'b', 'a\u0000b'])
          for (const b of ['', 'a', 'ab', 'b', 'a\u0000b']) expect(pairs.get(a, b)).toBe(model.get(keyOf(a, b)));
        expect([...pairs.values()].sort()).toEqual([...model.values()].sort());
      }),
    );
  });

  it('keeps no empty inner map behind: a pair deleted twice counts once', () => {
    const pairs = new PairMap<string>();
    pairs.set('p', 't1', 'x');
    expect(pairs.delete('p', 't1')).toBe(true);
    expect(pairs.delete('p', 't1')).toBe(false);
    expect(pairs.size).toBe(0);
    expect([...pairs.values()]).toEqual([]);
  });
});
