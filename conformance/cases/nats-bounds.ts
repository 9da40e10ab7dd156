/**
 * Hostile peers of the NATS binding: a keepalive interval outside the range refused at the open
 * (nats profile), and a frame forged into a signed session with the next Tap-Seq refused without
 * cutting the connection (integrity profile, over NATS) (spec: bindings-nats#liveness,
 * bindings-nats#forged-frames).
 */
import { connect, headers as natsHeaders } from '../../reference/transports/nats/client.ts';
import { Header, NatsTransport, newConnectionId, openSubject, parseNatsUrl, subjectsOf } from '../../reference/transports/nats/index.ts';
import { natsClientOptions } from '../../reference/transports/nats/url.ts';
import { defineCase, type Case } from '../case.ts';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import { attempt, check, checkError, expectAlive, need, require, show, verdictOf } from './kit.ts';

const P = 'nats' as const;

/** The harness's NATS transport of a peer, for fault injection. */
function natsOf(ctx: CaseContext, peer: Peer): NatsTransport {
  const t = ctx.connectionOf(peer)?.transport;
  if (!(t instanceof NatsTransport)) throw new Error('the connection is not a NATS transport');
  return t;
}

/** Sends one open request per `Tap-Keepalive-Ms` value (undefined: no header); resolves with each Tap-Open verdict. */
async function keepaliveVerdicts(ctx: CaseContext, values: (string | undefined)[]): Promise<string[]> {
  const target = ctx.env.target;
  if (target.kind !== 'nats') throw new Error('the case runs over NATS only');
  const address = parseNatsUrl(target.url);
  const nc = await connect(natsClientOptions(address, target.tls));
  const subject = openSubject('tap', address.agentId!);
  try {
    const out: string[] = [];
    for (const value of values) {
      const id = newConnectionId();
      const h = natsHeaders();
      h.set(Header.CONNECTION, id);
      if (value !== undefined) h.set(Header.KEEPALIVE_MS, value);
      const reply = await nc.request(subject, new Uint8Array(0), { headers: h, timeout: ctx.scaled(5000) });
      const verdict = reply.headers?.get(Header.OPEN) ?? '';
      out.push(verdict);
      if (verdict === 'ok') {
        // The harness does not use the connection it was granted: it closes it (spec: bindings-nats#closing).
        const close = natsHeaders();
        close.set(Header.SEQ, '1');
        close.set(Header.CONTROL, 'close');
        close.set(Header.CLOSE_CODE, '1000');
        nc.publish(subjectsOf('tap', address.agentId!, id).toAgent, 'tap-conform checked the keepalive range', { headers: close });
      }
    }
    await nc.flush();
    return out;
  } finally {
    await nc.close();
  }
}

export const natsBoundCases: Case[] = [
  defineCase({
    id: 'nats.open.keepalive-range',
    title: 'An open request announcing Tap-Keepalive-Ms 1e13, 0 or 60001 is refused with 1008; 100, 60000 and none are taken',
    level: 'MUST',
    profile: P,
    spec: 'bindings-nats#liveness',
    requirements: ['TAP-NATS-045'],
    needs: { binding: 'nats' },
    run: attempt(async (ctx) => {
      const bad = ['1e13', '0', '60001', '99', '1.5'];
      const good = ['100', '60000', undefined];
      const verdicts = await keepaliveVerdicts(ctx, [...bad, ...good]);
      return verdictOf(
        'refused outside 100–60 000 ms, taken within',
        ...bad.map((value, i) =>
          check(
            verdicts[i] === '1008',
            `an open request announcing Tap-Keepalive-Ms ${value} was not refused with 1008`,
            '1008',
            show(verdicts[i]),
          ),
        ),
        ...good.map((value, i) =>
          check(
            verdicts[bad.length + i] === 'ok',
            `an open request ${value === undefined ? 'without Tap-Keepalive-Ms' : `announcing Tap-Keepalive-Ms ${value}`} was not accepted`,
            'ok',
            show(verdicts[bad.length + i]),
          ),
        ),
      );
    }),
  }),
  defineCase({
    id: 'integrity.nats.forged-frame',
    title: 'Under integrity, an unsigned frame carrying the next Tap-Seq gets INVALID_SIGNATURE and takes no number: the session goes on',
    level: 'MUST',
    profile: 'integrity',
    spec: 'bindings-nats#forged-frames',
    requirements: ['TAP-NATS-047', 'TAP-INT-011'],
    // The integrity profile's, over NATS only: without the run's key it is UNIMPLEMENTED like the rest of the profile.
    needs: { binding: 'nats', integrity: true },
    run: attempt(async (ctx) => {
      const peer = need(await ctx.session({ signed: true }));
      const t = natsOf(ctx, peer);
      // What a third client of the account could publish on the connection's subject: a frame
      // without the session's signature, numbered as the harness's next message.
      const forged = peer.envelope('ping', {});
      ctx.note(`publishing an unsigned ping ${forged.message_id} with the Tap-Seq of the harness's next message`);
      t.forge(new TextEncoder().encode(JSON.stringify(forged)));
      const refusal = need(await peer.waitFor((r) => r.msg.reply_to === forged.message_id, 'the answer to the unsigned ping'));
      require(checkError(refusal.msg, { code: 'INVALID_SIGNATURE', replyTo: forged.message_id }, 'an unsigned ping'));
      // The harness's own next message carries the number the forged frame had.
      const alive = await expectAlive(peer, 'a forged frame that carried the next Tap-Seq');
      return verdictOf(
        'refused, and the connection goes on',
        alive,
        check(
          !peer.closed,
          'the agent closed the connection after a forged frame took the number of the next message',
          'the connection open',
          `closed with ${show(peer.closed?.code)}`,
        ),
      );
    }),
  }),
];
