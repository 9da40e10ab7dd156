/** core profile, Before the session is established (spec: handshake#before-go). */
import { type Case, defineCase } from '../../case.ts';
import { check, expectAlive, expectError, expectNoTask, need, require, verdictOf, wrongReply } from '../kit.ts';
import { DEFAULT_PARAMS, handshake, initPayload } from '../../steps.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.required-before-go',
    title: 'A task.request before the handshake gets HANDSHAKE_REQUIRED, has no effect, and the transport stays open',
    profile: 'core',
    requirements: ['TAP-HS-014', 'TAP-ERR-009'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const taskId = peer.ids.task('early');
      const sent = await peer.post(
        'task.request',
        { capability: 'tap.test.echo', input: 1 },
        { task_id: taskId, session_id: 'AAAAAAAAAAAAAAAAAAAAAA' },
        { deliberate: 'sent before the handshake' },
      );
      require(await expectError(peer, sent, { code: 'HANDSHAKE_REQUIRED' }, 'task.request before handshake.init'));
      require(await expectAlive(peer, 'HANDSHAKE_REQUIRED'));
      need(await handshake(peer));
      return verdictOf('refused, no task, session still possible', await expectNoTask(peer, taskId, 'the early request was refused'));
    },
  }),
  defineCase({
    id: 'core.handshake.required-after-ack',
    title: 'Between ack and go the session is not established: a task.request gets HANDSHAKE_REQUIRED',
    profile: 'core',
    requirements: ['TAP-HS-014', 'TAP-HS-013'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      need(await handshake(peer, { stopAfterAck: true }));
      const taskId = peer.ids.task('early');
      const sent = await peer.post(
        'task.request',
        { capability: 'tap.test.echo', input: 1 },
        { task_id: taskId },
        { deliberate: 'sent before handshake.go' },
      );
      require(await expectError(peer, sent, { code: 'HANDSHAKE_REQUIRED' }, 'task.request between ack and ready'));
      const ready = await peer.post('handshake.ready', { params: peer.state.params! });
      const go = need(await peer.reply(ready));
      if (go.msg.type !== 'handshake.go') return wrongReply('handshake.ready after the refused request', 'handshake.go', go.msg);
      peer.state.established = true;
      return verdictOf('refused without effect', await expectNoTask(peer, taskId, 'the request before go was refused'));
    },
  }),
  defineCase({
    id: 'core.handshake.ping-before-init',
    title: 'A ping before the handshake is answered with pong',
    profile: 'core',
    spec: 'handshake#before-go',
    reason: "a ping is what may come Before go; the rules it checks are handshake.init's (TAP-HS-001) and the heartbeats' (TAP-LIM-008)",
    requirements: ['TAP-HS-001', 'TAP-LIM-008'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      need(await peer.ping());
      need(await handshake(peer));
      return pass('pong before the handshake, then a normal session');
    },
  }),
  defineCase({
    id: 'core.handshake.ready-out-of-order',
    title: 'A handshake.ready before any ack gets PROTOCOL_VIOLATION',
    profile: 'core',
    requirements: ['TAP-HS-015'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const sent = await peer.post(
        'handshake.ready',
        { params: { ...DEFAULT_PARAMS, integrity: 'none' } },
        { session_id: 'AAAAAAAAAAAAAAAAAAAAAA' },
      );
      require(
        await expectError(peer, sent, { code: 'PROTOCOL_VIOLATION', registryRetryable: true }, 'handshake.ready with no handshake.init'),
      );
      if (peer.closed) return pass('refused (and closed)');
      need(await handshake(peer));
      return pass('refused; a proper handshake followed');
    },
  }),
  defineCase({
    id: 'core.handshake.ready-out-of-order-no-session',
    title: 'A handshake.ready before any ack and without session_id gets PROTOCOL_VIOLATION: the phase is checked before the payload',
    profile: 'core',
    requirements: ['TAP-HS-015', 'TAP-ERR-010'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      // No session exists yet, so the ready names none; the payload schema it fails is step 11, the phase step 10.
      const sent = await peer.post(
        'handshake.ready',
        { params: { ...DEFAULT_PARAMS, integrity: 'none' } },
        {},
        { deliberate: 'a handshake.ready before any handshake.init, with no session_id' },
      );
      require(await expectError(peer, sent, { code: 'PROTOCOL_VIOLATION' }, 'handshake.ready with no handshake.init and no session_id'));
      if (peer.closed) return pass('refused (and closed)');
      need(await handshake(peer));
      return pass('refused before its payload was read; a proper handshake followed');
    },
  }),
  defineCase({
    id: 'core.handshake.second-init',
    title: 'A second handshake.init on an established session gets PROTOCOL_VIOLATION and leaves the session as it was',
    profile: 'core',
    requirements: ['TAP-HS-015'],
    run: async (ctx) => {
      const { peer } = need(await ctx.sessionWith());
      const sessionId = peer.state.sessionId;
      const sent = await peer.post('handshake.init', initPayload(peer, {}));
      require(await expectError(peer, sent, { code: 'PROTOCOL_VIOLATION' }, 'a second handshake.init'));
      require(await expectAlive(peer, 'the second init'));
      return verdictOf(
        'refused; the session goes on',
        check(peer.state.sessionId === sessionId, 'the session changed', sessionId!, String(peer.state.sessionId)),
      );
    },
  }),
  defineCase({
    id: 'core.property.handshake',
    title: 'Random sequences of handshake messages get exactly the replies the handshake rules give (property-based)',
    profile: 'core',
    requirements: ['TAP-HS-014', 'TAP-HS-015', 'TAP-HS-009', 'TAP-HS-011', 'TAP-MSG-002'],
    budgetMs: 60_000,
    run: async (ctx) => (await import('../../property-runs.ts')).runHandshakeProperty(ctx),
  }),
];
