/**
 * The harness end to end without processes: the reference agent runs in this process on an
 * in-memory transport pair. A deliberately broken wrapper shows that the harness fails what it
 * should; memory-suite.test.ts runs the suite's breadth (cases, property models, chaos layer).
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { RawTransport } from '../../reference/transports/transport.ts';
import type { Case } from '../case.ts';
import { ALL_CASES } from '../cases/index.ts';
import { runCase } from '../runner.ts';
import { memoryEnv as env, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

afterAll(stopMemoryAgents);

const byId = (id: string): Case => {
  const c = ALL_CASES.find((x) => x.id === id);
  if (!c) throw new Error(`no case ${id}`);
  return c;
};

// Every case that needs no process and no one binding runs in memory-suite.test.ts; the rest of
// the suite, core.limits.retention-per-principal (a flood of 4 200 tasks) included, runs against
// the real processes when npm test certifies the reference over stdio and WebSocket.
describe('cases against the in-memory reference agent', () => {
  it('resume.replayed-resume passes: a WebSocket case that a memory pair can give', { timeout: 30_000 }, async () => {
    const r = await runCase(byId('resume.replayed-resume'), await env(memoryTarget()));
    expect(r.outcome.verdict, r.outcome.detail).toBe('PASS');
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
    // The case waits out its step timeout (3 s) for the result, then for a pong: on a fake clock,
    // moved to the next timer only once the agent and the harness have nothing left to do.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    try {
      const running = runCase(byId('tasks.lifecycle.echo'), e);
      let done = false;
      void running.finally(() => (done = true));
      while (!done) {
        for (let i = 0; i < 20 && !done; i++) await new Promise<void>((resolve) => setImmediate(resolve));
        if (!done) vi.advanceTimersToNextTimer();
      }
      const r = await running;
      expect(r.outcome.verdict).toBe('FAIL');
      expect(r.outcome.silence).toBe('ignoring');
    } finally {
      vi.useRealTimers();
    }
  });

  it('a sequence gap fails the case on the wire check, naming the gap', { timeout: 30_000 }, async () => {
    const e = await env(memoryTarget(skipSequence));
    const r = await runCase(byId('tasks.lifecycle.echo'), e);
    expect(r.outcome.verdict).toBe('FAIL');
    expect(r.outcome.detail).toMatch(/sequence \d+ follows \d+|jumps from/);
  });
});
