/**
 * The endings of a phase: timed out, cancelled and failed as the record and its sidecars say, and
 * a claim left to another claimant that renamed the record first (spec:
 * bindings-workspace#transitions, #approval-and-cancel, #directories, #claiming).
 */
import { check, show, verdictOf } from '../../cases/kit.ts';
import { fail, judgeOccurrence, pass, timingWindow, type Outcome } from '../../verdict.ts';
import { claimPending, writeLease } from '../../../reference/workspace/index.ts';
import { expectRecord, finishWithin, needAlive, needPhases, whereIs, wsCase } from '../kit.ts';
import { poll } from '../observe.ts';
import { HARNESS_AGENT, PHASES, finishClaim, publishRecord, record, writeFileAtomic } from '../records.ts';

import { claimsWere } from './tasks.ts';

export const phaseCases = [
  wsCase({
    id: 'workspace.phase.timeout',
    title: 'A phase that runs longer than timeout_seconds ends in failed/ with status timed_out, not before',
    spec: 'bindings-workspace#transitions',
    requirements: ['TAP-WKS-017'],
    async run(ctx, run) {
      needPhases(run, PHASES.sleep);
      const id = run.taskId('timeout');
      // The phase's clock starts at its claim, which the harness sees some time after it happened (a
      // loaded machine delays the sight by hundreds of ms), and never before the record is published.
      const publishedAt = performance.now();
      await publishRecord(run.ws, 'pending', record(id, PHASES.sleep, { ms: 120_000 }, { requirements: { timeout_seconds: 1 } }));
      const claimedAt = await poll(() => (run.observer.claims(id).length > 0 ? performance.now() : null), finishWithin(run), 5);
      if (claimedAt === null)
        return fail(
          `the agent did not claim a ${PHASES.sleep} task within ${Math.round(finishWithin(run))} ms`,
          'a claim',
          await whereIs(run, id),
        );
      const w = timingWindow(1000, ctx.env.timeScale);
      const got = await expectRecord(ctx, run, 'failed', id, w.latestMs + run.scaled(2000), 'the task that ran past timeout_seconds');
      const seen = performance.now();
      const status = got.record.state.status;
      if (status !== 'timed_out') return fail(`the task ended with status ${show(status)}`, 'timed_out', show(status));
      // Early only if it came before the nominal time even counted from the publication.
      return judgeOccurrence(w, { low: seen - claimedAt, high: seen - publishedAt }, 'the timed_out record');
    },
  }),

  wsCase({
    id: 'workspace.phase.cancel',
    title: 'A cancel sidecar written while the phase runs ends it in failed/ with status cancelled',
    spec: 'bindings-workspace#approval-and-cancel',
    requirements: ['TAP-WKS-023'],
    async run(ctx, run) {
      needPhases(run, PHASES.sleep);
      const id = run.taskId('cancel');
      await publishRecord(run.ws, 'pending', record(id, PHASES.sleep, { ms: 120_000 }));
      const claim = await poll(() => run.observer.claims(id)[0] ?? null, finishWithin(run), 5);
      if (!claim)
        return fail(
          `the agent did not claim a ${PHASES.sleep} task within ${Math.round(finishWithin(run))} ms`,
          'a claim',
          await whereIs(run, id),
        );
      const epoch = Number(claim.slice(id.length + 1, -'.tap.json'.length));
      await ctx.sleep(100);
      const t0 = performance.now();
      await writeFileAtomic(
        run.ws.paths.sidecar(id, epoch, 'cancel'),
        JSON.stringify({ requested_by: HARNESS_AGENT, at: new Date().toISOString() }) + '\n',
      );
      // A sleeping phase looks for the sidecar at least as often as it renews its lease.
      const w = timingWindow(run.leaseMs / 3, ctx.env.timeScale);
      const got = await expectRecord(ctx, run, 'failed', id, w.latestMs + run.scaled(2000), 'the cancelled task');
      const after = performance.now() - t0;
      if (got.record.state.status !== 'cancelled')
        return fail(`the task ended with status ${show(got.record.state.status)}`, 'cancelled', show(got.record.state.status));
      if (after > w.latestMs)
        return fail(
          `the cancel took effect after ${Math.round(after)} ms`,
          `within ${Math.round(w.latestMs)} ms`,
          `${Math.round(after)} ms`,
        );
      return pass(`cancelled ${Math.round(after)} ms after the sidecar was written`);
    },
  }),

  wsCase({
    id: 'workspace.phase.failed',
    title: 'A phase that fails with a non-retryable error ends in failed/ with status failed and that last_error',
    spec: 'bindings-workspace#directories',
    requirements: ['TAP-WKS-007'],
    async run(ctx, run) {
      needPhases(run, PHASES.fail);
      const id = run.taskId('fail');
      await publishRecord(
        run.ws,
        'pending',
        record(id, PHASES.fail, { code: 'PERMISSION_DENIED', retryable: false, message: 'failing on purpose' }),
      );
      const got = await expectRecord(ctx, run, 'failed', id, finishWithin(run), 'the failed task');
      const s = got.record.state;
      return verdictOf(
        'failed with PERMISSION_DENIED',
        check(s.status === 'failed', `status is ${show(s.status)}`, 'failed', show(s.status)),
        check(
          s.last_error?.code === 'PERMISSION_DENIED',
          `last_error is ${show(s.last_error)}`,
          'code PERMISSION_DENIED',
          show(s.last_error),
        ),
        check(
          got.record.current_phase === null,
          `current_phase is ${show(got.record.current_phase)}: the failed phase is recorded as finished`,
          'null (no phase finished)',
          show(got.record.current_phase),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.claim.lost-race',
    title: 'When another claimant renamed the record first, the agent leaves the task to it',
    spec: 'bindings-workspace#claiming',
    requirements: ['TAP-WKS-010'],
    async run(ctx, run) {
      needPhases(run, PHASES.echo);
      const ids = Array.from({ length: 6 }, () => run.taskId('race'));
      const mine = new Set<string>();
      await Promise.all(
        ids.map(async (id, i) => {
          await publishRecord(run.ws, 'pending', record(id, PHASES.echo, { race: i }));
          await new Promise((r) => setTimeout(r, i * 7));
          const claim = await claimPending(run.ws, id, 0, HARNESS_AGENT);
          if (!claim) return;
          mine.add(id);
          await writeLease(run.ws, id, claim.epoch, { agent_id: HARNESS_AGENT, epoch: claim.epoch, renewals: 0 });
        }),
      );
      ctx.note(`the harness won the claims of ${[...mine].join(', ') || 'none'}`);
      // Hold the claims a while, renewing the leases, then finish them as another agent would.
      for (let k = 1; k <= 3; k++) {
        await ctx.sleep(run.leaseMs / 4);
        for (const id of mine) await writeLease(run.ws, id, 1, { agent_id: HARNESS_AGENT, epoch: 1, renewals: k });
      }
      for (const id of mine) await finishClaim(run.ws, id, 1, { by: HARNESS_AGENT });
      needAlive(run, 'during the race');
      const problems: (Outcome | null)[] = [];
      for (const id of ids) {
        const got = await expectRecord(ctx, run, 'completed', id, finishWithin(run), `task ${id}`);
        const h = got.record.context.history;
        const winner = mine.has(id) ? HARNESS_AGENT : run.agentId;
        problems.push(
          check(
            h.length === 1 && h[0]!.agent === winner,
            `task ${id}: the history is ${show(h.map((e) => e.agent))}; only ${winner}, who claimed it, worked on it`,
            `[${winner}]`,
            show(h.map((e) => e.agent)),
          ),
          claimsWere(run, id, [1]),
        );
      }
      return verdictOf(
        `the harness won ${mine.size} of ${ids.length} claims, the agent ${ids.length - mine.size}; each task was done once, by its claimant`,
        ...problems,
      );
    },
  }),
];
