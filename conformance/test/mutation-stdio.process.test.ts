/**
 * The mutation score's stdio mutants run as processes of their own broken agent
 * (conformance/mutation/broken-agent.ts, compiled in dist/), not as tap-reference-agent: one of
 * them, run through tools/mutation.ts, is caught by a case citing the requirement it breaks, and
 * the unbroken agent it is compared with passes that case.
 */
import { describe, expect, it } from 'vitest';
import { runMutation } from '../../tools/mutation.ts';
import { ALL_CASES } from '../cases/index.ts';

describe('tools/mutation.ts over stdio', () => {
  it('catches TAP-STDIO-006:exit-1, served by the broken agent, with a case citing TAP-STDIO-006', { timeout: 120_000 }, async () => {
    const report = await runMutation({ only: ['TAP-STDIO-006:exit-1'], scope: 'citing', jobs: 1 });
    expect(report.results).toHaveLength(1);
    const [r] = report.results;
    // Over stdio the mutation runs in the broken agent's process, so this one cannot count firings.
    expect(r?.fired).toBeNull();
    expect(r?.citing, 'no citing case failed against the mutant').not.toEqual([]);
    for (const id of r?.citing ?? []) expect(ALL_CASES.find((c) => c.id === id)?.requirements).toContain('TAP-STDIO-006');
    expect(report.unstable).toEqual([]);
    expect(report.survivors).toEqual([]);
  });
});
