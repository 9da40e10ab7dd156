/**
 * Cases every binding with connections has, written once and given to each binding's profile:
 * one session per connection, and the close codes after a farewell and after a fatal error
 * (spec: bindings-websocket#one-session, bindings-websocket#close-codes, bindings-nats#opening,
 * bindings-nats#closing); and the harness's own NATS transport of a session, for the profiles
 * that inject faults over NATS.
 */
import { defineCase, type Case, type CaseHead, type Needs, type Profile } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import { handshake, initPayload } from '../steps.ts';
import type { Outcome } from '../verdict.ts';
import { check, checkError, need, show, verdictOf } from './kit.ts';
import { NatsTransport } from '../../reference/transports/nats/index.ts';

/** The harness's NATS transport of a peer, for fault injection. */
export function natsOf(ctx: CaseContext, peer: Peer): NatsTransport {
  const t = ctx.connectionOf(peer)?.transport;
  if (!(t instanceof NatsTransport)) throw new Error('the connection is not a NATS transport');
  return t;
}

/** A binding's profile and the need that keeps its cases to runs over it. */
export interface ConnectionBinding {
  profile: Profile;
  needs: Needs;
}

/** A connection carries at most one session: a second handshake.init on it gets PROTOCOL_VIOLATION. */
export function oneSessionCase(binding: ConnectionBinding, head: CaseHead): Case {
  return defineCase({
    ...head,
    ...binding,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('handshake.init', initPayload(peer, {}));
      const r = need(await peer.reply(sent));
      return verdictOf('refused', checkError(r.msg, { code: 'PROTOCOL_VIOLATION' }, 'a second handshake.init on the connection'));
    },
  });
}

/** The close code of a fresh connection after `act`, or the problem that kept it from being observed. */
async function closeCodeAfter(ctx: CaseContext, act: (peer: Peer) => Promise<void>): Promise<{ code?: number; problem?: Outcome }> {
  const c = await ctx.connect();
  if (!c.ok) return { problem: c.outcome };
  const peer = c.value;
  await act(peer);
  const closed = await peer.waitClosed(ctx.scaled(12_000));
  return { code: closed ? peer.closed?.code : undefined };
}

/** The agent closes with 1000 after its farewell (to a shutdown.request) and with 1008 after a fatal error. */
export function closeCodeCases(binding: ConnectionBinding, heads: { farewell: CaseHead; fatal: CaseHead }): Case[] {
  return [
    defineCase({
      ...heads.farewell,
      ...binding,
      run: async (ctx) => {
        const r = await closeCodeAfter(ctx, async (peer) => {
          if ((await handshake(peer)).ok) await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 200 });
        });
        if (r.problem) return r.problem;
        return verdictOf('1000', check(r.code === 1000, 'the connection did not close with 1000 after the farewell', '1000', show(r.code)));
      },
    }),
    defineCase({
      ...heads.fatal,
      ...binding,
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
  ];
}
