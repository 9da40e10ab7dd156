/** stdio profile, Framing (spec: bindings-stdio#framing). */
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import { childOf, STDIO } from './kit.ts';
import { type Case, defineCase } from '../../case.ts';
import { check, need, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';
import { pass } from '../../verdict.ts';

/** Writes raw bytes to the agent's stdin, outside the line framing. */
function writeStdin(ctx: CaseContext, peer: Peer, data: string | Uint8Array, note: string): void {
  ctx.transcript.add({
    conn: peer.conn,
    dir: 'out',
    text: typeof data === 'string' ? data : Buffer.from(data).toString('latin1'),
    flags: [`deliberate: ${note}`],
  });
  childOf(ctx, peer)?.stdin?.write(data);
}

export const cases: Case[] = [
  defineCase({
    id: 'stdio.framing.blank-lines',
    title: 'Lines holding only white space are ignored',
    profile: 'stdio',
    requirements: ['TAP-STDIO-002'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const mark = peer.mark();
      writeStdin(ctx, peer, '\n   \n\t\n\r\n', 'blank lines');
      await peer.barrier();
      const err = peer.since(mark).find((r) => r.msg.type === 'error');
      return verdictOf('ignored', check(!err, 'a blank line was answered with an error', 'nothing', describeMessage(err?.msg)));
    },
  }),
  defineCase({
    id: 'stdio.framing.crlf',
    title: 'A carriage return before the line feed is stripped',
    profile: 'stdio',
    requirements: ['TAP-STDIO-002'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('ping', {});
      writeStdin(ctx, peer, `${JSON.stringify(m)}\r\n`, 'a line ending in CR LF');
      const r = need(await peer.reply(m));
      return verdictOf(
        'answered',
        check(r.msg.type === 'pong', 'a ping ending in CR LF was not answered with pong', 'pong', describeMessage(r.msg)),
      );
    },
  }),
  defineCase({
    id: 'stdio.framing.split-and-joined',
    title: 'A message split across writes, and two messages in one write, are each read as one message',
    profile: 'stdio',
    requirements: ['TAP-STDIO-001'],
    needs: STDIO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const a = JSON.stringify(peer.envelope('ping', {}));
      const ida = JSON.parse(a).message_id;
      writeStdin(ctx, peer, a.slice(0, 10), 'first piece');
      await ctx.sleep(50);
      writeStdin(ctx, peer, a.slice(10, 40), 'second piece');
      await ctx.sleep(50);
      writeStdin(ctx, peer, `${a.slice(40)}\n`, 'last piece');
      need(await peer.reply(ida));
      const b = peer.envelope('ping', {});
      const c = peer.envelope('ping', {});
      writeStdin(ctx, peer, `${JSON.stringify(b)}\n${JSON.stringify(c)}\n`, 'two messages in one write');
      need(await peer.reply(b));
      need(await peer.reply(c));
      return pass('each read as one message');
    },
  }),
];
