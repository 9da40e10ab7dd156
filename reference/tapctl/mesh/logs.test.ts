/** tapctl mesh trace and tasks read trace-record files: what is not a record is said, not dropped (spec: mesh#trace-records). */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tapctl } from '../tapctl.testkit.ts';

const T = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tap-mesh-logs-'));
  const base = { trace_id: T, span_id: 's1', task_id: 'task-1' };
  const lines = [
    JSON.stringify({ ...base, time: '2026-12-07T10:00:01.000Z', node: 'cli', dir: 'sent', type: 'task.request', peer: 'worker.a' }),
    JSON.stringify({
      ...base,
      time: '2026-12-07T10:00:02.000Z',
      node: 'cli',
      dir: 'received',
      type: 'task.result',
      peer: 'worker.a',
      status: 'completed',
    }),
    // The torn last line of a process killed while it wrote.
    '{"time": "2026-12-07T10:00:03.000Z", "node": "cl',
  ];
  writeFileSync(join(dir, 'cli.jsonl'), `${lines.join('\n')}`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tapctl mesh trace and tasks, on a file with a torn line', () => {
  it.each([['trace', T], ['tasks']])('tapctl mesh %s reads the records and says which line it left out', async (command, ...rest) => {
    const r = await tapctl('mesh', command!, ...rest.filter((a): a is string => a !== undefined), '--logs', dir);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(command === 'trace' ? 'complete' : 'task-1');
    const file = join(dir, 'cli.jsonl');
    expect(
      r.err.startsWith(`tapctl: 1 line(s) of ${dir} are not trace records and were left out; the first, ${file}:3, is not JSON (`),
    ).toBe(true);
    expect(r.err).toMatch(/is not JSON \(.+\)\n$/);
  });
});
