/** streaming-resume profile, Replayed resume (spec: resume#replayed-resume). */
import { type Case, defineCase } from '../../case.ts';
import { check, expectAlive, need, require, verdictOf } from '../kit.ts';
import { describeMessage, handshake, startTask, streamOf } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'resume.replayed-resume',
    title: 'A captured signed resume (init and ready) replayed on another connection is a duplicate: the session stays where it is',
    profile: 'streaming-resume',
    requirements: ['TAP-RES-016', 'TAP-IDEM-002'],
    needs: { capabilities: ['tap.test.stream'], binding: 'websocket', integrity: true },
    run: async (ctx) => {
      const first = need(await ctx.session({ signed: true }));
      const t = need(await startTask(first, 'tap.test.stream', { count: 8, interval_ms: 250 }));
      await first.close({ code: 1000, reason: 'the requester reconnects' });
      const state = first.state;
      const legit = need(await ctx.connect({ state, signed: true }));
      const lastSeen = Math.max(0, ...streamOf(first, t.taskId).map((r) => r.msg.sequence ?? 0));
      const resume = {
        session_id: state.sessionId!,
        resume_token: state.resumeToken!,
        tasks: [{ task_id: t.taskId, last_sequence: lastSeen }],
      };
      const hs = need(await handshake(legit, { integrity: true, resume }));
      require(
        check(hs.ack.msg.payload?.resumed === true, 'the legitimate resume was declined', 'resumed: true', describeMessage(hs.ack.msg)),
      );

      // An observer replays both captured frames, unchanged, on a connection of its own.
      const thief = need(await ctx.connect({ selfId: state.selfId }));
      await thief.send(hs.init, { deliberate: 'a captured handshake.init with resume, replayed', sign: false });
      const r1 = need(await thief.reply(hs.init));
      await thief.send(hs.ready!, { deliberate: 'a captured handshake.ready, replayed', sign: false });
      const r2 = need(await thief.reply(hs.ready!));
      const noNewAck = check(
        r1.text === hs.ack.text || r1.msg.type === 'error',
        'the replayed resume got a handshake.ack of its own: it was taken as a new resume, not as a duplicate',
        'the original ack byte for byte, or an error',
        describeMessage(r1.msg),
      );
      const noGo = check(
        r2.msg.type !== 'handshake.go' || r2.text === hs.go?.text,
        'the replayed handshake.ready completed a second resume',
        'an error, or the original go byte for byte',
        describeMessage(r2.msg),
      );
      await ctx.sleep(300);
      const stolen = streamOf(thief, t.taskId).filter((r) => r.conn === thief.conn);
      return verdictOf(
        'a duplicate; the legitimate connection keeps the session',
        noNewAck,
        noGo,
        check(stolen.length === 0, `the replayer received ${stolen.length} messages of the task's stream`, 'none', String(stolen.length)),
        await expectAlive(legit, 'the replayed resume'),
      );
    },
  }),
];
