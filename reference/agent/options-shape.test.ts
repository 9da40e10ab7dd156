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

describe('the defaults the README states', () => {
  it('are the runtime’s: the heartbeat, the resume window and the tasks kept', async () => {
    const { readFileSync } = await import('node:fs');
    const { settingsOf } = await import('./options.ts');
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    const s = settingsOf({ card: agentCard(), capabilities: {} });
    const n = (x: number) => x.toLocaleString('en-US');
    expect(readme).toContain(`(\`heartbeatMs\`, ${s.heartbeatMs / 1000} s by default;`);
    expect(readme).toContain(`(\`resumeWindowMs\`, ${s.resumeWindowMs / 60_000} minutes by default;`);
    expect(readme).toContain(
      `up to ${n(s.maxTasksKeptPerPrincipal)} per requester (\`maxTasksKeptPerPrincipal\`) and ${n(s.maxTasksKept)} in all (\`maxTasksKept\`)`,
    );
    expect(readme).toContain(
      `more than ${n(s.maxTasksKeptPerPrincipal)} tasks within the window, some ${Math.round(s.maxTasksKeptPerPrincipal / (s.resumeWindowMs / 1000))} a second for ${s.resumeWindowMs / 60_000} minutes`,
    );
  });
});
