/**
 * The NATS profile: opening connections, numbered frames and their pieces, keepalives, close
 * codes, one session per connection (spec: bindings-nats). Fault injection goes through the
 * harness's own NATS transport (pieces, gaps, silence) and a NATS connection of its own.
 */
import { connect, headers as natsHeaders } from '@nats-io/transport-node';
import { Header, NatsTransport, newConnectionId, openSubject, parseNatsUrl } from '../../reference/transports/nats/index.ts';
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import { handshake, initPayload } from '../steps.ts';
import { harnessError, judgeOccurrence, timingWindow, type Outcome } from '../verdict.ts';
import { check, checkError, expectAlive, need, require, show, verdictOf } from './kit.ts';

const NATS = { binding: 'nats' as const };
const P = 'nats' as const;

/** The harness's NATS transport of a peer, for fault injection. */
function natsOf(ctx: CaseContext, peer: Peer): NatsTransport {
  const t = ctx.connectionOf(peer)?.transport;
  if (!(t instanceof NatsTransport)) throw new Error('the connection is not a NATS transport');
  return t;
}

/** Sends open requests of its own to the agent under test; resolves with each Tap-Open verdict. */
async function openVerdicts(ctx: CaseContext, ids: string[]): Promise<string[]> {
  const target = ctx.env.target as { url: string };
  const address = parseNatsUrl(target.url);
  const nc = await connect({ servers: address.servers, ...(address.user !== undefined ? { user: address.user, pass: address.pass } : {}) });
  try {
    const out: string[] = [];
    for (const id of ids) {
      const h = natsHeaders();
      h.set(Header.CONNECTION, id);
      h.set(Header.KEEPALIVE_MS, '1000');
      const reply = await nc.request(openSubject('tap', address.agentId!), new Uint8Array(0), { headers: h, timeout: ctx.scaled(5000) });
      out.push(reply.headers?.get(Header.OPEN) ?? '');
    }
    return out;
  } finally {
    await nc.close();
  }
}

async function closeCodeAfter(ctx: CaseContext, act: (peer: Peer) => Promise<void>): Promise<{ code?: number; problem?: Outcome }> {
  const c = await ctx.connect();
  if (!c.ok) return { problem: c.outcome };
  const peer = c.value;
  await act(peer);
  const closed = await peer.waitClosed(ctx.scaled(12_000));
  return { code: closed ? peer.closed?.code : undefined };
}

const encoder = new TextEncoder();

export const natsCases: Case[] = [
  defineCase({
    id: 'nats.open.first-frame',
    title: 'A frame sent as soon as the open request is answered reaches the agent: the handshake completes',
    profile: P,
    requirements: ['TAP-NATS-003', 'TAP-NATS-006'],
    needs: NATS,
    run: async (ctx) => {
      // The harness sends handshake.init right after Tap-Open: ok; a late subscription would lose it.
      const peer = need(await ctx.session());
      return verdictOf('the handshake completed', await expectAlive(peer, 'the handshake'));
    },
  }),
  defineCase({
    id: 'nats.open.connection-id',
    title: 'An open request whose connection id is not a token, or names an open connection, is refused with 1008',
    profile: P,
    requirements: ['TAP-NATS-004'],
    needs: NATS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const open = natsOf(ctx, peer).connectionId;
      if (!open) return harnessError('the harness transport has no connection id');
      const [bad, taken, fresh] = await openVerdicts(ctx, ['not.a.token', open, newConnectionId()]);
      return verdictOf(
        'refused with 1008; a fresh id is accepted',
        check(bad === '1008', 'an open request with the connection id "not.a.token" was not refused with 1008', '1008', show(bad)),
        check(taken === '1008', 'an open request naming a connection already open was not refused with 1008', '1008', show(taken)),
        check(fresh === 'ok', 'an open request with a fresh connection id was not accepted', 'ok', show(fresh)),
        await expectAlive(peer, 'the refused open requests'),
      );
    },
  }),
  defineCase({
    id: 'nats.frames.pieces',
    title: 'A frame sent in pieces marked Tap-More is joined into one message',
    profile: P,
    requirements: ['TAP-NATS-008'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const text = 'piece '.repeat(2000);
      const m = peer.envelope('task.request', { capability: 'tap.test.echo', input: text }, { task_id: peer.ids.task() });
      ctx.note('sending a 12 KB task.request in pieces of 1000 bytes');
      await natsOf(ctx, peer).sendPieces(encoder.encode(JSON.stringify(m)), 1000);
      const r = need(
        await peer.waitFor((x) => x.msg.type === 'task.result' && x.msg.task_id === m.task_id, 'the echo of the joined request'),
      );
      return verdictOf(
        'joined',
        check(
          r.msg.payload?.output === text,
          'the echo of a request sent in pieces differs from the request',
          'the same text',
          show(r.msg.payload?.output, 80),
        ),
      );
    },
  }),
  defineCase({
    id: 'nats.frames.oversized-pieces',
    title: 'A frame joined from pieces beyond max_message_bytes gets MESSAGE_TOO_LARGE and the session stays open',
    profile: P,
    requirements: ['TAP-NATS-009', 'TAP-NATS-010'],
    needs: { ...NATS, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const m = peer.envelope('task.request', { capability: 'tap.test.echo', input: 'x'.repeat(6000) }, { task_id: peer.ids.task() });
      ctx.note('sending a 6 KB task.request over a 4096-byte limit, in pieces of 1000 bytes');
      await natsOf(ctx, peer).sendPieces(encoder.encode(JSON.stringify(m)), 1000);
      const r = need(await peer.waitFor((x) => x.msg.type === 'error', 'an error for the oversized message'));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a request over max_message_bytes sent in pieces'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'MESSAGE_TOO_LARGE'));
    },
  }),
  defineCase({
    id: 'nats.frames.gap',
    title: 'A message whose Tap-Seq skips a number has no effect and the agent counts the connection lost (1006)',
    profile: P,
    requirements: ['TAP-NATS-007'],
    needs: NATS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = natsOf(ctx, peer);
      t.skipSeq();
      const mark = peer.mark();
      const sent = await peer.post('ping', {});
      const closed = await peer.waitClosed(ctx.scaled(5000));
      const pong = peer.since(mark).find((r) => r.msg.type === 'pong' && r.msg.in_reply_to === sent.id);
      return verdictOf(
        'closed with 1006, unanswered',
        check(pong === undefined, 'the agent answered a ping that arrived after a gap in Tap-Seq', 'no pong', 'a pong'),
        check(
          closed,
          'the agent did not close the connection after a gap in Tap-Seq',
          'a close control with 1006',
          'the connection stayed open',
        ),
        check(
          !closed || peer.closed?.code === 1006,
          'the agent closed the connection after a gap with the wrong code',
          '1006',
          show(peer.closed?.code),
        ),
      );
    },
  }),
  defineCase({
    id: 'nats.liveness.keepalive',
    title: 'The agent sends keepalives at least as often as the Tap-Keepalive-Ms it announced',
    profile: P,
    requirements: ['TAP-NATS-012'],
    needs: NATS,
    budgetMs: 30_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = natsOf(ctx, peer);
      const every = t.peerKeepaliveMs;
      const from = Date.now();
      const before = t.log.keepalives;
      await ctx.sleep(Math.min(3 * every, 20_000));
      const times = t.log.keepaliveTimes.filter((x) => x >= from);
      const gaps = times.slice(1).map((x, i) => x - times[i]!);
      const worst = Math.max(0, ...gaps, times.length ? times[0]! - from : Date.now() - from);
      const allowance = timingWindow(every, ctx.env.timeScale).latestMs;
      return verdictOf(
        `keepalives every ${every} ms`,
        check(
          t.log.keepalives - before >= 2,
          `the agent sent ${t.log.keepalives - before} keepalives in ${3 * every} ms`,
          'at least 2',
          show(t.log.keepalives - before),
        ),
        check(
          worst <= allowance,
          `the agent let ${worst} ms pass between keepalives, announcing ${every} ms`,
          `at most ${allowance} ms`,
          `${worst} ms`,
        ),
      );
    },
  }),
  defineCase({
    id: 'nats.liveness.silent-peer',
    title: 'A requester that sends nothing for three keepalive intervals is counted lost: the agent closes with 1006',
    level: 'SHOULD',
    profile: P,
    reason:
      'the case judges the close with 1006, a SHOULD (TAP-NATS-015); counting the peer lost (TAP-NATS-013, MUST) is how it gets there',
    requirements: ['TAP-NATS-013', 'TAP-NATS-015'],
    needs: NATS,
    budgetMs: 30_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = natsOf(ctx, peer);
      // The harness announced 1000 ms keepalives: the agent counts it lost after 3000 ms of silence.
      t.silence();
      // The agent's silence starts with the last message the harness sent, not with silence().
      const since = t.lastSentAt;
      const window = timingWindow(3000, ctx.env.timeScale);
      const closed = await peer.waitClosed(window.latestMs + ctx.scaled(2000));
      const elapsed = Date.now() - since;
      if (!closed) return judgeOccurrence(window, undefined, 'the close of a silent connection');
      return verdictOf(
        'lost after the missed keepalives',
        judgeOccurrence(window, elapsed, 'the close of a silent connection'),
        check(peer.closed?.code === 1006, 'the agent closed a silent connection with the wrong code', '1006', show(peer.closed?.code)),
      );
    },
  }),
  defineCase({
    id: 'nats.close.farewell-1000',
    title: 'After the farewell the agent closes the connection with code 1000',
    profile: P,
    requirements: ['TAP-NATS-014'],
    needs: NATS,
    run: async (ctx) => {
      const r = await closeCodeAfter(ctx, async (peer) => {
        if ((await handshake(peer)).ok) await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 200 });
      });
      if (r.problem) return r.problem;
      return verdictOf('1000', check(r.code === 1000, 'the connection did not close with 1000 after the farewell', '1000', show(r.code)));
    },
  }),
  defineCase({
    id: 'nats.close.fatal-1008',
    title: 'After a fatal error the agent closes the connection with code 1008',
    profile: P,
    requirements: ['TAP-NATS-014'],
    needs: NATS,
    run: async (ctx) => {
      const r = await closeCodeAfter(ctx, async (peer) => {
        await peer.post('handshake.init', { ...initPayload(peer, {}), versions: ['9.0'] });
      });
      if (r.problem) return r.problem;
      return verdictOf(
        '1008',
        check(r.code === 1008, 'the connection did not close with 1008 after the fatal UNSUPPORTED_VERSION', '1008', show(r.code)),
      );
    },
  }),
  defineCase({
    id: 'nats.one-session',
    title: 'A connection carries at most one session: a second handshake.init on it gets PROTOCOL_VIOLATION',
    profile: P,
    requirements: ['TAP-NATS-005'],
    needs: NATS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('handshake.init', initPayload(peer, {}));
      const r = need(await peer.reply(sent));
      return verdictOf('refused', checkError(r.msg, { code: 'PROTOCOL_VIOLATION' }, 'a second handshake.init on the connection'));
    },
  }),
];
