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
