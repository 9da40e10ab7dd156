/** core profile, Parameters (spec: handshake#params). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, show, verdictOf, wrongReply } from '../kit.ts';
import { initPayload } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.params-limits',
    title: "Final max_message_bytes and max_concurrent_tasks are the smaller of proposed and the agent's own",
    profile: 'core',
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const low = need(await ctx.sessionWith({ params: { max_message_bytes: 4096, max_concurrent_tasks: 1 } })).hs.ack.msg.payload;
      const high = need(await ctx.sessionWith({ params: { max_message_bytes: 2 ** 40, max_concurrent_tasks: 1_000_000 } })).hs.ack.msg
        .payload;
      const cardMax = high.agent?.limits?.max_message_bytes;
      return verdictOf(
        'the smaller value wins both ways',
        check(
          low.params.max_message_bytes === 4096,
          'a lower proposed max_message_bytes was not kept',
          '4096',
          show(low.params.max_message_bytes),
        ),
        check(
          low.params.max_concurrent_tasks === 1,
          'a lower proposed max_concurrent_tasks was not kept',
          '1',
          show(low.params.max_concurrent_tasks),
        ),
        check(
          high.params.max_message_bytes === cardMax,
          "a huge proposed max_message_bytes did not fall to the card's limit",
          show(cardMax),
          show(high.params.max_message_bytes),
        ),
        check(
          high.params.max_concurrent_tasks < 1_000_000,
          'a huge proposed max_concurrent_tasks was accepted unchanged',
          "the agent's own limit",
          show(high.params.max_concurrent_tasks),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.params-heartbeat',
    title: 'Final heartbeat_ms is the larger of both sides, clamped to [1000, 60000]',
    profile: 'core',
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const low = need(await ctx.sessionWith({ params: { heartbeat_ms: 10 } })).hs.ack.msg.payload.params.heartbeat_ms;
      const high = need(await ctx.sessionWith({ params: { heartbeat_ms: 3_600_000 } })).hs.ack.msg.payload.params.heartbeat_ms;
      const mid = need(await ctx.sessionWith({ params: { heartbeat_ms: 59_000 } })).hs.ack.msg.payload.params.heartbeat_ms;
      return verdictOf(
        `heartbeat 10 → ${low}, 3 600 000 → ${high}, 59 000 → ${mid}`,
        check(low >= 1000 && low <= 60000, 'a proposal of 10 ms was not clamped into [1000, 60000]', 'a value in [1000, 60000]', show(low)),
        check(high === 60000, 'a proposal of one hour was not clamped to 60000', '60000', show(high)),
        check(mid === 59000, 'a proposal of 59 000 ms (larger than any agent value within range) was not kept', '59000', show(mid)),
      );
    },
  }),
  defineCase({
    id: 'core.handshake.params-request-timeout',
    title: "Final request_timeout_ms is the requester's proposal",
    profile: 'core',
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const v = need(await ctx.sessionWith({ params: { request_timeout_ms: 12345 } })).hs.ack.msg.payload.params.request_timeout_ms;
      return verdictOf('kept', check(v === 12345, 'the proposed request_timeout_ms was changed', '12345', show(v)));
    },
  }),
  defineCase({
    id: 'core.handshake.params-streaming',
    title: 'A requester that proposes streaming: false gets streaming: false',
    profile: 'core',
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const v = need(await ctx.sessionWith({ params: { streaming: false } })).hs.ack.msg.payload.params.streaming;
      return verdictOf('kept', check(v === false, 'streaming: false was not kept', 'false', show(v)));
    },
  }),
  defineCase({
    id: 'core.handshake.params-omitted',
    title: "Omitted proposals take the agent's values and still yield complete params",
    profile: 'core',
    requirements: ['TAP-HS-009'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const payload = { ...initPayload(peer, {}), params: {} };
      const sent = await peer.post('handshake.init', payload);
      const ack = need(await peer.reply(sent));
      if (ack.msg.type !== 'handshake.ack') return wrongReply('init with empty params', 'handshake.ack', ack.msg);
      const p = ack.msg.payload.params ?? {};
      return verdictOf(
        'complete params',
        check(p.integrity === 'none', 'no integrity proposal must mean "none"', '"none"', show(p.integrity)),
        check(
          typeof p.request_timeout_ms === 'number',
          'no request_timeout_ms in the final params',
          'a number',
          show(p.request_timeout_ms),
        ),
      );
    },
  }),
];
