/** tasks profile, Result size (spec: tasks#result-size). */
import type { Peer } from '../../peer.ts';
import { fail, type Outcome, pass, skipped } from '../../verdict.ts';
import { check, need, require, runTask, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage } from '../../steps.ts';
import { type Case, defineCase } from '../../case.ts';
import { cap, withSmallMessages } from './kit.ts';
import { MAX_NESTING_DEPTH, nestedDeeperThan } from '../../../reference/core/ijson.ts';

/** A message_id of the longest allowed length, 128 characters, unique to this peer. */
function longestMessageId(peer: Peer): string {
  return peer.ids.message().padEnd(128, '.');
}

/**
 * Sends an echo whose task.result just fits in `max` while a snapshot carrying it would not;
 * the agent must then end the task failed MESSAGE_TOO_LARGE, or answer task.status with a
 * snapshot that fits (spec: tasks#result-size).
 */
async function snapshotSizeProbe(peer: Peer, max: number): Promise<Outcome> {
  const small = need(await runTask(peer, 'tap.test.echo', 'a'.repeat(100), { taskId: peer.ids.task('big') }));
  const resultOverhead = Buffer.byteLength(small.result.text) - 100;
  const ask = await peer.post('task.status', {}, { task_id: small.taskId, message_id: longestMessageId(peer) });
  const snap = need(await peer.reply(ask));
  if (snap.msg.type !== 'task.snapshot')
    return fail('task.status of a completed task was not answered with a snapshot', 'task.snapshot', describeMessage(snap.msg));
  const snapshotOverhead = Buffer.byteLength(snap.text) - 100;
  const probeReq = peer.envelope(
    'task.request',
    { capability: 'tap.test.echo', input: '' },
    { task_id: peer.ids.task('big'), message_id: 'q2' },
  );
  const requestOverhead = Buffer.byteLength(JSON.stringify(probeReq));
  const k = Math.min(max - resultOverhead, max - requestOverhead);
  if (!(snapshotOverhead + k > max)) {
    return skipped(
      `no echo request fits whose result fits but whose snapshot does not (overheads: request ${requestOverhead}, result ${resultOverhead}, snapshot ${snapshotOverhead} bytes)`,
    );
  }
  const req = { ...probeReq, payload: { capability: 'tap.test.echo', input: 'a'.repeat(k) } };
  await peer.send(req);
  const reply = need(await peer.reply(req));
  if (reply.msg.type === 'error')
    return fail(
      `the agent refused a request of ${Buffer.byteLength(JSON.stringify(req))} bytes`,
      'task.accepted',
      describeMessage(reply.msg),
    );
  const r = need(await collectUntilResult(peer, req.task_id!));
  const p = r.result.msg.payload;
  if (p.status === 'failed' && p.error?.code === 'MESSAGE_TOO_LARGE')
    return pass('the result would not fit in a snapshot: failed MESSAGE_TOO_LARGE');
  const again = await peer.post('task.status', {}, { task_id: req.task_id, message_id: longestMessageId(peer) });
  const s2 = need(await peer.reply(again));
  const bytes = Buffer.byteLength(s2.text);
  return verdictOf(
    `the ${describeMessage(r.result.msg)} fits in its snapshot`,
    check(
      bytes <= max,
      `the agent kept a result that fits in task.result but sent a ${bytes}-byte snapshot over a ${max}-byte limit`,
      `task.result failed MESSAGE_TOO_LARGE, or a snapshot of at most ${max} bytes`,
      `${describeMessage(s2.msg)} of ${bytes} bytes`,
    ),
  );
}

export const cases: Case[] = [
  defineCase({
    id: 'tasks.result.snapshot-size',
    title: 'A result that fits in task.result but not in a snapshot ends failed MESSAGE_TOO_LARGE, so every snapshot fits',
    profile: 'tasks',
    requirements: ['TAP-TASK-040'],
    needs: cap('echo'),
    run: (ctx) => withSmallMessages(ctx, snapshotSizeProbe),
  }),
  defineCase({
    id: 'tasks.result.snapshot-depth',
    title:
      'An echo of a 62-level input, whose task.result is 64 levels deep, ends failed MESSAGE_TOO_LARGE or leaves no snapshot deeper than 64',
    profile: 'tasks',
    requirements: ['TAP-TASK-042', 'TAP-LIM-014'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // The request is 64 levels deep (envelope, payload, then the input's 62), at the limit every agent accepts.
      let input: unknown = [];
      for (let depth = 1; depth < MAX_NESTING_DEPTH - 2; depth++) input = [input];
      const r = need(await runTask(peer, 'tap.test.echo', input, { taskId: peer.ids.task('deep') }));
      const p = r.result.msg.payload;
      require(
        check(
          !nestedDeeperThan(r.result.text, MAX_NESTING_DEPTH),
          'the task.result nests deeper than 64 levels',
          'at most 64 levels',
          'deeper',
        ),
      );
      if (p.status === 'failed' && p.error?.code === 'MESSAGE_TOO_LARGE')
        return pass('the snapshot would be too deep: failed MESSAGE_TOO_LARGE');
      const ask = await peer.post('task.status', {}, { task_id: r.taskId });
      const snap = need(await peer.reply(ask));
      return verdictOf(
        `the ${describeMessage(r.result.msg)}, and its snapshot within 64 levels`,
        check(
          !nestedDeeperThan(snap.text, MAX_NESTING_DEPTH),
          `the agent finished the task ${String(p.status)} and sent a snapshot nested deeper than ${MAX_NESTING_DEPTH} levels`,
          `task.result failed MESSAGE_TOO_LARGE (details.reason nesting), or a snapshot of at most ${MAX_NESTING_DEPTH} levels`,
          `${describeMessage(snap.msg)} deeper than ${MAX_NESTING_DEPTH} levels`,
        ),
      );
    },
  }),
];
