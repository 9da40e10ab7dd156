/** core profile, Encoding (spec: envelope#encoding). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectAlive, expectNoTask, jsonEqual, need, require, runTask, show, verdictOf } from '../kit.ts';
import { ECHO, expectMalformed } from './kit.ts';

const enc = new TextEncoder();

export const cases: Case[] = [
  defineCase({
    id: 'core.bad-input.invalid-utf8',
    title: 'A frame with invalid UTF-8 or a byte order mark gets MALFORMED_MESSAGE',
    profile: 'core',
    requirements: ['TAP-ENV-001'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const valid = enc.encode(JSON.stringify(peer.envelope('ping', {})));
      const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...valid]);
      const text = JSON.stringify(peer.envelope('ping', { x: 'AB' }));
      const at = text.indexOf('"AB"') + 1;
      const invalid = new Uint8Array([...enc.encode(text.slice(0, at)), 0xc3, 0x28, ...enc.encode(text.slice(at + 2))]);
      for (const [bytes, why] of [
        [bom, 'a byte order mark'],
        [invalid, 'invalid UTF-8 (0xC3 0x28)'],
        [new Uint8Array([0x7b, 0xed, 0xa0, 0x80, 0x7d]), 'a UTF-8 encoded surrogate'],
      ] as const)
        await expectMalformed(peer, bytes, why);
      return verdictOf('each refused; the session goes on', await expectAlive(peer, 'invalid UTF-8'));
    },
  }),
  defineCase({
    id: 'core.bad-input.i-json',
    title: 'Integers beyond ±(2^53−1) and lone surrogates get INVALID_MESSAGE',
    profile: 'core',
    requirements: ['TAP-ENV-002'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const cases: [string, string][] = [];
      const base = (input: string) => {
        const m = peer.envelope('task.request', { capability: 'tap.test.echo', input: '__INPUT__' }, { task_id: peer.ids.task() });
        return { text: JSON.stringify(m).replace('"__INPUT__"', input), m };
      };
      const big = base('{"n":9007199254740992}');
      const neg = base('{"n":-9007199254740993}');
      const lone = base('"\\ud800 alone"');
      cases.push([big.text, '2^53'], [neg.text, '−(2^53+1)'], [lone.text, 'a lone surrogate']);
      for (const [i, [text, why]] of cases.entries()) {
        await peer.sendText(text, why);
        const id = [big, neg, lone][i]!.m;
        const r = need(await peer.reply(id));
        require(checkError(r.msg, { code: 'INVALID_MESSAGE', replyTo: id.message_id }, why));
        require(await expectNoTask(peer, id.task_id!, `the ${why} request was refused`));
      }
      const edge = need(await runTask(peer, 'tap.test.echo', { max: 9007199254740991, min: -9007199254740991 }));
      return verdictOf(
        'refused; the edge values ±(2^53−1) pass',
        check(
          jsonEqual(edge.result.msg.payload.output, { max: 9007199254740991, min: -9007199254740991 }),
          'the edge values ±(2^53−1) did not round-trip',
          '{ max: 2^53−1, min: −(2^53−1) }',
          show(edge.result.msg.payload.output),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.bad-input.duplicate-members',
    title: 'A message with duplicate member names may be refused, and then only with MALFORMED_MESSAGE',
    profile: 'core',
    requirements: ['TAP-ENV-004'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const m = peer.envelope('ping', {});
      const text = JSON.stringify(m).replace('"payload":{}', '"payload":{},"payload":{}');
      await peer.sendText(text, 'duplicate member "payload"');
      const r = need(await peer.reply(m));
      if (r.msg.type === 'pong')
        return { verdict: 'UNIMPLEMENTED', detail: 'the agent accepts duplicate member names (allowed without integrity)' };
      return verdictOf('refused with MALFORMED_MESSAGE', checkError(r.msg, { code: 'MALFORMED_MESSAGE' }, 'duplicate member names'));
    },
  }),
];
