/** core profile, Before the handshake (spec: limits#pre-handshake). */
import type { Peer } from '../../peer.ts';
import type { Wire } from '../../session-state.ts';
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectAlive, need, require, verdictOf } from '../kit.ts';
import { answerTo } from './kit.ts';
import { handshake } from '../../steps.ts';

/** The frame size every agent takes before handshake.ack (spec: limits#pre-handshake). */
const PRE_HANDSHAKE_BYTES = 65_536;

/** A message of `type` padded so that its JSON text has exactly `bytes` bytes. */
function sized(peer: Peer, type: string, bytes: number, extra: Partial<Wire> = {}): Wire {
  const m = peer.envelope(type, { pad: '' }, extra);
  const base = Buffer.byteLength(JSON.stringify(m));
  return { ...m, payload: { pad: 'x'.repeat(Math.max(0, bytes - base)) } };
}

export const cases: Case[] = [
  defineCase({
    id: 'core.limits.pre-handshake-size',
    title: 'Before handshake.ack, a 65 536-byte frame is taken and a larger one gets MESSAGE_TOO_LARGE; the handshake then succeeds',
    profile: 'core',
    requirements: ['TAP-LIM-016'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const fits = await peer.send(sized(peer, 'task.status', PRE_HANDSHAKE_BYTES, { task_id: 'pre-handshake-fits' }), {
        deliberate: 'a 65 536-byte task.status before the handshake',
      });
      const rFits = need(await peer.reply(fits));
      const mark = peer.mark();
      const over = await peer.send(sized(peer, 'task.status', 200_000, { task_id: 'pre-handshake-over' }), {
        deliberate: 'a 200 000-byte task.status before the handshake',
      });
      const rOver = await answerTo(peer, over, mark, 'an error for a 200 000-byte frame before the handshake');
      require(checkError(rOver.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a 200 000-byte frame before the handshake'));
      const hs = need(await handshake(peer));
      const cardMax = Number(hs.ack.msg.payload?.agent?.limits?.max_message_bytes);
      const fitsCode = rFits.msg.type === 'error' ? String(rFits.msg.payload?.code) : rFits.msg.type;
      const mayRefuse = cardMax < PRE_HANDSHAKE_BYTES;
      return verdictOf(
        'the small frame judged on its content, the large one refused for its size',
        check(
          mayRefuse || fitsCode !== 'MESSAGE_TOO_LARGE',
          `a 65 536-byte frame before the handshake was refused as too large, though the card allows ${cardMax} bytes`,
          'HANDSHAKE_REQUIRED (the frame was read)',
          fitsCode,
        ),
        await expectAlive(peer, 'the refused frames'),
      );
    },
  }),
];
