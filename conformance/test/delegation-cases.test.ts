/** The delegation cases of TAP 1.1 against the reference agent in memory (spec: mesh#delegation). */
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { notPassingInMemory, stopMemoryAgents } from './memory-target.testkit.ts';

const DELEGATION = ALL_CASES.filter((c) => c.id.startsWith('core.mesh.delegation'));

afterAll(stopMemoryAgents);

describe('delegation paths (spec: mesh#delegation)', () => {
  it('the reference agent passes every delegation case, each of TAP 1.1', { timeout: 60_000 }, async () => {
    expect(DELEGATION.map((c) => c.id).sort()).toEqual([
      'core.mesh.delegation-1-0',
      'core.mesh.delegation-depth',
      'core.mesh.delegation-loop',
    ]);
    expect(DELEGATION.every((c) => c.needs?.version === '1.1')).toBe(true);
    expect(await notPassingInMemory(DELEGATION, 3)).toEqual([]);
  });
});
