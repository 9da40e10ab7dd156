/** The WebSocket profile: subprotocol, frames, sizes, close codes, one session per connection (spec: bindings-websocket). */
import WebSocket from 'ws';
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import { handshake, initPayload } from '../steps.ts';
import { fail, judgeOccurrence, timingWindow, type Outcome } from '../verdict.ts';
import { check, checkError, expectAlive, need, require, show, verdictOf } from './kit.ts';

const WS = { binding: 'websocket' as const };

/** Connects without TAP's subprotocol; resolves with the HTTP status or the chosen protocol. */
function rawConnect(url: string, protocols: string[]): Promise<{ status?: number; protocol?: string; error?: string }> {
  return new Promise((resolve) => {
    const ws = protocols.length ? new WebSocket(url, protocols) : new WebSocket(url);
    const timer = setTimeout(() => {
      ws.terminate();
      resolve({ error: 'timeout' });
    }, 5000);
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      resolve({ status: res.statusCode });
      ws.terminate();
    });
    ws.on('open', () => {
      clearTimeout(timer);
      resolve({ protocol: ws.protocol });
      ws.close();
    });
    ws.on('error', (err) => {
      clearTimeout(timer);
      resolve({ error: err.message });
    });
  });
}

async function closeCodeAfter(ctx: CaseContext, act: (peer: Peer) => Promise<void>): Promise<{ code?: number; problem?: Outcome }> {
  const c = await ctx.connect();
  if (!c.ok) return { problem: c.outcome };
  const peer = c.value;
  await act(peer);
  const closed = await peer.waitClosed(ctx.scaled(12_000));
  return { code: closed ? peer.closed?.code : undefined };
}

export const websocketCases: Case[] = [
  defineCase({
    id: 'websocket.subprotocol.selected',
    title: 'The agent selects the subprotocol tap.v1',
    profile: 'websocket',
    requirements: ['TAP-WS-002'],
    needs: WS,
    run: async (ctx) => {
      const url = (ctx.env.target as { url: string }).url;
      const r = await rawConnect(url, ['tap.v1', 'x-other']);
      return verdictOf(
        'tap.v1 selected',
        check(r.protocol === 'tap.v1', 'the agent did not select tap.v1', 'Sec-WebSocket-Protocol: tap.v1', show(r)),
      );
    },
  }),
  defineCase({
    id: 'websocket.subprotocol.required',
    title: 'An upgrade that does not offer tap.v1 is refused with HTTP 400',
    profile: 'websocket',
    requirements: ['TAP-WS-002'],
    needs: WS,
    run: async (ctx) => {
      const url = (ctx.env.target as { url: string }).url;
      const none = await rawConnect(url, []);
      const other = await rawConnect(url, ['chat']);
      return verdictOf(
        'refused with 400',
        check(none.status === 400, 'an upgrade without subprotocol was not refused with 400', 'HTTP 400', show(none)),
        check(other.status === 400, 'an upgrade offering only another subprotocol was not refused with 400', 'HTTP 400', show(other)),
      );
    },
  }),
  defineCase({
    id: 'websocket.frames.binary',
    title: 'A binary message gets MALFORMED_MESSAGE, has no effect, and the connection stays open',
    profile: 'websocket',
    requirements: ['TAP-WS-005'],
    needs: WS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      await peer.sendRaw(new TextEncoder().encode(JSON.stringify(peer.envelope('ping', {}))), 'a ping in a binary frame', true);
      const r = need(await peer.waitFor((m) => m.index >= mark && m.msg.type !== 'pong', 'an error for the binary frame'));
      require(checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, 'a binary frame'));
      return verdictOf('refused; still open', await expectAlive(peer, 'a binary frame'));
    },
  }),
  defineCase({
    id: 'websocket.frames.invalid-utf8',
    title: 'A text message that is not valid UTF-8 is answered MALFORMED_MESSAGE rather than closing with 1007',
    profile: 'websocket',
    requirements: ['TAP-WS-006'],
    needs: WS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      await peer.sendRaw(new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), 'invalid UTF-8 in a text frame');
      const r = await peer.waitFor((m) => m.index >= mark && m.msg.type === 'error', 'an error for invalid UTF-8');
      if (!r.ok)
        return fail(
          `the agent did not answer invalid UTF-8 with MALFORMED_MESSAGE${peer.closed ? ` (it closed with ${peer.closed.code})` : ''}`,
          'MALFORMED_MESSAGE',
          r.outcome.observed,
        );
      return verdictOf('MALFORMED_MESSAGE', checkError(r.value.msg, { code: 'MALFORMED_MESSAGE' }, 'invalid UTF-8'));
    },
  }),
  defineCase({
    id: 'websocket.size.oversized',
    title: 'A frame above max_message_bytes but within the hard ceiling gets MESSAGE_TOO_LARGE and the session survives',
    profile: 'websocket',
    requirements: ['TAP-WS-007', 'TAP-LIM-001'],
    needs: WS,
    run: async (ctx) => {
      const peer = need(await ctx.session({ params: { max_message_bytes: 4096 } }));
      const m = peer.envelope('ping', { 'x-padding': 'p'.repeat(6000) });
      await peer.send(m, { deliberate: 'a 6 KB frame over a 4096-byte limit' });
      const r = need(await peer.waitFor((x) => x.msg.type === 'error', 'an error for the oversized frame'));
      require(checkError(r.msg, { code: 'MESSAGE_TOO_LARGE' }, 'a frame over max_message_bytes'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'MESSAGE_TOO_LARGE'));
    },
  }),
  defineCase({
    id: 'websocket.close.farewell-1000',
    title: 'After the farewell the connection closes with code 1000',
    profile: 'websocket',
    requirements: ['TAP-WS-010'],
    needs: WS,
    run: async (ctx) => {
      const r = await closeCodeAfter(ctx, async (peer) => {
        if ((await handshake(peer)).ok) await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 200 });
      });
      if (r.problem) return r.problem;
      return verdictOf('1000', check(r.code === 1000, 'the connection did not close with 1000 after the farewell', '1000', show(r.code)));
    },
  }),
  defineCase({
    id: 'websocket.close.fatal-1008',
    title: 'After a fatal error the connection closes with code 1008',
    profile: 'websocket',
    requirements: ['TAP-WS-011'],
    needs: WS,
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
    id: 'websocket.close.handshake-timeout-1008',
    title: 'After a handshake step timed out the connection closes with code 1008',
    profile: 'websocket',
    requirements: ['TAP-WS-011'],
    needs: WS,
    budgetMs: 40_000,
    run: async (ctx) => {
      const c = await ctx.connect();
      if (!c.ok) return c.outcome;
      const closed = await c.value.waitClosed(timingWindow(10_000, ctx.env.timeScale).latestMs);
      if (!closed) return judgeOccurrence(timingWindow(10_000, ctx.env.timeScale), undefined, 'the close of a stalled handshake');
      return verdictOf(
        '1008',
        check(c.value.closed?.code === 1008, 'a stalled handshake was not closed with 1008', '1008', show(c.value.closed?.code)),
      );
    },
  }),
  defineCase({
    id: 'websocket.one-session',
    title: 'A connection carries at most one session: a second handshake.init on it gets PROTOCOL_VIOLATION',
    profile: 'websocket',
    requirements: ['TAP-WS-009'],
    needs: WS,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('handshake.init', initPayload(peer, {}));
      const r = need(await peer.reply(sent));
      return verdictOf('refused', checkError(r.msg, { code: 'PROTOCOL_VIOLATION' }, 'a second handshake.init on the connection'));
    },
  }),
];
