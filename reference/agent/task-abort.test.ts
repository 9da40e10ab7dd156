import { describe, expect, it } from 'vitest';
import { TaskAbort } from './model.ts';

describe('TaskAbort.end: the abort an ended task keeps', () => {
  const reason = new Error('ended');
  const shared = new TaskAbort();
  shared.abort(reason);

  it('is the shared one when nothing listened to the task abort or made its signal', () => {
    expect(new TaskAbort().end(reason, shared)).toBe(shared);
  });

  it('is its own, aborted with the reason, when a listener waits or a signal was made', () => {
    const heard: string[] = [];
    const listened = new TaskAbort();
    listened.listen(() => heard.push('listener'));
    expect(listened.end(reason, shared)).toBe(listened);
    expect(heard).toEqual(['listener']);

    const signalled = new TaskAbort();
    const signal = signalled.signal;
    expect(signalled.end(reason, shared)).toBe(signalled);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
  });

  it('keeps an abort already aborted, with its own reason, and a listener that came later is never called', () => {
    const cancelled = new TaskAbort();
    const why = new Error('cancelled');
    cancelled.abort(why);
    expect(cancelled.end(reason, shared)).toBe(cancelled);
    expect(cancelled.reason).toBe(why);
    let called = false;
    shared.listen(() => (called = true));
    shared.abort(new Error('again'));
    expect(called).toBe(false);
    expect(shared.reason).toBe(reason);
  });
});
