/** The open tasks' deadlines behind one timer (spec: tasks#deadlines). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/samples.testkit.ts';
import { Deadlines, type Deadlined } from './deadlines.ts';

type T = Deadlined & { id: number };

/** A clock that also counts the timers armed at once. */
class CountingClock extends ManualClock {
  armed = 0;
  most = 0;
  override setTimeout(fn: () => void, ms: number) {
    this.armed++;
    this.most = Math.max(this.most, this.armed);
    return super.setTimeout(() => {
      this.armed--;
      fn();
    }, ms);
  }
  override clearTimeout(handle: unknown): void {
    this.armed--;
    super.clearTimeout(handle as number);
  }
}

describe('deadlines (spec: tasks#deadlines)', () => {
  it('passes each task once, in deadline order, when its deadline comes, with one timer armed at most', async () => {
    const clock = new CountingClock();
    const passed: number[] = [];
    const d = new Deadlines<T>(clock, (t) => passed.push(t.id));
    const t0 = clock.now();
    for (const [id, at] of [
      [1, 300],
      [2, 100],
      [3, 200],
      [4, 100],
    ] as const)
      d.add({ id, deadline: t0 + at });
    await clock.advance(99);
    expect(passed).toEqual([]);
    await clock.advance(1);
    expect(passed.sort()).toEqual([2, 4]);
    await clock.advance(200);
    expect(passed).toEqual([2, 4, 3, 1]);
    expect(d.size).toBe(0);
    expect(clock.most).toBe(1);
    expect(clock.armed).toBe(0);
  });

  it('never passes a removed task, and arms nothing once none is left', async () => {
    const clock = new CountingClock();
    const passed: number[] = [];
    const d = new Deadlines<T>(clock, (t) => passed.push(t.id));
    const a = { id: 1, deadline: clock.now() + 50 };
    const b = { id: 2, deadline: clock.now() + 60 };
    d.add(a);
    d.add(b);
    d.remove(a);
    d.remove(a);
    await clock.advance(55);
    expect(passed).toEqual([]);
    d.remove(b);
    expect(clock.armed).toBe(0);
    await clock.advance(100);
    expect(passed).toEqual([]);
  });

  it('takes a moved deadline when a task is added again, and waits out a deadline beyond the longest timer', async () => {
    const clock = new ManualClock();
    const passed: number[] = [];
    const d = new Deadlines<T>(clock, (t) => passed.push(t.id));
    const a = { id: 1, deadline: clock.now() + 10 };
    d.add(a);
    a.deadline = clock.now() + 1000;
    d.add(a);
    await clock.advance(500);
    expect(passed).toEqual([]);
    await clock.advance(500);
    expect(passed).toEqual([1]);
    const far = { id: 2, deadline: clock.now() + 40 * 24 * 3600 * 1000 };
    d.add(far);
    await clock.advance(30 * 24 * 3600 * 1000);
    expect(passed).toEqual([1]);
    await clock.advance(10 * 24 * 3600 * 1000);
    expect(passed).toEqual([1, 2]);
  });

  it('lets a passed task add and remove others while the due ones are taken', async () => {
    const clock = new ManualClock();
    const passed: number[] = [];
    const later = { id: 3, deadline: clock.now() + 10 };
    const gone = { id: 4, deadline: clock.now() + 10 };
    const d: Deadlines<T> = new Deadlines<T>(clock, (t) => {
      passed.push(t.id);
      if (t.id === 1) {
        d.add(later);
        d.remove(gone);
      }
    });
    d.add({ id: 1, deadline: clock.now() + 5 });
    d.add({ id: 2, deadline: clock.now() + 5 });
    d.add(gone);
    await clock.advance(20);
    expect(passed.sort()).toEqual([1, 2, 3]);
  });

  it('agrees with a sorted list over any mix of adds, removes and time', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant('add' as const), id: fc.nat(20), at: fc.nat(1000) }),
            fc.record({ op: fc.constant('remove' as const), id: fc.nat(20) }),
            fc.record({ op: fc.constant('advance' as const), ms: fc.nat(300) }),
          ),
          { maxLength: 60 },
        ),
        async (ops) => {
          const clock = new ManualClock();
          const passed: number[] = [];
          const d = new Deadlines<T>(clock, (t) => passed.push(t.id));
          const tasks = new Map<number, T>();
          const expected = new Map<number, number>();
          const due: number[] = [];
          for (const o of ops) {
            if (o.op === 'add') {
              const t = tasks.get(o.id) ?? { id: o.id, deadline: 0 };
              tasks.set(o.id, t);
              t.deadline = clock.now() + o.at;
              expected.set(o.id, t.deadline);
              d.add(t);
            } else if (o.op === 'remove') {
              const t = tasks.get(o.id);
              if (t) d.remove(t);
              expected.delete(o.id);
            } else {
              const end = clock.now() + o.ms;
              const now = [...expected].filter(([, at]) => at <= end).sort((x, y) => x[1] - y[1]);
              for (const [id] of now) expected.delete(id);
              due.push(...now.map(([id]) => id));
              const before = passed.length;
              await clock.advance(o.ms);
              // Exactly the tasks due by then, in the order of their deadlines.
              const batch = passed.slice(before);
              expect([...batch].sort((x, y) => x - y)).toEqual(now.map(([id]) => id).sort((x, y) => x - y));
              const at = new Map(now);
              for (let i = 1; i < batch.length; i++) expect(at.get(batch[i]!)!).toBeGreaterThanOrEqual(at.get(batch[i - 1]!)!);
            }
          }
          // Same tasks, each once; order among equal deadlines is free.
          expect([...passed].sort((x, y) => x - y)).toEqual([...due].sort((x, y) => x - y));
          expect(d.size).toBe(expected.size);
        },
      ),
      { numRuns: 200 },
    );
  });
});
