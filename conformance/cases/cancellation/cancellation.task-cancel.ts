/** cancellation profile, task.cancel (spec: cancellation#task-cancel). */
import { type Case, defineCase } from '../../case.ts';
import { cancel, cap, checkCancelled, runningSleep } from './kit.ts';
import { check, checkWalk, need, outputsOf, show, statesOf, verdictOf, wrongReply } from '../kit.ts';
import { collectUntilResult, startTask, waitStream } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'cancellation.running',
    title: 'Cancelling a running task: snapshot (as before the cancel), state event cancelling, result cancelled',
    profile: 'cancellation',
    requirements: ['TAP-CAN-002', 'TAP-CAN-003', 'TAP-TASK-011'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = await runningSleep(peer);
      const before = peer.state.lastSequence(taskId);
      const { reply } = await cancel(peer, taskId);
      if (reply.msg.type !== 'task.snapshot') return wrongReply('task.cancel of a running task', 'task.snapshot', reply.msg);
      const r = need(await collectUntilResult(peer, taskId));
      const states = statesOf(r.stream);
      return verdictOf(
        states.join(' → '),
        check(
          reply.msg.payload.state === 'running',
          'the snapshot answering the cancel does not show the task before the cancel (running)',
          'running',
          show(reply.msg.payload.state),
        ),
        check(
          reply.msg.payload.last_sequence === before,
          'the snapshot last_sequence is not the last sequence sent before the cancel',
          String(before),
          show(reply.msg.payload.last_sequence),
        ),
        check(
          states.includes('cancelling'),
          'no state event cancelling after the cancel of a running task',
          '… → cancelling → cancelled',
          states.join(' → '),
        ),
        checkWalk(states, 'the cancelled task'),
        checkCancelled(r.result.msg),
      );
    },
  }),
  defineCase({
    id: 'cancellation.accepted-or-running',
    title: 'Cancelling a task straight after acceptance ends it cancelled by a legal path',
    profile: 'cancellation',
    requirements: ['TAP-CAN-001', 'TAP-CAN-002'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 60_000 }));
      const { reply } = await cancel(peer, t.taskId);
      if (reply.msg.type !== 'task.snapshot') return wrongReply('task.cancel of a fresh task', 'task.snapshot', reply.msg);
      const r = need(await collectUntilResult(peer, t.taskId));
      const states = statesOf(r.stream);
      const seenAs = reply.msg.payload.state;
      return verdictOf(
        `snapshot ${seenAs}; ${states.join(' → ')}`,
        check(
          seenAs === 'accepted' || seenAs === 'running',
          'the snapshot shows a state the task could not be in',
          'accepted or running',
          show(seenAs),
        ),
        seenAs === 'running'
          ? check(
              states.includes('cancelling'),
              'a running task was cancelled without passing through cancelling',
              '… → cancelling → cancelled',
              states.join(' → '),
            )
          : null,
        checkWalk(states, 'the cancelled task'),
        checkCancelled(r.result.msg),
      );
    },
  }),
  defineCase({
    id: 'cancellation.stops-work',
    title: 'Once cancelling, the task starts no new step: no output event follows the cancelling event',
    profile: 'cancellation',
    requirements: ['TAP-CAN-004'],
    needs: cap('stream'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 200, interval_ms: 30 }));
      need(
        await waitStream(
          peer,
          t.taskId,
          (m) => m.type === 'task.event' && m.payload?.kind === 'output' && m.payload.data?.index >= 2,
          'the third output event',
        ),
      );
      await cancel(peer, t.taskId);
      const r = need(await collectUntilResult(peer, t.taskId));
      const idx = r.stream.findIndex((m) => m.msg.payload?.kind === 'state' && m.msg.payload.state === 'cancelling');
      const late = idx >= 0 ? outputsOf(r.stream.slice(idx)) : [];
      return verdictOf(
        `${outputsOf(r.stream).length} outputs, none after cancelling`,
        check(idx >= 0, 'no cancelling state event', 'a state event cancelling', statesOf(r.stream).join(' → ')),
        check(
          late.length === 0,
          `${late.length} output events came after the task entered cancelling`,
          'no output after cancelling',
          `${late.length} output events`,
        ),
        checkCancelled(r.result.msg),
      );
    },
  }),
  defineCase({
    id: 'cancellation.keeps-task',
    title: 'A cancelled task is not deleted: its snapshot and stream stay available',
    profile: 'cancellation',
    spec: 'cancellation#task-cancel',
    reason: 'the case cancels a task and looks at it after, which Task cancel describes; what it checks is retention (TAP-RES-001)',
    requirements: ['TAP-RES-001', 'TAP-CAN-003'],
    needs: cap('sleep'),
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = await runningSleep(peer);
      await cancel(peer, taskId);
      const r = need(await collectUntilResult(peer, taskId));
      const sent = await peer.post('task.resume', { last_sequence: 0 }, { task_id: taskId });
      const snap = need(await peer.reply(sent));
      if (snap.msg.type !== 'task.snapshot') return wrongReply('task.resume of a cancelled task', 'task.snapshot', snap.msg);
      const last = r.result.msg.sequence!;
      const replay = need(
        await peer.waitFor((m) => m.resent && m.msg.task_id === taskId && m.msg.sequence === last, `the replay of sequence ${last}`),
      );
      return verdictOf(
        'still there',
        check(replay.text === r.result.text, 'the replayed result differs from the original', 'byte-identical', 'different'),
      );
    },
  }),
];
