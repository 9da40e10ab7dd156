/**
 * Task records: checking a record file against the schema and its name, completing a draft
 * into a record, and the record that replaces a file no agent can run
 * (spec: bindings-workspace#task-record).
 */
import type { TaskRecord } from '../../schemas/src/index.ts';
import { issueList, validateAgainst, type Issue } from '../core/validate.ts';
import { SUPPORTED_MAJORS, protocolMajor } from './config.ts';
import { randomHex } from './fsio.ts';

export type { TaskRecord };
export type HistoryEntry = TaskRecord['context']['history'][number];

/** The largest record file the library reads; a longer one is refused with MESSAGE_TOO_LARGE. */
export const MAX_RECORD_BYTES = 8 * 1024 * 1024;

/** Why a record file cannot be run: a registry code and a sentence for people. */
export interface RecordProblem {
  code:
    | 'MALFORMED_MESSAGE'
    | 'INVALID_MESSAGE'
    | 'UNSUPPORTED_VERSION'
    | 'MESSAGE_TOO_LARGE'
    | 'PERMISSION_DENIED'
    | 'INVALID_SIGNATURE'
    | 'IDENTITY_MISMATCH';
  message: string;
  issues?: Issue[];
}

/** The outcome of checking a record file: the record, or the problem and whatever epoch could be read. */
export type RecordCheck = { ok: true; record: TaskRecord } | ({ ok: false; epoch: number | null } & RecordProblem);

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A readable list of the first few schema issues. */
export function describeIssues(issues: readonly Issue[], max = 3): string {
  const more = issues.length > max ? ` (and ${issues.length - max} more)` : '';
  return issueList(issues.slice(0, max)) + more;
}

function epochOf(value: unknown): number | null {
  const e = (value as { state?: { epoch?: unknown } } | null)?.state?.epoch;
  return typeof e === 'number' && Number.isSafeInteger(e) && e >= 0 ? e : null;
}

/**
 * Checks a record's bytes wherever they come from (a file, a queue message): UTF-8 JSON object
 * (MALFORMED_MESSAGE), a protocol major this library speaks (UNSUPPORTED_VERSION) and
 * task-record.schema.json, whose identifier grammar keeps wildcards and spaces out of `task_id`
 * and the phases (INVALID_MESSAGE) (spec: bindings-workspace#task-record, bindings-nats#task-queue).
 * `what` names the bytes in the messages ("the record file", "the queue message").
 */
export function checkRecord(bytes: Uint8Array, oversized = false, what = 'the record file'): RecordCheck {
  if (oversized) {
    return { ok: false, epoch: null, code: 'MESSAGE_TOO_LARGE', message: `${what} is larger than ${MAX_RECORD_BYTES} bytes` };
  }
  let value: unknown;
  try {
    if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) throw new Error('it starts with a byte order mark');
    value = JSON.parse(decoder.decode(bytes));
  } catch (err) {
    return { ok: false, epoch: null, code: 'MALFORMED_MESSAGE', message: `${what} is not UTF-8 JSON: ${(err as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, epoch: null, code: 'MALFORMED_MESSAGE', message: `${what} must hold one JSON object` };
  }
  const epoch = epochOf(value);
  const protocol = (value as { protocol?: unknown }).protocol;
  if (typeof protocol === 'string') {
    const major = protocolMajor(protocol);
    if (major !== null && !SUPPORTED_MAJORS.includes(major)) {
      return { ok: false, epoch, code: 'UNSUPPORTED_VERSION', message: `the record speaks ${protocol}; this workspace speaks tap/1.x` };
    }
  }
  const issues = validateAgainst('task-record.schema.json', value);
  if (issues) {
    return {
      ok: false,
      epoch,
      code: 'INVALID_MESSAGE',
      message: `the record does not match task-record.schema.json: ${describeIssues(issues)}`,
      issues,
    };
  }
  return { ok: true, record: value as TaskRecord };
}

/**
 * Checks a record file's bytes as `checkRecord` does, and that its `task_id` is the one in the
 * file name (INVALID_MESSAGE) (spec: bindings-workspace#task-record).
 */
export function checkRecordBytes(bytes: Uint8Array, fileTaskId: string, oversized = false): RecordCheck {
  const checked = checkRecord(bytes, oversized);
  if (!checked.ok || checked.record.task_id === fileTaskId) return checked;
  return {
    ok: false,
    epoch: checked.record.state.epoch,
    code: 'INVALID_MESSAGE',
    message: `the record's task_id "${checked.record.task_id}" differs from the task id "${fileTaskId}" in its file name`,
  };
}

/** A draft a requester submits: anything a record has, with `next_phase` and an `input` at least. */
export interface TaskDraft {
  task_id?: string;
  next_phase?: string | null;
  /** Shorthand for `context.current_input`. */
  input?: unknown;
  [member: string]: unknown;
}

/** A fresh task id: `task-<yyyymmdd>-<12 hex>`. */
export function newTaskId(now = new Date()): string {
  return `task-${now.toISOString().slice(0, 10).replace(/-/g, '')}-${randomHex(6)}`;
}

function objectOr(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/**
 * Completes a draft into a record ready to submit: defaults for every missing member, `attempts`
 * and `epoch` 0, status "pending" (spec: bindings-workspace#task-record). Members the draft gives
 * are kept as given, so the submit check still sees their mistakes.
 */
export function recordFromDraft(draft: TaskDraft, now = new Date()): Record<string, unknown> {
  const { input, ...rest } = draft;
  const context = objectOr(rest.context);
  const hasInput = Object.hasOwn(draft, 'input');
  return {
    protocol: 'tap/1.0',
    task_id: newTaskId(now),
    created_at: now.toISOString(),
    current_phase: null,
    metadata: {},
    ...rest,
    context: {
      history: [],
      current_input: hasInput ? input : null,
      ...context,
      environment: { working_directory: '.', allowed_tools: [], ...objectOr(context.environment) },
    },
    requirements: {
      target_agent: '',
      expected_output_format: 'json',
      validation_rules: [],
      timeout_seconds: 300,
      ...objectOr(rest.requirements),
    },
    state: {
      attempts: 0,
      epoch: 0,
      last_error: null,
      checkpoint: null,
      processed_by: null,
      status: 'pending',
      ...objectOr(rest.state),
    },
  };
}

/** An RFC 3339 UTC timestamp. */
export function isoNow(now = new Date()): string {
  return now.toISOString();
}

/** How much of a refused file a rejected record keeps, for the operator. */
const EXCERPT_CHARS = 2048;

/**
 * The record that takes the place of a file no agent can run: schema-valid, in `failed/`, with
 * `last_error` saying why and an excerpt of the original under `metadata["x-rejected-record"]`
 * (spec: bindings-workspace#task-record).
 */
export function rejectedRecord(
  taskId: string,
  epoch: number,
  bytes: Uint8Array,
  problem: RecordProblem,
  agentId: string | null,
  now = new Date(),
): TaskRecord {
  const text = Buffer.from(bytes.subarray(0, EXCERPT_CHARS * 4)).toString('utf8');
  return {
    protocol: 'tap/1.0',
    task_id: taskId,
    created_at: isoNow(now),
    current_phase: null,
    next_phase: null,
    metadata: {
      'x-rejected-record': {
        bytes: bytes.byteLength,
        excerpt: text.slice(0, EXCERPT_CHARS),
        ...(problem.issues ? { issues: problem.issues.slice(0, 20) } : {}),
      },
    },
    context: { history: [], current_input: null, environment: { working_directory: '.', allowed_tools: [] } },
    requirements: { target_agent: '', expected_output_format: 'json', validation_rules: [], timeout_seconds: 1 },
    state: {
      attempts: 0,
      epoch,
      last_error: { code: problem.code, message: problem.message.slice(0, 8192), at: isoNow(now) },
      checkpoint: null,
      processed_by: agentId,
      status: 'failed',
    },
  };
}

/** A deep copy of a record (records are plain JSON). */
export function cloneRecord(record: TaskRecord): TaskRecord {
  // A record is JSON: a JSON round trip copies it exactly, in less time than structuredClone.
  return JSON.parse(JSON.stringify(record)) as TaskRecord;
}
