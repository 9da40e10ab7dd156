/**
 * The harness end to end without processes: the reference agent runs in this process on an
 * in-memory transport pair, and cases, the property models and the chaos layer run against it.
 * A deliberately broken wrapper shows that the harness fails what it should.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { RawTransport } from '../../reference/transports/transport.ts';
import type { Case } from '../case.ts';
import { ALL_CASES } from '../cases/index.ts';
import { runCase } from '../runner.ts';
import { memoryEnv as env, memoryTarget, stopMemoryAgents } from './memory-target.ts';

afterAll(stopMemoryAgents);

const byId = (id: string): Case => {
  const c = ALL_CASES.find((x) => x.id === id);
  if (!c) throw new Error(`no case ${id}`);
  return c;
};

describe('cases against the in-memory reference agent', () => {
  it.each([
    'core.handshake.complete',
    'core.handshake.granted-missing',
    'tasks.lifecycle.echo',
    'tasks.stream.output-events',
    'cancellation.running',
    'idempotency.key.same-request',
    'integrity.signature.wrong',
    'plans.approve',
    'core.limits.nesting',
    'core.limits.pre-handshake-size',
    'core.limits.duplicate-table-hostile',
    'resume.replayed-resume',
  ])('%s passes', { timeout: 30_000 }, async (id) => {
    const e = await env(memoryTarget());
    const r = await runCase(byId(id), e);
    expect(r.outcome.verdict, r.outcome.detail).toBe('PASS');
  });

  it('holds idempotency records through another principal’s flood (core.limits.retention-per-principal)', {
    timeout: 180_000,
  }, async () => {
    const r = await runCase(byId('core.limits.retention-per-principal'), await env(memoryTarget()));
    expect(r.outcome.verdict, r.outcome.detail).toBe('PASS');
  });

  it('runs the lifecycle property model and the chaos layer', { timeout: 90_000 }, async () => {
    const e = await env(memoryTarget());
    for (const id of ['tasks.property.lifecycle', 'idempotency.chaos.duplicate', 'core.chaos.garbage']) {
      const r = await runCase(byId(id), e);
      expect(r.outcome.verdict, `${id}: ${r.outcome.detail}`).toBe('PASS');
    }
  });
});

describe('a broken agent is failed by the case that targets its rule', () => {
  /** Drops every task.result the agent sends: tasks never end. */
  const dropResults = (t: RawTransport): RawTransport => {
    const send = t.send.bind(t);
    t.send = async (text: string) => (text.includes('"type":"task.result"') ? undefined : send(text));
    return t;
  };

  /** Skips a sequence number before every task.result: a gap in the stream. */
  const skipSequence = (t: RawTransport): RawTransport => {
    const send = t.send.bind(t);
    t.send = async (text: string) => {
      const m = JSON.parse(text) as { type: string; sequence?: number };
      if (m.type === 'task.result' && m.sequence) return send(JSON.stringify({ ...m, sequence: m.sequence + 1 }));
      return send(text);
    };
    return t;
  };

  it('no result: the agent is diagnosed as ignoring the task', { timeout: 30_000 }, async () => {
    const e = await env(memoryTarget(dropResults));
    const r = await runCase(byId('tasks.lifecycle.echo'), e);
    expect(r.outcome.verdict).toBe('FAIL');
    expect(r.outcome.silence).toBe('ignoring');
  });

  it('a sequence gap fails the case on the wire check, naming the gap', { timeout: 30_000 }, async () => {
    const e = await env(memoryTarget(skipSequence));
    const r = await runCase(byId('tasks.lifecycle.echo'), e);
    expect(r.outcome.verdict).toBe('FAIL');
    expect(r.outcome.detail).toMatch(/sequence \d+ follows \d+|jumps from/);
  });
});
