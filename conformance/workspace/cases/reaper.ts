/**
 * The reaper: a claim whose lease stopped changing is re-queued with attempts + 1 (a dead letter
 * at max_attempts), never earlier than lease_ms after the lease last changed and never because
 * of a time written in a file; records in awaiting/ are never reaped; half-done transitions are
 * finished (spec: bindings-workspace#reaper, #transitions, #dead-letters).
 *
 * The spec lets any agent or a dedicated process reap. When nothing reaps a dead claim within
 * the allowance, the reaper cases are UNIMPLEMENTED: the agent does not act as a reaper.
 */
import { promises as fsp } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { check, show, verdictOf } from '../../cases/kit.ts';
import type { CaseContext } from '../../context.ts';
import { EARLY_TOLERANCE_MS, fail, judgePunctuality, skipped, timingWindow, unimplemented, type Outcome } from '../../verdict.ts';
import { renderRecord, type TaskRecord } from '../../../reference/workspace/index.ts';
import { sha256Hex } from '../../../reference/workspace/fsio.ts';
import { barrier, expectRecord, finishWithin, needPhases, whereIs, wsCase } from '../kit.ts';
import { inodeOf, poll, readOrNull, readRecordFile } from '../observe.ts';
import { PHASES, UNSERVED, forgeClaim, leaseBytes, publishFile, publishRecord, record, writeFileAtomic } from '../records.ts';
import type { WorkspaceRun } from '../workspace-run.ts';

/** What happened to a forged claim. */
export interface Reaped {
  id: string;
  /** Ms after the lease last changed at which the claimed file was gone; undefined: never. */
  after?: number;
  /** The claimed file vanished while the harness still renewed the lease. */
  early?: number;
  sent: TaskRecord;
}

const YEAR_2001 = new Date('2001-01-01T00:00:00Z');

/**
 * Forges the claim @1 of an agent that died (attempts as given), optionally keeps renewing its
 * lease for `renewMs` (with stale times written in the files), then waits for the claimed file to
 * be reaped.
 */
async function deadClaim(
  ctx: CaseContext,
  run: WorkspaceRun,
  o: { phase: string; attempts?: number; renewMs?: number; tag: string },
): Promise<Reaped> {
  const id = run.taskId(o.tag);
  const sent = record(id, o.phase, { reap: o.tag }, { state: { attempts: o.attempts ?? 0 } });
  const { path, lease } = await forgeClaim(run.ws, sent, 1);
  let lastChange = performance.now();
  const w = timingWindow(run.leaseMs, ctx.env.timeScale);
  const r: Reaped = { id, sent };
  if (o.renewMs) {
    await fsp.utimes(path, YEAR_2001, YEAR_2001);
    const end = performance.now() + o.renewMs;
    for (let k = 1; performance.now() < end; k++) {
      await new Promise((res) => setTimeout(res, run.leaseMs / 4));
      if ((await inodeOf(path)) === null) {
        r.early = performance.now() - lastChange;
        return r;
      }
      // Stale times in the lease and the files: a reaper judges by its own observations only.
      await writeFileAtomic(
        lease,
        leaseBytes('tap-conform.slow', 1, k, { renewed_at: YEAR_2001.toISOString(), expires_at: YEAR_2001.toISOString() }),
      );
      await fsp.utimes(lease, YEAR_2001, YEAR_2001);
      lastChange = performance.now();
    }
  }
  const gone = await poll(async () => ((await inodeOf(path)) === null ? performance.now() : null), w.latestMs + run.scaled(1000), 10);
  if (gone !== null) r.after = gone - lastChange;
  ctx.note(
    `forged claim ${id}@1 (attempts ${o.attempts ?? 0}${o.renewMs ? `, lease renewed for ${o.renewMs} ms` : ''}): ${r.after === undefined ? 'never reaped' : `gone ${Math.round(r.after)} ms after its lease last changed`}`,
  );
  return r;
}

/**
 * Whether the claim vanished while the harness renewed it, but only after a pause of the harness's
 * own of lease_ms or more since its last renewal: the agent may have reaped it rightly then (a
 * machine under load kept the harness from renewing in time), or early, and which cannot be told.
 */
function renewedLate(run: WorkspaceRun, r: Reaped): boolean {
  return r.early !== undefined && r.early >= run.leaseMs - EARLY_TOLERANCE_MS;
}

/** UNIMPLEMENTED when nothing reaped, FAIL when it was reaped too early; null when the timing is right. */
export function reapTiming(ctx: CaseContext, run: WorkspaceRun, r: Reaped): Outcome | null {
  const w = timingWindow(run.leaseMs, ctx.env.timeScale);
  if (renewedLate(run, r))
    return skipped(
      `the harness renewed the lease late twice: the claim vanished ${Math.round(r.early!)} ms after its last renewal, no sooner than lease_ms (${run.leaseMs} ms), so the agent may have reaped it rightly (a machine under load: run it again on an idle one)`,
    );
  if (r.early !== undefined)
    return fail(
      `the claim was reaped while its lease was being renewed (${Math.round(r.early)} ms after a renewal)`,
      `no reaping while the lease changes at least every lease_ms (${run.leaseMs} ms)`,
      'reaped',
    );
  if (r.after === undefined)
    return unimplemented(
      `nothing reaped the expired claim within ${Math.round(w.latestMs)} ms: the agent does not act as a reaper (a dedicated process may)`,
    );
  if (r.after < run.leaseMs - EARLY_TOLERANCE_MS)
    return fail(
      `the claim was reaped ${Math.round(r.after)} ms after its lease last changed, before lease_ms (${run.leaseMs} ms)`,
      `reaping no earlier than ${run.leaseMs} ms`,
      `${Math.round(r.after)} ms`,
    );
  if (r.after > w.latestMs)
    return fail(
      `the claim was reaped ${Math.round(r.after)} ms after its lease last changed, beyond ${Math.round(w.latestMs)} ms`,
      `within ${Math.round(w.latestMs)} ms`,
      `${Math.round(r.after)} ms`,
    );
  return null;
}

/** Checks the re-queued record of a reaped claim @1. */
async function requeued(ctx: CaseContext, run: WorkspaceRun, r: Reaped): Promise<Outcome | null> {
  const got = await expectRecord(ctx, run, 'pending', r.id, run.scaled(3000), 'the reaped task');
  const s = got.record.state;
  await ctx.sleep(run.leaseMs / 3);
  const leftovers = run.observer.names('processing', `${r.id}@1.`);
  const still = [];
  for (const n of leftovers) if ((await inodeOf(`${run.ws.paths.dir('processing')}/${n}`)) !== null) still.push(n);
  return (
    check(
      s.attempts === (r.sent.state.attempts ?? 0) + 1,
      `the re-queued record has attempts ${s.attempts}`,
      `attempts ${(r.sent.state.attempts ?? 0) + 1}`,
      String(s.attempts),
    ) ??
    check(
      s.epoch === 1,
      `the re-queued record has state.epoch ${s.epoch}; a transition of claim @1 publishes epoch 1`,
      'epoch 1',
      String(s.epoch),
    ) ??
    check(s.status === 'pending', `the re-queued record has status ${show(s.status)}`, 'pending', show(s.status)) ??
    check(
      still.length === 0,
      `files of the reaped claim are left in processing/: ${still.join(', ')}`,
      "the claim's sidecars removed",
      still.join(', '),
    )
  );
}

function nonceFor(bytes: Buffer): string {
  return `${randomBytes(6).toString('hex')}-${sha256Hex(bytes).slice(0, 32)}`;
}

export const reaperCases = [
  wsCase({
    id: 'workspace.reaper.requeue',
    title: 'A claim whose lease stopped changing is re-queued to pending/ with attempts + 1, not before lease_ms',
    spec: 'bindings-workspace#reaper',
    requirements: ['TAP-WKS-019', 'TAP-WKS-018'],
    async run(ctx, run) {
      const r = await ctx.shared('workspace.reap', () => deadClaim(ctx, run, { phase: UNSERVED, tag: 'reap' }));
      const t = reapTiming(ctx, run, r);
      if (t) return t;
      return verdictOf(
        `re-queued ${Math.round(r.after!)} ms after the lease last changed (lease_ms ${run.leaseMs})`,
        await requeued(ctx, run, r),
      );
    },
  }),

  wsCase({
    id: 'workspace.reaper.punctual',
    title: 'An expired claim is re-queued punctually',
    level: 'SHOULD',
    spec: 'bindings-workspace#reaper',
    requirements: ['TAP-WKS-020'],
    async run(ctx, run) {
      const r = await ctx.shared('workspace.reap', () => deadClaim(ctx, run, { phase: UNSERVED, tag: 'reap' }));
      const t = reapTiming(ctx, run, r);
      if (t && t.verdict !== 'FAIL') return t;
      return judgePunctuality(timingWindow(run.leaseMs, ctx.env.timeScale), r.after, 'the re-queue of the expired claim');
    },
  }),

  wsCase({
    id: 'workspace.reaper.own-clock',
    title: "A claim whose lease keeps changing is not reaped, however old the times written in it and the files' mtimes",
    spec: 'bindings-workspace#reaper',
    requirements: ['TAP-WKS-018', 'TAP-WKS-019'],
    budgetMs: 40_000,
    async run(ctx, run) {
      let r = await deadClaim(ctx, run, { phase: UNSERVED, tag: 'renewed', renewMs: run.leaseMs * 2.5 });
      // A renewal the harness itself made late proves nothing: once more, with a claim of its own.
      if (renewedLate(run, r)) r = await deadClaim(ctx, run, { phase: UNSERVED, tag: 'renewed-again', renewMs: run.leaseMs * 2.5 });
      const t = reapTiming(ctx, run, r);
      if (t) return t;
      return verdictOf(`kept while renewed; reaped ${Math.round(r.after!)} ms after the last renewal`, await requeued(ctx, run, r));
    },
  }),

  wsCase({
    id: 'workspace.reaper.dead-letter',
    title: 'An expired claim whose attempts reach max_attempts goes to failed/ with last_error MAX_ATTEMPTS',
    spec: 'bindings-workspace#dead-letters',
    requirements: ['TAP-WKS-019'],
    async run(ctx, run) {
      const max = run.ws.config.max_attempts;
      const r = await deadClaim(ctx, run, { phase: UNSERVED, tag: 'dead-letter', attempts: max - 1 });
      const t = reapTiming(ctx, run, r);
      if (t) return t;
      const got = await expectRecord(ctx, run, 'failed', r.id, run.scaled(3000), 'the dead letter');
      const s = got.record.state;
      return verdictOf(
        `dead-lettered with attempts ${s.attempts}`,
        check(s.status === 'failed', `the dead letter has status ${show(s.status)}`, 'failed', show(s.status)),
        check(
          s.last_error?.code === 'MAX_ATTEMPTS',
          `the dead letter's last_error is ${show(s.last_error)}`,
          'MAX_ATTEMPTS',
          show(s.last_error),
        ),
        check(s.attempts === max, `the dead letter has attempts ${s.attempts}`, String(max), String(s.attempts)),
        check(s.epoch === 1, `the dead letter has state.epoch ${s.epoch}`, '1', String(s.epoch)),
      );
    },
  }),

  wsCase({
    id: 'workspace.reaper.retry',
    title: "A dead agent's task in a served phase is re-queued, claimed again as <id>@2 and completed once",
    spec: 'bindings-workspace#reaper',
    requirements: ['TAP-WKS-019', 'TAP-WKS-009'],
    async run(ctx, run) {
      needPhases(run, PHASES.echo);
      const r = await deadClaim(ctx, run, { phase: PHASES.echo, tag: 'retry' });
      const t = reapTiming(ctx, run, r);
      if (t) return t;
      const got = await expectRecord(ctx, run, 'completed', r.id, finishWithin(run), 'the retried task');
      const h = got.record.context.history;
      const claims = run.observer.claims(r.id);
      return verdictOf(
        `completed as claim @${got.record.state.epoch}`,
        check(
          got.record.state.epoch === 2,
          `the completed record has state.epoch ${got.record.state.epoch}`,
          "2: the harness's dead claim @1, then the agent's @2",
          String(got.record.state.epoch),
        ),
        check(
          h.length === 1 && h[0]!.agent === run.agentId,
          `the history is ${show(h.map((e) => e.agent))}`,
          `one entry by ${run.agentId}`,
          show(h),
        ),
        check(
          claims.every((n) => n === `${r.id}@1.tap.json` || n === `${r.id}@2.tap.json`),
          `the task was claimed as ${claims.join(', ')}`,
          `${r.id}@2.tap.json after the dead @1`,
          claims.join(', '),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.reaper.awaiting',
    title: 'A record in awaiting/ without a decision is never claimed or reaped, however old',
    spec: 'bindings-workspace#approval-and-cancel',
    requirements: ['TAP-WKS-022', 'TAP-WKS-019'],
    async run(ctx, run) {
      const id = run.taskId('awaiting');
      const rec = record(id, PHASES.echo, { plan: 'pending decision' }, { state: { status: 'awaiting_approval', epoch: 1 } });
      const sent = await publishRecord(run.ws, 'awaiting', rec);
      const plan = { plan_id: `${id}-plan`, intent: 'wait for a decision', steps: [{ action: 'nothing' }] };
      await publishFile(run.ws, 'awaiting', `${id}.plan.json`, JSON.stringify(plan) + '\n');
      const path = run.ws.paths.record('awaiting', id);
      await fsp.utimes(path, YEAR_2001, YEAR_2001);
      const ino = await inodeOf(path);
      await ctx.sleep(run.leaseMs * 2.5);
      await barrier(ctx, run);
      const now = await readOrNull(path);
      const claims = run.observer.claims(id);
      return verdictOf(
        'left alone in awaiting/',
        check(
          claims.length === 0,
          'the agent claimed a record waiting for a plan decision that does not exist',
          'no claim',
          claims.join(', '),
        ),
        check(
          now?.equals(sent) === true && ino === (await inodeOf(path)),
          'the record in awaiting/ was changed, moved or reaped',
          'the record untouched',
          await whereIs(run, id),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.transition.recovery',
    title: 'A commit marker left by an actor that stopped is finished: its prepared record published, or the marker removed',
    spec: 'bindings-workspace#transitions',
    requirements: ['TAP-WKS-016'],
    async run(ctx, run) {
      const processing = run.ws.paths.dir('processing');
      // (a) marker and prepared record: the publish step is left to do.
      const a = run.taskId('marker');
      const claimedA = Buffer.from(renderRecord(record(a, UNSERVED, { marker: 'a' })));
      const nextA = record(a, UNSERVED, { marker: 'a' }, { state: { epoch: 1, processed_by: 'tap-conform.departed' } });
      const nonceA = nonceFor(claimedA);
      await writeFileAtomic(run.ws.paths.next(a, 1, nonceA), renderRecord(nextA));
      await publishFile(run.ws, 'processing', `${a}@1.${nonceA}.commit`, claimedA);
      // (b) marker whose prepared record was published already: only the marker is left.
      const b = run.taskId('marker');
      const claimedB = Buffer.from(renderRecord(record(b, UNSERVED, { marker: 'b' })));
      const publishedB = await publishRecord(run.ws, 'pending', record(b, UNSERVED, { marker: 'b' }, { state: { epoch: 1 } }));
      const nonceB = nonceFor(claimedB);
      await publishFile(run.ws, 'processing', `${b}@1.${nonceB}.commit`, claimedB);
      const w = timingWindow(run.leaseMs, ctx.env.timeScale);
      const markerA = `${processing}/${a}@1.${nonceA}.commit`;
      const markerB = `${processing}/${b}@1.${nonceB}.commit`;
      const done = await poll(
        async () => ((await inodeOf(markerA)) === null && (await inodeOf(markerB)) === null ? true : null),
        w.latestMs,
        20,
      );
      if (!done) {
        const left = [
          (await inodeOf(markerA)) !== null ? 'the marker with its prepared record' : '',
          (await inodeOf(markerB)) !== null ? 'the marker without one' : '',
        ].filter(Boolean);
        if (left.length === 2)
          return unimplemented(
            `nothing finished the commit markers within ${Math.round(w.latestMs)} ms: the agent does not recover transitions (a reaper process may)`,
          );
        return fail(`${left.join(' and ')} was still there after ${Math.round(w.latestMs)} ms`, 'both markers settled', left.join(', '));
      }
      const gotA = await readRecordFile(run.ws.paths.record('pending', a), a);
      const nowB = await readOrNull(run.ws.paths.record('pending', b));
      const nextLeft = await inodeOf(run.ws.paths.next(a, 1, nonceA));
      return verdictOf(
        'the prepared record was published and both markers removed',
        check(
          gotA?.bytes.equals(Buffer.from(renderRecord(nextA))) === true,
          'the prepared record was not published in pending/ as it was prepared',
          'pending/ holds the prepared record',
          await whereIs(run, a),
        ),
        check(nextLeft === null, 'the prepared record is still in processing/ after the publish', 'moved', 'still there'),
        check(
          nowB?.equals(publishedB) === true,
          'the record published before the marker was found was changed or removed',
          'untouched',
          await whereIs(run, b),
        ),
      );
    },
  }),
];
