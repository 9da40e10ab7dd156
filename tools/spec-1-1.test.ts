/** The 1.1 text: 1.0's chapters with 1.1's additions, every 1.0 requirement unchanged (spec: versioning#tap-1-1). */
import { describe, expect, it } from 'vitest';
import { lostRequirements, mergeChapter } from './spec-1-1.ts';

const BASE = [
  '# Tasks {#tasks}',
  '',
  '## One {#one}',
  '',
  'Text one.',
  '',
  '### Deep {#deep}',
  '',
  'Deep text.',
  '',
  '## Two {#two}',
  '',
  'Text two.',
  '',
].join('\n');

describe('tools/spec-1-1.ts', () => {
  it('inserts a block at the end of the section it follows, after its subsections', () => {
    const out = mergeChapter('tasks', BASE, '<!-- 1.1: after #one -->\nAdded in 1.1.\n');
    const lines = out.split('\n');
    expect(lines.indexOf('Added in 1.1.')).toBeGreaterThan(lines.indexOf('Deep text.'));
    expect(lines.indexOf('Added in 1.1.')).toBeLessThan(lines.indexOf('## Two {#two}'));
    expect(lines[2]).toMatch(/^> TAP 1\.1: this chapter is the text of \[1\.0\]/);
  });

  it('names the anchor a block follows when the 1.0 chapter lacks it', () => {
    expect(() => mergeChapter('tasks', BASE, '<!-- 1.1: after #nowhere -->\nx\n')).toThrow(/has no heading \{#nowhere\}/);
  });

  it('reports a 1.0 requirement that 1.1 drops or words otherwise', () => {
    const r = {
      id: 'TAP-TASK-001',
      level: 'MUST' as const,
      area: 'TASK' as const,
      chapter: 'tasks',
      anchor: 'tasks#one',
      text: 'A MUST b.',
    };
    expect(lostRequirements([r], new Map([[r.id, r]]))).toEqual([]);
    expect(lostRequirements([r], new Map())).toEqual(['TAP-TASK-001 of spec/1.0/tasks.md is missing from spec/1.1']);
    expect(lostRequirements([r], new Map([[r.id, { ...r, text: 'A MUST c.' }]]))[0]).toMatch(/reads otherwise/);
  });
});
