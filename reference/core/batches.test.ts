import { describe, expect, it } from 'vitest';
import { batches } from './batches.ts';

describe('batches', () => {
  it('runs queued calls after the current work, in order, in one microtask, and later calls in the next', async () => {
    const seen: string[] = [];
    const later = batches(() => {});
    later(() => seen.push('a'));
    later(() => {
      seen.push('b');
      later(() => seen.push('d'));
    });
    queueMicrotask(() => seen.push('c'));
    seen.push('now');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(seen).toEqual(['now', 'a', 'b', 'c', 'd']);
  });

  it('reports a call that throws and still runs the calls after it', async () => {
    const reported: unknown[] = [];
    const seen: number[] = [];
    const later = batches((err) => reported.push(err));
    const boom = new Error('boom');
    later(() => {
      throw boom;
    });
    later(() => seen.push(2));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(reported).toEqual([boom]);
    expect(seen).toEqual([2]);
  });
});
