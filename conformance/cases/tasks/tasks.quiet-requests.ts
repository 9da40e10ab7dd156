/** tasks profile, Status, cancel, resume and repeats of a quiet task (spec: tasks#quiet-requests). */
import { type Case, defineCase } from '../../case.ts';
import { cap, described, quietRequest, quietResult, untilRunning } from './kit.ts';
import { check, expectNothing, need, show, verdictOf, wrongReply } from '../kit.ts';
import { describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'tasks.quiet.duplicate',
    title: "A duplicate of a quiet request gets the task's stream as sent so far, byte for byte, and nothing while it has sent nothing",
    profile: 'tasks',
    requirements: ['TAP-QUIET-104', 'TAP-IDEM-001'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // A task that runs until it is cancelled, so that the silence below is the duplicate's alone.
      const sent = await quietRequest(peer, 'tap.test.sleep', { ms: 30_000 });
      need(await untilRunning(peer, sent.task_id!));
      const early = peer.mark();
      await peer.send(sent);
      const silent = await expectNothing(
        peer,
        early,
        (r) => r.msg.task_id === sent.task_id,
        'a duplicate of a quiet request that has sent nothing',
      );
      const cancel = await peer.post('task.cancel', {}, { task_id: sent.task_id });
      need(await peer.reply(cancel));
      const result = need(await quietResult(peer, sent));
      if (result.msg.type !== 'task.result') return wrongReply('the cancelled quiet sleep task', 'its task.result', result.msg);
      const mark = peer.mark();
      await peer.send(sent);
      await peer.barrier();
      const again = peer.since(mark).filter((r) => r.msg.task_id === sent.task_id);
      return verdictOf(
        'nothing while running, then the task.result again',
        silent,
        check(
          again.length === 1 && again[0]!.text === result.text,
          'the duplicate of the ended quiet request was not answered with its task.result, byte for byte and alone',
          `one copy of task.result@${result.msg.sequence}`,
          again.map((r) => `${describeMessage(r.msg)}${r.text === result.text ? '' : ' (not byte for byte)'}`).join(', ') || 'nothing',
        ),
      );
    },
  }),
  defineCase({
    id: 'tasks.quiet.repeat-and-resume',
    title: 'A quiet task repeated under a new message_id gets its snapshot with the result, and task.resume after 1 replays its result',
    profile: 'tasks',
    requirements: ['TAP-QUIET-104', 'TAP-IDEM-008', 'TAP-RES-002'],
    needs: cap('echo'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await quietRequest(peer, 'tap.test.echo', { n: 7 });
      const result = need(await quietResult(peer, sent));
      if (result.msg.type !== 'task.result') return wrongReply('the quiet echo task', 'its task.result', result.msg);
      const repeat = await quietRequest(peer, 'tap.test.echo', { n: 7 }, { task_id: sent.task_id });
      const snap = need(await peer.reply(repeat));
      if (snap.msg.type !== 'task.snapshot') return wrongReply('a quiet request repeating an ended task', 'task.snapshot', snap.msg);
      const mark = peer.mark();
      const resume = await peer.post('task.resume', { last_sequence: 1 }, { task_id: sent.task_id });
      const resumed = need(await peer.reply(resume));
      if (resumed.msg.type !== 'task.snapshot') return wrongReply('task.resume of the quiet task', 'task.snapshot', resumed.msg);
      await peer.barrier();
      const replayed = peer.since(mark).filter((r) => r.msg.task_id === sent.task_id && typeof r.msg.sequence === 'number');
      return verdictOf(
        'snapshot with the result; the result replayed',
        check(
          JSON.stringify(snap.msg.payload?.result) === JSON.stringify(result.msg.payload),
          "the repeat's snapshot does not carry the task's result",
          show(result.msg.payload),
          show(snap.msg.payload?.result),
        ),
        check(
          replayed.length === 1 && replayed[0]!.text === result.text,
          'task.resume after last_sequence 1 did not replay the quiet stream (its task.result) byte for byte',
          `task.result@${result.msg.sequence}`,
          described(replayed),
        ),
      );
    },
  }),
];
