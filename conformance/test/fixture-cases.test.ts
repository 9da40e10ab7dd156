/** The invalid-message fixtures replayed by the core.fixtures cases, in a session of each version (spec: errors#order-of-checks, versioning#tap-1-1). */
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_CASES } from '../cases/index.ts';
import { memoryTarget, notPassingInMemory, stopMemoryAgents } from './memory-target.testkit.ts';

const FIXTURES = ALL_CASES.filter((c) => c.id.startsWith('core.fixtures.'));

afterAll(stopMemoryAgents);

describe('the fixture cases', () => {
  it('replay no fixture of a 1.1 feature to an agent that speaks only 1.0, which passes them all (delegation fixtures are of 1.1)', {
    timeout: 60_000,
  }, async () => {
    expect(FIXTURES.map((c) => c.id)).toContain('core.fixtures.payloads');
    expect(await notPassingInMemory(FIXTURES, 2, memoryTarget(undefined, 10_000, undefined, ['1.0']))).toEqual([]);
  });
});
