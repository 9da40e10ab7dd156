import { describe, expect, it } from 'vitest';
import {
  PUNCTUALITY_MISS,
  applyLevel,
  between,
  capTiming,
  fail,
  judgeOccurrence,
  judgePunctuality,
  pass,
  severity,
  timingWindow,
  worse,
} from '../verdict.ts';

describe('verdicts (spec: conformance#verdicts)', () => {
  it('orders verdicts from PASS to ERROR', () => {
    expect(severity('PASS')).toBeLessThan(severity('NON-STRICT'));
    expect(severity('NOT-TESTED')).toBeLessThan(severity('FAIL'));
    expect(worse('FAIL', 'ERROR')).toBe('ERROR');
    expect(worse('PASS', 'SKIPPED')).toBe('SKIPPED');
  });

  it('turns a missed SHOULD into NON-STRICT, never FAIL', () => {
    expect(applyLevel('SHOULD', fail('late')).verdict).toBe('NON-STRICT');
    expect(applyLevel('MUST', fail('broken')).verdict).toBe('FAIL');
    expect(applyLevel('SHOULD', pass()).verdict).toBe('PASS');
  });

  it('never lets a timing-only verdict be harsher than NON-STRICT', () => {
    expect(capTiming({ ...fail('slow'), timingOnly: true }).verdict).toBe('NON-STRICT');
    expect(capTiming(fail('wrong code')).verdict).toBe('FAIL');
  });
});

describe('timed rules (spec: conformance#timing)', () => {
  const w = timingWindow(1000);

  it('allows nominal × 3 + 2 s and puts punctuality at nominal × 1.2 + 0.5 s', () => {
    expect(w.latestMs).toBe(5000);
    expect(w.punctualMs).toBe(1700);
    expect(timingWindow(1000, 2).latestMs).toBe(10000);
  });

  it('fails an event that never comes or comes before the nominal time', () => {
    expect(judgeOccurrence(w, undefined, 'the ping').verdict).toBe('FAIL');
    expect(judgeOccurrence(w, 400, 'the ping').verdict).toBe('FAIL');
    expect(judgeOccurrence(w, 1200, 'the ping').verdict).toBe('PASS');
    expect(judgeOccurrence(w, 4900, 'the ping').verdict).toBe('PASS');
  });

  it('calls an event early only if even its latest possible reading is early', () => {
    expect(judgeOccurrence(w, between(700, 1300), 'the close').verdict).toBe('PASS');
    expect(judgeOccurrence(w, between(100, 800), 'the close').verdict).toBe('FAIL');
  });

  it('calls an event late only if even its earliest possible reading is late', () => {
    expect(judgeOccurrence(w, between(4000, 9000), 'the close').verdict).toBe('PASS');
    expect(judgeOccurrence(w, between(6000, 9000), 'the close').verdict).toBe('FAIL');
  });

  it('judges punctuality as NON-STRICT and timing-only when late', () => {
    const late = judgePunctuality(w, 3000, 'the ping');
    expect(late.verdict).toBe('NON-STRICT');
    expect(late.timingOnly).toBe(true);
    expect(judgePunctuality(w, 1100, 'the ping').verdict).toBe('PASS');
  });

  it('names a punctuality miss in a detail PUNCTUALITY_MISS recognises, as reports carry it, and no other verdict', () => {
    expect(judgePunctuality(w, 3000, 'the ping').detail).toMatch(PUNCTUALITY_MISS);
    expect(judgePunctuality(w, undefined, 'the ping').detail).toMatch(PUNCTUALITY_MISS);
    expect(judgePunctuality(w, 1100, 'the ping').detail).not.toMatch(PUNCTUALITY_MISS);
    expect(judgeOccurrence(w, 9000, 'the ping').detail).not.toMatch(PUNCTUALITY_MISS);
  });
});
