/** streaming-resume profile, task.resume (spec: resume#task-resume). */
import { check, checkError, expectNothing, need, require, show, verdictOf, wrongReply } from '../kit.ts';
import { pass, skipped } from '../../verdict.ts';
import { collectUntilResult, startTask, waitStream } from '../../steps.ts';
import { type Case, defineCase } from '../../case.ts';
import { checkReplay, replaysSince, resume, resumeFinished, retainsNothing, STREAM } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'resume.task-resume.replay',
    title: 'task.resume: a snapshot, then every later message of the stream, byte for byte and in order',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-002', 'TAP-RES-005'],
    needs: STREAM,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 5, chunk: 'c' }));
      const r = need(await collectUntilResult(peer, t.taskId));
      const last = r.result.msg.sequence!;
      const { snapshot, mark } = await resume(peer, t.taskId, 2);
      if (snapshot.msg.type !== 'task.snapshot') return wrongReply('task.resume', 'task.snapshot', snapshot.msg);
      need(
        await peer.waitFor(
          (m) => m.index >= mark && m.msg.task_id === t.taskId && m.msg.sequence === last,
          `the replay up to sequence ${last}`,
        ),
      );
      await peer.barrier();
      return verdictOf(`replayed 3..${last}`, checkReplay(peer, t.taskId, replaysSince(peer, t.taskId, mark), 3, last));
    },
  }),
  defineCase({
    id: 'resume.task-resume.from-zero',
    title: 'task.resume with last_sequence 0 replays the whole stream from task.accepted',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-002'],
    needs: STREAM,
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const noWindow = retainsNothing(hs.ack.msg.payload.resume_window_ms);
      if (noWindow) return noWindow;
      const { last, replayed } = await resumeFinished(peer);
      return verdictOf(`replayed 1..${last}`, await replayed());
    },
  }),
  defineCase({
    id: 'resume.task-resume.nothing-new',
    title: 'task.resume at the last sequence sent gets a snapshot and replays nothing',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-002'],
    needs: STREAM,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 1 }));
      const r = need(await collectUntilResult(peer, t.taskId));
      const { snapshot, mark } = await resume(peer, t.taskId, r.result.msg.sequence!);
      if (snapshot.msg.type !== 'task.snapshot') return wrongReply('task.resume', 'task.snapshot', snapshot.msg);
      const { mark: mark2 } = await resume(peer, t.taskId, r.result.msg.sequence! + 10);
      return verdictOf(
        'nothing replayed',
        await expectNothing(
          peer,
          Math.min(mark, mark2),
          (m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined,
          'a resume at or past the last sequence replays nothing',
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.task-resume.live',
    title: 'task.resume mid-stream replays the missed messages before the next live one, then continues live without gaps',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-003'],
    needs: STREAM,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.stream', { count: 30, interval_ms: 40 }));
      need(await waitStream(peer, t.taskId, (m) => m.payload?.kind === 'output' && m.payload.data?.index >= 4, 'the fifth output event'));
      const { snapshot, mark } = await resume(peer, t.taskId, 1);
      if (snapshot.msg.type !== 'task.snapshot') return wrongReply('task.resume mid-stream', 'task.snapshot', snapshot.msg);
      const at = snapshot.msg.payload.last_sequence as number;
      const r = need(await collectUntilResult(peer, t.taskId, ctx.scaled(15_000)));
      const after = peer.since(mark).filter((m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined && m.index > snapshot.index);
      const seqs = after.map((m) => m.msg.sequence!);
      // Replays 2..at must come first, in order; then at+1.. live, in order.
      const replayed = seqs.slice(0, at - 1);
      const wantReplay = Array.from({ length: at - 1 }, (_, i) => i + 2);
      const live = seqs.slice(at - 1);
      const wantLive = Array.from({ length: r.result.msg.sequence! - at }, (_, i) => at + 1 + i);
      return verdictOf(
        `replayed 2..${at}, then live ${at + 1}..${r.result.msg.sequence}`,
        check(
          replayed.join(',') === wantReplay.join(','),
          'the replay did not come first and in order',
          `[${wantReplay.join(', ')}] first`,
          `[${seqs.join(', ')}]`,
        ),
        check(
          live.join(',') === wantLive.join(','),
          'the live stream after the replay has gaps, repeats or disorder',
          `[${wantLive.join(', ')}]`,
          `[${live.join(', ')}]`,
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.retention.unavailable',
    title: 'Asking for messages no longer retained gets RESUME_UNAVAILABLE with details.earliest_sequence, and no replay',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-004', 'TAP-RES-001'],
    needs: STREAM,
    budgetMs: 40_000,
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith());
      const keep = hs.ack.msg.payload.max_retained_messages as number;
      if (!(keep <= 5000))
        return skipped(`max_retained_messages is ${keep}; a stream longer than that is too long to send in a conformance run`);
      const count = keep + 5;
      const t = need(await startTask(peer, 'tap.test.stream', { count }));
      const r = need(await collectUntilResult(peer, t.taskId, ctx.scaled(30_000)));
      const last = r.result.msg.sequence!;
      const { snapshot, mark } = await resume(peer, t.taskId, 0);
      require(
        checkError(
          snapshot.msg,
          { code: 'RESUME_UNAVAILABLE', taskId: t.taskId },
          `task.resume from 0 of a ${last}-message stream with ${keep} retained`,
        ),
      );
      const earliest = snapshot.msg.payload.details?.earliest_sequence;
      require(
        check(
          Number.isInteger(earliest) && earliest > 1 && earliest <= last - keep + 1,
          'details.earliest_sequence does not name the first retained sequence',
          `an integer ≤ ${last - keep + 1}`,
          show(earliest),
        ),
      );
      require(
        await expectNothing(
          peer,
          mark,
          (m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined,
          'RESUME_UNAVAILABLE replays nothing',
        ),
      );
      const again = await resume(peer, t.taskId, earliest - 1);
      if (again.snapshot.msg.type !== 'task.snapshot')
        return wrongReply(`task.resume from earliest_sequence - 1 (${earliest - 1})`, 'task.snapshot', again.snapshot.msg);
      need(
        await peer.waitFor(
          (m) => m.index >= again.mark && m.msg.task_id === t.taskId && m.msg.sequence === last,
          'the replay of the retained messages',
          ctx.scaled(20_000),
        ),
      );
      return pass(`RESUME_UNAVAILABLE (earliest ${earliest}); the retained ${last - earliest + 1} replayed`);
    },
  }),
];
