import { describe, expect, it } from 'vitest';
import type { CaseContext } from '../context.ts';
import { reapTiming, type Reaped } from '../workspace/cases/reaper.ts';
import type { WorkspaceRun } from '../workspace/workspace-run.ts';

const ctx = { env: { timeScale: 1 } } as unknown as CaseContext;
const run = { leaseMs: 2000 } as unknown as WorkspaceRun;
const reaped = (r: Partial<Reaped>): Reaped => ({ id: 'task-1', sent: {} as Reaped['sent'], ...r });

describe('the reaper cases judge a claim the harness renewed (spec: bindings-workspace#reaper)', () => {
  it('FAIL when it vanished within lease_ms of a renewal the harness made in time', () => {
    const o = reapTiming(ctx, run, reaped({ early: 600 }));
    expect(o?.verdict).toBe('FAIL');
    expect(o?.detail).toMatch(/reaped while its lease was being renewed \(600 ms after a renewal\)/);
  });

  it('SKIPPED, saying why, when the harness itself renewed late: the agent may have reaped it rightly', () => {
    const o = reapTiming(ctx, run, reaped({ early: 2106 }));
    expect(o?.verdict).toBe('SKIPPED');
    expect(o?.detail).toMatch(/vanished 2106 ms after its last renewal, no sooner than lease_ms \(2000 ms\).*a machine under load/);
  });

  it('judges the timing of a claim reaped after its lease stopped changing', () => {
    expect(reapTiming(ctx, run, reaped({ after: 2300 }))).toBeNull();
    expect(reapTiming(ctx, run, reaped({ after: 900 }))?.verdict).toBe('FAIL');
    expect(reapTiming(ctx, run, reaped({}))?.verdict).toBe('UNIMPLEMENTED');
  });
});
