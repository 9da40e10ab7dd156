/**
 * Time in transit is not held against the agent: a transport that holds some of the agent's
 * messages back (as a mailbox read every few hundred ms does) must not turn a correct agent's
 * timing into a FAIL, nor a case's own slowness into the agent's fault (spec: conformance#timing,
 * handshake#timeouts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { RawTransport } from '../../reference/transports/transport.ts';
import type { Case } from '../case.ts';
import { ALL_CASES } from '../cases/index.ts';
import { runCases } from '../runner.ts';
import { memoryEnv, memoryTarget, stopMemoryAgents } from './memory-target.testkit.ts';

afterAll(stopMemoryAgents);

const byId = (id: string): Case => {
  const c = ALL_CASES.find((x) => x.id === id);
  if (!c) throw new Error(`no case ${id}`);
  return c;
};

/** Holds back, by `ms`, the first of the agent's messages that `match` picks. */
const delayFirst =
  (match: (text: string) => boolean, ms: number) =>
  (t: RawTransport): RawTransport => {
    const send = t.send.bind(t);
    let held = false;
    t.send = async (text: string) => {
      if (held || !match(text)) return send(text);
      held = true;
      await new Promise((r) => setTimeout(r, ms));
      return send(text);
    };
    return t;
  };

/** Holds back every error the agent sends by `ms`. */
const delayErrors =
  (ms: number) =>
  (t: RawTransport): RawTransport => {
    const send = t.send.bind(t);
    t.send = async (text: string) => {
      if (text.includes('"type":"error"')) await new Promise((r) => setTimeout(r, ms));
      return send(text);
    };
    return t;
  };

describe('time in transit is not held against the agent', () => {
  it('a first plan.holding reminder that spent 400 ms in transit does not make the second one early', { timeout: 60_000 }, async () => {
    const env = await memoryEnv(memoryTarget(delayFirst((text) => text.includes('"stage":"plan.holding"'), 400)));
    const ids = ['plans.holding.first-reminder', 'plans.holding.repeat', 'plans.holding.never-decides'];
    const results = await runCases(ids.map(byId), env, 4, 1);
    expect(results.map((r) => `${r.id} ${r.verdict}: ${r.detail}`).filter((l) => !/ PASS: /.test(l))).toEqual([]);
  });

  it('invalid handshake.init fixtures whose errors each take 700 ms outlast the 10 s step on one transport, and still all pass', {
    timeout: 90_000,
  }, async () => {
    const env = await memoryEnv(memoryTarget(delayErrors(700)));
    const [r] = await runCases([byId('core.fixtures.handshake-init')], env, 1, 1);
    expect(`${r!.verdict}: ${r!.detail}`).toMatch(/^PASS: /);
    // More than one transport was needed: the step timeout (handshake#timeouts) was due on the first.
    expect(new Set(r!.transcript.filter((e) => e.dir === 'out').map((e) => e.conn)).size).toBeGreaterThan(1);
  });
});
