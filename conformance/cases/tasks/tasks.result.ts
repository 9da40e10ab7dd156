/** tasks profile, Result (spec: tasks#result). */
import type { Peer } from '../../peer.ts';
import { fail, type Outcome, skipped } from '../../verdict.ts';
import { check, need, runTask, show, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage, startTask } from '../../steps.ts';
import { type Case, defineCase } from '../../case.ts';
import { cap, withSmallMessages } from './kit.ts';

/**
 * Builds an echo request whose task.request fits max_message_bytes while the task.result echoing
 * it would not, calibrated on a first small echo (spec: tasks#result).
 */
async function tooLargeProbe(peer: Peer, max: number): Promise<Outcome> {
  // Task ids of equal length, so the two results differ only in their output.
  const small = need(await runTask(peer, 'tap.test.echo', 'a'.repeat(100), { taskId: peer.ids.task('big') }));
  const resultOverhead = Buffer.byteLength(small.result.text) - 100;
  // Our own request overhead, measured on the same message we will send, with a short id.
  const probeReq = peer.envelope(
    'task.request',
    { capability: 'tap.test.echo', input: '' },
    { task_id: peer.ids.task('big'), message_id: 'q' },
  );
  const requestOverhead = Buffer.byteLength(JSON.stringify(probeReq));
  // A result longer than the request by some bytes: send a request exactly at the limit.
  const k = max - requestOverhead;
  if (resultOverhead + k < max + 3) {
    return skipped(
      `the agent's result envelope (${resultOverhead} bytes around the output) is not larger than the harness's request envelope (${requestOverhead}), so no echo request can fit while its result does not`,
    );
  }
  const req = { ...probeReq, payload: { capability: 'tap.test.echo', input: 'a'.repeat(k) } };
  await peer.send(req);
  const reply = need(await peer.reply(req));
  if (reply.msg.type === 'error')
    return fail(
      `the agent refused a request of exactly max_message_bytes (${max}): ${describeMessage(reply.msg)}`,
      'task.accepted',
      describeMessage(reply.msg),
    );
  const r = need(await collectUntilResult(peer, req.task_id!));
  const p = r.result.msg.payload;
  return verdictOf(
    `a ${resultOverhead + k}-byte result over a ${max}-byte limit ended failed MESSAGE_TOO_LARGE`,
    check(
      p.status === 'failed' && p.error?.code === 'MESSAGE_TOO_LARGE',
      'a result larger than max_message_bytes was not replaced by failed MESSAGE_TOO_LARGE',
      'task.result failed MESSAGE_TOO_LARGE',
      describeMessage(r.result.msg),
    ),
  );
}

export const cases: Case[] = [
  defineCase({
    id: 'tasks.result.exactly-one',
    title: 'Concurrent tasks each get exactly one result, and nothing follows it',
    profile: 'tasks',
    requirements: ['TAP-TASK-007'],
    needs: cap('echo', 'stream', 'sleep'),
    // Two echoes, a stream and a sleep, started back to back.
    tasks: 4,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const started = [
        need(await startTask(peer, 'tap.test.echo', 1)),
        need(await startTask(peer, 'tap.test.stream', { count: 5, interval_ms: 10 })),
        need(await startTask(peer, 'tap.test.sleep', { ms: 100 })),
        need(await startTask(peer, 'tap.test.echo', [2])),
      ];
      for (const t of started) need(await collectUntilResult(peer, t.taskId));
      await peer.barrier(300);
      const problems: string[] = [];
      for (const t of started) {
        const results = peer.received.filter((r) => !r.resent && r.msg.type === 'task.result' && r.msg.task_id === t.taskId);
        if (results.length !== 1) problems.push(`${t.taskId} got ${results.length} results`);
      }
      return verdictOf(
        'one result each',
        check(problems.length === 0, problems.join('; '), 'exactly one task.result per task', problems.join('; ')),
      );
    },
  }),
  defineCase({
    id: 'tasks.result.shape',
    title: 'Results carry output or error exactly as their status requires',
    profile: 'tasks',
    requirements: ['TAP-TASK-008'],
    needs: cap('echo', 'fail'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const ok = need(await runTask(peer, 'tap.test.echo', null));
      const bad = need(await runTask(peer, 'tap.test.fail', { code: 'PLAN_REJECTED' }));
      return verdictOf(
        'completed with output (even null), failed with error',
        check(
          'output' in ok.result.msg.payload && ok.result.msg.payload.output === null && !('error' in ok.result.msg.payload),
          'a completed echo of null must carry "output": null and no error',
          '{ status: completed, output: null }',
          show(ok.result.msg.payload),
        ),
        check(
          bad.result.msg.payload.error !== undefined && bad.result.msg.payload.output === undefined,
          'a failed result must carry error (and no output here)',
          '{ status: failed, error }',
          show(bad.result.msg.payload),
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.result.too-large',
    title: 'A result that would exceed max_message_bytes ends failed with MESSAGE_TOO_LARGE instead',
    profile: 'tasks',
    requirements: ['TAP-TASK-009'],
    needs: cap('echo'),
    run: (ctx) => withSmallMessages(ctx, tooLargeProbe),
  }),
];
