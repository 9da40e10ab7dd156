/**
 * The probe over a URL: a connection the agent closes before it answers is tried once more, so a
 * server that was busy for a moment is not taken for one that closes every connection, which is
 * still told as the agent's fault (spec: conformance#verdicts, TAP-CONF-004).
 */
import { describe, expect, it } from 'vitest';
import { createMemoryPair } from '../../reference/transports/memory.ts';
import type { TargetSpec } from '../target.ts';
import { memoryEnv, memoryTarget } from './memory-target.testkit.ts';

/** A target whose first `closing` connections the agent's side closes at once; the later ones reach the reference agent. */
function closingFirst(closing: number): { target: TargetSpec; opened: () => number } {
  const real = memoryTarget();
  if (real.kind !== 'memory') throw new Error('a memory target');
  let opened = 0;
  const target: TargetSpec = {
    ...real,
    open: async (o) => {
      if (++opened > closing) return real.open(o);
      const [harness, far] = createMemoryPair({ schedule: (f) => setImmediate(f) });
      setImmediate(() => void far.close({ code: 1011, reason: 'busy' }));
      return { transport: harness };
    },
  };
  return { target, opened: () => opened };
}

describe('the probe of an agent reached by URL', () => {
  it('tries a second connection when the first closed before any answer, and reads the card from it', async () => {
    const lines: string[] = [];
    const { target, opened } = closingFirst(1);
    const env = await memoryEnv(target, { log: (l) => lines.push(l) });
    expect(env.probe.card?.agent_id).toBe('mem.agent');
    expect(opened()).toBe(2);
    expect(lines).toEqual([expect.stringMatching(/closed the connection before answering the handshake; trying a second connection$/)]);
  });

  it('says the agent closed the connection when the second closes too', async () => {
    const { target, opened } = closingFirst(Number.POSITIVE_INFINITY);
    await expect(memoryEnv(target)).rejects.toThrow(/closed the connection before answering the handshake$/);
    expect(opened()).toBe(2);
  });
});
