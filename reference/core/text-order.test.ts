import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { textOrder } from './text-order.ts';

describe('textOrder', () => {
  it('orders as sort() without a comparator does', () => {
    fc.assert(
      fc.property(fc.array(fc.string()), (list) => {
        expect([...list].sort(textOrder)).toEqual([...list].sort());
      }),
    );
  });
});
