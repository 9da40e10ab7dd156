import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditTrail } from '../ops/audit.ts';
import { tapctl } from './tapctl.testkit.ts';

const dir = mkdtempSync(join(tmpdir(), 'tapctl-audit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tapctl audit verify', () => {
  it('passes a rotated set in any order, and names the first broken line of a tampered one', async () => {
    const file = join(dir, 'tasks.jsonl');
    const trail = new AuditTrail({ file, maxBytes: 1024, keep: 9 });
    for (let i = 1; i <= 12; i++)
      trail.append({
        via: 'session',
        agent: 'a',
        principal: 'alice',
        task_id: `t${i}`,
        capability: 'c',
        attempt: 1,
        outcome: 'completed',
        accepted_at: '2026-12-05T08:00:00.000Z',
        finished_at: '2026-12-05T08:00:01.000Z',
      });
    trail.close();
    // A few records a file: several files, given newest first.
    const set = readdirSync(dir)
      .filter((f) => f.startsWith('tasks.jsonl'))
      .map((f) => join(dir, f))
      .sort();
    expect(set.length).toBeGreaterThanOrEqual(3);
    const ok = await tapctl('audit', 'verify', ...set);
    expect(ok.code, ok.err).toBe(0);
    expect(ok.out).toMatch(new RegExp(`^ok: 12 records in ${set.length} files chain; head: record 12, sha256 [0-9a-f]{64}\n$`));
    const lines = readFileSync(`${file}.1`, 'utf8').split('\n');
    lines[1] = lines[1]!.replace('"alice"', '"mallory"');
    writeFileSync(`${file}.1`, lines.join('\n'));
    const broken = await tapctl('audit', 'verify', ...set);
    expect(broken.code).toBe(1);
    expect(broken.err).toContain(`the audit trail is broken: ${file}.1 line 2 was changed`);
    expect((await tapctl('audit', 'verify', join(dir, 'none.jsonl'))).err).toMatch(/no audit file .*none\.jsonl/);
  });
});
