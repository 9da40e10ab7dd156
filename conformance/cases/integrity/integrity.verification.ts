/** integrity profile, Verification (spec: integrity#verification). */
import { type Case, defineCase } from '../../case.ts';
import { refusedRequest, signed, SIGNED } from './kit.ts';
import type { Wire } from '../../session-state.ts';
import { checkError, completed, expectAlive, need, runTask, verdictOf } from '../kit.ts';
import { signMessage } from '../../mac.ts';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.signature.missing',
    title: 'Under integrity an unsigned message gets INVALID_SIGNATURE and has no effect',
    profile: 'integrity',
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
    profile: 'integrity',
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
    profile: 'integrity',
    requirements: ['TAP-INT-010'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      await refusedRequest(peer, (m) => ({ ...m, x_added_later: true }), 'INVALID_SIGNATURE', 'an unknown member added after signing');
      const ok = need(await runTask(peer, 'tap.test.echo', 'x', { extra: { x_signed_member: { a: 1 } } as never }));
      return verdictOf('covered', completed(ok.result, 'a signed message with an unknown member was not accepted'));
    },
  }),
  defineCase({
    id: 'integrity.duplicate-members',
    title: 'Under integrity a message with duplicate member names gets MALFORMED_MESSAGE',
    profile: 'integrity',
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
];
