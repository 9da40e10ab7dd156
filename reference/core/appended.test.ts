import { describe, expect, it } from 'vitest';
import { appended } from './appended.ts';

describe('appended', () => {
  it('makes a one-item array of an empty list, leaving the empty one as it was', () => {
    const empty: number[] = [];
    const list = appended(empty, 7);
    expect(list).toEqual([7]);
    expect(list).not.toBe(empty);
    expect(empty).toEqual([]);
  });

  it('pushes onto a list that has items and returns that same list', () => {
    const list = [1];
    expect(appended(list, 2)).toBe(list);
    expect(appended(appended(list, 3), 4)).toEqual([1, 2, 3, 4]);
  });
});
