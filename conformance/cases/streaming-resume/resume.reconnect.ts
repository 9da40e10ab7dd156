/** streaming-resume profile, Reconnecting (spec: resume#reconnect). */
import { type Case, defineCase } from '../../case.ts';
import { reconnect, STREAM } from './kit.ts';
import { check, checkError, need, require, show, verdictOf } from '../kit.ts';
import { collectUntilResult, startTask, streamOf, waitStream } from '../../steps.ts';
import { fail } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'resume.reconnect.replay',
    title: 'After a dropped connection, handshake.init with resume gets the same session and the missed messages, then live',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-008', 'TAP-RES-009', 'TAP-RES-010', 'TAP-RES-013'],
    needs: { ...STREAM, binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const t = need(await startTask(old, 'tap.test.stream', { count: 25, interval_ms: 40 }));
      need(await waitStream(old, t.taskId, (m) => m.payload?.kind === 'output' && m.payload.data?.index >= 3, 'the fourth output event'));
      const seen = old.state.lastSequence(t.taskId);
      (ctx.connectionOf(old)?.transport as { terminate?: () => void } | undefined)?.terminate?.();
      await old.waitClosed(ctx.scaled(3000));
      const sessionId = old.state.sessionId;
      const token = old.state.resumeToken;
      const { peer, ack } = await reconnect(ctx, old, [{ task_id: t.taskId, last_sequence: seen }]);
      const p = ack.msg.payload;
      require(
        check(
          p.resumed === true && p.session_id === sessionId && p.resume_token === token,
          'the resume was not granted with the same session_id and resume_token',
          `resumed true, session ${sessionId}`,
          `resumed ${p.resumed}, session ${p.session_id}`,
        ),
      );
      const r = need(await collectUntilResult(peer, t.taskId, ctx.scaled(15_000)));
      const seqs = streamOf(peer, t.taskId).map((m) => m.msg.sequence);
      const want = Array.from({ length: r.result.msg.sequence! }, (_, i) => i + 1);
      return verdictOf(
        `resumed after sequence ${seen}; stream complete`,
        check(
          seqs.join(',') === want.join(','),
          'the stream seen across both connections has gaps or disorder',
          `1..${r.result.msg.sequence}`,
          seqs.join(','),
        ),
      );
    },
  }),
  defineCase({
    id: 'resume.reconnect.closes-old',
    title: 'A successful resume closes the transport the session used before',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-011', 'TAP-WS-010'],
    needs: { binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const { ack } = await reconnect(ctx, old, []);
      if (ack.msg.payload.resumed !== true)
        return fail('a resume with the right token over a still-open session was declined', 'resumed: true', show(ack.msg.payload.resumed));
      const closed = await old.waitClosed(ctx.scaled(5000));
      return verdictOf(
        'the old connection closed',
        check(closed, 'the previous connection stayed open after the resume', 'closed', 'open after 5 s'),
      );
    },
  }),
  defineCase({
    id: 'resume.reconnect.unknown-task',
    title: 'A granted resume listing a task the principal does not have answers UNKNOWN_TASK for it',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-010'],
    needs: { binding: 'websocket' },
    run: async (ctx) => {
      const old = need(await ctx.session());
      const { peer, ack } = await reconnect(ctx, old, [{ task_id: 'never-created', last_sequence: 0 }]);
      if (ack.msg.payload.resumed !== true) return fail('the resume was declined', 'resumed: true', show(ack.msg.payload.resumed));
      const e = need(
        await peer.waitFor((m) => m.msg.type === 'error' && m.msg.task_id === 'never-created', 'UNKNOWN_TASK for the listed task'),
      );
      return verdictOf('UNKNOWN_TASK', checkError(e.msg, { code: 'UNKNOWN_TASK' }, 'a listed task that does not exist'));
    },
  }),
];
