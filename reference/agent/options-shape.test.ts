import { describe, expect, it } from 'vitest';
import { createAgent } from './agent.ts';
import type { AgentOptions } from './options.ts';
import { agentCard } from './peer.testkit.ts';

describe('createAgent with options a plain JavaScript caller got wrong', () => {
  it('says what is missing instead of failing further in', () => {
    const build = (o: unknown) => () => createAgent(o as AgentOptions);
    expect(build(undefined)).toThrow(/createAgent takes an options object/);
    expect(build({ capabilities: {} })).toThrow(/options\.card must be an agent card/);
    expect(build({ card: { ...agentCard(), capabilities: undefined }, capabilities: {} })).toThrow(/capabilities array/);
    expect(build({ card: agentCard(), handlers: {} })).toThrow(/options\.capabilities must map each capability name/);
  });
});

describe('the default logger', () => {
  it('writes info and above to stderr, one line each, and leaves debug to a logger of your own', async () => {
    const { stderrLogger } = await import('./options.ts');
    const written: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => written.push(chunk) > 0) as typeof process.stderr.write;
    try {
      for (const level of ['debug', 'info', 'warn', 'error'] as const) stderrLogger(level, `a ${level} line`);
    } finally {
      process.stderr.write = write;
    }
    expect(written).toEqual(['[tap-agent] info: a info line\n', '[tap-agent] warn: a warn line\n', '[tap-agent] error: a error line\n']);
  });
});
