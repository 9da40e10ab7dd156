/** core profile, Nesting (spec: limits#nesting). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectAlive, need, require, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';
import { answerTo } from './kit.ts';

/** The depth every receiver accepts and one level more (spec: limits#nesting). */
const MAX_DEPTH = 64;

/** A value `levels` containers deep: nested arrays. */
function nested(levels: number): unknown {
  let v: unknown = [];
  for (let i = 1; i < levels; i++) v = [v];
  return v;
}

export const cases: Case[] = [
  defineCase({
    id: 'core.limits.nesting',
    title: 'A message 64 levels deep is taken; one 65 or 5 000 levels deep gets MALFORMED_MESSAGE and the session goes on',
    profile: 'core',
    requirements: ['TAP-LIM-013', 'TAP-LIM-015'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // ping (1) → payload (2) → deep: 62 levels of arrays, 64 in all.
      const ok = await peer.send(peer.envelope('ping', { deep: nested(MAX_DEPTH - 2) }), { deliberate: 'a ping 64 levels deep' });
      const pong = need(await peer.reply(ok));
      require(check(pong.msg.type === 'pong', 'a ping 64 levels deep was refused', 'pong', describeMessage(pong.msg)));
      let mark = peer.mark();
      const deep = await peer.send(peer.envelope('ping', { deep: nested(MAX_DEPTH - 1) }), { deliberate: 'a ping 65 levels deep' });
      const r65 = await answerTo(peer, deep, mark, 'an error for a message 65 levels deep');
      require(checkError(r65.msg, { code: 'MALFORMED_MESSAGE' }, 'a message 65 levels deep'));
      mark = peer.mark();
      await peer.sendText(`{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`, 'a 10 KB frame 5 000 levels deep');
      const r5000 = need(await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a frame 5 000 levels deep'));
      require(checkError(r5000.msg, { code: 'MALFORMED_MESSAGE' }, 'a frame 5 000 levels deep'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'a frame 5 000 levels deep'));
    },
  }),
];
