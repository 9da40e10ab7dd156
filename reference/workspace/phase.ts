/**
 * Running one claimed phase: the handler's context (input, checkpoint sidecar, fenced artifacts,
 * abort signal, plan and decision), lease renewal, the phase timeout, the cancel sidecar, and the
 * next record the outcome gives — or the plan it parks in awaiting/
 * (spec: bindings-workspace#leases, #transitions, #approval-and-cancel).
 */
import { TapError, errorEntry } from '../core/errors.ts';
import { capabilityFailure } from './capability-failure.ts';
import { validateAgainst } from '../core/validate.ts';
import { writeLease } from './agents.ts';
import { forgetPlan, submissionProblem, type Plan } from './approval.ts';
import { ArtifactRefused, openArtifact, readArtifact, writeArtifact } from './artifacts.ts';
import { entryExists, readJsonFile, writeAtomic } from './fsio.ts';
import { appendHistory, fullHistory } from './history.ts';
import { isIdentifier } from './layout.ts';
import { afterFailedAttempt } from './reaper.ts';
import { cloneRecord, describeIssues, isoNow, type HistoryEntry, type TaskRecord } from './record.ts';
import { commitTransition, prepare } from './transition.ts';
import type { AbortKind, PhaseContext, PhaseOutcome, PhaseResult, PhaseRunOptions } from './phase-handler.ts';

export type {
  AbortKind,
  DecidedPlan,
  PhaseContext,
  PhaseHandler,
  PhaseOutcome,
  PhaseResult,
  PhaseRunOptions,
  PlanSubmitted,
} from './phase-handler.ts';

/** The phase after `phase` in `metadata.pipeline`, or null. */
export function pipelineNext(record: TaskRecord, phase: string): string | null {
  const pipeline = record.metadata.pipeline;
  if (!Array.isArray(pipeline)) return null;
  const i = pipeline.indexOf(phase);
  const next = i >= 0 ? pipeline[i + 1] : undefined;
  return typeof next === 'string' ? next : null;
}

/** The code, message and retryable value a phase's error leaves in `record`'s next record. */
function errorOf(err: unknown, record: TaskRecord): { code: string; message: string; retryable: boolean } {
  const failure = err instanceof Error ? capabilityFailure(err, record) : null;
  if (failure) return { code: failure.code, message: failure.message, retryable: failure.retryable };
  if (err instanceof TapError) return { code: err.payload.code, message: err.payload.message, retryable: err.payload.retryable };
  if (err instanceof ArtifactRefused) return { code: err.tapCode, message: err.message, retryable: false };
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'INTERNAL_ERROR', message, retryable: errorEntry('INTERNAL_ERROR')?.retryable ?? true };
}

/** Runs one claimed phase to its transition; never throws for the handler's faults. */
export async function runPhase(o: PhaseRunOptions): Promise<PhaseResult> {
  const { ws, agentId, claim, record } = o;
  const { taskId, epoch } = claim;
  const phase = record.next_phase!;
  const leaseMs = ws.config.lease_ms;
  const controller = new AbortController();
  let aborted: AbortKind | undefined;
  const abort = (kind: AbortKind) => {
    if (aborted) return;
    aborted = kind;
    controller.abort(new Error(`phase interrupted: ${kind}`));
  };
  const written: string[] = [];
  const approval = o.approval ?? null;
  let submitted: Plan | null = null;
  let renewals = 0;
  await writeLease(ws, taskId, epoch, { agent_id: agentId, epoch, renewals });

  let renewing = false;
  const renew = setInterval(
    () => {
      if (renewing || aborted === 'lost') return;
      renewing = true;
      void (async () => {
        try {
          const held = entryExists(claim.path);
          if (!held) return abort('lost');
          const cancelled = entryExists(ws.paths.sidecar(taskId, epoch, 'cancel'), true);
          if (cancelled) abort('cancel');
          renewals += 1;
          await writeLease(ws, taskId, epoch, { agent_id: agentId, epoch, renewals });
        } catch (err) {
          o.log('warn', `could not renew the lease of ${taskId}@${epoch}: ${(err as Error).message}`);
        } finally {
          renewing = false;
        }
      })();
    },
    Math.max(10, Math.floor(leaseMs / 3)),
  );
  const timeout = setTimeout(() => abort('timeout'), record.requirements.timeout_seconds * 1000);
  const onShutdown = () => abort('shutdown');
  if (o.shutdown.aborted) onShutdown();
  else o.shutdown.addEventListener('abort', onShutdown, { once: true });

  const ctx: PhaseContext = {
    agentId,
    taskId,
    epoch,
    phase,
    input: record.context.current_input,
    record,
    attempts: record.state.attempts,
    checkpoint: record.state.checkpoint,
    signal: controller.signal,
    fence: { task_id: taskId, epoch },
    saveCheckpoint: (data) => writeAtomic(ws.paths.sidecar(taskId, epoch, 'checkpoint'), JSON.stringify(data) + '\n'),
    async writeArtifact(name, data) {
      const path = await writeArtifact(ws, `${taskId}/${epoch}/${name}`, data);
      if (!written.includes(path)) written.push(path);
      return path;
    },
    readArtifact: (path) => readArtifact(ws, path),
    history: async () => (await fullHistory(ws, record)).entries,
    async isCancelled() {
      const found = entryExists(ws.paths.sidecar(taskId, epoch, 'cancel'), true);
      if (found) abort('cancel');
      return aborted === 'cancel';
    },
    plan: approval?.plan ?? null,
    decision: approval?.decision ?? null,
    approvedPlan: approval?.decision.decision === 'approved' ? approval.plan : null,
    submitPlan(plan) {
      if (submitted)
        throw new TapError({ code: 'INTERNAL_ERROR', message: 'this run of the phase has submitted a plan already', retryable: false });
      const problem = submissionProblem(plan, approval, usedPlanIds(record));
      if (problem) throw new TapError({ code: 'INVALID_MESSAGE', message: problem, retryable: false });
      submitted = structuredClone(plan);
      return { output: null, submitted_plan: submitted };
    },
  };

  type Settled = { ok: true; outcome: PhaseOutcome } | { ok: false; error: unknown } | { ok: false; interrupted: true };
  const work: Promise<Settled> = (async () => o.handler(ctx))().then(
    (outcome) => ({ ok: true as const, outcome }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  // An interrupted handler gets graceMs to return; after that its result no longer counts.
  const interrupted = new Promise<Settled>((resolve) => {
    controller.signal.addEventListener(
      'abort',
      () => {
        if (aborted === 'lost') return resolve({ ok: false, interrupted: true });
        setTimeout(() => resolve({ ok: false, interrupted: true }), o.graceMs).unref?.();
      },
      { once: true },
    );
  });
  const settled = await Promise.race([work, interrupted]);
  clearInterval(renew);
  clearTimeout(timeout);
  o.shutdown.removeEventListener('abort', onShutdown);
  while (renewing) await new Promise((r) => setTimeout(r, 1));

  const base: PhaseResult = { taskId, epoch, phase, transition: null };
  if (aborted === 'lost') {
    o.log('info', `${taskId}@${epoch}: the claim was taken back; the work of this claim is discarded`);
    return base;
  }
  const next = await nextRecord(o, settled, aborted, written, submitted);
  const prepared = prepare(next);
  const parking = submitted !== null && prepared.dir === 'awaiting';
  if (parking) {
    // spec: bindings-workspace#approval-and-cancel — the plan file first, then the transition.
    if (!entryExists(claim.path)) {
      o.log('info', `${taskId}@${epoch}: the claim was taken back; the plan is discarded`);
      return base;
    }
    await writeAtomic(ws.paths.plan(taskId), JSON.stringify(submitted, null, 2) + '\n');
  }
  const transition = await commitTransition(ws, claim, prepared, agentId);
  if (!transition.ok) {
    o.log('info', `${taskId}@${epoch}: another actor ended the claim first; the work of this claim is discarded`);
    if (parking) await forgetPlan(ws, taskId, submitted!.plan_id);
  } else if (approval && !(transition.dir === 'awaiting' && !parking)) {
    // The decided plan is done with (its plan is kept in the history entry); a release back to awaiting/ keeps it.
    await forgetPlan(ws, taskId, approval.plan.plan_id);
  }
  const err = next.state.last_error;
  const quiet = next.state.status === 'completed' || next.state.status === 'pending' || next.state.status === 'awaiting_approval';
  return {
    ...base,
    transition,
    status: next.state.status,
    ...(parking ? { planId: submitted!.plan_id } : {}),
    ...(err && !quiet ? { error: { code: err.code, message: err.message } } : {}),
  };
}

/** The plan ids the task's history records (TAP-PLAN-003: a new plan never reuses one). */
function usedPlanIds(record: TaskRecord): Set<string> {
  const ids = new Set<string>();
  for (const e of record.context.history as Array<HistoryEntry & { plan?: { plan_id?: unknown } }>) {
    if (typeof e.plan?.plan_id === 'string') ids.add(e.plan.plan_id);
  }
  return ids;
}

/** The next record a phase's ending gives. */
async function nextRecord(
  o: PhaseRunOptions,
  settled: { ok: true; outcome: PhaseOutcome } | { ok: false; error?: unknown; interrupted?: true },
  aborted: AbortKind | undefined,
  written: string[],
  submitted: Plan | null,
): Promise<TaskRecord> {
  const { ws, agentId, claim, record } = o;
  const epoch = claim.epoch;
  const failed = (status: 'failed' | 'timed_out' | 'cancelled', code: string, message: string): TaskRecord => {
    const rec = cloneRecord(record);
    rec.state = { ...rec.state, epoch, status, processed_by: agentId, last_error: { code, message: message.slice(0, 8192), at: isoNow() } };
    return rec;
  };
  // A timeout or a cancel decides the ending even if the handler returned during its grace
  // (spec: bindings-workspace#transitions, #approval-and-cancel); a shutdown lets finished work count.
  if (aborted === 'timeout') {
    return failed(
      'timed_out',
      'DEADLINE_EXCEEDED',
      `phase ${JSON.stringify(record.next_phase)} ran longer than timeout_seconds (${record.requirements.timeout_seconds} s)`,
    );
  }
  if (aborted === 'cancel') return cancelled(record, epoch, agentId);
  if (settled.ok && submitted) {
    const rec = cloneRecord(record);
    const checkpoint = await readCheckpoint(o);
    rec.state = {
      ...rec.state,
      epoch,
      status: 'awaiting_approval',
      processed_by: agentId,
      last_error: null,
      checkpoint: checkpoint ?? rec.state.checkpoint,
    };
    return rec;
  }
  if (settled.ok && o.approval?.decision.decision === 'needs_revision') {
    return failed(
      'failed',
      'PROTOCOL_VIOLATION',
      `the plan "${o.approval.plan.plan_id}" needs revision, but phase ${JSON.stringify(record.next_phase)} ended without submitting a revised plan (spec: plans#decisions)`,
    );
  }
  if (settled.ok) {
    try {
      return await finishedRecord(o, settled.outcome, written);
    } catch (err) {
      const e = errorOf(err, record);
      return failed('failed', e.code, `the phase's outcome was refused: ${e.message}`);
    }
  }
  const checkpoint = await readCheckpoint(o);
  if (aborted === 'shutdown') {
    // A release: the phase goes back to pending/ (or, decided, to awaiting/ with its decision) for
    // another agent; a shutdown is not a failed attempt.
    const rec = cloneRecord(record);
    rec.state = {
      ...rec.state,
      epoch,
      status: claim.from === 'awaiting' ? 'awaiting_approval' : 'pending',
      processed_by: agentId,
      checkpoint: checkpoint ?? rec.state.checkpoint,
      last_error: {
        code: 'SHUTTING_DOWN',
        message: `${agentId} shut down during phase ${JSON.stringify(record.next_phase)} and released the task`,
        at: isoNow(),
      },
    };
    return rec;
  }
  const e = errorOf(settled.error, record);
  if (!e.retryable) return failed('failed', e.code, e.message);
  return afterFailedAttempt(
    ws,
    record,
    epoch,
    `its last attempt failed with ${e.code}`,
    { code: e.code, message: e.message.slice(0, 8192), at: isoNow() },
    checkpoint,
    agentId,
  );
}

function cancelled(record: TaskRecord, epoch: number, agentId: string): TaskRecord {
  const rec = cloneRecord(record);
  rec.state = { ...rec.state, epoch, status: 'cancelled', processed_by: agentId, last_error: null };
  return rec;
}

async function readCheckpoint(o: PhaseRunOptions): Promise<Record<string, unknown> | undefined> {
  try {
    const v: unknown = await readJsonFile(o.ws.paths.sidecar(o.claim.taskId, o.claim.epoch, 'checkpoint'), 1024 * 1024);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The record after a finished phase: history entry appended (and compacted), phases moved on, attempts reset (spec: bindings-workspace#transitions). */
async function finishedRecord(o: PhaseRunOptions, outcome: PhaseOutcome, written: string[]): Promise<TaskRecord> {
  const { ws, agentId, claim, record } = o;
  if (typeof outcome !== 'object' || outcome === null || !('output' in outcome)) {
    throw new TapError({ code: 'INTERNAL_ERROR', message: 'the handler returned no { output }', retryable: false });
  }
  const phase = record.next_phase!;
  const artifacts = [...written];
  for (const path of outcome.artifacts ?? []) {
    (await openArtifact(ws, path)).close();
    const normal = path
      .split('/')
      .filter((s) => s !== '' && s !== '.')
      .join('/');
    if (!artifacts.includes(normal)) artifacts.push(normal);
  }
  const next = outcome.next_phase === undefined ? pipelineNext(record, phase) : outcome.next_phase;
  if (next !== null && !isIdentifier(next)) {
    throw new TapError({
      code: 'INVALID_MESSAGE',
      message: `next_phase ${JSON.stringify(next)} is not a valid phase name`,
      retryable: false,
    });
  }
  const rec = cloneRecord(record);
  const entry: HistoryEntry = {
    agent: agentId,
    phase,
    timestamp: isoNow(),
    input: record.context.current_input,
    output: outcome.output ?? null,
    artifacts,
  };
  // The approved plan and its decision stay with the phase that ran it (spec: bindings-workspace#approval-and-cancel).
  if (o.approval) Object.assign(entry, { plan: o.approval.plan, decision: o.approval.decision });
  await appendHistory(ws, rec, entry, claim.epoch, agentId);
  rec.current_phase = phase;
  rec.next_phase = next;
  rec.context.current_input = outcome.next_input === undefined ? (outcome.output ?? null) : outcome.next_input;
  rec.requirements.target_agent = outcome.target_agent ?? '';
  rec.state = {
    attempts: 0,
    epoch: claim.epoch,
    last_error: null,
    checkpoint: null,
    processed_by: agentId,
    status: next === null ? 'completed' : 'pending',
  };
  const issues = validateAgainst('task-record.schema.json', rec);
  if (issues)
    throw new TapError({
      code: 'INVALID_MESSAGE',
      message: `the next record would be invalid: ${describeIssues(issues)}`,
      retryable: false,
    });
  return rec;
}
