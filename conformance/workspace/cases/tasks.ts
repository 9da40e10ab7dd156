/**
 * Task records in the phases the agent serves: claimed once under the right name, finished
 * exactly once into the right directory with its history, handed on to the next phase, and routed
 * by phase and target agent (spec: bindings-workspace#transitions, #phase-routing).
 */
import { check, jsonEqual, show, verdictOf } from '../../cases/kit.ts';
import { fail, type Outcome } from '../../verdict.ts';
import type { TaskRecord } from '../../../reference/workspace/index.ts';
import { barrier, expectRecord, finishWithin, needPhases, stop, whereIs, wsCase } from '../kit.ts';
import { claimFiles, inodeOf, poll, readOrNull, readRecordFile } from '../observe.ts';
import { PHASES, UNSERVED, entry, publishRecord, record } from '../records.ts';
import type { WorkspaceRun } from '../workspace-run.ts';

/** Checks a record the agent finished in phase `phase` from the submitted record `sent`. */
export function finishedBy(
  run: WorkspaceRun,
  sent: TaskRecord,
  got: TaskRecord,
  phase: string,
  output: unknown,
  epoch: number,
): Outcome | null {
  const id = sent.task_id;
  const prior = sent.context.history;
  const h = got.context.history;
  const last = h[h.length - 1];
  return (
    check(
      h.length === prior.length + 1,
      `task ${id}: the history has ${h.length} entries; the ${prior.length} it had and one for the phase were expected (a phase recorded twice ran twice)`,
      `${prior.length + 1} entries`,
      show(h.map((e) => `${e.agent}/${e.phase}`)),
    ) ??
    check(
      prior.every((e, i) => jsonEqual(e, h[i])),
      `task ${id}: the earlier history entries were changed`,
      show(prior),
      show(h.slice(0, prior.length)),
    ) ??
    check(
      last?.agent === run.agentId && last.phase === phase,
      `task ${id}: the new history entry is ${show(last && { agent: last.agent, phase: last.phase })}`,
      `{ agent: "${run.agentId}", phase: "${phase}" }`,
      show(last),
    ) ??
    check(
      jsonEqual(last?.input, sent.context.current_input),
      `task ${id}: the history entry's input is not the record's current_input`,
      show(sent.context.current_input),
      show(last?.input),
    ) ??
    check(
      jsonEqual(last?.output, output),
      `task ${id}: the ${phase} phase's output is not what the phase gives`,
      show(output),
      show(last?.output),
    ) ??
    check(
      got.current_phase === phase,
      `task ${id}: current_phase is ${show(got.current_phase)} after phase ${phase}`,
      phase,
      show(got.current_phase),
    ) ??
    check(
      got.state.attempts === 0,
      `task ${id}: attempts is ${got.state.attempts} after the phase finished`,
      '0',
      String(got.state.attempts),
    ) ??
    check(
      got.state.epoch === epoch,
      `task ${id}: state.epoch is ${got.state.epoch}; the record of claim @${epoch} carries the claim's epoch`,
      String(epoch),
      String(got.state.epoch),
    ) ??
    check(
      got.state.processed_by === run.agentId,
      `task ${id}: processed_by is ${show(got.state.processed_by)}`,
      run.agentId,
      show(got.state.processed_by),
    )
  );
}

/** Checks every claim name seen for a task: `<id>@<epoch>.tap.json` with the expected epochs only. */
export function claimsWere(run: WorkspaceRun, id: string, epochs: number[]): Outcome | null {
  const seen = run.observer.claims(id);
  const want = epochs.map((e) => `${id}@${e}.tap.json`);
  const odd = seen.filter((n) => !want.includes(n));
  return check(
    odd.length === 0,
    `task ${id} was claimed as ${odd.join(', ')}; a claim's name carries the record's state.epoch plus one`,
    want.join(', '),
    seen.join(', '),
  );
}

export const taskCases = [
  wsCase({
    id: 'workspace.tasks.complete-once',
    title: 'Tasks of a served phase are claimed as <id>@1, finished exactly once and published in completed/ with one history entry',
    spec: 'bindings-workspace#transitions',
    requirements: ['TAP-WKS-009', 'TAP-WKS-014', 'TAP-WKS-007', 'TAP-WKS-005'],
    async run(ctx, run) {
      needPhases(run, PHASES.echo);
      const sent = Array.from({ length: 5 }, (_, i) => record(run.taskId('once'), PHASES.echo, { n: i, text: `task ${i}` }));
      for (const r of sent) await publishRecord(run.ws, 'pending', r);
      const problems: (Outcome | null)[] = [];
      for (const r of sent) {
        const got = await expectRecord(ctx, run, 'completed', r.task_id, finishWithin(run), `task ${r.task_id}`);
        await ctx.sleep(run.leaseMs / 3);
        const ino = await inodeOf(run.ws.paths.record('completed', r.task_id));
        const left = await claimFiles(run.ws.paths.dir('processing'), r.task_id);
        problems.push(
          finishedBy(run, r, got.record, PHASES.echo, r.context.current_input, 1) ??
            check(
              got.record.next_phase === null,
              `task ${r.task_id}: next_phase is ${show(got.record.next_phase)} in completed/`,
              'null',
              show(got.record.next_phase),
            ) ??
            check(
              got.record.state.last_error === null,
              `task ${r.task_id}: a completed record carries last_error ${show(got.record.state.last_error)}`,
              'null',
              show(got.record.state.last_error),
            ) ??
            claimsWere(run, r.task_id, [1]) ??
            check(
              ino === got.ino,
              `task ${r.task_id}: tasks/completed/${r.task_id}.tap.json was replaced after it was published`,
              'one publication',
              'a second file under the same name',
            ) ??
            check(
              left.length === 0,
              `task ${r.task_id}: files of its claim are left in processing/ after the publication: ${left.join(', ')}`,
              'nothing left',
              left.join(', '),
            ),
        );
      }
      return verdictOf('5 tasks, each claimed as @1 and completed once', ...problems);
    },
  }),

  wsCase({
    id: 'workspace.tasks.hand-on',
    title: 'A finished phase appends its history entry, keeps the earlier ones, and hands the task on to its next phase in pending/',
    spec: 'bindings-workspace#transitions',
    requirements: ['TAP-WKS-007', 'TAP-WKS-008'],
    async run(ctx, run) {
      needPhases(run, PHASES.echo);
      const id = run.taskId('hand-on');
      const input = { brief: 'two phases done, one to go' };
      const rec = record(id, PHASES.echo, input, {
        current_phase: 'analysis',
        metadata: { pipeline: ['intake', 'analysis', PHASES.echo, UNSERVED] },
        context: {
          history: [
            entry('tap-conform.intake', 'intake', { raw: 'x' }, { parsed: true }),
            entry('tap-conform.analyst', 'analysis', { parsed: true }, input),
          ],
          current_input: input,
        },
      });
      await publishRecord(run.ws, 'pending', rec);
      const path = run.ws.paths.record('pending', id);
      // The file in pending/ is the submission until the agent has claimed it and handed it on.
      const done = await poll(
        async () => ((await readRecordFile(path, id))?.record?.current_phase === PHASES.echo ? true : null),
        finishWithin(run),
      );
      if (!done)
        stop(
          fail(
            `the task was not handed on within ${Math.round(finishWithin(run))} ms`,
            `a record in pending/ with current_phase ${PHASES.echo}`,
            await whereIs(run, id),
          ),
        );
      const got = await expectRecord(ctx, run, 'pending', id, 0, 'the task after its phase');
      const r = got.record;
      return verdictOf(
        `handed on to ${UNSERVED} with 3 history entries`,
        finishedBy(run, rec, r, PHASES.echo, input, 1),
        check(
          r.next_phase === UNSERVED,
          `next_phase is ${show(r.next_phase)}; the phase after ${PHASES.echo} in metadata.pipeline is ${UNSERVED}`,
          UNSERVED,
          show(r.next_phase),
        ),
        check(
          jsonEqual(r.context.current_input, input),
          'current_input of the next phase is not the output of the phase',
          show(input),
          show(r.context.current_input),
        ),
        check(r.state.status === 'pending', `state.status is ${show(r.state.status)}`, 'pending', show(r.state.status)),
      );
    },
  }),

  wsCase({
    id: 'workspace.routing.other-phase',
    title: 'A record whose next_phase the agent does not serve is never claimed',
    spec: 'bindings-workspace#phase-routing',
    requirements: ['TAP-WKS-008'],
    async run(ctx, run) {
      const id = run.taskId('other-phase');
      const sent = await publishRecord(run.ws, 'pending', record(id, UNSERVED, { not: 'for you' }));
      const ino = await inodeOf(run.ws.paths.record('pending', id));
      await barrier(ctx, run);
      const now = await readOrNull(run.ws.paths.record('pending', id));
      const claims = run.observer.claims(id);
      return verdictOf(
        'left alone',
        check(
          claims.length === 0,
          `the agent claimed a record of the phase ${UNSERVED}, which it does not serve`,
          'no claim',
          claims.join(', '),
        ),
        check(
          now?.equals(sent) === true && ino === (await inodeOf(run.ws.paths.record('pending', id))),
          'the record in pending/ was changed or removed',
          'the record untouched',
          await whereIs(run, id),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.routing.target-agent',
    title: 'A record whose target_agent names another agent is never claimed; one naming this agent is',
    spec: 'bindings-workspace#phase-routing',
    requirements: ['TAP-WKS-008'],
    async run(ctx, run) {
      needPhases(run, PHASES.echo);
      const other = run.taskId('for-another');
      const mine = run.taskId('for-me');
      const sent = await publishRecord(
        run.ws,
        'pending',
        record(other, PHASES.echo, { for: 'another' }, { requirements: { target_agent: 'tap-conform.another-agent' } }),
      );
      await publishRecord(run.ws, 'pending', record(mine, PHASES.echo, { for: 'me' }, { requirements: { target_agent: run.agentId } }));
      await expectRecord(ctx, run, 'completed', mine, finishWithin(run), `the task whose target_agent is "${run.agentId}"`);
      await barrier(ctx, run);
      const now = await readOrNull(run.ws.paths.record('pending', other));
      const claims = run.observer.claims(other);
      return verdictOf(
        'the task for another agent was left alone; the task for this agent was done',
        check(
          claims.length === 0,
          'the agent claimed a record whose target_agent is "tap-conform.another-agent"',
          'no claim',
          claims.join(', '),
        ),
        check(
          now?.equals(sent) === true,
          'the record for another agent was changed or removed',
          'the record untouched',
          await whereIs(run, other),
        ),
      );
    },
  }),
];
