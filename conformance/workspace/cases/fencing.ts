/**
 * Fencing: a claimant stalled past its lease (the harness stops it with SIGSTOP and, acting as a
 * second agent's reaper, re-queues its claim) publishes nothing once it runs again; the task is
 * completed once, by the next claim (spec: bindings-workspace#transitions).
 */
import { check, show, verdictOf } from '../../cases/kit.ts';
import { fail } from '../../verdict.ts';
import { expectRecord, finishWithin, needAlive, needPhases, stop, whereIs, wsCase } from '../kit.ts';
import { poll, readOrNull, readRecordFile } from '../observe.ts';
import { PHASES, publishRecord, reapClaim, record } from '../records.ts';

export const fencingCases = [
  wsCase({
    id: 'workspace.fencing.stale-claim',
    title:
      'A claimant stalled past its lease publishes nothing once its claim was re-queued: the task is completed once, by the next claim',
    spec: 'bindings-workspace#transitions',
    requirements: ['TAP-WKS-014', 'TAP-WKS-015'],
    exclusive: true,
    budgetMs: 60_000,
    async run(ctx, run) {
      needPhases(run, PHASES.sleep);
      needAlive(run, 'before the case');
      const id = run.taskId('fencing');
      const ms = run.leaseMs * 2;
      await publishRecord(run.ws, 'pending', record(id, PHASES.sleep, { ms }));
      const leasePath = run.ws.paths.sidecar(id, 1, 'lease');
      const leased = await poll(() => readOrNull(leasePath), finishWithin(run), 5);
      if (!leased)
        stop(
          fail(
            `the agent did not claim the task with a lease (${id}@1.lease.json) within ${Math.round(finishWithin(run))} ms`,
            'a claim and its lease',
            await whereIs(run, id),
          ),
        );
      // Freeze the agent mid-phase; the harness then reaps the claim by its own observation of the lease.
      run.agent.pause();
      ctx.note('the agent was stopped (SIGSTOP) in the middle of the phase');
      let reaped = false;
      try {
        let last = await readOrNull(leasePath);
        let since = performance.now();
        const give = performance.now() + run.scaled(20_000);
        while (performance.now() < give) {
          await new Promise((r) => setTimeout(r, 20));
          const now = await readOrNull(leasePath);
          if (!(now === null ? last === null : last !== null && now.equals(last))) {
            last = now;
            since = performance.now();
          } else if (performance.now() - since >= run.leaseMs) break;
        }
        reaped = await reapClaim(run.ws, id, 1);
        ctx.note(
          reaped
            ? 'the harness re-queued the expired claim @1 (attempts 1) and let the agent run again'
            : 'the claim @1 was ended by someone else before the harness could reap it',
        );
      } finally {
        run.agent.resume();
      }
      if (!reaped)
        stop(
          fail(
            'the claim @1 ended while the agent was stopped, so nothing could be judged',
            'the claim held until the harness reaped it',
            await whereIs(run, id),
          ),
        );
      // Every version of completed/<id> and failed/<id> that ever appears, until the task is done and a while longer.
      const seen: { dir: string; epoch: number | null; ino: number; history: number }[] = [];
      const finished = async () => {
        for (const dir of ['completed', 'failed'] as const) {
          const r = await readRecordFile(run.ws.paths.record(dir, id), id);
          if (r && !seen.some((s) => s.dir === dir && s.ino === r.ino))
            seen.push({ dir, epoch: r.record?.state.epoch ?? null, ino: r.ino, history: r.record?.context.history.length ?? -1 });
        }
        return seen.some((s) => s.dir === 'completed' && s.epoch === 2) ? true : null;
      };
      const done = await poll(finished, finishWithin(run) + ms, 5);
      const tail = performance.now() + ms + run.leaseMs;
      while (performance.now() < tail) {
        await finished();
        await new Promise((r) => setTimeout(r, 5));
      }
      needAlive(run, 'after it was stopped and continued');
      ctx.note(`versions seen: ${show(seen)}`);
      if (!done)
        stop(
          fail(
            `the re-queued task was not completed by a new claim within ${Math.round(finishWithin(run) + ms)} ms`,
            'completed/ with state.epoch 2',
            await whereIs(run, id),
          ),
        );
      const stale = seen.filter((s) => s.epoch !== 2);
      const final = await expectRecord(ctx, run, 'completed', id, 0, 'the task');
      return verdictOf(
        'the stale claim published nothing; claim @2 completed the task once',
        check(
          stale.length === 0,
          `the stale claim @1 published a record after its claim was re-queued (${stale.map((s) => `${s.dir}/ with epoch ${s.epoch}`).join(', ')})`,
          'nothing from claim @1',
          show(stale),
        ),
        check(
          seen.filter((s) => s.dir === 'completed').length === 1,
          'completed/ was written more than once',
          'one publication',
          show(seen),
        ),
        check(
          final.record.context.history.length === 1,
          `the completed record has ${final.record.context.history.length} history entries: the phase was recorded twice`,
          '1',
          show(final.record.context.history.map((e) => e.agent)),
        ),
        check(
          final.record.state.epoch === 2,
          `the completed record has state.epoch ${final.record.state.epoch}`,
          '2',
          String(final.record.state.epoch),
        ),
      );
    },
  }),
];
