/** core profile, Message size (spec: limits#message-size). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectAlive, expectNoTask, need, require, show, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage, handshake, initPayload, startTask } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.limits.message-too-large',
    title: 'A message larger than max_message_bytes gets MESSAGE_TOO_LARGE, has no effect, and the session stays open',
    profile: 'core',
    requirements: ['TAP-LIM-001'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const taskId = peer.ids.task();
      const m = peer.envelope('task.request', { capability: 'tap.test.echo', input: 'x'.repeat(5000) }, { task_id: taskId });
      await peer.send(m, { deliberate: 'a 5 KB request over a 4096-byte limit' });
      const r = need(await peer.waitFor((x) => x.msg.type === 'error', 'an error for the oversized message'));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a request over max_message_bytes'));
      require(await expectNoTask(peer, taskId, 'the oversized request was refused'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'MESSAGE_TOO_LARGE'));
    },
  }),
  defineCase({
    id: 'core.limits.agent-sizes',
    title: 'The agent never sends a message larger than max_message_bytes: large output is split across events',
    profile: 'core',
    requirements: ['TAP-LIM-002', 'TAP-LIM-040'],
    needs: { capabilities: ['tap.test.stream'] },
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const t = need(await startTask(peer, 'tap.test.stream', { count: 3, chunk: 'c'.repeat(1000) }));
      need(await collectUntilResult(peer, t.taskId));
      // The ack is read under the requester's card limit, not the final one (spec: limits#message-size).
      const big = peer.received.find((r) => r.msg.type !== 'handshake.ack' && Buffer.byteLength(r.text) > 4096);
      return verdictOf(
        'all within 4096 bytes',
        check(
          !big,
          `the agent sent a ${big ? Buffer.byteLength(big.text) : 0}-byte ${big?.msg.type}`,
          '≤ 4096 bytes',
          `${big ? Buffer.byteLength(big.text) : 0} bytes`,
        ),
      );
    },
  }),
  defineCase({
    id: 'core.limits.final-limit-before-go',
    title: 'From the ack on the final max_message_bytes holds: a handshake.ready above it gets MESSAGE_TOO_LARGE, not go',
    profile: 'core',
    requirements: ['TAP-LIM-040'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const hs = need(await handshake(peer, { params: { max_message_bytes: 2048 }, stopAfterAck: true }));
      const params = hs.ack.msg.payload.params as Record<string, unknown>;
      const final = Number(params.max_message_bytes);
      // Under the 64 KiB of the pre-handshake limit, above the final limit (TAP-HS-040: an x- member is not refused).
      const ready = peer.envelope('handshake.ready', { params: { ...params, 'x-conform-padding': 'p'.repeat(final + 256) } });
      const mark = peer.mark();
      await peer.send(ready, { deliberate: `a handshake.ready above the final max_message_bytes (${final})` });
      const r = need(
        await peer.waitFor(
          (m) => m.index >= mark && (m.msg.type === 'error' || m.msg.type === 'handshake.go'),
          'an answer to the oversized handshake.ready',
        ),
      );
      return verdictOf(
        'MESSAGE_TOO_LARGE',
        checkError(
          r.msg,
          { code: 'MESSAGE_TOO_LARGE' },
          `a ${Buffer.byteLength(JSON.stringify(ready))}-byte handshake.ready after an ack fixing ${final}`,
        ),
      );
    },
  }),
  defineCase({
    id: 'core.limits.ack-size',
    title: "The handshake.ack fits the requester's card limit, or the init gets MESSAGE_TOO_LARGE and no session",
    profile: 'core',
    requirements: ['TAP-LIM-041', 'TAP-LIM-042'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const card = { ...(initPayload(peer, {}).agent as Record<string, unknown>) };
      card.limits = { max_concurrent_tasks: 1, max_task_seconds: 60, max_message_bytes: 1024 };
      const init = await peer.post('handshake.init', { ...initPayload(peer, {}), agent: card });
      const r = need(await peer.reply(init));
      if (r.msg.type === 'handshake.ack') {
        const bytes = Buffer.byteLength(r.text);
        return verdictOf(
          `an ack of ${bytes} bytes`,
          check(
            bytes <= 1024,
            `the agent sent a ${bytes}-byte handshake.ack to a requester whose card accepts 1024`,
            '≤ 1024 bytes',
            `${bytes} bytes`,
          ),
        );
      }
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE', replyTo: init.message_id }, 'an init whose card accepts 1024 bytes'));
      const d = r.msg.payload.details ?? {};
      require(
        check(
          d.max_message_bytes === 1024 && Number.isInteger(d.byte_length) && d.byte_length > 1024,
          'MESSAGE_TOO_LARGE does not give the card limit and the size of the ack in details',
          '{ max_message_bytes: 1024, byte_length: > 1024 }',
          show(d),
        ),
      );
      require(check(r.msg.payload.fatal !== true, 'the refusal is marked fatal', 'fatal absent or false', show(r.msg.payload.fatal)));
      // No session was created: a handshake with an ordinary card follows on the same transport (spec: handshake#failures).
      const again = await peer.post('handshake.init', initPayload(peer, {}));
      const ack = need(await peer.reply(again));
      return verdictOf(
        'refused without a session; a new init succeeded',
        check(
          ack.msg.type === 'handshake.ack',
          'a new init after the refusal was not acknowledged',
          'handshake.ack',
          describeMessage(ack.msg),
        ),
      );
    },
  }),
];
