/**
 * Task records as the harness writes them: complete records for the conformance phases, raw
 * files (malformed on purpose), forged claims of an agent that "died", and the transitions the
 * harness makes when it acts as a second agent or a reaper (spec: bindings-workspace#task-record).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import {
  afterFailedAttempt,
  commitTransition,
  prepare,
  recordFromDraft,
  renderRecord,
  type TaskDraft,
  type TaskRecord,
  type Workspace,
} from '../../reference/workspace/index.ts';
import { publishNew, sha256Hex, writeAtomic } from '../../reference/workspace/fsio.ts';

/** The conformance phases a workspace agent serves when started for certification (see README.md). */
export const PHASES = {
  echo: 'tap.test.echo',
  sleep: 'tap.test.sleep',
  fail: 'tap.test.fail',
  plan: 'tap.test.plan',
} as const;

/** A phase no agent serves: records for it must stay where they are. */
export const UNSERVED = 'tap.test.unserved';

/** The agent id the harness writes into history entries it makes itself. */
export const HARNESS_AGENT = 'tap-conform';

/** A complete, schema-valid pending record for `phase` with `input`; `over` replaces members (deeply for context, requirements, state). */
export function record(taskId: string, phase: string | null, input: unknown, over: TaskDraft = {}): TaskRecord {
  return recordFromDraft({ task_id: taskId, next_phase: phase, input, ...over }) as unknown as TaskRecord;
}

/** A history entry by `agent` for `phase`. */
export function entry(
  agent: string,
  phase: string,
  input: unknown,
  output: unknown,
  artifacts: string[] = [],
): TaskRecord['context']['history'][number] {
  return { agent, phase, timestamp: new Date().toISOString(), input, output, artifacts };
}

/** Publishes bytes as `tasks/<dir>/<name>` (a new name: link(2), never replacing a file). */
export async function publishFile(
  ws: Workspace,
  dir: 'pending' | 'processing' | 'awaiting' | 'completed' | 'failed',
  name: string,
  bytes: string | Uint8Array,
): Promise<string> {
  const path = join(ws.paths.dir(dir), name);
  await publishNew(path, bytes);
  return path;
}

/** Publishes a record as `tasks/<dir>/<task_id>.tap.json`; returns its bytes. */
export async function publishRecord(ws: Workspace, dir: 'pending' | 'awaiting', rec: TaskRecord): Promise<Buffer> {
  const bytes = Buffer.from(renderRecord(rec));
  await publishFile(ws, dir, `${rec.task_id}.tap.json`, bytes);
  return bytes;
}

/** The lease sidecar contents of a claim. */
export function leaseBytes(agentId: string, epoch: number, renewals: number, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ agent_id: agentId, epoch, renewals, ...extra }) + '\n';
}

/**
 * Forges the claim of an agent that died: `processing/<id>@<epoch>.tap.json` holding `rec`
 * (whose `state.epoch` is `epoch - 1`, as a claimed pending record has) and its lease sidecar.
 */
export async function forgeClaim(
  ws: Workspace,
  rec: TaskRecord,
  epoch: number,
  holder = 'tap-conform.departed',
): Promise<{ path: string; bytes: Buffer; lease: string }> {
  const bytes = Buffer.from(renderRecord(rec));
  const path = ws.paths.claim(rec.task_id, epoch);
  await publishNew(path, bytes);
  const lease = ws.paths.sidecar(rec.task_id, epoch, 'lease');
  await writeAtomic(lease, leaseBytes(holder, epoch, 0));
  return { path, bytes, lease };
}

/** Writes a file through a temp file and a rename, replacing what is there. */
export async function writeFileAtomic(path: string, bytes: string | Uint8Array): Promise<void> {
  await writeAtomic(path, bytes);
}

/**
 * Acts as a reaper for one claim: re-queues it (attempts + 1, or a dead letter at max_attempts)
 * by the three-step transition. Returns false when another actor ended the claim first.
 */
export async function reapClaim(ws: Workspace, taskId: string, epoch: number): Promise<boolean> {
  const path = ws.paths.claim(taskId, epoch);
  const bytes = await fsp.readFile(path).catch(() => null);
  if (!bytes) return false;
  const claimed = JSON.parse(bytes.toString('utf8')) as TaskRecord;
  const next = afterFailedAttempt(
    ws,
    claimed,
    epoch,
    `the lease of claim ${epoch} expired (the harness reaped it)`,
    null,
    undefined,
    undefined,
  );
  const out = await commitTransition(ws, { taskId, epoch, digest: sha256Hex(bytes) }, prepare(next), HARNESS_AGENT);
  return out.ok;
}

/** Finishes a claim the harness holds: appends its history entry and completes the task. */
export async function finishClaim(ws: Workspace, taskId: string, epoch: number, output: unknown): Promise<boolean> {
  const path = ws.paths.claim(taskId, epoch);
  const bytes = await fsp.readFile(path).catch(() => null);
  if (!bytes) return false;
  const rec = JSON.parse(bytes.toString('utf8')) as TaskRecord;
  const phase = rec.next_phase ?? 'unknown';
  rec.context.history.push(entry(HARNESS_AGENT, phase, rec.context.current_input, output));
  rec.current_phase = phase;
  rec.next_phase = null;
  rec.state = { attempts: 0, epoch, last_error: null, checkpoint: null, processed_by: HARNESS_AGENT, status: 'completed' };
  const out = await commitTransition(ws, { taskId, epoch, digest: sha256Hex(bytes) }, prepare(rec), HARNESS_AGENT);
  return out.ok;
}
