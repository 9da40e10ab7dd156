/**
 * The task table's counts of unfinished tasks, which the BUSY checks read on every request
 * (spec: limits#concurrency).
 */
import { describe, expect, it } from 'vitest';
import { TaskTable, type Task } from './tasks.ts';

function task(taskId: string, sessionId: string, principal = 'alice', state: Task['state'] = 'running'): Task {
  return { principal, taskId, sessionId, state, retained: [] as string[] } as Task;
}

describe('TaskTable.activeCount', () => {
  it('counts unfinished tasks by session and by principal', () => {
    const t = new TaskTable({ maxPerPrincipal: 10 });
    t.add(task('a', 's1'));
    t.add(task('b', 's1'));
    t.add(task('c', 's2', 'bob'));
    t.add(task('d', 's2', 'bob', 'completed'));
    expect(t.activeCount()).toBe(3);
    expect(t.activeCount({ sessionId: 's1' })).toBe(2);
    expect(t.activeCount({ principal: 'bob' })).toBe(1);
  });

  it("lets a task's input go once it ended: a kept task costs the same whatever its input (its fingerprint stands for it)", () => {
    const t = new TaskTable({ maxPerPrincipal: 10 });
    const a = Object.assign(task('a', 's1'), { input: { text: 'x'.repeat(100_000) } });
    t.add(a);
    expect(a.input).toBeDefined();
    a.state = 'completed';
    t.ended(a);
    expect(a.input).toBeUndefined();
  });

  it('stops counting a task once it ended, whether or not `ended` was called', () => {
    const t = new TaskTable({ maxPerPrincipal: 10 });
    const a = task('a', 's1');
    const b = task('b', 's1');
    t.add(a);
    t.add(b);
    a.state = 'completed';
    t.ended(a);
    b.state = 'failed';
    expect(t.activeCount()).toBe(0);
    expect([...t.all()]).toHaveLength(2);
  });

  it('follows a task whose stream moved to another session', () => {
    const t = new TaskTable({ maxPerPrincipal: 10 });
    const a = task('a', 's1');
    t.add(a);
    a.sessionId = 's2';
    expect(t.activeCount({ sessionId: 's1' })).toBe(0);
    expect(t.activeCount({ sessionId: 's2' })).toBe(1);
  });
});
