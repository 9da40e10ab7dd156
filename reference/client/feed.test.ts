import { describe, expect, it } from 'vitest';
import { Feed } from './feed.ts';

const all = (keep: unknown) => keep !== undefined;

describe('Feed with a limit', () => {
  it('keeps at least the newest `limit` items and at most twice as many', () => {
    const feed = new Feed<number>(4);
    for (let i = 1; i <= 100; i++) feed.push(i);
    expect(feed.items.length).toBeGreaterThanOrEqual(4);
    expect(feed.items.length).toBeLessThanOrEqual(8);
    expect(feed.items.at(-1)).toBe(100);
    expect(feed.items).toEqual(Array.from({ length: feed.items.length }, (_, k) => 100 - feed.items.length + 1 + k));
  });

  it('gives a reader that keeps up every item, in order, however many are forgotten', async () => {
    const feed = new Feed<number>(4);
    const seen: number[] = [];
    const reading = (async () => {
      for await (const n of feed.iterate((x): x is number => all(x))) seen.push(n);
    })();
    for (let i = 1; i <= 50; i++) {
      feed.push(i);
      await Promise.resolve();
      await Promise.resolve();
    }
    feed.end();
    await reading;
    expect(seen).toEqual(Array.from({ length: 50 }, (_, k) => k + 1));
  });

  it('keeps every item a reader has not reached, however many arrive at once', async () => {
    const feed = new Feed<number>(4);
    const seen: number[] = [];
    const reading = (async () => {
      for await (const n of feed.iterate((x): x is number => all(x))) seen.push(n);
    })();
    for (let i = 1; i <= 1000; i++) feed.push(i);
    feed.end();
    await reading;
    expect(seen).toEqual(Array.from({ length: 1000 }, (_, k) => k + 1));
  });

  it('forgets again once the readers have passed, and when a reader stops early', async () => {
    const feed = new Feed<number>(4);
    const it = feed.iterate((x): x is number => all(x))[Symbol.asyncIterator]();
    for (let i = 1; i <= 100; i++) feed.push(i);
    expect(feed.items.length).toBe(100);
    expect((await it.next()).value).toBe(1);
    await it.return!();
    feed.push(101);
    expect(feed.items.length).toBeLessThanOrEqual(8);
    expect(feed.items.at(-1)).toBe(101);
  });

  it('lets a late reader start from the oldest item kept', async () => {
    const feed = new Feed<number>(4);
    for (let i = 1; i <= 20; i++) feed.push(i);
    feed.end();
    const seen: number[] = [];
    for await (const n of feed.iterate((x): x is number => all(x))) seen.push(n);
    expect(seen).toEqual(feed.items);
    expect(seen.at(-1)).toBe(20);
  });
});

describe('Feed.push', () => {
  it('does not add an object that is already the newest item, and adds equal values and other objects', () => {
    const feed = new Feed<object | number>();
    const a = { n: 1 };
    const b = { n: 1 };
    feed.push(a);
    feed.push(a);
    feed.push(b);
    feed.push(7);
    feed.push(7);
    expect(feed.items).toEqual([a, b, 7, 7]);
    expect(feed.items[0]).toBe(a);
    expect(feed.items[1]).toBe(b);
  });
});
