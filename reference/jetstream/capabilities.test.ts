/**
 * tap.test.counter on the durable queue (spec: conformance#test-capabilities, TAP-CONF-121;
 * bindings-nats#idempotency, TAP-NATS-025): its increment is the task's one effect, made through
 * the effects record the runner gives each delivery of a task, and with the hold_ms of a record of
 * 1.1 it keeps working after it.
 */
import { describe, expect, it } from 'vitest';
import { TapError } from '../core/errors.ts';
import { recordFromDraft, type TaskRecord } from '../workspace/record.ts';
import { durableConformanceHandlers } from './capabilities.ts';
import { EffectsRecords } from './effects.ts';
import type { DurableWork } from './runner.ts';

const record = (protocol: string, input: unknown): TaskRecord =>
  ({ ...recordFromDraft({ next_phase: 'tap.test.counter', input }), protocol }) as unknown as TaskRecord;

/** A delivery of `r` whose effects go to `effects` under its task id; `signal` stops its hold. */
function delivery(r: TaskRecord, effects: EffectsRecords, attempts = 0, signal = new AbortController().signal): DurableWork {
  return { record: r, attempts, signal, emit: async () => {}, effect: (name, fn) => effects.once(r.task_id, name, fn) };
}

/** Resolves with the handler's output and whether it was still working after `ms`. */
async function heldFor(p: Promise<unknown>, ms: number): Promise<{ output: unknown; held: boolean }> {
  let done = false;
  const settled = p.finally(() => (done = true));
  await new Promise((r) => setTimeout(r, ms));
  const held = !done;
  return { output: await settled, held };
}

describe('tap.test.counter on the durable queue', () => {
  it('gives a redelivery of a task the count its first delivery made, and counts a new task once more', async () => {
    const counter = durableConformanceHandlers()['tap.test.counter']!;
    const effects = new EffectsRecords();
    const first = record('tap/1.1', { key: 'k' });
    expect(await counter(delivery(first, effects))).toEqual({ key: 'k', count: 1 });
    expect(await counter(delivery(first, effects, 1))).toEqual({ key: 'k', count: 1 });
    expect(await counter(delivery(record('tap/1.1', { key: 'k' }), effects))).toEqual({ key: 'k', count: 2 });
    // A runner that forgets the record between deliveries counts the redelivery again: the break the case catches.
    expect(await counter(delivery(first, new EffectsRecords(), 2))).toEqual({ key: 'k', count: 3 });
  });

  it('holds after its increment for a record of 1.1, and ignores hold_ms in a record of 1.0', async () => {
    const counter = durableConformanceHandlers()['tap.test.counter']!;
    const effects = new EffectsRecords();
    const stop = new AbortController();
    const held = heldFor(counter(delivery(record('tap/1.1', { key: 'h', hold_ms: 60_000 }), effects, 0, stop.signal)), 30);
    await new Promise((r) => setTimeout(r, 10));
    // The increment came first: a task of the same key sent meanwhile counts 2.
    expect(await counter(delivery(record('tap/1.1', { key: 'h' }), effects))).toEqual({ key: 'h', count: 2 });
    setTimeout(() => stop.abort(), 40);
    expect(await held).toEqual({ output: { key: 'h', count: 1 }, held: true });
    expect(await heldFor(counter(delivery(record('tap/1.0', { key: 'h', hold_ms: 60_000 }), effects)), 30)).toEqual({
      output: { key: 'h', count: 3 },
      held: false,
    });
  });

  it('refuses a hold_ms out of range with INVALID_MESSAGE, without counting', async () => {
    const counter = durableConformanceHandlers()['tap.test.counter']!;
    const effects = new EffectsRecords();
    for (const hold_ms of [-1, 1.5, 600_001, '10']) {
      const refused = await counter(delivery(record('tap/1.1', { key: 'r', hold_ms }), effects)).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(TapError);
      expect((refused as TapError).payload.code).toBe('INVALID_MESSAGE');
    }
    expect(await counter(delivery(record('tap/1.1', { key: 'r', hold_ms: 0 }), effects))).toEqual({ key: 'r', count: 1 });
  });
});
