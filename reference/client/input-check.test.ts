/**
 * The input of a task against the I-JSON rule (spec: envelope#encoding, TAP-ENV-002): a number
 * written with an exponent, 1e308 among them, is no integer and goes through both ways; an integer
 * beyond ±(2^53−1) is refused by the client before anything is sent, naming where it is and the
 * rule; the mesh refuses it before choosing an agent.
 */
import { describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities } from '../agent/index.ts';
import { Mesh } from '../mesh/mesh.ts';
import { MemoryRegistry } from '../mesh/mesh.testkit.ts';
import { createMemoryPair } from '../transports/index.ts';
import { connect, TapClientError, type TapClient } from './index.ts';
import { cleanupsAfterEach, REFERENCE_CARD } from './reference-agent.testkit.ts';

const cleanups = cleanupsAfterEach();

/** A client of the reference agent in memory, and the task.requests it wrote. */
async function client(): Promise<{ c: TapClient; requests: string[] }> {
  const agent = createAgent({ card: REFERENCE_CARD, capabilities: withConformanceCapabilities(), logger: () => {} });
  cleanups.push(() => agent.shutdown());
  const [a, b] = createMemoryPair();
  agent.attach(b);
  const requests: string[] = [];
  const c = await connect(a, {
    agentId: 'test-requester',
    trace: (w) => {
      if (w.dir === 'out' && w.text.includes('"type":"task.request"')) requests.push(w.text);
    },
  });
  cleanups.push(() => c.close());
  return { c, requests };
}

describe('a task input and the I-JSON rule (spec: envelope#encoding)', () => {
  it('sends 1e308 and other numbers written with an exponent, and the agent runs the task with them (TAP-ENV-002)', async () => {
    const { c, requests } = await client();
    const input = { x: 1e308, y: -1.5e300, z: [1e21, 0.5] };
    const h = c.submit('tap.test.echo', input);
    expect(await h.result).toEqual({ status: 'completed', output: input });
    expect(requests).toHaveLength(1);
    expect(requests[0]).toContain('"x":1e+308');
  });

  it('refuses an integer beyond ±(2^53−1) before sending, naming its path in the input, its value and the rule (TAP-ENV-002)', async () => {
    const { c, requests } = await client();
    const h = c.submit('tap.test.echo', { ok: 1e308, ids: [1, 2 ** 53 + 2] });
    const err = (await h.result.catch((e: unknown) => e)) as TapClientError;
    expect(err).toBeInstanceOf(TapClientError);
    expect(err).toMatchObject({ code: 'INVALID_MESSAGE', unsent: true, indeterminate: false });
    expect(err.message).toBe(
      'the input of this tap.test.echo task is not I-JSON, so it was not sent: at /ids/1 in the input, 9007199254740994 is an integer outside ±(2^53−1) (TAP-ENV-002, spec: envelope#encoding). Send such a number as a string, or one within ±(2^53−1)',
    );
    await expect(h.accepted).rejects.toBe(err);
    expect(requests).toEqual([]);
  });

  it('refuses such an input in the mesh before any agent is chosen', async () => {
    const registry = new MemoryRegistry();
    let connects = 0;
    const mesh = new Mesh({
      registry,
      agentId: 'test-requester',
      connect: async () => {
        connects++;
        throw new Error('no agent should be reached');
      },
    });
    cleanups.push(() => mesh.close());
    const err = (await mesh.task('tap.test.echo', { n: -(2 ** 60) }).catch((e: unknown) => e)) as TapClientError;
    expect(err).toMatchObject({ code: 'INVALID_MESSAGE', unsent: true });
    expect(err.message).toContain('at /n in the input, -1152921504606847000 is an integer outside ±(2^53−1)');
    expect(connects).toBe(0);
  });
});
