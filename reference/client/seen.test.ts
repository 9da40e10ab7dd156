import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { counterAfterDot, SeenIds } from './seen.ts';

/** The ids the reference numbers: a prefix, a dot and a base-36 counter. */
const numbered = (n: number) => `Ab_c-9.${n.toString(36)}`;

describe('the requester duplicate table (spec: idempotency#duplicate-messages)', () => {
  it('answers as a set of every id added while nothing is forgotten, whatever forms the ids take', () => {
    // Numbered ids of the session's prefix (in base 36 and in base 10) and of others, and ids a counter cannot be read from.
    const id = fc.oneof(
      fc.nat({ max: 50 }).map(numbered),
      fc.nat({ max: 50 }).map((n) => `Ab_c-9.${n}`),
      fc.nat({ max: 40 }).map((n) => `other.${n}`),
      fc.constantFrom(
        'Ab_c-9.01',
        'Ab_c-9.',
        'Ab_c-9.1.2',
        'Ab_c-9.A',
        'Ab_c-9.+1',
        '.5',
        'x',
        'Ab_c-9',
        'Ab_c-9.x-5',
        'Ab_c-9.12345678901',
      ),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), id), { maxLength: 150 }), (ops) => {
        const seen = new SeenIds(256);
        const model = new Set<string>();
        for (const [add, x] of ops) {
          if (add) {
            seen.add(x);
            model.add(x);
          }
          expect(seen.has(x), x).toBe(model.has(x));
        }
        for (const x of model) expect(seen.has(x), x).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('always remembers the latest limit ids, however sparse, late or mixed the counters', () => {
    const limit = 32;
    const id = fc.oneof(
      { weight: 4, arbitrary: fc.nat({ max: 400 }).map(numbered) },
      { weight: 1, arbitrary: fc.nat({ max: 60 }).map((n) => `free-${n}`) },
    );
    fc.assert(
      fc.property(fc.uniqueArray(id, { minLength: 1, maxLength: 300 }), (ids) => {
        // As a client adds them: each id once, when it is new.
        const seen = new SeenIds(limit);
        for (let i = 0; i < ids.length; i++) {
          seen.add(ids[i]!);
          for (const x of ids.slice(Math.max(0, i + 1 - limit), i + 1)) expect(seen.has(x), `${x} after ${i + 1} ids`).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('grows its window rather than forget an id fewer than limit ids old', () => {
    const limit = 1024;
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 6000 }), { minLength: 1100, maxLength: 1300 }), fc.nat({ max: 40 }), (counters, stride) => {
        const seen = new SeenIds(limit);
        // As a client adds them: each id once, when it is new.
        const ids = [...new Set(counters.map((c, i) => numbered(i * stride + c)))];
        for (let i = 0; i < ids.length; i++) {
          seen.add(ids[i]!);
          if (i % 97 === 0 || i === ids.length - 1)
            for (const x of ids.slice(Math.max(0, i + 1 - limit), i + 1)) expect(seen.has(x), `${x} after ${i + 1} ids`).toBe(true);
        }
      }),
      { numRuns: 20 },
    );
  });

  it('keeps a window as small as the sender allows: small for a few ids, doubled for spread counters, given up past limit', () => {
    const quiet = new SeenIds();
    quiet.add('handshake-id');
    for (let n = 1; n <= 200; n++) quiet.add(numbered(n));
    expect(quiet.windowSlots).toBe(256);
    // 600 consecutive counters: the window doubles to hold them all, each fewer than limit ids old.
    const dense = new SeenIds(1024);
    for (let n = 1; n <= 600; n++) dense.add(numbered(n));
    expect(dense.windowSlots).toBe(1024);
    for (let n = 1; n <= 600; n++) expect(dense.has(numbered(n)), String(n)).toBe(true);
    // 300 counters three apart span 900: the window doubles twice to hold them all.
    const spread = new SeenIds(1024);
    for (let n = 1; n <= 300; n++) spread.add(numbered(n * 3));
    expect(spread.windowSlots).toBe(1024);
    for (let n = 1; n <= 300; n++) expect(spread.has(numbered(n * 3)), String(n)).toBe(true);
    const sparse = new SeenIds(1024);
    for (let n = 1; n <= 100; n++) sparse.add(numbered(n * 100));
    expect(sparse.windowSlots).toBe(0);
    for (let n = 1; n <= 100; n++) expect(sparse.has(numbered(n * 100))).toBe(true);
  });

  it('keeps a dense sender in its window and forgets what is older than limit ids', () => {
    const seen = new SeenIds(64);
    for (let n = 1; n <= 200; n++) seen.add(numbered(n));
    for (let n = 137; n <= 200; n++) expect(seen.has(numbered(n)), String(n)).toBe(true);
    expect(seen.has(numbered(136))).toBe(false);
    expect(seen.has(numbered(201))).toBe(false);
    // Counters skipped within the window were never added.
    seen.add(numbered(210));
    for (let n = 201; n < 210; n++) expect(seen.has(numbered(n)), String(n)).toBe(false);
    expect(seen.has(numbered(210))).toBe(true);
  });

  it('starts afresh when cleared', () => {
    const seen = new SeenIds(16);
    seen.add('p.1');
    for (let i = 0; i < 20; i++) seen.add(`free-${i}`);
    expect(seen.has('free-3')).toBe(false);
    expect(seen.has('free-4')).toBe(true);
    expect(seen.has('p.1')).toBe(true);
    seen.clear();
    expect(seen.has('p.1')).toBe(false);
    seen.add('q.7');
    expect(seen.has('q.7')).toBe(true);
    expect(seen.has('p.7')).toBe(false);
  });

  it('reads a counter only from its one plain form', () => {
    expect(counterAfterDot('a.0')).toBe(0);
    expect(counterAfterDot('a.b.1z')).toBe(71);
    expect(counterAfterDot('a.zzzzzzzzzz')).toBe(36 ** 10 - 1);
    for (const id of ['a.', '.1', 'a.01', 'a.1A', 'a.-1', 'a.1_', 'a', 'a.12345678901']) expect(counterAfterDot(id), id).toBe(-1);
  });
});
