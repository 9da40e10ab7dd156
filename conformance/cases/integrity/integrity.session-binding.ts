/** integrity profile, Session binding (spec: integrity#session-binding). */
import { type Case, defineCase } from '../../case.ts';
import { refusedRequest, signed, SIGNED } from './kit.ts';
import type { Wire } from '../../session-state.ts';
import { signMessage } from '../../mac.ts';
import { pass } from '../../verdict.ts';
import { handshake } from '../../steps.ts';
import { checkError, expectError, expectNoTask, need, require, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.session-binding.signed',
    title: 'Under integrity a message with a wrong or missing session_id gets INVALID_SIGNATURE and has no effect',
    profile: 'integrity',
    requirements: ['TAP-INT-003'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      const key = peer.state.integrity!;
      const resign = (m: Wire) =>
        signMessage({ ...m, signature: undefined } as unknown as Record<string, unknown>, key.key, key.keyId) as unknown as Wire;
      await refusedRequest(
        peer,
        (m) => resign({ ...m, session_id: 'ZZZZZZZZZZZZZZZZZZZZZZZZ' }),
        'INVALID_SIGNATURE',
        'a signed task.request naming another session',
      );
      await refusedRequest(
        peer,
        (m) => {
          const { session_id: _s, ...rest } = m;
          return resign(rest as Wire);
        },
        ['INVALID_SIGNATURE', 'INVALID_MESSAGE'],
        'a signed task.request without session_id',
      );
      return pass('refused');
    },
  }),
  defineCase({
    id: 'integrity.session-binding.unsigned',
    title: 'Without integrity a message with a wrong or missing session_id gets PROTOCOL_VIOLATION and has no effect',
    profile: 'integrity',
    requirements: ['TAP-INT-003'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const a = peer.ids.task();
      const wrong = await peer.post(
        'task.request',
        { capability: 'tap.test.echo', input: 1 },
        { task_id: a, session_id: 'ZZZZZZZZZZZZZZZZZZZZZZZZ' },
      );
      require(await expectError(peer, wrong, { code: 'PROTOCOL_VIOLATION' }, 'a task.request naming another session'));
      const b = peer.ids.task();
      const m = peer.envelope('task.status', {}, { task_id: b });
      delete m.session_id;
      await peer.send(m, { deliberate: 'no session_id after the handshake' });
      const r = need(await peer.reply(m));
      require(
        checkError(r.msg, { code: ['PROTOCOL_VIOLATION', 'INVALID_MESSAGE'], replyTo: m.message_id }, 'a task.status without session_id'),
      );
      const c = peer.ids.task();
      const bare = peer.envelope('task.request', { capability: 'tap.test.echo', input: 2 }, { task_id: c });
      delete bare.session_id;
      await peer.send(bare, { deliberate: 'a task.request without session_id after the handshake' });
      const rb = need(await peer.reply(bare));
      require(
        checkError(
          rb.msg,
          { code: ['PROTOCOL_VIOLATION', 'INVALID_MESSAGE'], replyTo: bare.message_id },
          'a task.request without session_id',
        ),
      );
      require(await expectNoTask(peer, c, 'the task.request without session_id was refused'));
      return verdictOf('refused without effect', await expectNoTask(peer, a, 'the request for another session was refused'));
    },
  }),
  defineCase({
    id: 'integrity.session-binding.ready-without-session-id',
    title: 'Between the ack and go, a handshake.ready without session_id gets PROTOCOL_VIOLATION and no handshake.go',
    profile: 'integrity',
    requirements: ['TAP-INT-003'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const hs = need(await handshake(peer, { stopAfterAck: true }));
      const ready = peer.envelope('handshake.ready', { params: hs.ack.msg.payload.params });
      delete ready.session_id;
      await peer.send(ready, { deliberate: 'a handshake.ready without session_id, after the ack' });
      const r = need(await peer.reply(ready));
      return verdictOf(
        'refused',
        checkError(r.msg, { code: 'PROTOCOL_VIOLATION', replyTo: ready.message_id }, 'a handshake.ready without session_id'),
      );
    },
  }),
];
