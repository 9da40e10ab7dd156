import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditTrail, GENESIS, lineHash, type AuditEntry } from './audit.ts';
import { verifyAuditFiles } from './audit-verify.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tap-audit-'));
  dirs.push(dir);
  return join(dir, 'audit.jsonl');
}

const entry = (n: number): AuditEntry => ({
  via: 'session',
  agent: 'test.agent',
  principal: 'alice',
  requester: 'test.requester',
  task_id: `t-${n}`,
  capability: 'text.count',
  grant: { permissions: ['text.read'], resources: ['file:///a'], expires_at: '2030-01-01T00:00:00.000Z' },
  idempotency_key: `k-${n}`,
  trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  attempt: 1,
  outcome: n % 3 === 0 ? 'failed' : 'completed',
  ...(n % 3 === 0 ? { error_code: 'CAPABILITY_FAILED' } : {}),
  accepted_at: '2026-12-05T08:00:00.000Z',
  finished_at: '2026-12-05T08:00:01.000Z',
});

function write(file: string, count: number, o: { maxBytes?: number; keep?: number } = {}): AuditTrail {
  const trail = new AuditTrail({ file, ...o });
  for (let i = 1; i <= count; i++) trail.append(entry(i));
  trail.close();
  return trail;
}

const lines = (file: string): string[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
const rewrite = (file: string, ls: string[]): void => writeFileSync(file, `${ls.join('\n')}\n`);

describe('the audit trail', () => {
  it('writes one record per task, chained from 64 zeros, and the file verifies with its head', () => {
    const file = tempFile();
    const trail = write(file, 5);
    const ls = lines(file);
    expect(ls).toHaveLength(5);
    const first = JSON.parse(ls[0]!);
    expect(first).toMatchObject({
      seq: 1,
      prev: GENESIS,
      principal: 'alice',
      capability: 'text.count',
      task_id: 't-1',
      outcome: 'completed',
    });
    expect(JSON.parse(ls[2]!)).toMatchObject({ seq: 3, prev: lineHash(ls[1]!), outcome: 'failed', error_code: 'CAPABILITY_FAILED' });
    const verdict = verifyAuditFiles([file]);
    expect(verdict).toMatchObject({ ok: true, records: 5, firstSeq: 1, head: { seq: 5, sha256: lineHash(ls[4]!) } });
    expect(trail.last()).toEqual(verdict.head);
    expect(verifyAuditFiles([file], { head: lineHash(ls[4]!) }).ok).toBe(true);
  });

  it('goes on from the last record of a file it finds (an agent restarted)', () => {
    const file = tempFile();
    write(file, 3);
    write(file, 2);
    expect(verifyAuditFiles([file])).toMatchObject({ ok: true, records: 5, head: { seq: 5 } });
  });

  it('names an edited line', () => {
    const file = tempFile();
    write(file, 6);
    const ls = lines(file);
    ls[2] = ls[2]!.replace('"outcome":"failed"', '"outcome":"completed"');
    rewrite(file, ls);
    expect(verifyAuditFiles([file]).problem).toMatchObject({ file, line: 3, message: expect.stringMatching(/was changed/) });
  });

  it('names the line after a deleted one', () => {
    const file = tempFile();
    write(file, 6);
    const ls = lines(file);
    ls.splice(3, 1);
    rewrite(file, ls);
    expect(verifyAuditFiles([file]).problem).toMatchObject({ line: 4, message: expect.stringMatching(/record 4 was deleted/) });
  });

  it('names reordered lines', () => {
    const file = tempFile();
    write(file, 6);
    const ls = lines(file);
    [ls[3], ls[4]] = [ls[4]!, ls[3]!];
    rewrite(file, ls);
    expect(verifyAuditFiles([file]).problem).toMatchObject({
      line: 4,
      message: expect.stringMatching(/record 4 should come first .*reordered/),
    });
  });

  it('a changed last line is caught by the head kept elsewhere', () => {
    const file = tempFile();
    const trail = write(file, 3);
    const head = trail.last().sha256;
    const ls = lines(file);
    ls[2] = ls[2]!.replace('"principal":"alice"', '"principal":"mallory"');
    rewrite(file, ls);
    expect(verifyAuditFiles([file]).ok).toBe(true);
    expect(verifyAuditFiles([file], { head }).problem).toMatchObject({ line: 3, message: expect.stringMatching(/not the head/) });
  });

  it('rotates by size keeping N files, and the set chains across the rotation', () => {
    const file = tempFile();
    const one = tempFile();
    write(one, 1);
    const size = Buffer.byteLength(`${lines(one)[0]}\n`);
    // About three records a file; 20 records make seven files, of which the live one and 3 rotated are kept.
    write(file, 20, { maxBytes: size * 3 + 10, keep: 3 });
    expect([1, 2, 3].map((n) => existsSync(`${file}.${n}`))).toEqual([true, true, true]);
    expect(existsSync(`${file}.4`)).toBe(false);
    const set = [file, `${file}.1`, `${file}.3`, `${file}.2`];
    const verdict = verifyAuditFiles(set);
    expect(verdict).toMatchObject({ ok: true, files: [`${file}.3`, `${file}.2`, `${file}.1`, file], head: { seq: 20 } });
    expect(verdict.firstSeq).toBeGreaterThan(1);
    expect(JSON.parse(lines(file)[0]!).prev).toBe(lineHash(lines(`${file}.1`).at(-1)!));
    // A record deleted at the end of a rotated file breaks the chain at the first line of the next.
    rewrite(`${file}.2`, lines(`${file}.2`).slice(0, -1));
    expect(verifyAuditFiles(set).problem).toMatchObject({ file: `${file}.1`, line: 1, message: expect.stringMatching(/deleted/) });
    // A rotated file left out is a gap too.
    expect(verifyAuditFiles([file, `${file}.1`, `${file}.3`]).ok).toBe(false);
  });

  it('cuts long strings so that a record stays small', () => {
    const file = tempFile();
    const trail = new AuditTrail({ file });
    trail.append({ ...entry(1), idempotency_key: 'k'.repeat(10_000) });
    trail.close();
    expect(lines(file)[0]!.length).toBeLessThan(2000);
    expect(verifyAuditFiles([file]).ok).toBe(true);
  });
});
