/**
 * Verifies an audit trail (audit.ts): a file, or a rotated set (FILE.<n> … FILE.1, FILE), in the
 * order they were written. Every line must be a record whose `seq` follows the one before and
 * whose `prev` is the SHA-256 of the line before, across the files too; the first line that breaks
 * the chain is named with what most likely happened there (changed, deleted, moved).
 */
import { readFileSync } from 'node:fs';
import { GENESIS, lineHash, type AuditHead } from './audit.ts';

/** Where and how a trail breaks. */
export interface AuditBreak {
  file: string;
  /** The line, from 1. */
  line: number;
  message: string;
}

/** What a verification found. */
export interface AuditVerdict {
  ok: boolean;
  /** The files, oldest first, as they were checked. */
  files: string[];
  records: number;
  /** The sequence number of the first record: above 1 when older files were rotated away. */
  firstSeq?: number;
  /** The last record: compare it with a head kept elsewhere (the agent's /healthz reports it). */
  head?: AuditHead;
  problem?: AuditBreak;
}

/** The rotation number of a file name: FILE.3 → 3, FILE → 0. */
function rotation(file: string): number {
  const m = /\.(\d+)$/.exec(file);
  return m ? Number(m[1]) : 0;
}

/** The files oldest first: the highest rotation number first, the live file last. */
export function writtenOrder(files: readonly string[]): string[] {
  return [...files].sort((a, b) => rotation(b) - rotation(a));
}

/** Checks the chain of `files` (any order: they are put in the order of writing); with `head`, the last record must be it. */
export function verifyAuditFiles(files: readonly string[], o: { head?: string } = {}): AuditVerdict {
  const ordered = writtenOrder(files);
  const verdict: AuditVerdict = { ok: true, files: ordered, records: 0 };
  let previous: { line: string; seq: number; file: string; n: number } | undefined;
  const fail = (file: string, line: number, message: string): AuditVerdict => ({ ...verdict, ok: false, problem: { file, line, message } });
  const texts = ordered.map((file) => {
    const lines = readFileSync(file, 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    return lines;
  });
  // Where each sequence number stands, to tell a moved record from a deleted one.
  const placeOf = new Map<number, string>();
  texts.forEach((lines, f) =>
    lines.forEach((line, i) => {
      const seq = /^\{"seq":(\d+),/.exec(line)?.[1];
      if (seq !== undefined && !placeOf.has(Number(seq))) placeOf.set(Number(seq), `line ${i + 1} of ${ordered[f]}`);
    }),
  );
  for (const [f, file] of ordered.entries()) {
    const lines = texts[f]!;
    for (let i = 0; i < lines.length; i++) {
      const n = i + 1;
      const line = lines[i]!;
      let record: { seq?: unknown; prev?: unknown };
      try {
        record = JSON.parse(line) as typeof record;
      } catch {
        return fail(file, n, 'is not a JSON record: the line was changed or cut');
      }
      const { seq, prev } = record ?? {};
      if (!Number.isSafeInteger(seq) || typeof prev !== 'string' || !/^[0-9a-f]{64}$/.test(prev))
        return fail(file, n, 'has no seq and prev of an audit record: the line was changed');
      const s = seq as number;
      if (!previous) {
        if (s === 1 && prev !== GENESIS) return fail(file, n, 'is record 1, whose prev must be 64 zeros: the line was changed');
        verdict.firstSeq = s;
      } else {
        const where = previous.file === file ? `line ${previous.n}` : `line ${previous.n} of ${previous.file}`;
        const moved = placeOf.get(previous.seq + 1);
        if (s > previous.seq + 1 && moved !== undefined)
          return fail(
            file,
            n,
            `is record ${s}, but record ${previous.seq + 1} should come first (it is at ${moved}): the lines were reordered`,
          );
        if (s > previous.seq + 1)
          return fail(
            file,
            n,
            `is record ${s}, but the record before it (${where}) is ${previous.seq}: ${s - previous.seq - 1 === 1 ? `record ${previous.seq + 1} was` : `records ${previous.seq + 1} to ${s - 1} were`} deleted`,
          );
        if (s <= previous.seq) return fail(file, n, `is record ${s}, after record ${previous.seq} (${where}): the lines were reordered`);
        if (prev !== lineHash(previous.line))
          return previous.file === file
            ? fail(file, previous.n, `was changed: line ${n} (record ${s}) holds the SHA-256 of another line ${previous.n}`)
            : fail(previous.file, previous.n, `was changed: the first line of ${file} (record ${s}) holds the SHA-256 of another line`);
      }
      previous = { line, seq: s, file, n };
      verdict.records++;
    }
  }
  if (previous) verdict.head = { seq: previous.seq, sha256: lineHash(previous.line) };
  if (o.head !== undefined && verdict.head?.sha256 !== o.head.toLowerCase()) {
    const last = previous ? { file: previous.file, n: previous.n } : { file: ordered.at(-1) ?? '', n: 0 };
    return fail(
      last.file,
      last.n,
      `is not the head kept elsewhere (${o.head}): the last record was changed, or records after it were cut off or not yet read`,
    );
  }
  return verdict;
}
