/**
 * The audit trail: one JSON line per finished task, append-only, bounded by size and rotated
 * (the file becomes FILE.1, FILE.1 becomes FILE.2, …, keeping `keep` of them), and
 * tamper-evident: each record carries its sequence number and the SHA-256 of the line before it,
 * across a rotation too, so that an edited, deleted or moved line breaks the chain at that line
 * (audit-verify.ts checks it).
 */
import { closeSync, existsSync, fstatSync, openSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';

/** What `prev` of the first record of a trail holds. */
export const GENESIS = '0'.repeat(64);

/** The SHA-256 of one line (without its line feed), hex. */
export function lineHash(line: string): string {
  return createHash('sha256').update(line, 'utf8').digest('hex');
}

/** Where a durable runner writes its audit records: an AuditTrail, or an agent's (agent.audit). */
export interface AuditSink {
  append(entry: AuditEntry): void;
}

/** What a record says of one task; the trail adds `seq` and `prev`. */
export interface AuditEntry {
  /** Where the task ran: a session of the agent, or a durable queue. */
  via: 'session' | 'durable';
  agent: string;
  /** The requester's principal as the agent established it (a durable record's signer, or what it names). */
  principal: string;
  /** The requester's agent id, when a session named it. */
  requester?: string;
  task_id: string;
  capability: string;
  /** The grant the task ran under: its permissions, resources and expiry. */
  grant?: { permissions: string[]; resources: string[]; expires_at: string };
  idempotency_key?: string;
  trace_id?: string;
  traceparent?: string;
  attempt: number;
  outcome: 'completed' | 'failed' | 'cancelled' | 'timed_out';
  error_code?: string;
  accepted_at: string;
  finished_at: string;
}

/** A record as written. */
export type AuditRecord = { seq: number; prev: string } & AuditEntry;

/** Options of an audit trail. */
export interface AuditOptions {
  /** The file; rotated ones are FILE.1 (newest) to FILE.<keep>. */
  file: string;
  /** Rotate before a line would take the file past this many bytes (default 16 MiB). */
  maxBytes?: number;
  /** Rotated files kept (default 5); the oldest beyond them is deleted. */
  keep?: number;
}

/** The last record of a trail: what an operator keeps elsewhere to anchor it (audit verify --head). */
export interface AuditHead {
  seq: number;
  sha256: string;
}

/** Strings beyond this many characters are cut, so that one record stays small. */
const MAX_TEXT = 1024;
/** Grant lists beyond this many entries are cut. */
const MAX_LIST = 64;

/** Reads the last line of a file without reading all of it. */
function lastLine(file: string): string | undefined {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const chunk = Math.min(size, 256 * 1024);
    const buffer = Buffer.alloc(chunk);
    readSync(fd, buffer, 0, chunk, size - chunk);
    const lines = buffer
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '');
    return lines.at(-1);
  } finally {
    closeSync(fd);
  }
}

const cut = (s: string | undefined): string | undefined => (s === undefined || s.length <= MAX_TEXT ? s : `${s.slice(0, MAX_TEXT)}…`);

/** An entry with long strings and lists cut, and absent members left out. */
function bounded(e: AuditEntry): AuditEntry {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (v === undefined) continue;
    out[k] = typeof v === 'string' ? cut(v) : v;
  }
  if (e.grant)
    out.grant = {
      permissions: e.grant.permissions.slice(0, MAX_LIST).map((p) => cut(p)!),
      resources: e.grant.resources.slice(0, MAX_LIST).map((r) => cut(r)!),
      expires_at: e.grant.expires_at,
    };
  return out as unknown as AuditEntry;
}

/** An append-only, rotated, chained audit trail. Writes are synchronous, so records keep the order of the tasks' endings. */
export class AuditTrail {
  readonly file: string;
  readonly maxBytes: number;
  readonly keep: number;
  private fd: number;
  private size: number;
  private head: AuditHead = { seq: 0, sha256: GENESIS };
  private failed = false;
  private closed = false;

  constructor(
    o: AuditOptions,
    private readonly log: (message: string) => void = () => {},
  ) {
    this.file = o.file;
    this.maxBytes = Math.max(1024, o.maxBytes ?? 16 * 1024 * 1024);
    this.keep = Math.max(1, o.keep ?? 5);
    // A trail that exists goes on from its last record (or from the newest rotated file's).
    const last = [this.file, `${this.file}.1`].find((f) => existsSync(f) && statSync(f).size > 0);
    const line = last === undefined ? undefined : lastLine(last);
    if (line !== undefined) {
      let seq = Number.NaN;
      try {
        seq = (JSON.parse(line) as { seq?: unknown }).seq as number;
      } catch {}
      if (!Number.isSafeInteger(seq))
        throw new Error(`the audit file ${last} does not end with an audit record; move it away or repair it`);
      this.head = { seq, sha256: lineHash(line) };
    }
    this.fd = openSync(this.file, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  /** The last record written. */
  last(): AuditHead {
    return { ...this.head };
  }

  /** Appends the record of one task. A failed write is said once on the log; the task is not held up by it. */
  append(entry: AuditEntry): void {
    const record: AuditRecord = { seq: this.head.seq + 1, prev: this.head.sha256, ...bounded(entry) };
    const line = JSON.stringify(record);
    const bytes = Buffer.from(`${line}\n`, 'utf8');
    try {
      // A record after close (a durable runner finishing while its agent stops) opens the file again.
      if (this.closed) {
        this.fd = openSync(this.file, 'a', 0o600);
        this.closed = false;
      }
      if (this.size > 0 && this.size + bytes.length > this.maxBytes) this.rotate();
      writeSync(this.fd, bytes);
      this.size += bytes.length;
      this.head = { seq: record.seq, sha256: lineHash(line) };
      this.failed = false;
    } catch (err) {
      if (!this.failed) this.log(`the audit file ${this.file} could not be written: ${(err as Error).message}`);
      this.failed = true;
    }
  }

  /** FILE → FILE.1 → … → FILE.<keep>; the oldest beyond is deleted; a new FILE is opened. */
  private rotate(): void {
    closeSync(this.fd);
    rmSync(`${this.file}.${this.keep}`, { force: true });
    for (let i = this.keep - 1; i >= 1; i--) if (existsSync(`${this.file}.${i}`)) renameSync(`${this.file}.${i}`, `${this.file}.${i + 1}`);
    renameSync(this.file, `${this.file}.1`);
    this.fd = openSync(this.file, 'a', 0o600);
    this.size = 0;
  }

  /** Closes the file. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      closeSync(this.fd);
    } catch {}
  }
}

/** The audit options of the environment: TAP_AUDIT_FILE, with TAP_AUDIT_MAX_BYTES and TAP_AUDIT_KEEP. */
export function auditFromEnv(env: Readonly<Record<string, string | undefined>>): AuditOptions | undefined {
  const file = env.TAP_AUDIT_FILE;
  if (file === undefined || file === '') return undefined;
  const whole = (name: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    if (!/^\d+$/.test(raw)) throw new Error(`${name}=${raw} is not a whole number`);
    return Number(raw);
  };
  const maxBytes = whole('TAP_AUDIT_MAX_BYTES');
  const keep = whole('TAP_AUDIT_KEEP');
  return { file, ...(maxBytes !== undefined ? { maxBytes } : {}), ...(keep !== undefined ? { keep } : {}) };
}
