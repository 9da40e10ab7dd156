import { describe, expect, it } from 'vitest';
import { canTransition, INITIAL_STATE, isTaskState, isTerminal, nextStates, TASK_TABLE, transitionTrigger } from './states.ts';

describe('task states', () => {
  it('starts in accepted and ends in completed, failed, cancelled or timed_out (spec: tasks#states)', () => {
    expect(INITIAL_STATE).toBe('accepted');
    expect(TASK_TABLE.states.filter(isTerminal).sort()).toEqual(['cancelled', 'completed', 'failed', 'timed_out']);
    expect(isTaskState('running')).toBe(true);
    expect(isTaskState('paused')).toBe(false);
  });

  it('follows nothing after a terminal state (spec: tasks#states)', () => {
    for (const s of TASK_TABLE.terminal) expect(nextStates(s)).toEqual([]);
  });

  it('allows exactly the transitions of the table (spec: tasks#transitions)', () => {
    for (const from of TASK_TABLE.states) {
      for (const to of TASK_TABLE.states) {
        const listed = TASK_TABLE.transitions.some((t) => t.from === from && t.to === to);
        expect(canTransition(from, to), `${from} → ${to}`).toBe(listed);
      }
    }
    expect(canTransition('accepted', 'failed')).toBe(true);
    expect(canTransition('running', 'cancelled')).toBe(false);
    expect(canTransition('nope', 'running')).toBe(false);
    expect(transitionTrigger('running', 'awaiting_approval')).toBe('plan.submit');
    expect(transitionTrigger('completed', 'running')).toBeUndefined();
  });

  it('lets every non-terminal state reach cancelled (spec: tasks#transitions)', () => {
    const reaches = (from: string, seen = new Set<string>()): boolean =>
      from === 'cancelled' || (!seen.has(from) && (seen.add(from), nextStates(from).some((s) => reaches(s, seen))));
    for (const s of TASK_TABLE.states.filter((s) => !isTerminal(s))) expect(reaches(s), s).toBe(true);
  });
});
