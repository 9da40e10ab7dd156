/**
 * The least a CaseContext needs of a run to open connections: a target, the harness's ids and
 * waits; no probe, no key, no security. For tests of the context itself.
 */
import type { RunEnv } from '../context.ts';
import type { TargetSpec } from '../target.ts';

export function caseEnv(target: TargetSpec, timeScale = 1): RunEnv {
  return {
    target,
    probe: {},
    selfId: 'tap-conform',
    stepTimeoutMs: 1000,
    startupMs: 1000,
    timeScale,
    seed: 1,
    runs: 1,
    replay: () => '',
    debug: false,
    shared: new Map(),
  } as unknown as RunEnv;
}
