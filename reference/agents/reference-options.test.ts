/** The reference agent's own options (reference/agents/reference-options.ts). */
import { describe, expect, it } from 'vitest';
import { MAX_TASK_VAR, ownOptions, referenceCard } from './reference-options.ts';

describe('max_task_seconds of the reference agent (spec: conformance#case-limits)', () => {
  it('is 3600 by default, TAP_MAX_TASK_SECONDS when the environment gives it, and --max-task-seconds over both', () => {
    expect(referenceCard(ownOptions({}, {})).limits.max_task_seconds).toBe(3600);
    expect(referenceCard(ownOptions({}, { [MAX_TASK_VAR]: '2' })).limits.max_task_seconds).toBe(2);
    expect(referenceCard(ownOptions({ 'max-task-seconds': '30' }, { [MAX_TASK_VAR]: '2' })).limits.max_task_seconds).toBe(30);
  });

  it('refuses a TAP_MAX_TASK_SECONDS that is no whole number of seconds, naming the variable', () => {
    expect(() => ownOptions({}, { [MAX_TASK_VAR]: '1.5' })).toThrow(/TAP_MAX_TASK_SECONDS=1.5 is not a whole number of seconds/);
    expect(() => ownOptions({}, { [MAX_TASK_VAR]: '0' })).toThrow(/at least 1/);
    expect(() => ownOptions({ 'max-task-seconds': 'soon' }, {})).toThrow(/--max-task-seconds soon/);
  });
});
