import { describe, expect, it } from 'vitest';
import { newSigningKey, trustOf } from '../trust.ts';
import { recordFromDraft, type TaskRecord } from '../workspace/record.ts';
import { takeIn } from './intake.ts';
import { RECORD_SIGNATURE, signRecord, signStreamMessage, verifyRecord, verifyStreamMessage } from './signatures.ts';

const CAPABILITY = 'tap.test.echo';
const encode = (value: unknown): Uint8Array => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));
const record = (over: Record<string, unknown> = {}): TaskRecord =>
  ({ ...recordFromDraft({ next_phase: CAPABILITY, input: { n: 1 } }), ...over }) as TaskRecord;

const alice = newSigningKey('alice');
const mallory = newSigningKey('mallory');
const runner = newSigningKey('tap.reference-agent');
const trust = trustOf([alice, mallory, runner]);

describe('what a durable runner checks of a queue message before any lookup (spec: bindings-nats#task-queue, TAP-NATS-037)', () => {
  it('refuses a message that is not one JSON object as MALFORMED_MESSAGE', () => {
    for (const bytes of ['null', '"x"', '[]', '1', 'true', '{', '\ufeff{}', '']) {
      const got = takeIn(encode(bytes), { capability: CAPABILITY });
      expect(got.ok, bytes).toBe(false);
      if (!got.ok) expect(got.problem.code, bytes).toBe('MALFORMED_MESSAGE');
    }
    const notUtf8 = takeIn(new Uint8Array([0x7b, 0xff, 0x7d]), { capability: CAPABILITY });
    expect(!notUtf8.ok && notUtf8.problem.code).toBe('MALFORMED_MESSAGE');
  });

  it('refuses a task_id that could widen a subject (">", "*", "a.*", a space, empty) as INVALID_MESSAGE, and keeps no record to look up', () => {
    for (const taskId of ['>', '*', 'a.*', 'a.>', 'a b', '', 'a..b', 'A']) {
      const got = takeIn(encode(record({ task_id: taskId })), { capability: CAPABILITY });
      expect(got.ok, taskId).toBe(false);
      if (!got.ok) {
        expect(got.problem.code, taskId).toBe('INVALID_MESSAGE');
        expect(got.problem.message).toMatch(/task-record\.schema\.json/);
        expect(got.record, taskId).toBeUndefined();
      }
    }
  });

  it('refuses members of the wrong type, an oversized message, and a record for another capability', () => {
    const wrong = takeIn(encode({ ...record(), state: 'pending' }), { capability: CAPABILITY });
    expect(!wrong.ok && wrong.problem.code).toBe('INVALID_MESSAGE');
    const big = takeIn(new Uint8Array(8 * 1024 * 1024 + 1), { capability: CAPABILITY });
    expect(!big.ok && big.problem.code).toBe('MESSAGE_TOO_LARGE');
    const other = takeIn(encode(record({ next_phase: 'tap.test.counter' })), { capability: CAPABILITY });
    expect(!other.ok && other.problem).toMatchObject({ code: 'INVALID_MESSAGE', message: expect.stringContaining('tap.test.counter') });
    expect(!other.ok && other.record?.next_phase).toBe('tap.test.counter');
  });

  it('refuses an idempotency identity that is not { principal, key } of strings', () => {
    for (const idem of [
      null,
      'k',
      { principal: 'a' },
      { principal: 1, key: 'k' },
      { principal: 'a', key: '' },
      { principal: 'a\n', key: 'k' },
    ]) {
      const got = takeIn(encode(record({ metadata: { 'x-idempotency': idem } })), { capability: CAPABILITY });
      expect(!got.ok && got.problem.code, JSON.stringify(idem)).toBe('INVALID_MESSAGE');
    }
    expect(takeIn(encode(record({ metadata: { 'x-idempotency': { principal: 'a', key: 'k' } } })), { capability: CAPABILITY }).ok).toBe(
      true,
    );
  });

  it('takes a valid record of its capability, without a principal when it holds no trust file', () => {
    const got = takeIn(encode(record()), { capability: CAPABILITY });
    expect(got).toMatchObject({ ok: true, record: { next_phase: CAPABILITY } });
    expect(got.ok && got.principal).toBeUndefined();
  });
});

describe('signed durable records (spec: bindings-nats#signed-records, TAP-NATS-038)', () => {
  const signed = (key = alice, over: Record<string, unknown> = {}): TaskRecord => signRecord(record(over), key);

  it('takes a record signed by a principal of the trust file, whose principal it then is', () => {
    const got = takeIn(encode(signed(alice, { metadata: { 'x-idempotency': { principal: 'alice', key: 'order-77' } } })), {
      capability: CAPABILITY,
      trust,
    });
    expect(got).toMatchObject({ ok: true, principal: 'alice' });
  });

  it('refuses an unsigned record, one signed by a stranger, and one altered after signing, as INVALID_SIGNATURE', () => {
    const unsigned = takeIn(encode(record()), { capability: CAPABILITY, trust });
    expect(!unsigned.ok && unsigned.problem).toMatchObject({ code: 'INVALID_SIGNATURE', message: expect.stringContaining('not signed') });
    const stranger = takeIn(encode(signed(newSigningKey('eve'))), { capability: CAPABILITY, trust });
    expect(!stranger.ok && stranger.problem).toMatchObject({
      code: 'INVALID_SIGNATURE',
      message: expect.stringContaining('does not know'),
    });
    const altered = signed();
    altered.context.current_input = { n: 2 };
    const got = takeIn(encode(altered), { capability: CAPABILITY, trust });
    expect(!got.ok && got.problem).toMatchObject({ code: 'INVALID_SIGNATURE', message: expect.stringContaining("not alice's") });
    // A signature moved to another principal's name does not verify either.
    const renamed = signed(mallory);
    (renamed.metadata[RECORD_SIGNATURE] as { principal: string }).principal = 'alice';
    expect(verifyRecord(renamed, trust)).toMatchObject({ ok: false, code: 'INVALID_SIGNATURE' });
  });

  it("refuses a record that claims another principal's idempotency key as IDENTITY_MISMATCH, however well signed", () => {
    const claim = signed(mallory, { metadata: { 'x-idempotency': { principal: 'alice', key: 'order-77' } } });
    const got = takeIn(encode(claim), { capability: CAPABILITY, trust });
    expect(!got.ok && got.problem).toMatchObject({ code: 'IDENTITY_MISMATCH', message: expect.stringContaining('alice') });
  });

  it("keeps a record's signature through the queue's bookkeeping: state and an operator's x-requeued", () => {
    const requeued = signed();
    requeued.state = {
      ...requeued.state,
      attempts: 3,
      status: 'failed',
      last_error: { code: 'BUSY', message: 'x', at: requeued.created_at },
    };
    requeued.metadata = { ...requeued.metadata, 'x-requeued': { dead_seq: 4 } };
    expect(verifyRecord(requeued, trust)).toEqual({ ok: true, principal: 'alice' });
  });

  it('verifies a stream message signed by a runner, and not by a requester in the trust file, with another attempt, or altered', () => {
    const message = { type: 'task.result', source: 'tap.reference-agent', task_id: 'pay-1', sequence: 2, payload: { status: 'completed' } };
    const sig = signStreamMessage(message, 0, runner);
    const runners = ['tap.reference-agent'];
    expect(verifyStreamMessage(message, 0, sig, trust, runners)).toBe(true);
    expect(verifyStreamMessage(message, 1, sig, trust, runners)).toBe(false);
    expect(verifyStreamMessage({ ...message, payload: { status: 'failed' } }, 0, sig, trust, runners)).toBe(false);
    expect(verifyStreamMessage(message, 0, undefined, trust, runners)).toBe(false);
    const byAlice = { ...message, source: 'alice' };
    expect(verifyStreamMessage(byAlice, 0, signStreamMessage(byAlice, 0, alice), trust, runners)).toBe(false);
  });
});
