/** core profile, Errors are never answered (spec: errors#no-replies-to-errors). */
import { type Case, defineCase } from '../../case.ts';
import { checkError, expectAlive, expectNothing, need, require, verdictOf } from '../kit.ts';
import { expectMalformed } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.never-answered',
    title: 'An error message from the requester is never answered, not even a malformed one',
    profile: 'core',
    requirements: ['TAP-ERR-004'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      const good = await peer.post('error', { code: 'INTERNAL_ERROR', message: 'the requester failed', retryable: true });
      const bad = await peer.post('error', { code: 'lowercase-code', retryable: 'maybe' }, {}, { deliberate: 'a malformed error' });
      const unknown = await peer.post('error', { code: 'SOME_FUTURE_CODE', message: 'a code from a later minor', retryable: false });
      const ids = new Set([good.message_id, bad.message_id, unknown.message_id]);
      require(
        await expectNothing(peer, mark, (r) => r.msg.reply_to !== undefined && ids.has(r.msg.reply_to), 'nothing may answer an error'),
      );
      return verdictOf('no reply; the session goes on', await expectAlive(peer, 'errors from the requester'));
    },
  }),
  defineCase({
    id: 'core.bad-input.nested-error-type',
    title: 'A malformed frame with "type":"error" only inside its payload is still answered',
    profile: 'core',
    requirements: ['TAP-ERR-030'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const id = peer.ids.message();
      for (const [text, why] of [
        [
          `{"protocol":"tap/1.0","message_id":"${id}-a","type":"task.request","payload":{"type":"error"},`,
          'truncated JSON whose payload says "type":"error"',
        ],
        [`{"payload":{"kind":"x","type":"error"},"message_id":"${id}-b",`, 'truncated JSON with "type":"error" only in its payload'],
        [`{"note":"\\"type\\":\\"error\\"","message_id":"${id}-c",`, 'truncated JSON with "type":"error" inside a string'],
      ] as const)
        await expectMalformed(peer, text, why);
      return verdictOf('each answered MALFORMED_MESSAGE; the session goes on', await expectAlive(peer, 'malformed frames'));
    },
  }),
  defineCase({
    id: 'core.bad-input.oversized-error-prefix',
    title: 'An oversized frame is an error, left unanswered, only when its kept prefix shows a top-level "type":"error"',
    profile: 'core',
    requirements: ['TAP-ERR-030', 'TAP-ERR-004', 'TAP-LIM-003'],
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 2048 } }));
      const id = peer.ids.message();
      const filler = 'x'.repeat(4000);
      let mark = peer.mark();
      await peer.sendText(
        `{"protocol":"tap/1.0","message_id":"${id}-a","type":"error","payload":{"code":"INTERNAL_ERROR","message":"${filler}","retryable":false}}`,
        'an oversized error',
      );
      require(
        await expectNothing(
          peer,
          mark,
          (r) => r.msg.type === 'error',
          'an oversized frame whose prefix shows a top-level "type":"error" is an error, never answered',
        ),
      );
      mark = peer.mark();
      await peer.sendText(
        `{"protocol":"tap/1.0","message_id":"${id}-b","type":"task.request","payload":{"type":"error","input":"${filler}"}}`,
        'an oversized task.request whose payload says "type":"error"',
      );
      const r = need(await peer.waitFor((x) => x.index >= mark && x.msg.type === 'error', 'an error for the oversized task.request'));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'an oversized frame with "type":"error" only in its payload'));
      return verdictOf('the error unanswered, the request refused; the session goes on', await expectAlive(peer, 'two oversized frames'));
    },
  }),
];
