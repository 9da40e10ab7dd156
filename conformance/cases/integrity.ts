/**
 * Identity and integrity profile: bound identities, session binding, HMAC signatures, skew,
 * forged senders, sessions and signatures (spec: integrity).
 */
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import { jcs, signMessage } from '../mac.ts';
import type { Wire } from '../session-state.ts';
import { collectUntilResult, describeMessage, initPayload, startTask } from '../steps.ts';
import { pass } from '../verdict.ts';
import { check, checkError, expectAlive, expectError, expectNoTask, need, require, runTask, show, verdictOf } from './kit.ts';

const P = 'integrity' as const;
const SIGNED = { integrity: true };

/** A signed session (the harness id is the key's peer). */
async function signed(ctx: CaseContext): Promise<Peer> {
  return need(await ctx.session({ signed: true }));
}

/** Signs `msg` with the session key, then lets `tamper` change it. */
function signedThen(peer: Peer, msg: Wire, tamper: (m: Wire) => Wire): Wire {
  const key = peer.state.integrity!;
  return tamper(signMessage(msg as unknown as Record<string, unknown>, key.key, key.keyId) as unknown as Wire);
}

/** Sends a task.request that must have no effect, and checks the error and that no task exists. */
async function refusedRequest(peer: Peer, tamper: (m: Wire) => Wire, code: string | string[], why: string): Promise<void> {
  const taskId = peer.ids.task();
  const m = signedThen(peer, peer.envelope('task.request', { capability: 'tap.test.echo', input: why }, { task_id: taskId }), tamper);
  await peer.send(m, { deliberate: why, sign: false });
  const r = need(await peer.reply(m));
  require(checkError(r.msg, { code, replyTo: m.message_id }, why));
  require(await expectNoTask(peer, taskId, `the ${why} request was refused`));
}

/** Opens a connection and sends a handshake.init built by `build`; returns the reply and the peer. */
async function initWith(ctx: CaseContext, build: (peer: Peer) => Wire, selfId?: string) {
  const peer = need(await ctx.connect({ selfId }));
  const m = build(peer);
  await peer.send(m, { deliberate: 'a handshake.init built by the case' });
  return { peer, sent: m, reply: need(await peer.reply(m)) };
}

/** Checks an error answering a handshake.init that proposed integrity: unsigned, fatal, then closed. */
async function unsignedFatal(ctx: CaseContext, peer: Peer, m: Wire, codes: string[], why: string) {
  require(checkError(m, { code: codes, fatal: true }, why));
  require(
    check(
      m.signature === undefined,
      'an error answering a handshake.init that proposed integrity is signed',
      'an unsigned error',
      show(m.signature),
    ),
  );
  const closed = await peer.waitClosed(ctx.scaled(5000));
  require(check(closed, 'the transport stayed open after the fatal handshake error', 'closed', 'open after 5 s'));
}

/** A handshake.init proposing integrity under `keyId`, signed with `key` when one is given. */
function integrityInit(p: Peer, keyId: string, key?: Uint8Array): Wire {
  const init = p.envelope('handshake.init', initPayload(p, { params: { integrity: { alg: 'hmac-sha256', key_id: keyId } } }));
  return key ? (signMessage(init as unknown as Record<string, unknown>, key, keyId) as unknown as Wire) : init;
}

export const integrityCases: Case[] = [
  defineCase({
    id: 'integrity.session.signed',
    title: 'With integrity agreed, the ack repeats it exactly and every message in both directions is signed',
    profile: P,
    requirements: ['TAP-INT-004', 'TAP-INT-006', 'TAP-CONF-011', 'TAP-INT-009', 'TAP-RES-005'],
    needs: { ...SIGNED, capabilities: ['tap.test.stream'] },
    run: async (ctx) => {
      const { peer, hs } = need(await ctx.sessionWith({ signed: true }));
      const key = peer.state.integrity!;
      const proposed = { alg: 'hmac-sha256', key_id: key.keyId };
      const t = need(await runTask(peer, 'tap.test.stream', { count: 3 }));
      const sent = await peer.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      need(await peer.reply(sent));
      await peer.barrier();
      const unsigned = peer.received.find((r) => r.msg.signature === undefined);
      return verdictOf(
        'signed throughout (each MAC verified)',
        check(
          jcs(hs.ack.msg.payload.params?.integrity) === jcs(proposed),
          'the final params do not repeat the proposed integrity exactly',
          jcs(proposed),
          jcs(hs.ack.msg.payload.params?.integrity),
        ),
        check(!unsigned, `the agent's ${unsigned?.msg.type} is unsigned`, 'a signature on every message', 'an unsigned message'),
      );
    },
  }),
  defineCase({
    id: 'integrity.signature.missing',
    title: 'Under integrity an unsigned message gets INVALID_SIGNATURE and has no effect',
    profile: P,
    requirements: ['TAP-INT-011'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      await refusedRequest(peer, ({ signature: _s, ...rest }) => rest as Wire, 'INVALID_SIGNATURE', 'an unsigned task.request');
      return verdictOf('refused', await expectAlive(peer, 'INVALID_SIGNATURE'));
    },
  }),
  defineCase({
    id: 'integrity.signature.wrong',
    title: 'A wrong MAC, or one made with another key_id, gets INVALID_SIGNATURE; one of the wrong shape INVALID_MESSAGE',
    profile: P,
    requirements: ['TAP-INT-011', 'TAP-INT-040'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      const flip = (v: string) => (v[0] === 'A' ? 'B' : 'A') + v.slice(1);
      await refusedRequest(
        peer,
        (m) => ({ ...m, signature: { ...m.signature!, value: flip(m.signature!.value) } }),
        'INVALID_SIGNATURE',
        'a task.request with a wrong MAC',
      );
      await refusedRequest(
        peer,
        (m) =>
          signMessage(
            { ...m, signature: undefined } as unknown as Record<string, unknown>,
            peer.state.integrity!.key,
            'another-key',
          ) as unknown as Wire,
        'INVALID_SIGNATURE',
        'a task.request signed under another key_id',
      );
      await refusedRequest(
        peer,
        (m) => ({ ...m, signature: { ...m.signature!, value: 'not-base64url!' } }),
        'INVALID_MESSAGE',
        'a task.request with a malformed signature value (the envelope schema comes first)',
      );
      return verdictOf('refused each time', await expectAlive(peer, 'INVALID_SIGNATURE'));
    },
  }),
  defineCase({
    id: 'integrity.signature.covers-unknown',
    title: 'The MAC covers unknown members: adding one after signing breaks it, signing with it included is fine',
    profile: P,
    requirements: ['TAP-INT-010'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      await refusedRequest(peer, (m) => ({ ...m, x_added_later: true }), 'INVALID_SIGNATURE', 'an unknown member added after signing');
      const ok = need(await runTask(peer, 'tap.test.echo', 'x', { extra: { x_signed_member: { a: 1 } } as never }));
      return verdictOf(
        'covered',
        check(
          ok.result.msg.payload.status === 'completed',
          'a signed message with an unknown member was not accepted',
          'completed',
          describeMessage(ok.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'integrity.signature.any-serialization',
    title: 'The receiver canonicalizes what it parsed: a signed message in another member order and spacing verifies',
    profile: P,
    spec: 'integrity#signing',
    reason:
      "the case signs a message in another serialization, which Signing describes; the rule it checks is verification's (TAP-INT-010)",
    requirements: ['TAP-INT-010', 'TAP-INT-009'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      const key = peer.state.integrity!;
      const m = signMessage(
        peer.envelope(
          'task.request',
          { capability: 'tap.test.echo', input: { b: 2, a: 1.5 } },
          { task_id: peer.ids.task() },
        ) as unknown as Record<string, unknown>,
        key.key,
        key.keyId,
      );
      const reordered = Object.fromEntries(Object.entries(m).reverse());
      await peer.sendText(JSON.stringify(reordered, null, 1).replace(/\n/g, ' '), 'the same signed message, members reversed, with spaces');
      const r = need(await peer.reply(m.message_id as string));
      if (r.msg.type === 'task.accepted') need(await collectUntilResult(peer, m.task_id as string));
      return verdictOf(
        'verified',
        check(
          r.msg.type === 'task.accepted',
          'a correctly signed message in another serialization was refused',
          'task.accepted',
          describeMessage(r.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'integrity.session-binding.signed',
    title: 'Under integrity a message with a wrong or missing session_id gets INVALID_SIGNATURE and has no effect',
    profile: P,
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
    id: 'integrity.skew.replay',
    title: 'Under integrity a first-seen message with a timestamp outside the skew window gets REPLAY_DETECTED and has no effect',
    profile: P,
    requirements: ['TAP-INT-014'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      const key = peer.state.integrity!;
      const old = new Date(Date.now() - 3600_000).toISOString();
      await refusedRequest(
        peer,
        (m) =>
          signMessage(
            { ...m, signature: undefined, timestamp: old } as unknown as Record<string, unknown>,
            key.key,
            key.keyId,
          ) as unknown as Wire,
        'REPLAY_DETECTED',
        'a signed task.request an hour old',
      );
      const future = new Date(Date.now() + 3600_000).toISOString();
      await refusedRequest(
        peer,
        (m) =>
          signMessage(
            { ...m, signature: undefined, timestamp: future } as unknown as Record<string, unknown>,
            key.key,
            key.keyId,
          ) as unknown as Wire,
        'REPLAY_DETECTED',
        'a signed task.request an hour in the future',
      );
      return verdictOf('refused', await expectAlive(peer, 'REPLAY_DETECTED'));
    },
  }),
  defineCase({
    id: 'integrity.skew.not-without-integrity',
    title: 'Without integrity timestamps are not checked for skew',
    profile: P,
    requirements: ['TAP-INT-015'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'old', { extra: { timestamp: new Date(Date.now() - 3600_000).toISOString() } }));
      return verdictOf(
        'accepted',
        check(
          t.result.msg.payload.status === 'completed',
          'an old timestamp was refused in an unsigned session',
          'completed',
          describeMessage(t.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'integrity.duplicate-members',
    title: 'Under integrity a message with duplicate member names gets MALFORMED_MESSAGE',
    profile: P,
    requirements: ['TAP-INT-012'],
    needs: SIGNED,
    run: async (ctx) => {
      const peer = await signed(ctx);
      const key = peer.state.integrity!;
      const m = signMessage(peer.envelope('ping', {}) as unknown as Record<string, unknown>, key.key, key.keyId);
      const text = JSON.stringify(m).replace('"payload":{}', '"payload":{},"payload":{}');
      await peer.sendText(text, 'duplicate member "payload" under integrity');
      const r = need(await peer.reply(m.message_id as string));
      return verdictOf('refused', checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, 'duplicate member names under integrity'));
    },
  }),
  defineCase({
    id: 'integrity.handshake.unknown-key',
    title: 'A handshake.init proposing a key the agent does not hold gets AUTH_REQUIRED, unsigned and fatal, and the transport closes',
    profile: P,
    requirements: ['TAP-INT-004', 'TAP-INT-016'],
    needs: SIGNED,
    run: async (ctx) => {
      const key = ctx.env.key!;
      const { peer, reply } = await initWith(ctx, (p) => integrityInit(p, 'no-such-key', key.key), key.peer);
      await unsignedFatal(ctx, peer, reply.msg, ['AUTH_REQUIRED'], 'integrity with an unknown key_id');
      return pass('refused, unsigned, fatal, closed');
    },
  }),
  defineCase({
    id: 'integrity.handshake.key-bound',
    title: 'A handshake.init signed with a key bound to another agent id gets AUTH_REQUIRED, unsigned and fatal',
    profile: P,
    requirements: ['TAP-INT-008', 'TAP-INT-016'],
    needs: SIGNED,
    run: async (ctx) => {
      const key = ctx.env.key!;
      const { peer, reply } = await initWith(ctx, (p) => integrityInit(p, key.keyId, key.key), 'tap-conform.intruder');
      await unsignedFatal(ctx, peer, reply.msg, ['AUTH_REQUIRED'], `the key of ${key.peer} used by another agent id`);
      return pass('refused');
    },
  }),
  defineCase({
    id: 'integrity.handshake.no-downgrade',
    title: 'An agent holding a key for the requester refuses a handshake without integrity (AUTH_REQUIRED)',
    profile: P,
    requirements: ['TAP-INT-005'],
    needs: SIGNED,
    run: async (ctx) => {
      const key = ctx.env.key!;
      const { peer, reply } = await initWith(ctx, (p) => p.envelope('handshake.init', initPayload(p, {})), key.peer);
      require(checkError(reply.msg, { code: 'AUTH_REQUIRED', fatal: true }, `integrity "none" from ${key.peer}, which holds a key`));
      const closed = await peer.waitClosed(ctx.scaled(5000));
      return verdictOf('refused and closed', check(closed, 'the transport stayed open after the fatal AUTH_REQUIRED', 'closed', 'open'));
    },
  }),
  defineCase({
    id: 'integrity.handshake.unsigned-init',
    title: 'A handshake.init proposing integrity without a signature is refused, with an unsigned fatal error',
    profile: P,
    requirements: ['TAP-INT-006', 'TAP-INT-016'],
    needs: SIGNED,
    run: async (ctx) => {
      const key = ctx.env.key!;
      const { peer, reply } = await initWith(ctx, (p) => integrityInit(p, key.keyId), key.peer);
      await unsignedFatal(ctx, peer, reply.msg, ['INVALID_SIGNATURE', 'AUTH_REQUIRED'], 'an unsigned init proposing integrity');
      return pass('refused');
    },
  }),
  defineCase({
    id: 'integrity.identity.forged-source',
    title: 'A message whose source is not the bound requester gets IDENTITY_MISMATCH and has no effect',
    profile: P,
    requirements: ['TAP-INT-001'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const taskId = peer.ids.task();
      const sent = await peer.post('task.request', { capability: 'tap.test.echo', input: 1 }, { task_id: taskId, source: 'mallory' });
      require(await expectError(peer, sent, { code: 'IDENTITY_MISMATCH' }, 'a task.request from source "mallory"'));
      require(await expectNoTask(peer, taskId, 'the forged request was refused'));
      const t = await peer.post('task.status', {}, { task_id: taskId, target: 'someone-else' });
      require(await expectError(peer, t, { code: 'IDENTITY_MISMATCH' }, 'a task.status to target "someone-else"'));
      return pass('refused');
    },
  }),
  defineCase({
    id: 'integrity.identity.forged-farewell',
    title: 'A forged session.farewell or shutdown.request never ends the session',
    profile: P,
    requirements: ['TAP-INT-002'],
    needs: { capabilities: ['tap.test.sleep'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.sleep', { ms: 30_000 }));
      const bye = await peer.post('session.farewell', { reason: 'forged' }, { source: 'mallory' });
      require(await expectError(peer, bye, { code: 'IDENTITY_MISMATCH' }, 'a session.farewell from "mallory"'));
      const stop = await peer.post('shutdown.request', { reason: 'forged', grace_ms: 0 }, { source: 'mallory' });
      require(await expectError(peer, stop, { code: 'IDENTITY_MISMATCH' }, 'a shutdown.request from "mallory"'));
      require(await expectAlive(peer, 'forged farewell and shutdown'));
      const snap = await peer.post('task.status', {}, { task_id: t.taskId });
      const s = need(await peer.reply(snap));
      const c = await peer.post('task.cancel', {}, { task_id: t.taskId });
      need(await peer.reply(c));
      need(await collectUntilResult(peer, t.taskId));
      const farewell = peer.received.find((r) => r.msg.type === 'session.farewell' || r.msg.type === 'task.handoff');
      return verdictOf(
        'the session went on',
        check(s.msg.payload?.state === 'running', 'the task was affected by the forged messages', 'running', describeMessage(s.msg)),
        check(!farewell, 'the agent began a shutdown on a forged message', 'no hand-off, no farewell', describeMessage(farewell?.msg)),
      );
    },
  }),
  defineCase({
    id: 'integrity.session-binding.unsigned',
    title: 'Without integrity a message with a wrong or missing session_id gets PROTOCOL_VIOLATION and has no effect',
    profile: P,
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
      return verdictOf('refused without effect', await expectNoTask(peer, a, 'the request for another session was refused'));
    },
  }),
  defineCase({
    id: 'integrity.order.signature-before-identity',
    title: 'A forged source with a bad signature gets INVALID_SIGNATURE: the signature is checked before identity',
    profile: P,
    requirements: ['TAP-ERR-010'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      await refusedRequest(peer, (m) => ({ ...m, source: 'mallory' }), 'INVALID_SIGNATURE', 'a forged source whose MAC no longer matches');
      return pass('INVALID_SIGNATURE first');
    },
  }),
];

integrityCases.push(
  defineCase({
    id: 'integrity.key.too-short',
    title: 'A pre-shared key shorter than 32 bytes is never accepted',
    profile: P,
    requirements: ['TAP-INT-007'],
    needs: { binding: 'stdio', integrity: true },
    run: async (ctx) => {
      const short = new Uint8Array(16).fill(7);
      const peerId = ctx.env.key!.peer;
      const c = await ctx.connect({
        selfId: peerId,
        env: { TAP_HMAC_KEY_ID: 'short-key', TAP_HMAC_KEY: Buffer.from(short).toString('base64url'), TAP_HMAC_PEER: peerId },
      });
      if (!c.ok) return pass('the agent refused to start with a 16-byte key');
      const peer = c.value;
      const m = integrityInit(peer, 'short-key', short);
      await peer.send(m, { sign: false });
      const r = await peer.reply(m);
      if (!r.ok) {
        const exit = await peer.waitExit(ctx.scaled(2000));
        return exit && exit.code !== 0 ? pass(`the agent refused to run with a 16-byte key (exit ${exit.code})`) : r.outcome;
      }
      return verdictOf('refused', checkError(r.value.msg, { code: 'AUTH_REQUIRED', fatal: true }, 'a session signed with a 16-byte key'));
    },
  }),
);
