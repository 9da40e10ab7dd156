import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { MsgHdrs } from '@nats-io/transport-node';
import { FLUSH_AT } from '../writer.ts';
import { flushDue, Outbox } from './outbox.ts';

const NO_HEADERS = {} as MsgHdrs;
const bytes = (s: string): Uint8Array => Buffer.from(s);
/** A 400-byte message named `name` (an answer of a task), and the names of the messages published. */
const answer = (name: string): Uint8Array => bytes(name.padEnd(400, '.'));
const names = (list: string[]): string[] => list.map((t) => t.replace(/\.+$/, ''));

/** An outbox that records what it published, and why it was lost. */
function recording(fail?: (text: string) => boolean) {
  const published: string[] = [];
  const lost: string[] = [];
  const box = new Outbox(
    (data) => {
      const text = Buffer.from(data).toString();
      if (fail?.(text)) throw new Error(`no room for ${text}`);
      published.push(text);
    },
    (reason) => lost.push(reason),
  );
  return { box, published, lost };
}

describe('the outboxes of the NATS transport (one write per turn)', () => {
  it('publishes what every outbox queued in a turn at its end, each in its order', async () => {
    const a = recording();
    const b = recording();
    a.box.post(bytes('a1'), NO_HEADERS);
    b.box.post(bytes('b1'), NO_HEADERS);
    a.box.post(bytes('a2'), NO_HEADERS);
    expect([a.published, b.published]).toEqual([[], []]);
    await nextTurn();
    expect([a.published, b.published]).toEqual([['a1', 'a2'], ['b1']]);
    // A later turn is published at its own end.
    b.box.post(bytes('b2'), NO_HEADERS);
    await nextTurn();
    expect(b.published).toEqual(['b1', 'b2']);
  });

  it('publishes the outboxes of a turn in one callback: the client, which writes from a microtask, writes them at once', async () => {
    // The NATS client writes what was published from a microtask queued by the first publish.
    const writes: string[][] = [];
    let pending: string[] | undefined;
    const client = (text: string): void => {
      if (!pending) {
        pending = [];
        queueMicrotask(() => {
          writes.push(pending!);
          pending = undefined;
        });
      }
      pending.push(text);
    };
    const boxes = ['a', 'b', 'c'].map((name) => ({
      name,
      box: new Outbox(
        (data) => client(Buffer.from(data).toString()),
        () => {},
      ),
    }));
    for (const { name, box } of boxes) box.post(bytes(name), NO_HEADERS);
    await nextTurn();
    expect(writes).toEqual([['a', 'b', 'c']]);
  });

  it('drops the rest of an outbox whose publish fails and says why, and publishes the other outboxes', async () => {
    const a = recording((t) => t === 'a2');
    const b = recording();
    for (const t of ['a1', 'a2', 'a3']) a.box.post(bytes(t), NO_HEADERS);
    b.box.post(bytes('b1'), NO_HEADERS);
    await nextTurn();
    expect(a.published).toEqual(['a1']);
    expect(a.lost).toEqual(['could not publish: no room for a2']);
    expect(b.published).toEqual(['b1']);
  });

  it('publishes every due outbox when one of them throws, then throws that error; the thrower is due again when it posts', async () => {
    const thrower = new Outbox(
      () => {
        throw new Error('closed');
      },
      () => {
        throw new Error('a broken lost callback');
      },
    );
    const b = recording();
    thrower.post(bytes('x'), NO_HEADERS);
    b.box.post(bytes('b1'), NO_HEADERS);
    expect(flushDue).toThrow('a broken lost callback');
    expect(b.published).toEqual(['b1']);
    await nextTurn(); // the end-of-turn callback finds nothing left
    b.box.post(bytes('b2'), NO_HEADERS);
    await nextTurn();
    expect(b.published).toEqual(['b1', 'b2']);
  });

  it('publishes at once, in order, once the due outboxes hold FLUSH_AT bytes: the peer begins before the turn ends', async () => {
    const a = recording();
    const b = recording();
    // Sixty-four answers of 400 bytes from two sessions, as many tasks in flight finish in one turn.
    for (let i = 0; i < 32; i++) {
      a.box.post(answer(`a${i}`), NO_HEADERS);
      b.box.post(answer(`b${i}`), NO_HEADERS);
    }
    // Within the turn, all but less than FLUSH_AT of it is published already.
    const held = 64 - (a.published.length + b.published.length);
    expect(held * 400).toBeLessThan(FLUSH_AT);
    expect(held).toBeGreaterThan(0);
    await nextTurn();
    expect(names(a.published)).toEqual(Array.from({ length: 32 }, (_, i) => `a${i}`));
    expect(names(b.published)).toEqual(Array.from({ length: 32 }, (_, i) => `b${i}`));
  });

  it('reports a publish that fails in mid-turn only at the end of the turn, and publishes nothing of that outbox past it meanwhile', async () => {
    const a = recording((t) => t.startsWith('a1'));
    const b = recording();
    a.box.post(answer('a0'), NO_HEADERS);
    a.box.post(answer('a1'), NO_HEADERS); // its publish fails
    for (let i = 0; a.published.length === 0 && i < 64; i++) b.box.post(answer(`b${i}`), NO_HEADERS);
    // The outboxes reached FLUSH_AT and went out in the turn; a's failure is not reported inside a post.
    expect(names(a.published)).toEqual(['a0']);
    expect(b.published.length).toBeGreaterThan(0);
    expect(a.lost).toEqual([]);
    a.box.post(answer('a2'), NO_HEADERS); // after the lost a1, within the turn: dropped
    await nextTurn();
    expect(a.lost).toHaveLength(1);
    expect(a.lost[0]).toMatch(/^could not publish: no room for a1/);
    expect(names(a.published)).toEqual(['a0']);
    // Its loss reported, the outbox takes messages again (the transport's close control, say).
    a.box.post(bytes('close'), NO_HEADERS);
    await nextTurn();
    expect(a.published.at(-1)).toBe('close');
  });
});
