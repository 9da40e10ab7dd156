/** core profile, Version check (spec: versioning#version-check). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, need, require, show, verdictOf } from '../kit.ts';
import { describeMessage, initPayload } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.version.minor-accepted',
    title: 'A handshake.init in any minor of a major the agent speaks is accepted',
    profile: 'core',
    requirements: ['TAP-VER-001'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const m = peer.envelope('handshake.init', { ...initPayload(peer, {}), versions: ['1.0', '1.7'] }, { protocol: 'tap/1.7' });
      await peer.send(m);
      const r = need(await peer.reply(m));
      return verdictOf(
        'accepted',
        check(
          r.msg.type === 'handshake.ack' && r.msg.payload.version === '1.0',
          'an init written in tap/1.7 was not acknowledged with version 1.0',
          'handshake.ack, version 1.0',
          describeMessage(r.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'core.version.major-refused',
    title: 'A message of a major version the agent does not speak gets UNSUPPORTED_VERSION listing the supported versions, fatal',
    profile: 'core',
    requirements: ['TAP-VER-002', 'TAP-VER-042'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const m = peer.envelope('handshake.init', { ...initPayload(peer, {}), versions: ['2.0'] }, { protocol: 'tap/2.0' });
      await peer.send(m);
      const r = need(await peer.reply(m));
      require(checkError(r.msg, { code: 'UNSUPPORTED_VERSION', fatal: true }, 'an init in tap/2.0'));
      return verdictOf(
        'refused',
        check(
          Array.isArray(r.msg.payload.details?.supported),
          'details.supported is missing',
          'details.supported',
          show(r.msg.payload.details),
        ),
      );
    },
  }),
];
